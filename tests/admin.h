/* SPDX-License-Identifier: Apache-2.0 */
/* admin.h: what the integration tests in C share: the ensemble from
 * ZKL_TEST_SERVERS, per-test roots, and an independent ZooKeeper handle
 * ("admin") that inspects and damages the tree the way an operator or a
 * hostile co-tenant would. Included by one test program each. */
#ifndef ZKLOCK_TEST_ADMIN_H
#define ZKLOCK_TEST_ADMIN_H

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "check.h"
#include "zklock.h"
#include "zktree.h"

static const char *servers;
static zhandle_t *admin;
static int root_no;
static char root[128];
static const char *root_tag = "zkltest";

static void admin_watcher(zhandle_t *zh, int type, int state, const char *p,
                          void *ctx) {
  (void)zh, (void)type, (void)state, (void)p, (void)ctx;
}

static void quiet_zk_log(const char *m) { (void)m; }

static void new_root(void) {
  snprintf(root, sizeof root, "/%s-%ld-%d", root_tag, (long)getpid(),
           ++root_no);
}

static zkl_client_t *client(int session_ms) {
  zkl_client_t *c = NULL;
  zkl_client_options_t o = {0};
  o.session_timeout_ms = session_ms;
  CHECK_RC(zkl_client_create(&c, servers, &o), ZKL_OK);
  if (!c) {
    fprintf(stderr, "cannot connect to %s\n", servers);
    exit(1);
  }
  return c;
}

static zkl_mutex_t *mutex(zkl_client_t *c, const char *name) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = root;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  return m;
}

static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cv = PTHREAD_COND_INITIALIZER;
static int sync_done;

static void on_sync(int rc, const char *v, const void *d) {
  (void)rc, (void)v, (void)d;
  pthread_mutex_lock(&sync_mu);
  sync_done = 1;
  pthread_cond_broadcast(&sync_cv);
  pthread_mutex_unlock(&sync_mu);
}

/* The admin reads from its own server, which may lag the leader: sync
 * first, as ZooKeeper requires for reading another session's writes. */
static void admin_sync(const char *path) {
  sync_done = 0;
  if (zoo_async(admin, path, on_sync, NULL) != ZOK)
    return;
  pthread_mutex_lock(&sync_mu);
  while (!sync_done)
    pthread_cond_wait(&sync_cv, &sync_mu);
  pthread_mutex_unlock(&sync_mu);
}

/* Whether path exists, as the admin sees it after a sync. */
static inline int admin_exists(const char *path) {
  struct Stat st;
  admin_sync(path);
  return zoo_exists(admin, path, 0, &st) == ZOK;
}

/* Number of children of root/name as the admin sees them (-1: no parent). */
static int queue_len(const char *name) {
  char path[256];
  struct String_vector v;
  int n, rc;
  snprintf(path, sizeof path, "%s/%s", root, name);
  admin_sync(path);
  rc = zoo_get_children(admin, path, 0, &v);
  if (rc == ZNONODE)
    return -1;
  if (rc != ZOK)
    return -2;
  n = v.count;
  deallocate_String_vector(&v);
  return n;
}

/* Nodes in root/name, counting a parent already reaped as empty: lock
 * parents are containers, which the test ensemble removes within a second
 * of their last child (more than enough under valgrind). */
/* Waits (at most 5 s) until client c has sent nothing for 300 ms, and
 * returns its request count then: a waiter on a loaded machine may take
 * longer than any fixed sleep to send its listing and set its watches. */
static inline uint64_t requests_settled(const zkl_client_t *c) {
  uint64_t n = zkl_client_request_count(c), was;
  int64_t until = zkl_now_ms() + 5000;
  do {
    was = n;
    usleep(300 * 1000);
    n = zkl_client_request_count(c);
  } while (n != was && zkl_now_ms() < until);
  return n;
}

static inline int queue_count(const char *name) {
  int n = queue_len(name);
  return n == -1 ? 0 : n;
}

/* Deletes path and creates it again as the admin's, with `flags`, in one
 * transaction: a container whose last child is deleted may be reaped
 * before a separate create reaches it. ZooKeeper's code. */
static inline int replace_node(const char *path, int flags) {
  zoo_op_t ops[2];
  zoo_op_result_t res[2];
  zoo_delete_op_init(&ops[0], path, -1);
  zoo_create_op_init(&ops[1], path, "evil", 4, &ZOO_OPEN_ACL_UNSAFE, flags,
                     NULL, 0);
  return zoo_multi(admin, 2, ops, res);
}

/* Creates path, a persistent node of the admin's right under the root.
 * A per-key lock's release takes its directory along, and a root left
 * empty goes in the server's next sweep (each second in the test
 * ensemble): then the root is made again. A container that never had a
 * child is not swept, so it lasts until path is in it. */
static inline int admin_create_in_root(const char *path, const char *data,
                                       int len) {
  int rc = ZNONODE, i;
  for (i = 0; rc == ZNONODE && i < 3; i++) {
    rc = zoo_create(admin, path, data, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZNONODE)
      (void)zoo_create(admin, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_CONTAINER, NULL, 0);
  }
  return rc;
}

/* Waits until queue `name` has n nodes (a job queued, not holding yet). */
#define QUEUED(name, n)                                                        \
  do {                                                                         \
    WAIT_FOR(queue_len(name) == (n), 5000);                                    \
    CHECK_INT(queue_len(name), ==, (n));                                       \
  } while (0)

static void cleanup_tree(const char *path) { remove_tree(admin, path); }

/* State callbacks, recorded. */
struct states {
  pthread_mutex_t mu;
  int seen[8];
  int n;
};

static inline void on_state(zkl_mutex_t *m, int state, uint64_t token, void *ctx) {
  struct states *s = ctx;
  (void)m, (void)token;
  pthread_mutex_lock(&s->mu);
  if (s->n < 8)
    s->seen[s->n++] = state;
  pthread_mutex_unlock(&s->mu);
}

static inline int last_state(struct states *s) {
  int v;
  pthread_mutex_lock(&s->mu);
  v = s->n ? s->seen[s->n - 1] : -1;
  pthread_mutex_unlock(&s->mu);
  return v;
}

/* A mutex under the test's root with flags and a recorded state callback
 * (st NULL: none). */
static inline zkl_mutex_t *mutex_with(zkl_client_t *c, const char *name,
                                      unsigned flags, struct states *st) {
  zkl_mutex_t *m = NULL;
  zkl_mutex_options_t o = {0};
  o.root = root;
  o.flags = flags;
  o.state_fn = st ? on_state : NULL;
  o.state_ctx = st;
  CHECK_RC(zkl_mutex_create(&m, c, name, &o), ZKL_OK);
  return m;
}

/* Log lines, recorded. */
struct logbuf {
  pthread_mutex_t mu;
  char text[4096];
};

static inline void log_hook(void *ctx, int level, const char *msg) {
  struct logbuf *b = ctx;
  pthread_mutex_lock(&b->mu);
  if (level >= ZKL_LOG_ERROR && level <= ZKL_LOG_DEBUG &&
      strlen(b->text) + strlen(msg) + 2 < sizeof b->text) {
    strcat(b->text, msg);
    strcat(b->text, "\n");
  }
  pthread_mutex_unlock(&b->mu);
}

static inline int log_has(struct logbuf *b, const char *what) {
  int v;
  pthread_mutex_lock(&b->mu);
  v = strstr(b->text, what) != NULL;
  pthread_mutex_unlock(&b->mu);
  return v;
}

/* Connects the admin; exits 77 (skip) without an ensemble. */
/* Threads of this process now (an async form must start none). */
static inline int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)))
    n += de->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static void admin_open(void) {
  servers = getenv("ZKL_TEST_SERVERS");
  if (!servers || !*servers) {
    fprintf(stderr, "ZKL_TEST_SERVERS is not set: skipping\n");
    exit(77);
  }
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  admin = zookeeper_init2(servers, admin_watcher, 10000, NULL, NULL, 0,
                          quiet_zk_log);
  if (!admin)
    exit(1);
}

/* hostile.itest's proxy is told what to do by files in its directory
 * (tests/zkproxy.py, ZKL_TEST_PROXY_DIR); it polls for them. content
 * NULL removes the file; 0 when that cannot be done. */
static inline int proxy_ctl(const char *name, const char *content) {
  const char *dir = getenv("ZKL_TEST_PROXY_DIR");
  char path[512];
  FILE *f;
  if (!dir)
    return 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (!content)
    return unlink(path) == 0;
  f = fopen(path, "w");
  if (!f)
    return 0;
  fputs(content, f);
  return fclose(f) == 0;
}

/* Ends session `id` from outside: a second handle on it, once connected,
 * closes it (tests linked with the internal library read the id from
 * the client's handle). */
static inline void expire_id(const clientid_t *id) {
  zhandle_t *zh = zookeeper_init2(servers, admin_watcher, 10000, id, NULL,
                                  0, quiet_zk_log);
  int i;
  CHECK(zh != NULL);
  for (i = 0; zh && i < 1000 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(10000);
  if (zh)
    zookeeper_close(zh);
}

/* Removes every root the tests made, then closes the admin. */
static void admin_close(void) {
  int i;
  for (i = 1; i <= root_no; i++) {
    snprintf(root, sizeof root, "/%s-%ld-%d", root_tag, (long)getpid(), i);
    cleanup_tree(root);
  }
  zookeeper_close(admin);
}

#endif
