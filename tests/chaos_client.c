/* chaos_client.c: one worker process of the fault-injection suite
 * (tests/chaos.py starts several and injects faults around them).
 *
 *   chaos_client -s HOSTS -r ROOT -l LOCKS -t THREADS -p STORE_PORT
 *                [-T SESSION_MS] [-i ID] [-x SEED] [-u THINK_US] [-W WAIT_MS] [-U]
 *                [-a SCHEME:CREDENTIAL [-C]] [-m mutex|async|rw|sem|multi|mixed]
 *                [-n LEASES]
 *
 * THREADS threads share one client and LOCKS mutex objects (lock names
 * "l0".."l<LOCKS-1>" under ROOT). Each thread loops until SIGTERM: pick a
 * lock, acquire it (giving up after WAIT_MS), then do a read-modify-write on
 * the fenced store at 127.0.0.1:STORE_PORT under the lock's fencing token:
 *   "B lock token id pid acquired_ms"  -> "OK value" | "STALE max"
 *   "C lock token id pid value"        -> "OK"       | "STALE max"
 * then release. A thread never skips the write because its hold was LOST:
 * the store, not the client, must turn a late writer away. acquired_ms is
 * when the acquire returned (zkl_now_ms(), CLOCK_MONOTONIC like the
 * store's clock).
 *
 * Every hold known to be lost is told to the store, so that the checker
 * can match it with what was done to the lock nodes (tests/chaos_rogue):
 *   "L lock token id pid how"          -> "OK"
 * how is "unlock" (unlock returned ZKL_ELOST) or "state" (the state
 * callback said LOST); a hold may be told twice. An acquire that ends in
 * ZKL_EREVOKED (someone deleted our waiting node) is counted, not an
 * error, and the thread tries again.
 *
 * CHAOS_CLIENT_LOG=LEVEL (1 error .. 4 debug) in the environment sends the
 * library's log to stderr, stamped with zkl_now_ms().
 *
 * -a authenticates every session (zkl_client_options_t auth_scheme and
 * auth, e.g. "digest:chaos:secret"); -C gives zklock's nodes, and the
 * parents it creates, ZKL_ACL_CREATOR.
 *
 * -U skips the lock and sends token 0: the checker's own test (tests/chaos.py
 * --unlocked), which must then report overlaps and lost updates.
 *
 * -m rw: the locks are read-write locks; a quarter of the cycles write
 * (B, C, as above, and half of those then downgrade and read on under the
 * write token), the others read:
 *   "R lock token id pid acquired_ms"  -> "OK value" | "STALE max_write"
 *   "E lock token id pid"              -> "OK"       | "STALE max_write"
 * -m async: the mutexes are taken with zkl_mutex_lock_async (the outcome
 * comes to a callback on the client's thread, and this thread, another
 * one, releases the hold); one acquire in eight is cancelled after up to
 * 2 ms, racing its grant.
 * -m sem: the locks are semaphores of LEASES (-n) leases; each cycle takes
 * a lease, "S lock token id pid acquired_ms" -> "OK", thinks, "E ..." ->
 * "OK", and releases it.
 * -m multi: each cycle takes two locks, in one of three ways drawn at
 * random: nested (the lower-numbered lock, think, then the other, one
 * zkl_mutex_t each, always in that order), as a multi-lock of the two
 * (zkl_multilock_*, the pair named in either order), or one lock alone;
 * then one read-modify-write per lock held, under its token (a
 * multi-lock's one token for both). A nested locker beside a multi-lock
 * on the same two locks is what used to deadlock (a lock nobody holds
 * for long is a stall the checker fails).
 *
 * -m mixed: every kind of user of one lock at once. Each cycle draws one:
 * a blocking mutex, an asynchronous one, the multi-lock cycle above
 * (nested, multi-lock or alone), a read of a read-write lock of the same
 * name (R/E, beside the mutexes' writes), or a flat lock
 * (ZKL_MUTEX_FLAT), blocking or asynchronous, on "f0".."f<LOCKS-1>",
 * which the store knows as locks FLAT_ID + k: a flat lock is a node, not
 * a queue, and cannot share a name with the others. tests/chaos.py runs
 * zklock(1) users on the same locks beside it.
 *
 * On SIGTERM it finishes the cycles under way, destroys everything and
 * prints one line:
 *   client id=I pid=P cycles=N written=N stale=N lost=N revoked=N
 *   timeouts=N errors=N max_wait_ms=N
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
/* -m mixed: the store's number of flat lock fK (tests/chaos.py knows it) */
#define FLAT_ID 32

static const char *hosts, *root = "/chaos";
static int nlocks = 3, nthreads = 4, store_port, session_ms = 6000, id;
static int think_us = 2000, wait_ms = 120000, unlocked, acl_creator;
static const char *mode = "mutex";
static int async_mode, multi_mode, mixed_mode;
static zkl_mutex_t *flats[MAX_LOCKS]; /* -m mixed */
static int leases = 2;
static zkl_rwlock_t *rwlocks[MAX_LOCKS];
static zkl_semaphore_t *sems[MAX_LOCKS];
static const char *auth;
static unsigned seed = 1;
static zkl_client_t *client;
static zkl_mutex_t *mutexes[MAX_LOCKS];
/* -m multi: each worker's multi-lock while it has one, for the stop's
 * cancel (under multi_mu) */
static zkl_multilock_t *multis[MAX_THREADS];
static pthread_mutex_t multi_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stopping, running;
static atomic_long fake_tokens;
static atomic_long cycles, written, stale, lost, revoked, timeouts, errors, max_wait;
/* The state callbacks' own store connection: they run on the client's
 * event thread, never on a worker's. */
static int report_fd = -1;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

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

static void report_lost(int fd, int k, uint64_t token, const char *how) {
  char req[160], rep[80];
  snprintf(req, sizeof req, "L %d %" PRIu64 " %d %d %s\n", k, token, id, (int)getpid(), how);
  store_ask(fd, req, rep, sizeof rep);
}

static void state_lost(int state, uint64_t token, void *ctx) {
  if (state != ZKL_STATE_LOST) return;
  pthread_mutex_lock(&report_mu);
  report_lost(report_fd, (int)(uintptr_t)ctx, token, "state");
  pthread_mutex_unlock(&report_mu);
}

static void on_state(zkl_mutex_t *m, int state, uint64_t token, void *ctx) {
  (void)m;
  state_lost(state, token, ctx);
}

static void on_rw_state(zkl_rwlock_t *rw, int state, uint64_t token, void *ctx) {
  (void)rw;
  state_lost(state, token, ctx);
}

static void on_sem_state(zkl_semaphore_t *sem, int state, uint64_t token, void *ctx) {
  (void)sem;
  state_lost(state, token, ctx);
}

/* A multi-lock's loss is each of its locks': ctx is the pair, k1 << 8 | k2. */
static void on_multi_state(zkl_multilock_t *ml, int state, uint64_t token, void *ctx) {
  uintptr_t pair = (uintptr_t)ctx;
  (void)ml;
  state_lost(state, token, (void *)(pair >> 8));
  state_lost(state, token, (void *)(pair & 0xff));
}

static void log_line(void *ctx, int level, const char *msg) {
  (void)ctx;
  fprintf(stderr, "%" PRId64 " chaos_client %d log %d: %s\n", zkl_now_ms(), id, level, msg);
}

static void note_max(atomic_long *slot, long v) {
  long cur = atomic_load(slot);
  while (v > cur && !atomic_compare_exchange_weak(slot, &cur, v)) {
  }
}

static void think(unsigned *rs) {
  if (think_us > 0) {
    long us = (long)(rand_r(rs) % (unsigned)think_us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The critical section: read, think, write back value + 1. */
static void fenced_update(int fd, int k, uint64_t token, int64_t acquired, unsigned *rs) {
  char req[160], rep[80];
  long value;
  snprintf(req, sizeof req, "B %d %" PRIu64 " %d %d %" PRId64 "\n", k, token, id, (int)getpid(),
           acquired);
  store_ask(fd, req, rep, sizeof rep);
  if (sscanf(rep, "OK %ld", &value) != 1) {
    atomic_fetch_add(&stale, 1);
    return;
  }
  think(rs);
  snprintf(req, sizeof req, "C %d %" PRIu64 " %d %d %ld\n", k, token, id, (int)getpid(),
           value + 1);
  store_ask(fd, req, rep, sizeof rep);
  atomic_fetch_add(strncmp(rep, "OK", 2) == 0 ? &written : &stale, 1);
}

/* A read section ("R" then "E"), or a lease's ("S" then "E"). */
static void section(int fd, char op, int k, uint64_t token, int64_t acquired, unsigned *rs) {
  char req[160], rep[80];
  snprintf(req, sizeof req, "%c %d %" PRIu64 " %d %d %" PRId64 "\n", op, k, token, id,
           (int)getpid(), acquired);
  store_ask(fd, req, rep, sizeof rep);
  if (strncmp(rep, "OK", 2) != 0) atomic_fetch_add(&stale, 1);
  think(rs);
  snprintf(req, sizeof req, "E %d %" PRIu64 " %d %d\n", k, token, id, (int)getpid());
  store_ask(fd, req, rep, sizeof rep);
  if (strncmp(rep, "OK", 2) != 0) atomic_fetch_add(&stale, 1);
}

/* Counts an error the run must not have, with a line saying which. */
static void failed(const char *what, int rc) {
  fprintf(stderr, "chaos_client %d: %s: %s\n", id, what, zkl_err_name(rc));
  atomic_fetch_add(&errors, 1);
}

/* Counts an acquire's failure; 1 if the cycle goes on. */
static int acquired_ok(int rc, const char *what) {
  if (rc == ZKL_OK) return 1;
  if (rc == ZKL_ETIMEDOUT) atomic_fetch_add(&timeouts, 1);
  else if (rc == ZKL_EREVOKED) atomic_fetch_add(&revoked, 1);
  else if (rc != ZKL_ECANCELED)
    failed(what, rc);
  return 0;
}

/* Counts a release's verdict. */
static void released(int fd, int rc, int k, uint64_t token, const char *what) {
  if (rc == ZKL_ELOST) {
    atomic_fetch_add(&lost, 1);
    report_lost(fd, k, token, "unlock");
  } else if (rc != ZKL_OK)
    failed(what, rc);
}

static void rw_cycle(int fd, int k, unsigned *rs) {
  int64_t t0 = zkl_now_ms(), acquired;
  int write = rand_r(rs) % 4 == 0, down = write && rand_r(rs) % 2, rc;
  uint64_t token = 0;
  rc = write ? zkl_rwlock_timedwrlock(rwlocks[k], t0 + wait_ms)
             : zkl_rwlock_timedrdlock(rwlocks[k], t0 + wait_ms);
  if (!acquired_ok(rc, write ? "wrlock" : "rdlock")) return;
  acquired = zkl_now_ms();
  note_max(&max_wait, (long)(acquired - t0));
  if ((rc = zkl_rwlock_token(rwlocks[k], &token)) != ZKL_OK) failed("token", rc);
  if (write) fenced_update(fd, k, token, acquired, rs);
  if (down) {
    /* the Java way: read while writing, then let the write go */
    rc = zkl_rwlock_rdlock(rwlocks[k]);
    if (rc == ZKL_ELOST) { /* lost while writing (paused, deleted): no read level to take */
      released(fd, zkl_rwlock_wrunlock(rwlocks[k]), k, token, "unlock after loss");
      atomic_fetch_add(&cycles, 1);
      return;
    }
    if (rc != ZKL_OK) failed("rdlock over wrlock", rc);
    rc = zkl_rwlock_wrunlock(rwlocks[k]);
    if (rc == ZKL_ELOST) { /* the whole hold is gone */
      released(fd, rc, k, token, "downgrade");
      atomic_fetch_add(&cycles, 1);
      return;
    }
    released(fd, rc, k, token, "downgrade");
  }
  if (!write || down) section(fd, 'R', k, token, acquired, rs);
  rc = write && !down ? zkl_rwlock_wrunlock(rwlocks[k]) : zkl_rwlock_rdunlock(rwlocks[k]);
  released(fd, rc, k, token, "unlock");
  atomic_fetch_add(&cycles, 1);
}

static void sem_cycle(int fd, int k, unsigned *rs) {
  int64_t t0 = zkl_now_ms(), acquired;
  zkl_lease_t *l = NULL;
  uint64_t token = 0;
  if (!acquired_ok(zkl_semaphore_timedacquire(sems[k], t0 + wait_ms, &l), "acquire")) return;
  acquired = zkl_now_ms();
  note_max(&max_wait, (long)(acquired - t0));
  int rc = zkl_lease_token(l, &token);
  if (rc != ZKL_OK) failed("token", rc);
  section(fd, 'S', k, token, acquired, rs);
  released(fd, zkl_lease_release(l), k, token, "release");
  atomic_fetch_add(&cycles, 1);
}

/* An asynchronous acquire's outcome, handed from the callback. */
struct slot {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, rc;
  zkl_hold_t *hold;
};

static void on_async(zkl_hold_t *hold, int rc, void *arg) {
  struct slot *s = arg;
  pthread_mutex_lock(&s->mu);
  s->done = 1;
  s->rc = rc;
  s->hold = hold;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* An asynchronous cycle on m, lock number k in the store. */
static void async_cycle_on(int fd, zkl_mutex_t *m, int k, unsigned *rs) {
  struct slot s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};
  zkl_hold_t *h = NULL;
  int64_t t0 = zkl_now_ms(), acquired;
  uint64_t token = 0;
  int rc = zkl_mutex_lock_async(m, t0 + wait_ms, on_async, &s, &h);
  if (!acquired_ok(rc, "lock_async")) return;
  if (rand_r(rs) % 8 == 0) {
    usleep((useconds_t)(rand_r(rs) % 2000));
    rc = zkl_hold_cancel(h);
    if (rc == ZKL_OK) return; /* on_async never runs */
    if (rc != ZKL_EBUSY) failed("hold cancel", rc);
  }
  pthread_mutex_lock(&s.mu); /* the acquire's deadline bounds this */
  while (!s.done) pthread_cond_wait(&s.cv, &s.mu);
  pthread_mutex_unlock(&s.mu);
  if (!acquired_ok(s.rc, "lock_async")) return;
  acquired = zkl_now_ms();
  note_max(&max_wait, (long)(acquired - t0));
  if ((rc = zkl_hold_token(s.hold, &token)) != ZKL_OK) failed("hold token", rc);
  fenced_update(fd, k, token, acquired, rs);
  released(fd, zkl_hold_release(s.hold), k, token, "unlock");
  atomic_fetch_add(&cycles, 1);
}

static void async_cycle(int fd, int k, unsigned *rs) {
  async_cycle_on(fd, mutexes[k], k, rs);
}

/* Two locks at once: nested, as one multi-lock, or one of them alone. */
static void multi_cycle(int fd, int slot, unsigned *rs) {
  int a = (int)(rand_r(rs) % (unsigned)nlocks), b = (a + 1 + (int)(rand_r(rs) % (unsigned)(nlocks - 1))) % nlocks;
  int lo = a < b ? a : b, hi = a < b ? b : a, how = (int)(rand_r(rs) % 3), rc;
  int64_t t0 = zkl_now_ms(), acquired;
  uint64_t tlo = 0, thi = 0;
  if (how == 0) { /* nested: lo, think, then hi */
    if (!acquired_ok(zkl_mutex_timedlock(mutexes[lo], t0 + wait_ms), "lock")) return;
    if ((rc = zkl_mutex_token(mutexes[lo], &tlo)) != ZKL_OK) failed("token", rc);
    think(rs);
    if (!acquired_ok(zkl_mutex_timedlock(mutexes[hi], t0 + wait_ms), "nested lock")) {
      released(fd, zkl_mutex_unlock(mutexes[lo]), lo, tlo, "unlock");
      return;
    }
    acquired = zkl_now_ms();
    note_max(&max_wait, (long)(acquired - t0));
    if ((rc = zkl_mutex_token(mutexes[hi], &thi)) != ZKL_OK) failed("token", rc);
    fenced_update(fd, lo, tlo, acquired, rs);
    fenced_update(fd, hi, thi, acquired, rs);
    released(fd, zkl_mutex_unlock(mutexes[hi]), hi, thi, "unlock");
    released(fd, zkl_mutex_unlock(mutexes[lo]), lo, tlo, "unlock");
  } else if (how == 1) { /* one multi-lock, the pair named in either order */
    char na[16], nb[16];
    zkl_multilock_member_t m[2] = {{na, ZKL_MODE_EXCLUSIVE}, {nb, ZKL_MODE_EXCLUSIVE}};
    zkl_multilock_options_t o = {.root = root};
    zkl_multilock_t *ml = NULL;
    snprintf(na, sizeof na, "l%d", a);
    snprintf(nb, sizeof nb, "l%d", b);
    o.state_fn = on_multi_state;
    o.state_ctx = (void *)(uintptr_t)(lo << 8 | hi);
    if ((rc = zkl_multilock_create(&ml, client, m, 2, &o)) != ZKL_OK) {
      failed("multilock create", rc);
      return;
    }
    pthread_mutex_lock(&multi_mu);
    multis[slot] = atomic_load(&stopping) ? NULL : ml;
    pthread_mutex_unlock(&multi_mu);
    rc = multis[slot] ? zkl_multilock_timedlock(ml, t0 + wait_ms) : ZKL_ECANCELED;
    int got = acquired_ok(rc, "multilock");
    if (got) {
      acquired = zkl_now_ms();
      note_max(&max_wait, (long)(acquired - t0));
      if ((rc = zkl_multilock_token(ml, &tlo)) != ZKL_OK) failed("multilock token", rc);
      fenced_update(fd, lo, tlo, acquired, rs);
      fenced_update(fd, hi, tlo, acquired, rs);
      rc = zkl_multilock_unlock(ml);
      released(fd, rc, lo, tlo, "unlock");
      if (rc == ZKL_ELOST) report_lost(fd, hi, tlo, "unlock");
    }
    pthread_mutex_lock(&multi_mu);
    multis[slot] = NULL;
    pthread_mutex_unlock(&multi_mu);
    if ((rc = zkl_multilock_destroy(ml)) != ZKL_OK) failed("multilock destroy", rc);
    if (!got) return;
  } else {
    if (!acquired_ok(zkl_mutex_timedlock(mutexes[a], t0 + wait_ms), "lock")) return;
    acquired = zkl_now_ms();
    note_max(&max_wait, (long)(acquired - t0));
    if ((rc = zkl_mutex_token(mutexes[a], &tlo)) != ZKL_OK) failed("token", rc);
    fenced_update(fd, a, tlo, acquired, rs);
    released(fd, zkl_mutex_unlock(mutexes[a]), a, tlo, "unlock");
  }
  atomic_fetch_add(&cycles, 1);
}

/* A blocking cycle on m, lock number k in the store. */
static void mutex_cycle(int fd, zkl_mutex_t *m, int k, unsigned *rs) {
  int64_t t0 = zkl_now_ms(), acquired;
  uint64_t token = 0;
  int rc;
  if (!acquired_ok(zkl_mutex_timedlock(m, t0 + wait_ms), "lock")) return;
  acquired = zkl_now_ms();
  note_max(&max_wait, (long)(acquired - t0));
  if ((rc = zkl_mutex_token(m, &token)) != ZKL_OK) failed("token", rc);
  fenced_update(fd, k, token, acquired, rs);
  released(fd, zkl_mutex_unlock(m), k, token, "unlock");
  atomic_fetch_add(&cycles, 1);
}

/* -m mixed: a read of lock k's read-write lock, beside its writers. */
static void read_cycle(int fd, int k, unsigned *rs) {
  int64_t t0 = zkl_now_ms(), acquired;
  uint64_t token = 0;
  int rc;
  if (!acquired_ok(zkl_rwlock_timedrdlock(rwlocks[k], t0 + wait_ms), "rdlock")) return;
  acquired = zkl_now_ms();
  note_max(&max_wait, (long)(acquired - t0));
  if ((rc = zkl_rwlock_token(rwlocks[k], &token)) != ZKL_OK) failed("token", rc);
  section(fd, 'R', k, token, acquired, rs);
  released(fd, zkl_rwlock_rdunlock(rwlocks[k]), k, token, "unlock");
  atomic_fetch_add(&cycles, 1);
}

/* -m mixed: one cycle of a kind drawn at random (see the header). */
static void mixed_cycle(int fd, int slot, int k, unsigned *rs) {
  switch (rand_r(rs) % 6) {
  case 0: mutex_cycle(fd, mutexes[k], k, rs); break;
  case 1: async_cycle_on(fd, mutexes[k], k, rs); break;
  case 2: multi_cycle(fd, slot, rs); break;
  case 3: read_cycle(fd, k, rs); break;
  case 4: mutex_cycle(fd, flats[k], FLAT_ID + k, rs); break;
  default: async_cycle_on(fd, flats[k], FLAT_ID + k, rs); break;
  }
}

static void one_cycle(int fd, int slot, unsigned *rs) {
  int k = (int)(rand_r(rs) % (unsigned)nlocks);
  if (unlocked) { /* the checker's own test: the same sections, no lock */
    if (sems[0]) /* leases are told apart by token: a made-up one each */
      section(fd, 'S', k, (uint64_t)(id + 1) << 40 | (uint64_t)atomic_fetch_add(&fake_tokens, 1),
              zkl_now_ms(), rs);
    else if (rwlocks[0] && rand_r(rs) % 4)
      section(fd, 'R', k, 0, zkl_now_ms(), rs);
    else
      fenced_update(fd, k, 0, zkl_now_ms(), rs);
    atomic_fetch_add(&cycles, 1);
    return;
  }
  if (mixed_mode) {
    mixed_cycle(fd, slot, k, rs);
    return;
  }
  if (rwlocks[0]) {
    rw_cycle(fd, k, rs);
    return;
  }
  if (sems[0]) {
    sem_cycle(fd, k, rs);
    return;
  }
  if (async_mode) {
    async_cycle(fd, k, rs);
    return;
  }
  if (multi_mode) {
    multi_cycle(fd, slot, rs);
    return;
  }
  mutex_cycle(fd, mutexes[k], k, rs);
}

static void *worker(void *arg) {
  unsigned rs = seed * 7919u + (unsigned)(uintptr_t)arg * 104729u + (unsigned)id;
  int fd = store_connect();
  while (!atomic_load(&stopping)) one_cycle(fd, (int)(uintptr_t)arg, &rs);
  close(fd);
  atomic_fetch_sub(&running, 1);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: chaos_client -s HOSTS -r ROOT -l LOCKS -t THREADS -p STORE_PORT "
                  "[-T SESSION_MS] [-i ID] [-x SEED] [-u THINK_US] [-W WAIT_MS] [-U] "
                  "[-a SCHEME:CREDENTIAL [-C]] [-m mutex|async|rw|sem|multi|mixed] [-n LEASES]\n");
  exit(64);
}

static void parse(int argc, char **argv) {
  int c;
  while ((c = getopt(argc, argv, "s:r:l:t:p:T:i:x:u:W:Ua:Cm:n:")) != -1) {
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
      case 'a': auth = optarg; break;
      case 'C': acl_creator = 1; break;
      case 'm': mode = optarg; break;
      case 'n': leases = atoi(optarg); break;
      default: usage();
    }
  }
  if (!hosts || store_port <= 0 || nlocks < 1 || nlocks > MAX_LOCKS || nthreads < 1 ||
      nthreads > MAX_THREADS || think_us < 0 || wait_ms <= 0 || (acl_creator && !auth) ||
      (auth && !strchr(auth, ':')) || leases < 1 ||
      (strcmp(mode, "mutex") && strcmp(mode, "async") && strcmp(mode, "rw") &&
       strcmp(mode, "sem") && strcmp(mode, "multi") && strcmp(mode, "mixed")) ||
      ((!strcmp(mode, "multi") || !strcmp(mode, "mixed")) && nlocks < 2) ||
      (!strcmp(mode, "mixed") && nlocks > FLAT_ID))
    usage();
}

/* Stop on SIGTERM/SIGINT: cancel until every worker has left, since a
 * worker may start a new acquire just after a cancel. */
static void wait_for_stop(sigset_t *set) {
  int sig, k;
  sigwait(set, &sig);
  atomic_store(&stopping, 1);
  while (atomic_load(&running) > 0) {
    for (k = 0; k < nlocks; k++) {
      if (flats[k]) zkl_mutex_cancel(flats[k]);
      if (mutexes[k]) zkl_mutex_cancel(mutexes[k]);
      if (rwlocks[k]) zkl_rwlock_cancel(rwlocks[k]);
      if (sems[k]) zkl_semaphore_cancel(sems[k]);
    }
    pthread_mutex_lock(&multi_mu);
    for (k = 0; k < nthreads; k++)
      if (multis[k]) zkl_multilock_cancel(multis[k]);
    pthread_mutex_unlock(&multi_mu);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  zkl_client_options_t co = {.session_timeout_ms = 0};
  zkl_mutex_options_t mo = {.root = NULL};
  zkl_rwlock_options_t ro = {.root = NULL};
  zkl_semaphore_options_t so = {.root = NULL};
  pthread_t th[MAX_THREADS];
  sigset_t set;
  char name[16], scheme[32] = "";
  int k, rc, fail = 0;

  parse(argc, argv);
  async_mode = !strcmp(mode, "async");
  mixed_mode = !strcmp(mode, "mixed");
  multi_mode = !strcmp(mode, "multi") || mixed_mode;
  mo.root = ro.root = so.root = root;
  mo.state_fn = on_state;
  ro.state_fn = on_rw_state;
  so.state_fn = on_sem_state;
  co.session_timeout_ms = session_ms;
  co.connect_timeout_ms = 60000;
  if (getenv("CHAOS_CLIENT_LOG")) {
    co.log_fn = log_line;
    co.log_level = atoi(getenv("CHAOS_CLIENT_LOG"));
  }
  if (auth) {
    size_t n = (size_t)(strchr(auth, ':') - auth);
    if (n >= sizeof scheme) usage();
    memcpy(scheme, auth, n);
    co.auth_scheme = scheme;
    co.auth = auth + n + 1;
    co.acl = acl_creator ? ZKL_ACL_CREATOR : ZKL_ACL_OPEN;
  }
  report_fd = store_connect();
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  if ((rc = zkl_client_create(&client, hosts, &co)) != ZKL_OK) die("client", rc);
  for (k = 0; k < nlocks; k++) {
    snprintf(name, sizeof name, "l%d", k);
    mo.state_ctx = ro.state_ctx = so.state_ctx = (void *)(uintptr_t)k;
    if (!strcmp(mode, "rw"))
      rc = zkl_rwlock_create(&rwlocks[k], client, name, &ro);
    else if (!strcmp(mode, "sem"))
      rc = zkl_semaphore_create(&sems[k], client, name, (unsigned)leases, &so);
    else
      rc = zkl_mutex_create(&mutexes[k], client, name, &mo);
    if (rc == ZKL_OK && mixed_mode)
      rc = zkl_rwlock_create(&rwlocks[k], client, name, &ro);
    if (rc == ZKL_OK && mixed_mode) {
      zkl_mutex_options_t fo = mo;
      fo.flags = ZKL_MUTEX_FLAT;
      fo.state_ctx = (void *)(uintptr_t)(FLAT_ID + k);
      snprintf(name, sizeof name, "f%d", k);
      rc = zkl_mutex_create(&flats[k], client, name, &fo);
    }
    if (rc != ZKL_OK) die(mode, rc);
  }
  atomic_store(&running, nthreads);
  for (k = 0; k < nthreads; k++)
    if (pthread_create(&th[k], NULL, worker, (void *)(uintptr_t)k) != 0) die("thread", ZKL_ESYSTEM);
  printf("client id=%d pid=%d started\n", id, (int)getpid());
  fflush(stdout);
  wait_for_stop(&set);
  for (k = 0; k < nthreads; k++) pthread_join(th[k], NULL);
  for (k = 0; k < nlocks; k++) {
    rc = zkl_mutex_destroy(flats[k]);
    if (rc == ZKL_OK && mixed_mode)
      rc = zkl_rwlock_destroy(rwlocks[k]);
    if (rc == ZKL_OK)
      rc = mutexes[k] ? zkl_mutex_destroy(mutexes[k])
           : rwlocks[k] ? zkl_rwlock_destroy(rwlocks[k])
                        : zkl_semaphore_destroy(sems[k]);
    if (rc != ZKL_OK) {
      fprintf(stderr, "chaos_client %d: mutex destroy: %s\n", id, zkl_err_name(rc));
      fail = 1;
    }
  }
  if ((rc = zkl_client_destroy(client)) != ZKL_OK) {
    fprintf(stderr, "chaos_client %d: client destroy: %s\n", id, zkl_err_name(rc));
    fail = 1;
  }
  printf("client id=%d pid=%d cycles=%ld written=%ld stale=%ld lost=%ld revoked=%ld "
         "timeouts=%ld errors=%ld max_wait_ms=%ld\n",
         id, (int)getpid(), atomic_load(&cycles), atomic_load(&written), atomic_load(&stale),
         atomic_load(&lost), atomic_load(&revoked), atomic_load(&timeouts), atomic_load(&errors),
         atomic_load(&max_wait));
  return fail;
}
