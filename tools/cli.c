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
#include "json.h"

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

/* Where the signal thread stands with respect to COMMAND (PH_HOLDING:
 * there is none, and we hold until a signal, cli_hold()). */
enum { PH_BEFORE, PH_RUNNING, PH_HOLDING, PH_AFTER };

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
  /* on the stack: the child calls this between fork() and exec() */
  char buf[4096];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  fprintf(stderr, "%s: ", cli_prog);
  cli_put_text(stderr, buf,
               (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  if ((size_t)n >= sizeof buf)
    fputs("...", stderr);
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
  case 'v':
    cc->verbose++;
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
    } else if (phase == PH_HOLDING) {
      if (sig != SIGCHLD)
        poke((char)sig); /* cli_hold() ends on it */
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
  /* a reader that went away (zklock NAME | head -1, --list | head) must
   * not kill us while we hold: a write says EPIPE instead. COMMAND gets
   * the default back (child()). */
  signal(SIGPIPE, SIG_IGN);
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

char **cli_shell_command(const char *cmdstring, char *buf[4]) {
  buf[0] = (char *)"/bin/sh";
  buf[1] = (char *)"-c";
  buf[2] = (char *)cmdstring;
  buf[3] = NULL;
  return buf;
}

int cli_command_after(int argc, char **argv, int name_at,
                      const char **cmdstring) {
  int rest = argc - name_at - 1; /* words after NAME */
  if (!*cmdstring && rest >= 1 && strcmp(argv[name_at + 1], "-c") == 0) {
    if (rest != 2)
      return cli_usage("-c takes one CMDSTRING: NAME -c 'command line'");
    *cmdstring = argv[name_at + 2];
  } else if (*cmdstring && rest > 0) {
    return cli_usage("-c CMDSTRING and a COMMAND cannot be combined");
  }
  return 0;
}

/* In the child: die with the parent, keep only the descriptors we were
 * given, restore signals, add env, exec. */
static void child(char **argv, char **env, pid_t parent, unsigned limit) {
  int i, e;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent died before prctl took effect */
    _exit(CLI_EXIT_LOST);
  close_unrecorded(limit);
  signal(SIGPIPE, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
  for (i = 0; env && env[i]; i++)
    putenv(env[i]);
  execvp(argv[0], argv);
  e = errno;
  /* "zklock NAME 'a && b'": a shell's command line taken for a program */
  if (e == ENOENT && strpbrk(argv[0], " \t;&|<>()$`'\"*?[]{}=~"))
    cli_error("cannot run %s: %s (a shell command line needs sh -c '...', "
              "or %s -c '...')",
              argv[0], strerror(e), cli_prog);
  else
    cli_error("cannot run %s: %s", argv[0], strerror(e));
  _exit(e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
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

int cli_hold(void) {
  int code = -1;
  pthread_mutex_lock(&sig_mu);
  phase = PH_HOLDING;
  if (interrupted) /* came after the grant, before this */
    code = 0;
  pthread_mutex_unlock(&sig_mu);
  while (code < 0) {
    struct pollfd p = {wake[0], POLLIN, 0};
    char buf[64];
    ssize_t n, i;
    if (poll(&p, 1, -1) <= 0 || (n = read(wake[0], buf, sizeof buf)) <= 0)
      continue;
    for (i = 0; i < n && code < 0; i++) {
      if (buf[i] == 'L') {
        cli_error("%s lost while held", cli_what);
        lost_reported = 1;
        code = CLI_EXIT_LOST;
      } else if (buf[i] == 'R' && revoke_sig) {
        cli_error("%s revocation requested: releasing", cli_what);
        code = 0;
      } else if (buf[i] != 'R' && buf[i] != 'C') {
        code = 0; /* INT, TERM or HUP: release and go */
      }
    }
  }
  pthread_mutex_lock(&sig_mu);
  phase = PH_AFTER;
  pthread_mutex_unlock(&sig_mu);
  return code;
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

void cli_put_text(FILE *out, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, k, len;
  while (i < n) {
    uint32_t cp = 0;
    len = json_utf8_seq(p + i, n - i, &cp);
    if (len > 0 && !(cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
                     cp == 0x2028 || cp == 0x2029)) {
      fwrite(p + i, 1, len, out);
    } else {
      len = len ? len : 1; /* a byte that starts no UTF-8 sequence */
      for (k = 0; k < len; k++)
        fprintf(out, "\\x%02x", p[i + k]);
    }
    i += len;
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

/* One contender's fields after its role, as --list prints them; `age`
 * names the node's age ("waited", as the per-NAME listing always had). */
static void put_contender(const zkl_contender_t *e, int64_t now,
                          const char *age) {
  double secs = (double)(now - e->ctime_ms) / 1000.0;
  if (secs < 0)
    secs = 0; /* server and local clocks differ a little */
  if (e->id)
    put_field("id", e->id);
  put_field("host", e->host);
  printf(" pid=%ld", e->pid);
  if (e->owner == 0)
    printf(" owner=none");
  else
    printf(" owner=0x%" PRIx64, (uint64_t)e->owner);
  printf(" token=%" PRId64 " %s=%.1fs mode=%s", e->czxid, age, secs,
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
}

int cli_print_queue(const zkl_contender_t *list, size_t n, const char *first,
                    const char *rest) {
  int64_t now = cli_wall_ms();
  size_t i;
  int held = 0;
  for (i = 0; i < n; i++) {
    const zkl_contender_t *e = &list[i];
    /* a node nobody's session owns never holds, wherever it sorts;
     * readers, or a semaphore's leases, hold together */
    fputs(e->owner == 0 ? "planted" : e->holds ? first : rest, stdout);
    held |= e->owner != 0 && e->holds;
    put_contender(e, now, "waited");
    putchar('\n');
  }
  return held;
}

/* The end of each line of a lock in cli_print_locks(). */
static void put_counts(size_t waiters, size_t planted) {
  printf(" waiters=%zu", waiters);
  if (planted)
    printf(" planted=%zu", planted);
  putchar('\n');
}

int cli_print_locks(const zkl_lock_info_t *list, size_t n) {
  int64_t now = cli_wall_ms();
  size_t i, k;
  int any = 0;
  for (i = 0; i < n; i++) {
    const zkl_lock_info_t *l = &list[i];
    size_t holders = 0, waiters = 0, planted = 0;
    for (k = 0; k < l->count; k++) {
      const zkl_contender_t *e = &l->contenders[k];
      holders += e->owner != 0 && e->holds;
      waiters += e->owner != 0 && !e->holds;
      planted += e->owner == 0;
    }
    for (k = 0; k < l->count; k++) {
      const zkl_contender_t *e = &l->contenders[k];
      if (e->owner == 0 || !e->holds)
        continue;
      cli_put_escaped(l->name, strlen(l->name));
      fputs(" holder", stdout);
      put_contender(e, now, "age");
      put_counts(waiters, planted);
    }
    if (l->count > 0 && holders == 0) {
      cli_put_escaped(l->name, strlen(l->name));
      fputs(" free", stdout);
      put_counts(waiters, planted);
    }
    any |= holders > 0;
  }
  return any;
}
