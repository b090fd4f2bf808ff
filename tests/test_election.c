/* SPDX-License-Identifier: Apache-2.0 */
/* test_election.c: leader election against a real ensemble
 * (ZKL_TEST_SERVERS): fail-over, loss, and candidacies as runs of the
 * queue engine with no thread each: one HELD per term, resignations that
 * race the grant or come from the callback itself, destroy while
 * campaigning. */
#include <stdatomic.h>
#include <stdint.h>

#include "admin.h"

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

/* ---- candidacies as runs of the engine ------------------------------- */

/* What one candidate's callback saw; `resign_on_held`: it resigns its
 * own term from inside the callback (the event thread, or the thread in
 * zkl_client_dispatch()), and `also` with it, campaigning or not;
 * `destroy_on_held`: it destroys that other election. */
struct tally {
  pthread_mutex_t mu;
  int held, none, lost, calls;
  int resigned;       /* set by the test once zkl_election_resign returned */
  int held_late;      /* HELD delivered while `resigned` was set */
  int resign_on_held;
  zkl_election_t *also, *destroy_on_held;
  int rc_self, rc_also, resigns_in_cb, rc_destroy, destroys_in_cb;
  pthread_t where;
};

static void tally_init(struct tally *t) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
}

static int tally_get(struct tally *t, const int *field) {
  int v;
  pthread_mutex_lock(&t->mu);
  v = *field;
  pthread_mutex_unlock(&t->mu);
  return v;
}

static void tally_set_resigned(struct tally *t, int v) {
  pthread_mutex_lock(&t->mu);
  t->resigned = v;
  pthread_mutex_unlock(&t->mu);
}

static void on_tally(zkl_election_t *e, int state, uint64_t token, void *ctx) {
  struct tally *t = ctx;
  int resign;
  (void)token;
  pthread_mutex_lock(&t->mu);
  t->calls++;
  t->where = pthread_self();
  t->held += state == ZKL_STATE_HELD;
  t->none += state == ZKL_STATE_NONE;
  t->lost += state == ZKL_STATE_LOST;
  t->held_late += state == ZKL_STATE_HELD && t->resigned;
  resign = state == ZKL_STATE_HELD && t->resign_on_held;
  pthread_mutex_unlock(&t->mu);
  if (state == ZKL_STATE_HELD && t->destroy_on_held) {
    t->rc_destroy = zkl_election_destroy(t->destroy_on_held);
    t->destroy_on_held = NULL;
    pthread_mutex_lock(&t->mu);
    t->destroys_in_cb++;
    pthread_mutex_unlock(&t->mu);
  }
  if (!resign)
    return;
  if (t->also)
    t->rc_also = zkl_election_resign(t->also);
  t->rc_self = zkl_election_resign(e);
  pthread_mutex_lock(&t->mu);
  t->resigns_in_cb++;
  pthread_mutex_unlock(&t->mu);
}

static zkl_election_t *candidate(zkl_client_t *c, const char *name,
                                 const char *id, struct tally *t) {
  zkl_election_t *e = NULL;
  zkl_election_options_t o = {0};
  o.root = root;
  o.fn = t ? on_tally : NULL;
  o.ctx = t;
  CHECK_RC(zkl_election_create(&e, c, name, id, &o), ZKL_OK);
  return e;
}

/* Waits (at most 10 s) until queue `name` has had n nodes for 3 reads
 * in a row, 30 ms apart, and says whether it has: a candidacy stopped
 * while its create was out leaves its node to come and go after. */
static int queued(const char *name, int n) {
  int64_t end = zkl_now_ms() + 10000;
  int same = 0;
  while (same < 3 && zkl_now_ms() < end) {
    same = queue_count(name) == n ? same + 1 : 0;
    if (same < 3)
      usleep(30 * 1000);
  }
  return same == 3;
}

/* 200 candidates of one election on one client: 199 campaign behind the
 * leader with no thread each. The thread-per-candidacy code had 199 more
 * threads here. */
#define MANY 200

/* The one candidate of e[0..n) that leads, other than `not`; -1 when
 * none or more than one does. */
static int leader_of(zkl_election_t **e, int n, int not) {
  int i, found = -1, count = 0;
  for (i = 0; i < n; i++)
    if (i != not && zkl_election_is_leader(e[i]))
      found = i, count++;
  return count == 1 ? found : -1;
}

static void test_many_candidacies_no_thread(void) {
  zkl_client_t *c = client(30000);
  zkl_election_t *e[MANY];
  int i, before, after, leader;
  char id[32];
  alarm(240);
  new_root();
  for (i = 0; i < MANY; i++) {
    snprintf(id, sizeof id, "many-%d", i);
    e[i] = candidate(c, "many", id, NULL);
  }
  before = threads_now();
  for (i = 0; i < MANY; i++)
    CHECK_RC(zkl_election_join(e[i]), ZKL_OK);
  CHECK(queued("many", MANY));
  after = threads_now();
  printf("# %d candidacies: %d threads before joining, %d after\n", MANY,
         before, after);
  CHECK_INT(after, <=, before + 2);
  WAIT_FOR(leader_of(e, MANY, -1) >= 0, 10000);
  leader = leader_of(e, MANY, -1);
  CHECK_INT(leader, >=, 0);
  /* the leader goes: the next in line, and only it, leads */
  if (leader >= 0)
    CHECK_RC(zkl_election_resign(e[leader]), ZKL_OK);
  WAIT_FOR(leader_of(e, MANY, leader) >= 0, 10000);
  CHECK_INT(leader_of(e, MANY, leader), >=, 0);
  CHECK(leader < 0 || !zkl_election_is_leader(e[leader]));
  CHECK_INT(threads_now(), <=, before + 2);
  for (i = 0; i < MANY; i++)
    CHECK_RC(zkl_election_destroy(e[i]), ZKL_OK);
  CHECK(queued("many", 0));
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  alarm(0);
}

/* One HELD per term, NONE when it is resigned; the next candidate's term
 * is told once too. */
static void test_one_held_per_term(void) {
  zkl_client_t *c = client(30000);
  struct tally t1, t2;
  zkl_election_t *e1, *e2;
  uint64_t k1 = 0, k2 = 0, k3 = 0;
  alarm(120);
  new_root();
  tally_init(&t1);
  tally_init(&t2);
  e1 = candidate(c, "terms", "one", &t1);
  e2 = candidate(c, "terms", "two", &t2);
  CHECK_RC(zkl_election_join(e1), ZKL_OK);
  CHECK_RC(zkl_election_wait(e1, zkl_now_ms() + 10000), ZKL_OK);
  CHECK_RC(zkl_election_join(e2), ZKL_OK);
  CHECK(queued("terms", 2));
  WAIT_FOR(tally_get(&t1, &t1.held) == 1, 5000);
  usleep(300 * 1000);
  CHECK_INT(tally_get(&t1, &t1.held), ==, 1);
  CHECK_INT(tally_get(&t2, &t2.calls), ==, 0);
  CHECK_RC(zkl_election_token(e1, &k1), ZKL_OK);
  CHECK_RC(zkl_election_resign(e1), ZKL_OK);
  WAIT_FOR(tally_get(&t1, &t1.none) == 1, 5000);
  CHECK_INT(tally_get(&t1, &t1.none), ==, 1);
  CHECK_RC(zkl_election_wait(e2, zkl_now_ms() + 10000), ZKL_OK);
  WAIT_FOR(tally_get(&t2, &t2.held) == 1, 5000);
  CHECK_RC(zkl_election_token(e2, &k2), ZKL_OK);
  CHECK(k2 > k1);
  /* a second term of the first candidate, behind the second */
  CHECK_RC(zkl_election_join(e1), ZKL_OK);
  CHECK_RC(zkl_election_wait(e1, zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_election_resign(e2), ZKL_OK);
  CHECK_RC(zkl_election_wait(e1, zkl_now_ms() + 10000), ZKL_OK);
  WAIT_FOR(tally_get(&t1, &t1.held) == 2, 5000);
  CHECK_RC(zkl_election_token(e1, &k3), ZKL_OK);
  CHECK(k3 > k2);
  CHECK_RC(zkl_election_resign(e1), ZKL_OK);
  WAIT_FOR(tally_get(&t1, &t1.none) == 2 && tally_get(&t2, &t2.none) == 1,
           5000);
  usleep(300 * 1000);
  CHECK_INT(tally_get(&t1, &t1.held), ==, 2);
  CHECK_INT(tally_get(&t1, &t1.none), ==, 2);
  CHECK_INT(tally_get(&t1, &t1.lost), ==, 0);
  CHECK_INT(tally_get(&t2, &t2.held), ==, 1);
  CHECK_INT(tally_get(&t2, &t2.none), ==, 1);
  CHECK_RC(zkl_election_destroy(e1), ZKL_OK);
  CHECK_RC(zkl_election_destroy(e2), ZKL_OK);
  CHECK(queued("terms", 0));
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  alarm(0);
}

/* A resignation right behind the join, at different points of the
 * campaign (the create out, the listing out, granted): never a HELD once
 * it returned, never a node left behind; and a join right after it, with
 * the old run maybe still ending, campaigns anew. */
static void test_resign_races_grant(void) {
  zkl_client_t *c = client(30000);
  struct tally t;
  zkl_election_t *e;
  int i, rejoined = 0;
  alarm(180);
  new_root();
  tally_init(&t);
  e = candidate(c, "race", "racer", &t);
  for (i = 0; i < 50; i++) {
    tally_set_resigned(&t, 0);
    CHECK_RC(zkl_election_join(e), ZKL_OK);
    if (i % 5)
      usleep((useconds_t)(i % 5) * 1000);
    CHECK_RC(zkl_election_resign(e), ZKL_OK);
    tally_set_resigned(&t, 1);
    if (i % 10 == 9) { /* again at once: the old run may still be ending */
      tally_set_resigned(&t, 0);
      CHECK_RC(zkl_election_join(e), ZKL_OK);
      CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK);
      if (!zkl_election_is_leader(e))
        printf("# iteration %d: %d nodes in the queue\n", i,
               queue_count("race"));
      rejoined += zkl_election_is_leader(e);
      CHECK_RC(zkl_election_resign(e), ZKL_OK);
      tally_set_resigned(&t, 1);
    }
    CHECK(queued("race", 0));
  }
  usleep(300 * 1000);
  CHECK(queued("race", 0));
  CHECK_INT(rejoined, ==, 5);
  CHECK_INT(tally_get(&t, &t.held_late), ==, 0);
  CHECK_INT(tally_get(&t, &t.none), >=, tally_get(&t, &t.held));
  printf("# 50 resignations racing the grant: %d terms granted first\n",
         tally_get(&t, &t.held) - rejoined);
  CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  alarm(0);
}

/* Resigning from the election's own callback, on the event thread: the
 * term, and another candidacy of the same client still campaigning. */
static void test_resign_in_callback(void) {
  zkl_client_t *c = client(30000), *hc = client(30000);
  struct tally t;
  zkl_election_t *e, *other, *holder;
  alarm(120);
  new_root();
  tally_init(&t);
  holder = candidate(hc, "cb", "holder", NULL);
  CHECK_RC(zkl_election_wait(holder, zkl_now_ms() + 10000), ZKL_OK);
  e = candidate(c, "cb", "self", &t);
  other = candidate(c, "cb", "other", NULL);
  t.resign_on_held = 1;
  t.also = other;
  CHECK_RC(zkl_election_join(e), ZKL_OK);
  CHECK(queued("cb", 2));
  CHECK_RC(zkl_election_join(other), ZKL_OK);
  CHECK(queued("cb", 3));
  CHECK_RC(zkl_election_resign(holder), ZKL_OK);
  WAIT_FOR(tally_get(&t, &t.resigns_in_cb) == 1, 10000);
  CHECK_INT(tally_get(&t, &t.resigns_in_cb), ==, 1);
  CHECK(!pthread_equal(t.where, pthread_self()));
  CHECK_RC(t.rc_self, ZKL_OK);
  CHECK_RC(t.rc_also, ZKL_OK); /* a campaign stopped */
  CHECK(queued("cb", 0));
  WAIT_FOR(tally_get(&t, &t.none) == 1, 5000);
  CHECK_INT(tally_get(&t, &t.none), ==, 1);
  CHECK_INT(zkl_election_state(e), ==, ZKL_STATE_NONE);
  CHECK_INT(zkl_election_is_leader(other), ==, 0);
  CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  CHECK_RC(zkl_election_destroy(other), ZKL_OK);
  CHECK_RC(zkl_election_destroy(holder), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  CHECK_RC(zkl_client_destroy(hc), ZKL_OK);
  alarm(0);
}

/* The same with ZKL_CLIENT_DISPATCH: the callback, and the resignation in
 * it, run in zkl_client_dispatch() on this thread. */
static void test_resign_in_dispatch(void) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  struct tally t;
  zkl_election_t *e;
  int64_t end;
  alarm(120);
  o.session_timeout_ms = 30000;
  o.flags = ZKL_CLIENT_DISPATCH;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  new_root();
  tally_init(&t);
  t.resign_on_held = 1;
  e = candidate(c, "disp", "self", &t);
  CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK);
  usleep(200 * 1000);
  CHECK_INT(tally_get(&t, &t.calls), ==, 0); /* elected, not dispatched */
  end = zkl_now_ms() + 10000;
  while (tally_get(&t, &t.resigns_in_cb) == 0 && zkl_now_ms() < end) {
    zkl_client_dispatch(c);
    usleep(10 * 1000);
  }
  CHECK_INT(tally_get(&t, &t.resigns_in_cb), ==, 1);
  CHECK(pthread_equal(t.where, pthread_self()));
  CHECK_RC(t.rc_self, ZKL_OK);
  CHECK(queued("disp", 0));
  end = zkl_now_ms() + 5000;
  while (tally_get(&t, &t.none) == 0 && zkl_now_ms() < end) {
    zkl_client_dispatch(c);
    usleep(10 * 1000);
  }
  CHECK_INT(tally_get(&t, &t.none), ==, 1);
  CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  alarm(0);
}

/* Destroy while campaigning behind another leader, and right after a
 * join (the create still out): it returns, leaves no node, and no
 * callback runs once it returned. */
static void test_destroy_pending(void) {
  zkl_client_t *c = client(30000), *hc = client(30000);
  struct tally t;
  zkl_election_t *e, *holder;
  int i, calls;
  alarm(120);
  new_root();
  tally_init(&t);
  holder = candidate(hc, "pend", "holder", NULL);
  CHECK_RC(zkl_election_wait(holder, zkl_now_ms() + 10000), ZKL_OK);
  e = candidate(c, "pend", "waiter", &t);
  CHECK_RC(zkl_election_join(e), ZKL_OK);
  CHECK(queued("pend", 2));
  CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 200), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  CHECK(queued("pend", 1));
  for (i = 0; i < 20; i++) {
    e = candidate(c, "pend", "waiter", &t);
    CHECK_RC(zkl_election_join(e), ZKL_OK);
    CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  }
  CHECK_INT(tally_get(&t, &t.calls), ==, 0); /* none of them led */
  CHECK_RC(zkl_election_resign(holder), ZKL_OK);
  CHECK(queued("pend", 0));
  /* destroyed right after it was elected: whatever it was told, nothing
   * comes once destroy returned */
  for (i = 0; i < 10; i++) {
    e = candidate(c, "pend", "leader", &t);
    CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK);
    CHECK_RC(zkl_election_destroy(e), ZKL_OK);
    calls = tally_get(&t, &t.calls);
    usleep(20 * 1000);
    CHECK_INT(tally_get(&t, &t.calls), ==, calls);
  }
  CHECK(queued("pend", 0));
  usleep(300 * 1000);
  CHECK_INT(tally_get(&t, &t.calls), ==, calls);
  CHECK_RC(zkl_election_destroy(holder), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  CHECK_RC(zkl_client_destroy(hc), ZKL_OK);
  alarm(0);
}

/* Destroying a campaigning election from another election's callback, on
 * the event thread, which is the thread that settles its run. */
static void test_destroy_in_callback(void) {
  zkl_client_t *c = client(30000), *hc = client(30000);
  struct tally t;
  zkl_election_t *a, *b, *holder;
  alarm(120);
  new_root();
  tally_init(&t);
  holder = candidate(hc, "dcb", "holder", NULL);
  CHECK_RC(zkl_election_wait(holder, zkl_now_ms() + 10000), ZKL_OK);
  b = candidate(c, "dcb", "behind", NULL);
  CHECK_RC(zkl_election_join(b), ZKL_OK);
  CHECK(queued("dcb", 2));
  t.destroy_on_held = b;
  a = candidate(c, "dcb-a", "destroyer", &t);
  CHECK_RC(zkl_election_join(a), ZKL_OK);
  WAIT_FOR(tally_get(&t, &t.destroys_in_cb) == 1, 10000);
  CHECK_INT(tally_get(&t, &t.destroys_in_cb), ==, 1);
  CHECK_RC(t.rc_destroy, ZKL_OK);
  CHECK(queued("dcb", 1));
  CHECK_RC(zkl_election_destroy(a), ZKL_OK);
  CHECK_RC(zkl_election_destroy(holder), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  CHECK_RC(zkl_client_destroy(hc), ZKL_OK);
  alarm(0);
}

int main(void) {
  int i;
  (void)mutex; /* admin.h's, for the lock tests */
  admin_open();
  root_tag = "zkltest-elect";
  new_root();
  RUN(test_elect_and_fail_over);
  RUN(test_node_deleted_loses_leadership);
  RUN(test_bad_input);
  for (i = 0; i < N; i++) {
    CHECK_RC(zkl_election_destroy(el[i]), ZKL_OK);
    CHECK_RC(zkl_client_destroy(cl[i]), ZKL_OK);
  }
  RUN(test_many_candidacies_no_thread);
  RUN(test_one_held_per_term);
  RUN(test_resign_races_grant);
  RUN(test_resign_in_callback);
  RUN(test_resign_in_dispatch);
  RUN(test_destroy_pending);
  RUN(test_destroy_in_callback);
  admin_close();
  return CHECK_DONE();
}

