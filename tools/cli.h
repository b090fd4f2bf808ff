/* cli.h: what zklock(1) and zkelect(1) share: exit codes, option parsing
 * helpers, and running COMMAND under a hold. */
#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H

#include <sys/types.h>

#include "zklock.h"

/* Exit codes, documented in zklock(1) and zkelect(1). COMMAND's own status
 * passes through (128+N when it died of signal N). */
enum {
  CLI_EXIT_NOT_ACQUIRED = 1, /* -n or -w gave up (zklock; -E changes it) */
  CLI_EXIT_USAGE = 64,       /* bad options or arguments */
  CLI_EXIT_UNAVAILABLE = 69, /* the ensemble could not be reached */
  CLI_EXIT_SOFTWARE = 70,    /* any other failure of ours */
  CLI_EXIT_LOST = 75,        /* lock/leadership lost while COMMAND ran */
  CLI_EXIT_NOEXEC = 126,     /* COMMAND found but not executable */
  CLI_EXIT_NOTFOUND = 127    /* COMMAND not found */
};

extern const char *cli_prog;

/* "prog: message" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a non-negative decimal number of seconds (fractions allowed). */
int cli_seconds(const char *s, double *out);
/* Parses an integer in [lo, hi]. */
int cli_int(const char *s, long lo, long hi, long *out);

/* A usage error: one line on stderr; returns CLI_EXIT_USAGE. */
int cli_usage(const char *why);
/* Options both tools take: -t SESSION_MS, -k SECONDS, and an unknown
 * option. Returns 0 when handled, CLI_EXIT_USAGE on a bad value, -1 when
 * `opt` is none of these. */
int cli_common_option(int opt, const char *arg, const char *bad,
                      long *session_ms, long *grace_ms);
/* Checks NAME (a "lock" or "election" name) and ROOT; 0 or
 * CLI_EXIT_USAGE with the message printed. */
int cli_check_target(const char *kind, const char *name, const char *root);

/* Connects, mapping failures to exit codes; returns 0 or an exit code. */
int cli_connect(zkl_client_t **c, const char *hosts, long session_ms);

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in every thread and starts a
 * thread that receives them. Call first: threads created later (the
 * ZooKeeper client's) inherit the blocked mask, so no signal can reach one
 * of them with its default action. */
int cli_signals_start(void);
/* `cancel(arg)` is called (on the signal thread) for INT/TERM/HUP while
 * cli_set_waiting(1). */
void cli_set_cancel(void (*cancel)(void *), void *arg);
void cli_set_waiting(int on);
/* The signal that interrupted a wait, 0 if none. */
int cli_interrupted(void);

/* Tells the supervisor that the hold is gone (callable from callbacks). */
void cli_notify_lost(void);

/* Runs argv with env (NAME=VALUE strings, NULL-terminated) added, forwards
 * INT/TERM/HUP to it, and on cli_notify_lost() sends SIGTERM, then SIGKILL
 * after grace_ms. The child gets SIGKILL if we die (PR_SET_PDEATHSIG).
 * Returns the exit code to use: COMMAND's status, 128+N, CLI_EXIT_LOST,
 * CLI_EXIT_NOEXEC or CLI_EXIT_NOTFOUND. */
int cli_run(char **argv, char **env, long grace_ms);

/* Default HOSTS: $ZKLOCK_SERVERS, else 127.0.0.1:2181. */
const char *cli_default_hosts(void);

/* One line per contender: ROLE host=H pid=P token=T waited=S node=N. */
void cli_print_queue(const zkl_contender_t *list, size_t n, const char *first,
                     const char *rest);

#endif
