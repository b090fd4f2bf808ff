/* SPDX-License-Identifier: Apache-2.0 */
/* zklock(1): run a command while holding a distributed lock, like flock(1)
 * but across machines. See man/zklock.1. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: zklock [-s HOSTS] [-r ROOT] [-n | -w SECONDS] [-E CODE]\n"
    "              [-t SESSION_MS] [-k SECONDS] [-a FILE] [--acl ACL] [--kazoo]\n"
    "              [--shared | --write | --permits N | --flat]\n"
    "              [--on-revoke SIGNAL] [--also NAME2 ...] [-v]\n"
    "              NAME [COMMAND [ARG...] | -c CMDSTRING]\n"
    "       zklock [-s HOSTS] [-r ROOT] [-a FILE] --list [--json] [NAME]\n"
    "       zklock [-s HOSTS] [-r ROOT] [-a FILE] --revoke [--grace SECONDS]\n"
    "              [--node NODE] NAME\n"
    "       zklock [-s HOSTS] [-a FILE] --sweep [--older-than SECONDS] ROOT\n"
    "\n"
    "Run COMMAND while holding the ZooKeeper lock ROOT/NAME; with no COMMAND,\n"
    "print the lock's token and node, and hold it until interrupted.\n"
    "\n"
    "  -s, --servers HOSTS       ensemble, host:port,...[/chroot] (default\n"
    "                            $ZKLOCK_SERVERS or 127.0.0.1:2181); not\n"
    "                            flock's -s: that is --shared\n"
    "  -r, --root ROOT           parent of the lock (default /locks)\n"
    "  -n, --nonblock            fail at once if the lock is held\n"
    "  -w, --wait SECONDS        give up after SECONDS (fractions allowed)\n"
    "  -E, --conflict-exit-code CODE  exit code when -n/-w give up (default 1)\n"
    "  -t, --session-timeout MS  ZooKeeper session timeout (default 10000)\n"
    "  -k, --kill-after SECONDS  after a lost lock, SIGKILL this long after\n"
    "                            SIGTERM (default 5, at most 86400)\n"
    "  -a, --auth-file FILE      authenticate with the line scheme:credentials\n"
    "                            in FILE (default $ZKLOCK_AUTH_FILE)\n"
    "      --acl open|creator    ACL of the nodes we create (default open;\n"
    "                            creator: only our identity may change them)\n"
    "  -c, --command CMDSTRING   run /bin/sh -c CMDSTRING as COMMAND (flock's\n"
    "                            NAME -c CMDSTRING works too)\n"
    "  -v, --verbose             the library's log on stderr (-vv: debug; or\n"
    "                            $ZKLOCK_LOG=error|warn|info|debug)\n"
    "      --kazoo               name our node as kazoo's Lock does, so that\n"
    "                            kazoo users of the same lock wait for us\n"
    "      --shared              hold in shared (read) mode: shared holders\n"
    "                            run together; exclusive ones wait for them\n"
    "      --write               exclusive, named as a read-write lock's\n"
    "                            writer (as Curator's; with --kazoo, kazoo's)\n"
    "      --permits N           take one of N leases of a semaphore: up to N\n"
    "                            holders at once (all must say the same N)\n"
    "      --flat                a flat lock: ROOT/NAME itself is the node,\n"
    "                            for many rarely contended keys; not FIFO\n"
    "                            (exclusive; not with --kazoo or --also)\n"
    "      --also NAME2          hold NAME2 too (repeatable): every lock is\n"
    "                            taken at once, in one transaction, so two\n"
    "                            runs naming them in any order never deadlock\n"
    "      --on-revoke SIGNAL    what COMMAND gets when someone asks for the\n"
    "                            lock back: TERM (default), INT, HUP, USR1,\n"
    "                            USR2, KILL, or none\n"
    "  -l, --list                list the holders and the waiters of NAME;\n"
    "                            with no NAME, every lock under ROOT\n"
    "      --json                with --list: print one JSON object instead\n"
    "                            (its keys: zklock(1))\n"
    "      --revoke              ask the holders of NAME to release it\n"
    "      --grace SECONDS       with --revoke: wait this long, then delete\n"
    "                            the nodes of holders that did not release\n"
    "      --node NODE           with --revoke: only this contender (a\n"
    "                            waiter is removed from the queue at once)\n"
    "      --sweep ROOT          delete the empty lock parents zklock made\n"
    "                            under ROOT (the server's container sweep,\n"
    "                            at once); nothing else is touched\n"
    "      --older-than SECONDS  with --sweep: only parents made or written\n"
    "                            at least this long ago\n"
    "  -h, --help                this text;  -V, --version\n"
    "\n"
    "Exit: COMMAND's status (128+N if killed by signal N), and 0 only if the\n"
    "lock was ours from COMMAND's start to its end (with no COMMAND: until\n"
    "the signal that ended the hold); 1 (or -E CODE) if not acquired, or\n"
    "nothing to list; 64 usage; 69 ensemble unreachable; 70 other failure;\n"
    "75 lock lost, or not confirmed, while COMMAND ran (or before it\n"
    "started, or while held); 77 authentication or permission refused;\n"
    "126/127 COMMAND not runnable/not found; 129/130/143 SIGHUP/INT/TERM\n"
    "before COMMAND started.\n";

struct opts {
  cli_conn_t cc;
  const char *root;
  int nonblock, list, json;
  double wait_s; /* < 0: wait forever */
  long conflict, grace_ms;
  int kazoo, shared, write;
  long permits; /* 0: a lock */
  int revoke;
  double revoke_grace_s; /* < 0: ask only */
  const char *node;
  const char *also[ZKL_MULTILOCK_MAX - 1]; /* --also: more locks, held with NAME */
  int nalso;
  int flat; /* --flat: ZKL_MUTEX_FLAT */
  int sweep;      /* --sweep ROOT */
  double older_s; /* --older-than; < 0: not given */
  const char *cmdstring; /* -c: COMMAND is /bin/sh -c CMDSTRING */
  int all;        /* --list with no NAME: every lock under ROOT */
};
/* main()'s options before parsing; fuzz/fuzz_zklock_cli.c starts from it too. */
#define OPTS_DEFAULT                                                           \
  {{cli_default_hosts(), 10000, NULL, -1, NULL, NULL, 0, 0}, "/locks", 0, 0, 0, -1, 1, 5000, 0, 0, 0, 0, 0, -1, NULL, {0}, 0, 0, 0, -1, NULL, 0}


/* What we hold: an exclusive mutex, a side of a read-write lock (`write`
 * or read), or a semaphore's lease; the mutex of the same name excludes
 * the others. */
struct lock {
  zkl_multilock_t *ml; /* with --also */
  zkl_mutex_t *m;
  zkl_rwlock_t *rw;
  int write;
  zkl_semaphore_t *sem;
  zkl_lease_t *lease;
};

static void cancel_lock(void *l) {
  struct lock *k = l;
  if (k->ml)
    zkl_multilock_cancel(k->ml);
  else if (k->sem)
    zkl_semaphore_cancel(k->sem);
  else if (k->rw)
    zkl_rwlock_cancel(k->rw);
  else
    zkl_mutex_cancel(k->m);
}

static int verify_lock(void *l) {
  struct lock *k = l;
  if (k->ml)
    return zkl_multilock_verify(k->ml);
  if (k->sem)
    return zkl_lease_verify(k->lease);
  return k->rw ? zkl_rwlock_verify(k->rw) : zkl_mutex_verify(k->m);
}

static void lost(int state) {
  if (state == ZKL_STATE_LOST)
    cli_notify_lost();
  else if (state == ZKL_STATE_REVOKE_REQUESTED)
    cli_notify_revoke();
}

static void on_state(zkl_mutex_t *m, int state, uint64_t token, void *ctx) {
  (void)m, (void)token, (void)ctx;
  lost(state);
}

static void on_rw_state(zkl_rwlock_t *rw, int state, uint64_t token,
                        void *ctx) {
  (void)rw, (void)token, (void)ctx;
  lost(state);
}

static void on_multi_state(zkl_multilock_t *ml, int state, uint64_t token,
                           void *ctx) {
  (void)ml, (void)token, (void)ctx;
  lost(state);
}

static void on_sem_state(zkl_semaphore_t *sem, int state, uint64_t token,
                         void *ctx) {
  (void)sem, (void)token, (void)ctx;
  lost(state);
}

/* The rest of parse() for --sweep ROOT: nothing else goes with it (the
 * root itself is checked by zkl_sweep). */
static int parse_sweep(int argc, struct opts *o, int *first) {
  if (!o->sweep)
    return cli_usage("--older-than goes with --sweep");
  if (o->list || o->json || o->revoke || o->nonblock || o->wait_s >= 0 ||
      o->flat || o->kazoo || o->shared || o->write || o->permits ||
      o->nalso || o->node || o->revoke_grace_s >= 0 || o->cmdstring)
    return cli_usage("--sweep takes only ROOT (and --older-than)");
  if (optind + 1 != argc)
    return cli_usage("--sweep takes one ROOT");
  *first = optind;
  return cli_conn_ready(&o->cc);
}

/* --list with no NAME: every lock under ROOT. */
static int parse_all(struct opts *o, int *first) {
  if (zkl_root_check(o->root) != ZKL_OK) {
    cli_error("invalid root '%s': an absolute path such as /locks", o->root);
    return CLI_EXIT_USAGE;
  }
  o->all = 1;
  *first = optind;
  return cli_conn_ready(&o->cc);
}

/* The rest of parse() for NAME and what follows it: COMMAND, -c
 * CMDSTRING (before NAME, or flock's NAME -c CMDSTRING), or nothing (a
 * hold until interrupted; --list; --revoke). */
static int parse_target(int argc, char **argv, struct opts *o, int *first) {
  int rest;
  if (o->json && !o->list)
    return cli_usage("--json goes with --list");
  if (o->list && o->revoke)
    return cli_usage("--list and --revoke cannot be combined");
  if (o->cmdstring && (o->list || o->revoke))
    return cli_usage("-c goes with a lock to hold, not --list or --revoke");
  if (o->nalso && (o->shared || o->write || o->permits || o->list ||
                   o->revoke))
    return cli_usage("--also goes with exclusive locks only");
  if (!o->revoke && (o->node || o->revoke_grace_s >= 0))
    return cli_usage("--grace and --node go with --revoke");
  if (optind >= argc && o->list)
    return parse_all(o, first);
  if (optind >= argc)
    return cli_usage("missing lock NAME");
  if (cli_check_target("lock", argv[optind], o->root) != 0)
    return CLI_EXIT_USAGE;
  if (o->node && cli_check_target("node", o->node, o->root) != 0)
    return CLI_EXIT_USAGE;
  rest = argc - optind - 1; /* words after NAME */
  if (!o->list && !o->revoke &&
      cli_command_after(argc, argv, optind, &o->cmdstring) != 0)
    return CLI_EXIT_USAGE;
  if (o->list && rest > 0)
    return cli_usage("--list takes only NAME");
  if (o->revoke && rest > 0)
    return cli_usage("--revoke takes only NAME");
  *first = optind;
  return cli_conn_ready(&o->cc);
}

static int parse(int argc, char **argv, struct opts *o, int *first) {
  static const struct option longs[] = {
      CLI_COMMON_LONGS,
      {"root", required_argument, 0, 'r'},
      {"nonblock", no_argument, 0, 'n'},
      {"wait", required_argument, 0, 'w'},
      {"timeout", required_argument, 0, 'w'},
      {"conflict-exit-code", required_argument, 0, 'E'},
      {"list", no_argument, 0, 'l'},
      {"json", no_argument, 0, 'j'},
      {"kazoo", no_argument, 0, 'K'},
      {"flat", no_argument, 0, 'F'},
      {"shared", no_argument, 0, 'R'},
      {"write", no_argument, 0, 'W'},
      {"permits", required_argument, 0, 'P'},
      {"revoke", no_argument, 0, 'X'},
      {"grace", required_argument, 0, 'G'},
      {"node", required_argument, 0, 'N'},
      {"sweep", no_argument, 0, 'S'},
      {"older-than", required_argument, 0, 'O'},
      {"also", required_argument, 0, 'A'},
      {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTS "r:nw:E:lhV", longs,
                          NULL)) != -1) {
    switch (c) {
    case 'r': o->root = optarg; break;
    case 'n': o->nonblock = 1; break;
    case 'l': o->list = 1; break;
    case 'j': o->json = 1; break;
    case 'K': o->kazoo = 1; break;
    case 'F': o->flat = 1; break;
    case 'R': o->shared = 1; break;
    case 'W': o->write = 1; break;
    case 'X': o->revoke = 1; break;
    case 'N': o->node = optarg; break;
    case 'S': o->sweep = 1; break;
    case 'c': o->cmdstring = optarg; break;
    case 'O':
      if (cli_seconds(optarg, &o->older_s) != 0 || o->older_s < 0)
        return cli_usage("--older-than needs a number of seconds");
      break;
    case 'A':
      if (o->nalso >= ZKL_MULTILOCK_MAX - 1)
        return cli_usage("too many --also: at most 63");
      if (cli_check_target("lock", optarg, o->root) != 0)
        return CLI_EXIT_USAGE;
      o->also[o->nalso++] = optarg;
      break;
    case 'G':
      if (cli_seconds(optarg, &o->revoke_grace_s) != 0 ||
          o->revoke_grace_s > CLI_GRACE_MAX_S)
        return cli_usage("--grace needs a number of seconds up to 86400");
      break;
    case 'P':
      if (cli_int(optarg, 1, ZKL_LEASES_MAX, &o->permits) != 0)
        return cli_usage("--permits needs a number of leases from 1 to 65536");
      break;
    case 'w':
      if (cli_seconds(optarg, &o->wait_s) != 0)
        return cli_usage("-w needs a number of seconds");
      break;
    case 'E':
      if (cli_int(optarg, 0, 255, &o->conflict) != 0)
        return cli_usage("-E needs an exit code from 0 to 255");
      break;
    case 'h': fputs(usage_text, stdout); return -1;
    case 'V': printf("zklock %s\n", zkl_version()); return -1;
    default: {
      int rc = cli_common_option(c, optarg, argv[optind - 1], &o->cc,
                                 &o->grace_ms);
      if (rc != 0)
        return rc < 0 ? CLI_EXIT_USAGE : rc;
    }
    }
  }
  if (o->shared + o->write + (o->permits > 0) > 1)
    return cli_usage("--shared, --write and --permits cannot be combined");
  if (o->permits && o->kazoo)
    return cli_usage("--permits has no kazoo naming");
  if (o->flat && (o->shared || o->write || o->permits || o->kazoo ||
                  o->nalso || o->revoke))
    return cli_usage("--flat is an exclusive lock only: not with --shared, "
                     "--write, --permits, --kazoo, --also or --revoke");
  if (o->nonblock && o->wait_s >= 0)
    return cli_usage("-n and -w cannot be combined");
  if (o->sweep || o->older_s >= 0)
    return parse_sweep(argc, o, first);
  return parse_target(argc, argv, o, first);
}

static int list_queue(zkl_client_t *c, const struct opts *o,
                      const char *name) {
  zkl_contender_t *q = NULL;
  size_t n = 0;
  char what[ZKL_ROOT_MAX + ZKL_NAME_MAX + 32];
  int rc = zkl_mutex_queue(c, o->root, name, &q, &n), held;
  if (rc != ZKL_OK) {
    snprintf(what, sizeof what, "cannot list %s/%s", o->root, name);
    return cli_fail(what, rc);
  }
  held = o->json ? cli_json_queue(stdout, "lock", o->root, name, q, n)
                 : cli_print_queue(q, n, "holder", "waiter");
  zkl_contenders_free(q, n);
  if (held == 0) /* for a person; scripts have the exit status */
    cli_error("%s/%s: nobody holds it", o->root, name);
  return held < 0 ? CLI_EXIT_SOFTWARE : held ? 0 : 1;
}

/* --list with no NAME: every lock under ROOT that has a contender. */
static int list_all(zkl_client_t *c, const struct opts *o) {
  zkl_lock_info_t *l = NULL;
  size_t n = 0;
  char what[ZKL_ROOT_MAX + 32];
  int rc = zkl_locks_list(c, o->root, &l, &n), held;
  if (rc != ZKL_OK) {
    snprintf(what, sizeof what, "cannot list %s", o->root);
    return cli_fail(what, rc);
  }
  held = o->json ? cli_json_locks(stdout, o->root, l, n) : cli_print_locks(l, n);
  zkl_locks_free(l, n);
  if (held == 0)
    cli_error("%s: nobody holds any lock there", o->root);
  return held < 0 ? CLI_EXIT_SOFTWARE : held ? 0 : 1;
}

/* --revoke: ask, and with --grace force; 0 when done, 1 when nobody
 * holds (or NODE is not in the queue). */
static int revoke(zkl_client_t *c, const struct opts *o, const char *name) {
  int64_t grace = o->revoke_grace_s < 0 ? -1
                                        : (int64_t)(o->revoke_grace_s * 1000);
  char what[ZKL_ROOT_MAX + ZKL_NAME_MAX + 32];
  unsigned forced = 0;
  int rc = zkl_revoke(c, o->root, name, o->node, grace, &forced);
  snprintf(what, sizeof what, "%s/%s", o->root, name);
  if (rc == ZKL_ENOTHELD) {
    cli_error("%s: %s", what,
              o->node ? "no such node in the queue" : "nobody holds it");
    return 1;
  }
  if (rc != ZKL_OK) {
    char msg[sizeof what + 32];
    snprintf(msg, sizeof msg, "cannot revoke %s", what);
    return cli_fail(msg, rc);
  }
  if (grace < 0)
    printf("%s: asked\n", what);
  else if (forced)
    printf("%s: %u node%s deleted\n", what, forced, forced > 1 ? "s" : "");
  else
    printf("%s: released\n", what);
  return 0;
}

/* --sweep ROOT: 0 when done (whatever it removed). */
static int sweep(zkl_client_t *c, const struct opts *o, const char *root) {
  int64_t older = o->older_s > 0 ? (int64_t)(o->older_s * 1000) : 0;
  size_t n = 0;
  int rc = zkl_sweep(c, root, older, &n);
  char what[ZKL_ROOT_MAX + 32];
  if (rc == ZKL_EINVAL) {
    cli_error("%.*s: not a valid root path", ZKL_ROOT_MAX, root);
    return CLI_EXIT_USAGE;
  }
  if (rc != ZKL_OK) {
    snprintf(what, sizeof what, "cannot sweep %.*s", ZKL_ROOT_MAX, root);
    return cli_fail(what, rc);
  }
  printf("%s: %zu empty lock parent%s removed\n", root, n, n == 1 ? "" : "s");
  return 0;
}

/* Releases what acquire() took; ZKL_OK or why the hold was not ours. */
static int unlock(struct lock *k) {
  if (k->ml)
    return zkl_multilock_unlock(k->ml);
  if (k->sem) {
    zkl_lease_t *l = k->lease;
    k->lease = NULL;
    return zkl_lease_release(l);
  }
  if (!k->rw)
    return zkl_mutex_unlock(k->m);
  return k->write ? zkl_rwlock_wrunlock(k->rw) : zkl_rwlock_rdunlock(k->rw);
}

/* Acquires as the options say: CLI_GOT_HOLD, or CLI_GOT_NOTHING with the exit
 * code to leave with in *code (the -E code when -n/-w gave up, 128+N
 * when signal N interrupted the wait, or a failure's). */
static cli_got_t acquire(struct lock *k, const struct opts *o, int *code) {
  int64_t until = zkl_now_ms() + (int64_t)(o->wait_s * 1000);
  int rc, sig;
  cli_set_waiting(1);
  if (k->ml)
    rc = o->nonblock        ? zkl_multilock_trylock(k->ml)
         : o->wait_s >= 0   ? zkl_multilock_timedlock(k->ml, until)
                            : zkl_multilock_lock(k->ml);
  else if (k->sem)
    rc = o->nonblock        ? zkl_semaphore_tryacquire(k->sem, &k->lease)
         : o->wait_s >= 0   ? zkl_semaphore_timedacquire(k->sem, until, &k->lease)
                            : zkl_semaphore_acquire(k->sem, &k->lease);
  else if (!k->rw)
    rc = o->nonblock        ? zkl_mutex_trylock(k->m)
         : o->wait_s >= 0   ? zkl_mutex_timedlock(k->m, until)
                            : zkl_mutex_lock(k->m);
  else if (k->write)
    rc = o->nonblock        ? zkl_rwlock_trywrlock(k->rw)
         : o->wait_s >= 0   ? zkl_rwlock_timedwrlock(k->rw, until)
                            : zkl_rwlock_wrlock(k->rw);
  else
    rc = o->nonblock        ? zkl_rwlock_tryrdlock(k->rw)
         : o->wait_s >= 0   ? zkl_rwlock_timedrdlock(k->rw, until)
                            : zkl_rwlock_rdlock(k->rw);
  cli_set_waiting(0);
  sig = cli_interrupted();
  if (rc == ZKL_OK && sig) { /* interrupted just as we got it */
    unlock(k);
    rc = ZKL_ECANCELED;
  }
  if (rc == ZKL_OK)
    return CLI_GOT_HOLD;
  if (rc == ZKL_ECANCELED)
    *code = 128 + sig;
  else if (rc == ZKL_EBUSY || rc == ZKL_ETIMEDOUT)
    *code = (int)o->conflict;
  else
    *code = cli_fail("cannot lock", rc);
  return CLI_GOT_NOTHING;
}

/* The token of what acquire() took. */
static uint64_t token_of(const struct lock *k) {
  uint64_t token = 0;
  if (k->ml)
    zkl_multilock_token(k->ml, &token);
  else if (k->sem)
    zkl_lease_token(k->lease, &token);
  else if (k->rw)
    zkl_rwlock_token(k->rw, &token);
  else
    zkl_mutex_token(k->m, &token);
  return token;
}

/* The path of our node into buf ("" with --also: several nodes). */
static void node_of(const struct lock *k, char *buf, size_t size) {
  buf[0] = '\0';
  if (k->sem)
    zkl_lease_node_path(k->lease, buf, size);
  else if (k->rw)
    zkl_rwlock_node_path(k->rw, buf, size);
  else if (k->m)
    zkl_mutex_node_path(k->m, buf, size);
}

static int state_of(const struct lock *k) {
  return k->ml    ? zkl_multilock_state(k->ml)
         : k->sem ? zkl_lease_state(k->lease)
         : k->rw  ? zkl_rwlock_state(k->rw)
                  : zkl_mutex_state(k->m);
}

/* No COMMAND: as etcdctl lock, print the token (and node) and hold until
 * interrupted. 0 when the signal ended a hold the release vouches for;
 * 75 when it was lost, or the release cannot vouch for it. */
static int hold_locked(zkl_client_t *c, struct lock *k, int64_t granted) {
  char node[1024];
  int code, rc;
  cli_test_grant_delay();
  code = cli_vouch(c, granted, state_of(k), verify_lock, k);
  if (code == 0) {
    node_of(k, node, sizeof node);
    printf("token=%" PRIu64, token_of(k));
    if (node[0]) {
      fputs(" node=", stdout);
      cli_put_escaped(node, strlen(node));
    }
    putchar('\n');
    /* a reader of the pipe learns it now; one that went away never will,
     * and holding for nobody would only keep others out */
    if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_error("cannot write the token (%s): releasing", strerror(errno));
      code = CLI_EXIT_SOFTWARE;
    } else {
      code = cli_hold();
    }
  }
  rc = unlock(k);
  if (rc != ZKL_OK && code == 0) {
    cli_error("lock lost while held (%s: %s): it may not have been ours "
              "throughout", zkl_err_name(rc), zkl_strerror(rc));
    code = CLI_EXIT_LOST;
  }
  return code;
}

static int run_locked(zkl_client_t *c, struct lock *k, const char *name,
                      char **cmd, long grace_ms, int64_t granted) {
  char tok[64], nm[ZKL_NAME_MAX + 16], node[1024 + 16], mode[32];
  char *env[5];
  int code, rc;
  snprintf(tok, sizeof tok, "ZKLOCK_TOKEN=%" PRIu64, token_of(k));
  snprintf(nm, sizeof nm, "ZKLOCK_NAME=%s", name);
  snprintf(mode, sizeof mode, "ZKLOCK_MODE=%s",
           k->sem                ? "lease"
           : k->rw && !k->write  ? "shared"
                                 : "exclusive");
  strcpy(node, "ZKLOCK_NODE=");
  node_of(k, node + 12, sizeof node - 12); /* --also: none is the one */
  env[0] = tok, env[1] = nm, env[2] = node, env[3] = mode, env[4] = NULL;
  cli_test_grant_delay();
  code = cli_vouch(c, granted, state_of(k), verify_lock, k);
  if (code == 0)
    code = cli_run(cmd, env, grace_ms);
  /* the last unlock is the ensemble's verdict on the whole run: anything
   * but ZKL_OK means someone else may have held the lock meanwhile */
  rc = unlock(k);
  if (rc != ZKL_OK && cli_started()) {
    if (!cli_lost_reported())
      cli_error("lock lost while %s ran (%s: %s): the run may not have "
                "been exclusive", cmd[0], zkl_err_name(rc), zkl_strerror(rc));
    code = CLI_EXIT_LOST;
  }
  return code;
}

int main(int argc, char **argv) {
  struct opts o = OPTS_DEFAULT;
  zkl_mutex_options_t mo = {0};
  zkl_rwlock_options_t ro = {0};
  zkl_semaphore_options_t so = {0};
  zkl_client_t *c = NULL;
  struct lock k = {NULL, NULL, NULL, 0, NULL, NULL};
  zkl_multilock_options_t mlo = {0};
  int first = 0, code, rc;
  cli_prog = "zklock";
  cli_what = "lock";
  if (cli_fds_record() != 0) {
    cli_error("cannot record open descriptors");
    return CLI_EXIT_SOFTWARE;
  }
  code = parse(argc, argv, &o, &first);
  if (code)
    return code < 0 ? 0 : code;
  if (cli_signals_start() != 0) {
    cli_error("cannot set up signal handling");
    return CLI_EXIT_SOFTWARE;
  }
  if ((code = cli_connect(&c, &o.cc)) != 0)
    return code;
  if (o.sweep) {
    code = sweep(c, &o, argv[first]);
    zkl_client_destroy(c);
    return code;
  }
  if (o.list || o.revoke) {
    code = o.all    ? list_all(c, &o)
           : o.list ? list_queue(c, &o, argv[first])
                    : revoke(c, &o, argv[first]);
    zkl_client_destroy(c);
    return code;
  }
  mo.root = ro.root = so.root = o.root;
  mo.state_fn = on_state;
  ro.state_fn = on_rw_state;
  so.state_fn = on_sem_state;
  mo.flags = o.kazoo ? ZKL_MUTEX_KAZOO : o.flat ? ZKL_MUTEX_FLAT : 0;
  ro.flags = o.kazoo ? ZKL_RWLOCK_KAZOO : 0;
  k.write = o.write;
  mlo.root = o.root;
  mlo.state_fn = on_multi_state;
  mlo.flags = mo.flags;
  if (o.nalso) {
    zkl_multilock_member_t mm[ZKL_MULTILOCK_MAX];
    int i;
    mm[0].name = argv[first];
    mm[0].mode = ZKL_MODE_EXCLUSIVE;
    for (i = 0; i < o.nalso; i++) {
      mm[i + 1].name = o.also[i];
      mm[i + 1].mode = ZKL_MODE_EXCLUSIVE;
    }
    rc = zkl_multilock_create(&k.ml, c, mm, (size_t)o.nalso + 1, &mlo);
  } else if (o.permits)
    rc = zkl_semaphore_create(&k.sem, c, argv[first], (unsigned)o.permits, &so);
  else if (o.shared || o.write)
    rc = zkl_rwlock_create(&k.rw, c, argv[first], &ro);
  else
    rc = zkl_mutex_create(&k.m, c, argv[first], &mo);
  if (rc != ZKL_OK) {
    code = cli_fail("cannot create the lock object", rc);
    zkl_client_destroy(c);
    return code;
  }
  cli_set_cancel(cancel_lock, &k);
  if (acquire(&k, &o, &code) == CLI_GOT_HOLD) {
    int64_t granted = zkl_now_ms();
    char *sh[4];
    if (o.cmdstring)
      code = run_locked(c, &k, argv[first], cli_shell_command(o.cmdstring, sh),
                        o.grace_ms, granted);
    else if (first + 1 < argc)
      code = run_locked(c, &k, argv[first], argv + first + 1, o.grace_ms,
                        granted);
    else
      code = hold_locked(c, &k, granted);
  }
  cli_set_cancel(NULL, NULL);
  if (k.lease)
    zkl_lease_release(k.lease);
  zkl_multilock_destroy(k.ml);
  zkl_semaphore_destroy(k.sem);
  zkl_rwlock_destroy(k.rw);
  zkl_mutex_destroy(k.m);
  zkl_client_destroy(c);
  return code;
}
