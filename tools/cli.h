/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: what zklock(1) and zkelect(1) share: exit codes, option parsing
 * helpers, and running COMMAND under a hold. */
#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "zklock.h"

/* Exit codes, documented in zklock(1) and zkelect(1). COMMAND's own status
 * passes through (128+N when it died of signal N). */
enum {
  CLI_EXIT_NOT_ACQUIRED = 1, /* -n or -w gave up (zklock; -E changes it) */
  CLI_EXIT_USAGE = 64,       /* bad options or arguments */
  CLI_EXIT_UNAVAILABLE = 69, /* the ensemble could not be reached */
  CLI_EXIT_SOFTWARE = 70,    /* any other failure of ours */
  CLI_EXIT_LOST = 75,        /* the hold could not be vouched for */
  CLI_EXIT_NOPERM = 77,      /* authentication or permission refused */
  CLI_EXIT_NOEXEC = 126,     /* COMMAND found but not executable */
  CLI_EXIT_NOTFOUND = 127    /* COMMAND not found */
};

/* Whether a tool got its hold (a lock, a lease, a term as leader). Kept
 * apart from the exit code: zklock's -E CODE may be 0, flock's "skip
 * quietly", so no exit code may ever stand for "acquired". */
typedef enum { CLI_GOT_HOLD, CLI_GOT_NOTHING } cli_got_t;

/* Longest -k: the grace period must fit poll()'s int milliseconds, and
 * nobody means a kill delay of more than a day. */
#define CLI_GRACE_MAX_S 86400

extern const char *cli_prog;
/* What the tool holds, for messages: "lock" or "leadership". */
extern const char *cli_what;

/* "prog: message" on stderr, one line: control characters in it (from a
 * name, a path or node data quoted in the message) come out as \xHH, as
 * cli_put_text() writes them. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a non-negative decimal number of seconds (fractions allowed). */
int cli_seconds(const char *s, double *out);
/* Parses an integer in [lo, hi]. */
int cli_int(const char *s, long lo, long hi, long *out);

/* A usage error: one line on stderr; returns CLI_EXIT_USAGE. */
int cli_usage(const char *why);

/* How to reach the ensemble: what the options both tools take set. */
typedef struct cli_conn {
  const char *hosts;
  long session_ms;
  const char *auth_file; /* NULL: $ZKLOCK_AUTH_FILE, if set */
  int acl;               /* ZKL_ACL_*; -1 until --acl */
  char *scheme, *cred;   /* read from auth_file by cli_conn_ready() */
  int verbose;           /* -v given this many times */
  int log_level;         /* ZKL_LOG_*, 0 for none: cli_conn_ready() sets it */
} cli_conn_t;

/* How long cli_connect() waits before it looks whether any server of
 * HOSTS accepts connections at all; when none does, it gives up then
 * instead of after the whole session timeout (zklock(1), -t). */
#define CLI_CONNECT_PROBE_MS 2000

/* Long-only option codes of cli_common_option(). */
enum { CLI_OPT_ACL = 1000, CLI_OPT_ON_REVOKE };

/* The getopt_long entries of the options cli_common_option() takes. */
/* clang-format off */
#define CLI_COMMON_LONGS                                                       \
  {"servers", required_argument, 0, 's'},                                      \
  {"session-timeout", required_argument, 0, 't'},                              \
  {"kill-after", required_argument, 0, 'k'},                                   \
  {"auth-file", required_argument, 0, 'a'},                                    \
  {"acl", required_argument, 0, CLI_OPT_ACL},                                   \
  {"on-revoke", required_argument, 0, CLI_OPT_ON_REVOKE},                     \
  {"verbose", no_argument, 0, 'v'},                                            \
  {"command", required_argument, 0, 'c'}
/* clang-format on */
#define CLI_COMMON_SHORTS "s:t:k:a:vc:"

/* Options both tools take: -s HOSTS, -t SESSION_MS, -k SECONDS,
 * -a/--auth-file FILE, --acl, --on-revoke SIGNAL, -v, and an unknown
 * option (-c is the tool's: cli_shell_command()). Returns 0 when
 * handled, CLI_EXIT_USAGE on a bad value, -1 when `opt` is none of
 * these. */
int cli_common_option(int opt, const char *arg, const char *bad, cli_conn_t *cc,
                      long *grace_ms);
/* After option parsing: checks HOSTS, reads the auth file, checks --acl,
 * and sets the log level from -v and $ZKLOCK_LOG (none, error, warn,
 * info, debug): -v is info, -vv debug, and outranks the variable. 0 or
 * CLI_EXIT_USAGE with the message printed. */
int cli_conn_ready(cli_conn_t *cc);
/* Checks NAME (a "lock" or "election" name) and ROOT; 0 or
 * CLI_EXIT_USAGE with the message printed. */
int cli_check_target(const char *kind, const char *name, const char *root);

/* Connects, mapping failures to exit codes; returns 0 or an exit code.
 * Wipes the credentials from memory either way. The library's log goes
 * to stderr at cc->log_level. Waits for a session up to the session
 * timeout, but gives up after CLI_CONNECT_PROBE_MS when no server of
 * HOSTS accepts a TCP connection then (refused, unreachable, or a name
 * that does not resolve): a server that accepts connections, however
 * slow its answer, gets the whole session timeout. Messages about an
 * ensemble not reached name $ZKLOCK_SERVERS and -s. */
int cli_connect(zkl_client_t **c, cli_conn_t *cc);
/* The exit code and one stderr line for library error `rc` met while
 * doing `what` (e.g. "cannot lock"); CLI_EXIT_NOPERM for refused
 * authentication or permission, else CLI_EXIT_SOFTWARE. ZNONODE with a
 * chroot in HOSTS names the chroot, which must exist. */
int cli_fail(const char *what, int rc);

/* The COMMAND of -c CMDSTRING: argv of "/bin/sh -c CMDSTRING" in `buf`,
 * which must outlive its use. */
char **cli_shell_command(const char *cmdstring, char *buf[4]);
/* What follows NAME (argv[name_at]) when it is not a COMMAND: flock's
 * "NAME -c CMDSTRING" sets *cmdstring; a -c CMDSTRING given before NAME
 * takes no COMMAND. 0, or CLI_EXIT_USAGE with the message printed. */
int cli_command_after(int argc, char **argv, int name_at,
                      const char **cmdstring);

/* Records the descriptors open now, the only ones COMMAND will inherit.
 * Call first, before anything (the ZooKeeper client) opens more. */
int cli_fds_record(void);

/* Ignores SIGPIPE (COMMAND gets the default back), blocks SIGINT,
 * SIGTERM, SIGHUP and SIGCHLD in every thread and starts a thread that
 * receives them. Call before creating the client: threads
 * created later (the ZooKeeper client's) inherit the blocked mask, so no
 * signal can reach one of them with its default action. */
int cli_signals_start(void);
/* `cancel(arg)` is called (on the signal thread) for INT/TERM/HUP while
 * cli_set_waiting(1). */
void cli_set_cancel(void (*cancel)(void *), void *arg);
void cli_set_waiting(int on);
/* The signal that interrupted us before COMMAND started, 0 if none. */
int cli_interrupted(void);

/* Tells the supervisor that the hold is gone (callable from callbacks). */
void cli_notify_lost(void);
/* Tells the supervisor that someone asked for the hold back (callable
 * from callbacks): COMMAND gets the --on-revoke signal, once. */
void cli_notify_revoke(void);
/* 1 once cli_notify_lost() was called. */
int cli_lost(void);
/* 1 once cli_run() told the user that the hold was lost. */
int cli_lost_reported(void);
/* 1 once cli_run() started COMMAND. */
int cli_started(void);

/* Whether a hold granted at granted_ms (zkl_now_ms()) can still be vouched
 * for just before COMMAND starts: 0, or CLI_EXIT_LOST with one line on
 * stderr. `state` is the hold's zkl_lock_state_t now; verify(obj) asks the
 * ensemble, which we do once a tenth of the session timeout has passed
 * since the grant (a pause, or a slow start, may have outlived it). */
int cli_vouch(zkl_client_t *c, int64_t granted_ms, int state,
              int (*verify)(void *), void *obj);

/* Testing only: sleeps $ZKLOCK_TEST_GRANT_DELAY_MS between the grant and
 * cli_vouch(), so that a test can take the hold away in between. */
void cli_test_grant_delay(void);

/* With no COMMAND: holds until SIGINT, SIGTERM or SIGHUP (0), until the
 * hold is lost (CLI_EXIT_LOST, with one line on stderr), or until someone
 * asks for it back when --on-revoke is not none (0, with one line on
 * stderr). A signal that came since the hold was granted counts. The
 * caller releases the hold afterwards and judges the release. */
int cli_hold(void);

/* Runs argv with env (NAME=VALUE strings, NULL-terminated) added, forwards
 * INT/TERM/HUP to it, on cli_notify_revoke() sends the --on-revoke signal
 * (SIGTERM unless changed), and on cli_notify_lost() sends SIGTERM, then
 * SIGKILL after grace_ms. The child gets SIGKILL if we die (PR_SET_PDEATHSIG) and
 * inherits only the descriptors cli_fds_record() saw. Returns the exit
 * code to use: COMMAND's status, 128+N, CLI_EXIT_LOST, CLI_EXIT_NOEXEC or
 * CLI_EXIT_NOTFOUND; 128+N without starting COMMAND if signal N came
 * after the hold was granted but before COMMAND could start. */
int cli_run(char **argv, char **env, long grace_ms);

/* Default HOSTS: $ZKLOCK_SERVERS, else 127.0.0.1:2181. */
const char *cli_default_hosts(void);

/* Prints s (n bytes) with control characters, bytes >= 0x7f, space and
 * backslash as \xHH: node data is written by any client of the ensemble,
 * and must neither drive the terminal nor forge fields. */
void cli_put_escaped(const char *s, size_t n);
/* Writes s (n bytes) on `out` as text a terminal shows as it is: valid
 * UTF-8, spaces and backslashes stay; each byte of a control character
 * (C0, DEL, C1, U+2028/2029) or of a sequence that is not UTF-8 becomes
 * \xHH. For one value on a line of its own (zkelect --leader) and for
 * messages, where no field can be forged. */
void cli_put_text(FILE *out, const char *s, size_t n);

/* This machine's wall clock, ms since the epoch: what a node's ctime is
 * compared with for its age. */
int64_t cli_wall_ms(void);

/* One line per contender:
 * ROLE [id=I] host=H pid=P owner=O token=T waited=S node=N [data=D]
 * ROLE is `first` for the holder, `rest` for the waiters, and "planted"
 * for nodes that are not ephemeral (owner=none), which never hold. Returns
 * 1 when the list has a holder, else 0. */
int cli_print_queue(const zkl_contender_t *list, size_t n, const char *first,
                    const char *rest);

/* zklock --list with no NAME: for each lock under root that has a
 * contender, one line per holder, "NAME ROLE" followed by the fields of
 * cli_print_queue() (age= for waited=) and waiters=W, or "NAME free
 * waiters=W" when nobody holds. Returns 1 when any lock is held, else 0. */
int cli_print_locks(const zkl_lock_info_t *list, size_t n);

/* --list --json and --leader --json: one JSON object, then a newline, on
 * `out` (its keys are documented in zklock(1) and zkelect(1)). `kind` is
 * "lock" (roles holder, waiter) or "election" (roles leader, candidate,
 * and a "leader" key); root/name is the queue listed. Returns 1 when the
 * list has a holder, else 0, as cli_print_queue(); -1, with the message
 * on stderr, when `out` could not take it all. */
int cli_json_queue(FILE *out, const char *kind, const char *root,
                   const char *name, const zkl_contender_t *list, size_t n);
/* zklock --list --json with no NAME: {"root": ROOT, "held": B, "locks":
 * [...]}, each lock with contenders as cli_json_queue() writes it, plus
 * its "name". Returns as cli_json_queue(). */
int cli_json_locks(FILE *out, const char *root, const zkl_lock_info_t *list,
                   size_t n);

#endif
