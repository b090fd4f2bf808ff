/* SPDX-License-Identifier: Apache-2.0 */
/* test_rwlock.c: the read-write lock against a real ensemble
 * (ZKL_TEST_SERVERS), each test under its own root, each contender on its
 * own client, so that request counts are per contender. */
#include <stdatomic.h>
#include <stdint.h>

#include "admin.h"

static zkl_rwlock_t *rwlock(zkl_client_t *c, const char *name,
                            unsigned flags) {
  zkl_rwlock_t *rw = NULL;
  zkl_rwlock_options_t o = {0};
  o.root = root;
  o.flags = flags;
  CHECK_RC(zkl_rwlock_create(&rw, c, name, &o), ZKL_OK);
  return rw;
}

/* A contender on its own thread and client: it acquires (read or write),
 * says so, holds until told, releases, and ends. */
struct job {
  zkl_client_t *c;
  zkl_rwlock_t *rw;
  int write;
  int downgrade; /* downgrade when told, then hold read until told again */
  int rc, unlock_rc;
  _Atomic int held, go, downgraded;
  uint64_t req_before, req_held; /* the client's requests around the wait */
  pthread_t t;
};

static void *job_main(void *arg) {
  struct job *j = arg;
  j->req_before = zkl_client_request_count(j->c);
  j->rc = j->write ? zkl_rwlock_wrlock(j->rw) : zkl_rwlock_rdlock(j->rw);
  j->req_held = zkl_client_request_count(j->c);
  atomic_store(&j->held, 1);
  if (j->rc != ZKL_OK)
    return NULL;
  if (j->downgrade) {
    while (!atomic_load(&j->go))
      usleep(2000);
    atomic_store(&j->go, 0);
    CHECK_RC(zkl_rwlock_downgrade(j->rw), ZKL_OK);
    atomic_store(&j->downgraded, 1);
  }
  while (!atomic_load(&j->go))
    usleep(2000);
  j->unlock_rc = j->write && !j->downgrade ? zkl_rwlock_wrunlock(j->rw)
                                           : zkl_rwlock_rdunlock(j->rw);
  return NULL;
}

/* write: 0 read, 1 write, 2 write then downgrade when told */
static void job_start(struct job *j, const char *name, int write) {
  memset(j, 0, sizeof *j);
  j->c = client(10000);
  j->rw = rwlock(j->c, name, 0);
  j->write = write > 0;
  j->downgrade = write == 2;
  pthread_create(&j->t, NULL, job_main, j);
}

static void job_end(struct job *j) {
  atomic_store(&j->go, 1);
  pthread_join(j->t, NULL);
  CHECK_RC(j->rc, ZKL_OK);
  CHECK_RC(j->unlock_rc, ZKL_OK);
  CHECK_RC(zkl_rwlock_destroy(j->rw), ZKL_OK);
  CHECK_RC(zkl_client_destroy(j->c), ZKL_OK);
}

static void test_readers_share_writers_exclude(void) {
  struct job r1, r2;
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  zkl_mutex_t *m;
  zkl_contender_t *list = NULL;
  size_t n = 0;
  new_root();
  rw = rwlock(c, "rw", 0);
  m = mutex(c, "rw");
  job_start(&r1, "rw", 0);
  job_start(&r2, "rw", 0);
  WAIT_FOR(atomic_load(&r1.held) && atomic_load(&r2.held), 5000);
  CHECK(atomic_load(&r1.held) && atomic_load(&r2.held));
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY); /* a mutex is a writer */
  CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_OK);
  CHECK_RC(zkl_mutex_queue(c, root, "rw", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 3);
  while (n)
    CHECK_INT(list[--n].mode, ==, ZKL_MODE_SHARED);
  zkl_contenders_free(list, 3);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  job_end(&r1);
  job_end(&r2);
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_OK);
  CHECK_RC(zkl_mutex_queue(c, root, "rw", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 1);
  if (n == 1) {
    CHECK(strstr(list[0].node, "__WRIT__") != NULL);
    CHECK_INT(list[0].mode, ==, ZKL_MODE_EXCLUSIVE);
  }
  zkl_contenders_free(list, n);
  /* a reader waits for the writer; so does a mutex of the same name */
  job_start(&r1, "rw", 0);
  QUEUED("rw", 2);
  CHECK(!atomic_load(&r1.held));
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  WAIT_FOR(atomic_load(&r1.held), 5000);
  CHECK(atomic_load(&r1.held));
  CHECK_RC(zkl_mutex_trylock(m), ZKL_EBUSY);
  job_end(&r1);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  CHECK_INT(queue_count("rw"), ==, 0);
  zkl_client_destroy(c);
}

/* Reentrancy in both modes costs no request; an upgrade is refused at
 * once, sending nothing; a read while holding write costs nothing. */
static void test_reentrancy_and_upgrade(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  unsigned rd, wr;
  uint64_t before, t1, t2;
  int64_t t0;
  int i;
  new_root();
  rw = rwlock(c, "re", 0);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_ENOTOWNER);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  before = zkl_client_request_count(c);
  for (i = 0; i < 1000; i++) {
    CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
    CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_OK);
  }
  t0 = zkl_now_ms();
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_EDEADLK);
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_EDEADLK);
  CHECK_RC(zkl_rwlock_timedwrlock(rw, zkl_now_ms() + 5000), ZKL_EDEADLK);
  CHECK(zkl_now_ms() - t0 < 100);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ENOTOWNER);
  CHECK_RC(zkl_rwlock_downgrade(rw), ZKL_ENOTOWNER);
  zkl_rwlock_depth(rw, &rd, &wr);
  CHECK_INT(rd, ==, 2001);
  CHECK_INT(wr, ==, 0);
  for (i = 0; i < 2000; i++)
    CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c), ==, before);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_INT(queue_count("re"), ==, 0);

  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_token(rw, &t1), ZKL_OK);
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_downgrade(rw), ZKL_EBUSY); /* write held twice */
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c), ==, before);
  /* the last write level goes while a read level stays: a downgrade,
   * one write */
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 1);
  zkl_rwlock_depth(rw, &rd, &wr);
  CHECK_INT(rd, ==, 1);
  CHECK_INT(wr, ==, 0);
  CHECK_RC(zkl_rwlock_token(rw, &t2), ZKL_OK);
  CHECK_INT(t1, ==, t2); /* the node, and its token, stay */
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_EDEADLK);
  CHECK_RC(zkl_rwlock_verify(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_NONE);
  CHECK_INT(queue_count("re"), ==, 0);
  /* an uncontended cycle in either mode: 1 round trip each way, the
   * parent made and taken along in our node's transactions (5 ops) */
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 5);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
}

/* A write hold deleted by someone else: a read level over it (the Java
 * way to downgrade) reports the loss instead of adding to it, and the
 * release that follows says ZKL_ELOST too. */
static void test_lost_write_hold(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  char path[256];
  new_root();
  rw = rwlock(c, "gone", 0);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_node_path(rw, path, sizeof path), ZKL_OK);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  CHECK_RC(zkl_rwlock_verify(rw), ZKL_ELOST);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_ELOST);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ELOST);
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK); /* the object is usable again */
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
}

/* A downgrade writes its mark at the version it knows: 0 for a node that
 * was not its parent's first. Someone who deleted our node and made it
 * again at our name (at version 0 too) gets the write, and the stat it
 * answers with is theirs: the hold is lost, and that node, now at the
 * version the unlock's guard would check, is never taken for ours. Before
 * the fix the downgrade learnt that version, and the read unlock deleted
 * their node and said OK. */
static void test_downgrade_on_node_made_again(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  char dir[256], junk[300], path[256];
  struct Stat st;
  new_root();
  /* a parent that had a child already: our node is not its first */
  snprintf(dir, sizeof dir, "%s/again", root);
  snprintf(junk, sizeof junk, "%s/junk", dir);
  CHECK_INT(admin_create_in_root(dir, NULL, -1), ==, ZOK);
  CHECK_INT(zoo_create(admin, junk, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ==, ZOK);
  CHECK_INT(zoo_delete(admin, junk, -1), ==, ZOK);
  rw = rwlock(c, "again", 0);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_node_path(rw, path, sizeof path), ZKL_OK);
  CHECK_INT(zoo_exists(admin, path, 0, &st), ==, ZOK);
  CHECK_INT(st.version, ==, 0);
  CHECK_INT(replace_node(path, 0), ==, ZOK); /* persistent, the admin's */
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);   /* a level, no request */
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ELOST);
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_NONE);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_ENOTOWNER);
  CHECK_INT(zoo_exists(admin, path, 0, &st), ==, ZOK); /* theirs stays */
  CHECK_INT(st.ephemeralOwner, ==, 0);
  CHECK_INT(zoo_delete(admin, path, -1), ==, ZOK);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
}

/* FIFO: a reader never passes a writer queued before it. */
static void test_no_writer_starvation(void) {
  struct job r1, w, r2;
  new_root();
  job_start(&r1, "fifo", 0);
  WAIT_FOR(atomic_load(&r1.held), 5000);
  job_start(&w, "fifo", 1);
  QUEUED("fifo", 2);
  job_start(&r2, "fifo", 0);
  QUEUED("fifo", 3);
  usleep(200 * 1000);
  CHECK(!atomic_load(&w.held));
  CHECK(!atomic_load(&r2.held)); /* behind the writer, although r1 reads */
  job_end(&r1);
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK(atomic_load(&w.held));
  usleep(100 * 1000);
  CHECK(!atomic_load(&r2.held));
  job_end(&w);
  WAIT_FOR(atomic_load(&r2.held), 5000);
  job_end(&r2);
  CHECK_INT(queue_count("fifo"), ==, 0);
}

/* A downgrade lets in the readers right behind the writer, and nobody
 * else: not the writer queued next, not the reader behind that writer. */
static void test_downgrade_is_atomic(void) {
  struct job w, r1, w2, r2;
  new_root();
  job_start(&w, "dg", 2);
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK(atomic_load(&w.held));
  job_start(&r1, "dg", 0);
  QUEUED("dg", 2);
  job_start(&w2, "dg", 1);
  QUEUED("dg", 3);
  job_start(&r2, "dg", 0);
  QUEUED("dg", 4);
  atomic_store(&w.go, 1); /* downgrade */
  WAIT_FOR(atomic_load(&w.downgraded), 5000);
  CHECK(atomic_load(&w.downgraded));
  WAIT_FOR(atomic_load(&r1.held), 5000);
  CHECK(atomic_load(&r1.held));
  usleep(200 * 1000);
  CHECK(!atomic_load(&w2.held));
  CHECK(!atomic_load(&r2.held));
  {
    zkl_contender_t *list = NULL;
    size_t n = 0;
    zkl_client_t *c = client(10000);
    CHECK_RC(zkl_mutex_queue(c, root, "dg", &list, &n), ZKL_OK);
    CHECK_INT(n, ==, 4);
    if (n == 4) {
      CHECK(strstr(list[0].node, "__WRIT__") != NULL);
      CHECK_INT(list[0].mode, ==, ZKL_MODE_SHARED); /* downgraded */
      CHECK_INT(list[1].mode, ==, ZKL_MODE_SHARED);
      CHECK_INT(list[2].mode, ==, ZKL_MODE_EXCLUSIVE);
      CHECK_INT(list[3].mode, ==, ZKL_MODE_SHARED);
    }
    zkl_contenders_free(list, n);
    zkl_client_destroy(c);
  }
  job_end(&w);
  usleep(100 * 1000);
  CHECK(!atomic_load(&w2.held));
  job_end(&r1);
  WAIT_FOR(atomic_load(&w2.held), 5000);
  CHECK(atomic_load(&w2.held));
  CHECK(!atomic_load(&r2.held));
  job_end(&w2);
  WAIT_FOR(atomic_load(&r2.held), 5000);
  job_end(&r2);
  CHECK_INT(queue_count("dg"), ==, 0);
}

/* A writer behind a group of readers watches them all at once and takes
 * the lock when the last goes, with no new listing: its directory (the
 * object's first use) + create + list, a watch on its own node, one read
 * per reader. */
static void test_writer_watches_reader_group(void) {
  enum { K = 3 };
  struct job r[K], w;
  int i;
  new_root();
  for (i = 0; i < K; i++)
    job_start(&r[i], "grp", 0);
  for (i = 0; i < K; i++)
    WAIT_FOR(atomic_load(&r[i].held), 5000);
  job_start(&w, "grp", 1);
  QUEUED("grp", K + 1);
  for (i = 0; i < K; i++) {
    usleep(50 * 1000);
    CHECK(!atomic_load(&w.held));
    job_end(&r[i]);
  }
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK(atomic_load(&w.held));
  CHECK_INT(w.req_held - w.req_before, ==, 1 + 2 + 1 + K);
  job_end(&w);
}

/* A reader watches the nearest writer before it, not the first: the
 * first writer's release does not wake it. */
static void test_reader_watches_nearest_writer(void) {
  struct job w1, w2, r;
  uint64_t mid;
  new_root();
  job_start(&w1, "near", 1);
  WAIT_FOR(atomic_load(&w1.held), 5000);
  job_start(&w2, "near", 1);
  QUEUED("near", 2);
  job_start(&r, "near", 0);
  QUEUED("near", 3);
  mid = requests_settled(r.c); /* its listing and watches are sent */
  job_end(&w1);
  WAIT_FOR(atomic_load(&w2.held), 5000);
  CHECK(atomic_load(&w2.held));
  usleep(100 * 1000);
  CHECK_INT(zkl_client_request_count(r.c), ==, mid); /* not woken */
  CHECK(!atomic_load(&r.held));
  job_end(&w2);
  WAIT_FOR(atomic_load(&r.held), 5000);
  CHECK(atomic_load(&r.held));
  job_end(&r);
}

/* Writes `data` over the node of root/name whose name has `marker`, as
 * a co-tenant with the default open ACL may; the number of nodes written. */
static int forge(const char *name, const char *marker, const char *data) {
  char path[512];
  struct String_vector v;
  int i, n = 0;
  snprintf(path, sizeof path, "%s/%s", root, name);
  admin_sync(path);
  if (zoo_get_children(admin, path, 0, &v) != ZOK)
    return 0;
  for (i = 0; i < v.count; i++) {
    char node[600];
    if (!strstr(v.data[i], marker))
      continue;
    snprintf(node, sizeof node, "%s/%s", path, v.data[i]);
    n += zoo_set(admin, node, data, (int)strlen(data), -1) == ZOK;
  }
  deallocate_String_vector(&v);
  return n;
}

/* A co-tenant writing the downgrade mark into a writer's node lets a
 * waiting reader in (it trusts the mark), and the writer is told: LOST at
 * once, and verify, guarded writes and unlock say so; its node is
 * deleted, as it is ours but no hold. Before: HELD, verify OK, the
 * guarded write landed, wrunlock ZKL_OK. */
static void test_forged_mark_ends_the_hold(void) {
  struct job r;
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  char gpath[512];
  zkl_op_t op = {0};
  new_root();
  rw = rwlock(c, "forged", 0);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  job_start(&r, "forged", 0);
  QUEUED("forged", 2);
  CHECK_INT(forge("forged", "__WRIT__", "zklock 1\nmode=read\n\n"), ==, 1);
  WAIT_FOR(zkl_rwlock_state(rw) == ZKL_STATE_LOST, 5000);
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_LOST);
  WAIT_FOR(atomic_load(&r.held), 5000);
  CHECK(atomic_load(&r.held));
  /* the reader's node alone, once the LOST node's delete (sent at once,
   * not waited for) has landed */
  WAIT_FOR(queue_len("forged") == 1, 5000);
  CHECK_INT(queue_len("forged"), ==, 1);
  CHECK_RC(zkl_rwlock_verify(rw), ZKL_ELOST);
  snprintf(gpath, sizeof gpath, "%s/guarded", root);
  op.type = ZKL_OP_CREATE;
  op.path = gpath;
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, 0), ZKL_ELOST);
  CHECK(!admin_exists(gpath));
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ELOST);
  job_end(&r);
  WAIT_FOR(queue_count("forged") == 0, 5000); /* the delete of a LOST node */
  CHECK_INT(queue_count("forged"), ==, 0);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
}

/* The same rewrite found by a guarded write before any watch could tell:
 * the write checks the version of the data as we last found it, so it
 * lands nothing either; a revoker's request moves the version too, and
 * the write goes through after one read. */
static void test_forged_mark_refuses_guarded_write(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  zkl_rwlock_options_t o = {0};
  char gpath[512], npath[600], data[256];
  zkl_op_t op = {0};
  int len = (int)sizeof data - 1;
  new_root();
  o.root = root;
  o.flags = ZKL_MUTEX_NO_NODE_WATCH; /* nothing tells it but the check */
  CHECK_RC(zkl_rwlock_create(&rw, c, "fg", &o), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_node_path(rw, npath, sizeof npath), ZKL_OK);
  /* a revoker's line is no forgery: the write lands */
  CHECK_INT(zoo_get(admin, npath, 0, data, &len, NULL), ==, ZOK);
  data[len] = '\0';
  {
    char merged[300];
    snprintf(merged, sizeof merged, "zklock 1\nrevoke=abc,5\n%s", data + 9);
    CHECK_INT(zoo_set(admin, npath, merged, (int)strlen(merged), -1), ==, ZOK);
  }
  snprintf(gpath, sizeof gpath, "%s/g1", root);
  op.type = ZKL_OP_CREATE;
  op.path = gpath;
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, 0), ZKL_OK);
  CHECK(admin_exists(gpath));
  CHECK_INT(forge("fg", "__WRIT__", "zklock 1\nmode=read\n\n"), ==, 1);
  snprintf(gpath, sizeof gpath, "%s/g2", root);
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, 0), ZKL_ELOST);
  CHECK(!admin_exists(gpath));
  CHECK_INT(zkl_rwlock_state(rw), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ELOST);
  WAIT_FOR(queue_count("fg") == 0, 5000); /* the delete of a LOST node */
  CHECK_INT(queue_count("fg"), ==, 0);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  zkl_client_destroy(c);
}

/* A waiting writer's node rewritten with the mark: that writer stops
 * waiting (ZKL_EREVOKED) and its node goes; the reader behind it still
 * waits for the writer that really holds. */
static void test_forged_waiting_node(void) {
  struct job w1, w2, r;
  char path[512], node[600];
  struct String_vector v;
  int i, newest = -1;
  new_root();
  job_start(&w1, "mark", 1);
  WAIT_FOR(atomic_load(&w1.held), 5000);
  job_start(&w2, "mark", 1);
  QUEUED("mark", 2);
  job_start(&r, "mark", 0);
  QUEUED("mark", 3);
  usleep(150 * 1000); /* w2's watch on its own node is set by now */
  snprintf(path, sizeof path, "%s/mark", root);
  admin_sync(path);
  CHECK_INT(zoo_get_children(admin, path, 0, &v), ==, ZOK);
  for (i = 0; i < v.count; i++) /* w2's: the writer with the larger sequence */
    if (strstr(v.data[i], "__WRIT__") &&
        (newest < 0 || strcmp(strrchr(v.data[i], '_'),
                              strrchr(v.data[newest], '_')) > 0))
      newest = i;
  CHECK(newest >= 0);
  snprintf(node, sizeof node, "%s/%s", path, newest >= 0 ? v.data[newest] : "");
  deallocate_String_vector(&v);
  CHECK_INT(zoo_set(admin, node, "zklock 1\nmode=read\n\n", 20, -1), ==, ZOK);
  WAIT_FOR(atomic_load(&w2.held), 5000);
  CHECK_RC(w2.rc, ZKL_EREVOKED);
  atomic_store(&w2.go, 1);
  pthread_join(w2.t, NULL);
  CHECK_RC(zkl_rwlock_destroy(w2.rw), ZKL_OK);
  CHECK_RC(zkl_client_destroy(w2.c), ZKL_OK);
  QUEUED("mark", 2);
  usleep(200 * 1000);
  CHECK(!atomic_load(&r.held));
  job_end(&w1);
  WAIT_FOR(atomic_load(&r.held), 5000);
  job_end(&r);
  CHECK_INT(queue_count("mark"), ==, 0);
}

/* The listing of n contenders of `name`, checked to hold as `want` says
 * (1 holds, 0 waits), in queue order. */
static void check_holds(const char *name, size_t n, const int *want) {
  zkl_contender_t *list = NULL;
  size_t k = 0, i;
  zkl_client_t *c = client(10000);
  CHECK_RC(zkl_mutex_queue(c, root, name, &list, &k), ZKL_OK);
  CHECK_INT(k, ==, n);
  for (i = 0; i < k && i < n; i++)
    CHECK_INT(list[i].holds, ==, want[i]);
  zkl_contenders_free(list, k);
  zkl_client_destroy(c);
}

/* Issue 23 (6b): the listing says a reader let in by a downgrade holds,
 * as the reader itself found; the writer queued next and the reader
 * behind it still wait. */
static void test_listing_holds_after_downgrade(void) {
  struct job w, r1, w2, r2;
  static const int before[] = {1, 0, 0, 0}, after[] = {1, 1, 0, 0};
  new_root();
  job_start(&w, "dgl", 2);
  WAIT_FOR(atomic_load(&w.held), 5000);
  job_start(&r1, "dgl", 0);
  QUEUED("dgl", 2);
  job_start(&w2, "dgl", 1);
  QUEUED("dgl", 3);
  job_start(&r2, "dgl", 0);
  QUEUED("dgl", 4);
  check_holds("dgl", 4, before);
  atomic_store(&w.go, 1); /* downgrade */
  WAIT_FOR(atomic_load(&r1.held), 5000);
  CHECK(atomic_load(&r1.held));
  check_holds("dgl", 4, after);
  job_end(&w);
  job_end(&r1);
  WAIT_FOR(atomic_load(&w2.held), 5000);
  job_end(&w2);
  WAIT_FOR(atomic_load(&r2.held), 5000);
  job_end(&r2);
}

/* Issue 23 (6a): after a downgrade, another client's tryrdlock gets in,
 * as its timedrdlock does at once: both read the writer's mark. Before
 * the downgrade both say no; a trywrlock still says no after it. */
static void test_try_agrees_after_downgrade(void) {
  struct job w;
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  static const int three[] = {1, 1, 1};
  new_root();
  rw = rwlock(c, "dgt", 0);
  job_start(&w, "dgt", 2);
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_EBUSY);
  CHECK_RC(zkl_rwlock_timedrdlock(rw, zkl_now_ms() + 100), ZKL_ETIMEDOUT);
  atomic_store(&w.go, 1); /* downgrade */
  WAIT_FOR(atomic_load(&w.downgraded), 5000);
  CHECK(atomic_load(&w.downgraded));
  CHECK_RC(zkl_rwlock_trywrlock(rw), ZKL_EBUSY);
  CHECK_RC(zkl_rwlock_timedrdlock(rw, zkl_now_ms() + 2000), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_OK);
  {
    /* and a second reader, on its own client, beside the first */
    zkl_client_t *c2 = client(10000);
    zkl_rwlock_t *rw2 = rwlock(c2, "dgt", 0);
    CHECK_RC(zkl_rwlock_tryrdlock(rw2), ZKL_OK);
    check_holds("dgt", 3, three);
    CHECK_RC(zkl_rwlock_rdunlock(rw2), ZKL_OK);
    zkl_rwlock_destroy(rw2);
    zkl_client_destroy(c2);
  }
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  job_end(&w);
  CHECK_INT(queue_count("dgt"), ==, 0);
  zkl_rwlock_destroy(rw);
  zkl_client_destroy(c);
}

/* Timed and cancelled waits leave nothing behind, in both modes. */
static void test_timed_and_cancel(void) {
  struct job w;
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw;
  new_root();
  rw = rwlock(c, "tc", 0);
  job_start(&w, "tc", 1);
  WAIT_FOR(atomic_load(&w.held), 5000);
  CHECK_RC(zkl_rwlock_timedrdlock(rw, zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_rwlock_timedwrlock(rw, zkl_now_ms() + 300), ZKL_ETIMEDOUT);
  CHECK_RC(zkl_rwlock_tryrdlock(rw), ZKL_EBUSY);
  CHECK_INT(queue_len("tc"), ==, 1);
  job_end(&w);
  CHECK_RC(zkl_rwlock_timedrdlock(rw, zkl_now_ms() + 3000), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_cancel(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  CHECK_INT(queue_count("tc"), ==, 0);
  zkl_client_destroy(c);
}

/* kazoo's naming, chosen by a flag; and bad arguments. */
static void test_kazoo_names_and_bad_input(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw = NULL;
  zkl_rwlock_options_t o = {0};
  char path[256];
  struct String_vector v;
  new_root();
  rw = rwlock(c, "kz", ZKL_RWLOCK_KAZOO);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  snprintf(path, sizeof path, "%s/kz", root);
  admin_sync(path); /* the admin's server may not have our create yet */
  CHECK_INT(zoo_get_children(admin, path, 0, &v), ==, ZOK);
  CHECK_INT(v.count, ==, 1);
  if (v.count == 1)
    CHECK(strstr(v.data[0], "__rlock__") != NULL);
  deallocate_String_vector(&v);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  admin_sync(path);
  CHECK_INT(zoo_get_children(admin, path, 0, &v), ==, ZOK);
  if (v.count == 1)
    CHECK(strstr(v.data[0], "__lock__") != NULL);
  deallocate_String_vector(&v);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_EINVAL);
  o.flags = 1u << 7;
  CHECK_RC(zkl_rwlock_create(&rw, c, "x", &o), ZKL_EINVAL);
  CHECK(rw == NULL);
  CHECK_RC(zkl_rwlock_create(&rw, c, "a/b", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_rwlock_create(NULL, c, "x", NULL), ZKL_EINVAL);
  CHECK_RC(zkl_rwlock_rdlock(NULL), ZKL_EINVAL);
  CHECK_RC(zkl_rwlock_wrunlock(NULL), ZKL_EINVAL);
  CHECK_INT(zkl_rwlock_state(NULL), ==, ZKL_STATE_NONE);
  zkl_client_destroy(c);
}

int main(void) {
  admin_open();
  RUN(test_readers_share_writers_exclude);
  RUN(test_reentrancy_and_upgrade);
  RUN(test_lost_write_hold);
  RUN(test_downgrade_on_node_made_again);
  RUN(test_no_writer_starvation);
  RUN(test_downgrade_is_atomic);
  RUN(test_writer_watches_reader_group);
  RUN(test_reader_watches_nearest_writer);
  RUN(test_forged_mark_ends_the_hold);
  RUN(test_forged_mark_refuses_guarded_write);
  RUN(test_forged_waiting_node);
  RUN(test_listing_holds_after_downgrade);
  RUN(test_try_agrees_after_downgrade);
  RUN(test_timed_and_cancel);
  RUN(test_kazoo_names_and_bad_input);
  admin_close();
  return CHECK_DONE();
}
