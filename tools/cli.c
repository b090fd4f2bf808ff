/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c: running a command under a distributed hold (zklock, zkelect).
 *
 * Signals: INT, TERM, HUP and CHLD are blocked in every thread (the
 * library's included, since they inherit the mask) and taken by one thread
 * with sigwaitinfo(), so no signal handler ever runs. Before COMMAND runs,
 * that thread records the signal and cancels the wait for the hold, which
 * a handler could not do safely. While COMMAND runs, it turns them into
 * bytes on a pipe that the supervisor polls, except for those the terminal
 * sent to the whole foreground process group: COMMAND got its own copy. */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *cli_prog = "zklock";
const char *cli_what = "lock";

/* Where the signal thread stands with respect to COMMAND. */
enum { PH_BEFORE, PH_RUNNING, PH_AFTER };

static int wake[2] = {-1, -1};
static sigset_t handled;
static sigset_t saved_mask;
static pthread_t sig_thread;
static void (*cancel_fn)(void *);
static void *cancel_arg;
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sig_cv = PTHREAD_COND_INITIALIZER;
/* all under sig_mu */
static int waiting, interrupted, lost, phase = PH_BEFORE;
static int park_req, parked;
static pid_t child_pid;
/* only touched by the main thread */
static int lost_reported, started;
/* what COMMAND gets when the hold is asked for (--on-revoke; 0: none) */
static int revoke_sig = SIGTERM;
static const char *revoke_sig_name = "TERM";

/* Descriptors open at startup, ascending; COMMAND inherits only these. */
static int *kept_fds;
static size_t n_kept;

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

/* A signal named as --on-revoke takes it ("TERM", "SIGTERM", "none"),
 * 0 for none, -1 if unknown; *name: its name without "SIG". */
static int named_signal(const char *s, const char **name) {
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},
               {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"KILL", SIGKILL}};
  size_t i;
  if (strcmp(s, "none") == 0)
    return 0;
  if (strncmp(s, "SIG", 3) == 0)
    s += 3;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) {
      *name = names[i].name;
      return names[i].sig;
    }
  return -1;
}

int cli_common_option(int opt, const char *arg, const char *bad, cli_conn_t *cc,
                      long *grace_ms) {
  double secs;
  char msg[256];
  switch (opt) {
  case 's':
    cc->hosts = arg;
    return 0;
  case 't':
    if (cli_int(arg, 1, 3600000, &cc->session_ms) != 0)
      return cli_usage("-t needs a session timeout in milliseconds");
    return 0;
  case 'k':
    if (cli_seconds(arg, &secs) != 0 || secs > CLI_GRACE_MAX_S) {
      snprintf(msg, sizeof msg, "-k needs a number of seconds up to %d",
               CLI_GRACE_MAX_S);
      return cli_usage(msg);
    }
    *grace_ms = (long)(secs * 1000);
    return 0;
  case 'a':
    cc->auth_file = arg;
    return 0;
  case CLI_OPT_ON_REVOKE:
    if ((revoke_sig = named_signal(arg, &revoke_sig_name)) < 0)
      return cli_usage("--on-revoke needs TERM, INT, HUP, USR1, USR2, KILL "
                       "or none");
    return 0;
  case CLI_OPT_ACL:
    if (strcmp(arg, "open") == 0)
      cc->acl = ZKL_ACL_OPEN;
    else if (strcmp(arg, "creator") == 0)
      cc->acl = ZKL_ACL_CREATOR;
    else
      return cli_usage("--acl needs 'open' or 'creator'");
    return 0;
  case '?':
  case ':':
    snprintf(msg, sizeof msg, "unknown option or missing argument: %s", bad);
    return cli_usage(msg);
  }
  return -1;
}

/* Reads "scheme:credentials" from path into cc. The text is a secret: no
 * message ever quotes it. */
static int read_auth_file(cli_conn_t *cc, const char *path) {
  char buf[4097], *colon;
  size_t len = 0;
  ssize_t r;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    cli_error("cannot read auth file '%s': %s", path, strerror(errno));
    return CLI_EXIT_USAGE;
  }
  while (len < sizeof buf && (r = read(fd, buf + len, sizeof buf - len)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      cli_error("cannot read auth file '%s': %s", path, strerror(errno));
      close(fd);
      explicit_bzero(buf, sizeof buf);
      return CLI_EXIT_USAGE;
    }
    len += (size_t)r;
  }
  close(fd);
  if (len == sizeof buf) {
    explicit_bzero(buf, sizeof buf);
    cli_error("auth file '%s' is too long: it holds one line "
              "scheme:credentials",
              path);
    return CLI_EXIT_USAGE;
  }
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  if (len > 0 && buf[len - 1] == '\r')
    len--;
  buf[len] = '\0';
  colon = strchr(buf, ':');
  if (strlen(buf) != len || strpbrk(buf, "\r\n") || !colon || colon == buf ||
      !colon[1]) {
    explicit_bzero(buf, sizeof buf);
    cli_error("auth file '%s' must hold one line scheme:credentials, "
              "both non-empty (e.g. digest:user:password)",
              path);
    return CLI_EXIT_USAGE;
  }
  *colon = '\0';
  cc->scheme = strdup(buf);
  cc->cred = strdup(colon + 1);
  explicit_bzero(buf, sizeof buf);
  if (!cc->scheme || !cc->cred) {
    cli_error("out of memory");
    return CLI_EXIT_SOFTWARE;
  }
  return 0;
}

int cli_conn_ready(cli_conn_t *cc) {
  const char *file = cc->auth_file;
  int rc;
  if (!cc->hosts || !*cc->hosts)
    return cli_usage("-s needs a host:port list");
  if (!file) {
    file = getenv("ZKLOCK_AUTH_FILE");
    if (file && !*file)
      file = NULL;
  } else if (!*file) {
    return cli_usage("--auth-file needs a file name");
  }
  if (file && (rc = read_auth_file(cc, file)) != 0)
    return rc;
  if (cc->acl < 0)
    cc->acl = ZKL_ACL_OPEN;
  if (cc->acl == ZKL_ACL_CREATOR && !cc->scheme)
    return cli_usage("--acl creator needs credentials "
                     "(--auth-file or $ZKLOCK_AUTH_FILE)");
  return 0;
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

static void wipe(char **s) {
  if (*s) {
    explicit_bzero(*s, strlen(*s));
    free(*s);
    *s = NULL;
  }
}

int cli_connect(zkl_client_t **c, cli_conn_t *cc) {
  zkl_client_options_t o = {0};
  int rc, code;
  o.session_timeout_ms = (int)cc->session_ms;
  o.auth_scheme = cc->scheme;
  o.auth = cc->cred;
  o.acl = cc->acl < 0 ? ZKL_ACL_OPEN : cc->acl;
  rc = zkl_client_create(c, cc->hosts, &o);
  switch (rc) {
  case ZKL_OK:
    code = 0;
    break;
  case ZKL_EAUTH: {
    /* name who we tried to be, never the secret after the user name */
    const char *colon = cc->cred ? strchr(cc->cred, ':') : NULL;
    if (colon)
      cli_error("the ensemble at %s rejected the credentials of scheme "
                "'%s', user '%.*s'",
                cc->hosts, cc->scheme, (int)(colon - cc->cred), cc->cred);
    else
      cli_error("the ensemble at %s rejected the credentials of scheme '%s'",
                cc->hosts, cc->scheme ? cc->scheme : "?");
    code = CLI_EXIT_NOPERM;
    break;
  }
  case ZKL_ECONNECT:
    cli_error("cannot reach ZooKeeper at '%s' within %ld ms", cc->hosts,
              cc->session_ms);
    code = CLI_EXIT_UNAVAILABLE;
    break;
  case ZKL_EINVAL:
    cli_error("cannot use ZooKeeper hosts '%s': not a host:port list, or "
              "a host name that does not resolve",
              cc->hosts);
    code = CLI_EXIT_UNAVAILABLE;
    break;
  case ZKL_ESYSTEM:
    /* what a resolver failure looked like before the library mapped it to
     * ZKL_EINVAL; a thread that cannot start is as fatal either way */
    cli_error("cannot start a ZooKeeper client for hosts '%s' (does every "
              "host name resolve?)",
              cc->hosts);
    code = CLI_EXIT_UNAVAILABLE;
    break;
  default:
    cli_error("cannot connect to %s: %s", cc->hosts, zkl_strerror(rc));
    code = CLI_EXIT_SOFTWARE;
  }
  wipe(&cc->scheme);
  wipe(&cc->cred);
  return code;
}

int cli_fail(const char *what, int rc) {
  if (rc == ZKL_EAUTH) {
    cli_error("%s: %s", what, zkl_strerror(rc));
    return CLI_EXIT_NOPERM;
  }
  /* a ZooKeeper code, by name: the tools need not see zookeeper.h */
  if (strcmp(zkl_err_name(rc), "ZNOAUTH") == 0) {
    cli_error("%s: permission denied by the node's ACL", what);
    return CLI_EXIT_NOPERM;
  }
  cli_error("%s: %s", what, zkl_strerror(rc));
  return CLI_EXIT_SOFTWARE;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int keep_fd(int fd, size_t *cap) {
  if (n_kept == *cap) {
    size_t ncap = *cap ? *cap * 2 : 16;
    int *p = realloc(kept_fds, ncap * sizeof *p);
    if (!p)
      return -1;
    kept_fds = p;
    *cap = ncap;
  }
  kept_fds[n_kept++] = fd;
  return 0;
}

int cli_fds_record(void) {
  size_t cap = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *de;
    int self = dirfd(d);
    while ((de = readdir(d)) != NULL) {
      char *end;
      long fd;
      if (de->d_name[0] == '.')
        continue;
      fd = strtol(de->d_name, &end, 10);
      if (*end || fd < 0 || fd > INT_MAX || fd == self)
        continue;
      if (keep_fd((int)fd, &cap) != 0) {
        closedir(d);
        return -1;
      }
    }
    closedir(d);
  } else {
    /* no /proc: probe the descriptors a caller plausibly passes */
    int fd;
    for (fd = 0; fd < 1024; fd++)
      if (fcntl(fd, F_GETFD) != -1 && keep_fd(fd, &cap) != 0)
        return -1;
  }
  qsort(kept_fds, n_kept, sizeof *kept_fds, cmp_int);
  return 0;
}

/* In the child: close [lo, hi]. Only async-signal-safe calls here.
 * `limit` bounds the slow path for kernels without close_range(). */
static void close_gap(unsigned lo, unsigned hi, unsigned limit) {
  unsigned fd;
  if (lo > hi)
    return;
  if (close_range(lo, hi, 0) == 0)
    return;
  for (fd = lo; fd <= hi && fd < limit; fd++)
    close((int)fd);
}

static void close_unrecorded(unsigned limit) {
  unsigned lo = 0;
  size_t i;
  for (i = 0; i < n_kept; i++) {
    unsigned k = (unsigned)kept_fds[i];
    if (k > lo)
      close_gap(lo, k - 1, limit);
    lo = k + 1;
  }
  close_gap(lo, ~0U, limit);
}

static void poke(char b) {
  ssize_t r;
  do
    r = write(wake[1], &b, 1);
  while (r < 0 && errno == EINTR);
}

/* Whether COMMAND already got `sig` from the kernel along with us: the
 * terminal signals the whole foreground process group (si_code SI_KERNEL),
 * and COMMAND is in ours unless it left. kill() aimed at us alone
 * (SI_USER, SI_QUEUE) reaches only us. SIGHUP with SI_KERNEL goes to a
 * session leader alone on hangup, so it counts only when we lead none. */
static int group_got(int sig, const siginfo_t *si) {
  if (si->si_code != SI_KERNEL)
    return 0;
  if (sig != SIGINT && !(sig == SIGHUP && getsid(0) != getpid()))
    return 0;
  return getpgid(child_pid) == getpgrp();
}

static void *signal_thread(void *arg) {
  (void)arg;
  for (;;) {
    siginfo_t si;
    int sig = sigwaitinfo(&handled, &si);
    if (sig < 0)
      continue;
    pthread_mutex_lock(&sig_mu);
    if (phase == PH_RUNNING) {
      if (sig == SIGCHLD)
        poke('C');
      else if (!group_got(sig, &si))
        poke((char)sig);
    } else if (phase == PH_BEFORE && sig != SIGCHLD) {
      if (!interrupted)
        interrupted = sig;
      if (waiting && cancel_fn)
        cancel_fn(cancel_arg);
    }
    /* cli_run() forks only while we are parked here, having handled all
     * we took: see there */
    if (park_req) {
      parked = 1;
      pthread_cond_broadcast(&sig_cv);
      while (park_req)
        pthread_cond_wait(&sig_cv, &sig_mu);
      parked = 0;
    }
    pthread_mutex_unlock(&sig_mu);
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
  if (pipe2(wake, O_CLOEXEC) != 0)
    return -1;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGHUP);
  sigaddset(&handled, SIGCHLD);
  if (pthread_sigmask(SIG_BLOCK, &handled, &saved_mask) != 0)
    return -1;
  if (pthread_create(&sig_thread, NULL, signal_thread, NULL) != 0)
    return -1;
  pthread_detach(sig_thread);
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

void cli_notify_lost(void) {
  pthread_mutex_lock(&sig_mu);
  lost = 1;
  pthread_mutex_unlock(&sig_mu);
  poke('L');
}

void cli_notify_revoke(void) { poke('R'); }

int cli_lost(void) {
  int v;
  pthread_mutex_lock(&sig_mu);
  v = lost;
  pthread_mutex_unlock(&sig_mu);
  return v;
}

int cli_lost_reported(void) { return lost_reported; }

int cli_started(void) { return started; }

int cli_vouch(zkl_client_t *c, int64_t granted_ms, int state,
              int (*verify)(void *), void *obj) {
  int rc = ZKL_OK;
  if (state == ZKL_STATE_LOST || cli_lost()) {
    rc = ZKL_ELOST;
  } else {
    int timeout = zkl_client_session_timeout(c);
    if (timeout <= 0 || zkl_now_ms() - granted_ms >= timeout / 10)
      rc = verify(obj);
  }
  if (rc == ZKL_OK)
    return 0;
  cli_error("%s cannot be vouched for before COMMAND starts (%s: %s); "
            "not running it",
            cli_what, zkl_err_name(rc), zkl_strerror(rc));
  return CLI_EXIT_LOST;
}

void cli_test_grant_delay(void) {
  /* Testing only (tests/tools.itest): widens the window between the grant
   * and cli_vouch() so that a test can delete the node in it. Not
   * documented for users. */
  const char *s = getenv("ZKLOCK_TEST_GRANT_DELAY_MS");
  long ms;
  struct timespec ts;
  if (!s || cli_int(s, 1, 600000, &ms) != 0)
    return;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* In the child: die with the parent, keep only the descriptors we were
 * given, restore signals, add env, exec. */
static void child(char **argv, char **env, pid_t parent, unsigned limit) {
  int i;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent died before prctl took effect */
    _exit(CLI_EXIT_LOST);
  close_unrecorded(limit);
  signal(SIGPIPE, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
  for (i = 0; env && env[i]; i++)
    putenv(env[i]);
  execvp(argv[0], argv);
  cli_error("cannot run %s: %s", argv[0], strerror(errno));
  _exit(errno == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Forks COMMAND so that every INT/TERM/HUP is judged against it: one
 * that came before the fork means COMMAND must not start (0 returned,
 * *sig set); one after it is COMMAND's to get. The signal thread is parked
 * first, so any signal it took is already recorded, and what is pending
 * is drained here. Only a signal raised between the drain and fork()
 * itself (microseconds) is counted as after the fork although COMMAND
 * missed it. Returns the child's pid, 0 when interrupted, -1 on error. */
static pid_t start_child(char **argv, char **env, int *sig) {
  static const struct timespec zero = {0, 0};
  pid_t parent = getpid(), pid = -1;
  struct rlimit rl;
  unsigned limit = 65536;
  siginfo_t si;
  int s;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < limit)
    limit = (unsigned)rl.rlim_cur;
  pthread_mutex_lock(&sig_mu);
  park_req = 1;
  pthread_kill(sig_thread, SIGCHLD); /* wakes it from sigwaitinfo() */
  while (!parked)
    pthread_cond_wait(&sig_cv, &sig_mu);
  while ((s = sigtimedwait(&handled, &si, &zero)) > 0)
    if (s != SIGCHLD && !interrupted)
      interrupted = s;
  *sig = interrupted;
  if (!interrupted) {
    pid = fork();
    if (pid == 0)
      child(argv, env, parent, limit);
    if (pid > 0) {
      child_pid = pid;
      phase = PH_RUNNING;
    }
  }
  park_req = 0;
  pthread_cond_broadcast(&sig_cv);
  pthread_mutex_unlock(&sig_mu);
  return *sig ? 0 : pid;
}

int cli_run(char **argv, char **env, long grace_ms) {
  pid_t pid;
  int status = 0, sig = 0, was_lost = 0, was_asked = 0;
  int64_t kill_at = -1;
  fflush(NULL);
  pid = start_child(argv, env, &sig);
  if (pid == 0)
    return 128 + sig;
  if (pid < 0) {
    cli_error("fork: %s", strerror(errno));
    return CLI_EXIT_SOFTWARE;
  }
  started = 1;
  for (;;) {
    struct pollfd p = {wake[0], POLLIN, 0};
    int timeout = -1;
    char buf[64];
    ssize_t n, i;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (kill_at >= 0) {
      int64_t left = kill_at - zkl_now_ms();
      if (left <= 0) {
        kill(pid, SIGKILL);
        kill_at = -1;
      } else {
        timeout = left > INT_MAX ? INT_MAX : (int)left;
      }
    }
    if (poll(&p, 1, timeout) <= 0)
      continue;
    n = read(wake[0], buf, sizeof buf);
    for (i = 0; i < n; i++) {
      if (buf[i] == 'C')
        continue; /* waitpid above */
      if (buf[i] == 'R') {
        if (!was_lost && !was_asked && revoke_sig) {
          cli_error("%s revocation requested: sending SIG%s to %s", cli_what,
                    revoke_sig_name, argv[0]);
          kill(pid, revoke_sig);
        }
        was_asked = 1;
        continue;
      }
      if (buf[i] == 'L') {
        if (!was_lost) {
          was_lost = 1;
          lost_reported = 1;
          cli_error("%s lost: terminating %s", cli_what, argv[0]);
          kill(pid, SIGTERM);
          kill_at = zkl_now_ms() + grace_ms;
        }
      } else {
        kill(pid, (unsigned char)buf[i]); /* INT, TERM or HUP */
      }
    }
  }
  pthread_mutex_lock(&sig_mu);
  phase = PH_AFTER;
  pthread_mutex_unlock(&sig_mu);
  if (was_lost)
    return CLI_EXIT_LOST;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return CLI_EXIT_SOFTWARE;
}

void cli_put_escaped(const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    if (b < 0x20 || b >= 0x7f || b == ' ' || b == '\\')
      printf("\\x%02x", b);
    else
      putchar(b);
  }
}

static void put_field(const char *key, const char *val) {
  printf(" %s=", key);
  if (val)
    cli_put_escaped(val, strlen(val));
  else
    fputs("?", stdout);
}

/* Longest caller data shown by --list: enough to recognise it. */
#define DATA_SHOWN 64

int64_t cli_wall_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int cli_print_queue(const zkl_contender_t *list, size_t n, const char *first,
                    const char *rest) {
  int64_t now = cli_wall_ms();
  size_t i;
  int held = 0;
  for (i = 0; i < n; i++) {
    const zkl_contender_t *e = &list[i];
    double waited = (double)(now - e->ctime_ms) / 1000.0;
    if (waited < 0)
      waited = 0; /* server and local clocks differ a little */
    /* a node nobody's session owns never holds, wherever it sorts;
     * readers, or a semaphore's leases, hold together */
    fputs(e->owner == 0 ? "planted" : e->holds ? first : rest, stdout);
    held |= e->owner != 0 && e->holds;
    if (e->id)
      put_field("id", e->id);
    put_field("host", e->host);
    printf(" pid=%ld", e->pid);
    if (e->owner == 0)
      printf(" owner=none");
    else
      printf(" owner=0x%" PRIx64, (uint64_t)e->owner);
    printf(" token=%" PRId64 " waited=%.1fs mode=%s", e->czxid, waited,
           e->mode == ZKL_MODE_SHARED  ? "shared"
           : e->mode == ZKL_MODE_LEASE ? "lease"
                                       : "exclusive");
    put_field("node", e->node);
    if (e->data && e->data_len) {
      fputs(" data=", stdout);
      cli_put_escaped(e->data,
                      e->data_len > DATA_SHOWN ? DATA_SHOWN : e->data_len);
      if (e->data_len > DATA_SHOWN)
        fputs("...", stdout);
    }
    putchar('\n');
  }
  return held;
}
