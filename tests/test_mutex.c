/* SPDX-License-Identifier: Apache-2.0 */
/* test_mutex.c: the mutex against a real ensemble (ZKL_TEST_SERVERS).
 *
 * Each test works under its own root /zkltest-<pid>-<n> so runs never see
 * each other's nodes. An independent ZooKeeper handle ("admin") inspects
 * and damages the tree the way an operator would. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "admin.h"

/* ---- tests ------------------------------------------------------------- */

/* Empty containers go within about a second only on an ensemble with
 * scripts/zk-ensemble.sh's settings: one it started (ZKL_ENSEMBLE_DIR), or
 * one that says it has them (ZKL_TEST_OWN_SETTINGS: the containerized
 * ensemble, which tests/compose-check.sh holds to the script's). */
static int reaps_within_seconds(void) {
  return getenv("ZKL_ENSEMBLE_DIR") || getenv("ZKL_TEST_OWN_SETTINGS");
}

static void test_basic_cycle(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  uint64_t tok = 0;
  char path[256];
  new_root();
  m = mutex(c, "basic");
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_token(m, &tok), ZKL_OK);
  CHECK(tok > 0);
  CHECK_RC(zkl_mutex_node_path(m, path, sizeof path), ZKL_OK);
  CHECK(strncmp(path, root, strlen(root)) == 0);
  CHECK(strstr(path, "/basic/") != NULL && strstr(path, "-lock-") != NULL);
  CHECK_INT(queue_len("basic"), ==, 1);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_NONE);
  CHECK_INT(queue_count("basic"), ==, 0);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

static void test_reentrant_costs_no_request(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  uint64_t before, after_lock;
  int i;
  new_root();
  /* A root of the admin's, not a container the lock makes: one left
   * empty by a release that takes the parent along may go in the
   * server's sweep between two cycles, and the next cycle would pay
   * for making it again (seen in CI: 9 requests for 5). */
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  m = mutex(c, "reent");
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  after_lock = zkl_client_request_count(c);
  CHECK(after_lock > before);
  for (i = 0; i < 1000; i++) {
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_trylock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_timedlock(m, zkl_now_ms()), ZKL_OK);
  }
  CHECK_INT(zkl_mutex_depth(m), ==, 3001);
  for (i = 0; i < 3000; i++)
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c), ==, after_lock);
  CHECK_INT(zkl_mutex_depth(m), ==, 1);
  CHECK_INT(queue_len("reent"), ==, 1);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK(zkl_client_request_count(c) > after_lock);
  CHECK_INT(queue_count("reent"), ==, 0);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ENOTOWNER);
  /* The release took the parent along; the next acquire makes it again
   * in its node's transaction, so every uncontended cycle is: [the
   * parent, its setData (the token), our node (its first: no listing)],
   * then the read that vouches for our node beside [our node's delete,
   * the parent's]. Five operations (the parent's setData is not counted
   * apart), three requests, two round trips. */
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 5);
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 5);
  CHECK_INT(queue_len("reent"), ==, -1); /* taken along every time */
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  cleanup_tree(root);
}

static void test_try_and_timed(void) {
  zkl_client_t *a = client(10000), *b = client(10000);
  zkl_mutex_t *ma, *mb;
  int64_t t0, took;
  new_root();
  ma = mutex(a, "tt");
  mb = mutex(b, "tt");
  CHECK_RC(zkl_mutex_lock(ma), ZKL_OK);
  CHECK_RC(zkl_mutex_trylock(mb), ZKL_EBUSY);
  CHECK_INT(queue_len("tt"), ==, 1);
  t0 = zkl_now_ms();
  CHECK_RC(zkl_mutex_timedlock(mb, t0 + 1000), ZKL_ETIMEDOUT);
  took = zkl_now_ms() - t0;
  CHECK_INT(took, >=, 1000);
  CHECK_INT(took, <, 4000);
  CHECK_INT(queue_len("tt"), ==, 1);
  /* a deadline already past behaves like trylock, negative ones too */
  CHECK_RC(zkl_mutex_timedlock(mb, 0), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_mutex_timedlock(mb, -1), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_mutex_timedlock(mb, INT64_MIN), ZKL_ETIMEDOUT);
  CHECK_INT(queue_len("tt"), ==, 1);
  CHECK_INT(zkl_mutex_state(mb), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  CHECK_RC(zkl_mutex_timedlock(mb, 0), ZKL_OK);
  CHECK_RC(zkl_mutex_trylock(ma), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_unlock(mb), ZKL_OK);
  CHECK_RC(zkl_mutex_timedlock(mb, -1), ZKL_OK); /* free at the first look */
  CHECK_RC(zkl_mutex_unlock(mb), ZKL_OK);
  CHECK_RC(zkl_mutex_timedlock(ma, ZKL_NO_DEADLINE), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  CHECK_INT(queue_count("tt"), ==, 0);
  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(mb);
  zkl_client_destroy(a);
  zkl_client_destroy(b);
}

struct waiter {
  zkl_mutex_t *m;
  int rc;
  int64_t deadline;
  int order;
  int *next_order;
  pthread_mutex_t *mu;
};

static void *lock_thread(void *arg) {
  struct waiter *w = arg;
  w->rc = w->deadline ? zkl_mutex_timedlock(w->m, w->deadline)
                      : zkl_mutex_lock(w->m);
  if (w->rc == ZKL_OK) {
    if (w->mu) {
      pthread_mutex_lock(w->mu);
      w->order = (*w->next_order)++;
      pthread_mutex_unlock(w->mu);
    }
    zkl_mutex_unlock(w->m);
  }
  return NULL;
}

static void test_cancel(void) {
  zkl_client_t *a = client(10000), *b = client(10000);
  zkl_mutex_t *ma, *mb;
  struct waiter w = {0};
  pthread_t t;
  new_root();
  ma = mutex(a, "cancel");
  mb = mutex(b, "cancel");
  CHECK_RC(zkl_mutex_lock(ma), ZKL_OK);
  w.m = mb;
  pthread_create(&t, NULL, lock_thread, &w);
  WAIT_FOR(queue_len("cancel") == 2, 5000);
  CHECK_INT(queue_len("cancel"), ==, 2);
  /* the waiter blocked in zkl_mutex_lock() must refuse destroy */
  CHECK_RC(zkl_mutex_destroy(mb), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_cancel(mb), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_ECANCELED);
  CHECK_INT(queue_len("cancel"), ==, 1);
  CHECK_INT(zkl_mutex_state(ma), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  CHECK_INT(queue_count("cancel"), ==, 0);
  CHECK_RC(zkl_mutex_destroy(mb), ZKL_OK);
  zkl_mutex_destroy(ma);
  zkl_client_destroy(a);
  zkl_client_destroy(b);
}

/* A per-key lock's first release takes the parent it made along, in the
 * same transaction as its node: nothing is left for the server's sweep,
 * even before the object is destroyed. A newcomer that came in after our
 * last look makes the parent's delete fail: our node is deleted all the
 * same, the newcomer's hold and the parent stay. */
static void test_release_takes_parent(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  zkl_mutex_t *a, *b;
  struct waiter w = {0};
  pthread_t t;
  uint64_t before;
  int i;
  new_root();
  a = mutex(c, "alone");
  CHECK_RC(zkl_mutex_lock(a), ZKL_OK);
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_unlock(a), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 3);
  CHECK_INT(queue_len("alone"), ==, -1); /* gone with the node */
  zkl_mutex_destroy(a);
  a = mutex(c, "joined");
  b = mutex(c2, "joined");
  CHECK_RC(zkl_mutex_lock(a), ZKL_OK); /* alone: the parent is ours */
  w.m = b;
  w.deadline = zkl_now_ms() + 10000;
  pthread_create(&t, NULL, lock_thread, &w);
  for (i = 0; i < 500 && queue_len("joined") < 2; i++)
    usleep(10000);
  CHECK_INT(queue_len("joined"), ==, 2);
  CHECK_RC(zkl_mutex_unlock(a), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_OK); /* b held it, and released it */
  CHECK_INT(queue_count("joined"), ==, 0);
  zkl_mutex_destroy(a);
  zkl_mutex_destroy(b);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
}

/* Per-key locks: an object that made its key's parent, and last found
 * its node alone there, deletes the parent with its release (or, once it
 * has held again, when destroyed); keys used once leave nothing behind
 * for the server's sweep. A parent with a newcomer in it stays, and the
 * newcomer's hold with it; so does a parent someone else deleted and made
 * again meanwhile: not ours. */
struct keys_job {
  zkl_client_t *c;
  int id, failed;
};

static void *keys_main(void *arg) {
  struct keys_job *j = arg;
  char name[32];
  int i;
  for (i = 0; i < 25; i++) {
    zkl_mutex_t *m = NULL;
    zkl_mutex_options_t o = {0};
    o.root = root;
    snprintf(name, sizeof name, "key-%d-%d", j->id, i);
    if (zkl_mutex_create(&m, j->c, name, &o) != ZKL_OK ||
        zkl_mutex_lock(m) != ZKL_OK || zkl_mutex_unlock(m) != ZKL_OK)
      j->failed++;
    zkl_mutex_destroy(m);
  }
  return NULL;
}

static void test_keys_leave_no_parent(void) {
  enum { T = 4 };
  zkl_client_t *c = client(10000), *c2 = client(10000);
  zkl_mutex_t *a, *b;
  struct keys_job j[T];
  pthread_t t[T];
  struct String_vector v;
  char path[256];
  int i, left = 0, rc;
  new_root();
  for (i = 0; i < T; i++) {
    j[i] = (struct keys_job){c, i, 0};
    pthread_create(&t[i], NULL, keys_main, &j[i]);
  }
  for (i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(j[i].failed, ==, 0);
  }
  a = mutex(c, "remade-key");
  CHECK_RC(zkl_mutex_lock(a), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(a), ZKL_OK);
  snprintf(path, sizeof path, "%s/remade-key", root);
  rc = replace_node(path, 0); /* a persistent one now */
  if (rc == ZNONODE) /* gone with our release */
    rc = admin_create_in_root(path, "evil", 4);
  CHECK_INT(rc, ==, ZOK);
  CHECK_RC(zkl_mutex_destroy(a), ZKL_OK);
  a = mutex(c, "shared-key");
  b = mutex(c2, "shared-key");
  CHECK_RC(zkl_mutex_lock(a), ZKL_OK); /* a makes the parent, alone */
  CHECK_RC(zkl_mutex_unlock(a), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(b), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(a), ZKL_OK); /* its delete finds b's node */
  zkl_client_destroy(c);                  /* which it waits for */
  CHECK_INT(queue_len("shared-key"), ==, 1);
  CHECK_INT(zkl_mutex_state(b), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_unlock(b), ZKL_OK);
  zkl_mutex_destroy(b);
  zkl_client_destroy(c2);
  CHECK_INT(queue_len("remade-key"), ==, 0); /* still there, empty */
  /* right away: the server's sweep (every second here) has not come */
  admin_sync(root);
  rc = zoo_get_children(admin, root, 0, &v);
  CHECK(rc == ZOK || rc == ZNONODE);
  for (i = 0; rc == ZOK && i < v.count; i++)
    left += strncmp(v.data[i], "key-", 4) == 0;
  if (rc == ZOK)
    deallocate_String_vector(&v);
  CHECK_INT(left, ==, 0);
}

/* Issue 26: a node that is the first its directory ever had (suffix 0)
 * holds without a listing; any other lists, and waits. A planted node
 * that came first, of any name, makes the next suffix 1. */
static void test_first_born_holds_without_listing(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  zkl_mutex_t *a, *b;
  struct waiter w = {0};
  pthread_t t;
  uint64_t before;
  char p[512];
  new_root();
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  a = mutex(c, "fresh");
  b = mutex(c2, "fresh");
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_lock(a), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 2); /* parent, node */
  CHECK_RC(zkl_mutex_node_path(a, p, sizeof p), ZKL_OK);
  CHECK(strlen(p) > 10 && strcmp(p + strlen(p) - 10, "0000000000") == 0);
  /* made in one transaction: a plain parent with zklock's mark, whose
   * czxid is the node's and the token, learnt with no read */
  {
    char d[64], dir[512];
    int dl = sizeof d;
    struct Stat ds, ns;
    uint64_t tok = 0;
    snprintf(dir, sizeof dir, "%s/fresh", root);
    admin_sync(dir);
    CHECK_INT(zoo_get(admin, dir, 0, d, &dl, &ds), ==, ZOK);
    CHECK_INT(ds.ephemeralOwner, ==, 0);
    CHECK(dl == 13 && memcmp(d, "zklock-parent", 13) == 0);
    CHECK_INT(zoo_exists(admin, p, 0, &ns), ==, ZOK);
    CHECK_INT(ns.czxid, ==, ds.czxid);
    CHECK_RC(zkl_mutex_token(a, &tok), ZKL_OK);
    CHECK_INT((int64_t)tok, ==, ns.czxid);
  }
  /* b's object is new too: it makes no listing with its create, finds
   * its suffix is 1, lists, and waits */
  w.m = b;
  w.deadline = zkl_now_ms() + 10000;
  pthread_create(&t, NULL, lock_thread, &w);
  WAIT_FOR(queue_len("fresh") == 2, 5000);
  usleep(200000);
  CHECK_INT(zkl_mutex_state(b), ==, ZKL_STATE_NONE); /* still waiting */
  CHECK_RC(zkl_mutex_unlock(a), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_OK);
  /* a could not take the parent along (b was in it): a plain node, which
   * the server never sweeps; b, closed first, reads zklock's mark, finds
   * it empty, and deletes it */
  usleep(1500 * 1000); /* the test ensemble sweeps containers in 1 s */
  CHECK_INT(queue_len("fresh"), ==, 0);
  zkl_mutex_destroy(b);
  WAIT_FOR(queue_len("fresh") == -1, 5000);
  CHECK_INT(queue_len("fresh"), ==, -1);
  zkl_mutex_destroy(a);
  /* a directory made by someone else, a planted node in it first */
  snprintf(p, sizeof p, "%s/planted", root);
  CHECK_INT(zoo_create(admin, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  snprintf(p, sizeof p, "%s/planted/x-lock-", root);
  CHECK_INT(zoo_create(admin, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_SEQUENCE, NULL, 0),
            ==, ZOK);
  a = mutex(c, "planted");
  CHECK_RC(zkl_mutex_trylock(a), ZKL_EBUSY); /* it listed, and waits behind */
  zkl_mutex_destroy(a);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
}

/* zkl_sweep: the empty parents zklock made under a root go (their data
 * is zklock's mark, "zklock-parent"), and nothing else: not a parent
 * without the mark (kazoo's persistent one, Curator's, one made by hand),
 * not one in use, not one too new. The test ensemble's server sweeps a
 * container soon after its last child goes, but never one that had none:
 * those are what is swept here. */
static void test_sweep(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  const char *kids[] = {"c1", "c2", "p1", "c3", "c3/x"};
  const char *mark = "zklock-parent";
  int flags[] = {ZOO_CONTAINER, ZOO_CONTAINER, 0, ZOO_CONTAINER, 0};
  int marked[] = {1, 1, 0, 1, 0};
  char p[512], buf[64];
  int len = sizeof buf, i;
  size_t removed = 99;
  new_root();
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  for (i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "%s/%s", root, kids[i]);
    CHECK_INT(zoo_create(admin, p, marked[i] ? mark : NULL,
                         marked[i] ? (int)strlen(mark) : -1,
                         &ZOO_OPEN_ACL_UNSAFE, flags[i], NULL, 0),
              ==, ZOK);
  }
  /* the parents zklock makes carry the mark */
  m = mutex(c, "made");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  snprintf(p, sizeof p, "%s/made", root);
  admin_sync(p); /* the admin's server may lag the one that made it */
  CHECK_INT(zoo_get(admin, p, 0, buf, &len, NULL), ==, ZOK);
  CHECK(len == (int)strlen(mark) && memcmp(buf, mark, (size_t)len) == 0);
  CHECK_RC(zkl_sweep(c, root, 0, &removed), ZKL_OK);
  CHECK_INT(removed, ==, 2);
  CHECK_INT(queue_len("c1"), ==, -1);
  CHECK_INT(queue_len("c2"), ==, -1);
  CHECK_INT(queue_len("p1"), ==, 0);   /* no mark: stays */
  CHECK_INT(queue_len("c3"), ==, 1);   /* in use: stays */
  CHECK_INT(queue_len("made"), ==, 1); /* held: stays */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  snprintf(p, sizeof p, "%s/c4", root);
  CHECK_INT(zoo_create(admin, p, mark, (int)strlen(mark), &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_CONTAINER, NULL, 0),
            ==, ZOK);
  CHECK_RC(zkl_sweep(c, root, 60000, &removed), ZKL_OK);
  CHECK_INT(removed, ==, 0); /* made just now */
  CHECK_INT(queue_len("c4"), ==, 0);
  CHECK_RC(zkl_sweep(c, "/no/such/root", 0, &removed), ZKL_OK);
  CHECK_INT(removed, ==, 0);
  CHECK_RC(zkl_sweep(c, "bad", 0, &removed), ZKL_EINVAL);
  CHECK_RC(zkl_sweep(c, root, -1, &removed), ZKL_EINVAL);
  CHECK_RC(zkl_sweep(NULL, root, 0, &removed), ZKL_EINVAL);
  zkl_client_destroy(c);
}

/* A plain parent zklock did not make in this object: one with zklock's
 * mark that a killed process left (a fresh one, and one that had nodes
 * before) is deleted by the next object that uses it, once it is closed;
 * one with other data (a rogue's, or a user's node), or one where another
 * library's node was seen, is never deleted. */
static void test_lean_parent_leftovers(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  const char *names[] = {"fresh", "used", "foreign", "peer"};
  const char *data[] = {"zklock-parent", "zklock-parent", "zklock-parenx",
                        "zklock-parent"};
  char p[512], made[512];
  int i;
  new_root();
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  for (i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", root, names[i]);
    CHECK_INT(zoo_create(admin, p, data[i], 13, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                         0),
              ==, ZOK);
  }
  /* "used": a node came and went (its cversion moved: ours is not 0) */
  snprintf(p, sizeof p, "%s/used/x", root);
  CHECK_INT(zoo_create(admin, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  CHECK_INT(zoo_delete(admin, p, -1), ==, ZOK);
  for (i = 0; i < 3; i++) {
    m = mutex(c, names[i]);
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
    CHECK_INT(queue_len(names[i]), ==, 0); /* not at release */
    zkl_mutex_destroy(m);
    if (i < 2) {
      WAIT_FOR(queue_len(names[i]) == -1, 5000); /* at close */
      CHECK_INT(queue_len(names[i]), ==, -1);
    }
  }
  /* another library's node is seen in "peer" */
  snprintf(p, sizeof p,
           "%s/peer/_c_6f1c2a3e-2b4d-4c1a-9e0f-1234567890ab-lock-", root);
  CHECK_INT(zoo_create(admin, p, "curator", 7, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL | ZOO_SEQUENCE, made, sizeof made),
            ==, ZOK);
  m = mutex(c, "peer");
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY);
  CHECK_INT(zoo_delete(admin, made, -1), ==, ZOK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c); /* which waits for any delete of a parent */
  CHECK_INT(queue_len("foreign"), ==, 0);
  CHECK_INT(queue_len("peer"), ==, 0);
}

static void test_fifo(void) {
  enum { N = 4 };
  zkl_client_t *h = client(10000), *cl[N];
  zkl_mutex_t *mh, *m[N];
  struct waiter w[N];
  pthread_t t[N];
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  int next = 0, i;
  new_root();
  mh = mutex(h, "fifo");
  CHECK_RC(zkl_mutex_lock(mh), ZKL_OK);
  for (i = 0; i < N; i++) {
    cl[i] = client(10000);
    m[i] = mutex(cl[i], "fifo");
    memset(&w[i], 0, sizeof w[i]);
    w[i].m = m[i];
    w[i].mu = &mu;
    w[i].next_order = &next;
    pthread_create(&t[i], NULL, lock_thread, &w[i]);
    /* the next waiter starts only once this one is queued */
    WAIT_FOR(queue_len("fifo") == i + 2, 5000);
    CHECK_INT(queue_len("fifo"), ==, i + 2);
  }
  CHECK_RC(zkl_mutex_unlock(mh), ZKL_OK);
  for (i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    CHECK_RC(w[i].rc, ZKL_OK);
    CHECK_INT(w[i].order, ==, i);
    zkl_mutex_destroy(m[i]);
    zkl_client_destroy(cl[i]);
  }
  CHECK_INT(queue_count("fifo"), ==, 0);
  zkl_mutex_destroy(mh);
  zkl_client_destroy(h);
}

/* Two threads sharing one mutex object exclude each other, and a thread
 * that does not hold it cannot release it. */
struct other {
  zkl_mutex_t *m;
  int try_rc, unlock_rc, destroy_rc, state;
};

static void *other_thread(void *arg) {
  struct other *o = arg;
  o->try_rc = zkl_mutex_trylock(o->m);
  o->unlock_rc = zkl_mutex_unlock(o->m);
  o->destroy_rc = zkl_mutex_destroy(o->m);
  o->state = zkl_mutex_state(o->m);
  return NULL;
}

static void test_threads_exclude(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  struct other o = {0};
  pthread_t t;
  new_root();
  m = mutex(c, "threads");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  o.m = m;
  pthread_create(&t, NULL, other_thread, &o);
  pthread_join(t, NULL);
  CHECK_RC(o.try_rc, ZKL_EBUSY);
  CHECK_RC(o.unlock_rc, ZKL_ENOTOWNER);
  CHECK_RC(o.destroy_rc, ZKL_EBUSY);
  CHECK_INT(o.state, ==, ZKL_STATE_NONE);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_INT(queue_len("threads"), ==, 1);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* nested */
  /* destroying a mutex the calling thread holds releases it */
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_INT(queue_count("threads"), ==, 0);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_EINVAL); /* double destroy */
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
  CHECK_RC(zkl_client_destroy(c), ZKL_EINVAL);
}

static void test_bad_input(void) {
  zkl_client_t *c = client(10000), *bad = NULL;
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  char longname[ZKL_NAME_MAX + 2], buf[8];
  uint64_t tok;
  zkl_contender_t *list = NULL;
  size_t n = 99;
  new_root();
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK_RC(zkl_client_create(NULL, servers, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_client_create(&bad, NULL, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_client_create(&bad, "", NULL), ZKL_EINVAL);
  CHECK(bad == NULL);
  CHECK_RC(zkl_mutex_create(NULL, c, "x", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, NULL, "x", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, NULL, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, "", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, "a/b", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, ".", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, "..", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, "tab\there", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_create(&m, c, longname, NULL), ZKL_EINVAL);
  longname[ZKL_NAME_MAX] = '\0';
  CHECK_RC(zkl_mutex_create(&m, c, longname, NULL), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  m = NULL;
  o.root = "relative";
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  o.root = "/trailing/";
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  o.root = "/a//b";
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  o.root = "/";
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  o.root = root;
  o.data_len = ZKL_DATA_MAX + 1;
  o.data = longname;
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  o.data_len = 4;
  o.data = NULL;
  CHECK_RC(zkl_mutex_create(&m, c, "x", &o), ZKL_EINVAL);
  CHECK(m == NULL);
  CHECK_RC(zkl_mutex_lock(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_trylock(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_timedlock(NULL, 0), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_unlock(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_cancel(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_token(NULL, &tok), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_destroy(NULL), ZKL_OK);
  CHECK_RC(zkl_client_destroy(NULL), ZKL_OK);
  CHECK_RC(zkl_mutex_queue(c, root, "a/b", &list, &n), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_queue(NULL, root, "x", &list, &n), ZKL_EINVAL);

  m = mutex(c, "bad");
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ENOTOWNER);
  CHECK_RC(zkl_mutex_token(m, &tok), ZKL_ENOTOWNER);
  CHECK_RC(zkl_mutex_token(m, NULL), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, buf, sizeof buf), ZKL_EINVAL);
  CHECK_RC(zkl_client_destroy(c), ZKL_EBUSY); /* a mutex is still alive */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ENOTOWNER);
  CHECK_RC(zkl_mutex_queue(c, root, "never-used", &list, &n), ZKL_OK);
  CHECK(list == NULL && n == 0);
  zkl_mutex_destroy(m);
  CHECK_RC(zkl_client_destroy(c), ZKL_OK);
}

static void test_unreachable(void) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  int64_t t0 = zkl_now_ms();
  o.connect_timeout_ms = 1500;
  CHECK_RC(zkl_client_create(&c, "127.0.0.1:1", &o), ZKL_ECONNECT);
  CHECK(c == NULL);
  CHECK_INT(zkl_now_ms() - t0, <, 6000);
}

/* zkl_client_wait_connected() on a thread of its own, so that a wait
 * that does not end fails the test instead of hanging it. */
struct connect_wait {
  zkl_client_t *c;
  int64_t deadline;
  int rc;
  atomic_int done;
};

static void *connect_wait_main(void *arg) {
  struct connect_wait *w = arg;
  w->rc = zkl_client_wait_connected(w->c, w->deadline);
  atomic_store(&w->done, 1);
  return NULL;
}

/* The deadline rule (zklock.h, TIME) for a wait for a state: a deadline
 * already past, negative included, only looks: ZKL_OK when connected,
 * else ZKL_ETIMEDOUT at once; ZKL_NO_DEADLINE waits. */
static void test_wait_connected_deadlines(void) {
  zkl_client_options_t o = {0};
  zkl_client_t *c = client(10000), *u = NULL;
  struct connect_wait w = {0};
  pthread_t t;
  int64_t t0;
  CHECK_RC(zkl_client_wait_connected(c, -1), ZKL_OK);
  CHECK_RC(zkl_client_wait_connected(c, 0), ZKL_OK);
  CHECK_RC(zkl_client_wait_connected(c, ZKL_NO_DEADLINE), ZKL_OK);
  zkl_client_destroy(c);
  o.connect_timeout_ms = -1; /* returns before the first connection */
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  CHECK_RC(zkl_client_wait_connected(c, ZKL_NO_DEADLINE), ZKL_OK);
  zkl_client_destroy(c);
  CHECK_RC(zkl_client_create(&u, "127.0.0.1:1", &o), ZKL_OK);
  t0 = zkl_now_ms();
  CHECK_RC(zkl_client_wait_connected(u, t0 + 300), ZKL_ETIMEDOUT);
  CHECK_INT(zkl_now_ms() - t0, >=, 300);
  w.c = u;
  w.deadline = -1;
  pthread_create(&t, NULL, connect_wait_main, &w);
  WAIT_FOR(atomic_load(&w.done), 3000);
  CHECK(atomic_load(&w.done));
  if (!atomic_load(&w.done)) { /* it waits for ever: leave it to exit() */
    pthread_detach(t);
    return;
  }
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_ETIMEDOUT);
  zkl_client_destroy(u);
}

static void test_parent_recreated_tokens_increase(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  uint64_t t1 = 0, t2 = 0;
  char dir[256];
  int rc;
  new_root();
  m = mutex(c, "recreate");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_token(m, &t1), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  snprintf(dir, sizeof dir, "%s/recreate", root);
  if (reaps_within_seconds()) {
    /* Parents are container nodes: the server removes them once empty.
     * Our test ensemble checks every second (znode.container.
     * checkIntervalMs), not every minute as by default; the stat does not
     * show a container, so this is the only way to see one. Once, under
     * TSan on a loaded machine, 10 s were not enough: allow 30. */
    WAIT_FOR(zoo_exists(admin, dir, 0, NULL) == ZNONODE, 30000);
    CHECK_INT(zoo_exists(admin, dir, 0, NULL), ==, ZNONODE);
    CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* created again */
    CHECK_RC(zkl_mutex_token(m, &t1), ZKL_OK);
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  }
  rc = zoo_delete(admin, dir, -1); /* or gone with our first release */
  CHECK(rc == ZOK || rc == ZNONODE);
  CHECK_INT(admin_create_in_root(dir, NULL, -1), ==, ZOK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_token(m, &t2), ZKL_OK);
  CHECK(t2 > t1);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  /* and once more with the parent gone entirely: it is created again */
  CHECK_INT(zoo_delete(admin, dir, -1), ==, ZOK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_token(m, &t1), ZKL_OK);
  CHECK(t1 > t2);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* Issue 23 (5): a parent that another library's node was seen in is not
 * ours to delete, even when we made it and are alone in it again: that
 * library may rely on it (kazoo checks it once per Lock object). Here a
 * Curator-named node, an admin's ephemeral one, shows in our listing; it
 * goes, we hold alone again, release, and destroy the object, which used
 * to delete the parent then (tidy at close). And the kazoo flavour never
 * deletes its parent, which is a persistent node as kazoo makes it, not
 * a container the server sweeps once empty. */
static void test_peer_parent_stays(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  zkl_mutex_options_t o = {0};
  char dir[256], peer[512], made[512];
  new_root();
  m = mutex(c, "peer");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* m makes the parent, alone */
  snprintf(dir, sizeof dir, "%s/peer", root);
  snprintf(peer, sizeof peer,
           "%s/_c_6f1c2a3e-2b4d-4c1a-9e0f-1234567890ab-lock-", dir);
  CHECK_INT(zoo_create(admin, peer, "curator", 7, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL | ZOO_SEQUENCE, made, sizeof made),
            ==, ZOK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY); /* its listing shows the peer */
  CHECK_INT(zoo_delete(admin, made, -1), ==, ZOK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* alone again */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c); /* which waits for any delete of the parent */
  /* right away: the server's sweep (every second here) has not come */
  CHECK_INT(queue_len("peer"), ==, 0);

  c = client(10000);
  o.root = root;
  o.flags = ZKL_MUTEX_KAZOO;
  CHECK_RC(zkl_mutex_create(&m, c, "kazoo", &o), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* m makes the parent, alone */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(queue_len("kazoo"), ==, 0);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c);
  if (reaps_within_seconds())
    usleep(2500 * 1000); /* two sweeps of a container (see
                            test_parent_recreated_tokens_increase) */
  CHECK_INT(queue_len("kazoo"), ==, 0);
  cleanup_tree(root); /* a persistent parent stays for good */
}

static void test_node_deleted_is_lost(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  char path[256];
  new_root();
  o.root = root;
  o.state_fn = on_state;
  o.state_ctx = &st;
  CHECK_RC(zkl_mutex_create(&m, c, "gone", &o), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  WAIT_FOR(last_state(&st) == ZKL_STATE_HELD, 2000);
  CHECK_INT(last_state(&st), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_node_path(m, path, sizeof path), ZKL_OK);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 5000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  WAIT_FOR(last_state(&st) == ZKL_STATE_LOST, 2000);
  CHECK_INT(last_state(&st), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_lock(m), ZKL_ELOST); /* nested call on a lost hold */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  /* a longer hold is watched: its deletion is reported without any call */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  usleep(300000);
  CHECK_RC(zkl_mutex_node_path(m, path, sizeof path), ZKL_OK);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 2000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c);
}

static void test_queue_listing(void) {
  zkl_client_t *a = client(10000), *b = client(10000);
  zkl_mutex_t *ma = NULL, *mb;
  zkl_mutex_options_t o = {0};
  zkl_contender_t *list = NULL;
  size_t n = 0;
  struct waiter w = {0};
  pthread_t t;
  uint64_t tok;
  new_root();
  o.root = root;
  o.data = "job-42";
  o.data_len = 6;
  CHECK_RC(zkl_mutex_create(&ma, a, "list", &o), ZKL_OK);
  mb = mutex(b, "list");
  CHECK_RC(zkl_mutex_lock(ma), ZKL_OK);
  CHECK_RC(zkl_mutex_token(ma, &tok), ZKL_OK);
  w.m = mb;
  pthread_create(&t, NULL, lock_thread, &w);
  WAIT_FOR(queue_len("list") == 2, 5000);
  CHECK_RC(zkl_mutex_queue(a, root, "list", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 2);
  if (n == 2) {
    CHECK_INT(list[0].czxid, ==, tok);
    CHECK_INT(list[0].pid, ==, getpid());
    CHECK(list[0].host != NULL);
    CHECK_INT(list[0].data_len, ==, 6);
    CHECK(list[0].data && memcmp(list[0].data, "job-42", 6) == 0);
    CHECK_INT(list[0].owner, ==, zkl_client_session_id(a));
    CHECK_INT(list[1].owner, ==, zkl_client_session_id(b));
    CHECK(list[1].czxid > list[0].czxid);
    CHECK(list[1].data == NULL);
  }
  zkl_contenders_free(list, n);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_OK);
  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(mb);
  zkl_client_destroy(a);
  zkl_client_destroy(b);
}

/* zkl_locks_list: every child of the root, sorted, each with its queue
 * as zkl_mutex_queue() lists it; an unused child with none. */
static void test_locks_list(void) {
  zkl_client_t *a = client(10000), *b = client(10000);
  zkl_mutex_t *ma, *mb, *mf;
  zkl_mutex_options_t fo = {0};
  zkl_semaphore_options_t so = {0};
  zkl_semaphore_t *sem = NULL;
  zkl_lease_t *lease = NULL;
  zkl_lock_info_t *l = NULL;
  size_t n = 9;
  char empty[256];
  struct waiter w = {0};
  pthread_t t;
  uint64_t tok = 0;
  new_root();
  CHECK_RC(zkl_locks_list(a, root, &l, &n), ZKL_OK); /* no root yet */
  CHECK(l == NULL && n == 0);
  ma = mutex(a, "b-held");
  mb = mutex(b, "b-held");
  fo.root = root;
  fo.flags = ZKL_MUTEX_FLAT;
  CHECK_RC(zkl_mutex_create(&mf, a, "c-flat", &fo), ZKL_OK);
  so.root = root;
  CHECK_RC(zkl_semaphore_create(&sem, a, "d-sem", 2, &so), ZKL_OK);
  CHECK_RC(zkl_mutex_lock(ma), ZKL_OK);
  CHECK_RC(zkl_mutex_token(ma, &tok), ZKL_OK);
  w.m = mb;
  pthread_create(&t, NULL, lock_thread, &w);
  QUEUED("b-held", 2);
  CHECK_RC(zkl_mutex_lock(mf), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(sem, &lease), ZKL_OK);
  snprintf(empty, sizeof empty, "%s/a-empty", root);
  CHECK_INT(admin_create_in_root(empty, NULL, -1), ==, ZOK);
  CHECK_RC(zkl_locks_list(b, root, &l, &n), ZKL_OK);
  CHECK_INT(n, ==, 4);
  if (n == 4) {
    CHECK_STR(l[0].name, "a-empty");
    CHECK_INT(l[0].count, ==, 0);
    CHECK(l[0].contenders == NULL);
    CHECK_STR(l[1].name, "b-held");
    CHECK_INT(l[1].count, ==, 2);
    CHECK(l[1].count == 2 && l[1].contenders[0].holds &&
          !l[1].contenders[1].holds &&
          l[1].contenders[0].czxid == (int64_t)tok &&
          l[1].contenders[1].owner == zkl_client_session_id(b));
    CHECK_STR(l[2].name, "c-flat");
    CHECK(l[2].count == 1 && l[2].contenders[0].holds);
    CHECK_STR(l[3].name, "d-sem");
    CHECK(l[3].count == 1 && l[3].contenders[0].holds &&
          l[3].contenders[0].mode == ZKL_MODE_LEASE);
  }
  zkl_locks_free(l, n);
  zkl_locks_free(NULL, 3);
  l = (zkl_lock_info_t *)&w;
  CHECK_RC(zkl_locks_list(a, "relative", &l, &n), ZKL_EINVAL);
  CHECK(l == NULL && n == 0);
  CHECK_RC(zkl_locks_list(NULL, root, &l, &n), ZKL_EINVAL);
  CHECK_RC(zkl_lease_release(lease), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(mf), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_OK); /* it took the lock, and released it */
  zkl_semaphore_destroy(sem);
  zkl_mutex_destroy(mf);
  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(mb);
  zkl_client_destroy(a);
  zkl_client_destroy(b);
}

static void test_log_hook(void) {
  static struct logbuf b = {PTHREAD_MUTEX_INITIALIZER, ""};
  zkl_client_options_t o = {0};
  zkl_client_t *c = NULL, *other = client(10000);
  zkl_mutex_t *m, *mo;
  new_root();
  o.log_fn = log_hook;
  o.log_ctx = &b;
  o.log_level = ZKL_LOG_DEBUG;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  WAIT_FOR(log_has(&b, "connected: session 0x"), 3000);
  CHECK(log_has(&b, "connected: session 0x"));
  m = mutex(c, "logged");
  mo = mutex(other, "logged");
  CHECK_RC(zkl_mutex_lock(mo), ZKL_OK);
  CHECK_RC(zkl_mutex_timedlock(m, zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK(log_has(&b, "ZKL_ETIMEDOUT"));
  CHECK_RC(zkl_mutex_unlock(mo), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(mo);
  zkl_client_destroy(c);
  zkl_client_destroy(other);
  /* a session timeout the ensemble clamps (every ensemble has a maximum,
   * 20 ticks by default; 3600000 ms is past any usual one) is told */
  c = NULL;
  o.log_level = ZKL_LOG_WARN;
  o.session_timeout_ms = 3600000;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  WAIT_FOR(log_has(&b, "not the 3600000 ms asked"), 3000);
  CHECK(log_has(&b, "not the 3600000 ms asked"));
  CHECK_INT(zkl_client_session_timeout(c), <, 3600000);
  zkl_client_destroy(c);
}

int main(void) {
  admin_open();
  RUN(test_basic_cycle);
  RUN(test_reentrant_costs_no_request);
  RUN(test_try_and_timed);
  RUN(test_cancel);
  RUN(test_keys_leave_no_parent);
  RUN(test_release_takes_parent);
  RUN(test_first_born_holds_without_listing);
  RUN(test_sweep);
  RUN(test_lean_parent_leftovers);
  RUN(test_fifo);
  RUN(test_threads_exclude);
  RUN(test_bad_input);
  RUN(test_unreachable);
  RUN(test_wait_connected_deadlines);
  RUN(test_parent_recreated_tokens_increase);
  RUN(test_peer_parent_stays);
  RUN(test_node_deleted_is_lost);
  RUN(test_queue_listing);
  RUN(test_locks_list);
  RUN(test_log_hook);
  admin_close();
  return CHECK_DONE();
}
