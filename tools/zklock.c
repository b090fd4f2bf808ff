/* zklock(1): run a command while holding a distributed lock, like flock(1)
 * but across machines. See man/zklock.1. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: zklock [-s HOSTS] [-r ROOT] [-n | -w SECONDS] [-E CODE]\n"
    "              [-t SESSION_MS] [-k SECONDS] NAME COMMAND [ARG...]\n"
    "       zklock [-s HOSTS] [-r ROOT] --list NAME\n"
    "\n"
    "Run COMMAND while holding the ZooKeeper lock ROOT/NAME.\n"
    "\n"
    "  -s, --servers HOSTS       ensemble (default $ZKLOCK_SERVERS or 127.0.0.1:2181)\n"
    "  -r, --root ROOT           parent of the lock (default /locks)\n"
    "  -n, --nonblock            fail at once if the lock is held\n"
    "  -w, --wait SECONDS        give up after SECONDS (fractions allowed)\n"
    "  -E, --conflict-exit-code CODE  exit code when -n/-w give up (default 1)\n"
    "  -t, --session-timeout MS  ZooKeeper session timeout (default 10000)\n"
    "  -k, --kill-after SECONDS  after a lost lock, SIGKILL this long after\n"
    "                            SIGTERM (default 5)\n"
    "  -l, --list                list the holder and the waiters of NAME\n"
    "  -h, --help                this text;  -V, --version\n"
    "\n"
    "Exit: COMMAND's status (128+N if killed by signal N); 1 (or -E CODE) if\n"
    "not acquired; 64 usage; 69 ensemble unreachable; 70 other failure;\n"
    "75 lock lost while COMMAND ran; 126/127 COMMAND not runnable/not found.\n";

struct opts {
  const char *hosts, *root;
  int nonblock, list;
  double wait_s; /* < 0: wait forever */
  long conflict, session_ms, grace_ms;
};

static void cancel_lock(void *m) { zkl_mutex_cancel(m); }

static void on_state(zkl_mutex_t *m, int state, uint64_t token, void *ctx) {
  (void)m, (void)token, (void)ctx;
  if (state == ZKL_STATE_LOST)
    cli_notify_lost();
}

static int parse(int argc, char **argv, struct opts *o, int *first) {
  static const struct option longs[] = {
      {"servers", required_argument, 0, 's'},
      {"root", required_argument, 0, 'r'},
      {"nonblock", no_argument, 0, 'n'},
      {"wait", required_argument, 0, 'w'},
      {"timeout", required_argument, 0, 'w'},
      {"conflict-exit-code", required_argument, 0, 'E'},
      {"session-timeout", required_argument, 0, 't'},
      {"kill-after", required_argument, 0, 'k'},
      {"list", no_argument, 0, 'l'},
      {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+s:r:nw:E:t:k:lhV", longs, NULL)) !=
         -1) {
    switch (c) {
    case 's': o->hosts = optarg; break;
    case 'r': o->root = optarg; break;
    case 'n': o->nonblock = 1; break;
    case 'l': o->list = 1; break;
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
      int rc = cli_common_option(c, optarg, argv[optind - 1], &o->session_ms,
                                 &o->grace_ms);
      if (rc != 0)
        return rc < 0 ? CLI_EXIT_USAGE : rc;
    }
    }
  }
  if (o->nonblock && o->wait_s >= 0)
    return cli_usage("-n and -w cannot be combined");
  if (optind >= argc)
    return cli_usage("missing lock NAME");
  if (cli_check_target("lock", argv[optind], o->root) != 0)
    return CLI_EXIT_USAGE;
  if (!o->list && optind + 1 >= argc)
    return cli_usage("missing COMMAND");
  if (o->list && optind + 1 < argc)
    return cli_usage("--list takes only NAME");
  *first = optind;
  return 0;
}

static int list_queue(zkl_client_t *c, const struct opts *o,
                      const char *name) {
  zkl_contender_t *q = NULL;
  size_t n = 0;
  int rc = zkl_mutex_queue(c, o->root, name, &q, &n);
  if (rc != ZKL_OK) {
    cli_error("cannot list %s/%s: %s", o->root, name, zkl_strerror(rc));
    return CLI_EXIT_SOFTWARE;
  }
  cli_print_queue(q, n, "holder", "waiter");
  zkl_contenders_free(q, n);
  return n ? 0 : 1;
}

/* Acquire as the options say; returns 0 or an exit code. */
static int acquire(zkl_mutex_t *m, const struct opts *o) {
  int rc, sig;
  cli_set_waiting(1);
  if (o->nonblock)
    rc = zkl_mutex_trylock(m);
  else if (o->wait_s >= 0)
    rc = zkl_mutex_timedlock(m, zkl_now_ms() + (int64_t)(o->wait_s * 1000));
  else
    rc = zkl_mutex_lock(m);
  cli_set_waiting(0);
  sig = cli_interrupted();
  if (rc == ZKL_OK && sig) { /* interrupted just as we got it */
    zkl_mutex_unlock(m);
    rc = ZKL_ECANCELED;
  }
  if (rc == ZKL_OK)
    return 0;
  if (rc == ZKL_ECANCELED)
    return 128 + sig;
  if (rc == ZKL_EBUSY || rc == ZKL_ETIMEDOUT)
    return (int)o->conflict;
  cli_error("cannot lock: %s", zkl_strerror(rc));
  return CLI_EXIT_SOFTWARE;
}

static int run_locked(zkl_mutex_t *m, const char *name, char **cmd,
                      long grace_ms) {
  char tok[64], nm[ZKL_NAME_MAX + 16], node[1024 + 16];
  char *env[4];
  uint64_t token = 0;
  int code;
  zkl_mutex_token(m, &token);
  snprintf(tok, sizeof tok, "ZKLOCK_TOKEN=%" PRIu64, token);
  snprintf(nm, sizeof nm, "ZKLOCK_NAME=%s", name);
  strcpy(node, "ZKLOCK_NODE=");
  zkl_mutex_node_path(m, node + 12, sizeof node - 12);
  env[0] = tok, env[1] = nm, env[2] = node, env[3] = NULL;
  code = cli_run(cmd, env, grace_ms);
  zkl_mutex_unlock(m); /* ZKL_ELOST is already reported by the exit code */
  return code;
}

int main(int argc, char **argv) {
  struct opts o = {cli_default_hosts(), "/locks", 0, 0, -1, 1, 10000, 5000};
  zkl_mutex_options_t mo = {0};
  zkl_client_t *c = NULL;
  zkl_mutex_t *m = NULL;
  int first = 0, code;
  cli_prog = "zklock";
  code = parse(argc, argv, &o, &first);
  if (code)
    return code < 0 ? 0 : code;
  if (cli_signals_start() != 0) {
    cli_error("cannot set up signal handling");
    return CLI_EXIT_SOFTWARE;
  }
  if ((code = cli_connect(&c, o.hosts, o.session_ms)) != 0)
    return code;
  if (o.list) {
    code = list_queue(c, &o, argv[first]);
    zkl_client_destroy(c);
    return code;
  }
  mo.root = o.root;
  mo.state_fn = on_state;
  if (zkl_mutex_create(&m, c, argv[first], &mo) != ZKL_OK) {
    cli_error("cannot create the lock object");
    zkl_client_destroy(c);
    return CLI_EXIT_SOFTWARE;
  }
  cli_set_cancel(cancel_lock, m);
  if ((code = acquire(m, &o)) == 0)
    code = run_locked(m, argv[first], argv + first + 1, o.grace_ms);
  cli_set_cancel(NULL, NULL);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  return code;
}
