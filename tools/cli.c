/* cli.c: running a command under a distributed hold (zklock, zkelect).
 *
 * Signals: INT, TERM, HUP and CHLD are blocked in every thread (the
 * library's included, since they inherit the mask) and taken by one thread
 * with sigwait(), so no signal handler ever runs. That thread turns them
 * into bytes on a pipe that the supervisor polls, and while we wait for the
 * hold it cancels the wait, which a handler could not do safely. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *cli_prog = "zklock";

static int wake[2] = {-1, -1};
static sigset_t handled;
static sigset_t saved_mask;
static void (*cancel_fn)(void *);
static void *cancel_arg;
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static int waiting, interrupted;

void cli_error(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", cli_prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int cli_seconds(const char *s, double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
    return -1;
  *out = v;
  return 0;
}

int cli_int(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int cli_usage(const char *why) {
  cli_error("%s (see '%s --help')", why, cli_prog);
  return CLI_EXIT_USAGE;
}

int cli_common_option(int opt, const char *arg, const char *bad,
                      long *session_ms, long *grace_ms) {
  double secs;
  char msg[256];
  switch (opt) {
  case 't':
    if (cli_int(arg, 1, 3600000, session_ms) != 0)
      return cli_usage("-t needs a session timeout in milliseconds");
    return 0;
  case 'k':
    if (cli_seconds(arg, &secs) != 0)
      return cli_usage("-k needs a number of seconds");
    *grace_ms = (long)(secs * 1000);
    return 0;
  case '?':
  case ':':
    snprintf(msg, sizeof msg, "unknown option or missing argument: %s", bad);
    return cli_usage(msg);
  }
  return -1;
}

int cli_check_target(const char *kind, const char *name, const char *root) {
  if (zkl_name_check(name) != ZKL_OK) {
    cli_error("invalid %s name '%s': 1-%d bytes, no '/', no control "
              "characters, not '.' or '..'",
              kind, name, ZKL_NAME_MAX);
    return CLI_EXIT_USAGE;
  }
  if (zkl_root_check(root) != ZKL_OK) {
    cli_error("invalid root '%s': an absolute path such as /%s", root,
              strcmp(kind, "lock") ? "election" : "locks");
    return CLI_EXIT_USAGE;
  }
  return 0;
}

const char *cli_default_hosts(void) {
  const char *h = getenv("ZKLOCK_SERVERS");
  return h && *h ? h : "127.0.0.1:2181";
}

int cli_connect(zkl_client_t **c, const char *hosts, long session_ms) {
  zkl_client_options_t o = {0};
  int rc;
  o.session_timeout_ms = (int)session_ms;
  rc = zkl_client_create(c, hosts, &o);
  if (rc == ZKL_OK)
    return 0;
  if (rc == ZKL_ECONNECT || rc == ZKL_EINVAL) {
    cli_error("cannot reach ZooKeeper at %s: %s", hosts, zkl_strerror(rc));
    return CLI_EXIT_UNAVAILABLE;
  }
  cli_error("%s", zkl_strerror(rc));
  return CLI_EXIT_SOFTWARE;
}

static void poke(char b) {
  ssize_t r;
  do
    r = write(wake[1], &b, 1);
  while (r < 0 && errno == EINTR);
}

static void *signal_thread(void *arg) {
  (void)arg;
  for (;;) {
    int sig;
    if (sigwait(&handled, &sig) != 0)
      continue;
    if (sig == SIGCHLD) {
      poke('C');
      continue;
    }
    pthread_mutex_lock(&sig_mu);
    if (!interrupted)
      interrupted = sig;
    if (waiting && cancel_fn)
      cancel_fn(cancel_arg);
    pthread_mutex_unlock(&sig_mu);
    poke((char)sig);
  }
  return NULL;
}

void cli_set_cancel(void (*cancel)(void *), void *arg) {
  pthread_mutex_lock(&sig_mu);
  cancel_fn = cancel;
  cancel_arg = arg;
  pthread_mutex_unlock(&sig_mu);
}

int cli_signals_start(void) {
  pthread_t t;
  if (pipe2(wake, O_CLOEXEC) != 0)
    return -1;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGHUP);
  sigaddset(&handled, SIGCHLD);
  if (pthread_sigmask(SIG_BLOCK, &handled, &saved_mask) != 0)
    return -1;
  if (pthread_create(&t, NULL, signal_thread, NULL) != 0)
    return -1;
  pthread_detach(t);
  return 0;
}

void cli_set_waiting(int on) {
  pthread_mutex_lock(&sig_mu);
  waiting = on;
  /* a signal that came before the wait began still cancels it */
  if (on && interrupted && cancel_fn)
    cancel_fn(cancel_arg);
  pthread_mutex_unlock(&sig_mu);
}

int cli_interrupted(void) {
  int v;
  pthread_mutex_lock(&sig_mu);
  v = interrupted;
  pthread_mutex_unlock(&sig_mu);
  return v;
}

void cli_notify_lost(void) { poke('L'); }

/* In the child: die with the parent, restore signals, add env, exec. */
static void child(char **argv, char **env, pid_t parent) {
  int i;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent died before prctl took effect */
    _exit(CLI_EXIT_LOST);
  signal(SIGPIPE, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
  for (i = 0; env && env[i]; i++)
    putenv(env[i]);
  execvp(argv[0], argv);
  cli_error("cannot run %s: %s", argv[0], strerror(errno));
  _exit(errno == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

static int64_t now_ms(void) { return zkl_now_ms(); }

int cli_run(char **argv, char **env, long grace_ms) {
  pid_t parent = getpid(), pid;
  int status = 0, lost = 0, forwarded;
  int64_t kill_at = -1;
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    cli_error("fork: %s", strerror(errno));
    return CLI_EXIT_SOFTWARE;
  }
  if (pid == 0)
    child(argv, env, parent);
  /* signals that arrived while we waited for the hold go to the child */
  forwarded = cli_interrupted();
  if (forwarded)
    kill(pid, forwarded);
  for (;;) {
    struct pollfd p = {wake[0], POLLIN, 0};
    int timeout = -1;
    char buf[64];
    ssize_t n, i;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (kill_at >= 0) {
      int64_t left = kill_at - now_ms();
      if (left <= 0) {
        kill(pid, SIGKILL);
        kill_at = -1;
      } else {
        timeout = (int)left;
      }
    }
    if (poll(&p, 1, timeout) <= 0)
      continue;
    n = read(wake[0], buf, sizeof buf);
    for (i = 0; i < n; i++) {
      if (buf[i] == 'C')
        continue; /* waitpid above */
      if (buf[i] == 'L') {
        if (!lost) {
          lost = 1;
          cli_error("lock lost: terminating %s", argv[0]);
          kill(pid, SIGTERM);
          kill_at = now_ms() + grace_ms;
        }
      } else {
        kill(pid, (unsigned char)buf[i]); /* INT, TERM or HUP */
      }
    }
  }
  if (lost)
    return CLI_EXIT_LOST;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return CLI_EXIT_SOFTWARE;
}

void cli_print_queue(const zkl_contender_t *list, size_t n, const char *first,
                     const char *rest) {
  struct timeval tv;
  int64_t now;
  size_t i;
  gettimeofday(&tv, NULL);
  now = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
  for (i = 0; i < n; i++) {
    const zkl_contender_t *e = &list[i];
    double waited = (double)(now - e->ctime_ms) / 1000.0;
    if (waited < 0)
      waited = 0; /* server and local clocks differ a little */
    printf("%s", i == 0 ? first : rest);
    if (e->id)
      printf(" id=%s", e->id);
    printf(" host=%s pid=%ld token=%" PRId64 " waited=%.1fs node=%s\n",
           e->host ? e->host : "?", e->pid, e->czxid, waited, e->node);
  }
}
