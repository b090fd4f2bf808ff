/* SPDX-License-Identifier: Apache-2.0 */
/* test_faults.c: faults a real ensemble cannot be made to produce on cue,
 * injected into the library's completions (ZKL_FAULT_INJECTION, only in
 * the internal library this test links), against a real ensemble
 * (ZKL_TEST_SERVERS). Each is a defect the spin model found (model/,
 * "Findings"): the test fails with the code before its fix. */
#include "../lib/internal.h"
#include "admin.h"

static zkl_mutex_t *mutex_flags(zkl_client_t *c, const char *name,
                                unsigned flags) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = root;
  o.flags = flags;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  return m;
}

/* F3: the create is applied but its name cannot be kept (out of memory).
 * The node is found again by its guid at once; before the fix the acquire
 * waited for a reconnection that never came (here: its deadline), with
 * its node blocking everyone else. */
static void test_create_name_not_kept(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  int64_t t0;
  new_root();
  m = mutex(c, "nomem");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* the parents exist from now on */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  atomic_store(&zkl__fault_create_nomem, 1);
  t0 = zkl_now_ms();
  CHECK_RC(zkl_mutex_timedlock(m, t0 + 8000), ZKL_OK);
  CHECK_INT(atomic_load(&zkl__fault_create_nomem), ==, 0); /* it was hit */
  CHECK_INT(zkl_now_ms() - t0, <, 4000);
  CHECK_INT(queue_len("nomem"), ==, 1); /* adopted, not duplicated */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(queue_count("nomem"), ==, 0);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* F1: unlock's read of its node is lost with the connection while the
 * delete behind it lands. Nothing vouches that what was deleted was ours,
 * so unlock cannot say ZKL_OK; before the fix it did. (Without the
 * own-node watch no other read is in flight to take the fault.) */
static void test_unlock_read_lost(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  new_root();
  m = mutex_flags(c, "readlost", ZKL_MUTEX_NO_NODE_WATCH);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  atomic_store(&zkl__fault_stat_lost, 1);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  CHECK_INT(atomic_load(&zkl__fault_stat_lost), ==, 0);
  CHECK_INT(queue_count("readlost"), ==, 0); /* deleted all the same */
  /* the lock is usable again at once */
  CHECK_RC(zkl_mutex_trylock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* A handle on the session `id` names (NULL: a new one), connected. */
static zhandle_t *connected_handle(const clientid_t *id) {
  zhandle_t *zh = zookeeper_init2(servers, admin_watcher, 10000, id, NULL, 0,
                                  quiet_zk_log);
  int i;
  CHECK(zh != NULL);
  for (i = 0; zh && i < 1000 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(10000);
  CHECK_INT(zh ? zoo_state(zh) : 0, ==, ZOO_CONNECTED_STATE);
  return zh;
}

/* Ends a session from outside: a second handle on it closes it, and its
 * first handle learns of the expiry when it reconnects. */
static void expire_session(const clientid_t *id) {
  zhandle_t *zh = connected_handle(id);
  if (zh)
    zookeeper_close(zh);
}

static void expire(zkl_client_t *c) {
  clientid_t id;
  pthread_mutex_lock(&c->mu);
  id = *zoo_client_id(c->sess->zh);
  pthread_mutex_unlock(&c->mu);
  expire_session(&id);
}

static void on_void_unused(int rc, const void *data) { (void)rc, (void)data; }

/* A transaction on a handle whose session has expired. Debian's 3.8.0
 * client, asked directly, fails the first op's state check, then frees the
 * first op's path (ours) at the second op and again at the third: glibc
 * aborts on the double free. zkl__zoo_amulti refuses before it, and every
 * path is still ours to free. */
static void test_multi_on_expired_handle(void) {
  zhandle_t *zh = connected_handle(NULL);
  zoo_op_t ops[3];
  zoo_op_result_t res[3];
  char *path[3];
  int i;
  if (!zh)
    return;
  expire_session(zoo_client_id(zh));
  for (i = 0; i < 3000 && zoo_state(zh) != ZOO_EXPIRED_SESSION_STATE; i++)
    usleep(10000);
  CHECK_INT(zoo_state(zh), ==, ZOO_EXPIRED_SESSION_STATE);
  for (i = 0; i < 3; i++) {
    path[i] = malloc(32);
    snprintf(path[i], 32, "/expired-%d", i);
    zoo_delete_op_init(&ops[i], path[i], -1);
  }
  CHECK_INT(zkl__zoo_amulti(zh, 3, ops, res, on_void_unused, NULL), ==,
            ZINVALIDSTATE);
  for (i = 0; i < 3; i++)
    free(path[i]);
  zookeeper_close(zh);
}

struct handle_errors {
  pthread_mutex_t mu;
  _Atomic(zkl_client_t *) c;
  int n;
  int64_t first;
  _Atomic int renewed;
};

static void count_handle_errors(void *ctx, int level, const char *msg) {
  struct handle_errors *h = ctx;
  (void)level;
  /* a hook may call the library: it runs with no lock held (zklock.h) */
  (void)zkl_client_session_timeout(atomic_load(&h->c));
  if (strstr(msg, "new session requested"))
    h->renewed = 1;
  if (!strstr(msg, "cannot create a ZooKeeper handle"))
    return;
  pthread_mutex_lock(&h->mu);
  if (h->n++ == 0)
    h->first = zkl_now_ms();
  pthread_mutex_unlock(&h->mu);
}

/* The session expired and no new handle can be made for a while (file
 * descriptors or the resolver gone): the event thread tries again once a
 * second. Before the fix it tried again at once, in a loop that spun a
 * core and flooded the log hook, for as long as the cause lasted. The
 * hook calls the library: its lines about new sessions were once logged
 * with the client's lock held, and such a call deadlocked. */
static void test_new_handle_retried_calmly(void) {
  struct handle_errors h = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};
  zkl_client_options_t o = {0};
  zkl_client_t *c = NULL;
  int64_t old, t;
  int i;
  o.session_timeout_ms = 4000;
  o.log_fn = count_handle_errors;
  o.log_ctx = &h;
  o.log_level = ZKL_LOG_INFO;
  o.connect_timeout_ms = -1; /* h.c is set before the first line */
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  if (!c)
    return;
  atomic_store(&h.c, c);
  CHECK_RC(zkl_client_wait_connected(c, zkl_now_ms() + 10000), ZKL_OK);
  old = zkl_client_session_id(c);
  atomic_store(&zkl__fault_new_session, 3);
  expire(c);
  for (i = 0; i < 300; i++) { /* 30 s */
    if (zkl_client_state(c) == ZKL_CLIENT_CONNECTED &&
        zkl_client_session_id(c) != old)
      break;
    usleep(100000);
  }
  t = zkl_now_ms();
  CHECK_INT(zkl_client_state(c), ==, ZKL_CLIENT_CONNECTED);
  CHECK_INT(atomic_load(&zkl__fault_new_session), ==, 0);
  WAIT_FOR(atomic_load(&h.renewed), 3000);
  CHECK(atomic_load(&h.renewed));
  if (!atomic_load(&h.renewed))
    exit(1); /* the event thread is stuck: destroy would hang */
  pthread_mutex_lock(&h.mu);
  CHECK_INT(h.n, ==, 3);
  /* three failures, then the handle that worked: a second apart each */
  CHECK_INT(t - h.first, >=, 1900);
  pthread_mutex_unlock(&h.mu);
  zkl_client_destroy(c);
}

/* Asynchronous acquires through a session expiry: a granted hold is LOST
 * and its release says so; the pending ones join again on the new
 * session and each callback runs exactly once. */
struct seen_cb {
  pthread_mutex_t mu;
  int calls, ok;
  zkl_hold_t *granted[8];
};

static void on_hold_cb(zkl_hold_t *h, int rc, void *arg) {
  struct seen_cb *s = arg;
  pthread_mutex_lock(&s->mu);
  if (rc == ZKL_OK && s->ok < 8)
    s->granted[s->ok++] = h;
  else if (rc != ZKL_OK)
    fprintf(stderr, "async callback: %s\n", zkl_err_name(rc));
  s->calls++;
  pthread_mutex_unlock(&s->mu);
}

static int cb_calls(struct seen_cb *s) {
  int n;
  pthread_mutex_lock(&s->mu);
  n = s->calls;
  pthread_mutex_unlock(&s->mu);
  return n;
}

static void test_async_through_expiry(void) {
  zkl_client_t *c = client(4000), *hc = client(10000);
  zkl_mutex_t *m, *hm, *m2;
  zkl_hold_t *h[5];
  struct seen_cb s = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};
  int i;
  new_root();
  m = mutex(c, "exp");
  m2 = mutex(c, "exp2");
  hm = mutex(hc, "exp");
  CHECK_RC(zkl_mutex_lock_async(m2, ZKL_NO_DEADLINE, on_hold_cb, &s, &h[0]),
           ZKL_OK);
  WAIT_FOR(cb_calls(&s) == 1, 10000);
  CHECK_RC(zkl_mutex_lock(hm), ZKL_OK);
  for (i = 1; i < 5; i++)
    CHECK_RC(zkl_mutex_lock_async(m, ZKL_NO_DEADLINE, on_hold_cb, &s, &h[i]),
             ZKL_OK);
  QUEUED("exp", 5);
  expire(c);
  WAIT_FOR(zkl_hold_state(h[0]) == ZKL_STATE_LOST, 20000);
  CHECK_INT(zkl_hold_state(h[0]), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_hold_release(h[0]), ZKL_ELOST);
  /* joined again on the new session, behind the holder */
  WAIT_FOR(queue_len("exp") == 5 && zkl_client_state(c) ==
           ZKL_CLIENT_CONNECTED, 20000);
  CHECK_INT(cb_calls(&s), ==, 1);
  CHECK_RC(zkl_mutex_unlock(hm), ZKL_OK);
  for (i = 2; i <= 5; i++) { /* one at a time, each released in turn */
    WAIT_FOR(cb_calls(&s) == i, 20000);
    CHECK_INT(cb_calls(&s), ==, i);
    usleep(100 * 1000);
    CHECK_INT(cb_calls(&s), ==, i);
    CHECK_RC(zkl_hold_release(s.granted[i - 1]), ZKL_OK);
  }
  CHECK_INT(s.ok, ==, 5);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m2), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(hm), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(hc);
}

/* How many nodes root/name has, and the czxid of the youngest. */
static int nodes_czxid(const char *name, int64_t *czxid) {
  char path[256], node[512];
  struct String_vector v;
  struct Stat st;
  int i, n;
  snprintf(path, sizeof path, "%s/%s", root, name);
  admin_sync(path);
  if (zoo_get_children(admin, path, 0, &v) != ZOK)
    return 0;
  n = v.count;
  for (i = 0; i < v.count; i++) {
    snprintf(node, sizeof node, "%s/%s", path, v.data[i]);
    if (zoo_exists(admin, node, 0, &st) == ZOK && czxid &&
        (i == 0 || st.czxid > *czxid))
      *czxid = st.czxid; /* the youngest */
  }
  deallocate_String_vector(&v);
  return n;
}

static zkl_multilock_t *multi_xy(zkl_client_t *c) {
  zkl_multilock_t *ml = NULL;
  zkl_multilock_options_t o = {0};
  zkl_multilock_member_t m[2] = {{"mx", ZKL_MODE_EXCLUSIVE},
                                 {"my", ZKL_MODE_EXCLUSIVE}};
  o.root = root;
  CHECK_RC(zkl_multilock_create(&ml, c, m, 2, &o), ZKL_OK);
  return ml;
}

struct multi_waiter {
  zkl_multilock_t *ml;
  _Atomic int rc;
};

static void *multi_lock_thread(void *arg) {
  struct multi_waiter *w = arg;
  atomic_store(&w->rc, zkl_multilock_timedlock(w->ml, zkl_now_ms() + 60000));
  return NULL;
}

/* A multi-lock waiting when its session expires enqueues all its nodes
 * again on the new session, in one transaction: never one alone. */
static void test_multilock_through_expiry(void) {
  zkl_client_t *c = client(4000), *hc = client(10000);
  zkl_multilock_t *ml;
  zkl_mutex_t *hm;
  struct multi_waiter w = {0, 1};
  int64_t zx = 0, zy = 0;
  uint64_t token = 0;
  pthread_t t;
  new_root();
  ml = multi_xy(c);
  hm = mutex(hc, "my");
  CHECK_RC(zkl_mutex_lock(hm), ZKL_OK);
  w.ml = ml;
  pthread_create(&t, NULL, multi_lock_thread, &w);
  QUEUED("my", 2);
  expire(c);
  /* the old nodes went with the session; new ones, both of them */
  WAIT_FOR(zkl_client_state(c) == ZKL_CLIENT_CONNECTED &&
               nodes_czxid("mx", &zx) == 1 && nodes_czxid("my", &zy) == 2 &&
               zx == zy,
           20000);
  CHECK_INT(nodes_czxid("mx", &zx), ==, 1);
  CHECK_INT(nodes_czxid("my", &zy), ==, 2);
  CHECK_INT(zx, ==, zy);
  CHECK_INT(atomic_load(&w.rc), ==, 1); /* still waiting */
  CHECK_RC(zkl_mutex_unlock(hm), ZKL_OK);
  pthread_join(t, NULL);
  CHECK_RC(atomic_load(&w.rc), ZKL_OK);
  CHECK_RC(zkl_multilock_token(ml, &token), ZKL_OK);
  CHECK_INT((int64_t)token, ==, zx);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_INT(queue_count("mx") + queue_count("my"), ==, 0);
  zkl_multilock_destroy(ml);
  zkl_mutex_destroy(hm);
  zkl_client_destroy(c);
  zkl_client_destroy(hc);
}

/* The same, with the new session late (no handle can be made for about
 * 2 s): the set's next transaction meets the dead handle, which refuses
 * it (ZINVALIDSTATE), and the set waits for the new session and joins
 * there. Before the fix the acquire ended with that ZooKeeper code, the
 * chaos round's "multilock: ZINVALIDSTATE" (issue 34, part 2); an async
 * acquire takes the same run, and hears the same outcome. */
struct multi_async {
  _Atomic int rc;
};

static void multi_async_done(zkl_multilock_t *ml, int rc, void *arg) {
  struct multi_async *r = arg;
  (void)ml;
  atomic_store(&r->rc, rc);
}

static void test_multilock_expiry_before_new_session(void) {
  int async;
  for (async = 0; async < 2; async++) {
    zkl_client_t *c = client(4000), *hc = client(10000);
    zkl_multilock_t *ml;
    zkl_mutex_t *hm;
    struct multi_waiter w = {0, 1};
    struct multi_async r = {1};
    int64_t zx = 0, zy = 0, old;
    pthread_t t;
    new_root();
    ml = multi_xy(c);
    hm = mutex(hc, "my");
    CHECK_RC(zkl_mutex_lock(hm), ZKL_OK);
    w.ml = ml;
    if (async)
      CHECK_RC(zkl_multilock_lock_async(ml, zkl_now_ms() + 60000,
                                        multi_async_done, &r),
               ZKL_OK);
    else
      pthread_create(&t, NULL, multi_lock_thread, &w);
    QUEUED("my", 2);
    old = zkl_client_session_id(c);
    atomic_store(&zkl__fault_new_session, 2);
    expire(c);
    WAIT_FOR(zkl_client_state(c) == ZKL_CLIENT_CONNECTED &&
                 zkl_client_session_id(c) != old &&
                 nodes_czxid("mx", &zx) == 1 && nodes_czxid("my", &zy) == 2 &&
                 zx == zy,
             20000);
    CHECK_INT(atomic_load(&zkl__fault_new_session), ==, 0); /* it was hit */
    CHECK_INT(nodes_czxid("mx", &zx), ==, 1);
    CHECK_INT(nodes_czxid("my", &zy), ==, 2);
    CHECK_INT(zx, ==, zy);
    /* still waiting, not ended with the dead handle's code */
    CHECK_INT(atomic_load(async ? &r.rc : &w.rc), ==, 1);
    CHECK_RC(zkl_mutex_unlock(hm), ZKL_OK);
    if (async)
      WAIT_FOR(atomic_load(&r.rc) != 1, 10000);
    else
      pthread_join(t, NULL);
    CHECK_RC(atomic_load(async ? &r.rc : &w.rc), ZKL_OK);
    CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
    CHECK_INT(queue_count("mx") + queue_count("my"), ==, 0);
    zkl_multilock_destroy(ml);
    zkl_mutex_destroy(hm);
    zkl_client_destroy(c);
    zkl_client_destroy(hc);
  }
}

/* A revoke asked on a client whose session just expired, before its new
 * session is made: its listing and its request meet the dead handle
 * (ZSESSIONEXPIRED, or ZINVALIDSTATE once it is closed), wait for the
 * next session and are made there. Before the fix zkl_revoke() returned
 * the dead handle's code (issue 34, part 2); zkl_mutex_queue() and
 * zkl_locks_list() read through the same listing. */
static void test_revoke_expiry_before_new_session(void) {
  zkl_client_t *c = client(4000), *hc = client(10000);
  zkl_mutex_t *hm;
  unsigned forced = 9;
  int64_t old;
  new_root();
  hm = mutex(hc, "rv");
  CHECK_RC(zkl_mutex_lock(hm), ZKL_OK);
  usleep(300 * 1000); /* the holder's node is watched */
  CHECK_RC(zkl_client_wait_connected(c, 10000), ZKL_OK);
  old = zkl_client_session_id(c);
  atomic_store(&zkl__fault_new_session, 2);
  expire(c);
  WAIT_FOR(zkl_client_state(c) != ZKL_CLIENT_CONNECTED, 10000);
  CHECK_RC(zkl_revoke(c, root, "rv", NULL, -1, &forced), ZKL_OK);
  CHECK_INT(forced, ==, 0);
  CHECK(zkl_client_session_id(c) != old);
  WAIT_FOR(zkl_mutex_state(hm) == ZKL_STATE_REVOKE_REQUESTED, 3000);
  CHECK_INT(zkl_mutex_state(hm), ==, ZKL_STATE_REVOKE_REQUESTED);
  {
    zkl_contender_t *q = NULL;
    zkl_lock_info_t *all = NULL;
    size_t n = 0, na = 0;
    old = zkl_client_session_id(c);
    atomic_store(&zkl__fault_new_session, 2);
    expire(c);
    WAIT_FOR(zkl_client_state(c) != ZKL_CLIENT_CONNECTED, 10000);
    CHECK_RC(zkl_mutex_queue(c, root, "rv", &q, &n), ZKL_OK);
    CHECK_INT(n, ==, 1);
    CHECK(zkl_client_session_id(c) != old);
    zkl_contenders_free(q, n);
    old = zkl_client_session_id(c);
    atomic_store(&zkl__fault_new_session, 2);
    expire(c);
    WAIT_FOR(zkl_client_state(c) != ZKL_CLIENT_CONNECTED, 10000);
    CHECK_RC(zkl_locks_list(c, root, &all, &na), ZKL_OK);
    CHECK_INT(na, ==, 1);
    CHECK(zkl_client_session_id(c) != old);
    zkl_locks_free(all, na);
  }
  CHECK_RC(zkl_mutex_unlock(hm), ZKL_OK);
  CHECK_INT(queue_count("rv"), ==, 0);
  atomic_store(&zkl__fault_new_session, 0);
  zkl_mutex_destroy(hm);
  zkl_client_destroy(c);
  zkl_client_destroy(hc);
}

/* The read after the transaction is lost: the set starts over, and the
 * nodes of the first try are found by their guid and deleted. */
static void test_multilock_read_lost(void) {
  zkl_client_t *c = client(10000);
  zkl_multilock_t *ml;
  new_root();
  ml = multi_xy(c);
  atomic_store(&zkl__fault_stat_lost, 1);
  CHECK_RC(zkl_multilock_lock(ml), ZKL_OK);
  CHECK_INT(atomic_load(&zkl__fault_stat_lost), ==, 0);
  WAIT_FOR(queue_count("mx") == 1 && queue_count("my") == 1, 5000);
  CHECK_INT(queue_count("mx"), ==, 1);
  CHECK_INT(queue_count("my"), ==, 1);
  CHECK_RC(zkl_multilock_unlock(ml), ZKL_OK);
  CHECK_INT(queue_count("mx") + queue_count("my"), ==, 0);
  zkl_multilock_destroy(ml);
  zkl_client_destroy(c);
}

/* Group commit (batch.c): one op of a transaction fails, and its
 * neighbours must not. The test takes the session's transaction slot
 * itself, so that everything issued meanwhile leaves as one zoo_amulti
 * when it hands the slot back: two creates (in two directories), each
 * with its listing behind it, a delete of a node that is not there, and a
 * delete of one that is. The missing one gets ZNONODE; the others are
 * applied once, and the listings, asked again behind the transaction that
 * carried their create at last, show it. Then two creates in one
 * directory, issued together: never one transaction, whose one zxid would
 * give both nodes the same fencing token. */
static void batch_slot(zkl__session_t *s) {
  pthread_mutex_lock(&s->bmu);
  s->inflight++; /* as if a transaction were out */
  pthread_mutex_unlock(&s->bmu);
}

/* The test's reference to s goes. */
static void session_let_go(zkl_client_t *c, zkl__session_t *s) {
  pthread_mutex_lock(&c->mu);
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
}

/* c's session, kept for the test, with a transaction "out" on it, so
 * that what is sent next waits in group commit's queue. */
static zkl__session_t *session_with_slot(zkl_client_t *c) {
  zkl__session_t *s;
  pthread_mutex_lock(&c->mu);
  s = c->sess;
  s->refs++;
  pthread_mutex_unlock(&c->mu);
  batch_slot(s);
  return s;
}

static void test_batch_failed_neighbour(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m, *m2;
  zkl__session_t *s;
  zkl__call_t cr[2], ls[2], gone, del, *all[6];
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  char dir[2][256], victim[300], missing[300], node[2][300];
  int i, j, n, found, left;
  new_root();
  m = mutex(c, "batch");
  m2 = mutex(c, "batch2");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* connected; the directories */
  CHECK_RC(zkl_mutex_lock(m2), ZKL_OK);
  for (i = 0; i < 2; i++) {
    snprintf(dir[i], sizeof dir[i], "%s/batch%s", root, i ? "2" : "");
    snprintf(node[i], sizeof node[i], "%s/n-", dir[i]);
  }
  snprintf(victim, sizeof victim, "%s/victim", dir[0]);
  snprintf(missing, sizeof missing, "%s/missing", dir[0]);
  CHECK_INT(zoo_create(admin, victim, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                       NULL, 0),
            ==, ZOK);
  s = session_with_slot(c);
  for (i = 0; i < 2; i++) {
    zkl__call_init(&cr[i], c, &cv);
    zkl__call_init(&ls[i], c, &cv);
  }
  zkl__call_init(&gone, c, &cv);
  zkl__call_init(&del, c, &cv);
  all[0] = &cr[0], all[1] = &ls[0], all[2] = &gone, all[3] = &cr[1];
  all[4] = &ls[1], all[5] = &del;
  zkl__call_batch(all, 6, &left);
  CHECK_INT(zkl__create(&cr[0], s, node[0], NULL, -1,
                        ZOO_EPHEMERAL_SEQUENTIAL),
            ==, ZOK);
  CHECK_INT(zkl__children_after(&ls[0], s, dir[0], &cr[0]), ==, ZOK);
  CHECK_INT(zkl__delete(&gone, s, missing), ==, ZOK);
  CHECK_INT(zkl__create(&cr[1], s, node[1], NULL, -1,
                        ZOO_EPHEMERAL_SEQUENTIAL),
            ==, ZOK);
  CHECK_INT(zkl__children_after(&ls[1], s, dir[1], &cr[1]), ==, ZOK);
  CHECK_INT(zkl__delete(&del, s, victim), ==, ZOK);
  /* held back, all of them, in one transaction */
  CHECK_INT(zkl__batch_queued(s, &n), ==, 4);
  CHECK_INT(n, ==, 1);
  zkl__batch_done(s);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(all, 6);
  pthread_mutex_unlock(&c->mu);
  CHECK_INT(gone.rc, ==, ZNONODE);
  CHECK_INT(del.rc, ==, ZOK);
  CHECK_INT(zoo_exists(admin, victim, 0, NULL), ==, ZNONODE);
  for (i = 0; i < 2; i++) {
    struct Stat st;
    CHECK_INT(cr[i].rc, ==, ZOK);
    CHECK_INT(ls[i].rc, ==, ZOK);
    if (cr[i].rc != ZOK || ls[i].rc != ZOK)
      continue;
    admin_sync(cr[i].path);
    CHECK_INT(zoo_exists(admin, cr[i].path, 0, &st), ==, ZOK);
    CHECK(st.czxid == cr[i].stat.czxid); /* the token the owner keeps */
    for (j = 0, found = 0; j < ls[i].kids.count; j++)
      found += strcmp(ls[i].kids.data[j], strrchr(cr[i].path, '/') + 1) == 0;
    CHECK_INT(found, ==, 1); /* its listing saw it */
  }
  CHECK_INT(queue_count("batch"), ==, 2);  /* the lock's node and one, once */
  CHECK_INT(queue_count("batch2"), ==, 2);
  pthread_mutex_lock(&c->mu);
  for (i = 0; i < 2; i++) {
    zkl__call_free(&cr[i]);
    zkl__call_free(&ls[i]);
    zkl__call_init(&cr[i], c, &cv);
  }
  pthread_mutex_unlock(&c->mu);
  /* two creates in one directory: two transactions, two tokens */
  batch_slot(s);
  all[1] = &cr[1];
  zkl__call_batch(all, 2, &left);
  CHECK_INT(zkl__create(&cr[0], s, node[0], NULL, -1,
                        ZOO_EPHEMERAL_SEQUENTIAL),
            ==, ZOK);
  CHECK_INT(zkl__create(&cr[1], s, node[0], NULL, -1,
                        ZOO_EPHEMERAL_SEQUENTIAL),
            ==, ZOK);
  CHECK_INT(zkl__batch_queued(s, &n), ==, 2);
  CHECK_INT(n, ==, 2);
  zkl__batch_done(s);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(all, 2);
  pthread_mutex_unlock(&c->mu);
  CHECK_INT(cr[0].rc, ==, ZOK);
  CHECK_INT(cr[1].rc, ==, ZOK);
  CHECK(cr[0].stat.czxid != 0 && cr[1].stat.czxid > cr[0].stat.czxid);
  pthread_mutex_lock(&c->mu);
  for (i = 0; i < 2; i++)
    zkl__call_free(&cr[i]);
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_unlock(m2), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(m2);
  zkl_client_destroy(c);
}

/* F5, found by the model (model/semaphore.pml): a semaphore object that
 * agreed with its directory once does not read it again when it joins.
 * The directory is deleted (our release took it along) and made again by
 * a member of another N; our join's listing is then lost. The unsent read
 * of the directory was taken for a directory with no data at version 0:
 * we wrote our max=N over theirs, and were admitted where a member of
 * another N must be refused (ZKL_EMISMATCH). */
static void test_semaphore_listing_lost(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  zkl_semaphore_t *s3 = NULL, *s2 = NULL;
  zkl_semaphore_options_t o = {0};
  zkl_lease_t *l = NULL, *l2 = NULL;
  char path[256], data[64];
  int len = sizeof data - 1;
  new_root();
  o.root = root;
  CHECK_RC(zkl_semaphore_create(&s3, c, "f5", 3, &o), ZKL_OK);
  CHECK_RC(zkl_semaphore_create(&s2, c2, "f5", 2, &o), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(s3, &l), ZKL_OK);
  CHECK_RC(zkl_lease_release(l), ZKL_OK);
  snprintf(path, sizeof path, "%s/f5", root);
  WAIT_FOR(!admin_exists(path), 5000); /* taken along by the release */
  CHECK_RC(zkl_semaphore_acquire(s2, &l2), ZKL_OK); /* max=2 now */
  atomic_store(&zkl__fault_children_lost, 1);
  l = NULL;
  CHECK_RC(zkl_semaphore_timedacquire(s3, zkl_now_ms() + 5000, &l),
           ZKL_EMISMATCH);
  CHECK_INT(atomic_load(&zkl__fault_children_lost), ==, 0); /* it was hit */
  if (l)
    zkl_lease_release(l);
  memset(data, 0, sizeof data);
  CHECK_INT(zoo_get(admin, path, 0, data, &len, NULL), ==, ZOK);
  CHECK_STR(data, "max=2"); /* theirs, untouched */
  CHECK_RC(zkl_lease_release(l2), ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(s3), ZKL_OK);
  CHECK_RC(zkl_semaphore_destroy(s2), ZKL_OK);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
}

/* Issue 34 (found with model/semaphore.pml, BUG_STALE_DIR): a member
 * judges the directory as it was once its node was made. A fresh object
 * reads the directory with its join, before its create; someone rewrites
 * the directory in between; the join's listing, whose stat would have
 * told, is lost. The read from before the create said our N: taken as it
 * was, the member was admitted under a directory that says otherwise by
 * the time its node exists. It reads the directory again instead, and is
 * refused. */
static void test_semaphore_read_then_rewritten(void) {
  zkl_client_t *c = client(10000);
  zkl_semaphore_t *s3 = NULL;
  zkl_semaphore_options_t o = {0};
  zkl_lease_t *l = NULL;
  char path[256], data[64];
  int len = sizeof data - 1;
  new_root();
  o.root = root;
  snprintf(path, sizeof path, "%s/stale", root);
  CHECK_INT(admin_create_in_root(path, "max=3", 5), ==, ZOK);
  CHECK_RC(zkl_semaphore_create(&s3, c, "stale", 3, &o), ZKL_OK);
  atomic_store(&zkl__fault_get_rewritten, 1);
  atomic_store(&zkl__fault_children_lost, 1);
  CHECK_RC(zkl_semaphore_timedacquire(s3, zkl_now_ms() + 5000, &l),
           ZKL_EMISMATCH);
  CHECK_INT(atomic_load(&zkl__fault_get_rewritten), ==, 0); /* it was hit */
  CHECK_INT(atomic_load(&zkl__fault_children_lost), ==, 0);
  if (l)
    zkl_lease_release(l);
  memset(data, 0, sizeof data);
  admin_sync(path);
  CHECK_INT(zoo_get(admin, path, 0, data, &len, NULL), ==, ZOK);
  CHECK_STR(data, "x"); /* the rewrite, untouched */
  CHECK_INT(queue_count("stale"), ==, 0);
  CHECK_RC(zkl_semaphore_destroy(s3), ZKL_OK);
  zkl_client_destroy(c);
  cleanup_tree(path);
}

/* ZOOKEEPER-4537: Debian's 3.8.0 server may commit a transaction and
 * apply it only when the session's next request arrives, and the C client
 * sends no ping while a request is out: the session dies of silence. The
 * proxy plays that server (hold-multi: the answer to the next multi waits
 * for the client's next request). A hold's first release takes its
 * directory along, in one multi, and sends nothing behind it; before the
 * nudge (lib/zk/batch.c) it waited until the client gave up on the silent
 * connection, at 2/3 of the session timeout (4 s here). */
struct released {
  _Atomic int done;
  int rc;
  int64_t at;
};

static void on_released(int rc, void *arg) {
  struct released *r = arg;
  r->rc = rc;
  r->at = zkl_now_ms();
  atomic_store(&r->done, 1);
}

static void test_stalled_multi_nudged(void) {
  const char *via = getenv("ZKL_TEST_PROXY");
  zkl_client_options_t o = {0};
  zkl_client_t *c = NULL;
  zkl_mutex_t *m;
  zkl_hold_t *h = NULL;
  struct seen_cb s = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};
  struct released r = {0};
  uint64_t nudges;
  int64_t t0;
  if (!via) {
    printf("# no ZKL_TEST_PROXY: skipped\n");
    return;
  }
  o.session_timeout_ms = 6000;
  CHECK_RC(zkl_client_create(&c, via, &o), ZKL_OK);
  if (!c)
    return;
  new_root();
  m = mutex(c, "stall");
  /* makes the directory: its own, deleted with the first release */
  CHECK_RC(zkl_mutex_lock_async(m, zkl_now_ms() + 10000, on_hold_cb, &s, &h),
           ZKL_OK);
  WAIT_FOR(cb_calls(&s) == 1, 10000);
  CHECK_INT(s.ok, ==, 1);
  usleep(300000); /* the own-node watch is set: nothing else goes out */
  nudges = atomic_load(&c->nudges);
  CHECK(proxy_ctl("hold-multi", "")); /* taken when the multi passes */
  t0 = zkl_now_ms();
  CHECK_RC(zkl_hold_release_async(h, on_released, &r), ZKL_OK);
  WAIT_FOR(atomic_load(&r.done), 2000);
  CHECK_INT(atomic_load(&r.done), ==, 1); /* before: about 4 s */
  /* when it hung: it ends once the client gives up on the connection */
  WAIT_FOR(atomic_load(&r.done), 20000);
  if (atomic_load(&r.done))
    printf("# released in %lld ms\n", (long long)(r.at - t0));
  CHECK_INT(proxy_ctl("hold-multi", NULL), ==, 0); /* the proxy took it */
  CHECK_RC(r.rc, ZKL_OK);
  CHECK(atomic_load(&c->nudges) > nudges);
  CHECK_INT(queue_count("stall"), ==, 0);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c);
}

/* The same stall on a write that does not go through group commit: a
 * guarded write's transaction (guard.c). Before these writes were counted
 * out too, it hung until the client gave up on the connection. */
static void test_stalled_guarded_nudged(void) {
  const char *via = getenv("ZKL_TEST_PROXY");
  zkl_client_options_t o = {0};
  zkl_client_t *c = NULL;
  zkl_mutex_t *m;
  zkl_op_t op = {0};
  char path[256];
  uint64_t nudges;
  int64_t t0, took;
  if (!via) {
    printf("# no ZKL_TEST_PROXY: skipped\n");
    return;
  }
  o.session_timeout_ms = 6000;
  CHECK_RC(zkl_client_create(&c, via, &o), ZKL_OK);
  if (!c)
    return;
  new_root();
  m = mutex(c, "gstall");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  snprintf(path, sizeof path, "%s/data", root);
  CHECK_INT(admin_create_in_root(path, "0", 1), ==, ZOK);
  usleep(300000); /* the own-node watch is set: nothing else goes out */
  nudges = atomic_load(&c->nudges);
  CHECK(proxy_ctl("hold-multi", "")); /* taken when the multi passes */
  op.type = ZKL_OP_SET;
  op.path = path;
  op.data = "1";
  op.data_len = 1;
  op.version = -1;
  t0 = zkl_now_ms();
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_OK);
  took = zkl_now_ms() - t0;
  printf("# guarded write in %lld ms\n", (long long)took);
  CHECK(took < 2000); /* before: about 4 s, and the connection lost */
  CHECK_INT(proxy_ctl("hold-multi", NULL), ==, 0); /* the proxy took it */
  CHECK(atomic_load(&c->nudges) > nudges);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK);
  zkl_client_destroy(c);
}

/* F8 (model/, groupcommit.pml): a create goes again after its neighbour
 * failed its transaction, and the client refuses that resend. The
 * create's listing, out behind the failed transaction and marked to be
 * asked again, must still be answered: before the fix its answer found
 * the resend freed, and the acquire waited for ever. */
static void test_refused_resend_answers_listing(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  zkl__session_t *s;
  zkl__call_t cr, ls, gone;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  char dir[256], missing[300], node[300];
  int64_t until;
  int done = 0;
  new_root();
  m = mutex(c, "refused");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* connected; the directory */
  snprintf(dir, sizeof dir, "%s/refused", root);
  snprintf(node, sizeof node, "%s/n-", dir);
  snprintf(missing, sizeof missing, "%s/missing", dir);
  s = session_with_slot(c);
  zkl__call_init(&cr, c, &cv);
  zkl__call_init(&ls, c, &cv);
  zkl__call_init(&gone, c, &cv);
  CHECK_INT(zkl__create(&cr, s, node, NULL, -1, ZOO_EPHEMERAL_SEQUENTIAL),
            ==, ZOK);
  CHECK_INT(zkl__children_after(&ls, s, dir, &cr), ==, ZOK);
  CHECK_INT(zkl__delete(&gone, s, missing), ==, ZOK); /* fails: ZNONODE */
  /* the transaction leaves (and fails for `gone`); its resend is refused */
  atomic_store(&zkl__fault_send_refused, 2);
  zkl__batch_done(s);
  until = zkl_now_ms() + 5000;
  while (!done && zkl_now_ms() < until) {
    pthread_mutex_lock(&c->mu);
    done = cr.done && ls.done && gone.done;
    pthread_mutex_unlock(&c->mu);
    if (!done)
      usleep(10000);
  }
  CHECK(done); /* before the fix: the listing never answered */
  CHECK_INT(gone.rc, ==, ZNONODE);
  CHECK_INT(cr.rc, ==, ZSYSTEMERROR); /* the refusal */
  if (done) {
    zkl__call_free(&cr);
    zkl__call_free(&ls);
    zkl__call_free(&gone);
  }
  atomic_store(&zkl__fault_send_refused, 0);
  session_let_go(c, s);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* zookeeper_close flushes a handle's answers (ZCLOSING), and an answer
 * to a transaction used to send what waited behind it on that same
 * handle. Debian's 3.8.0 C client refuses a request on a closing handle
 * and leaks what it allocated for it (a transaction's sub-op entries and
 * its buffer: seen in CI as a LeakSanitizer report from zoo_amulti in
 * zkelect, after a stop past its session timeout). Now nothing queued
 * leaves a closing session: it is answered as the client would answer
 * it, ZINVALIDSTATE, without being sent. On the old code the delete
 * went to the server and said ZNONODE. */
static void test_closing_session_sends_nothing_queued(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  zkl__call_t gone;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  char missing[300];
  int64_t until;
  int done = 0;
  zkl__session_t *s;
  new_root();
  m = mutex(c, "closing");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* connected; the directory */
  snprintf(missing, sizeof missing, "%s/closing/missing", root);
  s = session_with_slot(c);
  zkl__call_init(&gone, c, &cv);
  CHECK_INT(zkl__delete(&gone, s, missing), ==, ZOK); /* queued */
  pthread_mutex_lock(&s->bmu);
  s->closing = 1; /* as zkl__close_dead sets it */
  pthread_mutex_unlock(&s->bmu);
  zkl__batch_done(s); /* the transaction "in flight" answered */
  for (until = zkl_now_ms() + 5000; zkl_now_ms() < until; usleep(10000)) {
    pthread_mutex_lock(&c->mu);
    done = gone.done;
    pthread_mutex_unlock(&c->mu);
    if (done)
      break;
  }
  CHECK(done);
  CHECK_INT(gone.rc, ==, ZINVALIDSTATE);
  if (done)
    zkl__call_free(&gone);
  pthread_mutex_lock(&s->bmu);
  s->closing = 0; /* the handle is not really closing: the test's end */
  pthread_mutex_unlock(&s->bmu);
  session_let_go(c, s);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

struct lock_waiter {
  zkl_mutex_t *m;
  int64_t deadline;
  _Atomic int rc;
};

static void *timedlock_thread(void *arg) {
  struct lock_waiter *w = arg;
  atomic_store(&w->rc, zkl_mutex_timedlock(w->m, w->deadline));
  return NULL;
}

/* F12: a lock object whose first acquire ends before its first listing
 * (here: the listing is lost, and the deadline passes while it waits for
 * a reconnection) may be the last to leave a parent it did not make. Its
 * close reads the parent's mark and deletes it: before the fix it knew
 * nothing of the parent (only a listing or a first-born hold told it),
 * and the empty parent stayed for ever. */
static void test_unlisted_leaves_parent_last(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *x, *y;
  struct lock_waiter w = {0};
  pthread_t t;
  new_root();
  /* a root that stays: the parent is then made plain, in a transaction */
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  x = mutex(c, "unlisted");
  y = mutex(c, "unlisted");
  CHECK_RC(zkl_mutex_lock(x), ZKL_OK); /* makes the parent, first born */
  atomic_store(&zkl__fault_children_lost, 1);
  w.m = y;
  w.deadline = zkl_now_ms() + 3000;
  atomic_store(&w.rc, 1);
  pthread_create(&t, NULL, timedlock_thread, &w);
  QUEUED("unlisted", 2);
  WAIT_FOR(atomic_load(&zkl__fault_children_lost) == 0, 5000);
  CHECK_INT(atomic_load(&zkl__fault_children_lost), ==, 0); /* y's, lost */
  /* x's release cannot take the parent (y's node is in it), nor can its
   * close */
  CHECK_RC(zkl_mutex_unlock(x), ZKL_OK);
  zkl_mutex_destroy(x);
  pthread_join(t, NULL);
  CHECK_RC(atomic_load(&w.rc), ZKL_ETIMEDOUT);
  CHECK_INT(queue_len("unlisted"), ==, 0);
  zkl_mutex_destroy(y); /* the last to leave */
  WAIT_FOR(queue_len("unlisted") == -1, 5000);
  CHECK_INT(queue_len("unlisted"), ==, -1);
  zkl_client_destroy(c);
}

/* A new root, and in it a parent `name` with zklock's mark and no child,
 * as someone else's lock leaves it; its path in dir. */
static void plant_marked(const char *name, char *dir, size_t len) {
  new_root();
  snprintf(dir, len, "%s/%s", root, name);
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
            ==, ZOK);
  CHECK_INT(zoo_create(admin, dir, "zklock-parent", 13, &ZOO_OPEN_ACL_UNSAFE,
                       0, NULL, 0),
            ==, ZOK);
}

/* dir is there with the data zkl__fault_dir_rewritten (or _replaced) put */
static void check_rewritten(const char *dir) {
  char d[16];
  int dl = sizeof d;
  struct Stat st;
  admin_sync(dir); /* the admin's server may lag the writer's */
  CHECK_INT(zoo_get(admin, dir, 0, d, &dl, &st), ==, ZOK);
  CHECK(dl == 1 && d[0] == 'x');
}

/* F10: someone rewrites a marked parent between the close's read of it
 * and the delete (here: a setData the fault sends on the same session
 * just before the delete, which the session's order applies first). The
 * delete is at the version the read found and fails; before the fix it
 * was at any version, and took the parent and its new data along. */
static void test_tidy_spares_rewritten_parent(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char dir[256];
  plant_marked("rewritten", dir, sizeof dir);
  m = mutex(c, "rewritten");
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* the parent's first node */
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_INT(queue_len("rewritten"), ==, 0);
  atomic_store(&zkl__fault_dir_rewritten, 1);
  zkl_mutex_destroy(m); /* reads the mark, then deletes */
  WAIT_FOR(atomic_load(&zkl__fault_dir_rewritten) == 0, 5000);
  CHECK_INT(atomic_load(&zkl__fault_dir_rewritten), ==, 0);
  WAIT_FOR(!admin_exists(dir), 1000); /* the delete, had it landed */
  check_rewritten(dir);
  zkl_client_destroy(c);
}

/* zkl_sweep reads a marked empty parent, then deletes it: data someone
 * writes in between (here: the fault's setData on the sweep's session,
 * just before the delete) keeps it, as at a close (F10). Before, the
 * sweep deleted at any version. */
static void test_sweep_spares_rewritten_parent(void) {
  zkl_client_t *c = client(10000);
  char dir[256];
  size_t removed = 9;
  plant_marked("swept", dir, sizeof dir);
  atomic_store(&zkl__fault_dir_rewritten, 1);
  CHECK_RC(zkl_sweep(c, root, 0, &removed), ZKL_OK);
  CHECK_INT(atomic_load(&zkl__fault_dir_rewritten), ==, 0);
  CHECK_INT((int)removed, ==, 0);
  check_rewritten(dir);
  /* control: the same parent, not rewritten, goes */
  CHECK_INT(zoo_set(admin, dir, "zklock-parent", 13, -1), ==, ZOK);
  CHECK_RC(zkl_sweep(c, root, 0, &removed), ZKL_OK);
  CHECK_INT((int)removed, ==, 1);
  CHECK_INT(admin_exists(dir), ==, 0);
  zkl_client_destroy(c);
}

/* F11: the lock's parent, made by the join as a container (no root yet),
 * is deleted and made again by someone else, with data of theirs, before
 * the join sends its node (here: a delete and a create the fault sends on
 * the same session). Our node is the first in that parent, which is not
 * the one we made: the release must not take it along. Before the fix
 * the join went again unlisted, took its first-born node's parent for
 * its own, and the release deleted it. */
static void test_replaced_parent_not_taken(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char dir[256];
  new_root(); /* not made: the first lock makes it, and its parent */
  snprintf(dir, sizeof dir, "%s/replaced", root);
  m = mutex(c, "replaced");
  atomic_store(&zkl__fault_dir_replaced, 1);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_INT(atomic_load(&zkl__fault_dir_replaced), ==, 0);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  check_rewritten(dir);
  zkl_mutex_destroy(m);
  (void)zoo_delete(admin, dir, -1);
  zkl_client_destroy(c);
}

int main(void) {
  root_tag = "zklfaults";
  admin_open();
  RUN(test_create_name_not_kept);
  RUN(test_unlock_read_lost);
  RUN(test_new_handle_retried_calmly);
  RUN(test_async_through_expiry);
  RUN(test_multilock_through_expiry);
  RUN(test_multilock_expiry_before_new_session);
  RUN(test_revoke_expiry_before_new_session);
  RUN(test_multilock_read_lost);
  RUN(test_batch_failed_neighbour);
  RUN(test_refused_resend_answers_listing);
  RUN(test_closing_session_sends_nothing_queued);
  RUN(test_unlisted_leaves_parent_last);
  RUN(test_tidy_spares_rewritten_parent);
  RUN(test_sweep_spares_rewritten_parent);
  RUN(test_replaced_parent_not_taken);
  RUN(test_multi_on_expired_handle);
  RUN(test_semaphore_listing_lost);
  RUN(test_semaphore_read_then_rewritten);
  RUN(test_stalled_multi_nudged);
  RUN(test_stalled_guarded_nudged);
  admin_close();
  return CHECK_DONE();
}
