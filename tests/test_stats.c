/* SPDX-License-Identifier: Apache-2.0 */
/* test_stats.c: zkl_client_stats() against a real ensemble
 * (ZKL_TEST_SERVERS): a scripted run of known acquires, timeouts,
 * cancels, losses, revocations and an expiry, and the counters must say
 * exactly that. Each test makes its own client, so its counters start at
 * zero. Linked with the internal library only to expire a client's
 * session from outside (as test_flat.c does). */
#include "../lib/internal.h"
#include "admin.h"

static zkl_client_stats_t stats_of(const zkl_client_t *c) {
  zkl_client_stats_t st;
  memset(&st, 0xa5, sizeof st); /* the call must zero what it leaves */
  st.size = sizeof st;
  CHECK_RC(zkl_client_stats(c, &st), ZKL_OK);
  CHECK_INT(st.size, ==, sizeof st);
  return st;
}

static uint64_t acquires_all(const zkl_client_stats_t *st) {
  uint64_t n = 0;
  int i, j;
  for (i = 0; i < ZKL_STATS_RECIPES; i++)
    for (j = 0; j < ZKL_STATS_OUTCOMES; j++)
      n += st->acquires[i][j];
  return n;
}

static uint64_t buckets_sum(const zkl_stats_histogram_t *h) {
  uint64_t n = 0;
  int i;
  for (i = 0; i < ZKL_STATS_BUCKETS; i++)
    n += h->bucket[i];
  return n;
}

/* A histogram of one value: that value lies in its bucket's edges,
 * [2^i, 2^(i+1)). */
static void check_bucket(const zkl_stats_histogram_t *h) {
  int i;
  for (i = 0; i < ZKL_STATS_BUCKETS && !h->bucket[i]; i++)
    ;
  CHECK(i > 0 && i < ZKL_STATS_BUCKETS - 1);
  CHECK_INT(h->sum_us, >=, (uint64_t)1 << i);
  CHECK_INT(h->sum_us, <, (uint64_t)2 << i);
}

/* Requests by kind add up to the total, once the client is quiet. */
static void check_requests(const zkl_client_t *c) {
  uint64_t total = requests_settled(c), sum = 0;
  zkl_client_stats_t st = stats_of(c);
  int i;
  for (i = 0; i < ZKL_STATS_REQ_KINDS; i++)
    sum += st.requests[i];
  CHECK_INT(sum, ==, total);
  CHECK_INT(zkl_client_request_count(c), ==, total);
}

/* Ends a client's session from outside: a second handle on it closes it.
 * Tried again (up to 3 times) when the client is still on its session 5 s
 * later: the second handle must be connected for its close to reach the
 * server. */
static void expire(zkl_client_t *c) {
  clientid_t id;
  int tries;
  pthread_mutex_lock(&c->mu);
  id = *zoo_client_id(c->sess->zh);
  pthread_mutex_unlock(&c->mu);
  for (tries = 0; tries < 3; tries++) {
    expire_id(&id);
    WAIT_FOR(zkl_client_session_id(c) != id.client_id, 5000);
    if (zkl_client_session_id(c) != id.client_id)
      return;
  }
  CHECK(zkl_client_session_id(c) != id.client_id);
}

/* ---- tests --------------------------------------------------------------- */

/* The struct's size: a shorter (older) caller gets its part only, and a
 * size too small for anything is refused. */
static void test_args(void) {
  zkl_client_t *c = client(10000);
  zkl_client_stats_t st, old;
  memset(&old, 0xa5, sizeof old);
  old.size = 16; /* as a caller built when the struct was 16 bytes long */
  CHECK_RC(zkl_client_stats(c, &old), ZKL_OK);
  CHECK_INT(old.size, ==, 16);
  CHECK_INT(old.acquires[0][0], ==, 0);
  CHECK_INT(old.acquires[0][1], ==, 0xa5a5a5a5a5a5a5a5ULL); /* untouched */
  st.size = 4;
  CHECK_RC(zkl_client_stats(c, &st), ZKL_EINVAL);
  st.size = sizeof st;
  CHECK_RC(zkl_client_stats(NULL, &st), ZKL_EINVAL);
  CHECK_RC(zkl_client_stats(c, NULL), ZKL_EINVAL);
  st = stats_of(c);
  CHECK_INT(acquires_all(&st), ==, 0);
  CHECK_INT(st.sessions_expired, ==, 0);
  zkl_client_destroy(c);
}

/* N locks, each taken again reentrantly: N acquires, N waits, N holds;
 * the reentrant levels count nothing. */
static void test_uncontended(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  zkl_client_stats_t st;
  int i;
  new_root();
  m = mutex(c, "plain");
  for (i = 0; i < 5; i++) {
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* reentrant: not an acquire */
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  }
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK], ==, 5);
  CHECK_INT(acquires_all(&st), ==, 5);
  CHECK_INT(st.contended, ==, 0);
  CHECK_INT(st.handoffs, ==, 0);
  CHECK_INT(st.lost, ==, 0);
  CHECK_INT(st.wait.count, ==, 5);
  CHECK_INT(buckets_sum(&st.wait), ==, 5);
  CHECK_INT(st.hold.count, ==, 5);
  CHECK_INT(buckets_sum(&st.hold), ==, 5);
  CHECK(st.requests[ZKL_STATS_REQ_CREATE] >= 5);
  CHECK(st.requests[ZKL_STATS_REQ_DELETE] >= 5);
  /* the object's first node goes in one transaction with its parent */
  CHECK(st.transactions >= 1);
  CHECK(st.transaction_ops >= st.transactions);
  check_requests(c);
  zkl_mutex_destroy(m);
  cleanup_tree(root);
  zkl_client_destroy(c);
}

struct locker {
  zkl_mutex_t *m;
  _Atomic int done, rc;
};

static void *lock_thread(void *arg) {
  struct locker *l = arg;
  atomic_store(&l->rc, zkl_mutex_lock(l->m));
  if (atomic_load(&l->rc) == ZKL_OK)
    zkl_mutex_unlock(l->m);
  atomic_store(&l->done, 1);
  return NULL;
}

struct async_out {
  _Atomic int done, rc;
};

static void on_acquired(zkl_hold_t *h, int rc, void *arg) {
  struct async_out *o = arg;
  (void)h;
  atomic_store(&o->rc, rc);
  atomic_store(&o->done, 1);
}

/* Behind another client's hold: a timeout and a try that give up, a
 * cancelled async acquire, then a wait that ends by hand-off. */
static void test_contended(void) {
  zkl_client_t *c = client(10000), *other = client(10000);
  zkl_mutex_t *m, *mo;
  zkl_hold_t *h = NULL;
  struct locker l = {0};
  struct async_out ao = {0};
  zkl_client_stats_t st;
  pthread_t t;
  new_root();
  m = mutex(c, "busy");
  mo = mutex(other, "busy");
  CHECK_RC(zkl_mutex_lock(mo), ZKL_OK);
  CHECK_RC(zkl_mutex_timedlock(m, zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY);
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_TIMEDOUT], ==, 2);
  CHECK_INT(st.contended, ==, 2);
  CHECK_INT(st.wait.count, ==, 0);
  /* an async acquire, queued and waiting, then cancelled */
  CHECK_RC(zkl_mutex_lock_async(m, ZKL_NO_DEADLINE, on_acquired, &ao, &h),
           ZKL_OK);
  QUEUED("busy", 2);
  usleep(300000); /* its listing is in: it waits */
  CHECK_RC(zkl_mutex_cancel(m), ZKL_OK);
  WAIT_FOR(atomic_load(&ao.done), 10000);
  CHECK_RC(atomic_load(&ao.rc), ZKL_ECANCELED);
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_CANCELED], ==, 1);
  CHECK_INT(st.contended, ==, 3);
  /* a blocking waiter, granted when the holder leaves */
  QUEUED("busy", 1);
  l.m = m;
  pthread_create(&t, NULL, lock_thread, &l);
  QUEUED("busy", 2);
  usleep(300000);
  CHECK(!atomic_load(&l.done));
  CHECK_RC(zkl_mutex_unlock(mo), ZKL_OK);
  WAIT_FOR(atomic_load(&l.done), 10000);
  pthread_join(t, NULL);
  CHECK_RC(atomic_load(&l.rc), ZKL_OK);
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK], ==, 1);
  CHECK_INT(acquires_all(&st), ==, 4);
  CHECK_INT(st.contended, ==, 4);
  CHECK_INT(st.handoffs, ==, 1);
  CHECK_INT(st.wait.count, ==, 1);
  CHECK_INT(st.hold.count, ==, 1);
  /* the waiter waited at least the 300 ms above, and its one value is
   * in the bucket whose edges hold it */
  CHECK(st.wait.sum_us >= 300000);
  CHECK_INT(buckets_sum(&st.wait), ==, 1);
  check_bucket(&st.wait);
  check_requests(c);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(mo);
  cleanup_tree(root);
  zkl_client_destroy(other);
  zkl_client_destroy(c);
}

/* A hold whose node the admin deletes, then one whose session expires:
 * two losses, one expiry; then a revocation forced after its grace. */
static void test_lost(void) {
  zkl_client_t *c = client(4000), *other = client(10000);
  struct states sa = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkl_mutex_t *m;
  zkl_client_stats_t st;
  char path[512];
  unsigned forced = 0;
  new_root();
  m = mutex_with(c, "lost", 0, &sa);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, path, sizeof path), ZKL_OK);
  usleep(300000); /* its own-node watch is set at 100 ms */
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 10000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  st = stats_of(c);
  CHECK_INT(st.lost, ==, 1);
  CHECK_INT(st.forced, ==, 0);
  CHECK_INT(st.sessions_expired, ==, 0);
  CHECK_INT(st.hold.count, ==, 1);
  /* the session expires under a hold */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  expire(c);
  WAIT_FOR(stats_of(c).sessions_expired > 0, 15000);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 15000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  CHECK_RC(zkl_client_wait_connected(c, zkl_now_ms() + 15000), ZKL_OK);
  st = stats_of(c);
  CHECK_INT(st.sessions_expired, ==, 1);
  CHECK_INT(st.lost, ==, 2);
  /* the new session's first connection is none; the old one may have
   * been bounced once (the second handle took over its connection, and
   * it connected again before the session was closed) */
  CHECK_INT(st.reconnections, <=, 1);
  /* asked to give it back, heard, and forced after 500 ms */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  usleep(300000);
  CHECK_RC(zkl_revoke(other, root, "lost", NULL, 500, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 1);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 10000);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_EREVOKED);
  st = stats_of(c);
  CHECK_INT(st.revoked, ==, 1);
  CHECK_INT(st.forced, ==, 1);
  CHECK_INT(st.lost, ==, 3);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK], ==, 3);
  CHECK_INT(acquires_all(&st), ==, 3);
  CHECK_INT(st.hold.count, ==, 3);
  check_requests(c);
  zkl_mutex_destroy(m);
  cleanup_tree(root);
  zkl_client_destroy(other);
  zkl_client_destroy(c);
}

static void on_released(int rc, void *arg) {
  struct async_out *o = arg;
  atomic_store(&o->rc, rc);
  atomic_store(&o->done, 1);
}

/* One acquire of every recipe lands in its own row. */
static void test_recipes(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_options_t fo = {0};
  zkl_rwlock_options_t ro = {0};
  zkl_semaphore_options_t so = {0};
  zkl_multilock_options_t mo = {0};
  zkl_election_options_t eo = {0};
  zkl_multilock_member_t mem[2] = {{"m1", ZKL_MODE_EXCLUSIVE},
                                   {"m2", ZKL_MODE_SHARED}};
  zkl_mutex_t *f = NULL;
  zkl_rwlock_t *rw = NULL;
  zkl_semaphore_t *sem = NULL;
  zkl_lease_t *lease = NULL;
  zkl_multilock_t *ml = NULL;
  zkl_election_t *e = NULL;
  zkl_hold_t *h = NULL;
  struct async_out ao = {0}, rel = {0};
  zkl_client_stats_t st;
  new_root();
  fo.root = ro.root = so.root = mo.root = eo.root = root;
  fo.flags = ZKL_MUTEX_FLAT;
  CHECK_RC(zkl_mutex_create(&f, c, "flat", &fo), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(f), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(f), ZKL_OK);
  CHECK_RC(zkl_rwlock_create(&rw, c, "rw", &ro), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK); /* under write: costs nothing */
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrlock_async(rw, ZKL_NO_DEADLINE, on_acquired, &ao, &h),
           ZKL_OK);
  WAIT_FOR(atomic_load(&ao.done), 10000);
  CHECK_RC(atomic_load(&ao.rc), ZKL_OK);
  CHECK_RC(zkl_hold_release_async(h, on_released, &rel), ZKL_OK);
  WAIT_FOR(atomic_load(&rel.done), 10000);
  CHECK_RC(atomic_load(&rel.rc), ZKL_OK);
  CHECK_RC(zkl_semaphore_create(&sem, c, "sem", 2, &so), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(sem, &lease), ZKL_OK);
  CHECK_RC(zkl_lease_release(lease), ZKL_OK);
  CHECK_RC(zkl_multilock_create(&ml, c, mem, 2, &mo), ZKL_OK);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_RC(zkl_election_create(&e, c, "elect", "me", &eo), ZKL_OK);
  CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK);
  CHECK_RC(zkl_election_resign(e), ZKL_OK);
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_FLAT][ZKL_STATS_OK], ==, 1);
  CHECK_INT(st.acquires[ZKL_STATS_READ][ZKL_STATS_OK], ==, 1);
  CHECK_INT(st.acquires[ZKL_STATS_WRITE][ZKL_STATS_OK], ==, 2);
  CHECK_INT(st.acquires[ZKL_STATS_SEMAPHORE][ZKL_STATS_OK], ==, 1);
  CHECK_INT(st.acquires[ZKL_STATS_MULTILOCK][ZKL_STATS_OK], ==, 1);
  CHECK_INT(st.acquires[ZKL_STATS_ELECTION][ZKL_STATS_OK], ==, 1);
  CHECK_INT(acquires_all(&st), ==, 7);
  CHECK_INT(st.wait.count, ==, 7);
  CHECK_INT(st.hold.count, ==, 7);
  CHECK_INT(st.contended, ==, 0);
  /* a multi-lock's join is one transaction sent as one request */
  CHECK(st.requests[ZKL_STATS_REQ_MULTI] >= 1);
  CHECK(st.transactions >= st.requests[ZKL_STATS_REQ_MULTI]);
  check_requests(c);
  zkl_election_destroy(e);
  zkl_multilock_destroy(ml);
  zkl_semaphore_destroy(sem);
  zkl_rwlock_destroy(rw);
  zkl_mutex_destroy(f);
  cleanup_tree(root);
  zkl_client_destroy(c);
}

/* Readers of the counters while other threads lock: every value read is
 * one a counter had (TSan checks that nothing is a plain field). */
struct hammer {
  zkl_client_t *c;
  zkl_mutex_t *m;
  _Atomic int stop;
};

static void *hammer_thread(void *arg) {
  struct hammer *hm = arg;
  int i;
  for (i = 0; i < 20; i++) {
    CHECK_RC(zkl_mutex_lock(hm->m), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(hm->m), ZKL_OK);
  }
  return NULL;
}

static void test_concurrent_reads(void) {
  struct hammer hm[2];
  pthread_t t[2];
  zkl_client_stats_t st;
  uint64_t last = 0;
  int i, done = 0;
  zkl_client_t *c = client(10000);
  new_root();
  for (i = 0; i < 2; i++) {
    hm[i].c = c;
    hm[i].m = mutex(c, i ? "h1" : "h0");
    pthread_create(&t[i], NULL, hammer_thread, &hm[i]);
  }
  int64_t until = zkl_now_ms() + 30000;
  while (!done && zkl_now_ms() < until) {
    st = stats_of(c);
    CHECK(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK] >= last);
    last = st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK];
    done = last == 40;
    usleep(1000);
  }
  for (i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    zkl_mutex_destroy(hm[i].m);
  }
  st = stats_of(c);
  CHECK_INT(st.acquires[ZKL_STATS_MUTEX][ZKL_STATS_OK], ==, 40);
  CHECK_INT(st.hold.count, ==, 40);
  check_requests(c);
  cleanup_tree(root);
  zkl_client_destroy(c);
}

int main(void) {
  admin_open();
  root_tag = "zklstats";
  RUN(test_args);
  RUN(test_uncontended);
  RUN(test_contended);
  RUN(test_lost);
  RUN(test_recipes);
  RUN(test_concurrent_reads);
  admin_close();
  return CHECK_DONE();
}
