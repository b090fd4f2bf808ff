/* test_election.c: leader election against a real ensemble. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "check.h"
#include "zklock.h"

static const char *servers;
static char root[128];
static zhandle_t *admin;

static void quiet(const char *m) { (void)m; }
static void no_watch(zhandle_t *zh, int t, int s, const char *p, void *c) {
  (void)zh, (void)t, (void)s, (void)p, (void)c;
}


struct events {
  pthread_mutex_t mu;
  int seen[16];
  int n;
};

static void on_event(zkl_election_t *e, int state, uint64_t token, void *ctx) {
  struct events *ev = ctx;
  (void)e, (void)token;
  pthread_mutex_lock(&ev->mu);
  if (ev->n < 16)
    ev->seen[ev->n++] = state;
  pthread_mutex_unlock(&ev->mu);
}

static int last_event(struct events *ev) {
  int v;
  pthread_mutex_lock(&ev->mu);
  v = ev->n ? ev->seen[ev->n - 1] : -1;
  pthread_mutex_unlock(&ev->mu);
  return v;
}

enum { N = 3 };
static zkl_client_t *cl[N];
static zkl_election_t *el[N];
static struct events evs[N];

static int leaders(void) {
  int i, n = 0;
  for (i = 0; i < N; i++)
    n += zkl_election_is_leader(el[i]);
  return n;
}

/* zkl_election_wait() on a thread of its own, so that a wait that should
 * have ended at once fails the test instead of hanging it. */
struct waiter {
  zkl_election_t *e;
  int64_t deadline;
  int rc;
  atomic_int done;
  pthread_t t;
};

static void *waiter_main(void *arg) {
  struct waiter *w = arg;
  w->rc = zkl_election_wait(w->e, w->deadline);
  atomic_store(&w->done, 1);
  return NULL;
}

static void waiter_start(struct waiter *w, zkl_election_t *e,
                         int64_t deadline) {
  w->e = e;
  w->deadline = deadline;
  w->rc = 0;
  atomic_store(&w->done, 0);
  pthread_create(&w->t, NULL, waiter_main, w);
}

static void test_elect_and_fail_over(void) {
  struct waiter passed, none;
  char id[16];
  zkl_contender_t *list = NULL;
  size_t n = 0;
  uint64_t t0 = 0, t1 = 0;
  int i;
  for (i = 0; i < N; i++) {
    zkl_election_options_t o = {0};
    zkl_client_options_t co = {0};
    co.session_timeout_ms = 10000;
    CHECK_RC(zkl_client_create(&cl[i], servers, &co), ZKL_OK);
    pthread_mutex_init(&evs[i].mu, NULL);
    o.root = root;
    o.fn = on_event;
    o.ctx = &evs[i];
    snprintf(id, sizeof id, "cand-%d", i);
    CHECK_RC(zkl_election_create(&el[i], cl[i], "svc", id, &o), ZKL_OK);
    CHECK_RC(zkl_election_join(el[i]), ZKL_OK);
    /* join in order, so the queue order is known */
    WAIT_FOR(zkl_election_candidates(cl[0], root, "svc", &list, &n) == ZKL_OK &&
                 (zkl_contenders_free(list, n), n == (size_t)i + 1),
             5000);
  }
  CHECK_RC(zkl_election_wait(el[0], zkl_now_ms() + 10000), ZKL_OK);
  CHECK_RC(zkl_election_join(el[0]), ZKL_EBUSY);
  CHECK_RC(zkl_election_wait(el[1], zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  /* the deadline rule (zklock.h, TIME): a negative deadline has passed,
   * ZKL_ETIMEDOUT at once while campaigning; ZKL_NO_DEADLINE waits for
   * the term (after the resignation below) */
  waiter_start(&passed, el[1], -1);
  waiter_start(&none, el[1], ZKL_NO_DEADLINE);
  WAIT_FOR(atomic_load(&passed.done), 3000);
  CHECK(atomic_load(&passed.done));
  usleep(300 * 1000);
  CHECK(!atomic_load(&none.done));
  CHECK_INT(leaders(), ==, 1);
  CHECK_INT(zkl_election_state(el[1]), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_election_token(el[1], &t1), ZKL_ENOTHELD);
  CHECK_RC(zkl_election_candidates(cl[2], root, "svc", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 3);
  if (n == 3) {
    CHECK_STR(list[0].id, "cand-0");
    CHECK_STR(list[1].id, "cand-1");
    CHECK_STR(list[2].id, "cand-2");
  }
  zkl_contenders_free(list, n);
  WAIT_FOR(last_event(&evs[0]) == ZKL_STATE_HELD, 2000);
  CHECK_INT(last_event(&evs[0]), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_election_token(el[0], &t0), ZKL_OK);
  /* the leader resigns: the next candidate in order leads */
  CHECK_RC(zkl_election_resign(el[0]), ZKL_OK);
  CHECK_RC(zkl_election_resign(el[0]), ZKL_ENOTHELD);
  CHECK_RC(zkl_election_wait(el[1], zkl_now_ms() + 10000), ZKL_OK);
  pthread_join(passed.t, NULL);
  pthread_join(none.t, NULL);
  CHECK_RC(passed.rc, ZKL_ETIMEDOUT);
  CHECK_RC(none.rc, ZKL_OK);
  CHECK_INT(leaders(), ==, 1);
  CHECK_RC(zkl_election_token(el[1], &t1), ZKL_OK);
  CHECK(t1 > t0);
  WAIT_FOR(last_event(&evs[0]) == ZKL_STATE_NONE, 2000);
  CHECK_INT(last_event(&evs[0]), ==, ZKL_STATE_NONE);
}

static void test_node_deleted_loses_leadership(void) {
  zkl_contender_t *list = NULL;
  size_t n = 0;
  char path[256] = "";
  uint64_t t1 = 0, t2 = 0;
  CHECK_RC(zkl_election_token(el[1], &t1), ZKL_OK);
  CHECK_RC(zkl_election_candidates(cl[1], root, "svc", &list, &n), ZKL_OK);
  if (n > 0)
    snprintf(path, sizeof path, "%s/svc/%s", root, list[0].node);
  zkl_contenders_free(list, n);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  WAIT_FOR(zkl_election_state(el[1]) == ZKL_STATE_LOST, 5000);
  CHECK_INT(zkl_election_state(el[1]), ==, ZKL_STATE_LOST);
  CHECK(!zkl_election_is_leader(el[1]));
  WAIT_FOR(last_event(&evs[1]) == ZKL_STATE_LOST, 2000);
  CHECK_INT(last_event(&evs[1]), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_election_wait(el[1], zkl_now_ms()), ZKL_ELOST);
  CHECK_RC(zkl_election_wait(el[2], zkl_now_ms() + 10000), ZKL_OK);
  CHECK_RC(zkl_election_token(el[2], &t2), ZKL_OK);
  CHECK(t2 > t1);
  CHECK_INT(leaders(), ==, 1);
  /* rejoin after the loss: queued behind the current leader */
  CHECK_RC(zkl_election_join(el[1]), ZKL_OK);
  CHECK_RC(zkl_election_wait(el[1], zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_election_resign(el[2]), ZKL_OK);
  CHECK_RC(zkl_election_wait(el[1], zkl_now_ms() + 10000), ZKL_OK);
  CHECK_INT(leaders(), ==, 1);
}

static void test_bad_input(void) {
  zkl_election_t *e = NULL;
  zkl_election_options_t o = {0};
  char big[ZKL_ID_MAX + 2];
  uint64_t tok;
  memset(big, 'i', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK_RC(zkl_election_create(NULL, cl[0], "x", "id", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, NULL, "x", "id", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "", "id", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "a/b", "id", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "x", NULL, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "x", "", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "x", "two\nlines", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_create(&e, cl[0], "x", big, NULL), ZKL_EINVAL);
  o.flags = 1u << 7;
  CHECK_RC(zkl_election_create(&e, cl[0], "x", "id", &o), ZKL_EINVAL);
  CHECK(e == NULL);
  CHECK_RC(zkl_election_join(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_wait(NULL, 0), ZKL_EINVAL);
  CHECK_RC(zkl_election_resign(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_election_token(NULL, &tok), ZKL_EINVAL);
  CHECK_INT(zkl_election_is_leader(NULL), ==, 0);
  CHECK_RC(zkl_election_destroy(NULL), ZKL_OK);
  CHECK_RC(zkl_election_candidates(cl[0], root, "a/b", NULL, NULL), ZKL_EINVAL);
  o.flags = 0;
  o.root = root;
  CHECK_RC(zkl_election_create(&e, cl[0], "lonely", "solo", &o), ZKL_OK);
  CHECK_RC(zkl_election_resign(e), ZKL_ENOTHELD);
  CHECK_RC(zkl_client_destroy(cl[0]), ZKL_EBUSY);
  CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK); /* joins */
  CHECK_RC(zkl_election_destroy(e), ZKL_OK); /* resigns */
  CHECK_RC(zkl_election_destroy(e), ZKL_EINVAL);
}

int main(void) {
  int i;
  servers = getenv("ZKL_TEST_SERVERS");
  if (!servers || !*servers)
    return 77;
  snprintf(root, sizeof root, "/zkltest-elect-%ld", (long)getpid());
  admin = zookeeper_init2(servers, no_watch, 10000, NULL, NULL, 0, quiet);
  RUN(test_elect_and_fail_over);
  RUN(test_node_deleted_loses_leadership);
  RUN(test_bad_input);
  for (i = 0; i < N; i++) {
    CHECK_RC(zkl_election_destroy(el[i]), ZKL_OK);
    CHECK_RC(zkl_client_destroy(cl[i]), ZKL_OK);
  }
  zookeeper_close(admin);
  return CHECK_DONE();
}
