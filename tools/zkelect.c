/* SPDX-License-Identifier: Apache-2.0 */
/* zkelect(1): campaign in a ZooKeeper election and run a command only while
 * leader. See man/zkelect.1. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
    "usage: zkelect [-s HOSTS] [-r ROOT] [-t SESSION_MS] [-i ID] [-k SECONDS]\n"
    "               [-D] [-a FILE] [--acl ACL] [--on-revoke SIGNAL] [-v]\n"
    "               NAME {COMMAND [ARG...] | -c CMDSTRING}\n"
    "       zkelect [-s HOSTS] [-r ROOT] [-a FILE] --leader [--json] NAME\n"
    "\n"
    "Campaign in the ZooKeeper election ROOT/NAME; run COMMAND only while leader.\n"
    "\n"
    "  -s, --servers HOSTS       ensemble, host:port,...[/chroot] (default\n"
    "                            $ZKLOCK_SERVERS or 127.0.0.1:2181)\n"
    "  -r, --root ROOT           parent of the election (default /election)\n"
    "  -i, --id ID               candidate id (default HOSTNAME:PID)\n"
    "  -t, --session-timeout MS  ZooKeeper session timeout (default 10000)\n"
    "  -k, --kill-after SECONDS  after losing leadership, SIGKILL this long\n"
    "                            after SIGTERM (default 5, at most 86400)\n"
    "  -D, --lose-on-disconnect  a disconnection ends leadership at once\n"
    "  -a, --auth-file FILE      authenticate with the line scheme:credentials\n"
    "                            in FILE (default $ZKLOCK_AUTH_FILE)\n"
    "      --acl open|creator    ACL of the nodes we create (default open;\n"
    "                            creator: only our identity may change them)\n"
    "  -c, --command CMDSTRING   run /bin/sh -c CMDSTRING as COMMAND\n"
    "  -v, --verbose             the library's log on stderr (-vv: debug; or\n"
    "                            $ZKLOCK_LOG=error|warn|info|debug)\n"
    "      --on-revoke SIGNAL    what COMMAND gets when someone asks for the\n"
    "                            leadership back (zklock --revoke -r ROOT):\n"
    "                            TERM (default), INT, HUP, USR1, USR2, KILL,\n"
    "                            or none\n"
    "  -L, --leader              print the current leader's id (control\n"
    "                            characters as \\xHH; scripts: use --json)\n"
    "      --json                with --leader: print one JSON object of all\n"
    "                            the candidates instead (keys: zkelect(1))\n"
    "  -h, --help                this text;  -V, --version\n"
    "\n"
    "Exit: COMMAND's status (128+N if killed by signal N), and 0 only if we\n"
    "led from COMMAND's start to its end; 1 with --leader when there is none;\n"
    "64 usage; 69 ensemble unreachable; 70 other failure; 75 leadership lost,\n"
    "or not confirmed, while COMMAND ran (or before it started); 77\n"
    "authentication or permission refused; 126/127 COMMAND not runnable/not\n"
    "found; 129/130/143 SIGHUP/INT/TERM before COMMAND started.\n";

struct opts {
  cli_conn_t cc;
  const char *root, *id;
  int leader, lose_on_disconnect, json;
  long grace_ms;
  const char *cmdstring; /* -c: COMMAND is /bin/sh -c CMDSTRING */
};
/* main()'s options before parsing; fuzz/fuzz_zkelect_cli.c starts from it too. */
#define OPTS_DEFAULT                                                           \
  {{cli_default_hosts(), 10000, NULL, -1, NULL, NULL, 0, 0}, "/election", NULL, 0, 0, 0, 5000, NULL}


static void cancel_campaign(void *e) { zkl_election_resign(e); }

static int verify_term(void *e) { return zkl_election_verify(e); }

static void on_state(zkl_election_t *e, int state, uint64_t token,
                     void *ctx) {
  (void)e, (void)token, (void)ctx;
  if (state == ZKL_STATE_LOST)
    cli_notify_lost();
  else if (state == ZKL_STATE_REVOKE_REQUESTED)
    cli_notify_revoke();
}

static int parse(int argc, char **argv, struct opts *o, int *first) {
  static const struct option longs[] = {
      CLI_COMMON_LONGS,
      {"root", required_argument, 0, 'r'},
      {"id", required_argument, 0, 'i'},
      {"lose-on-disconnect", no_argument, 0, 'D'},
      {"leader", no_argument, 0, 'L'},
      {"json", no_argument, 0, 'j'},
      {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTS "r:i:DLhV", longs,
                          NULL)) != -1) {
    switch (c) {
    case 'r': o->root = optarg; break;
    case 'i': o->id = optarg; break;
    case 'D': o->lose_on_disconnect = 1; break;
    case 'L': o->leader = 1; break;
    case 'j': o->json = 1; break;
    case 'c': o->cmdstring = optarg; break;
    case 'h': fputs(usage_text, stdout); return -1;
    case 'V': printf("zkelect %s\n", zkl_version()); return -1;
    default: {
      int rc = cli_common_option(c, optarg, argv[optind - 1], &o->cc,
                                 &o->grace_ms);
      if (rc != 0)
        return rc < 0 ? CLI_EXIT_USAGE : rc;
    }
    }
  }
  if (o->json && !o->leader)
    return cli_usage("--json goes with --leader");
  if (o->cmdstring && o->leader)
    return cli_usage("-c goes with a COMMAND to lead, not --leader");
  if (optind >= argc)
    return cli_usage("missing election NAME");
  if (cli_check_target("election", argv[optind], o->root) != 0)
    return CLI_EXIT_USAGE;
  if (o->id && (!*o->id || strlen(o->id) > ZKL_ID_MAX || strchr(o->id, '\n')))
    return cli_usage("-i needs an id of 1-128 bytes on one line");
  if (!o->leader && cli_command_after(argc, argv, optind, &o->cmdstring) != 0)
    return CLI_EXIT_USAGE;
  if (!o->leader && !o->cmdstring && optind + 1 >= argc)
    return cli_usage("missing COMMAND");
  if (o->leader && optind + 1 < argc)
    return cli_usage("--leader takes only NAME");
  *first = optind;
  return cli_conn_ready(&o->cc);
}

static int print_leader(zkl_client_t *c, const struct opts *o,
                        const char *name) {
  zkl_contender_t *q = NULL;
  size_t n = 0;
  char what[ZKL_ROOT_MAX + ZKL_NAME_MAX + 32];
  int rc = zkl_election_candidates(c, o->root, name, &q, &n), led;
  if (rc != ZKL_OK) {
    snprintf(what, sizeof what, "cannot read %s/%s", o->root, name);
    return cli_fail(what, rc);
  }
  /* a node no session owns (planted by hand, listed last) never leads */
  led = n > 0 && q[0].owner != 0;
  if (o->json)
    led = cli_json_queue(stdout, "election", o->root, name, q, n);
  else if (led) {
    /* the id as the candidate gave it (-i "web 1" prints web 1), but a
     * terminal never sees a control character from the node */
    const char *s = q[0].id ? q[0].id : q[0].node;
    cli_put_text(stdout, s, strlen(s));
    putchar('\n');
  }
  zkl_contenders_free(q, n);
  if (led == 0) /* for a person; scripts have the exit status */
    cli_error("%s/%s: nobody leads", o->root, name);
  return led < 0 ? CLI_EXIT_SOFTWARE : led ? 0 : 1;
}

/* Campaigns until elected: CLI_GOT_HOLD (leader since *granted), or
 * CLI_GOT_NOTHING with the exit code to leave with in *code. */
static cli_got_t campaign(zkl_election_t *e, int64_t *granted, int *code) {
  int rc, sig;
  cli_set_waiting(1);
  rc = zkl_election_wait(e, ZKL_NO_DEADLINE);
  *granted = zkl_now_ms();
  cli_set_waiting(0);
  sig = cli_interrupted();
  if (sig)
    *code = 128 + sig;
  else if (rc == ZKL_ELOST) {
    cli_error("campaign ended: %s", zkl_strerror(rc));
    *code = CLI_EXIT_LOST;
  } else if (rc != ZKL_OK)
    *code = cli_fail("campaign ended", rc);
  else
    return CLI_GOT_HOLD;
  return CLI_GOT_NOTHING;
}

static int lead(zkl_client_t *c, zkl_election_t *e, const struct opts *o,
                const char *name, char **cmd) {
  char tok[64], nm[ZKL_NAME_MAX + 16], id[ZKL_ID_MAX + 16];
  char *env[4];
  uint64_t token = 0;
  int64_t granted;
  int rc, code;
  if (campaign(e, &granted, &code) != CLI_GOT_HOLD)
    return code;
  zkl_election_token(e, &token);
  snprintf(tok, sizeof tok, "ZKELECT_TOKEN=%" PRIu64, token);
  snprintf(nm, sizeof nm, "ZKELECT_NAME=%s", name);
  snprintf(id, sizeof id, "ZKELECT_ID=%s", o->id);
  env[0] = tok, env[1] = nm, env[2] = id, env[3] = NULL;
  cli_test_grant_delay();
  code = cli_vouch(c, granted, zkl_election_state(e), verify_term, e);
  if (code == 0)
    code = cli_run(cmd, env, o->grace_ms);
  /* resigning is the ensemble's verdict on the whole term: anything but
   * ZKL_OK means another leader may have run meanwhile */
  rc = zkl_election_resign(e);
  if (rc != ZKL_OK && cli_started()) {
    if (!cli_lost_reported())
      cli_error("leadership lost while %s ran (%s: %s): the run may not "
                "have been exclusive", cmd[0], zkl_err_name(rc),
                zkl_strerror(rc));
    code = CLI_EXIT_LOST;
  }
  return code;
}

int main(int argc, char **argv) {
  struct opts o = OPTS_DEFAULT;
  zkl_election_options_t eo = {0};
  zkl_client_t *c = NULL;
  zkl_election_t *e = NULL;
  char defid[300], *sh[4];
  int first = 0, code, rc;
  cli_prog = "zkelect";
  cli_what = "leadership";
  if (cli_fds_record() != 0) {
    cli_error("cannot record open descriptors");
    return CLI_EXIT_SOFTWARE;
  }
  code = parse(argc, argv, &o, &first);
  if (code)
    return code < 0 ? 0 : code;
  if (!o.id) {
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    snprintf(defid, sizeof defid, "%.100s:%ld", host, (long)getpid());
    o.id = defid;
  }
  if (cli_signals_start() != 0) {
    cli_error("cannot set up signal handling");
    return CLI_EXIT_SOFTWARE;
  }
  if ((code = cli_connect(&c, &o.cc)) != 0)
    return code;
  if (o.leader) {
    code = print_leader(c, &o, argv[first]);
    zkl_client_destroy(c);
    return code;
  }
  eo.root = o.root;
  eo.fn = on_state;
  eo.flags = o.lose_on_disconnect ? ZKL_ELECTION_LOSE_ON_DISCONNECT : 0;
  rc = zkl_election_create(&e, c, argv[first], o.id, &eo);
  if (rc != ZKL_OK) {
    cli_error("cannot join: %s", zkl_strerror(rc));
    zkl_client_destroy(c);
    return rc == ZKL_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_SOFTWARE;
  }
  cli_set_cancel(cancel_campaign, e);
  code = lead(c, e, &o, argv[first],
              o.cmdstring ? cli_shell_command(o.cmdstring, sh) : argv + first + 1);
  cli_set_cancel(NULL, NULL);
  zkl_election_destroy(e);
  zkl_client_destroy(c);
  return code;
}
