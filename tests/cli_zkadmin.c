/* SPDX-License-Identifier: Apache-2.0 */
/* cli_zkadmin.c: a bare ZooKeeper client for tests/cli.itest, playing the
 * operator or another application next to zklock(1) and zkelect(1).
 *
 *   cli_zkadmin [-a SCHEME:CREDENTIALS] HOSTS COMMAND ARGS...
 *     create PATH DATA      persistent node (and missing parents, open ACL)
 *     ephemeral PATH DATA SECS
 *                           ephemeral node; prints "created", keeps the
 *                           session SECS seconds, then exits
 *     set PATH DATA         rewrite a node's data
 *     delete PATH           delete a node (any version)
 *     get PATH              print a node's data as it is
 *     ls PATH               print the children, sorted, one per line
 *     getacl PATH           print "scheme:id:perms" per entry (perms in
 *                           cdrwa letters)
 *     owner PATH            print the node's ephemeralOwner in hex
 *
 * Exit: 0 done; 1 ZooKeeper said no (its error name on stderr, e.g.
 * ZNOAUTH); 2 usage or no session. The whole run is bounded by alarm(). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected, auth_done, auth_rc;

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  (void)zh, (void)path, (void)ctx;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&mu);
  connected = state == ZOO_CONNECTED_STATE ? 1 : connected ? -1 : 0;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void on_auth(int rc, const void *data) {
  (void)data;
  pthread_mutex_lock(&mu);
  auth_done = 1;
  auth_rc = rc;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static int fail(const char *what, int rc) {
  const char *name = rc == ZNOAUTH       ? "ZNOAUTH"
                     : rc == ZNONODE     ? "ZNONODE"
                     : rc == ZNODEEXISTS ? "ZNODEEXISTS"
                     : rc == ZAUTHFAILED ? "ZAUTHFAILED"
                                         : "error";
  fprintf(stderr, "cli_zkadmin: %s: %s (%s, %d)\n", what, zerror(rc), name, rc);
  return 1;
}

/* Create PATH's missing ancestors as persistent nodes. */
static void make_parents(zhandle_t *zh, const char *path) {
  char buf[1024];
  char *p;
  snprintf(buf, sizeof buf, "%s", path);
  for (p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL,
               0);
    *p = '/';
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run(zhandle_t *zh, int argc, char **argv) {
  const char *cmd = argv[0], *path = argc > 1 ? argv[1] : NULL;
  int rc, i;
  if (!path)
    return 2;
  if (strcmp(cmd, "create") == 0 && argc == 3) {
    make_parents(zh, path);
    rc = zoo_create(zh, path, argv[2], (int)strlen(argv[2]),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    return rc == ZOK ? 0 : fail("create", rc);
  }
  if (strcmp(cmd, "ephemeral") == 0 && argc == 4) {
    make_parents(zh, path);
    rc = zoo_create(zh, path, argv[2], (int)strlen(argv[2]),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    if (rc != ZOK)
      return fail("create", rc);
    printf("created\n");
    fflush(stdout);
    sleep((unsigned)atoi(argv[3]));
    return 0;
  }
  if (strcmp(cmd, "set") == 0 && argc == 3) {
    rc = zoo_set(zh, path, argv[2], (int)strlen(argv[2]), -1);
    return rc == ZOK ? 0 : fail("set", rc);
  }
  if (strcmp(cmd, "delete") == 0 && argc == 2) {
    rc = zoo_delete(zh, path, -1);
    return rc == ZOK ? 0 : fail("delete", rc);
  }
  if (strcmp(cmd, "get") == 0 && argc == 2) {
    static char buf[1 << 20];
    int len = sizeof buf;
    rc = zoo_get(zh, path, 0, buf, &len, NULL);
    if (rc != ZOK)
      return fail("get", rc);
    if (len > 0)
      fwrite(buf, 1, (size_t)len, stdout);
    return 0;
  }
  if (strcmp(cmd, "ls") == 0 && argc == 2) {
    struct String_vector kids = {0, NULL};
    rc = zoo_get_children(zh, path, 0, &kids);
    if (rc != ZOK)
      return fail("ls", rc);
    qsort(kids.data, (size_t)kids.count, sizeof *kids.data, cmp_str);
    for (i = 0; i < kids.count; i++)
      printf("%s\n", kids.data[i]);
    deallocate_String_vector(&kids);
    return 0;
  }
  if (strcmp(cmd, "getacl") == 0 && argc == 2) {
    struct ACL_vector acl = {0, NULL};
    struct Stat st;
    rc = zoo_get_acl(zh, path, &acl, &st);
    if (rc != ZOK)
      return fail("getacl", rc);
    for (i = 0; i < acl.count; i++) {
      int p = acl.data[i].perms;
      printf("%s:%s:%s%s%s%s%s\n", acl.data[i].id.scheme, acl.data[i].id.id,
             p & ZOO_PERM_CREATE ? "c" : "", p & ZOO_PERM_DELETE ? "d" : "",
             p & ZOO_PERM_READ ? "r" : "", p & ZOO_PERM_WRITE ? "w" : "",
             p & ZOO_PERM_ADMIN ? "a" : "");
    }
    deallocate_ACL_vector(&acl);
    return 0;
  }
  if (strcmp(cmd, "owner") == 0 && argc == 2) {
    struct Stat st;
    rc = zoo_exists(zh, path, 0, &st);
    if (rc != ZOK)
      return fail("owner", rc);
    printf("%llx\n", (unsigned long long)st.ephemeralOwner);
    return 0;
  }
  return 2;
}

int main(int argc, char **argv) {
  const char *auth = NULL;
  zhandle_t *zh;
  struct timespec until;
  int code;
  alarm(60); /* a hung test helper must not hang the test */
  if (argc > 2 && strcmp(argv[1], "-a") == 0) {
    auth = argv[2];
    argv += 2, argc -= 2;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: cli_zkadmin [-a SCHEME:CRED] HOSTS COMMAND "
                    "PATH [ARGS...]\n");
    return 2;
  }
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zh = zookeeper_init(argv[1], watcher, 10000, NULL, NULL, 0);
  if (!zh) {
    perror("cli_zkadmin: zookeeper_init");
    return 2;
  }
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 15;
  pthread_mutex_lock(&mu);
  while (connected != 1 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
    ;
  pthread_mutex_unlock(&mu);
  if (connected != 1) {
    fprintf(stderr, "cli_zkadmin: no session with %s\n", argv[1]);
    zookeeper_close(zh);
    return 2;
  }
  if (auth) {
    const char *colon = strchr(auth, ':');
    char scheme[64];
    int rc;
    if (!colon || colon - auth >= (long)sizeof scheme)
      return 2;
    memcpy(scheme, auth, (size_t)(colon - auth));
    scheme[colon - auth] = '\0';
    rc = zoo_add_auth(zh, scheme, colon + 1, (int)strlen(colon + 1), on_auth,
                      NULL);
    if (rc != ZOK)
      return fail("add_auth", rc);
    pthread_mutex_lock(&mu);
    while (!auth_done && pthread_cond_timedwait(&cv, &mu, &until) == 0)
      ;
    pthread_mutex_unlock(&mu);
    if (!auth_done || auth_rc != ZOK)
      return fail("add_auth", auth_done ? auth_rc : ZOPERATIONTIMEOUT);
  }
  code = run(zh, argc - 2, argv + 2);
  if (code == 2)
    fprintf(stderr, "cli_zkadmin: bad command\n");
  zookeeper_close(zh);
  return code;
}
