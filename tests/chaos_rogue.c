/* chaos_rogue.c: the hostile session of the fault-injection suite
 * (tests/chaos.py drives it). It talks to the ensemble directly, with the
 * plain ZooKeeper C client, and does to the lock directories
 * ROOT/l0..l<LOCKS-1> what a buggy or malicious neighbour could: plant
 * nodes, rewrite, delete and re-create the nodes of zklock's contenders.
 *
 *   chaos_rogue -s HOSTS -r ROOT -l LOCKS [-T SESSION_MS] [-a SCHEME:CRED]
 *
 * It prints "ready session=HEX", then answers one line per command read
 * on stdin, "ID key=value ...", in order:
 *
 *   ID plant K          plant persistent and ephemeral nodes in lK (only
 *                       if lK exists: the rogue never creates a lock
 *                       directory, so that under zklock's creator ACL it
 *                       meets only directories it may not write)
 *                       -> planted=N exists=N noauth=N nonode=N err=N
 *   ID rewrite K T      setData on lK's node whose czxid (fencing token) is T
 *   ID delete K T       delete that node
 *   ID recreate K T P|E delete it and create the same path again, persistent
 *                       (P) or ephemeral on the rogue's session (E)
 *   ID delwaiter K      delete the last waiter of lK's queue (a contender
 *                       that is not the head)
 *                       -> result=ok|noauth|nonode|notfound|none|unsure|err
 *                          token=T path=P [new=CZXID create=RESULT]
 *   ID unplant          delete the rogue's ephemeral nodes (they are real
 *                       contenders to zklock and would block a queue)
 *   ID cleanup          delete every node the rogue created
 *                       -> removed=N gone=N stolen=N err=N
 *                       (stolen: re-created nodes someone else deleted)
 *   ID count            -> orphans=N rogue=N: children of the lock
 *                       directories that are not the rogue's (left by
 *                       zklock's clients), and those that are; flat
 *                       locks' nodes ROOT/f0.. count as orphans too
 *
 * "unsure" means the connection dropped before the answer to a delete:
 * the node is gone, but maybe not by our hand.
 * Exits on end of input (its session, and its ephemeral nodes, go).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#define MAX_LOCKS 64
#define PATH_MAX_LEN 1024
/* A lock directory's path, short enough that a child's path always fits. */
#define DIR_LEN 600
/* A positive code, so it never collides with ZooKeeper's. */
#define RC_UNSURE 1
/* How long one command may keep retrying through connection loss. */
#define RETRY_MS 20000

static const char *hosts, *root = "/chaos", *auth;
static int nlocks = 3, session_ms = 20000;
static zhandle_t *zh;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int zstate;
static unsigned tag;

/* Every node the rogue created: the orphan count must not blame zklock
 * for them, and cleanup must not delete a node of the same name that is
 * not ours (hence the czxid). */
typedef struct {
  char *path;
  int64_t czxid;
  int eph;
  int recreated; /* at the path of a contender's node we deleted */
} mine_t;
static mine_t *mine;
static size_t nmine, capmine;

/* What a contender's data looks like, laced with terminal escapes, bare
 * carriage returns and NULs: whoever prints or parses node data must cope. */
static const char evil_data[] =
    "\x1b[2J\x1b[H\x1b]0;owned\x07zklock 1\r\nhost=\x1b[31mrogue\x1b[0m\n"
    "pid=1\0pid=2\nthread=\x1b[6n\n\n\x7f\x01\x02\x03";
static const char evil_cr[] = "zklock 1\rhost=\rpid=-1\r\r";
static const char evil_nul[] = "\0\0\0zklock 1\nhost=\0\n";

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int retryable(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONMOVED;
}

static void watcher(zhandle_t *h, int type, int state, const char *path, void *ctx) {
  (void)h, (void)path, (void)ctx;
  if (type != ZOO_SESSION_EVENT) return;
  pthread_mutex_lock(&mu);
  zstate = state;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void on_auth(int rc, const void *data) {
  (void)data;
  if (rc != ZOK) fprintf(stderr, "chaos_rogue: add_auth: %s\n", zerror(rc));
}

static void session_open(void) {
  struct timespec until;
  zstate = 0;
  zh = zookeeper_init(hosts, watcher, session_ms, NULL, NULL, 0);
  if (!zh) {
    perror("chaos_rogue: zookeeper_init");
    exit(1);
  }
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 60;
  pthread_mutex_lock(&mu);
  while (zstate != ZOO_CONNECTED_STATE &&
         pthread_cond_timedwait(&cv, &mu, &until) == 0) {
  }
  pthread_mutex_unlock(&mu);
  if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
    fprintf(stderr, "chaos_rogue: no session with %s within 60 s\n", hosts);
    exit(1);
  }
  if (auth) {
    /* a digest identity other than the clients': authenticated, but not
     * the creator of their nodes */
    const char *colon = strchr(auth, ':');
    char scheme[32];
    size_t n = colon ? (size_t)(colon - auth) : 0;
    if (!colon || n >= sizeof scheme) {
      fprintf(stderr, "chaos_rogue: -a takes SCHEME:CREDENTIAL\n");
      exit(64);
    }
    memcpy(scheme, auth, n);
    scheme[n] = '\0';
    if (zoo_add_auth(zh, scheme, colon + 1, (int)strlen(colon + 1), on_auth, NULL) != ZOK) {
      fprintf(stderr, "chaos_rogue: add_auth failed\n");
      exit(1);
    }
  }
}

static int64_t session_id(void) {
  const clientid_t *id = zoo_client_id(zh);
  return id ? id->client_id : 0;
}

/* An expired session takes its ephemeral nodes along: forget them and
 * start over, so that one long partition does not end the suite. */
static void session_check(void) {
  size_t i, k = 0;
  int st = zoo_state(zh);
  if (st != ZOO_EXPIRED_SESSION_STATE && st != ZOO_AUTH_FAILED_STATE) return;
  fprintf(stderr, "chaos_rogue: session ended (state %d): a new one\n", st);
  zookeeper_close(zh);
  for (i = 0; i < nmine; i++) {
    if (mine[i].eph)
      free(mine[i].path);
    else
      mine[k++] = mine[i];
  }
  nmine = k;
  session_open();
}

static void remember(const char *path, int64_t czxid, int eph, int recreated) {
  if (nmine == capmine) {
    capmine = capmine ? 2 * capmine : 64;
    mine = realloc(mine, capmine * sizeof *mine);
    if (!mine) exit(1);
  }
  mine[nmine].path = strdup(path);
  if (!mine[nmine].path) exit(1);
  mine[nmine].czxid = czxid;
  mine[nmine].eph = eph;
  mine[nmine].recreated = recreated;
  nmine++;
}

static int is_mine(const char *path, const struct Stat *st) {
  size_t i;
  if (st->ephemeralOwner != 0 && st->ephemeralOwner == session_id()) return 1;
  for (i = 0; i < nmine; i++)
    if (mine[i].czxid == st->czxid && strcmp(mine[i].path, path) == 0) return 1;
  return 0;
}

static int stat_node(const char *path, struct Stat *st) {
  int64_t end = now_ms() + RETRY_MS;
  int rc;
  while (retryable(rc = zoo_exists(zh, path, 0, st)) && now_ms() < end) nap_ms(200);
  return rc;
}

static int list_dir(const char *dir, struct String_vector *sv) {
  int64_t end = now_ms() + RETRY_MS;
  int rc;
  memset(sv, 0, sizeof *sv);
  while (retryable(rc = zoo_get_children(zh, dir, 0, sv)) && now_ms() < end) nap_ms(200);
  return rc;
}

static void lock_dir(char *buf, size_t size, int k) {
  snprintf(buf, size, "%s/l%d", root, k);
}

/* Delete path if it is still the node created at czxid (0: whatever node
 * is there). After a lost answer the stat tells whether it went. */
static int rogue_delete(const char *path, int64_t czxid) {
  int64_t end = now_ms() + RETRY_MS;
  struct Stat st;
  int rc = stat_node(path, &st), lost_answer = 0;
  while (rc == ZOK) {
    if (czxid && st.czxid != czxid) return lost_answer ? RC_UNSURE : ZNONODE;
    rc = zoo_delete(zh, path, -1);
    if (!retryable(rc)) return rc == ZNONODE && lost_answer ? RC_UNSURE : rc;
    lost_answer = 1;
    if (now_ms() >= end) return rc;
    nap_ms(200);
    rc = stat_node(path, &st);
  }
  return rc == ZNONODE && lost_answer ? RC_UNSURE : rc;
}

/* Create path (mode as zoo_create) and remember it. A lost answer is
 * resolved by looking: nobody but the rogue creates these names, so a
 * node found there is ours (if ephemeral, it must be on our session). For
 * a sequential node the name is unknown then, hence the unique prefix. */
static int rogue_create(const char *path, const char *data, int len, int mode, int recreated,
                        int64_t *czxid) {
  int64_t end = now_ms() + RETRY_MS;
  int eph = mode == ZOO_EPHEMERAL || mode == ZOO_EPHEMERAL_SEQUENTIAL;
  int seq = mode == ZOO_EPHEMERAL_SEQUENTIAL;
  char made[PATH_MAX_LEN];
  struct Stat st;
  int rc;
  for (;;) {
    rc = zoo_create2(zh, path, data, len, &ZOO_OPEN_ACL_UNSAFE, mode, made, sizeof made, &st);
    if (rc == ZOK) {
      remember(made, st.czxid, eph, recreated);
      if (czxid) *czxid = st.czxid;
      return ZOK;
    }
    if (!retryable(rc) || now_ms() >= end) return rc;
    nap_ms(200);
    if (seq) {
      struct String_vector sv;
      const char *slash = strrchr(path, '/');
      char dir[DIR_LEN];
      int i, found = 0;
      snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
      if (list_dir(dir, &sv) != ZOK) continue;
      for (i = 0; i < sv.count && !found; i++) {
        if (strncmp(sv.data[i], slash + 1, strlen(slash + 1)) != 0) continue;
        snprintf(made, sizeof made, "%s/%s", dir, sv.data[i]);
        if (stat_node(made, &st) == ZOK && st.ephemeralOwner == session_id()) found = 1;
      }
      deallocate_String_vector(&sv);
      if (!found) continue;
    } else {
      if (stat_node(path, &st) != ZOK) continue;
      if (eph && st.ephemeralOwner != session_id()) return ZNODEEXISTS;
      snprintf(made, sizeof made, "%s", path);
    }
    remember(made, st.czxid, eph, recreated);
    if (czxid) *czxid = st.czxid;
    return ZOK;
  }
}

static const char *result_name(int rc) {
  switch (rc) {
    case ZOK: return "ok";
    case ZNOAUTH: return "noauth";
    case ZNONODE: return "nonode";
    case ZNODEEXISTS: return "exists";
    case RC_UNSURE: return "unsure";
    default: return "err";
  }
}

static void cmd_plant(int k, char *out, size_t size) {
  struct {
    const char *name;
    const char *data;
    int len;
    int eph, seq;
  } specs[] = {
      /* persistent, so never going away: zklock must not wait behind
       * them; a low sequence, and two that put 2^31 between sequences
       * of one listing, where serial-number order stops being an order */
      {"planted-lock-0000000001", evil_data, (int)sizeof evil_data - 1, 0, 0},
      {"zz-lock--2147483647", evil_cr, (int)sizeof evil_cr - 1, 0, 0},
      {"zz-lock-2147483647", evil_nul, (int)sizeof evil_nul - 1, 0, 0},
      /* names that only look like contenders */
      {"x-lock-12", evil_data, (int)sizeof evil_data - 1, 0, 0},
      {"planted-not-a-contender", evil_cr, (int)sizeof evil_cr - 1, 0, 0},
      /* ephemeral on a live session: real contenders to zklock, which
       * may make everyone wait (sequences 0, 2^31 - 2 and -2^31 form a
       * cycle in serial-number order) but must never make two holders */
      {"planted-eph-lock-0000000000", evil_data, (int)sizeof evil_data - 1, 1, 0},
      {"zz-eph-lock--2147483648", evil_nul, (int)sizeof evil_nul - 1, 1, 0},
      {"zz-eph-lock-2147483646", evil_cr, (int)sizeof evil_cr - 1, 1, 0},
      {NULL, evil_data, (int)sizeof evil_data - 1, 1, 1},
  };
  int counts[5] = {0}; /* planted exists noauth nonode err */
  char dir[DIR_LEN], path[PATH_MAX_LEN];
  struct Stat st;
  size_t i;
  lock_dir(dir, sizeof dir, k);
  if (stat_node(dir, &st) != ZOK) {
    snprintf(out, size, "planted=0 exists=0 noauth=0 nonode=1 err=0");
    return;
  }
  for (i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    int mode = specs[i].seq ? ZOO_EPHEMERAL_SEQUENTIAL : specs[i].eph ? ZOO_EPHEMERAL : ZOO_PERSISTENT;
    int rc;
    if (specs[i].name)
      snprintf(path, sizeof path, "%s/%s", dir, specs[i].name);
    else
      snprintf(path, sizeof path, "%s/rogue%ux%u-lock-", dir, (unsigned)getpid(), ++tag);
    rc = rogue_create(path, specs[i].data, specs[i].len, mode, 0, NULL);
    counts[rc == ZOK ? 0 : rc == ZNODEEXISTS ? 1 : rc == ZNOAUTH ? 2 : rc == ZNONODE ? 3 : 4]++;
    if (rc != ZOK && rc != ZNODEEXISTS && rc != ZNOAUTH && rc != ZNONODE)
      fprintf(stderr, "chaos_rogue: create %s: %s\n", path, zerror(rc));
  }
  snprintf(out, size, "planted=%d exists=%d noauth=%d nonode=%d err=%d", counts[0], counts[1],
           counts[2], counts[3], counts[4]);
}

/* The child of lK whose czxid is token. */
static int find_token(int k, int64_t token, char *path, size_t size) {
  char dir[DIR_LEN];
  struct String_vector sv;
  struct Stat st;
  int i, rc;
  lock_dir(dir, sizeof dir, k);
  if ((rc = list_dir(dir, &sv)) != ZOK) return rc;
  rc = ZNONODE;
  for (i = 0; i < sv.count && rc != ZOK; i++) {
    snprintf(path, size, "%s/%s", dir, sv.data[i]);
    if (stat_node(path, &st) == ZOK && st.czxid == token) rc = ZOK;
  }
  deallocate_String_vector(&sv);
  return rc;
}

static void cmd_victim(const char *cmd, int k, int64_t token, char mode, char *out, size_t size) {
  char path[PATH_MAX_LEN];
  int rc = find_token(k, token, path, sizeof path);
  if (rc != ZOK) {
    snprintf(out, size, "result=%s token=%" PRId64, rc == ZNONODE ? "notfound" : "err", token);
    return;
  }
  if (strcmp(cmd, "rewrite") == 0) {
    int64_t end = now_ms() + RETRY_MS;
    /* setData is idempotent: after a lost answer just send it again */
    while (retryable(rc = zoo_set(zh, path, evil_data, (int)sizeof evil_data - 1, -1)) &&
           now_ms() < end)
      nap_ms(200);
    snprintf(out, size, "result=%s token=%" PRId64 " path=%s", result_name(rc), token, path);
    return;
  }
  rc = rogue_delete(path, token);
  if (strcmp(cmd, "recreate") == 0 && (rc == ZOK || rc == RC_UNSURE)) {
    int64_t czxid = 0;
    int crc = rogue_create(path, evil_cr, (int)sizeof evil_cr - 1,
                           mode == 'E' ? ZOO_EPHEMERAL : ZOO_PERSISTENT, 1, &czxid);
    snprintf(out, size, "result=%s token=%" PRId64 " path=%s new=%" PRId64 " create=%s",
             result_name(rc), token, path, czxid, result_name(crc));
    return;
  }
  snprintf(out, size, "result=%s token=%" PRId64 " path=%s", result_name(rc), token, path);
}

/* The sequence of a zklock contender's name: 10 digits after the marker
 * of a mutex, a read-write lock or a semaphore. */
static int contender_seq(const char *name, long *seq) {
  static const char *const markers[] = {"-lock-", "__READ__", "__WRIT__", "-lease-"};
  size_t i, n = strlen(name);
  char *end;
  for (i = 0; i < sizeof markers / sizeof markers[0]; i++) {
    size_t m = strlen(markers[i]);
    const char *p = name + n - 10;
    if (n < m + 10 || memcmp(p - m, markers[i], m) != 0 || *p < '0' || *p > '9') continue;
    *seq = strtol(p, &end, 10);
    return *end == '\0';
  }
  return 0;
}

static void cmd_delwaiter(int k, char *out, size_t size) {
  char dir[DIR_LEN], path[PATH_MAX_LEN], last[PATH_MAX_LEN] = "";
  struct String_vector sv;
  struct Stat st;
  int64_t token = 0;
  long seq, best = -1;
  int i, n = 0, rc;
  lock_dir(dir, sizeof dir, k);
  if ((rc = list_dir(dir, &sv)) != ZOK) {
    snprintf(out, size, "result=%s token=0", result_name(rc));
    return;
  }
  for (i = 0; i < sv.count; i++) {
    if (!contender_seq(sv.data[i], &seq)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, sv.data[i]);
    if (stat_node(path, &st) != ZOK || st.ephemeralOwner == 0 || is_mine(path, &st)) continue;
    n++;
    if (seq > best) {
      best = seq;
      token = st.czxid;
      snprintf(last, sizeof last, "%s", path);
    }
  }
  deallocate_String_vector(&sv);
  /* the tail of a queue of two or more is surely waiting */
  if (n < 2) {
    snprintf(out, size, "result=none token=0");
    return;
  }
  rc = rogue_delete(last, token);
  snprintf(out, size, "result=%s token=%" PRId64 " path=%s", result_name(rc), token, last);
}

static void cmd_remove(int only_eph, char *out, size_t size) {
  size_t i, k = 0;
  int removed = 0, gone = 0, stolen = 0, err = 0;
  for (i = 0; i < nmine; i++) {
    int rc;
    if (only_eph && !mine[i].eph) {
      mine[k++] = mine[i];
      continue;
    }
    rc = rogue_delete(mine[i].path, mine[i].czxid);
    if (rc == ZOK) {
      removed++;
    } else if (rc == ZNONODE || rc == RC_UNSURE) {
      gone++;
      /* only the holder whose node it replaced could have taken it */
      if (mine[i].recreated && rc == ZNONODE) {
        fprintf(stderr, "chaos_rogue: %s (czxid %" PRId64 ") deleted by someone else\n",
                mine[i].path, mine[i].czxid);
        stolen++;
      }
    } else {
      fprintf(stderr, "chaos_rogue: delete %s: %s\n", mine[i].path, zerror(rc));
      err++;
      mine[k++] = mine[i];
      continue;
    }
    free(mine[i].path);
  }
  nmine = k;
  snprintf(out, size, "removed=%d gone=%d stolen=%d err=%d", removed, gone, stolen, err);
}

static void cmd_count(char *out, size_t size) {
  char dir[DIR_LEN], path[PATH_MAX_LEN];
  struct String_vector sv;
  struct Stat st;
  int k, i, rc, orphans = 0, rogue = 0;
  for (k = 0; k < nlocks; k++) {
    lock_dir(dir, sizeof dir, k);
    rc = list_dir(dir, &sv);
    if (rc == ZNONODE) continue;
    if (rc != ZOK) {
      snprintf(out, size, "orphans=-1 rogue=-1 err=%s", zerror(rc));
      return;
    }
    for (i = 0; i < sv.count; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, sv.data[i]);
      if (stat_node(path, &st) != ZOK) continue;
      if (is_mine(path, &st))
        rogue++;
      else
        orphans++;
    }
    deallocate_String_vector(&sv);
  }
  /* a flat lock's node (chaos_client -m mixed) is ROOT/fK itself */
  for (k = 0; k < nlocks; k++) {
    snprintf(path, sizeof path, "%s/f%d", root, k);
    if (stat_node(path, &st) == ZOK)
      orphans++;
  }
  snprintf(out, size, "orphans=%d rogue=%d", orphans, rogue);
}

static void usage(void) {
  fprintf(stderr, "usage: chaos_rogue -s HOSTS -r ROOT -l LOCKS [-T SESSION_MS] [-a SCHEME:CRED]\n");
  exit(64);
}

int main(int argc, char **argv) {
  char line[256], cmd[32], out[PATH_MAX_LEN + 256];
  int c;
  while ((c = getopt(argc, argv, "s:r:l:T:a:")) != -1) {
    switch (c) {
      case 's': hosts = optarg; break;
      case 'r': root = optarg; break;
      case 'l': nlocks = atoi(optarg); break;
      case 'T': session_ms = atoi(optarg); break;
      case 'a': auth = optarg; break;
      default: usage();
    }
  }
  if (!hosts || nlocks < 1 || nlocks > MAX_LOCKS || session_ms <= 0 ||
      strlen(root) > DIR_LEN - 8)
    usage();
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  session_open();
  printf("ready session=%" PRIx64 "\n", (uint64_t)session_id());
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    long id;
    int k = -1, n;
    int64_t token = 0;
    char mode = 'P';
    n = sscanf(line, "%ld %31s %d %" SCNd64 " %c", &id, cmd, &k, &token, &mode);
    if (n < 2) continue;
    session_check();
    if (n >= 3 && (k < 0 || k >= nlocks))
      snprintf(out, sizeof out, "result=err bad-lock");
    else if (strcmp(cmd, "plant") == 0 && n >= 3)
      cmd_plant(k, out, sizeof out);
    else if ((strcmp(cmd, "rewrite") == 0 || strcmp(cmd, "delete") == 0 ||
              strcmp(cmd, "recreate") == 0) && n >= 4)
      cmd_victim(cmd, k, token, mode, out, sizeof out);
    else if (strcmp(cmd, "delwaiter") == 0 && n >= 3)
      cmd_delwaiter(k, out, sizeof out);
    else if (strcmp(cmd, "unplant") == 0)
      cmd_remove(1, out, sizeof out);
    else if (strcmp(cmd, "cleanup") == 0)
      cmd_remove(0, out, sizeof out);
    else if (strcmp(cmd, "count") == 0)
      cmd_count(out, sizeof out);
    else
      snprintf(out, sizeof out, "result=err unknown-command");
    printf("%ld %s\n", id, out);
    fflush(stdout);
  }
  zookeeper_close(zh);
  return 0;
}
