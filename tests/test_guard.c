/* SPDX-License-Identifier: Apache-2.0 */
/* test_guard.c: writes guarded by a hold, against a real ensemble
 * (ZKL_TEST_SERVERS): they land while the hold is ours, never after it
 * was lost (deleted by someone, or a holder paused past its session),
 * they commit with the release as one step, and every recipe's hold can
 * guard them. */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "admin.h"

/* The data of path as the admin reads it ("" when none, "-" when no
 * node). */
static const char *admin_data(const char *path, char *buf, int size) {
  int len = size - 1, rc;
  admin_sync(path);
  rc = zoo_get(admin, path, 0, buf, &len, NULL);
  if (rc != ZOK)
    return "-";
  buf[len < 0 ? 0 : len] = '\0';
  return buf;
}

static zkl_op_t op_set(const char *path, const char *data, int version) {
  zkl_op_t o = {0};
  o.type = ZKL_OP_SET;
  o.path = path;
  o.data = data;
  o.data_len = strlen(data);
  o.version = version;
  return o;
}

static zkl_op_t op_create(const char *path, const char *data, unsigned flags,
                          char *out, size_t out_size) {
  zkl_op_t o = {0};
  o.type = ZKL_OP_CREATE;
  o.path = path;
  o.data = data;
  o.data_len = data ? strlen(data) : 0;
  o.create_flags = flags;
  o.created = out;
  o.created_size = out_size;
  return o;
}

/* Creates, sets and checks in one round trip, and reports what it did. */
static void test_commit(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char state[192], made[192], seqd[192], seq_made[208], buf[64];
  zkl_op_t ops[4];
  uint64_t before;
  new_root();
  m = mutex(c, "commit");
  snprintf(state, sizeof state, "%s/state", root);
  snprintf(seqd, sizeof seqd, "%s/item-", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  ops[0] = op_create(state, "v1", 0, made, sizeof made);
  ops[1] = op_set(state, "v2", 0);
  ops[2] = op_create(seqd, "x", ZKL_CREATE_SEQUENTIAL, seq_made,
                     sizeof seq_made);
  memset(&ops[3], 0, sizeof ops[3]);
  ops[3].type = ZKL_OP_CHECK;
  ops[3].path = state;
  ops[3].version = 1;
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_guarded(m, ops, 4, 0), ZKL_OK);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 1);
  CHECK_INT(ops[0].rc, ==, ZOK);
  CHECK_INT(ops[3].rc, ==, ZOK);
  CHECK_STR(made, state);
  CHECK_INT(ops[1].new_version, ==, 1);
  CHECK_INT((int)strlen(seq_made), ==, (int)strlen(seqd) + 10);
  CHECK(strncmp(seq_made, seqd, strlen(seqd)) == 0);
  CHECK_STR(admin_data(state, buf, sizeof buf), "v2");
  CHECK_STR(admin_data(seq_made, buf, sizeof buf), "x");
  /* a check alone: n == 0 */
  CHECK_RC(zkl_mutex_guarded(m, NULL, 0, 0), ZKL_OK);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_guarded(m, NULL, 0, 0), ZKL_ENOTOWNER);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* One op refused: none lands, each op says what became of it, and the
 * hold stands. */
static void test_refused(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char state[192], other[192], buf[64];
  zkl_op_t ops[3];
  new_root();
  m = mutex(c, "refused");
  snprintf(state, sizeof state, "%s/state", root);
  snprintf(other, sizeof other, "%s/other", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK); /* makes the root */
  CHECK_INT(zoo_create(admin, state, "old", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                       0), ==, ZOK);
  ops[0] = op_create(other, "o", 0, NULL, 0);
  ops[1] = op_set(state, "new", 7); /* wrong version */
  ops[2] = op_set(state, "newer", -1);
  CHECK_RC(zkl_mutex_guarded(m, ops, 3, 0), ZBADVERSION);
  CHECK_INT(ops[0].rc, ==, ZOK);
  CHECK_INT(ops[1].rc, ==, ZBADVERSION);
  CHECK_INT(ops[2].rc, ==, ZRUNTIMEINCONSISTENCY);
  CHECK_STR(admin_data(state, buf, sizeof buf), "old");
  CHECK_STR(admin_data(other, buf, sizeof buf), "-");
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

/* Someone deletes the hold's node: the write does not land. Without the
 * node watch the client cannot know before sending: the transaction's
 * check refuses it. With it the loss is known and nothing is sent. */
static void deleted(unsigned flags) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char state[192], node[256], buf[64];
  zkl_op_t op;
  uint64_t before;
  new_root();
  m = mutex_with(c, "deleted", flags, NULL);
  snprintf(state, sizeof state, "%s/state", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  if (!flags)
    usleep(300 * 1000); /* the node watch is set after 100 ms */
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  if (!flags)
    WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 3000);
  op = op_create(state, "late", 0, NULL, 0);
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_ELOST);
  CHECK_INT(zkl_client_request_count(c) - before, ==, flags ? 1 : 0);
  CHECK_STR(admin_data(state, buf, sizeof buf), "-");
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_ELOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}
static void test_deleted_unwatched(void) { deleted(ZKL_MUTEX_NO_NODE_WATCH); }
static void test_deleted_watched(void) { deleted(0); }

/* The paused holder: a process holds, is stopped past its session
 * timeout, and another takes the lock and writes. Resumed, the old
 * holder's write (retried while the answer is only a lost connection)
 * ends in ZKL_ELOST and never lands. The holder is this program run
 * again (main: "paused-child", from argv[0]: under valgrind
 * /proc/self/exe is valgrind's): a child that only forks would inherit
 * the locks of the threads it left behind (glibc's getaddrinfo's, held
 * by a ZooKeeper thread, hung it). */
static const char *self_path;
static void child_holder(const char *name, int from_parent, int to_parent) {
  zkl_client_t *c;
  zkl_mutex_t *m;
  char state[192], go;
  zkl_op_t op;
  int rc;
  int64_t until;
  c = client(4000);
  m = mutex_with(c, name, 0, NULL);
  snprintf(state, sizeof state, "%s/state", root);
  if (zkl_mutex_lock(m) != ZKL_OK)
    _exit(2);
  if (write(to_parent, "h", 1) != 1 || read(from_parent, &go, 1) != 1)
    _exit(3);
  /* here the parent stopped us, then let us go */
  op = op_set(state, "stale", -1);
  until = zkl_now_ms() + 20000;
  do {
    rc = zkl_mutex_guarded(m, &op, 1, 0);
    if (rc != ZKL_OK && rc != ZKL_ELOST)
      usleep(50 * 1000);
  } while (rc != ZKL_OK && rc != ZKL_ELOST && zkl_now_ms() < until);
  zkl_mutex_unlock(m);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  _exit(rc == ZKL_ELOST ? 0 : rc == ZKL_OK ? 10 : 11);
}

static void test_paused_holder(void) {
  int down[2], up[2], status = -1;
  char h, buf[64], state[192];
  pid_t pid;
  new_root();
  snprintf(state, sizeof state, "%s/state", root);
  CHECK_INT(zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                       0), ==, ZOK);
  CHECK_INT(zoo_create(admin, state, "init", 4, &ZOO_OPEN_ACL_UNSAFE, 0,
                       NULL, 0), ==, ZOK);
  if (pipe(down) != 0 || pipe(up) != 0)
    abort();
  {
    char fin[16], fout[16];
    char *args[] = {"test_guard", "paused-child", root, fin, fout, NULL};
    struct pollfd p = {0, POLLIN, 0};
    snprintf(fin, sizeof fin, "%d", down[0]);
    snprintf(fout, sizeof fout, "%d", up[1]);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
      execv(self_path, args);
      _exit(127);
    }
    close(down[0]);
    close(up[1]);
    p.fd = up[0];
    if (poll(&p, 1, 30000) != 1 || read(up[0], &h, 1) != 1) {
      CHECK(!"the paused holder never held");
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(down[1]);
      close(up[0]);
      return;
    }
  }
  kill(pid, SIGSTOP);
  {
    zkl_client_t *c = client(10000);
    zkl_mutex_t *m = mutex(c, "paused");
    zkl_op_t op = op_set(state, "fresh", -1);
    /* the stopped holder's session expires (4 s), then its node goes */
    CHECK_RC(zkl_mutex_timedlock(m, zkl_now_ms() + 30000), ZKL_OK);
    CHECK_RC(zkl_mutex_guarded(m, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
    CHECK_INT(zkl_mutex_depth(m), ==, 0);
    zkl_mutex_destroy(m);
    zkl_client_destroy(c);
  }
  CHECK_INT(write(down[1], "g", 1), ==, 1);
  kill(pid, SIGCONT);
  {
    int64_t until = zkl_now_ms() + 40000;
    while (waitpid(pid, &status, WNOHANG) == 0 && zkl_now_ms() < until)
      usleep(20000);
    if (zkl_now_ms() >= until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  CHECK(WIFEXITED(status));
  CHECK_INT(WEXITSTATUS(status), ==, 0);
  CHECK_STR(admin_data(state, buf, sizeof buf), "fresh");
  close(down[1]);
  close(up[0]);
}

/* Commit and hand over: the next holder finds the write done, never the
 * lock free before it, and the node's delete is no loss to the writer. */
struct waiter {
  zkl_mutex_t *m;
  const char *state;
  char seen[64];
  int rc;
};

static void *wait_then_read(void *arg) {
  struct waiter *w = arg;
  w->rc = zkl_mutex_lock(w->m);
  admin_data(w->state, w->seen, sizeof w->seen);
  if (w->rc == ZKL_OK)
    zkl_mutex_unlock(w->m);
  return NULL;
}

static void test_release_hands_over(void) {
  zkl_client_t *c = client(10000), *c2 = client(10000);
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkl_mutex_t *m, *m2;
  struct waiter w = {0};
  char state[192], node[256];
  zkl_op_t op;
  pthread_t t;
  int i;
  new_root();
  m = mutex_with(c, "handover", 0, &st);
  m2 = mutex(c2, "handover");
  snprintf(state, sizeof state, "%s/state", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  w.m = m2;
  w.state = state;
  pthread_create(&t, NULL, wait_then_read, &w);
  QUEUED("handover", 2);
  usleep(300 * 1000); /* our node is watched by now */
  /* held twice: the release would leave a level behind */
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  op = op_create(state, "done", 0, NULL, 0);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, ZKL_GUARD_RELEASE), ZKL_EBUSY);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
  CHECK_INT(zkl_mutex_depth(m), ==, 0);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ENOTOWNER);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, ZKL_OK);
  CHECK_STR(w.seen, "done");
  CHECK(!admin_exists(node));
  /* HELD then NONE: our own delete was never taken for a loss */
  WAIT_FOR(last_state(&st) == ZKL_STATE_NONE, 2000);
  pthread_mutex_lock(&st.mu);
  for (i = 0; i < st.n; i++)
    CHECK_INT(st.seen[i], !=, ZKL_STATE_LOST);
  pthread_mutex_unlock(&st.mu);
  zkl_mutex_destroy(m);
  zkl_mutex_destroy(m2);
  zkl_client_destroy(c);
  zkl_client_destroy(c2);
}

/* A release refused for one of the ops keeps the hold, and its node is
 * still watched: a delete by someone later is reported. */
static void test_release_refused_keeps_watch(void) {
  zkl_client_t *c = client(10000);
  struct states st = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkl_mutex_t *m;
  char node[256], missing[192];
  zkl_op_t op = {0};
  new_root();
  m = mutex_with(c, "refused-release", 0, &st);
  snprintf(missing, sizeof missing, "%s/missing", root);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
  usleep(300 * 1000);
  op.type = ZKL_OP_DELETE;
  op.path = missing;
  op.version = -1;
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, ZKL_GUARD_RELEASE), ZNONODE);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_INT(zkl_mutex_depth(m), ==, 1);
  CHECK(admin_exists(node));
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZOK);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 3000);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_LOST);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_ELOST);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

static void test_bad_arguments(void) {
  zkl_client_t *c = client(10000);
  zkl_mutex_t *m;
  char small[8], path[192];
  zkl_op_t op;
  uint64_t before;
  new_root();
  m = mutex(c, "args");
  snprintf(path, sizeof path, "%s/x", root);
  CHECK_RC(zkl_mutex_guarded(NULL, NULL, 0, 0), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_lock(m), ZKL_OK);
  before = zkl_client_request_count(c);
  CHECK_RC(zkl_mutex_guarded(m, NULL, 1, 0), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_guarded(m, NULL, 0, 1u << 7), ZKL_EINVAL);
  op = op_set("relative", "x", -1);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_set(path, "x", -2);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_set(path, "x", -1);
  op.data = NULL;
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_set(path, "x", -1);
  op.type = 99;
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_create(path, "x", ZKL_CREATE_SEQUENTIAL, small, sizeof small);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_create(path, "x", 1u << 5, NULL, 0);
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  op = op_set(path, "x", -1);
  op.data_len = ZKL_GUARD_BYTES_MAX + 1;
  CHECK_RC(zkl_mutex_guarded(m, &op, 1, 0), ZKL_EINVAL);
  CHECK_RC(zkl_mutex_guarded(m, &op, ZKL_GUARD_OPS_MAX + 1, 0), ZKL_EINVAL);
  CHECK_INT(zkl_client_request_count(c) - before, ==, 0);
  CHECK_INT(zkl_mutex_state(m), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
}

static void on_async(zkl_hold_t *h, int rc, void *arg) {
  (void)h;
  *(_Atomic int *)arg = rc == ZKL_OK ? 1 : -1;
}

/* Every recipe's hold guards writes: read and write holds of a
 * read-write lock, a lease, an asynchronous hold (with the release), a
 * leader's term (not after resigning). */
static void test_every_hold(void) {
  zkl_client_t *c = client(10000);
  zkl_rwlock_t *rw = NULL;
  zkl_rwlock_options_t ro = {0};
  zkl_semaphore_t *sem = NULL;
  zkl_semaphore_options_t so = {0};
  zkl_lease_t *lease = NULL;
  zkl_mutex_t *m;
  zkl_hold_t *h = NULL;
  zkl_election_t *e = NULL;
  zkl_election_options_t eo = {0};
  _Atomic int got = 0;
  char state[192], buf[64], node[256];
  zkl_op_t op;
  new_root();
  snprintf(state, sizeof state, "%s/state", root);
  op = op_create(state, "0", 0, NULL, 0);
  ro.root = so.root = root;
  CHECK_RC(zkl_rwlock_create(&rw, c, "rw", &ro), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, 0), ZKL_OK);
  CHECK_RC(zkl_rwlock_rdunlock(rw), ZKL_OK);
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, 0), ZKL_ENOTOWNER);
  CHECK_RC(zkl_rwlock_wrlock(rw), ZKL_OK);
  op = op_set(state, "w", -1);
  CHECK_RC(zkl_rwlock_guarded(rw, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
  CHECK_RC(zkl_rwlock_wrunlock(rw), ZKL_ENOTOWNER);
  CHECK_STR(admin_data(state, buf, sizeof buf), "w");
  CHECK_RC(zkl_rwlock_destroy(rw), ZKL_OK);

  CHECK_RC(zkl_semaphore_create(&sem, c, "sem", 2, &so), ZKL_OK);
  CHECK_RC(zkl_semaphore_acquire(sem, &lease), ZKL_OK);
  CHECK_RC(zkl_lease_node_path(lease, node, sizeof node), ZKL_OK);
  op = op_set(state, "lease", -1);
  CHECK_RC(zkl_lease_guarded(lease, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
  CHECK(!admin_exists(node));
  CHECK_STR(admin_data(state, buf, sizeof buf), "lease");
  CHECK_RC(zkl_semaphore_destroy(sem), ZKL_OK); /* the lease is gone */

  m = mutex(c, "async");
  CHECK_RC(zkl_mutex_lock_async(m, ZKL_NO_DEADLINE, on_async, (void *)&got, &h),
           ZKL_OK);
  WAIT_FOR(got != 0, 5000);
  CHECK_INT(got, ==, 1);
  op = op_set(state, "async", -1);
  CHECK_RC(zkl_hold_guarded(h, &op, 1, 0), ZKL_OK);
  CHECK_RC(zkl_hold_guarded(h, &op, 1, ZKL_GUARD_RELEASE), ZKL_OK);
  CHECK_INT(queue_count("async"), ==, 0);
  CHECK_RC(zkl_mutex_destroy(m), ZKL_OK); /* the hold is released */

  eo.root = root;
  CHECK_RC(zkl_election_create(&e, c, "elect", "me", &eo), ZKL_OK);
  op = op_set(state, "leader", -1);
  CHECK_RC(zkl_election_guarded(e, &op, 1, 0), ZKL_ENOTHELD);
  CHECK_RC(zkl_election_wait(e, zkl_now_ms() + 10000), ZKL_OK);
  CHECK(zkl_election_is_leader(e));
  CHECK_RC(zkl_election_guarded(e, &op, 1, ZKL_GUARD_RELEASE), ZKL_EINVAL);
  CHECK_RC(zkl_election_guarded(e, &op, 1, 0), ZKL_OK);
  CHECK_STR(admin_data(state, buf, sizeof buf), "leader");
  CHECK_RC(zkl_election_resign(e), ZKL_OK);
  CHECK_RC(zkl_election_guarded(e, &op, 1, 0), ZKL_ENOTHELD);
  CHECK_RC(zkl_election_destroy(e), ZKL_OK);
  zkl_client_destroy(c);
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc == 5 && strcmp(argv[1], "paused-child") == 0) {
    servers = getenv("ZKL_TEST_SERVERS");
    snprintf(root, sizeof root, "%s", argv[2]);
    child_holder("paused", atoi(argv[3]), atoi(argv[4]));
  }
  root_tag = "zklguard";
  admin_open();
  RUN(test_commit);
  RUN(test_refused);
  RUN(test_deleted_unwatched);
  RUN(test_deleted_watched);
  RUN(test_release_hands_over);
  RUN(test_release_refused_keeps_watch);
  RUN(test_bad_arguments);
  RUN(test_every_hold);
  RUN(test_paused_holder);
  admin_close();
  return CHECK_DONE();
}
