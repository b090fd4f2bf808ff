/* SPDX-License-Identifier: Apache-2.0 */
/* test_multilock.c: several locks held as one, against a real ensemble
 * (ZKL_TEST_SERVERS): one zxid for every node, no deadlock between callers
 * naming the locks in opposite orders (where taking them one by one
 * deadlocks) or with single-lock users, nothing left behind by try, timed
 * or cancel, a member's node deleted while waiting or holding, guarded
 * writes on the set, and one deadline for all. */
#include <stdatomic.h>
#include <time.h>

#include "admin.h"

static zkl_multilock_t *multi(zkl_client_t *c, const char *a, int ma,
                              const char *b, int mb) {
  zkl_multilock_t *ml = NULL;
  zkl_multilock_options_t o = {0};
  zkl_multilock_member_t m[2];
  m[0].name = a, m[0].mode = ma;
  m[1].name = b, m[1].mode = mb;
  o.root = root;
  CHECK_RC(zkl_multilock_create(&ml, c, m, 2, &o), ZKL_OK);
  return ml;
}

/* The czxid of the only node in root/name; 0 if not exactly one. */
static int64_t only_czxid(const char *name) {
  char path[256], node[512];
  struct String_vector v;
  struct Stat st;
  int64_t z = 0;
  snprintf(path, sizeof path, "%s/%s", root, name);
  admin_sync(path);
  if (zoo_get_children(admin, path, 0, &v) != ZOK)
    return 0;
  if (v.count == 1) {
    snprintf(node, sizeof node, "%s/%s", path, v.data[0]);
    if (zoo_exists(admin, node, 0, &st) == ZOK)
      z = st.czxid;
  }
  deallocate_String_vector(&v);
  return z;
}

/* Every node in one transaction: one zxid, the set's token. */
static void test_one_zxid(void) {
  zkl_client_t *c = client(10000);
  zkl_multilock_t *ml;
  uint64_t token = 0;
  int64_t za, zb;
  new_root();
  ml = multi(c, "a", ZKL_MODE_EXCLUSIVE, "b", ZKL_MODE_EXCLUSIVE);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_multilock_token(ml, &token), ZKL_OK);
  za = only_czxid("a");
  zb = only_czxid("b");
  CHECK(za != 0);
  CHECK_INT(za, ==, zb);
  CHECK_INT((int64_t)token, ==, za);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_EBUSY); /* not reentrant */
  CHECK_RC(zkl_multilock_verify(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_ENOTOWNER);
  CHECK_INT(queue_count("a"), ==, 0);
  CHECK_INT(queue_count("b"), ==, 0);
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  zkl_client_destroy(c);
}

/* Taking two locks one by one in opposite orders deadlocks (each thread
 * holds one and waits for the other: only the deadline ends it); as one
 * multi-lock each, the same two callers both get through. */
struct pair {
  zkl_client_t *c;
  const char *first, *second;
  pthread_barrier_t *bar;
  int rc;
};

static void *one_by_one(void *arg) {
  struct pair *p = arg;
  zkl_mutex_t *m1 = mutex(p->c, p->first), *m2 = mutex(p->c, p->second);
  CHECK_RC(zkl_mutex_lock(m1), ZKL_OK);
  pthread_barrier_wait(p->bar); /* both hold their first lock */
  p->rc = zkl_mutex_timedlock(m2, zkl_now_ms() + 1500);
  if (p->rc == ZKL_OK)
    zkl_mutex_unlock(m2);
  zkl_mutex_unlock(m1);
  zkl_mutex_destroy(m1);
  zkl_mutex_destroy(m2);
  return NULL;
}

static void *as_one(void *arg) {
  struct pair *p = arg;
  zkl_multilock_t *ml = multi(p->c, p->first, ZKL_MODE_EXCLUSIVE, p->second,
                              ZKL_MODE_EXCLUSIVE);
  pthread_barrier_wait(p->bar);
  p->rc = zkl_multilock_timedlock(ml, zkl_now_ms() + 10000);
  if (p->rc == ZKL_OK) {
    usleep(50 * 1000);
    zkl_multilock_unlock(ml);
  }
  zkl_multilock_destroy(ml);
  return NULL;
}

static void opposite(void *(*fn)(void *), int *rc1, int *rc2) {
  zkl_client_t *c1 = client(10000), *c2 = client(10000);
  pthread_barrier_t bar;
  struct pair p1 = {c1, "x", "y", &bar, -1}, p2 = {c2, "y", "x", &bar, -1};
  pthread_t t1, t2;
  pthread_barrier_init(&bar, NULL, 2);
  pthread_create(&t1, NULL, fn, &p1);
  pthread_create(&t2, NULL, fn, &p2);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  pthread_barrier_destroy(&bar);
  *rc1 = p1.rc;
  *rc2 = p2.rc;
  zkl_client_destroy(c1);
  zkl_client_destroy(c2);
}

static void test_opposite_orders(void) {
  int a, b;
  new_root();
  opposite(one_by_one, &a, &b);
  /* the control: the deadlock is real (it can fail) */
  CHECK_RC(a, ZKL_ETIMEDOUT);
  CHECK_RC(b, ZKL_ETIMEDOUT);
  new_root();
  opposite(as_one, &a, &b);
  CHECK_RC(a, ZKL_OK);
  CHECK_RC(b, ZKL_OK);
  CHECK_INT(queue_count("x") + queue_count("y"), ==, 0);
}

/* Loops: {p, q} and {q, p} as multi-locks, and a single-lock user of each,
 * all at once; a count per lock checks exclusion, and every loop ends. */
struct looper {
  zkl_client_t *c;
  const char *a, *b; /* b NULL: a single lock */
  int n, done, overlaps;
  _Atomic int *in_a, *in_b;
};

/* Set: the loops' multi-locks acquire by zkl_multilock_lock_async(). */
static int async_loops;
static int async_lock(zkl_multilock_t *ml, int64_t deadline);

static void *loop_thread(void *arg) {
  struct looper *l = arg;
  zkl_multilock_t *ml = NULL;
  zkl_mutex_t *m = NULL;
  int i;
  if (l->b)
    ml = multi(l->c, l->a, ZKL_MODE_EXCLUSIVE, l->b, ZKL_MODE_EXCLUSIVE);
  else
    m = mutex(l->c, l->a);
  for (i = 0; i < l->n; i++) {
    int rc = ml && async_loops ? async_lock(ml, zkl_now_ms() + 30000)
             : ml           ? zkl_multilock_timedlock(ml, zkl_now_ms() + 30000)
                            : zkl_mutex_timedlock(m, zkl_now_ms() + 30000);
    if (rc != ZKL_OK) {
      CHECK_RC(rc, ZKL_OK);
      break;
    }
    if (atomic_fetch_add(l->in_a, 1) != 0)
      l->overlaps++;
    if (l->in_b && atomic_fetch_add(l->in_b, 1) != 0)
      l->overlaps++;
    usleep(2000);
    atomic_fetch_sub(l->in_a, 1);
    if (l->in_b)
      atomic_fetch_sub(l->in_b, 1);
    CHECK_RC(ml ? zkl_multilock_unlock(ml) : zkl_mutex_unlock(m), ZKL_OK);
    l->done++;
  }
  zkl_multilock_destroy(ml);
  zkl_mutex_destroy(m);
  return NULL;
}

static void test_loops_mixed(void) {
  _Atomic int in_p = 0, in_q = 0;
  zkl_client_t *c[4];
  struct looper l[4] = {
      {NULL, "p", "q", 30, 0, 0, &in_p, &in_q},
      {NULL, "q", "p", 30, 0, 0, &in_q, &in_p},
      {NULL, "p", NULL, 30, 0, 0, &in_p, NULL},
      {NULL, "q", NULL, 30, 0, 0, &in_q, NULL}};
  pthread_t t[4];
  int i;
  new_root();
  for (i = 0; i < 4; i++) {
    c[i] = client(10000);
    l[i].c = c[i];
    pthread_create(&t[i], NULL, loop_thread, &l[i]);
  }
  for (i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(l[i].done, ==, 30);
    CHECK_INT(l[i].overlaps, ==, 0);
    zkl_client_destroy(c[i]);
  }
  CHECK_INT(queue_count("p") + queue_count("q"), ==, 0);
}

struct blocker {
  zkl_multilock_t *ml;
  int rc;
  /* hold_ms set: verify, count the nodes in the first member, then unlock */
  int hold_ms, verify_rc, count_a, unlock_rc;
};

static void *block_thread(void *arg) {
  struct blocker *b = arg;
  b->rc = zkl_multilock_lock(b->ml);
  if (b->rc == ZKL_OK && b->hold_ms) {
    b->verify_rc = zkl_multilock_verify(b->ml);
    b->count_a = queue_count("pa");
    b->unlock_rc = zkl_multilock_unlock(b->ml);
  } else if (b->rc == ZKL_OK) {
    zkl_multilock_unlock(b->ml);
  }
  return NULL;
}

/* A held member: try is busy, a deadline passes (one for the whole set,
 * with 5 members held; a negative one at once), a cancel wakes a blocked
 * acquire; nothing is left in any queue. ZKL_NO_DEADLINE takes a free
 * set. */
static void test_try_timed_cancel(void) {
  zkl_client_t *c = client(10000), *h = client(10000);
  zkl_mutex_t *held[5];
  zkl_multilock_member_t mm[6];
  zkl_multilock_options_t o = {0};
  zkl_multilock_t *ml, *five = NULL;
  struct blocker b = {0};
  char names[6][8];
  pthread_t t;
  int64_t t0, took;
  int i;
  new_root();
  ml = multi(c, "free", ZKL_MODE_EXCLUSIVE, "m0", ZKL_MODE_EXCLUSIVE);
  for (i = 0; i < 5; i++) {
    snprintf(names[i], sizeof names[i], "m%d", i);
    held[i] = mutex(h, names[i]);
    CHECK_RC(zkl_mutex_lock(held[i]), ZKL_OK);
  }
  CHECK_RC(zkl_multilock_trylock(ml), ZKL_EBUSY);
  CHECK_INT(queue_count("free"), ==, 0);
  CHECK_INT(queue_count("m0"), ==, 1);
  t0 = zkl_now_ms();
  CHECK_RC(zkl_multilock_timedlock(ml, t0 + 700), ZKL_ETIMEDOUT);
  took = zkl_now_ms() - t0;
  CHECK_INT(took, >=, 700);
  CHECK_INT(took, <, 3000);
  CHECK_RC(zkl_multilock_timedlock(ml, -1), ZKL_ETIMEDOUT); /* passed */
  WAIT_FOR(queue_count("free") == 0 && queue_count("m0") == 1, 3000);
  CHECK_INT(queue_count("free"), ==, 0);
  CHECK_INT(queue_count("m0"), ==, 1);
  b.ml = ml;
  pthread_create(&t, NULL, block_thread, &b);
  QUEUED("m0", 2);
  CHECK_RC(zkl_multilock_cancel(ml), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(b.rc, ZKL_ECANCELED);
  WAIT_FOR(queue_count("free") == 0 && queue_count("m0") == 1, 3000);
  CHECK_INT(queue_count("free"), ==, 0);
  CHECK_INT(queue_count("m0"), ==, 1);
  /* five members, all held: the deadline is the set's, not each one's */
  for (i = 0; i < 5; i++)
    mm[i].name = names[i], mm[i].mode = ZKL_MODE_EXCLUSIVE;
  o.root = root;
  CHECK_RC(zkl_multilock_create(&five, c, mm, 5, &o), ZKL_OK);
  t0 = zkl_now_ms();
  CHECK_RC(zkl_multilock_timedlock(five, t0 + 1000), ZKL_ETIMEDOUT);
  took = zkl_now_ms() - t0;
  CHECK_INT(took, >=, 1000);
  CHECK_INT(took, <, 3500);
  for (i = 0; i < 5; i++) {
    WAIT_FOR(queue_count(names[i]) == 1, 3000);
    CHECK_INT(queue_count(names[i]), ==, 1);
    zkl_mutex_unlock(held[i]);
    zkl_mutex_destroy(held[i]);
  }
  CHECK_RC(zkl_multilock_timedlock(ml, ZKL_NO_DEADLINE), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  /* bad input */
  mm[5] = mm[4];
  CHECK_RC(zkl_multilock_create(&five, c, mm, 0, &o), ZKL_EINVAL);
  CHECK_RC(zkl_multilock_create(&five, c, mm + 4, 2, &o), ZKL_EINVAL);
  mm[1].mode = 7;
  CHECK_RC(zkl_multilock_create(&five, c, mm, 2, &o), ZKL_EINVAL);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(h);
}

/* A reader member shares with readers and excludes a writer. */
static void test_shared_member(void) {
  zkl_client_t *c = client(10000), *o = client(10000);
  zkl_multilock_t *ml;
  zkl_rwlock_t *rw = NULL;
  zkl_rwlock_options_t ro = {0};
  new_root();
  ro.root = root;
  ml = multi(c, "r", ZKL_MODE_SHARED, "w", ZKL_MODE_EXCLUSIVE);
  CHECK_RC(zkl_rwlock_create(&rw, o, "r", &ro), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  CHECK_RC(zkl_multilock_trylock(ml), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_EBUSY);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_OK);
  CHECK_RC(zkl_multilock_trylock(ml), ZKL_EBUSY);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  zkl_rwlock_destroy(rw);
  zkl_multilock_destroy(ml);
  zkl_client_destroy(c);
  zkl_client_destroy(o);
}

/* The node of one member, as the admin sees it. */
static int member_node(const char *name, char *out, size_t size) {
  char path[256];
  struct String_vector v;
  int rc, i, found = 0;
  snprintf(path, sizeof path, "%s/%s", root, name);
  admin_sync(path);
  if ((rc = zoo_get_children(admin, path, 0, &v)) != ZOK)
    return 0;
  for (i = 0; i < v.count && !found; i++)
    if (strstr(v.data[i], "-lock-")) {
      snprintf(out, size, "%s/%s", path, v.data[i]);
      found = 1;
    }
  deallocate_String_vector(&v);
  return found;
}

/* A member's node deleted by someone while the set waits: the acquire
 * ends with ZKL_EREVOKED and the other member's node goes too; while it
 * holds: the set is LOST, its guarded write refused, its unlock ELOST. */
static void test_member_deleted(void) {
  zkl_client_t *c = client(10000), *h = client(10000);
  zkl_multilock_t *ml;
  zkl_mutex_t *hy;
  struct blocker b = {0};
  char node[512], state[192];
  zkl_op_t op = {0};
  pthread_t t;
  new_root();
  ml = multi(c, "dx", ZKL_MODE_EXCLUSIVE, "dy", ZKL_MODE_EXCLUSIVE);
  hy = mutex(h, "dy");
  CHECK_RC(zkl_mutex_lock(hy), ZKL_OK);
  b.ml = ml;
  pthread_create(&t, NULL, block_thread, &b);
  QUEUED("dy", 2);
  {
    /* the set's node in dy: the one that is not the holder's */
    char hold[512];
    struct String_vector v;
    char path[256];
    int i;
    CHECK_RC(zkl_mutex_node_path(hy, hold, sizeof hold), ZKL_OK);
    snprintf(path, sizeof path, "%s/dy", root);
    if (zoo_get_children(admin, path, 0, &v) == ZOK) {
      for (i = 0; i < v.count; i++) {
        snprintf(node, sizeof node, "%s/%s", path, v.data[i]);
        if (strcmp(node, hold) != 0)
          CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
      }
      deallocate_String_vector(&v);
    }
  }
  pthread_join(t, NULL);
  CHECK_RC(b.rc, ZKL_EREVOKED);
  WAIT_FOR(queue_count("dx") == 0, 3000);
  CHECK_INT(queue_count("dx"), ==, 0);
  CHECK_INT(queue_count("dy"), ==, 1);
  CHECK_RC(zkl_mutex_unlock(hy), ZKL_OK);
  /* holding */
  snprintf(state, sizeof state, "%s/state", root);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  op.type = ZKL_OP_CREATE;
  op.path = state;
  CHECK_RC(zkl_multilock_guarded(ml, &op, 1, 0), ZKL_OK);
  op.type = ZKL_OP_SET;
  op.version = -1;
  CHECK(member_node("dx", node, sizeof node));
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  CHECK_RC(zkl_multilock_guarded(ml, &op, 1, 0), ZKL_ELOST);
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_ELOST);
  CHECK_INT(queue_count("dy"), ==, 0);
  /* commit and release the set */
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_guarded(ml, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_ENOTOWNER);
  CHECK_INT(queue_count("dx") + queue_count("dy"), ==, 0);
  zkl_mutex_destroy(hy);
  zkl_multilock_destroy(ml);
  zkl_client_destroy(c);
  zkl_client_destroy(h);
}

static zkl_multilock_t *multi3(zkl_client_t *c, const char *a, const char *b,
                               const char *x) {
  zkl_multilock_t *ml = NULL;
  zkl_multilock_options_t o = {0};
  zkl_multilock_member_t m[3] = {{a, ZKL_MODE_EXCLUSIVE},
                                 {b, ZKL_MODE_EXCLUSIVE},
                                 {x, ZKL_MODE_EXCLUSIVE}};
  o.root = root;
  CHECK_RC(zkl_multilock_create(&ml, c, m, 3, &o), ZKL_OK);
  return ml;
}

/* A member's node deleted by someone while the set holds, once the set
 * has heard of it (LOST): the other members' nodes go at once, the
 * guarded write is refused, and the unlock says ELOST. Before: the nodes
 * stayed, the refused write took every member for lost, and the unlock
 * left them on the live session. */
static void test_member_lost_unlock_cleans(void) {
  zkl_client_t *c = client(10000);
  zkl_multilock_t *ml;
  char node[512], state[192];
  zkl_op_t op = {0};
  new_root();
  ml = multi3(c, "la", "lb", "lc");
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  usleep(300 * 1000); /* every member's node watched */
  CHECK(member_node("la", node, sizeof node));
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  WAIT_FOR(zkl_multilock_state(ml) == ZKL_STATE_LOST, 5000);
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_LOST);
  /* the set holds no more: its other nodes go before any unlock */
  WAIT_FOR(queue_count("lb") + queue_count("lc") == 0, 3000);
  CHECK_INT(queue_count("lb") + queue_count("lc"), ==, 0);
  snprintf(state, sizeof state, "%s/state", root);
  op.type = ZKL_OP_CREATE;
  op.path = state;
  CHECK_RC(zkl_multilock_guarded(ml, &op, 1, 0), ZKL_ELOST);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_ELOST);
  CHECK_INT(queue_count("lb"), ==, 0);
  CHECK_INT(queue_count("lc"), ==, 0);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  zkl_client_destroy(c);
}

/* While the set waits for its last member, the node of a member it
 * already holds is deleted: the acquire must not return ZKL_OK with that
 * member missing. It starts over, and holds all three. Before: ZKL_OK
 * with no node in pa, verify LOST, and the unlock leaked pb and pc. */
static void test_partial_set_never_held(void) {
  zkl_client_t *c = client(10000), *h = client(10000);
  zkl_multilock_t *ml;
  zkl_mutex_t *hc;
  struct blocker b = {0};
  char node[512];
  pthread_t t;
  new_root();
  hc = mutex(h, "pc");
  ml = multi3(c, "pa", "pb", "pc");
  CHECK_RC(zkl_mutex_lock(hc), ZKL_OK);
  b.ml = ml;
  b.hold_ms = 1;
  pthread_create(&t, NULL, block_thread, &b);
  QUEUED("pc", 2);
  usleep(500 * 1000); /* pa and pb granted by now, even under valgrind */
  CHECK(member_node("pa", node, sizeof node));
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  usleep(50 * 1000);
  CHECK_RC(zkl_mutex_unlock(hc), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(b.rc, ZKL_OK);
  CHECK_RC(b.verify_rc, ZKL_OK);
  CHECK_INT(b.count_a, ==, 1);
  CHECK_RC(b.unlock_rc, ZKL_OK);
  CHECK_INT(queue_count("pa") + queue_count("pb") + queue_count("pc"), ==, 0);
  zkl_mutex_destroy(hc);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(h);
}

/* A nested locker (lock A, work, then lock B, always in that order)
 * beside a multi-lock on {A, B}: the set holds B and waits for A while
 * the nested locker holds A and waits behind the set in B. The set gives
 * B back, so both loops end; nobody overlaps. Before: stuck at the first
 * or second cycle until the deadline. */
struct nested {
  zkl_client_t *c;
  int n, done, overlaps, rc;
  _Atomic int *in_a, *in_b;
};

static void *nested_thread(void *arg) {
  struct nested *l = arg;
  zkl_mutex_t *ma = mutex(l->c, "na"), *mb = mutex(l->c, "nb");
  int i;
  for (i = 0; i < l->n; i++) {
    if ((l->rc = zkl_mutex_timedlock(ma, zkl_now_ms() + 20000)) != ZKL_OK)
      break;
    if (atomic_fetch_add(l->in_a, 1) != 0)
      l->overlaps++;
    usleep(100 * 1000);
    if ((l->rc = zkl_mutex_timedlock(mb, zkl_now_ms() + 20000)) != ZKL_OK) {
      atomic_fetch_sub(l->in_a, 1);
      zkl_mutex_unlock(ma);
      break;
    }
    if (atomic_fetch_add(l->in_b, 1) != 0)
      l->overlaps++;
    usleep(5 * 1000);
    atomic_fetch_sub(l->in_b, 1);
    atomic_fetch_sub(l->in_a, 1);
    CHECK_RC(zkl_mutex_unlock(mb), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
    l->done++;
  }
  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(mb);
  return NULL;
}

/* 8 nested cycles beside 8 multi-lock cycles (async: with no thread of
 * the set's own to look behind its members): both loops end, with no
 * overlap and no node left. */
static void nested_beside(int async) {
  _Atomic int in_a = 0, in_b = 0;
  struct nested nl = {NULL, 8, 0, 0, 0, &in_a, &in_b};
  struct looper ml = {NULL, "nb", "na", 8, 0, 0, &in_b, &in_a};
  pthread_t t1, t2;
  int64_t t0 = zkl_now_ms();
  new_root();
  nl.c = client(10000);
  ml.c = client(10000);
  async_loops = async;
  pthread_create(&t1, NULL, nested_thread, &nl);
  pthread_create(&t2, NULL, loop_thread, &ml);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  async_loops = 0;
  printf("# nested beside %smulti-lock: 8 + 8 cycles in %lld ms\n",
         async ? "async " : "", (long long)(zkl_now_ms() - t0));
  CHECK_RC(nl.rc, ZKL_OK);
  CHECK_INT(nl.done, ==, 8);
  CHECK_INT(ml.done, ==, 8);
  CHECK_INT(nl.overlaps + ml.overlaps, ==, 0);
  CHECK_INT(queue_count("na") + queue_count("nb"), ==, 0);
  zkl_client_destroy(nl.c);
  zkl_client_destroy(ml.c);
}

static void test_nested_locker_no_deadlock(void) { nested_beside(0); }

/* A thread that holds a member through a plain mutex would wait for
 * itself: ZKL_EDEADLK at once from the blocking lock, and from the timed
 * one given ZKL_NO_DEADLINE, which is the blocking one; nothing is left in
 * either queue. */
static void test_own_member_deadlock(void) {
  zkl_client_t *c = client(10000);
  zkl_multilock_t *ml;
  zkl_mutex_t *m;
  new_root();
  m = mutex(c, "oa");
  ml = multi(c, "oa", ZKL_MODE_EXCLUSIVE, "ob", ZKL_MODE_EXCLUSIVE);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_EDEADLK);
  CHECK_RC(zkl_multilock_timedlock(ml, ZKL_NO_DEADLINE), ZKL_EDEADLK);
  CHECK_INT(queue_count("oa"), ==, 1);
  CHECK_INT(queue_count("ob"), ==, 0);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_multilock_timedlock(ml, ZKL_NO_DEADLINE), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c);
}

/* ---- the async acquire --------------------------------------------------- */

/* What an async acquire's callbacks saw. */
struct mseen {
  _Atomic int calls;
  int rc, unlock_in_cb, unlock_rc;
  pthread_t thread;
};

static void on_ml(zkl_multilock_t *ml, int rc, void *arg) {
  struct mseen *s = arg;
  s->unlock_rc = rc == ZKL_OK && s->unlock_in_cb ? zkl_multilock_unlock(ml)
                                                 : 0;
  s->rc = rc;
  s->thread = pthread_self();
  atomic_fetch_add(&s->calls, 1); /* last: the waiter reads the rest */
}

/* Waits until `calls` callbacks have run, for at most ms; how many ran. */
static int mseen_wait(struct mseen *s, int calls, int ms) {
  WAIT_FOR(atomic_load(&s->calls) >= calls, ms);
  return atomic_load(&s->calls);
}

/* zkl_multilock_timedlock() through the async form. */
static int async_lock(zkl_multilock_t *ml, int64_t deadline) {
  struct mseen s = {0};
  int rc = zkl_multilock_lock_async(ml, deadline, on_ml, &s);
  return rc != ZKL_OK                    ? rc
         : mseen_wait(&s, 1, 60000) == 1 ? s.rc
                                         : ZKL_ETIMEDOUT;
}

/* root/a and root/b as plain nodes, never reaped: acquires cost alike. */
static void keep_dirs(const char *a, const char *b) {
  char p[256];
  zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  snprintf(p, sizeof p, "%s/%s", root, a);
  zoo_create(admin, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  snprintf(p, sizeof p, "%s/%s", root, b);
  zoo_create(admin, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
}

/* Each outcome comes once, on the client's thread: granted (released
 * from the callback, or later from here), timed out, cancelled, a try
 * with a passed deadline; EBUSY and EINVAL at once, with no callback. An
 * uncontended async acquire sends what a blocking one does. */
static void test_async_outcomes(void) {
  zkl_client_t *c = client(10000), *h = client(10000);
  zkl_multilock_t *ml;
  zkl_mutex_t *hb;
  struct mseen s = {0};
  uint64_t before, sync_cost;
  new_root();
  keep_dirs("oa", "ob");
  ml = multi(c, "oa", ZKL_MODE_EXCLUSIVE, "ob", ZKL_MODE_EXCLUSIVE);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK); /* the parents made */
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  before = requests_settled(c);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  sync_cost = zkl_client_request_count(c) - before;
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  before = requests_settled(c);
  CHECK_RC(zkl_multilock_lock_async(ml, ZKL_NO_DEADLINE, on_ml, &s), ZKL_OK);
  CHECK_INT(mseen_wait(&s, 1, 10000), ==, 1);
  CHECK_INT(zkl_client_request_count(c) - before, ==, sync_cost);
  CHECK_INT(sync_cost, ==, 4); /* transaction, 2 listings, 1 read */
  CHECK_RC(s.rc, ZKL_OK);
  CHECK(!pthread_equal(s.thread, pthread_self()));
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_multilock_lock_async(ml, 0, on_ml, &s), ZKL_EBUSY);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  s.unlock_in_cb = 1;
  CHECK_RC(zkl_multilock_lock_async(ml, -5, on_ml, &s), ZKL_OK);
  CHECK_INT(mseen_wait(&s, 2, 10000), ==, 2);
  CHECK_RC(s.rc, ZKL_OK);
  CHECK_RC(s.unlock_rc, ZKL_OK);
  CHECK_INT(queue_count("oa") + queue_count("ob"), ==, 0);
  s.unlock_in_cb = 0;
  hb = mutex(h, "ob");
  CHECK_RC(zkl_mutex_lock(hb), ZKL_OK);
  CHECK_RC(zkl_multilock_lock_async(ml, -1, on_ml, &s), ZKL_OK); /* a try */
  CHECK_INT(mseen_wait(&s, 3, 10000), ==, 3);
  CHECK_RC(s.rc, ZKL_ETIMEDOUT);
  CHECK_RC(zkl_multilock_lock_async(ml, zkl_now_ms() + 500, on_ml, &s),
           ZKL_OK);
  CHECK_RC(zkl_multilock_lock_async(ml, 0, on_ml, &s), ZKL_EBUSY);
  CHECK_INT(mseen_wait(&s, 4, 10000), ==, 4);
  CHECK_RC(s.rc, ZKL_ETIMEDOUT);
  CHECK_INT(queue_count("oa") + 2 * queue_count("ob"), ==, 2); /* hb's */
  CHECK_RC(zkl_multilock_lock_async(ml, ZKL_NO_DEADLINE, on_ml, &s), ZKL_OK);
  QUEUED("ob", 2);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_EBUSY); /* pending */
  CHECK_RC(zkl_multilock_cancel(ml), ZKL_OK);
  CHECK_INT(mseen_wait(&s, 5, 10000), ==, 5);
  CHECK_RC(s.rc, ZKL_ECANCELED);
  CHECK_INT(queue_count("oa") + 2 * queue_count("ob"), ==, 2);
  CHECK_RC(zkl_multilock_lock_async(ml, 0, NULL, &s), ZKL_EINVAL);
  CHECK_RC(zkl_multilock_lock_async(NULL, 0, on_ml, &s), ZKL_EINVAL);
  usleep(200 * 1000);
  CHECK_INT(mseen_wait(&s, 6, 0), ==, 5); /* no second callback */
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(hb), ZKL_OK);
  zkl_mutex_destroy(hb);
  zkl_client_destroy(c);
  zkl_client_destroy(h);
}

/* A cancel at any point of an acquire (transaction out, members waiting
 * for a release that comes at the same time, granted): one callback, no
 * node left. Many pending on one client: no thread of their own. */
static void test_async_cancel_races(void) {
  zkl_client_t *c = client(10000), *h = client(10000);
  zkl_multilock_t *ml[20];
  zkl_mutex_t *hb;
  struct mseen s = {0};
  int i, ok = 0, threads;
  new_root();
  hb = mutex(h, "rb");
  ml[0] = multi(c, "ra", ZKL_MODE_EXCLUSIVE, "rb", ZKL_MODE_EXCLUSIVE);
  for (i = 0; i < 50; i++) {
    int held = i % 2 == 0;
    if (held)
      CHECK_RC(zkl_mutex_lock(hb), ZKL_OK);
    CHECK_RC(zkl_multilock_lock_async(ml[0], zkl_now_ms() + 10000, on_ml, &s),
             ZKL_OK);
    usleep((useconds_t)(i % 10) * 300);
    if (held)
      CHECK_RC(zkl_mutex_unlock(hb), ZKL_OK);
    CHECK_RC(zkl_multilock_cancel(ml[0]), ZKL_OK);
    CHECK_INT(mseen_wait(&s, i + 1, 10000), ==, i + 1);
    CHECK(s.rc == ZKL_OK || s.rc == ZKL_ECANCELED);
    if (s.rc == ZKL_OK) {
      ok++;
      CHECK_RC(zkl_multilock_unlock(ml[0]), ZKL_OK);
    }
    WAIT_FOR(queue_count("ra") + queue_count("rb") == 0, 5000);
    CHECK_INT(queue_count("ra") + queue_count("rb"), ==, 0);
  }
  printf("# async multi-lock cancel races: %d cancelled, %d granted first\n",
         50 - ok, ok);
  usleep(200 * 1000);
  CHECK_INT(mseen_wait(&s, 51, 0), ==, 50);
  /* 20 pending behind a holder: no thread each */
  atomic_store(&s.calls, 0);
  CHECK_RC(zkl_mutex_lock(hb), ZKL_OK);
  threads = threads_now();
  for (i = 1; i < 20; i++)
    ml[i] = multi(c, "ra", ZKL_MODE_EXCLUSIVE, "rb", ZKL_MODE_EXCLUSIVE);
  for (i = 0; i < 20; i++)
    CHECK_RC(zkl_multilock_lock_async(ml[i], ZKL_NO_DEADLINE, on_ml, &s),
             ZKL_OK);
  QUEUED("rb", 21);
  usleep(500 * 1000); /* looks behind a held member meanwhile */
  CHECK_INT(threads_now(), ==, threads);
  CHECK_INT(mseen_wait(&s, 1, 0), ==, 0);
  for (i = 0; i < 20; i++)
    CHECK_RC(zkl_multilock_cancel(ml[i]), ZKL_OK);
  CHECK_INT(mseen_wait(&s, 20, 10000), ==, 20);
  CHECK_RC(zkl_mutex_unlock(hb), ZKL_OK);
  for (i = 0; i < 20; i++)
    CHECK_RC(zkl_multilock_destroy(ml[i]), ZKL_OK);
  WAIT_FOR(queue_count("ra") + queue_count("rb") == 0, 5000);
  CHECK_INT(queue_count("ra") + queue_count("rb"), ==, 0);
  zkl_mutex_destroy(hb);
  zkl_client_destroy(c);
  zkl_client_destroy(h);
}

/* test_nested_locker_no_deadlock with an async multi-lock: the set
 * gives way with no thread of its own to look, and both loops end. */
static void test_async_nested_locker(void) { nested_beside(1); }

/* An async unlock's verdict. */
struct useen {
  _Atomic int calls;
  int rc;
};

static void on_unlocked(int rc, void *arg) {
  struct useen *u = arg;
  u->rc = rc;
  atomic_fetch_add(&u->calls, 1); /* last: the waiter reads rc */
}

/* zkl_multilock_unlock_async: one callback with the verdict, the object
 * busy until it ran, every node gone; ZKL_ELOST when a member was lost
 * (its siblings dropped first: the verdict waits for those deletes). */
static void test_async_unlock(void) {
  zkl_client_t *c = client(10000);
  zkl_multilock_t *ml;
  struct useen u = {0};
  char node[512];
  new_root();
  ml = multi3(c, "ua", "ub", "uc");
  CHECK_RC(zkl_multilock_unlock_async(ml, on_unlocked, &u), ZKL_ENOTOWNER);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  CHECK_RC(zkl_multilock_unlock_async(ml, NULL, &u), ZKL_EINVAL);
  CHECK_INT(zkl_multilock_state(ml), ==, ZKL_STATE_HELD); /* still held */
  CHECK_RC(zkl_multilock_unlock_async(ml, on_unlocked, &u), ZKL_OK);
  CHECK_RC(zkl_multilock_destroy(ml), ZKL_EBUSY);
  CHECK_RC(zkl_multilock_unlock_async(ml, on_unlocked, &u), ZKL_EBUSY);
  WAIT_FOR(atomic_load(&u.calls) == 1, 10000);
  CHECK_RC(u.rc, ZKL_OK);
  CHECK_INT(queue_count("ua") + queue_count("ub") + queue_count("uc"), ==, 0);
  WAIT_FOR(zkl_multilock_lock(ml) == ZKL_OK, 5000); /* free again */
  usleep(300 * 1000); /* every member's node watched */
  CHECK(member_node("ua", node, sizeof node));
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  WAIT_FOR(zkl_multilock_state(ml) == ZKL_STATE_LOST, 5000);
  CHECK_RC(zkl_multilock_unlock_async(ml, on_unlocked, &u), ZKL_OK);
  WAIT_FOR(atomic_load(&u.calls) == 2, 10000);
  CHECK_RC(u.rc, ZKL_ELOST);
  CHECK_INT(queue_count("ua") + queue_count("ub") + queue_count("uc"), ==, 0);
  usleep(100 * 1000);
  CHECK_INT(atomic_load(&u.calls), ==, 2); /* once each */
  WAIT_FOR(zkl_multilock_destroy(ml) == ZKL_OK, 5000);
  zkl_client_destroy(c);
}

int main(void) {
  root_tag = "zklmulti";
  admin_open();
  RUN(test_one_zxid);
  RUN(test_opposite_orders);
  RUN(test_loops_mixed);
  RUN(test_try_timed_cancel);
  RUN(test_shared_member);
  RUN(test_member_deleted);
  RUN(test_member_lost_unlock_cleans);
  RUN(test_partial_set_never_held);
  RUN(test_nested_locker_no_deadlock);
  RUN(test_own_member_deadlock);
  RUN(test_async_outcomes);
  RUN(test_async_cancel_races);
  RUN(test_async_nested_locker);
  RUN(test_async_unlock);
  admin_close();
  return CHECK_DONE();
}
