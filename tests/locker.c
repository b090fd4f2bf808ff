/* SPDX-License-Identifier: Apache-2.0 */
/* locker.c: a test process for multi-process and fault tests.
 *
 *   locker work -s HOSTS -r ROOT -n NAME -d DIR [-t THREADS] [-c CYCLES]
 *               [-T SESSION_MS] [-u USEC]
 *     THREADS threads share one client and one mutex object; each runs
 *     CYCLES critical sections. Inside, it claims DIR/inside with mkdir
 *     (EEXIST = someone else is inside: a violation), checks the fencing
 *     token against DIR/fence (the highest token seen; lower = stale),
 *     increments DIR/counter, and appends "token pid" to DIR/tokens.
 *     Prints one summary line; exits 3 on any violation or stale token.
 *
 *   locker hold -s HOSTS -r ROOT -n NAME [-T SESSION_MS] [-W SECS] [-H SECS]
 *     Acquires (giving up after -W seconds: exit 2), prints
 *     "HELD token=T node=PATH", then holds for -H seconds or until the
 *     hold is LOST, printing "STATE <name>" on every change; finally
 *     unlocks and prints "RELEASED <code name>". With -A, it then acquires
 *     once more (on the same client, so after an expiry on a new session)
 *     and prints "REACQUIRED token=T". With -K SECS it stays alive (session
 *     open) SECS seconds after the release, even after a loss, or after
 *     giving up. -N: ZKL_MUTEX_NO_NODE_WATCH (a hold then sends nothing but
 *     pings until its unlock).
 *
 *   locker list -s HOSTS -r ROOT -n NAME
 *     Prints "contenders=N", then one "seq token pid" line per contender.
 */
#include <errno.h>
#include <stdarg.h>
#include <time.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zklock.h"

static const char *hosts, *root = "/locks", *name, *dir;
static int threads = 1, cycles = 10, session_ms = 10000, usec = 1000;
static int wait_secs = -1, hold_secs = 0, again = 0, keep = 0, no_watch = 0;
static zkl_client_t *client;
static zkl_mutex_t *mutex;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int violations, stale, errors, done_cycles;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&out_mu);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

static char *file_in(const char *base) {
  static __thread char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, base);
  return buf;
}

static uint64_t read_num(const char *path) {
  FILE *f = fopen(path, "r");
  unsigned long long v = 0;
  if (f) {
    if (fscanf(f, "%llu", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v;
}

static void write_num(const char *path, uint64_t v) {
  char tmp[4200];
  FILE *f;
  snprintf(tmp, sizeof tmp, "%s.%ld.%lu", path, (long)getpid(),
           (unsigned long)pthread_self());
  f = fopen(tmp, "w");
  if (!f)
    return;
  fprintf(f, "%llu\n", (unsigned long long)v);
  fclose(f);
  rename(tmp, path);
}

/* The fenced resource: accepts a write only with a token at least as high
 * as any it has seen. A file lock serialises its own bookkeeping, which is
 * not what is being tested. */
static int fence_accepts(uint64_t token) {
  int fd = open(file_in("fence.lock"), O_CREAT | O_RDWR, 0644), ok;
  uint64_t seen;
  flock(fd, LOCK_EX);
  seen = read_num(file_in("fence"));
  ok = token >= seen;
  if (ok)
    write_num(file_in("fence"), token);
  flock(fd, LOCK_UN);
  close(fd);
  return ok;
}

static void critical_section(void) {
  uint64_t token = 0;
  char line[128];
  int fd;
  if (mkdir(file_in("inside"), 0755) != 0) {
    __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
    say("VIOLATION pid=%ld\n", (long)getpid());
    return;
  }
  zkl_mutex_token(mutex, &token);
  if (!fence_accepts(token)) {
    __atomic_add_fetch(&stale, 1, __ATOMIC_RELAXED);
  } else {
    write_num(file_in("counter"), read_num(file_in("counter")) + 1);
    fd = open(file_in("tokens"), O_CREAT | O_WRONLY | O_APPEND, 0644);
    snprintf(line, sizeof line, "%" PRIu64 " %ld\n", token, (long)getpid());
    if (fd >= 0) {
      if (write(fd, line, strlen(line)) < 0)
        errors++;
      close(fd);
    }
  }
  if (usec)
    usleep((useconds_t)usec);
  rmdir(file_in("inside"));
}

static void *work_thread(void *arg) {
  int i, rc;
  (void)arg;
  for (i = 0; i < cycles;) {
    rc = zkl_mutex_lock(mutex);
    if (rc != ZKL_OK) {
      __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
      say("lock error %s\n", zkl_err_name(rc));
      continue;
    }
    critical_section();
    rc = zkl_mutex_unlock(mutex);
    if (rc != ZKL_OK)
      say("unlock returned %s\n", zkl_err_name(rc));
    __atomic_add_fetch(&done_cycles, 1, __ATOMIC_RELAXED);
    i++;
  }
  return NULL;
}

static int do_work(void) {
  pthread_t t[64];
  int i;
  if (threads < 1 || threads > 64 || !dir)
    return 2;
  for (i = 0; i < threads; i++)
    pthread_create(&t[i], NULL, work_thread, NULL);
  for (i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  say("locker pid=%ld cycles=%d violations=%d stale=%d errors=%d\n",
      (long)getpid(), done_cycles, violations, stale, errors);
  return violations || stale ? 3 : 0;
}

static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t st_cv = PTHREAD_COND_INITIALIZER;
static int lost;

static void on_state(zkl_mutex_t *m, int state, uint64_t token, void *ctx) {
  (void)m, (void)ctx;
  say("STATE %s token=%" PRIu64 "\n", zkl_lock_state_name(state), token);
  pthread_mutex_lock(&st_mu);
  if (state == ZKL_STATE_LOST)
    lost = 1;
  pthread_cond_broadcast(&st_cv);
  pthread_mutex_unlock(&st_mu);
}

static int do_hold(void) {
  uint64_t token = 0;
  char node[1024] = "";
  struct timespec ts;
  int64_t t0 = zkl_now_ms();
  int rc = wait_secs >= 0 ? zkl_mutex_timedlock(mutex, t0 + wait_secs * 1000LL)
                          : zkl_mutex_lock(mutex);
  if (rc != ZKL_OK) {
    say("NOT ACQUIRED %s after %" PRId64 " ms\n", zkl_err_name(rc), zkl_now_ms() - t0);
    if (keep)
      sleep((unsigned)keep);
    return rc == ZKL_ETIMEDOUT ? 2 : 1;
  }
  zkl_mutex_token(mutex, &token);
  zkl_mutex_node_path(mutex, node, sizeof node);
  say("HELD token=%" PRIu64 " node=%s\n", token, node);
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += hold_secs;
  pthread_mutex_lock(&st_mu);
  while (!lost && pthread_cond_timedwait(&st_cv, &st_mu, &ts) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&st_mu);
  rc = zkl_mutex_unlock(mutex);
  say("RELEASED %s\n", zkl_err_name(rc));
  if (keep)
    sleep((unsigned)keep);
  if (again) {
    rc = zkl_mutex_timedlock(mutex, zkl_now_ms() + 30000);
    if (rc != ZKL_OK) {
      say("NOT REACQUIRED %s\n", zkl_err_name(rc));
      return 1;
    }
    zkl_mutex_token(mutex, &token);
    say("REACQUIRED token=%" PRIu64 "\n", token);
    zkl_mutex_unlock(mutex);
  }
  return 0;
}

static int do_list(void) {
  zkl_contender_t *list = NULL;
  size_t n = 0, i;
  int rc = zkl_mutex_queue(client, root, name, &list, &n);
  if (rc != ZKL_OK) {
    say("error %s\n", zkl_err_name(rc));
    return 1;
  }
  say("contenders=%zu\n", n);
  for (i = 0; i < n; i++)
    say("%d %" PRId64 " %ld\n", list[i].seq, list[i].czxid, list[i].pid);
  zkl_contenders_free(list, n);
  return 0;
}

/* LOCKER_LOG=1: the library's log lines on stderr, stamped in ms */
static void log_line(void *ctx, int level, const char *msg) {
  (void)ctx;
  fprintf(stderr, "%" PRId64 " locker log %d: %s\n", zkl_now_ms(), level, msg);
}

int main(int argc, char **argv) {
  zkl_client_options_t co = {0};
  zkl_mutex_options_t mo = {0};
  const char *mode = argc > 1 ? argv[1] : "";
  int opt, rc;
  while ((opt = getopt(argc - 1, argv + 1, "s:r:n:d:t:c:T:u:W:H:AK:N")) != -1) {
    switch (opt) {
    case 's': hosts = optarg; break;
    case 'r': root = optarg; break;
    case 'n': name = optarg; break;
    case 'd': dir = optarg; break;
    case 't': threads = atoi(optarg); break;
    case 'c': cycles = atoi(optarg); break;
    case 'T': session_ms = atoi(optarg); break;
    case 'u': usec = atoi(optarg); break;
    case 'W': wait_secs = atoi(optarg); break;
    case 'H': hold_secs = atoi(optarg); break;
    case 'A': again = 1; break;
    case 'N': no_watch = 1; break;
    case 'K': keep = atoi(optarg); break;
    default: return 2;
    }
  }
  if (!hosts || !name ||
      (strcmp(mode, "work") && strcmp(mode, "hold") && strcmp(mode, "list"))) {
    fprintf(stderr, "usage: see the comment at the top of locker.c\n");
    return 2;
  }
  co.session_timeout_ms = session_ms;
  if (getenv("LOCKER_LOG")) {
    co.log_fn = log_line;
    co.log_level = ZKL_LOG_DEBUG;
  }
  if ((rc = zkl_client_create(&client, hosts, &co)) != ZKL_OK) {
    fprintf(stderr, "locker: %s\n", zkl_strerror(rc));
    return 1;
  }
  mo.root = root;
  mo.flags = no_watch ? ZKL_MUTEX_NO_NODE_WATCH : 0;
  if (!strcmp(mode, "hold")) {
    mo.state_fn = on_state;
  }
  if ((rc = zkl_mutex_create(&mutex, client, name, &mo)) != ZKL_OK) {
    fprintf(stderr, "locker: %s\n", zkl_strerror(rc));
    return 1;
  }
  rc = !strcmp(mode, "work") ? do_work()
       : !strcmp(mode, "hold") ? do_hold()
                               : do_list();
  zkl_mutex_destroy(mutex);
  zkl_client_destroy(client);
  return rc;
}
