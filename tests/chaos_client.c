/* chaos_client.c: one worker process of the fault-injection suite
 * (tests/chaos.py starts several and injects faults around them).
 *
 *   chaos_client -s HOSTS -r ROOT -l LOCKS -t THREADS -p STORE_PORT
 *                [-T SESSION_MS] [-i ID] [-x SEED] [-u THINK_US] [-W WAIT_MS] [-U]
 *
 * THREADS threads share one client and LOCKS mutex objects (lock names
 * "l0".."l<LOCKS-1>" under ROOT). Each thread loops until SIGTERM: pick a
 * lock, acquire it (giving up after WAIT_MS), then do a read-modify-write on
 * the fenced store at 127.0.0.1:STORE_PORT under the lock's fencing token:
 *   "B lock token id pid"        -> "OK value" | "STALE max"
 *   "C lock token id pid value"  -> "OK"       | "STALE max"
 * then release. A thread never skips the write because its hold was LOST:
 * the store, not the client, must turn a late writer away.
 *
 * -U skips the lock and sends token 0: the checker's own test (tests/chaos.py
 * --unlocked), which must then report overlaps and lost updates.
 *
 * On SIGTERM it finishes the cycles under way, destroys everything and
 * prints one line:
 *   client id=I pid=P cycles=N written=N stale=N lost=N timeouts=N
 *   errors=N max_wait_ms=N
 * Exit 0, or 1 if setup or teardown failed.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zklock.h"

#define MAX_LOCKS 64
#define MAX_THREADS 64

static const char *hosts, *root = "/chaos";
static int nlocks = 3, nthreads = 4, store_port, session_ms = 6000, id;
static int think_us = 2000, wait_ms = 120000, unlocked;
static unsigned seed = 1;
static zkl_client_t *client;
static zkl_mutex_t *mutexes[MAX_LOCKS];
static atomic_int stopping, running;
static atomic_long cycles, written, stale, lost, timeouts, errors, max_wait;

static void die(const char *what, int rc) {
  fprintf(stderr, "chaos_client %d: %s: %s\n", id, what, zkl_strerror(rc));
  exit(1);
}

static int store_connect(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(store_port)};
  int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("chaos_client: store");
    exit(1);
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* One request line, one reply line. The store is on loopback and never
 * faulted, so any I/O error is fatal to the run. */
static void store_ask(int fd, const char *req, char *rep, size_t size) {
  size_t len = strlen(req), n = 0;
  if (write(fd, req, len) != (ssize_t)len) {
    perror("chaos_client: store write");
    exit(1);
  }
  while (n + 1 < size) {
    ssize_t r = read(fd, rep + n, 1);
    if (r <= 0) {
      perror("chaos_client: store read");
      exit(1);
    }
    if (rep[n] == '\n') break;
    n++;
  }
  rep[n] = '\0';
}

static void note_max(atomic_long *slot, long v) {
  long cur = atomic_load(slot);
  while (v > cur && !atomic_compare_exchange_weak(slot, &cur, v)) {
  }
}

/* The critical section: read, think, write back value + 1. */
static void fenced_update(int fd, int k, uint64_t token, unsigned *rs) {
  char req[160], rep[80];
  long value;
  snprintf(req, sizeof req, "B %d %" PRIu64 " %d %d\n", k, token, id, (int)getpid());
  store_ask(fd, req, rep, sizeof rep);
  if (sscanf(rep, "OK %ld", &value) != 1) {
    atomic_fetch_add(&stale, 1);
    return;
  }
  if (think_us > 0) {
    long us = (long)(rand_r(rs) % (unsigned)think_us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
  snprintf(req, sizeof req, "C %d %" PRIu64 " %d %d %ld\n", k, token, id, (int)getpid(),
           value + 1);
  store_ask(fd, req, rep, sizeof rep);
  atomic_fetch_add(strncmp(rep, "OK", 2) == 0 ? &written : &stale, 1);
}

static void one_cycle(int fd, unsigned *rs) {
  int k = (int)(rand_r(rs) % (unsigned)nlocks), rc;
  int64_t t0 = zkl_now_ms();
  uint64_t token = 0;
  if (unlocked) {
    fenced_update(fd, k, 0, rs);
    atomic_fetch_add(&cycles, 1);
    return;
  }
  rc = zkl_mutex_timedlock(mutexes[k], t0 + wait_ms);
  if (rc == ZKL_ECANCELED) return;
  if (rc == ZKL_ETIMEDOUT) {
    atomic_fetch_add(&timeouts, 1);
    return;
  }
  if (rc != ZKL_OK) {
    fprintf(stderr, "chaos_client %d: lock: %s\n", id, zkl_err_name(rc));
    atomic_fetch_add(&errors, 1);
    return;
  }
  note_max(&max_wait, (long)(zkl_now_ms() - t0));
  if (zkl_mutex_token(mutexes[k], &token) != ZKL_OK) atomic_fetch_add(&errors, 1);
  fenced_update(fd, k, token, rs);
  rc = zkl_mutex_unlock(mutexes[k]);
  if (rc == ZKL_ELOST) {
    atomic_fetch_add(&lost, 1);
  } else if (rc != ZKL_OK) {
    fprintf(stderr, "chaos_client %d: unlock: %s\n", id, zkl_err_name(rc));
    atomic_fetch_add(&errors, 1);
  }
  atomic_fetch_add(&cycles, 1);
}

static void *worker(void *arg) {
  unsigned rs = seed * 7919u + (unsigned)(uintptr_t)arg * 104729u + (unsigned)id;
  int fd = store_connect();
  while (!atomic_load(&stopping)) one_cycle(fd, &rs);
  close(fd);
  atomic_fetch_sub(&running, 1);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: chaos_client -s HOSTS -r ROOT -l LOCKS -t THREADS -p STORE_PORT "
                  "[-T SESSION_MS] [-i ID] [-x SEED] [-u THINK_US] [-W WAIT_MS] [-U]\n");
  exit(64);
}

static void parse(int argc, char **argv) {
  int c;
  while ((c = getopt(argc, argv, "s:r:l:t:p:T:i:x:u:W:U")) != -1) {
    switch (c) {
      case 's': hosts = optarg; break;
      case 'r': root = optarg; break;
      case 'l': nlocks = atoi(optarg); break;
      case 't': nthreads = atoi(optarg); break;
      case 'p': store_port = atoi(optarg); break;
      case 'T': session_ms = atoi(optarg); break;
      case 'i': id = atoi(optarg); break;
      case 'x': seed = (unsigned)strtoul(optarg, NULL, 10); break;
      case 'u': think_us = atoi(optarg); break;
      case 'W': wait_ms = atoi(optarg); break;
      case 'U': unlocked = 1; break;
      default: usage();
    }
  }
  if (!hosts || store_port <= 0 || nlocks < 1 || nlocks > MAX_LOCKS || nthreads < 1 ||
      nthreads > MAX_THREADS || think_us < 0 || wait_ms <= 0)
    usage();
}

/* Stop on SIGTERM/SIGINT: cancel until every worker has left, since a
 * worker may start a new acquire just after a cancel. */
static void wait_for_stop(sigset_t *set) {
  int sig, k;
  sigwait(set, &sig);
  atomic_store(&stopping, 1);
  while (atomic_load(&running) > 0) {
    for (k = 0; k < nlocks; k++) zkl_mutex_cancel(mutexes[k]);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  zkl_client_options_t co = {.session_timeout_ms = 0};
  zkl_mutex_options_t mo = {.root = NULL};
  pthread_t th[MAX_THREADS];
  sigset_t set;
  char name[16];
  int k, rc, fail = 0;

  parse(argc, argv);
  mo.root = root;
  co.session_timeout_ms = session_ms;
  co.connect_timeout_ms = 60000;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  if ((rc = zkl_client_create(&client, hosts, &co)) != ZKL_OK) die("client", rc);
  for (k = 0; k < nlocks; k++) {
    snprintf(name, sizeof name, "l%d", k);
    if ((rc = zkl_mutex_create(&mutexes[k], client, name, &mo)) != ZKL_OK) die("mutex", rc);
  }
  atomic_store(&running, nthreads);
  for (k = 0; k < nthreads; k++)
    if (pthread_create(&th[k], NULL, worker, (void *)(uintptr_t)k) != 0) die("thread", ZKL_ESYSTEM);
  printf("client id=%d pid=%d started\n", id, (int)getpid());
  fflush(stdout);
  wait_for_stop(&set);
  for (k = 0; k < nthreads; k++) pthread_join(th[k], NULL);
  for (k = 0; k < nlocks; k++) {
    if ((rc = zkl_mutex_destroy(mutexes[k])) != ZKL_OK) {
      fprintf(stderr, "chaos_client %d: mutex destroy: %s\n", id, zkl_err_name(rc));
      fail = 1;
    }
  }
  if ((rc = zkl_client_destroy(client)) != ZKL_OK) {
    fprintf(stderr, "chaos_client %d: client destroy: %s\n", id, zkl_err_name(rc));
    fail = 1;
  }
  printf("client id=%d pid=%d cycles=%ld written=%ld stale=%ld lost=%ld timeouts=%ld "
         "errors=%ld max_wait_ms=%ld\n",
         id, (int)getpid(), atomic_load(&cycles), atomic_load(&written), atomic_load(&stale),
         atomic_load(&lost), atomic_load(&timeouts), atomic_load(&errors),
         atomic_load(&max_wait));
  return fail;
}
