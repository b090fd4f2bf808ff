/* SPDX-License-Identifier: Apache-2.0 */
/* test_revoke.c: revocation against a real ensemble (ZKL_TEST_SERVERS):
 * the holder hears the request, even one that reached its node before
 * the hold began, the request keeps what the node's data said, a holder
 * that does not release in time is forced out and told apart, a waiter
 * is cancelled, and leases and Curator's request work too. */
#include <stdatomic.h>

#include "admin.h"

static int saw(struct states *s, int state) {
  int i, v = 0;
  pthread_mutex_lock(&s->mu);
  for (i = 0; i < s->n; i++)
    v |= s->seen[i] == state;
  pthread_mutex_unlock(&s->mu);
  return v;
}

/* The number of request lines in path's data; -1: no node. */
static int requests(const char *path, int *zklock_header) {
  char buf[2048];
  int len = sizeof buf - 1, n = 0;
  const char *p = buf;
  admin_sync(path);
  if (zoo_get(admin, path, 0, buf, &len, NULL) != ZOK)
    return -1;
  buf[len < 0 ? 0 : len] = '\0';
  *zklock_header = strncmp(buf, "zklock 1\n", 9) == 0 &&
                   strstr(buf, "\nhost=") && strstr(buf, "\npid=");
  while ((p = strstr(p, "\nrevoke=")) != NULL) {
    n++;
    p++;
  }
  return n;
}

/* Asked: the holder turns REVOKE_REQUESTED, the node keeps its data and
 * gains one line, and the hold is released as usual. */
static void asked(int early) {
  zkl_client_t *c = client(10000), *r = client(10000);
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkl_mutex_t *m;
  char node[256];
  unsigned forced = 9;
  int header = 0;
  new_root();
  m = mutex_with(c, "asked", 0, &st);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  if (!early)
    usleep(300 * 1000); /* the node is watched */
  CHECK_RC(zkl_revoke(r, root, "asked", NULL, -1, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 0);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_REVOKE_REQUESTED, 3000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_REVOKE_REQUESTED);
  WAIT_FOR(saw(&st, ZKL_STATE_REVOKE_REQUESTED), 2000);
  CHECK(saw(&st, ZKL_STATE_REVOKE_REQUESTED));
  CHECK_INT(requests(node, &header), ==, 1);
  CHECK(header);
  /* reentry still counts: the hold stands until released */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(queue_count("asked"), ==, 0);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  zkl_client_destroy(r);
}
static void test_asked(void) { asked(0); }
static void test_asked_in_first_100ms(void) { asked(1); }

struct revoker {
  zkl_client_t *c;
  const char *name, *node;
  int64_t grace;
  unsigned forced;
  int rc;
  int64_t took;
};

static void *revoke_thread(void *arg) {
  struct revoker *v = arg;
  int64_t t0 = zkl_now_ms();
  v->rc = zkl_revoke(v->c, root, v->name, v->node, v->grace, &v->forced);
  v->took = zkl_now_ms() - t0;
  return NULL;
}

/* Two revokers at once: both lines stay (a conditional write, merged). */
static void test_two_revokers(void) {
  zkl_client_t *c = client(10000), *r1 = client(10000), *r2 = client(10000);
  zkl_mutex_t *m;
  struct revoker a = {r1, "two", NULL, -1, 0, 0, 0};
  struct revoker b = {r2, "two", NULL, -1, 0, 0, 0};
  pthread_t ta, tb;
  char node[256];
  int header = 0;
  new_root();
  m = mutex(c, "two");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  pthread_create(&ta, NULL, revoke_thread, &a);
  pthread_create(&tb, NULL, revoke_thread, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK_RC(a.rc, ZKL_OK);
  CHECK_RC(b.rc, ZKL_OK);
  CHECK_INT(requests(node, &header), ==, 2);
  CHECK(header);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  zkl_client_destroy(r1);
  zkl_client_destroy(r2);
}

/* Not released in time: forced out after the grace period, told LOST,
 * ZKL_EREVOKED from its calls, its guarded write refused; the waiter
 * behind it holds next with a larger token. */
static void test_forced(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000), *r = client(10000);
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkl_mutex_t *m, *m2;
  struct revoker v = {r, "forced", NULL, 700, 0, 0, 0};
  uint64_t t1 = 0, t2 = 0;
  char state[192];
  zkl_op_t op = {0};
  pthread_t t;
  new_root();
  m = mutex_with(c, "forced", 0, &st);
  m2 = mutex(c2, "forced");
  snprintf(state, sizeof state, "%s/state", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_token(m, &t1), ZKL_OK);
  usleep(300 * 1000);
  pthread_create(&t, NULL, revoke_thread, &v);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_REVOKE_REQUESTED, 3000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_REVOKE_REQUESTED);
  pthread_join(t, NULL);
  CHECK_RC(v.rc, ZKL_OK);
  CHECK_INT(v.forced, ==, 1);
  CHECK_INT(v.took, >=, 700);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 3000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  WAIT_FOR(saw(&st, ZKL_STATE_LOST), 2000);
  CHECK(saw(&st, ZKL_STATE_LOST));
  op.type = ZKL_OP_CREATE;
  op.path = state;
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_ELOST);
  CHECK_RC(zkl_mutex_trylock(m2), ZKL_OK);
  CHECK_RC(zkl_mutex_token(m2, &t2), ZKL_OK);
  CHECK(t2 > t1);
  CHECK_RC(zkl_mutex_verify(m), ZKL_EREVOKED);
  CHECK_RC(zkl_mutex_lock(m), ZKL_EREVOKED);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_EREVOKED);
  CHECK_RC(zkl_mutex_unlock(m2), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(m2);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
  zkl_client_destroy(r);
}

/* Released on the request, within the grace period: nothing forced, and
 * the revoker returns as soon as the node is gone. */
static void test_released_in_grace(void) {
  zkl_client_t *c = client(10000), *r = client(10000);
  zkl_mutex_t *m;
  struct revoker v = {r, "grace", NULL, 20000, 0, 0, 0};
  pthread_t t;
  new_root();
  m = mutex(c, "grace");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  usleep(300 * 1000);
  pthread_create(&t, NULL, revoke_thread, &v);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_REVOKE_REQUESTED, 3000);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(v.rc, ZKL_OK);
  CHECK_INT(v.forced, ==, 0);
  CHECK_INT(v.took, <, 10000);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  zkl_client_destroy(r);
}

struct locker {
  zkl_mutex_t *m;
  int rc;
};

static void *lock_thread(void *arg) {
  struct locker *l = arg;
  l->rc = zkl_mutex_lock(l->m);
  if (l->rc == ZKL_OK)
    zkl_mutex_unlock(l->m);
  return NULL;
}

/* A named waiter: cancelled at once with ZKL_EREVOKED, no join again; the
 * holder is not touched. */
static void test_waiter(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000), *r = client(10000);
  zkl_mutex_t *m, *m2;
  zkl_contender_t *list = NULL;
  size_t n = 0;
  struct locker l = {0, 0};
  unsigned forced = 0;
  char waiter[256] = "";
  pthread_t t;
  new_root();
  m = mutex(c, "waiter");
  m2 = mutex(c2, "waiter");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  l.m = m2;
  pthread_create(&t, NULL, lock_thread, &l);
  QUEUED("waiter", 2);
  CHECK_RC(zkl_mutex_queue(r, root, "waiter", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 2);
  if (n == 2)
    snprintf(waiter, sizeof waiter, "%s", list[1].node);
  zkl_contenders_free(list, n);
  CHECK_RC(zkl_revoke(r, root, "waiter", waiter, 5000, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 1);
  pthread_join(t, NULL);
  CHECK_RC(l.rc, ZKL_EREVOKED);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_INT(queue_len("waiter"), ==, 1);
  CHECK_RC(zkl_revoke(r, root, "waiter", waiter, -1, NULL), ZKL_ENOTHELD);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_revoke(r, root, "waiter", NULL, -1, NULL), ZKL_ENOTHELD);
  CHECK_RC(zkl_revoke(r, root, "no-such-lock", NULL, -1, NULL), ZKL_ENOTHELD);
  CHECK_RC(zkl_revoke(r, root, "a/b", NULL, -1, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_revoke(NULL, root, "waiter", NULL, -1, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_revoke(r, "relative", "waiter", NULL, -1, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_revoke(r, root, "waiter", "../x", -1, NULL), ZKL_EINVAL);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(m2);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
  zkl_client_destroy(r);
}

/* Every lease of a semaphore is a holder: both are asked and forced. */
static void test_leases(void) {
  zkl_client_t *c = client(10000), *r = client(10000);
  zkl_semaphore_t *sem = NULL;
  zkl_semaphore_options_t so = {0};
  zkl_lease_t *l1 = NULL, *l2 = NULL;
  unsigned forced = 0;
  new_root();
  so.root = root;
  CHECK_RC(zkl_semaphore_create(&sem, c, "sem", 2, &so), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(sem, &l1), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(sem, &l2), ZKL_OK);
  usleep(300 * 1000);
  CHECK_RC(zkl_revoke(r, root, "sem", NULL, 300, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 2);
  WAIT_FOR(zkl_lease_state(l1) == ZKL_STATE_LOST &&
               zkl_lease_state(l2) == ZKL_STATE_LOST,
           3000);
  CHECK_RC(zkl_lease_release(l1), ZKL_EREVOKED);
  CHECK_RC(zkl_lease_release(l2), ZKL_EREVOKED);
  CHECK_RC(zkl_semaphore_destroy(sem), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(r);
}

/* Curator's Revoker writes "__REVOKE__" over the data: heard as well. A
 * hold that does not watch its node hears nothing and, forced, is only
 * LOST. */
static void test_curator_request_and_unwatched(void) {
  zkl_client_t *c = client(10000), *r = client(10000);
  zkl_mutex_t *m, *u;
  char node[256];
  unsigned forced = 0;
  new_root();
  m = mutex(c, "curator");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  usleep(300 * 1000);
  CHECK_INT(zoo_set(admin, node, "__REVOKE__", 10, -1), ==, ZOK);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_REVOKE_REQUESTED, 3000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_REVOKE_REQUESTED);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  u = mutex_with(c, "unwatched", ZKL_MUTEX_NO_NODE_WATCH, NULL);
  CHECK_RC(zkl_mutex_lock(u), ZKL_OK);
  usleep(300 * 1000);
  CHECK_RC(zkl_revoke(r, root, "unwatched", NULL, 100, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 1);
  CHECK_RC(zkl_mutex_unlock(u), ZKL_ELOST);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(u);
  zkl_client_destroy(c);
  zkl_client_destroy(r);
}

/* F6, found by model/revoke.pml: a writer asked to give the lock back
 * downgrades. Its mark is written at the version it expects; the request
 * moved it; on the retry it wrote its own fresh data over the request it
 * had just read, which was lost (and the holder might never hear it).
 * The request must stay, beside the mark. */
static void test_downgrade_keeps_request(void) {
  zkl_client_t *c = client(10000), *r = client(10000);
  zkl_rwlock_options_t o = {0};
  zkl_rwlock_t *rw = NULL;
  char node[256], buf[2048];
  int header = 0, len = sizeof buf - 1;
  unsigned forced = 9;
  new_root();
  o.root = root;
  CHECK_RC(zkl_rwlock_create(&rw, c, "dg", &o), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_node_path(rw, node, sizeof node), ZKL_OK);
  CHECK_RC(zkl_revoke(r, root, "dg", NULL, -1, &forced), ZKL_OK);
  CHECK_INT(requests(node, &header), ==, 1);
  CHECK_RC(zkl_rwlock_downgrade(rw), ZKL_OK);
  CHECK_INT(requests(node, &header), ==, 1); /* the request stayed */
  CHECK(header);
  admin_sync(node);
  CHECK_INT(zoo_get(admin, node, 0, buf, &len, NULL), ==, ZOK);
  buf[len < 0 ? 0 : len] = '\0';
  CHECK(strstr(buf, "\nmode=read\n") != NULL); /* and the mark with it */
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_INT(queue_count("dg"), ==, 0);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(r);
}

struct holder {
  zkl_mutex_t *m;
  int rc, unlock_rc;
  atomic_int release;
};

static void *hold_thread(void *arg) {
  struct holder *h = arg;
  h->rc = zkl_mutex_lock(h->m);
  while (h->rc == ZKL_OK && !atomic_load(&h->release))
    usleep(10 * 1000);
  if (h->rc == ZKL_OK)
    h->unlock_rc = zkl_mutex_unlock(h->m);
  return NULL;
}

/* F9, found by model/revoke.pml: a request written into a node whose
 * owner still waits. A revoker asks the node its listing shows first,
 * which may be before the owner's client has heard of its predecessor's
 * release; the owner's own-node watch, set while it waited, then reads the
 * request before the hold begins. The request was dropped there (not a
 * hold yet), and the hold began HELD with that watch on: nothing read the
 * node again, so a holder asked with grace -1 never heard. Here the
 * request is written the way ask() writes it while the waiter surely
 * waits; the hold must turn REVOKE_REQUESTED as it begins. */
static void test_asked_while_waiting(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  struct holder h = {0};
  zkl_mutex_t *m;
  zkl_contender_t *list = NULL;
  size_t n = 0;
  char node[256] = "", buf[2048], nd[2100];
  const char *line = "revoke=f9-test,-1\n";
  struct Stat stat;
  int len = sizeof buf, header = 0;
  pthread_t t;
  new_root();
  m = mutex(c, "waiting");
  h.m = mutex_with(c2, "waiting", 0, &st);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  pthread_create(&t, NULL, hold_thread, &h);
  QUEUED("waiting", 2);
  CHECK_RC(zkl_mutex_queue(c, root, "waiting", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 2);
  if (n == 2)
    snprintf(node, sizeof node, "%s/waiting/%s", root, list[1].node);
  zkl_contenders_free(list, n);
  usleep(300 * 1000); /* the waiter's own node is watched */
  admin_sync(node);
  CHECK_INT(zoo_get(admin, node, 0, buf, &len, &stat), ==, ZOK);
  CHECK(len >= 9 && (size_t)len + strlen(line) <= sizeof nd &&
        memcmp(buf, "zklock 1\n", 9) == 0);
  if (len >= 9 && (size_t)len + strlen(line) <= sizeof nd) {
    /* ask()'s merge: the request after the magic line */
    memcpy(nd, buf, 9);
    memcpy(nd + 9, line, strlen(line));
    memcpy(nd + 9 + strlen(line), buf + 9, (size_t)len - 9);
    CHECK_INT(zoo_set(admin, node, nd, len + (int)strlen(line), stat.version),
              ==, ZOK);
  }
  usleep(300 * 1000); /* the waiter's watch read it */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  WAIT_FOR(saw(&st, ZKL_STATE_REVOKE_REQUESTED), 3000);
  CHECK(saw(&st, ZKL_STATE_REVOKE_REQUESTED));
  CHECK_INT(requests(node, &header), ==, 1);
  atomic_store(&h.release, 1);
  pthread_join(t, NULL);
  CHECK_RC(h.rc, ZKL_OK);
  CHECK_RC(h.unlock_rc, ZKL_OK);
  CHECK_INT(queue_count("waiting"), ==, 0);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(h.m);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
}

int main(void) {
  root_tag = "zklrevoke";
  admin_open();
  RUN(test_asked);
  RUN(test_asked_in_first_100ms);
  RUN(test_two_revokers);
  RUN(test_forced);
  RUN(test_released_in_grace);
  RUN(test_waiter);
  RUN(test_leases);
  RUN(test_curator_request_and_unwatched);
  RUN(test_downgrade_keeps_request);
  RUN(test_asked_while_waiting);
  admin_close();
  return CHECK_DONE();
}
