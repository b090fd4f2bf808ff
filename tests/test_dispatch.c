/* SPDX-License-Identifier: Apache-2.0 */
/* test_dispatch.c: ZKL_CLIENT_DISPATCH against a real ensemble
 * (ZKL_TEST_SERVERS): callbacks wait for zkl_client_dispatch() and run on
 * the thread that calls it, an epoll loop learns of them through
 * zkl_client_fd(), and nothing is delivered twice, late, or after the
 * object it is for is gone. */
#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#include "admin.h"

static zkl_client_t *dispatch_client(struct logbuf *log) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  o.session_timeout_ms = 10000;
  o.flags = ZKL_CLIENT_DISPATCH;
  if (log) {
    o.log_fn = log_hook;
    o.log_ctx = log;
    o.log_level = ZKL_LOG_INFO;
  }
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  if (!c)
    exit(1);
  return c;
}

static int readable(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* What the callbacks saw, and on which thread. */
struct seen {
  pthread_t thread; /* where callbacks must run, unless any_thread */
  int any_thread;
  _Atomic int n, wrong_thread, inside, overlap, last;
};

static void on_state_seen(zkl_mutex_t *m, int state, uint64_t token,
                          void *ctx) {
  struct seen *s = ctx;
  (void)m, (void)token;
  if (atomic_fetch_add(&s->inside, 1))
    atomic_store(&s->overlap, 1);
  if (!s->any_thread && !pthread_equal(pthread_self(), s->thread))
    atomic_store(&s->wrong_thread, 1);
  atomic_store(&s->last, state);
  atomic_fetch_add(&s->n, 1);
  usleep(1000);
  atomic_fetch_sub(&s->inside, 1);
}

static zkl_mutex_t *seen_mutex(zkl_client_t *c, const char *name,
                               struct seen *s) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = root;
  o.state_fn = on_state_seen;
  o.state_ctx = s;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  return m;
}

/* Nothing runs until the program dispatches; then on its thread. */
static void test_callbacks_wait_for_dispatch(void) {
  struct logbuf log = {PTHREAD_MUTEX_INITIALIZER, ""};
  struct seen s = {pthread_self(), 0, 0, 0, 0, 0, 0};
  zkl_client_t *c = dispatch_client(&log);
  zkl_mutex_t *m;
  int fd = zkl_client_fd(c);
  new_root();
  CHECK(fd >= 0);
  m = seen_mutex(c, "wait", &s);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  usleep(300000); /* the client's thread would have run it by now */
  CHECK_INT(atomic_load(&s.n), ==, 0);
  CHECK(!log_has(&log, "connected"));
  CHECK(readable(fd, 0));
  CHECK_INT(zkl_client_dispatch(c), >=, 2); /* the log line, HELD */
  CHECK_INT(atomic_load(&s.n), ==, 1);
  CHECK_INT(atomic_load(&s.last), ==, ZKL_STATE_HELD);
  CHECK(log_has(&log, "connected"));
  CHECK(!readable(fd, 0));
  CHECK_INT(zkl_client_dispatch(c), ==, 0);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK(readable(fd, 2000)); /* NONE */
  CHECK_INT(zkl_client_dispatch(c), >=, 1);
  CHECK_INT(atomic_load(&s.last), ==, ZKL_STATE_NONE);
  CHECK_INT(atomic_load(&s.wrong_thread), ==, 0);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

/* The event loop of a server: a hold deleted by someone else is LOST, and
 * the loop hears of it through the descriptor. */
static void test_epoll_loop_hears_lost(void) {
  struct seen s = {pthread_self(), 0, 0, 0, 0, 0, 0};
  struct epoll_event ev = {0}, got;
  zkl_client_t *c = dispatch_client(NULL);
  zkl_mutex_t *m;
  char path[256];
  int ep = epoll_create1(EPOLL_CLOEXEC), i;
  new_root();
  ev.events = EPOLLIN;
  CHECK_INT(epoll_ctl(ep, EPOLL_CTL_ADD, zkl_client_fd(c), &ev), ==, 0);
  m = seen_mutex(c, "loop", &s);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  usleep(300000); /* past the delay before a hold's node is watched */
  CHECK_RC(zkl_mutex_node_path(m, path, sizeof path), ZKL_OK);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  for (i = 0; i < 50 && atomic_load(&s.last) != ZKL_STATE_LOST; i++)
    if (epoll_wait(ep, &got, 1, 100) == 1)
      CHECK_INT(zkl_client_dispatch(c), >=, 1);
  CHECK_INT(atomic_load(&s.last), ==, ZKL_STATE_LOST);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  CHECK_INT(atomic_load(&s.wrong_thread), ==, 0);
  close(ep);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

struct dispatcher {
  zkl_client_t *c;
  _Atomic int stop, ran;
};

static void *dispatch_loop(void *arg) {
  struct dispatcher *d = arg;
  while (!atomic_load(&d->stop)) {
    if (readable(zkl_client_fd(d->c), 10)) {
      int n = zkl_client_dispatch(d->c);
      CHECK_INT(n, >=, 0);
      atomic_fetch_add(&d->ran, n);
    }
  }
  return NULL;
}

/* Two threads dispatching at once: every callback runs once, never two
 * at a time; the objects are then destroyed with notices undelivered, and
 * nothing runs after. */
static void test_two_dispatchers_then_destroy(void) {
  struct seen s = {pthread_self(), 0, 0, 0, 0, 0, 0};
  struct dispatcher d = {NULL, 0, 0};
  zkl_client_t *c = dispatch_client(NULL);
  zkl_mutex_options_t o = {0};
  zkl_mutex_t *m = NULL;
  pthread_t t[2];
  int i, before;
  new_root();
  o.root = root;
  s.any_thread = 1; /* either dispatcher */
  o.state_fn = on_state_seen;
  o.state_ctx = &s;
  CHECK_RC(zkl_mutex_create(&m, c, "two", &o), ZKL_OK);
  d.c = c;
  for (i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, dispatch_loop, &d);
  for (i = 0; i < 20; i++) { /* HELD and NONE each */
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  }
  WAIT_FOR(atomic_load(&s.n) == 40, 5000);
  atomic_store(&d.stop, 1);
  for (i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  CHECK_INT(atomic_load(&s.n), ==, 40);
  CHECK_INT(atomic_load(&d.ran), ==, 40);
  CHECK_INT(atomic_load(&s.overlap), ==, 0);
  /* queued, never dispatched: dropped with the object */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  before = atomic_load(&s.n);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_INT(zkl_client_dispatch(c), ==, 0);
  CHECK_INT(atomic_load(&s.n), ==, before);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

static void test_misuse(void) {
  zkl_client_t *c = client(10000);
  zkl_client_options_t o = {0};
  zkl_client_t *bad = NULL;
  zkl_mutex_t *m;
  new_root();
  m = mutex(c, "plain");
  CHECK_RC(zkl_client_fd(c), ZKL_EINVAL);
  CHECK_RC(zkl_client_dispatch(c), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_RC(zkl_client_fd(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_client_dispatch(NULL), ZKL_EINVAL);
  o.flags = 1u << 7; /* no such flag */
  CHECK_RC(zkl_client_create(&bad, servers, &o), ZKL_EINVAL);
  CHECK(bad == NULL);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

int main(void) {
  root_tag = "zkldispatch";
  admin_open();
  RUN(test_callbacks_wait_for_dispatch);
  RUN(test_epoll_loop_hears_lost);
  RUN(test_two_dispatchers_then_destroy);
  RUN(test_misuse);
  admin_close();
  return CHECK_DONE();
}
