/* SPDX-License-Identifier: Apache-2.0 */
/* test_auth.c: authentication and ACLs against a real ensemble
 * (ZKL_TEST_SERVERS).
 *
 * Every test works under /zkltest-auth-<pid>/<test>. Two independent
 * ZooKeeper handles look on: "admin" has no identity, so it meets the ACLs
 * as a stranger would; "su" is the super user that scripts/zk-ensemble.sh
 * configures, which builds trees no one else may touch and removes
 * everything at the end (no other session could, once ACLs shut it out).
 *
 * Session expiry needs the session's password to fake and zklock does not
 * expose it, so the expiry test re-runs this program as a child and stops
 * it (SIGSTOP) past its session timeout, as a paused process would be. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "check.h"
#include "zklock.h"
#include "zktree.h"

/* Test-only credentials. The ids are "user:" + base64(sha1("user:pw")),
 * the form ZooKeeper stores in digest ACLs; computed once with python3's
 * hashlib and base64. The super password is the one the test ensemble's
 * superDigest was made from (scripts/zk-ensemble.sh). */
#define SUPER "super:zklock-test-super"
#define ALICE "alice:alice-pw"
#define ALICE_ID "alice:SQICbGEP3vUd4FffsXSLZ8/1XtI="
#define BOB "bob:bob-pw"
#define BOB_ID "bob:EXcpcQQk6JBIDFnxSqkpDLIhkxw="
/* what ZKL_ACL_CREATOR gives a node, in acl_of()'s notation */
#define CREATOR_ACL(id) "digest:" id ":cdrwa,world:anyone:r"

static const char *servers;
static zhandle_t *admin;
static zhandle_t *su;
static char base[64];

static void no_watch(zhandle_t *zh, int type, int state, const char *p,
                     void *ctx) {
  (void)zh, (void)type, (void)state, (void)p, (void)ctx;
}

static void quiet_zk_log(const char *m) { (void)m; }

/* ---- synchronous wrappers of the async-only ZooKeeper calls -------------- */

struct done {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int fired, rc;
};

static void done_fire(struct done *d, int rc) {
  pthread_mutex_lock(&d->mu);
  d->fired = 1;
  d->rc = rc;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

static void on_void(int rc, const void *data) {
  done_fire((struct done *)data, rc);
}

static void on_string(int rc, const char *v, const void *data) {
  (void)v;
  done_fire((struct done *)data, rc);
}

/* The completion's rc, or ZOPERATIONTIMEOUT after 10 s. The struct is
 * static: a completion that fires after we gave up must not write into a
 * dead stack frame. */
static int done_wait(struct done *d) {
  struct timespec ts;
  int rc;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 10;
  pthread_mutex_lock(&d->mu);
  while (!d->fired)
    if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) == ETIMEDOUT)
      break;
  rc = d->fired ? d->rc : ZOPERATIONTIMEOUT;
  pthread_mutex_unlock(&d->mu);
  return rc;
}

static struct done done_slot = {PTHREAD_MUTEX_INITIALIZER,
                                PTHREAD_COND_INITIALIZER, 0, 0};

static int add_auth(zhandle_t *zh, const char *scheme, const char *cert) {
  int rc;
  done_slot.fired = 0;
  rc = zoo_add_auth(zh, scheme, cert, (int)strlen(cert), on_void, &done_slot);
  return rc != ZOK ? rc : done_wait(&done_slot);
}

/* Reads of a handle may lag another session's writes on its server: sync
 * first, as ZooKeeper requires. */
static void sync_path(zhandle_t *zh, const char *path) {
  done_slot.fired = 0;
  if (zoo_async(zh, path, on_string, &done_slot) == ZOK)
    done_wait(&done_slot);
}

static zhandle_t *open_handle(void) {
  zhandle_t *zh =
      zookeeper_init2(servers, no_watch, 10000, NULL, NULL, 0, quiet_zk_log);
  int64_t until = zkl_now_ms() + 15000;
  if (!zh)
    return NULL;
  while (zoo_state(zh) != ZOO_CONNECTED_STATE && zkl_now_ms() < until)
    usleep(10000);
  if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
    zookeeper_close(zh);
    return NULL;
  }
  return zh;
}

/* ---- tree helpers -------------------------------------------------------- */

static char s_digest[] = "digest", s_world[] = "world", s_anyone[] = "anyone";
static char s_alice[] = ALICE_ID,
            s_nobody[] = "nobody:AAAAAAAAAAAAAAAAAAAAAAAAAAA=";
/* ZooKeeper's permission bits are extern variables, not constants: these
 * ACLs are filled in by init_acls(). */
static struct ACL alice_all_acl[1], read_only_acl[2], nobody_acl[1];
static struct ACL_vector alice_all = {1, alice_all_acl};
/* a directory alice may read but not create in */
static struct ACL_vector read_only = {2, read_only_acl};
static struct ACL_vector nobody = {1, nobody_acl};

static void set_acl(struct ACL *a, int32_t perms, char *scheme, char *id) {
  a->perms = perms;
  a->id.scheme = scheme;
  a->id.id = id;
}

static void init_acls(void) {
  set_acl(&alice_all_acl[0], ZOO_PERM_ALL, s_digest, s_alice);
  set_acl(&read_only_acl[0], ZOO_PERM_READ, s_world, s_anyone);
  set_acl(&read_only_acl[1], ZOO_PERM_READ, s_digest, s_alice);
  set_acl(&nobody_acl[0], ZOO_PERM_READ, s_digest, s_nobody);
}

static void path_of(char *out, size_t size, const char *test,
                    const char *rest) {
  snprintf(out, size, "%s/%s%s%s", base, test, rest ? "/" : "",
           rest ? rest : "");
}

/* Create a node as super; every failure is a test failure. */
static void su_create(const char *path, struct ACL_vector *acl) {
  int rc = zoo_create(su, path, NULL, -1, acl, 0, NULL, 0);
  if (rc != ZOK)
    fprintf(stderr, "creating %s as super: %s\n", path, zerror(rc));
  CHECK_INT(rc, ==, ZOK);
}


/* Every test removes its tree, and leaves none of it behind. */
static void remove_test_tree(const char *test) {
  char dir[256];
  path_of(dir, sizeof dir, test, NULL);
  remove_tree(su, dir);
  sync_path(su, dir);
  CHECK_INT(zoo_exists(su, dir, 0, NULL), ==, ZNONODE);
}

static int compare_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* path's ACL as super reads it: "scheme:id:perms" entries, perms in the
 * letters of ZooKeeper's CLI, sorted so that the order the server keeps
 * does not matter; "<error text>" if it cannot be read. */
static const char *acl_of(const char *path) {
  static char out[1024];
  struct ACL_vector v;
  struct Stat st;
  char *entry[16];
  int i, n, rc;
  sync_path(su, path);
  rc = zoo_get_acl(su, path, &v, &st);
  if (rc != ZOK) {
    snprintf(out, sizeof out, "<%s>", zerror(rc));
    return out;
  }
  n = v.count < 16 ? v.count : 16;
  for (i = 0; i < n; i++) {
    int32_t p = v.data[i].perms;
    entry[i] = malloc(256);
    snprintf(entry[i], 256, "%s:%s:%s%s%s%s%s", v.data[i].id.scheme,
             v.data[i].id.id, p & ZOO_PERM_CREATE ? "c" : "",
             p & ZOO_PERM_DELETE ? "d" : "", p & ZOO_PERM_READ ? "r" : "",
             p & ZOO_PERM_WRITE ? "w" : "", p & ZOO_PERM_ADMIN ? "a" : "");
  }
  qsort(entry, (size_t)n, sizeof entry[0], compare_str);
  out[0] = '\0';
  for (i = 0; i < n; i++) {
    if (i)
      strncat(out, ",", sizeof out - strlen(out) - 1);
    strncat(out, entry[i], sizeof out - strlen(out) - 1);
    free(entry[i]);
  }
  deallocate_ACL_vector(&v);
  return out;
}

/* Children of dir as the unauthenticated admin lists them; -1 no node,
 * -2 another error. World may read what ZKL_ACL_CREATOR makes. */
static int queue_len(const char *dir) {
  struct String_vector v;
  int n, rc;
  sync_path(admin, dir);
  rc = zoo_get_children(admin, dir, 0, &v);
  if (rc == ZNONODE)
    return -1;
  if (rc != ZOK)
    return -2;
  n = v.count;
  deallocate_String_vector(&v);
  return n;
}

/* ---- zklock helpers ------------------------------------------------------ */

static zkl_client_t *auth_client(const char *cred, int acl) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  o.session_timeout_ms = 10000;
  o.connect_timeout_ms = 8000;
  o.auth_scheme = cred ? "digest" : NULL;
  o.auth = cred;
  o.acl = acl;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  if (!c) {
    fprintf(stderr, "cannot create a client with %s on %s\n",
            cred ? cred : "no auth", servers);
    exit(1);
  }
  return c;
}

static zkl_mutex_t *mutex_at(zkl_client_t *c, const char *lockroot,
                             const char *name) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = lockroot;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  if (!m)
    exit(1);
  return m;
}

/* An acquire that must not wait for anyone: bounded, so that a library
 * retrying a permanent error fails the test instead of hanging it. */
static int lock_now(zkl_mutex_t *m) {
  return zkl_mutex_timedlock(m, zkl_now_ms() + 10000);
}

/* zkl_mutex_lock() on a thread of its own, given up (cancelled) after ms:
 * the call itself has no deadline. A hold it gets is released at once. */
struct locker {
  zkl_mutex_t *m;
  int64_t deadline; /* 0: zkl_mutex_lock() */
  int rc, finished;
  char path[256];
  pthread_mutex_t mu;
};

static void *locker_main(void *arg) {
  struct locker *l = arg;
  int rc = l->deadline ? zkl_mutex_timedlock(l->m, l->deadline)
                       : zkl_mutex_lock(l->m);
  if (rc == ZKL_OK) {
    zkl_mutex_node_path(l->m, l->path, sizeof l->path);
    zkl_mutex_unlock(l->m);
  }
  pthread_mutex_lock(&l->mu);
  l->rc = rc;
  l->finished = 1;
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

static int locker_finished(struct locker *l) {
  int v;
  pthread_mutex_lock(&l->mu);
  v = l->finished;
  pthread_mutex_unlock(&l->mu);
  return v;
}

static void locker_start(struct locker *l, pthread_t *t, zkl_mutex_t *m,
                         int64_t deadline) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  l->m = m;
  l->deadline = deadline;
  pthread_create(t, NULL, locker_main, l);
}

/* Wait up to ms for the locker; cancel it if it is still blocked. */
static int locker_join(struct locker *l, pthread_t t, int ms) {
  WAIT_FOR(locker_finished(l), ms);
  if (!locker_finished(l)) {
    fprintf(stderr, "acquire still blocked after %d ms: cancelling it\n", ms);
    check_failures++;
    zkl_mutex_cancel(l->m);
  }
  pthread_join(t, NULL);
  pthread_mutex_destroy(&l->mu);
  return l->rc;
}

/* ---- tests --------------------------------------------------------------- */

/* ZKL_ACL_CREATOR protects the lock node and every parent zklock makes from
 * other identities, and does not get in the way of the same identity. */
static void test_creator_acl(void) {
  zkl_client_t *a = auth_client(ALICE, ZKL_ACL_CREATOR);
  zkl_client_t *a2 = auth_client(ALICE, ZKL_ACL_CREATOR);
  zkl_client_t *b = auth_client(BOB, ZKL_ACL_CREATOR);
  zkl_mutex_t *ma, *ma2, *mb;
  char lockroot[256], dir[300], child[340], node[256] = "";
  zkl_contender_t *list = NULL;
  size_t n = 0;
  struct locker l;
  pthread_t t;
  int64_t t0;
  int rc;
  /* none of it exists: zklock creates creator/locks/m itself */
  path_of(lockroot, sizeof lockroot, "creator", "locks");
  snprintf(dir, sizeof dir, "%s/m", lockroot);
  ma = mutex_at(a, lockroot, "m");
  ma2 = mutex_at(a2, lockroot, "m");
  mb = mutex_at(b, lockroot, "m");

  CHECK_RC(zkl_mutex_lock(ma), ZKL_OK);
  CHECK_RC(zkl_mutex_node_path(ma, node, sizeof node), ZKL_OK);
  CHECK_STR(acl_of(node), CREATOR_ACL(ALICE_ID));
  CHECK_STR(acl_of(dir), CREATOR_ACL(ALICE_ID));
  CHECK_STR(acl_of(lockroot), CREATOR_ACL(ALICE_ID));
  path_of(child, sizeof child, "creator", NULL);
  CHECK_STR(acl_of(child), CREATOR_ACL(ALICE_ID));

  /* a stranger can look, not touch */
  CHECK_INT(queue_len(dir), ==, 1);
  CHECK_INT(zoo_delete(admin, node, -1), ==, ZNOAUTH);
  CHECK_INT(zoo_set(admin, node, "x", 1, -1), ==, ZNOAUTH);
  snprintf(child, sizeof child, "%s/planted-lock-0000000000", dir);
  CHECK_INT(zoo_create(admin, child, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL, NULL, 0),
            ==, ZNOAUTH);
  CHECK_INT(queue_len(dir), ==, 1);

  /* another identity may list the queue... */
  CHECK_RC(zkl_mutex_queue(b, lockroot, "m", &list, &n), ZKL_OK);
  CHECK_INT(n, ==, 1);
  if (n == 1)
    CHECK_INT(list[0].owner, ==, zkl_client_session_id(a));
  zkl_contenders_free(list, n);
  /* ...but not join it: a permanent error, at once, leaving nothing */
  t0 = zkl_now_ms();
  locker_start(&l, &t, mb, 0);
  rc = locker_join(&l, t, 5000);
  CHECK_RC(rc, ZNOAUTH);
  CHECK_INT(zkl_now_ms() - t0, <, 5000);
  CHECK_INT(zkl_mutex_state(mb), ==, ZKL_STATE_NONE);
  CHECK_INT(queue_len(dir), ==, 1);

  /* none of that disturbed the holder */
  usleep(200000);
  CHECK_INT(zkl_mutex_state(ma), ==, ZKL_STATE_HELD);
  CHECK_RC(zkl_mutex_verify(ma), ZKL_OK);

  /* the same identity on another session waits and takes over */
  locker_start(&l, &t, ma2, zkl_now_ms() + 15000);
  WAIT_FOR(queue_len(dir) == 2, 5000);
  CHECK_INT(queue_len(dir), ==, 2);
  CHECK_RC(zkl_mutex_unlock(ma), ZKL_OK);
  CHECK_RC(locker_join(&l, t, 16000), ZKL_OK);
  CHECK(l.path[0] != '\0' && strcmp(l.path, node) != 0);
  CHECK_INT(zkl_mutex_state(ma), ==, ZKL_STATE_NONE);

  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(ma2);
  zkl_mutex_destroy(mb);
  zkl_client_destroy(a);
  zkl_client_destroy(a2);
  zkl_client_destroy(b);
  remove_test_tree("creator");
}

/* Lock, check the node's ACL, its parent's and the lock root's, unlock.
 * The root is read while the lock is held: a root zklock made is a container,
 * and once the release takes the lock's own parent along the server may reap
 * it within a second. */
static void lock_cycle(zkl_client_t *c, const char *lockroot, const char *name,
                       const char *want_acl, const char *root_acl) {
  zkl_mutex_t *m = mutex_at(c, lockroot, name);
  char node[256] = "", dir[256];
  int rc = lock_now(m);
  CHECK_RC(rc, ZKL_OK);
  if (rc == ZKL_OK) {
    snprintf(dir, sizeof dir, "%s/%s", lockroot, name);
    CHECK_RC(zkl_mutex_node_path(m, node, sizeof node), ZKL_OK);
    CHECK(strncmp(node, dir, strlen(dir)) == 0);
    CHECK_STR(acl_of(node), want_acl);
    CHECK_STR(acl_of(dir), want_acl);
    CHECK_STR(acl_of(lockroot), root_acl);
    CHECK_RC(zkl_mutex_unlock(m), ZKL_OK);
  }
  zkl_mutex_destroy(m);
}

/* A subtree only alice may enter: zklock creates the parents below it with
 * alice's session, in either ACL mode. */
static void test_secure_subtree(void) {
  zkl_client_t *opn = auth_client(ALICE, ZKL_ACL_OPEN);
  zkl_client_t *creator = auth_client(ALICE, ZKL_ACL_CREATOR);
  char top[256], lockroot[256];
  path_of(top, sizeof top, "secure", NULL);
  su_create(top, &alice_all);
  CHECK_INT(queue_len(top), ==, -2); /* ZNOAUTH: the world may not even list */

  path_of(lockroot, sizeof lockroot, "secure", "locks");
  lock_cycle(opn, lockroot, "name", "world:anyone:cdrwa",
             "world:anyone:cdrwa");
  path_of(lockroot, sizeof lockroot, "secure", "locks-c");
  lock_cycle(creator, lockroot, "name", CREATOR_ACL(ALICE_ID),
             CREATOR_ACL(ALICE_ID));
  CHECK_STR(acl_of(top), "digest:" ALICE_ID ":cdrwa"); /* kept as it was */

  zkl_client_destroy(opn);
  zkl_client_destroy(creator);
  remove_test_tree("secure");
}

/* The lock's own parent exists and alice may create in it, but an ancestor
 * denies her CREATE: the server checks that before it would report
 * NODEEXISTS, so zklock must not try to create what already exists. */
static void test_ancestor_denies_create(void) {
  zkl_client_t *opn = auth_client(ALICE, ZKL_ACL_OPEN);
  zkl_client_t *creator = auth_client(ALICE, ZKL_ACL_CREATOR);
  char top[256], lockroot[256];
  path_of(top, sizeof top, "ro", NULL);
  path_of(lockroot, sizeof lockroot, "ro", "locks");
  su_create(top, &read_only);
  su_create(lockroot, &alice_all);

  /* parents that already exist keep their ACL */
  lock_cycle(opn, lockroot, "name", "world:anyone:cdrwa",
             "digest:" ALICE_ID ":cdrwa");
  lock_cycle(creator, lockroot, "name-c", CREATOR_ACL(ALICE_ID),
             "digest:" ALICE_ID ":cdrwa");
  CHECK_STR(acl_of(lockroot), "digest:" ALICE_ID ":cdrwa");
  CHECK_STR(acl_of(top), "digest:" ALICE_ID ":r,world:anyone:r");

  zkl_client_destroy(opn);
  zkl_client_destroy(creator);
  remove_test_tree("ro");
}

static void test_bad_credentials(void) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  int64_t t0, took;
  /* digest accepts any user:password; an unknown scheme is what the
   * ensemble rejects */
  o.connect_timeout_ms = 8000;
  o.auth_scheme = "bogus";
  o.auth = "x";
  t0 = zkl_now_ms();
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_EAUTH);
  took = zkl_now_ms() - t0;
  /* at once, not after the connect timeout or a round of retries */
  CHECK_INT(took, <, 5000);
  CHECK(c == NULL);
  if (c)
    zkl_client_destroy(c);

  /* a creator ACL needs an identity; checked before connecting */
  c = NULL;
  memset(&o, 0, sizeof o);
  o.acl = ZKL_ACL_CREATOR;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_EINVAL);
  CHECK(c == NULL);
  o.acl = ZKL_ACL_CREATOR + 1;
  o.auth_scheme = "digest";
  o.auth = ALICE;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_EINVAL);
  CHECK(c == NULL);
}

/* ---- session expiry: the child side -------------------------------------- */

/* Run as `test_auth --expiry-child ROOT`. Lines on stdout tell the parent
 * what happened; it stops us past our session timeout after HELD. */
static int expiry_child(const char *lockroot) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  zkl_mutex_t *m;
  char path[256], line[64];
  int64_t sid;
  int rc;
  alarm(90); /* never outlive a parent that lost track of us */
  o.session_timeout_ms = 4000;
  o.connect_timeout_ms = 8000;
  o.auth_scheme = "digest";
  o.auth = ALICE;
  o.acl = ZKL_ACL_CREATOR;
  if ((rc = zkl_client_create(&c, servers, &o)) != ZKL_OK) {
    printf("ERR create %s\n", zkl_err_name(rc));
    return 1;
  }
  m = mutex_at(c, lockroot, "exp");
  if ((rc = lock_now(m)) != ZKL_OK) {
    printf("ERR lock %s\n", zkl_err_name(rc));
    return 1;
  }
  sid = zkl_client_session_id(c);
  zkl_mutex_node_path(m, path, sizeof path);
  printf("HELD %" PRId64 " %s\n", sid, path);
  fflush(stdout);
  WAIT_FOR(zkl_mutex_state(m) == ZKL_STATE_LOST, 40000);
  printf("LOST %s", zkl_lock_state_name(zkl_mutex_state(m)));
  printf(" %s\n", zkl_err_name(zkl_mutex_unlock(m)));
  fflush(stdout);
  WAIT_FOR(zkl_client_state(c) == ZKL_CLIENT_CONNECTED &&
               zkl_client_session_id(c) != sid,
           20000);
  if ((rc = lock_now(m)) != ZKL_OK) {
    printf("ERR relock %s\n", zkl_err_name(rc));
    return 1;
  }
  zkl_mutex_node_path(m, path, sizeof path);
  printf("HELD %" PRId64 " %s\n", zkl_client_session_id(c), path);
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin))
    return 1;
  printf("RELEASED %s\n", zkl_err_name(zkl_mutex_unlock(m)));
  fflush(stdout);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  return 0;
}

/* ---- session expiry: the parent side ------------------------------------- */

/* One line from fd into buf, without its newline, within ms. */
static int read_line(int fd, char *buf, size_t size, int ms) {
  int64_t until = zkl_now_ms() + ms;
  size_t n = 0;
  while (n + 1 < size) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = (int)(until - zkl_now_ms());
    char ch;
    if (left <= 0 || poll(&p, 1, left) <= 0 || read(fd, &ch, 1) != 1)
      break;
    if (ch == '\n') {
      buf[n] = '\0';
      return 0;
    }
    buf[n++] = ch;
  }
  buf[n] = '\0';
  fprintf(stderr, "no line from the child within %d ms (got \"%s\")\n", ms,
          buf);
  return -1;
}

static int node_gone(const char *path) {
  sync_path(su, path);
  return zoo_exists(su, path, 0, NULL) == ZNONODE;
}

/* After an expiry the client's new session authenticates again before its
 * first request: a lock where only alice may create still works, and its
 * node is alice's. */
static void test_expiry_reauth(void) {
  char top[256], lockroot[256], line[512], path1[256] = "", path2[256] = "";
  int to_child[2], from_child[2], status = 0, stopped = 0;
  int64_t sid1 = 0, sid2 = 0;
  pid_t pid;
  path_of(top, sizeof top, "expiry", NULL);
  path_of(lockroot, sizeof lockroot, "expiry", "locks");
  su_create(top, &alice_all);
  if (pipe(to_child) || pipe(from_child)) {
    perror("pipe");
    check_failures++;
    return;
  }
  pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[0]), close(to_child[1]);
    close(from_child[0]), close(from_child[1]);
    execl("/proc/self/exe", "test_auth", "--expiry-child", lockroot,
          (char *)NULL);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  if (pid < 0) {
    perror("fork");
    check_failures++;
    goto out;
  }

  if (read_line(from_child[0], line, sizeof line, 20000) ||
      sscanf(line, "HELD %" SCNd64 " %255s", &sid1, path1) != 2) {
    CHECK_STR(line, "HELD <session> <node>");
    goto out;
  }
  CHECK_STR(acl_of(path1), CREATOR_ACL(ALICE_ID));

  kill(pid, SIGSTOP);
  stopped = 1;
  /* the ensemble expires the silent session and takes its node along */
  WAIT_FOR(node_gone(path1), 20000);
  CHECK(node_gone(path1));
  kill(pid, SIGCONT);
  stopped = 0;

  if (read_line(from_child[0], line, sizeof line, 45000) == 0)
    CHECK_STR(line, "LOST LOST ZKL_ELOST");
  else
    check_failures++;
  if (read_line(from_child[0], line, sizeof line, 35000) ||
      sscanf(line, "HELD %" SCNd64 " %255s", &sid2, path2) != 2) {
    CHECK_STR(line, "HELD <session> <node>");
    goto out;
  }
  CHECK(sid2 != 0 && sid2 != sid1);
  CHECK(strcmp(path1, path2) != 0);
  CHECK_STR(acl_of(path2), CREATOR_ACL(ALICE_ID));
  CHECK_INT(write(to_child[1], "release\n", 8), ==, 8);
  if (read_line(from_child[0], line, sizeof line, 15000) == 0)
    CHECK_STR(line, "RELEASED ZKL_OK");
  else
    check_failures++;

out:
  if (pid > 0) {
    int64_t until = zkl_now_ms() + 10000;
    pid_t w;
    if (stopped)
      kill(pid, SIGCONT);
    close(to_child[1]); /* EOF on stdin ends a child waiting for release */
    to_child[1] = -1;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && zkl_now_ms() < until)
      usleep(20000);
    if (w == 0) {
      fprintf(stderr, "expiry child %ld still runs: killing it\n", (long)pid);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      check_failures++;
    } else {
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  if (to_child[1] >= 0)
    close(to_child[1]);
  close(from_child[0]);
  remove_test_tree("expiry");
}

/* ---- setup --------------------------------------------------------------- */

/* Connects admin and su and makes the base; exits 77 (skip) without an
 * ensemble, or without a super user on one that is not ours. */
static void setup(void) {
  struct String_vector kids;
  char probe[128];
  int rc;
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  init_acls();
  admin = open_handle();
  su = open_handle();
  if (!admin || !su) {
    fprintf(stderr, "cannot connect to %s\n", servers);
    exit(1);
  }
  rc = add_auth(su, "digest", SUPER);
  if (rc != ZOK) {
    fprintf(stderr, "cannot authenticate as super: %s\n", zerror(rc));
    exit(1);
  }
  snprintf(base, sizeof base, "/zkltest-auth-%ld", (long)getpid());
  rc = zoo_create(su, base, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  if (rc != ZOK) {
    fprintf(stderr, "cannot create %s: %s\n", base, zerror(rc));
    exit(1);
  }
  /* digest accepts any password, so ask a node no one but super may list */
  snprintf(probe, sizeof probe, "%s/probe", base);
  su_create(probe, &nobody);
  rc = zoo_get_children(su, probe, 0, &kids);
  if (rc == ZOK)
    deallocate_String_vector(&kids);
  zoo_delete(su, probe, -1);
  if (rc != ZOK) {
    zoo_delete(su, base, -1);
    fprintf(stderr,
            "%s is not super on this ensemble (%s); "
            "scripts/zk-ensemble.sh configures it\n",
            SUPER, zerror(rc));
    /* an ensemble with zk-ensemble.sh's settings must know super */
    exit(getenv("ZKL_ENSEMBLE_DIR") || getenv("ZKL_TEST_OWN_SETTINGS") ? 1 : 77);
  }
}

int main(int argc, char **argv) {
  servers = getenv("ZKL_TEST_SERVERS");
  if (!servers || !*servers) {
    fprintf(stderr, "ZKL_TEST_SERVERS is not set: skipping\n");
    return 77;
  }
  if (argc == 3 && strcmp(argv[1], "--expiry-child") == 0)
    return expiry_child(argv[2]);
  /* a library that hangs must fail the test, not the whole make check */
  alarm(300);
  /* a child that died early must not kill us when we write to it */
  signal(SIGPIPE, SIG_IGN);
  setup();
  RUN(test_creator_acl);
  RUN(test_secure_subtree);
  RUN(test_ancestor_denies_create);
  RUN(test_bad_credentials);
  RUN(test_expiry_reauth);
  remove_tree(su, base);
  sync_path(su, base);
  CHECK_INT(zoo_exists(su, base, 0, NULL), ==, ZNONODE);
  zookeeper_close(admin);
  zookeeper_close(su);
  return CHECK_DONE();
}
