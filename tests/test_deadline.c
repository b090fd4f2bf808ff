/* test_deadline.c: "a free lock is taken at once whatever the deadline; a
 * held one times out at once" (zklock.h, TIME), for every recipe and form,
 * on the keys a first acquire can meet: a new key (no parent), a parent
 * someone else made and never used (our node is its first child), and a
 * key used before (the parent stays, and our node is not its first child:
 * the first acquire must list before it judges). Each object is fresh, so
 * its first call is the one under test, with a deadline already past. */
#include <pthread.h>
#include <unistd.h>

#include "admin.h"

/* A deadline well past, and one just past (0 is in the past on
 * CLOCK_MONOTONIC too); both must behave the same. */
static const int64_t past[] = {-1, 0, INT64_MIN};
#define NPAST (sizeof past / sizeof past[0])

/* How long "at once" may take here: a few round trips on a loaded
 * machine, far below the session timeout a wait would run into. */
#define AT_ONCE_MS 3000

enum key { KEY_NEW, KEY_FOREIGN_PARENT, KEY_USED };
static const char *key_name[] = {"new", "foreign-parent", "used"};

static zkl_client_t *ca, *cb; /* the client under test, another one */

/* The parent of `name` as the key kind says; NULL root means the test's. */
static void prepare(enum key k, const char *name) {
  char path[256];
  zkl_mutex_t *m;
  if (k == KEY_NEW)
    return;
  snprintf(path, sizeof path, "%s/%s", root, name);
  CHECK_INT(admin_create_in_root(path, NULL, 0), ==, ZOK);
  if (k != KEY_USED)
    return;
  /* another client's cycle: the parent stays (not its own), and its
   * count of children made moves past 0 */
  m = mutex(cb, name);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
}

/* The flat lock's key is a node, not a parent: used means made and
 * deleted before by another client; its parent (the root) is someone
 * else's in every case. */
static zkl_mutex_t *flat(zkl_client_t *c, const char *name) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = root;
  o.flags = ZKL_MUTEX_FLAT;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  return m;
}

static void prepare_flat(enum key k, const char *name) {
  zkl_mutex_t *m;
  CHECK_INT(admin_create_in_root(root, NULL, 0), ==, ZOK);
  if (k != KEY_USED)
    return;
  m = flat(cb, name);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
}

/* ---- one recipe at a time: take free, then time out held --------------- */

/* Checks one attempt: rc as wanted, and within AT_ONCE_MS. */
#define ATTEMPT(what, call, want, k, d)                                        \
  do {                                                                         \
    int64_t t0_ = zkl_now_ms();                                                \
    int rc_ = (call);                                                          \
    int64_t ms_ = zkl_now_ms() - t0_;                                          \
    if (rc_ != (want) || ms_ > AT_ONCE_MS) {                                   \
      fprintf(stderr,                                                          \
              "%s:%d: %s on a %s key, deadline %" PRId64 ": %s after %" PRId64 \
              " ms, want %s at once\n",                                        \
              __FILE__, __LINE__, what, key_name[k], (int64_t)(d),             \
              zkl_err_name(rc_), ms_, zkl_err_name(want));                     \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

static void mutex_case(enum key k, int64_t d) {
  zkl_mutex_t *m, *other;
  new_root();
  prepare(k, "k");
  m = mutex(ca, "k");
  ATTEMPT("mutex timedlock, free", zkl_mutex_timedlock(m, d), ZKL_OK, k, d);
  /* held by us: another object, another client, times out at once */
  other = mutex(cb, "k");
  ATTEMPT("mutex timedlock, held", zkl_mutex_timedlock(other, d),
          ZKL_ETIMEDOUT, k, d);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(other);
  zkl_mutex_destroy(m);
  CHECK_INT(queue_count("k"), ==, 0);
}

static void flat_case(enum key k, int64_t d) {
  zkl_mutex_t *m, *other;
  new_root();
  prepare_flat(k, "k");
  m = flat(ca, "k");
  ATTEMPT("flat timedlock, free", zkl_mutex_timedlock(m, d), ZKL_OK, k, d);
  other = flat(cb, "k");
  ATTEMPT("flat timedlock, held", zkl_mutex_timedlock(other, d),
          ZKL_ETIMEDOUT, k, d);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(other);
  zkl_mutex_destroy(m);
}

static zkl_rwlock_t *rwlock(zkl_client_t *c, const char *name) {
  zkl_rwlock_t *rw = NULL;
  zkl_rwlock_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_rwlock_create(&rw, c, name, &o), ZKL_OK);
  return rw;
}

static void rwlock_case(enum key k, int64_t d) {
  zkl_rwlock_t *rw, *other;
  new_root();
  prepare(k, "k");
  rw = rwlock(ca, "k");
  ATTEMPT("timedrdlock, free", zkl_rwlock_timedrdlock(rw, d), ZKL_OK, k, d);
  other = rwlock(cb, "k");
  ATTEMPT("timedwrlock, read-held", zkl_rwlock_timedwrlock(other, d),
          ZKL_ETIMEDOUT, k, d);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  zkl_rwlock_destroy(other);
  zkl_rwlock_destroy(rw);
  /* and the other way round, on fresh objects again */
  new_root();
  prepare(k, "k");
  rw = rwlock(ca, "k");
  ATTEMPT("timedwrlock, free", zkl_rwlock_timedwrlock(rw, d), ZKL_OK, k, d);
  other = rwlock(cb, "k");
  ATTEMPT("timedrdlock, write-held", zkl_rwlock_timedrdlock(other, d),
          ZKL_ETIMEDOUT, k, d);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  zkl_rwlock_destroy(other);
  zkl_rwlock_destroy(rw);
  CHECK_INT(queue_count("k"), ==, 0);
}

static zkl_semaphore_t *semaphore(zkl_client_t *c, const char *name,
                                  unsigned n) {
  zkl_semaphore_t *s = NULL;
  zkl_semaphore_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_semaphore_create(&s, c, name, n, &o), ZKL_OK);
  return s;
}

static void semaphore_case(enum key k, int64_t d) {
  zkl_semaphore_t *s, *other;
  zkl_lease_t *l = NULL, *l2 = NULL;
  new_root();
  /* a used semaphore key: the same cycle, on a semaphore of the same N */
  if (k != KEY_NEW) {
    char path[256];
    snprintf(path, sizeof path, "%s/k", root);
    CHECK_INT(admin_create_in_root(path, NULL, 0), ==, ZOK);
  }
  if (k == KEY_USED) {
    zkl_semaphore_t *u = semaphore(cb, "k", 1);
    zkl_lease_t *ul = NULL;
    CHECK_RC(zkl_semaphore_acquire(u, &ul), ZKL_OK);
    CHECK_RC(zkl_lease_release(ul), ZKL_OK);
    zkl_semaphore_destroy(u);
  }
  s = semaphore(ca, "k", 1);
  ATTEMPT("semaphore timedacquire, free", zkl_semaphore_timedacquire(s, d, &l),
          ZKL_OK, k, d);
  other = semaphore(cb, "k", 1);
  ATTEMPT("semaphore timedacquire, held",
          zkl_semaphore_timedacquire(other, d, &l2), ZKL_ETIMEDOUT, k, d);
  CHECK(l2 == NULL);
  if (l)
    CHECK_RC(zkl_lease_release(l), ZKL_OK);
  zkl_semaphore_destroy(other);
  zkl_semaphore_destroy(s);
}

static zkl_multilock_t *multilock(zkl_client_t *c) {
  zkl_multilock_t *ml = NULL;
  zkl_multilock_member_t mm[2] = {{"k", ZKL_MODE_EXCLUSIVE},
                                  {"k2", ZKL_MODE_EXCLUSIVE}};
  zkl_multilock_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_multilock_create(&ml, c, mm, 2, &o), ZKL_OK);
  return ml;
}

static void multilock_case(enum key k, int64_t d) {
  zkl_multilock_t *ml, *other;
  new_root();
  prepare(k, "k");
  prepare(k, "k2");
  ml = multilock(ca);
  ATTEMPT("multilock timedlock, free", zkl_multilock_timedlock(ml, d), ZKL_OK,
          k, d);
  other = multilock(cb);
  ATTEMPT("multilock timedlock, held", zkl_multilock_timedlock(other, d),
          ZKL_ETIMEDOUT, k, d);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  zkl_multilock_destroy(other);
  zkl_multilock_destroy(ml);
  CHECK_INT(queue_count("k"), ==, 0);
  CHECK_INT(queue_count("k2"), ==, 0);
}

static zkl_election_t *election(zkl_client_t *c, const char *id) {
  zkl_election_t *e = NULL;
  zkl_election_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_election_create(&e, c, "k", id, &o), ZKL_OK);
  return e;
}

static void election_case(enum key k, int64_t d) {
  zkl_election_t *e, *other;
  new_root();
  prepare(k, "k");
  e = election(ca, "a");
  ATTEMPT("election wait, nobody leads", zkl_election_wait(e, d), ZKL_OK, k,
          d);
  other = election(cb, "b");
  ATTEMPT("election wait, led", zkl_election_wait(other, d), ZKL_ETIMEDOUT,
          k, d);
  CHECK_RC(zkl_election_resign(other), ZKL_OK);
  CHECK_RC(zkl_election_resign(e), ZKL_OK);
  zkl_election_destroy(other);
  zkl_election_destroy(e);
}

/* ---- the async forms: the outcome, through the callback ----------------- */

struct outcome {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, rc;
  zkl_hold_t *hold;
};

static void on_hold(zkl_hold_t *h, int rc, void *arg) {
  struct outcome *o = arg;
  pthread_mutex_lock(&o->mu);
  o->done = 1, o->rc = rc, o->hold = h;
  pthread_cond_broadcast(&o->cv);
  pthread_mutex_unlock(&o->mu);
}

/* Waits (bounded) for the outcome; its code, or ZKL_ETIMEDOUT - 1000 if
 * the callback never came. */
static int outcome_wait(struct outcome *o) {
  int64_t until = zkl_now_ms() + 20000;
  int rc;
  pthread_mutex_lock(&o->mu);
  while (!o->done && zkl_now_ms() < until) {
    pthread_mutex_unlock(&o->mu);
    usleep(2000);
    pthread_mutex_lock(&o->mu);
  }
  rc = o->done ? o->rc : -9999;
  pthread_mutex_unlock(&o->mu);
  return rc;
}

static void outcome_init(struct outcome *o) {
  memset(o, 0, sizeof *o);
  pthread_mutex_init(&o->mu, NULL);
  pthread_cond_init(&o->cv, NULL);
}

static void outcome_destroy(struct outcome *o) {
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
}

enum async_kind { A_MUTEX, A_READ, A_WRITE, A_LEASE };

static int start_async(enum async_kind kind, void *obj, int64_t d,
                       struct outcome *o) {
  zkl_hold_t *h = NULL;
  switch (kind) {
  case A_MUTEX: return zkl_mutex_lock_async(obj, d, on_hold, o, &h);
  case A_READ: return zkl_rwlock_rdlock_async(obj, d, on_hold, o, &h);
  case A_WRITE: return zkl_rwlock_wrlock_async(obj, d, on_hold, o, &h);
  default: return zkl_semaphore_acquire_async(obj, d, on_hold, o, &h);
  }
}

/* An async attempt: started, then its outcome; the hold on success. */
static zkl_hold_t *async_attempt(const char *what, enum async_kind kind,
                                 void *obj, int64_t d, int want, enum key k) {
  struct outcome o;
  zkl_hold_t *h;
  outcome_init(&o);
  CHECK_RC(start_async(kind, obj, d, &o), ZKL_OK);
  ATTEMPT(what, outcome_wait(&o), want, k, d);
  h = o.rc == ZKL_OK ? o.hold : NULL;
  outcome_destroy(&o);
  return h;
}

static void async_case(enum key k, int64_t d) {
  static const char *names[] = {"async mutex", "async read", "async write",
                                "async lease"};
  enum async_kind kind;
  for (kind = A_MUTEX; kind <= A_LEASE; kind++) {
    void *obj, *other;
    zkl_hold_t *h;
    char what[64];
    new_root();
    if (kind == A_LEASE && k != KEY_NEW) {
      char path[256];
      snprintf(path, sizeof path, "%s/k", root);
      CHECK_INT(admin_create_in_root(path, NULL, 0), ==, ZOK);
    } else if (kind != A_LEASE) {
      prepare(k, "k");
    }
    if (kind == A_LEASE && k == KEY_USED) {
      zkl_semaphore_t *u = semaphore(cb, "k", 1);
      zkl_lease_t *ul = NULL;
      CHECK_RC(zkl_semaphore_acquire(u, &ul), ZKL_OK);
      CHECK_RC(zkl_lease_release(ul), ZKL_OK);
      zkl_semaphore_destroy(u);
    }
    if (kind == A_MUTEX)
      obj = mutex(ca, "k"), other = mutex(cb, "k");
    else if (kind == A_LEASE)
      obj = semaphore(ca, "k", 1), other = semaphore(cb, "k", 1);
    else
      obj = rwlock(ca, "k"), other = rwlock(cb, "k");
    snprintf(what, sizeof what, "%s, free", names[kind]);
    h = async_attempt(what, kind, obj, d, ZKL_OK, k);
    /* held: a writer meets any hold, a reader meets the writer's */
    snprintf(what, sizeof what, "%s, held", names[kind]);
    if (h) {
      enum async_kind against = kind == A_READ ? A_WRITE : kind;
      zkl_hold_t *h2 =
          async_attempt(what, against, other, d, ZKL_ETIMEDOUT, k);
      if (h2)
        zkl_hold_release(h2);
      CHECK_RC(zkl_hold_release(h), ZKL_OK);
    }
    if (kind == A_MUTEX)
      zkl_mutex_destroy(obj), zkl_mutex_destroy(other);
    else if (kind == A_LEASE)
      zkl_semaphore_destroy(obj), zkl_semaphore_destroy(other);
    else
      zkl_rwlock_destroy(obj), zkl_rwlock_destroy(other);
  }
}

/* The flat lock's and the multi-lock's asynchronous forms. */
static void async_flat_case(enum key k, int64_t d) {
  zkl_mutex_t *m, *other;
  zkl_hold_t *h, *h2;
  new_root();
  prepare_flat(k, "k");
  m = flat(ca, "k");
  other = flat(cb, "k");
  h = async_attempt("async flat, free", A_MUTEX, m, d, ZKL_OK, k);
  if (h) {
    h2 = async_attempt("async flat, held", A_MUTEX, other, d, ZKL_ETIMEDOUT,
                       k);
    if (h2)
      zkl_hold_release(h2);
    CHECK_RC(zkl_hold_release(h), ZKL_OK);
  }
  zkl_mutex_destroy(other);
  zkl_mutex_destroy(m);
}

static void on_multi(zkl_multilock_t *ml, int rc, void *arg) {
  (void)ml;
  on_hold(NULL, rc, arg);
}

static int multi_async(zkl_multilock_t *ml, int64_t d) {
  struct outcome o;
  int rc;
  outcome_init(&o);
  rc = zkl_multilock_lock_async(ml, d, on_multi, &o);
  if (rc == ZKL_OK)
    rc = outcome_wait(&o);
  outcome_destroy(&o);
  return rc;
}

static void async_multilock_case(enum key k, int64_t d) {
  zkl_multilock_t *ml, *other;
  new_root();
  prepare(k, "k");
  prepare(k, "k2");
  ml = multilock(ca);
  other = multilock(cb);
  ATTEMPT("async multilock, free", multi_async(ml, d), ZKL_OK, k, d);
  ATTEMPT("async multilock, held", multi_async(other, d), ZKL_ETIMEDOUT, k,
          d);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  zkl_multilock_destroy(other);
  zkl_multilock_destroy(ml);
  CHECK_INT(queue_count("k"), ==, 0);
  CHECK_INT(queue_count("k2"), ==, 0);
}

/* ---- the table ------------------------------------------------------------ */

static void each(void (*fn)(enum key, int64_t)) {
  enum key k;
  size_t i;
  for (k = KEY_NEW; k <= KEY_USED; k++)
    for (i = 0; i < NPAST; i++)
      fn(k, past[i]);
}

static void test_mutex(void) { each(mutex_case); }
static void test_flat(void) { each(flat_case); }
static void test_rwlock(void) { each(rwlock_case); }
static void test_semaphore(void) { each(semaphore_case); }
static void test_multilock(void) { each(multilock_case); }
static void test_election(void) { each(election_case); }
static void test_async(void) {
  each(async_case);
  each(async_flat_case);
  each(async_multilock_case);
}

int main(void) {
  admin_open();
  ca = client(10000);
  cb = client(10000);
  RUN(test_mutex);
  RUN(test_flat);
  RUN(test_rwlock);
  RUN(test_semaphore);
  RUN(test_multilock);
  RUN(test_election);
  RUN(test_async);
  zkl_client_destroy(ca);
  zkl_client_destroy(cb);
  admin_close();
  return CHECK_DONE();
}
