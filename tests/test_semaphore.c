/* SPDX-License-Identifier: Apache-2.0 */
/* test_semaphore.c: the counting semaphore against a real ensemble
 * (ZKL_TEST_SERVERS), each test under its own root. */
#include <stdatomic.h>
#include <stdint.h>

#include "admin.h"

static zkl_semaphore_t *semaphore(zkl_client_t *c, const char *name,
                                  unsigned n) {
  zkl_semaphore_t *s = NULL;
  zkl_semaphore_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_semaphore_create(&s, c, name, n, &o), ZKL_OK);
  return s;
}

/* A waiter on its own thread and client: acquires, says so, holds until
 * told, releases. */
struct job {
  zkl_client_t *c;
  zkl_semaphore_t *s;
  zkl_lease_t *l;
  int rc, release_rc;
  _Atomic int held, go;
  pthread_t t;
};

static void *job_main(void *arg) {
  struct job *j = arg;
  j->rc = zkl_semaphore_acquire(j->s, &j->l);
  atomic_store(&j->held, 1);
  if (j->rc != ZKL_OK)
    return NULL;
  while (!atomic_load(&j->go))
    usleep(2000);
  j->release_rc = zkl_lease_release(j->l);
  return NULL;
}

static void job_start(struct job *j, const char *name, unsigned n) {
  memset(j, 0, sizeof *j);
  j->c = client(10000);
  j->s = semaphore(j->c, name, n);
  pthread_create(&j->t, NULL, job_main, j);
}

static void job_end(struct job *j) {
  atomic_store(&j->go, 1);
  pthread_join(j->t, NULL);
  CHECK_RC(j->rc, ZKL_OK);
  CHECK_RC(j->release_rc, ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(j->s), ZKL_OK);
  CHECK_RC(zkl_client_destroy(j->c), ZKL_OK);
}

/* N at once, the N+1st waits; one round trip each way uncontended. */
static void test_n_at_once(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s;
  zkl_lease_t *l[4] = {0};
  uint64_t before, t0, t1;
  char path[256];
  int i;
  new_root();
  s = semaphore(c, "n", 3);
  CHECK_RC(zkl_semaphore_acquire(s, &l[0]), ZKL_OK); /* makes the parents */
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_semaphore_acquire(s, &l[1]), ZKL_OK);
  /* create and listing, one round trip: the listing shows the directory
   * read by the first acquire (the same czxid), still saying max=3 */
  CHECK_INT(zkl_client_request_count(c) - before, ==, 2);
  CHECK_RC(zkl_semaphore_tryacquire(s, &l[2]), ZKL_OK);
  CHECK_INT(queue_len("n"), ==, 3);
  CHECK_RC(zkl_semaphore_tryacquire(s, &l[3]), ZKL_EBUSY);
  CHECK(l[3] == NULL);
  CHECK_RC(zkl_semaphore_timedacquire(s, zkl_now_ms() + 200, &l[3]),
           ZKL_ETIMEDOUT);
  CHECK_RC(zkl_semaphore_timedacquire(s, -1, &l[3]), ZKL_ETIMEDOUT);
  CHECK_INT(queue_len("n"), ==, 3); /* the failed tries left nothing */
  CHECK_INT(zkl_lease_state(l[0]), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_lease_token(l[0], &t0), ZKL_OK);
  CHECK_RC(zkl_lease_token(l[2], &t1), ZKL_OK);
  CHECK(t1 > t0);
  CHECK_RC(zkl_lease_node_path(l[1], path, sizeof path), ZKL_OK);
  CHECK(strstr(path, "-n3-lease-") != NULL); /* its N, in its name */
  CHECK_RC(zkl_lease_verify(l[1]), ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(s), ZKL_EBUSY); /* leases out */
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_lease_release(l[1]), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 2);
  CHECK_RC(zkl_lease_release(l[1]), ZKL_EINVAL); /* twice */
  CHECK_RC(zkl_semaphore_timedacquire(s, ZKL_NO_DEADLINE, &l[1]), ZKL_OK);
  for (i = 0; i < 3; i++)
    CHECK_RC(zkl_lease_release(l[i]), ZKL_OK);
  CHECK_INT(queue_count("n"), ==, 0);
  CHECK_RC(zkl_semaphore_destroy(s), ZKL_OK);
  zkl_client_destroy(c);
}

/* Holders leave in any order, and waiters get in, in arrival order, each
 * as soon as a lease is free: the first waiter watches every holder, the
 * next ones learn of their predecessor's grant from its mark. */
static void test_fifo_any_order_and_relay(void) {
  struct job h[2], w[3];
  char path[256], buf[512];
  struct String_vector v;
  int i, len, marked = 0;
  new_root();
  for (i = 0; i < 2; i++) {
    job_start(&h[i], "fifo", 2);
    WAIT_FOR(atomic_load(&h[i].held), 5000);
  }
  for (i = 0; i < 3; i++) {
    job_start(&w[i], "fifo", 2);
    QUEUED("fifo", 3 + i);
  }
  usleep(100 * 1000);
  for (i = 0; i < 3; i++)
    CHECK(!atomic_load(&w[i].held));
  job_end(&h[1]); /* not the lowest */
  WAIT_FOR(atomic_load(&w[0].held), 5000);
  CHECK(atomic_load(&w[0].held));
  CHECK(!atomic_load(&w[1].held) && !atomic_load(&w[2].held));
  /* w[0] was granted after waiting: it marks its node for w[1] */
  snprintf(path, sizeof path, "%s/fifo", root);
  WAIT_FOR(0, 300);
  admin_sync(path);
  CHECK_INT(zoo_get_children(admin, path, 0, &v), ==, ZOK);
  for (i = 0; i < v.count; i++) {
    char node[600];
    snprintf(node, sizeof node, "%s/%s", path, v.data[i]);
    len = sizeof buf - 1;
    if (zoo_get(admin, node, 0, buf, &len, NULL) == ZOK && len > 0) {
      buf[len] = '\0';
      marked += strstr(buf, "\nstate=held\n") != NULL;
    }
  }
  deallocate_String_vector(&v);
  CHECK_INT(marked, ==, 1);
  /* w[1] now watches the holders: a release lets it in at once, well
   * before a waiter's poll (5 s) would have */
  {
    int64_t t0 = zkl_now_ms();
    job_end(&h[0]);
    WAIT_FOR(atomic_load(&w[1].held), 4000);
    CHECK(atomic_load(&w[1].held));
    CHECK(zkl_now_ms() - t0 < 4000);
  }
  CHECK(!atomic_load(&w[2].held));
  job_end(&w[1]);
  WAIT_FOR(atomic_load(&w[2].held), 4000);
  CHECK(atomic_load(&w[2].held));
  job_end(&w[0]);
  job_end(&w[2]);
  CHECK_INT(queue_count("fifo"), ==, 0);
}

/* Members made with another N are refused, and leave nothing; a
 * directory made without data gets ours. */
static void test_mismatch_and_bare_directory(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s3, *s2;
  zkl_lease_t *l = NULL, *l2 = NULL;
  char path[256], buf[64];
  int len = sizeof buf - 1;
  new_root();
  s3 = semaphore(c, "mm", 3);
  s2 = semaphore(c, "mm", 2);
  CHECK_RC(zkl_semaphore_acquire(s3, &l), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(s2, &l2), ZKL_EMISMATCH);
  CHECK_RC(zkl_semaphore_tryacquire(s2, &l2), ZKL_EMISMATCH);
  CHECK(l2 == NULL);
  CHECK_INT(queue_len("mm"), ==, 1);
  CHECK_RC(zkl_lease_release(l), ZKL_OK);
  zkl_semaphore_destroy(s2);
  zkl_semaphore_destroy(s3);
  /* an operator's persistent directory, no data */
  snprintf(path, sizeof path, "%s/bare", root);
  CHECK_INT(admin_create_in_root(path, NULL, -1), ==, ZOK);
  s2 = semaphore(c, "bare", 2);
  CHECK_RC(zkl_semaphore_acquire(s2, &l), ZKL_OK);
  CHECK_INT(zoo_get(admin, path, 0, buf, &len, NULL), ==, ZOK);
  CHECK_INT(len, ==, 5);
  CHECK(len == 5 && memcmp(buf, "max=2", 5) == 0);
  CHECK_RC(zkl_lease_release(l), ZKL_OK);
  zkl_semaphore_destroy(s2);
  s3 = semaphore(c, "bare", 3);
  CHECK_RC(zkl_semaphore_acquire(s3, &l), ZKL_EMISMATCH);
  zkl_semaphore_destroy(s3);
  zkl_client_destroy(c);
}

/* Gives back a lease a refused acquire got anyway (on a library that
 * lets it in), so that one failed check does not wedge the next. */
static void drop(zkl_lease_t **l) {
  if (*l)
    CHECK_RC(zkl_lease_release(*l), ZKL_OK);
  *l = NULL;
}

/* Issue 23, item 4: rewriting the directory's "max=N" does not override
 * the N of the live leases. Three leases of N=3 are held; a co-tenant
 * sets the directory to max=100; a member made with N=100 is refused
 * (ZKL_EMISMATCH, no node left) while any lease of N=3 is live, and the
 * holders are untouched. Members of N=3 still get in: the live leases
 * decide, not the directory. Once no lease of N=3 is left, the directory
 * speaks again: N=100 gets in, and N=3 is refused from then on. */
static void test_rewritten_directory(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  zkl_semaphore_t *s3, *s3b, *s100;
  zkl_lease_t *l[3] = {0}, *x = NULL;
  zkl_contender_t *list = NULL;
  size_t n = 0, k;
  struct job w;
  char path[256];
  int i;
  new_root();
  s3 = semaphore(c, "rw", 3);
  for (i = 0; i < 3; i++)
    CHECK_RC(zkl_semaphore_acquire(s3, &l[i]), ZKL_OK);
  snprintf(path, sizeof path, "%s/rw", root);
  CHECK_INT(zoo_set(admin, path, "max=100", 7, -1), ==, ZOK);
  s100 = semaphore(c2, "rw", 100);
  CHECK_RC(zkl_semaphore_tryacquire(s100, &x), ZKL_EMISMATCH);
  CHECK(x == NULL);
  drop(&x);
  CHECK_RC(zkl_semaphore_timedacquire(s100, zkl_now_ms() + 1000, &x),
           ZKL_EMISMATCH);
  CHECK(x == NULL);
  drop(&x);
  CHECK_INT(queue_len("rw"), ==, 3); /* the refused left nothing */
  for (i = 0; i < 3; i++) {
    CHECK_INT(zkl_lease_state(l[i]), ==, ZKL_STATE_HELD);
    CHECK_RC(zkl_lease_verify(l[i]), ZKL_OK);
  }
  /* new members of N=3 wait their turn, as before the rewrite, and the
   * listing goes by the leases' N, not by the directory's */
  s3b = semaphore(c2, "rw", 3);
  CHECK_RC(zkl_semaphore_tryacquire(s3b, &x), ZKL_EBUSY);
  drop(&x);
  job_start(&w, "rw", 3);
  QUEUED("rw", 4);
  CHECK_RC(zkl_mutex_queue(c, root, "rw", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 4);
  for (k = 0; k < n; k++)
    CHECK_INT(list[k].holds, ==, k < 3);
  zkl_contenders_free(list, n);
  CHECK_RC(zkl_lease_release(l[0]), ZKL_OK);
  l[0] = NULL;
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK(atomic_load(&w.held));
  CHECK_RC(zkl_semaphore_tryacquire(s100, &x), ZKL_EMISMATCH);
  drop(&x);
  job_end(&w);
  for (i = 1; i < 3; i++)
    CHECK_RC(zkl_lease_release(l[i]), ZKL_OK);
  /* no lease of N=3 left: the directory decides, for every object */
  CHECK_RC(zkl_semaphore_tryacquire(s3, &x), ZKL_EMISMATCH);
  drop(&x);
  CHECK_RC(zkl_semaphore_tryacquire(s100, &x), ZKL_OK);
  CHECK_RC(zkl_semaphore_tryacquire(s3b, &l[0]), ZKL_EMISMATCH);
  CHECK(l[0] == NULL);
  drop(&l[0]);
  CHECK_INT(queue_len("rw"), ==, 1);
  drop(&x);
  CHECK_INT(queue_count("rw"), ==, 0);
  zkl_semaphore_destroy(s3);
  zkl_semaphore_destroy(s3b);
  zkl_semaphore_destroy(s100);
  zkl_client_destroy(c2);
  zkl_client_destroy(c);
}

/* A lock and a semaphore on one name exclude each other. */
static void test_lock_excludes_leases(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s;
  zkl_mutex_t *m;
  zkl_lease_t *l = NULL;
  zkl_contender_t *list = NULL;
  size_t n = 0;
  new_root();
  s = semaphore(c, "mix", 3);
  m = mutex(c, "mix");
  CHECK_RC(zkl_semaphore_acquire(s, &l), ZKL_OK);
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_queue(c, root, "mix", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 1);
  if (n == 1) {
    CHECK_INT(list[0].mode, ==, ZKL_MODE_LEASE);
    CHECK_INT(list[0].holds, ==, 1);
  }
  zkl_contenders_free(list, n);
  CHECK_RC(zkl_lease_release(l), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  l = NULL;
  CHECK_RC(zkl_semaphore_tryacquire(s, &l), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_semaphore_destroy(s);
  zkl_client_destroy(c);
}

/* The listing says who holds: the N lowest leases. */
static void test_listing(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s;
  zkl_lease_t *l[2];
  zkl_contender_t *list = NULL;
  size_t n = 0, i;
  struct job w;
  new_root();
  s = semaphore(c, "ls", 2);
  CHECK_RC(zkl_semaphore_acquire(s, &l[0]), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(s, &l[1]), ZKL_OK);
  job_start(&w, "ls", 2);
  QUEUED("ls", 3);
  CHECK_RC(zkl_mutex_queue(c, root, "ls", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 3);
  for (i = 0; i < n; i++) {
    CHECK_INT(list[i].mode, ==, ZKL_MODE_LEASE);
    CHECK_INT(list[i].holds, ==, i < 2);
  }
  zkl_contenders_free(list, n);
  CHECK_RC(zkl_lease_release(l[0]), ZKL_OK);
  WAIT_FOR(atomic_load(&w.held), 5000);
  job_end(&w);
  CHECK_RC(zkl_lease_release(l[1]), ZKL_OK);
  zkl_semaphore_destroy(s);
  zkl_client_destroy(c);
}

/* Many clients, few leases: never more than N inside, everyone served. */
struct worker {
  const char *name;
  _Atomic int *inside, *peak, *done;
  int rc;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s = semaphore(c, w->name, 3);
  int i, now, peak;
  for (i = 0; i < 3 && w->rc == ZKL_OK; i++) {
    zkl_lease_t *l = NULL;
    w->rc = zkl_semaphore_acquire(s, &l);
    if (w->rc != ZKL_OK)
      break;
    now = atomic_fetch_add(w->inside, 1) + 1;
    peak = atomic_load(w->peak);
    while (now > peak && !atomic_compare_exchange_weak(w->peak, &peak, now))
      ;
    usleep(5000);
    atomic_fetch_sub(w->inside, 1);
    w->rc = zkl_lease_release(l);
  }
  atomic_fetch_add(w->done, 1);
  zkl_semaphore_destroy(s);
  zkl_client_destroy(c);
  return NULL;
}

static void test_many_clients(void) {
  enum { W = 12 };
  struct worker w[W];
  pthread_t t[W];
  _Atomic int inside = 0, peak = 0, done = 0;
  int i;
  new_root();
  for (i = 0; i < W; i++) {
    w[i].name = "many";
    w[i].inside = &inside;
    w[i].peak = &peak;
    w[i].done = &done;
    w[i].rc = ZKL_OK;
    pthread_create(&t[i], NULL, worker_main, &w[i]);
  }
  for (i = 0; i < W; i++) {
    pthread_join(t[i], NULL);
    CHECK_RC(w[i].rc, ZKL_OK);
  }
  CHECK_INT(done, ==, W);
  /* that leases are really held together is test_n_at_once's to show:
   * here, under valgrind, the holds may well never overlap */
  CHECK_INT(peak, <=, 3);
  CHECK_INT(queue_count("many"), ==, 0);
}

static void test_bad_input(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s = NULL;
  zkl_semaphore_options_t o = {0};
  zkl_lease_t *l = NULL;
  new_root();
  CHECK_RC(zkl_semaphore_create(&s, c, "x", 0, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_semaphore_create(&s, c, "x", ZKL_LEASES_MAX + 1, NULL),
           ZKL_EINVAL);
  CHECK_RC(zkl_semaphore_create(&s, c, "a/b", 2, NULL), ZKL_EINVAL);
  o.flags = 1;
  CHECK_RC(zkl_semaphore_create(&s, c, "x", 2, &o), ZKL_EINVAL);
  CHECK(s == NULL);
  CHECK_RC(zkl_semaphore_acquire(NULL, &l), ZKL_EINVAL);
  CHECK_RC(zkl_lease_release(NULL), ZKL_EINVAL);
  CHECK_INT(zkl_lease_state(NULL), ==, ZKL_EINVAL);
  s = semaphore(c, "x", 1);
  CHECK_RC(zkl_semaphore_acquire(s, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_semaphore_cancel(s), ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(s), ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(s), ZKL_EINVAL);
  zkl_client_destroy(c);
}

int main(void) {
  admin_open();
  RUN(test_n_at_once);
  RUN(test_fifo_any_order_and_relay);
  RUN(test_mismatch_and_bare_directory);
  RUN(test_rewritten_directory);
  RUN(test_lock_excludes_leases);
  RUN(test_listing);
  RUN(test_many_clients);
  RUN(test_bad_input);
  admin_close();
  return CHECK_DONE();
}
