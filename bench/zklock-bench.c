/* SPDX-License-Identifier: Apache-2.0 */
/* zklock-bench: the peers' lock benchmark (../shared/bench) for zklock.
 *
 * Same flags, workloads and JSON lines as CuratorBench.java and
 * kazoo_bench.py, so that run-peers.sh can run it beside them
 * (ZKB_EXTRA_IMPLS="zklock=build/.../bench/zklock-bench"). Built by make,
 * not installed. Diagnostics go to stderr, results to stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "zklock.h"

static const char *connect_str, *root = "/zkbench", *label = "";
static int N = 2000, warmup = 100, C = 4, T = 4, M = 1000, K = 100000;
static int leases = 2; /* the semaphore workload's */
static int session_ms = 60000;
/* --async-release: many-keys releases with zkl_hold_release_async(), so a
 * thread's next acquire may ride the same transaction as its release */
static int async_release;
/* --flat: every mutex is a flat lock (ZKL_MUTEX_FLAT) */
static int flat;
static char base[256];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- JSON output ----------------------------------------------------------- */

static char line[16384];
static size_t used;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  used += (size_t)vsnprintf(line + used, sizeof line - used, fmt, ap);
  va_end(ap);
  if (used >= sizeof line)
    used = sizeof line - 1;
}

/* The comma before a key: none first in the line or in an object. */
static const char *sep(void) {
  return used > 0 && line[used - 1] != '{' ? "," : "";
}

static void key_str(const char *k, const char *v) {
  put("%s\"%s\":\"%s\"", sep(), k, v);
}
static void key_int(const char *k, long long v) {
  put("%s\"%s\":%lld", sep(), k, v);
}
static void key_num(const char *k, double v) {
  char b[64];
  snprintf(b, sizeof b, "%.6f", v);
  /* plain decimal like the other drivers: strip trailing zeros, keep ".0" */
  for (char *e = b + strlen(b) - 1; *e == '0' && e[-1] != '.'; e--)
    *e = '\0';
  put("%s\"%s\":%s", sep(), k, b);
}
static void key_bool(const char *k, int v) {
  put("%s\"%s\":%s", sep(), k, v ? "true" : "false");
}
static void key_null(const char *k) { put("%s\"%s\":null", sep(), k); }
/* key_obj("k") ... put("}"): an object as a key's value */
static void key_obj(const char *k) { put("%s\"%s\":{", sep(), k); }
static void begin(const char *workload) {
  used = 0;
  put("{");
  key_str("impl", "zklock");
  key_str("workload", workload);
}

/* ---- the servers measured: their addresses, processes and states ------------ */

/* The servers whose counters (mntr) and CPU a line reports: --servers, else
 * $ZKB_SERVERS, else the connect string's. With --connect naming the leader
 * alone, --servers names the whole ensemble, so that the followers are
 * measured too. Their PIDs: --server-pids (or $ZKB_SERVER_PIDS) in the same
 * order, else the process of this machine listening on each server's port. */
static const char *servers_str, *server_pids_str;

enum { MAXSRV = 16, MAXADDR = 4 };

/* An address as /proc/net/tcp{,6} prints it: 4 words as stored in memory;
 * an IPv4 address (or an IPv4-mapped IPv6 one) in a[0], v4 set. */
typedef struct {
  int v4;
  uint32_t a[4];
} addr_t;

typedef struct {
  char hp[128];        /* host:port, as given */
  int port;
  addr_t addr[MAXADDR]; /* what host resolves to */
  int naddr;
  int pid;             /* its process on this machine; 0: none found */
  char state[16];      /* zk_server_state of its last mntr: leader, ... */
  int quorum;          /* its zk_quorum_size: the voting servers */
} server_t;

static server_t srv[MAXSRV];
static int nsrv;

static int addr_eq(const addr_t *x, const addr_t *y) {
  return x->v4 == y->v4 &&
         (x->v4 ? x->a[0] == y->a[0] : !memcmp(x->a, y->a, sizeof x->a));
}

static int addr_any(const addr_t *x) {
  return x->v4 ? !x->a[0] : !(x->a[0] | x->a[1] | x->a[2] | x->a[3]);
}

/* ::ffff:a.b.c.d is a.b.c.d */
static void addr_norm(addr_t *x) {
  if (!x->v4 && !x->a[0] && !x->a[1] && x->a[2] == htonl(0xffff)) {
    x->v4 = 1;
    x->a[0] = x->a[3];
    x->a[1] = x->a[2] = x->a[3] = 0;
  }
}

/* /proc/net/tcp's hex: 8 digits (IPv4) or 32 (IPv6), each 8 a word */
static int addr_hex(const char *hex, addr_t *x) {
  size_t n = strlen(hex), i;
  char w[9];
  memset(x, 0, sizeof *x);
  if (n != 8 && n != 32)
    return -1;
  x->v4 = n == 8;
  for (i = 0; i < n / 8; i++) {
    memcpy(w, hex + 8 * i, 8);
    w[8] = '\0';
    x->a[i] = (uint32_t)strtoul(w, NULL, 16);
  }
  addr_norm(x);
  return 0;
}

static void server_resolve(server_t *s) {
  char host[128], *colon;
  struct addrinfo hints = {0}, *ai, *p;
  snprintf(host, sizeof host, "%s", s->hp);
  if (!(colon = strrchr(host, ':')))
    return;
  *colon = '\0';
  s->port = atoi(colon + 1);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
    return;
  for (p = ai; p && s->naddr < MAXADDR; p = p->ai_next) {
    addr_t *x = &s->addr[s->naddr];
    memset(x, 0, sizeof *x);
    if (p->ai_family == AF_INET) {
      x->v4 = 1;
      x->a[0] = ((struct sockaddr_in *)(void *)p->ai_addr)->sin_addr.s_addr;
    } else if (p->ai_family == AF_INET6) {
      memcpy(x->a, &((struct sockaddr_in6 *)(void *)p->ai_addr)->sin6_addr, 16);
      addr_norm(x);
    } else {
      continue;
    }
    s->naddr++;
  }
  freeaddrinfo(ai);
}

static int server_has(const server_t *s, const addr_t *x) {
  int i;
  for (i = 0; i < s->naddr; i++)
    if (addr_eq(&s->addr[i], x))
      return 1;
  return 0;
}

/* One TCP socket of this network namespace (/proc/net/tcp and tcp6). */
typedef struct {
  addr_t local, remote;
  int lport, rport, state; /* state 0x0A: listening, 0x01: established */
  unsigned long inode;
} tcp_t;

static void each_tcp(void (*fn)(const tcp_t *, void *), void *arg) {
  static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  char buf[512], lh[40], rh[40];
  size_t f;
  for (f = 0; f < 2; f++) {
    FILE *in = fopen(files[f], "r");
    tcp_t t;
    if (!in)
      continue;
    while (fgets(buf, sizeof buf, in))
      if (sscanf(buf, " %*d: %32[0-9A-Fa-f]:%x %32[0-9A-Fa-f]:%x %x %*s %*s "
                      "%*s %*u %*u %lu",
                 lh, &t.lport, rh, &t.rport, &t.state, &t.inode) == 6 &&
          addr_hex(lh, &t.local) == 0 && addr_hex(rh, &t.remote) == 0)
        fn(&t, arg);
    fclose(in);
  }
}

/* The listening socket of each server without a PID yet. */
static void find_listener(const tcp_t *t, void *arg) {
  unsigned long *inode = arg;
  int i;
  if (t->state != 0x0A)
    return;
  for (i = 0; i < nsrv; i++)
    if (!srv[i].pid && t->lport == srv[i].port &&
        (addr_any(&t->local) || server_has(&srv[i], &t->local)))
      inode[i] = t->inode;
}

/* Calls fn(inode, pid, arg) for every socket among the open files of pid
 * (0: of every process this user may look into). */
static void each_socket(int pid, void (*fn)(unsigned long, int, void *),
                        void *arg) {
  DIR *procs = pid ? NULL : opendir("/proc");
  struct dirent *pe = NULL;
  char dir[64], link[320], to[64];
  do {
    int p = pid;
    DIR *fds;
    struct dirent *fe;
    if (procs) {
      if (!(pe = readdir(procs)))
        break;
      if ((p = atoi(pe->d_name)) <= 0)
        continue;
    }
    snprintf(dir, sizeof dir, "/proc/%d/fd", p);
    if (!(fds = opendir(dir)))
      continue;
    while ((fe = readdir(fds))) {
      ssize_t n;
      unsigned long inode;
      snprintf(link, sizeof link, "%s/%s", dir, fe->d_name);
      if ((n = readlink(link, to, sizeof to - 1)) > 0) {
        to[n] = '\0';
        if (sscanf(to, "socket:[%lu]", &inode) == 1)
          fn(inode, p, arg);
      }
    }
    closedir(fds);
  } while (procs);
  if (procs)
    closedir(procs);
}

static void owner_of(unsigned long inode, int pid, void *arg) {
  unsigned long *want = arg;
  int i;
  for (i = 0; i < nsrv; i++)
    if (want[i] && want[i] == inode)
      srv[i].pid = pid;
}

/* utime + stime of a process, all its threads, in clock ticks (-1: gone) */
static long long proc_ticks(int pid) {
  char path[64], buf[1024], *p;
  unsigned long long ut, st;
  FILE *f;
  size_t n;
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (!(f = fopen(path, "r")))
    return -1;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* the command's name may hold spaces and parentheses: fields follow the
   * last ')'; utime and stime are the 14th and 15th */
  if (!(p = strrchr(buf, ')')) ||
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (long long)(ut + st);
}

static void server_pids(void) {
  char list[1024], *save = NULL, *tok;
  unsigned long inode[MAXSRV] = {0};
  int i = 0;
  if (server_pids_str && *server_pids_str) {
    snprintf(list, sizeof list, "%s", server_pids_str);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      char *e;
      long v = strtol(tok, &e, 10);
      if (*e || v <= 0 || v > INT_MAX || i >= nsrv || proc_ticks((int)v) < 0) {
        fprintf(stderr, "zklock-bench: server PIDs %s: not one running "
                        "process per server of %s\n", server_pids_str,
                servers_str);
        exit(2);
      }
      srv[i++].pid = (int)v;
    }
    if (i != nsrv) {
      fprintf(stderr, "zklock-bench: server PIDs %s: %d processes for %d "
                      "servers\n", server_pids_str, i, nsrv);
      exit(2);
    }
    return;
  }
  each_tcp(find_listener, inode);
  each_socket(0, owner_of, inode);
  for (i = 0; i < nsrv; i++)
    if (!srv[i].pid)
      fprintf(stderr, "zklock-bench: no process of this machine found "
                      "listening on %s: its CPU is not measured\n", srv[i].hp);
}

static void servers_init(void) {
  char list[1024], *save = NULL, *tok, *slash;
  if (!servers_str || !*servers_str)
    servers_str = getenv("ZKB_SERVERS");
  if (!servers_str || !*servers_str)
    servers_str = connect_str;
  if (!server_pids_str)
    server_pids_str = getenv("ZKB_SERVER_PIDS");
  snprintf(list, sizeof list, "%s", servers_str);
  if ((slash = strchr(list, '/')))
    *slash = '\0';
  for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (nsrv == MAXSRV || !strchr(tok, ':')) {
      fprintf(stderr, "zklock-bench: servers %s: at most %d, each host:port\n",
              servers_str, MAXSRV);
      exit(2);
    }
    snprintf(srv[nsrv].hp, sizeof srv[nsrv].hp, "%s", tok);
    server_resolve(&srv[nsrv++]);
  }
  server_pids();
}

/* zkl_client_stats()'s request kinds, in the order of its requests[]. */
static const char *const req_kind[ZKL_STATS_REQ_KINDS] = {
    "create", "delete", "get_data", "exists", "get_children",
    "set_data", "sync", "multi", "check"};

/* The shared client's counters (zkl_client_stats()) since it was made,
 * on every line: cumulative over the workloads run so far on it. */
static zkl_client_t *stats_client;

static void stats_keys(void) {
  static const char *const outcome[ZKL_STATS_OUTCOMES] = {
      "stats_acquires_ok", "stats_acquires_timedout",
      "stats_acquires_cancelled", "stats_acquires_error"};
  zkl_client_stats_t st = {.size = sizeof st};
  int i, j;
  if (!stats_client || zkl_client_stats(stats_client, &st) != ZKL_OK)
    return;
  for (j = 0; j < ZKL_STATS_OUTCOMES; j++) {
    long long n = 0;
    for (i = 0; i < ZKL_STATS_RECIPES; i++)
      n += (long long)st.acquires[i][j];
    key_int(outcome[j], n);
  }
  key_int("stats_contended", (long long)st.contended);
  key_int("stats_handoffs", (long long)st.handoffs);
  key_int("stats_lost", (long long)st.lost);
  key_int("stats_revoked", (long long)st.revoked);
  key_int("stats_forced", (long long)st.forced);
  key_int("stats_sessions_expired", (long long)st.sessions_expired);
  key_int("stats_reconnections", (long long)st.reconnections);
  for (i = 0; i < ZKL_STATS_REQ_KINDS; i++)
    if (req_kind[i]) {
      char k[64];
      snprintf(k, sizeof k, "stats_req_%s", req_kind[i]);
      key_int(k, (long long)st.requests[i]);
    }
  key_int("stats_transactions", (long long)st.transactions);
  key_int("stats_transaction_ops", (long long)st.transaction_ops);
  key_int("stats_wait_count", (long long)st.wait.count);
  key_int("stats_wait_sum_us", (long long)st.wait.sum_us);
  key_int("stats_hold_count", (long long)st.hold.count);
  key_int("stats_hold_sum_us", (long long)st.hold.sum_us);
}

static void end(void) {
  char v[64];
  struct rusage ru;
  stats_keys();
  getrusage(RUSAGE_SELF, &ru);
  key_int("peak_rss_kb", ru.ru_maxrss);
  snprintf(v, sizeof v, "zklock %s", zkl_version());
  key_str("impl_version", v);
  key_int("servers", nsrv);
  if (*label)
    key_str("label", label);
  put("}");
  puts(line);
  fflush(stdout);
}

/* ---- server counters (4lw mntr, summed over the servers) ------------------- */

enum { PKT_RECV, PKT_SENT, READS, WRITES, WATCHES, NCTR };
static const char *const ctr_key[NCTR] = {
    "zk_packets_received", "zk_packets_sent", "zk_cnt_readlatency",
    "zk_cnt_updatelatency", "zk_watch_count"};

/* Adds s's counters to out, and notes its state (leader, follower...). */
static int mntr_one(server_t *s, long long *out) {
  char host[256], *colon, buf[65536], *p;
  struct addrinfo hints = {0}, *ai;
  size_t got = 0;
  ssize_t r;
  int fd, i;
  snprintf(host, sizeof host, "%s", s->hp);
  colon = strrchr(host, ':');
  if (!colon)
    return -1;
  *colon = '\0';
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
    return -1;
  fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    freeaddrinfo(ai);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  freeaddrinfo(ai);
  if (write(fd, "mntr", 4) != 4) {
    close(fd);
    return -1;
  }
  while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
    got += (size_t)r;
  close(fd);
  buf[got] = '\0';
  *s->state = '\0';
  if ((p = strstr(buf, "zk_server_state\t")))
    sscanf(p + 16, "%15[a-z]", s->state);
  if ((p = strstr(buf, "zk_quorum_size\t")))
    s->quorum = atoi(p + 15);
  for (i = 0; i < NCTR; i++) {
    size_t kl = strlen(ctr_key[i]);
    p = strstr(buf, ctr_key[i]);
    if (!p || p[kl] != '\t')
      return -1;
    out[i] += (long long)strtod(p + kl + 1, NULL);
  }
  return 0;
}

/* Every server's counters, summed (-1: one did not answer), and states. */
static int snap(long long *out) {
  int i, rc = 0;
  memset(out, 0, NCTR * sizeof *out);
  for (i = 0; i < nsrv; i++)
    if (mntr_one(&srv[i], out) != 0)
      rc = -1;
  return rc;
}

/* ---- where the CPU of a timed span goes ------------------------------------ */

/* The client's and the servers' CPU, the client's context switches, and
 * its counters (zkl_client_stats()) before and after a timed span. The
 * client is this whole process (getrusage): every thread, zklock's and the
 * ZooKeeper client's. A server is its whole process (/proc/PID/stat). */
typedef struct {
  zkl_client_t *const *cl; /* whose counters: NULL the shared client */
  int ncl;                 /* ... or these ncl clients, summed; < 0: none */
  struct rusage ru0, ru1;
  long long tk0[MAXSRV], tk1[MAXSRV];
  uint64_t req[2], txn[2], ops[2]; /* before, after */
  uint64_t kind[2][ZKL_STATS_REQ_KINDS]; /* req, by kind */
  uint64_t handoffs[2], contended[2];
  int conn[MAXSRV];                /* our TCP connections to each server */
  int started, stopped;
  int states; /* the servers' states were read since the span stopped */
} span_t;

static void span_counters(span_t *s, int i, uint64_t *req, uint64_t *txn,
                          uint64_t *ops) {
  zkl_client_t *const *cl = s->cl ? s->cl : &stats_client;
  int n = s->cl ? s->ncl : 1, j, k;
  req[i] = txn[i] = ops[i] = 0;
  memset(s->kind[i], 0, sizeof s->kind[i]);
  s->handoffs[i] = s->contended[i] = 0;
  for (j = 0; j < n; j++) {
    zkl_client_stats_t st = {.size = sizeof st};
    if (!cl[j] || zkl_client_stats(cl[j], &st) != ZKL_OK)
      continue;
    for (k = 0; k < ZKL_STATS_REQ_KINDS; k++) {
      req[i] += st.requests[k];
      s->kind[i][k] += st.requests[k];
    }
    txn[i] += st.transactions;
    ops[i] += st.transaction_ops;
    s->handoffs[i] += st.handoffs;
    s->contended[i] += st.contended;
  }
}

static void server_ticks(long long *tk) {
  int i;
  for (i = 0; i < nsrv; i++)
    tk[i] = srv[i].pid ? proc_ticks(srv[i].pid) : -1;
}

/* Right before the span: what costs the client CPU first, getrusage last. */
static void span_start(span_t *s) {
  if (s->ncl >= 0)
    span_counters(s, 0, s->req, s->txn, s->ops);
  server_ticks(s->tk0);
  s->started = 1;
  s->stopped = 0;
  getrusage(RUSAGE_SELF, &s->ru0);
}

/* This process's established connections to a server, by server. */
static unsigned long self_sockets[512];
static int nself;

static void self_socket(unsigned long inode, int pid, void *arg) {
  (void)pid, (void)arg;
  if (nself < (int)(sizeof self_sockets / sizeof *self_sockets))
    self_sockets[nself++] = inode;
}

static void count_conn(const tcp_t *t, void *arg) {
  int *conn = arg, i, j;
  if (t->state != 0x01)
    return;
  for (j = 0; j < nself; j++)
    if (self_sockets[j] == t->inode)
      break;
  if (j == nself)
    return;
  for (i = 0; i < nsrv; i++)
    if (t->rport == srv[i].port && server_has(&srv[i], &t->remote))
      conn[i]++;
}

/* Right after the span: getrusage first. */
static void span_stop(span_t *s) {
  getrusage(RUSAGE_SELF, &s->ru1);
  server_ticks(s->tk1);
  if (s->ncl >= 0)
    span_counters(s, 1, s->req, s->txn, s->ops);
  nself = 0;
  each_socket(getpid(), self_socket, NULL);
  memset(s->conn, 0, sizeof s->conn);
  each_tcp(count_conn, s->conn);
  s->stopped = 1;
}

static double tv_us(const struct timeval *a, const struct timeval *b) {
  return (double)(b->tv_sec - a->tv_sec) * 1e6 + (double)(b->tv_usec - a->tv_usec);
}

static double r3(double v) { return round(v * 1000) / 1000; }

/* Voting servers the servers measured do not include (their mntr says how
 * many there are): the totals would leave their CPU out. */
static int unmeasured(void) {
  static int told;
  int i, q = 0;
  for (i = 0; i < nsrv; i++)
    q = srv[i].quorum > q ? srv[i].quorum : q;
  if (q > nsrv && !told++)
    fprintf(stderr, "zklock-bench: the ensemble has %d servers, %d measured: "
                    "name them all with --servers\n", q, nsrv);
  return q > nsrv ? q - nsrv : 0;
}

/* The servers' CPU per cycle: an object by host:port, each with its state
 * (leader, follower, standalone) and PID; then the leader's, the others'
 * and all of it. Returns all of it, or -1 when a server went unmeasured. */
static double server_keys(const span_t *s, long cycles) {
  double us = 1e6 / (double)sysconf(_SC_CLK_TCK) / (double)cycles;
  double all = 0, lead = -1, others = 0;
  int i, un = unmeasured(), miss = un > 0;
  key_obj("server_cpu_us_per_cycle");
  for (i = 0; i < nsrv; i++) {
    double v = (double)(s->tk1[i] - s->tk0[i]) * us;
    key_obj(srv[i].hp);
    if (s->tk0[i] < 0 || s->tk1[i] < 0) {
      key_null("cpu_us");
      miss = 1;
    } else {
      key_num("cpu_us", r3(v));
      all += v;
      if (!strcmp(srv[i].state, "leader") || !strcmp(srv[i].state, "standalone"))
        lead = v;
      else
        others += v;
    }
    key_str("state", *srv[i].state ? srv[i].state : "unknown");
    key_int("pid", srv[i].pid);
    put("}");
  }
  put("}");
  for (i = 0; i < nsrv; i++)
    if (!strcmp(srv[i].state, "leader") || !strcmp(srv[i].state, "standalone"))
      key_str("leader", srv[i].hp);
  if (lead >= 0)
    key_num("leader_cpu_us_per_cycle", r3(lead));
  if (lead >= 0 && !miss)
    key_num("followers_cpu_us_per_cycle", r3(others));
  if (un)
    key_int("servers_unmeasured", un);
  if (miss) {
    key_null("server_cpu_us_per_cycle_total");
    return -1;
  }
  key_num("server_cpu_us_per_cycle_total", r3(all));
  return all;
}

static void client_keys(const span_t *s, long cycles) {
  uint64_t dtxn = s->txn[1] - s->txn[0];
  char of[64];
  int k;
  if (s->ncl < 0)
    return;
  key_num("txn_per_cycle", r3((double)dtxn / (double)cycles));
  if (dtxn)
    key_num("ops_per_txn", r3((double)(s->ops[1] - s->ops[0]) / (double)dtxn));
  else
    key_null("ops_per_txn");
  key_num("requests_per_cycle_client",
          r3((double)(s->req[1] - s->req[0]) / (double)cycles));
  key_obj("requests_per_cycle_client_by_kind");
  for (k = 0; k < ZKL_STATS_REQ_KINDS; k++)
    if (req_kind[k] && s->kind[1][k] != s->kind[0][k])
      key_num(req_kind[k],
              r3((double)(s->kind[1][k] - s->kind[0][k]) / (double)cycles));
  put("}");
  key_num("contended_per_cycle",
          r3((double)(s->contended[1] - s->contended[0]) / (double)cycles));
  key_num("handoffs_per_cycle",
          r3((double)(s->handoffs[1] - s->handoffs[0]) / (double)cycles));
  if (s->cl)
    snprintf(of, sizeof of, "the workload's %d clients, summed", s->ncl);
  key_str("client_counters_of", s->cl ? of : "the shared client");
}

/* The span's keys: the client's CPU and context switches, its counters,
 * the servers' CPU, the total, and which servers the process is connected
 * to. cycles: the span's lock cycles (or operations). */
static void span_keys(span_t *s, long cycles) {
  double user, sys, srv_all = -1;
  int i;
  if (!s->started || cycles <= 0)
    return;
  if (!s->stopped)
    span_stop(s);
  user = tv_us(&s->ru0.ru_utime, &s->ru1.ru_utime) / (double)cycles;
  sys = tv_us(&s->ru0.ru_stime, &s->ru1.ru_stime) / (double)cycles;
  key_num("client_cpu_us_per_cycle", r3(user + sys));
  key_num("client_user_us_per_cycle", r3(user));
  key_num("client_sys_us_per_cycle", r3(sys));
  key_num("ctxsw_per_cycle",
          r3((double)(s->ru1.ru_nvcsw - s->ru0.ru_nvcsw + s->ru1.ru_nivcsw -
                      s->ru0.ru_nivcsw) / (double)cycles));
  key_num("ctxsw_involuntary_per_cycle",
          r3((double)(s->ru1.ru_nivcsw - s->ru0.ru_nivcsw) / (double)cycles));
  client_keys(s, cycles);
  if (nsrv && !s->states) { /* who leads now */
    long long x[NCTR];
    snap(x);
  }
  if (nsrv)
    srv_all = server_keys(s, cycles);
  if (srv_all >= 0)
    key_num("total_cpu_us_per_cycle", r3(user + sys + srv_all));
  else
    key_null("total_cpu_us_per_cycle");
  key_obj("connected_to");
  for (i = 0; i < nsrv; i++)
    if (s->conn[i])
      key_int(srv[i].hp, s->conn[i]);
  put("}");
}

/* s0, s1 back to back measure what reading costs; s2 after the run. The
 * span starts after them and stops before s2: mntr's own cost is in
 * neither side's CPU. */
typedef struct {
  long long s0[NCTR], s1[NCTR];
  int ok;
  span_t sp;
} counters_t;

static void ctr_begin(counters_t *c) {
  c->ok = snap(c->s0) == 0 && snap(c->s1) == 0;
  span_start(&c->sp);
}

static void ctr_stop(counters_t *c) { span_stop(&c->sp); }

static void ctr_end(counters_t *c, long cycles) {
  long long s2[NCTR];
  double per[NCTR];
  int i;
  if (!c->sp.stopped)
    span_stop(&c->sp);
  c->sp.states = 1; /* s2 reads them */
  if (snap(s2) == 0 && c->ok && cycles > 0) {
    for (i = 0; i < NCTR; i++)
      per[i] = (double)(s2[i] - c->s1[i] - (c->s1[i] - c->s0[i])) / cycles;
    key_num("requests_per_cycle", round(per[PKT_RECV] * 1000) / 1000);
    key_num("reads_per_cycle", round(per[READS] * 1000) / 1000);
    key_num("writes_per_cycle", round(per[WRITES] * 1000) / 1000);
    key_num("server_packets_sent_per_cycle", round(per[PKT_SENT] * 1000) / 1000);
  }
  span_keys(&c->sp, cycles);
}

static long long watch_count(void) {
  long long s[NCTR];
  return snap(s) == 0 ? s[WATCHES] : -1;
}

/* ---- helpers ---------------------------------------------------------------- */

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

/* nearest-rank percentile of nanosecond samples, in microseconds */
static double pct_us(long long *sorted, long n, double p) {
  long idx;
  if (n <= 0)
    return 0;
  idx = (long)ceil(p * (double)n) - 1;
  if (idx < 0)
    idx = 0;
  if (idx >= n)
    idx = n - 1;
  return round((double)sorted[idx] / 100.0) / 10.0;
}

static void timed(long ops, int64_t el, long long *s, long n) {
  double secs = (double)el / 1e9;
  qsort(s, (size_t)n, sizeof *s, cmp_ll);
  key_int("ops", ops);
  key_num("secs", secs);
  key_num("ops_per_s", secs > 0 ? round(ops / secs * 10) / 10 : 0);
  key_num("p50_us", pct_us(s, n, 0.50));
  key_num("p99_us", pct_us(s, n, 0.99));
}

static void die(const char *what, int rc) {
  fprintf(stderr, "zklock-bench: %s: %s\n", what, zkl_strerror(rc));
  begin("setup");
  key_str("error", zkl_err_name(rc));
  end();
  exit(1);
}

static zkl_client_t *new_client(void) {
  zkl_client_options_t o = {0};
  zkl_client_t *c = NULL;
  int rc;
  o.session_timeout_ms = session_ms;
  o.connect_timeout_ms = 30000;
  if ((rc = zkl_client_create(&c, connect_str, &o)) != ZKL_OK)
    die("connect", rc);
  return c;
}

static zkl_mutex_t *new_mutex(zkl_client_t *c, const char *r,
                              const char *name) {
  zkl_mutex_options_t o = {0};
  zkl_mutex_t *m = NULL;
  int rc;
  o.root = r;
  o.flags = flat ? ZKL_MUTEX_FLAT : 0;
  if ((rc = zkl_mutex_create(&m, c, name, &o)) != ZKL_OK)
    die("mutex", rc);
  return m;
}

static int check(int rc, const char *what) {
  if (rc != ZKL_OK) {
    fprintf(stderr, "zklock-bench: %s: %s\n", what, zkl_err_name(rc));
    exit(1);
  }
  return rc;
}

/* ---- workloads -------------------------------------------------------------- */

static void uncontended(zkl_client_t *c) {
  zkl_mutex_t *m = new_mutex(c, base, "uncontended");
  long long *lat = calloc((size_t)N, sizeof *lat);
  counters_t ctr = {0};
  int64_t t0, a;
  int i;
  for (i = 0; i < warmup; i++) {
    check(zkl_mutex_lock(m), "lock");
    check(zkl_mutex_unlock(m), "unlock");
  }
  ctr_begin(&ctr);
  t0 = now_ns();
  for (i = 0; i < N; i++) {
    a = now_ns();
    check(zkl_mutex_lock(m), "lock");
    check(zkl_mutex_unlock(m), "unlock");
    lat[i] = now_ns() - a;
  }
  a = now_ns() - t0;
  ctr_stop(&ctr);
  begin("uncontended");
  timed(N, a, lat, N);
  ctr_end(&ctr, N);
  end();
  zkl_mutex_destroy(m);
  free(lat);
}

static struct {
  atomic_int tickets, inside, violations, ready;
  atomic_int readers, writers, peak; /* read-heavy and semaphore */
  long counter; /* protected only by the distributed lock */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int go;
} sh = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

typedef struct {
  zkl_mutex_t *m;
  zkl_rwlock_t *rw;     /* read-heavy: a reader, or a writer (`write`) */
  int write;
  zkl_semaphore_t *sem; /* semaphore */
  long long *samples;
  long n;
  int hold_cycle; /* many-locks: time the whole cycle, not the wait */
} worker_t;

static void wait_go(void) {
  pthread_mutex_lock(&sh.mu);
  atomic_fetch_add(&sh.ready, 1);
  pthread_cond_broadcast(&sh.cv);
  while (!sh.go)
    pthread_cond_wait(&sh.cv, &sh.mu);
  pthread_mutex_unlock(&sh.mu);
}

static void note_peak(int now) {
  int peak = atomic_load(&sh.peak);
  while (now > peak && !atomic_compare_exchange_weak(&sh.peak, &peak, now))
    ;
}

/* One cycle of a read-write lock's reader or writer, or of a semaphore's
 * lease holder: the wait is the sample; the section checks exclusion. */
static void family_cycle(worker_t *w) {
  zkl_lease_t *l = NULL;
  int64_t a = now_ns();
  int n;
  if (w->sem)
    check(zkl_semaphore_acquire(w->sem, &l), "acquire");
  else
    check(w->write ? zkl_rwlock_wrlock(w->rw) : zkl_rwlock_rdlock(w->rw),
          "lock");
  w->samples[w->n++] = now_ns() - a;
  if (w->sem) {
    note_peak(n = atomic_fetch_add(&sh.readers, 1) + 1);
    if (n > leases)
      atomic_fetch_add(&sh.violations, 1);
    atomic_fetch_sub(&sh.readers, 1);
    check(zkl_lease_release(l), "release");
    return;
  }
  if (w->write) {
    if (atomic_fetch_add(&sh.writers, 1) != 0 || atomic_load(&sh.readers))
      atomic_fetch_add(&sh.violations, 1);
    sh.counter++;
    atomic_fetch_sub(&sh.writers, 1);
  } else {
    note_peak(atomic_fetch_add(&sh.readers, 1) + 1);
    if (atomic_load(&sh.writers))
      atomic_fetch_add(&sh.violations, 1);
    atomic_fetch_sub(&sh.readers, 1);
  }
  check(w->write ? zkl_rwlock_wrunlock(w->rw) : zkl_rwlock_rdunlock(w->rw),
        "unlock");
}

static void *worker(void *arg) {
  worker_t *w = arg;
  wait_go();
  while (atomic_fetch_add(&sh.tickets, 1) < M) {
    if (w->rw || w->sem) {
      family_cycle(w);
      continue;
    }
    int64_t a = now_ns();
    check(zkl_mutex_lock(w->m), "lock");
    if (!w->hold_cycle) {
      w->samples[w->n++] = now_ns() - a;
      if (atomic_fetch_add(&sh.inside, 1) != 0)
        atomic_fetch_add(&sh.violations, 1);
      sh.counter++;
      atomic_fetch_sub(&sh.inside, 1);
    }
    check(zkl_mutex_unlock(w->m), "unlock");
    if (w->hold_cycle)
      w->samples[w->n++] = now_ns() - a;
  }
  return NULL;
}

/* Starts n threads running fn on the n elements of `arg` (each `size`
 * bytes), waits until all are ready, times them to the end. */
static int64_t run_threads(void *(*fn)(void *), void *arg, size_t size, int n,
                           counters_t *ctr) {
  pthread_t *t = calloc((size_t)n, sizeof *t);
  int64_t t0;
  int i;
  atomic_store(&sh.tickets, 0);
  atomic_store(&sh.ready, 0);
  sh.go = 0;
  for (i = 0; i < n; i++)
    pthread_create(&t[i], NULL, fn, (char *)arg + (size_t)i * size);
  pthread_mutex_lock(&sh.mu);
  while (atomic_load(&sh.ready) < n)
    pthread_cond_wait(&sh.cv, &sh.mu);
  pthread_mutex_unlock(&sh.mu);
  ctr_begin(ctr);
  t0 = now_ns();
  pthread_mutex_lock(&sh.mu);
  sh.go = 1;
  pthread_cond_broadcast(&sh.cv);
  pthread_mutex_unlock(&sh.mu);
  for (i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  t0 = now_ns() - t0;
  ctr_stop(ctr);
  free(t);
  return t0;
}

static int64_t run_workers(worker_t *w, int n, counters_t *ctr) {
  return run_threads(worker, w, sizeof *w, n, ctr);
}

static long long *gather(worker_t *w, int n, long *total) {
  long long *all = calloc((size_t)M + 1, sizeof *all);
  long k = 0;
  int i;
  for (i = 0; i < n; i++) {
    memcpy(all + k, w[i].samples, (size_t)w[i].n * sizeof *all);
    k += w[i].n;
    free(w[i].samples);
  }
  *total = k;
  return all;
}

static void contended(void) {
  zkl_client_t **cl = calloc((size_t)C, sizeof *cl);
  worker_t *w = calloc((size_t)C, sizeof *w);
  long long before, after, *all;
  counters_t ctr = {0};
  long total;
  int64_t el;
  int i;
  for (i = 0; i < C; i++) { /* one session per client, connected first */
    cl[i] = new_client();
    w[i].m = new_mutex(cl[i], base, "contended");
    w[i].samples = calloc((size_t)M, sizeof(long long));
  }
  sh.counter = 0;
  atomic_store(&sh.violations, 0);
  before = watch_count();
  ctr.sp.cl = cl; /* the shared client is idle here */
  ctr.sp.ncl = C;
  el = run_workers(w, C, &ctr);
  all = gather(w, C, &total);
  begin("contended");
  timed(total, el, all, total);
  ctr_end(&ctr, M);
  after = watch_count();
  key_int("clients", C);
  key_int("violations", atomic_load(&sh.violations));
  key_bool("counter_ok", sh.counter == total);
  key_int("watches_left", before < 0 || after < 0 ? -1 : after - before);
  end();
  for (i = 0; i < C; i++) {
    zkl_mutex_destroy(w[i].m);
    zkl_client_destroy(cl[i]);
  }
  free(all), free(w), free(cl);
}

/* C clients, each with its own session, on one read-write lock: one in
 * nine writes (-C 9: 8 readers and 1 writer), the others read; or on one
 * semaphore of `leases` leases. M cycles in all; the samples are the
 * waits. */
static void family(const char *workload, int sem) {
  zkl_client_t **cl = calloc((size_t)C, sizeof *cl);
  worker_t *w = calloc((size_t)C, sizeof *w);
  zkl_rwlock_options_t ro = {0};
  zkl_semaphore_options_t so = {0};
  long long *all;
  counters_t ctr = {0};
  long total, writes = 0;
  int64_t el;
  int i;
  ro.root = so.root = base;
  for (i = 0; i < C; i++) {
    cl[i] = new_client();
    if (sem)
      check(zkl_semaphore_create(&w[i].sem, cl[i], workload, (unsigned)leases,
                                 &so), "semaphore");
    else
      check(zkl_rwlock_create(&w[i].rw, cl[i], workload, &ro), "rwlock");
    w[i].write = !sem && i % 9 == 0;
    w[i].samples = calloc((size_t)M, sizeof(long long));
  }
  sh.counter = 0;
  atomic_store(&sh.violations, 0);
  atomic_store(&sh.peak, 0);
  ctr.sp.cl = cl; /* the shared client is idle here */
  ctr.sp.ncl = C;
  el = run_workers(w, C, &ctr);
  for (i = 0; i < C; i++)
    writes += w[i].write ? w[i].n : 0;
  all = gather(w, C, &total);
  begin(workload);
  timed(total, el, all, total);
  ctr_end(&ctr, M);
  key_int("clients", C);
  if (sem) {
    key_int("leases", leases);
    key_int("peak_inside", atomic_load(&sh.peak));
  } else {
    key_int("writers", (C + 8) / 9);
    key_int("writes", writes);
    key_int("peak_readers", atomic_load(&sh.peak));
    key_bool("counter_ok", sh.counter == writes);
  }
  key_int("violations", atomic_load(&sh.violations));
  end();
  for (i = 0; i < C; i++) {
    zkl_rwlock_destroy(w[i].rw);
    zkl_semaphore_destroy(w[i].sem);
    zkl_client_destroy(cl[i]);
  }
  free(all), free(w), free(cl);
}

static void many_locks(zkl_client_t *c) {
  worker_t *w = calloc((size_t)T, sizeof *w);
  char mroot[300], name[32];
  long long *all;
  counters_t ctr = {0};
  long total;
  int64_t el;
  int i;
  snprintf(mroot, sizeof mroot, "%s/many", base);
  for (i = 0; i < T; i++) { /* threads share one client; parents exist */
    snprintf(name, sizeof name, "lock-%d", i);
    w[i].m = new_mutex(c, mroot, name);
    w[i].samples = calloc((size_t)M, sizeof(long long));
    w[i].hold_cycle = 1;
    check(zkl_mutex_lock(w[i].m), "lock");
    check(zkl_mutex_unlock(w[i].m), "unlock");
  }
  el = run_workers(w, T, &ctr);
  all = gather(w, T, &total);
  begin("many-locks");
  timed(total, el, all, total);
  ctr_end(&ctr, M);
  key_int("threads", T);
  end();
  for (i = 0; i < T; i++)
    zkl_mutex_destroy(w[i].m);
  free(all), free(w);
}

/* many-keys: per-key locks as services take them (an order id, an
 * account): T threads on one client, a key never used before per cycle,
 * its lock object made and destroyed in the cycle, which is the sample. */
typedef struct {
  zkl_client_t *c;
  const char *dir;
  int id;
  long long *samples;
  long n, held;
} key_worker_t;

static void *key_worker(void *arg) {
  key_worker_t *w = arg;
  char name[64];
  long t;
  wait_go();
  while ((t = atomic_fetch_add(&sh.tickets, 1)) < M) {
    int64_t a = now_ns();
    zkl_mutex_t *m;
    snprintf(name, sizeof name, "k%d-%ld", w->id, t);
    m = new_mutex(w->c, w->dir, name);
    check(zkl_mutex_lock(m), "lock");
    w->held++;
    check(zkl_mutex_unlock(m), "unlock");
    zkl_mutex_destroy(m);
    w->samples[w->n++] = now_ns() - a;
  }
  return NULL;
}

/* many-keys with --async-release: the acquire is zkl_mutex_lock_async()
 * (waited for here), the release zkl_hold_release_async(), not waited for:
 * the thread goes on to its next key at once. A release's callback marks
 * its object, which the thread destroys once the object is no longer busy;
 * the thread ends when all its releases are in, so the elapsed time counts
 * every release. */
typedef struct pend {
  zkl_mutex_t *m;
  atomic_int done;
  struct pend *next;
} pend_t;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  zkl_hold_t *hold;
  int rc, done;
} held_t;

static void on_held(zkl_hold_t *h, int rc, void *arg) {
  held_t *y = arg;
  pthread_mutex_lock(&y->mu);
  y->hold = h;
  y->rc = rc;
  y->done = 1;
  pthread_cond_signal(&y->cv);
  pthread_mutex_unlock(&y->mu);
}

static void on_released(int rc, void *arg) {
  pend_t *p = arg;
  check(rc, "release");
  atomic_store(&p->done, 1);
}

/* Destroys the objects whose release is over (all: wait for them). */
static pend_t *sweep_pending(pend_t *list, int all) {
  pend_t **pp = &list;
  while (*pp) {
    pend_t *p = *pp;
    int rc = atomic_load(&p->done) ? zkl_mutex_destroy(p->m) : ZKL_EBUSY;
    if (rc == ZKL_EBUSY && all) {
      usleep(200);
      continue;
    }
    if (rc == ZKL_EBUSY) {
      pp = &p->next;
      continue;
    }
    check(rc, "destroy");
    *pp = p->next;
    free(p);
  }
  return list;
}

static void *key_worker_async(void *arg) {
  key_worker_t *w = arg;
  held_t y = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};
  pend_t *pending = NULL;
  char name[64];
  long t;
  wait_go();
  while ((t = atomic_fetch_add(&sh.tickets, 1)) < M) {
    int64_t a = now_ns();
    pend_t *p = calloc(1, sizeof *p);
    zkl_hold_t *h;
    snprintf(name, sizeof name, "k%d-%ld", w->id, t);
    p->m = new_mutex(w->c, w->dir, name);
    y.done = 0;
    check(zkl_mutex_lock_async(p->m, ZKL_NO_DEADLINE, on_held, &y, &h),
          "lock_async");
    pthread_mutex_lock(&y.mu);
    while (!y.done)
      pthread_cond_wait(&y.cv, &y.mu);
    pthread_mutex_unlock(&y.mu);
    check(y.rc, "lock");
    w->held++;
    check(zkl_hold_release_async(y.hold, on_released, p), "release_async");
    p->next = pending;
    pending = sweep_pending(p, 0);
    w->samples[w->n++] = now_ns() - a;
  }
  sweep_pending(pending, 1);
  return NULL;
}

static void no_watch(zhandle_t *zh, int t, int s, const char *p, void *x);
static void quiet(const char *m);

/* Children of path, as a plain ZooKeeper client sees them (-1: failed). */
static int count_children(const char *path) {
  zhandle_t *zh = zookeeper_init2(connect_str, no_watch, 10000, NULL, NULL, 0,
                                  quiet);
  struct String_vector v;
  int i, n = -1, rc;
  for (i = 0; zh && i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(50000);
  if (zh && zoo_state(zh) == ZOO_CONNECTED_STATE) {
    if ((rc = zoo_get_children(zh, path, 0, &v)) == ZOK) {
      n = v.count;
      deallocate_String_vector(&v);
    } else if (rc == ZNONODE) {
      n = 0;
    }
  }
  if (zh)
    zookeeper_close(zh);
  return n;
}

static void many_keys(zkl_client_t *c) {
  key_worker_t *w = calloc((size_t)T, sizeof *w);
  char dir[300];
  long long *all = calloc((size_t)M + 1, sizeof *all);
  long total = 0, held = 0;
  counters_t ctr = {0};
  int64_t el;
  int i;
  snprintf(dir, sizeof dir, "%s/keys", base);
  for (i = 0; i < T; i++)
    w[i] = (key_worker_t){c, dir, i, calloc((size_t)M, sizeof(long long)), 0,
                          0};
  el = run_threads(async_release ? key_worker_async : key_worker, w, sizeof *w,
                   T, &ctr);
  for (i = 0; i < T; i++) {
    memcpy(all + total, w[i].samples, (size_t)w[i].n * sizeof *all);
    total += w[i].n;
    held += w[i].held;
    free(w[i].samples);
  }
  begin("many-keys");
  timed(total, el, all, total);
  ctr_end(&ctr, M);
  key_int("threads", T);
  key_bool("async_release", async_release);
  key_bool("flat", flat);
  key_bool("counter_ok", held == total);
  key_int("left_behind", count_children(dir));
  end();
  free(all), free(w);
}

/* multi-nested (zklock only): what a multi-lock's giving way costs. T
 * threads (own client each) take A, hold it 100 ms, then B, always in that
 * order (nested lockers); T threads (own client each) take {A, B} as one
 * multi-lock. K cycles each. Before the multi-lock gave way this
 * deadlocked at once; now it reports how long the multi-locks wait beside
 * the nested lockers and how often they gave way (counted from the
 * library's debug log). */
static atomic_long gave_way;
static void count_way(void *ctx, int level, const char *msg) {
  (void)ctx, (void)level;
  if (strstr(msg, "gave way"))
    atomic_fetch_add(&gave_way, 1);
}

typedef struct {
  zkl_client_t *c;
  const char *dir;
  int multi;
  long long *samples;
  long n, overlaps;
  _Atomic int *in;
} mn_worker_t;

static void *mn_worker(void *arg) {
  mn_worker_t *w = arg;
  zkl_mutex_t *ma = NULL, *mb = NULL;
  zkl_multilock_t *ml = NULL;
  int i;
  if (w->multi) {
    zkl_multilock_member_t m[2] = {{"b", ZKL_MODE_EXCLUSIVE},
                                   {"a", ZKL_MODE_EXCLUSIVE}};
    zkl_multilock_options_t o = {0};
    o.root = w->dir;
    check(zkl_multilock_create(&ml, w->c, m, 2, &o), "multilock");
  } else {
    ma = new_mutex(w->c, w->dir, "a");
    mb = new_mutex(w->c, w->dir, "b");
  }
  for (i = 0; i < K; i++) {
    int64_t t0 = now_ns();
    if (ml) {
      check(zkl_multilock_lock(ml), "multilock lock");
    } else {
      check(zkl_mutex_lock(ma), "lock a");
      usleep(100 * 1000);
      check(zkl_mutex_lock(mb), "lock b");
    }
    w->samples[w->n++] = now_ns() - t0;
    {
      int a = atomic_fetch_add(&w->in[0], 1), b = atomic_fetch_add(&w->in[1], 1);
      w->overlaps += a || b;
    }
    usleep(1000);
    atomic_fetch_sub(&w->in[0], 1);
    atomic_fetch_sub(&w->in[1], 1);
    if (ml) {
      check(zkl_multilock_unlock(ml), "multilock unlock");
    } else {
      check(zkl_mutex_unlock(mb), "unlock b");
      check(zkl_mutex_unlock(ma), "unlock a");
    }
  }
  zkl_multilock_destroy(ml);
  zkl_mutex_destroy(ma);
  zkl_mutex_destroy(mb);
  return NULL;
}

static void multi_nested(void) {
  mn_worker_t *w = calloc((size_t)(2 * T), sizeof *w);
  pthread_t *t = calloc((size_t)(2 * T), sizeof *t);
  zkl_client_t **cl = calloc((size_t)(2 * T), sizeof *cl);
  span_t sp = {0};
  long long *all = calloc((size_t)(T * K) + 1, sizeof *all);
  _Atomic int in[2] = {0, 0};
  char dir[300];
  long n = 0, overlaps = 0;
  int64_t t0, el;
  int i, j;
  snprintf(dir, sizeof dir, "%s/multi-nested", base);
  atomic_store(&gave_way, 0);
  for (i = 0; i < 2 * T; i++) {
    zkl_client_options_t o = {0};
    w[i].multi = i % 2;
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 30000;
    if (w[i].multi) {
      o.log_fn = count_way;
      o.log_level = ZKL_LOG_DEBUG;
    }
    check(zkl_client_create(&w[i].c, connect_str, &o), "connect");
    cl[i] = w[i].c;
    w[i].dir = dir;
    w[i].samples = calloc((size_t)K, sizeof(long long));
    w[i].in = in;
  }
  sp.cl = cl;
  sp.ncl = 2 * T;
  span_start(&sp);
  t0 = now_ns();
  for (i = 0; i < 2 * T; i++)
    pthread_create(&t[i], NULL, mn_worker, &w[i]);
  for (i = 0; i < 2 * T; i++)
    pthread_join(t[i], NULL);
  el = now_ns() - t0;
  span_stop(&sp);
  for (i = 1; i < 2 * T; i += 2)
    for (j = 0; j < w[i].n; j++)
      all[n++] = w[i].samples[j];
  for (i = 0; i < 2 * T; i++) {
    overlaps += w[i].overlaps;
    free(w[i].samples);
  }
  begin("multi-nested");
  timed(2L * T * K, el, all, n); /* p50/p99: the multi-locks' waits */
  key_int("threads_each", T);
  key_int("multi_gave_way", atomic_load(&gave_way));
  key_num("gave_way_per_multi_cycle", n ? (double)atomic_load(&gave_way) / n : 0);
  key_int("violations", overlaps);
  span_keys(&sp, 2L * T * K);
  end();
  for (i = 0; i < 2 * T; i++)
    zkl_client_destroy(w[i].c);
  free(all), free(w), free(t), free(cl);
}

static void reentrant(zkl_client_t *c) {
  zkl_mutex_t *m = new_mutex(c, base, "reentrant");
  counters_t ctr = {0};
  int64_t t0, el;
  int i, held;
  check(zkl_mutex_lock(m), "lock");
  for (i = 0; i < 10000 && i < K; i++) { /* warm the nested path */
    zkl_mutex_lock(m);
    zkl_mutex_unlock(m);
  }
  ctr_begin(&ctr);
  t0 = now_ns();
  for (i = 0; i < K; i++) {
    zkl_mutex_lock(m);
    zkl_mutex_unlock(m);
  }
  el = now_ns() - t0;
  ctr_stop(&ctr);
  held = zkl_mutex_depth(m) == 1 && zkl_mutex_state(m) == ZKL_STATE_HELD;
  begin("reentrant");
  key_int("ops", K);
  key_num("secs", (double)el / 1e9);
  key_num("ops_per_s", round(K / ((double)el / 1e9) * 10) / 10);
  ctr_end(&ctr, K);
  key_num("ns_per_pair", round((double)el / K * 10) / 10);
  key_bool("supported", 1);
  key_bool("still_held_after_nested", held);
  end();
  check(zkl_mutex_unlock(m), "unlock");
  zkl_mutex_destroy(m);
}

/* idle-waiters (zklock only): W threads each blocked on its own lock, held
 * by another client; measures the waiting process's memory per waiter and
 * the CPU it burns while everybody waits (it should be ~0: no polling). */
static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
      rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *idle_waiter(void *arg) {
  zkl_mutex_t *m = arg;
  if (zkl_mutex_lock(m) == ZKL_OK)
    zkl_mutex_unlock(m);
  return NULL;
}

static void idle_waiters(void) {
  int W = 1000, i;
  zkl_client_t *holder = new_client(), *waiter = new_client();
  zkl_mutex_t **hm = calloc((size_t)W, sizeof *hm);
  zkl_mutex_t **wm = calloc((size_t)W, sizeof *wm);
  pthread_t *t = calloc((size_t)W, sizeof *t);
  pthread_attr_t at;
  char r[300], name[32];
  long rss0, rss1;
  double cpu0, cpu1;
  snprintf(r, sizeof r, "%s/idle", base);
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 64 * 1024); /* a waiter needs little */
  for (i = 0; i < W; i++) {
    snprintf(name, sizeof name, "l%d", i);
    hm[i] = new_mutex(holder, r, name);
    wm[i] = new_mutex(waiter, r, name);
    check(zkl_mutex_lock(hm[i]), "hold");
  }
  rss0 = rss_kb();
  for (i = 0; i < W; i++)
    pthread_create(&t[i], &at, idle_waiter, wm[i]);
  for (i = 0; i < 600; i++) { /* until every waiter is queued */
    zkl_contender_t *q = NULL;
    size_t n = 0;
    zkl_mutex_queue(waiter, r, "l999", &q, &n);
    zkl_contenders_free(q, n);
    if (n == 2)
      break;
    usleep(100000);
  }
  sleep(1);
  rss1 = rss_kb();
  cpu0 = cpu_s();
  sleep(10);
  cpu1 = cpu_s();
  begin("idle-waiters");
  key_int("ops", W);
  key_int("waiters", W);
  key_num("cpu_s_in_10s_idle", round((cpu1 - cpu0) * 1000) / 1000);
  key_num("kb_per_waiter", round((double)(rss1 - rss0) / W * 10) / 10);
  key_int("waiter_stack_kb", 64);
  end();
  for (i = 0; i < W; i++)
    zkl_mutex_unlock(hm[i]);
  for (i = 0; i < W; i++) {
    pthread_join(t[i], NULL);
    zkl_mutex_destroy(wm[i]);
    zkl_mutex_destroy(hm[i]);
  }
  zkl_client_destroy(holder);
  zkl_client_destroy(waiter);
  free(hm), free(wm), free(t);
}

/* idle-holds (zklock only, issue 36): the CPU of the library's own
 * threads (ZooKeeper's two, the event thread), and of the event thread
 * alone (named zkl-event), while a few holds come and
 * go beside H idle ones, for H = 0, 1,000 and 10,000 on one client. S
 * threads each hold their own lock for 110 ms and let it go, so every
 * hold lasts past ZKL__NODE_WATCH_DELAY_MS and has its own-node watch
 * sent by the event thread's timer. The library's CPU is the process's
 * less every bench thread's own (CLOCK_THREAD_CPUTIME_ID); flat as H
 * grows means no timer walks the holds. */
#define IH_S 8
static atomic_int ih_stop;
static atomic_long ih_cycles;
static double ih_cpu[IH_S]; /* each stream thread's CPU over the window */

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The CPU time of this process's threads named `comm` (the library's
 * event thread is "zkl-event"), from /proc (schedstat: nanoseconds). */
static double threads_cpu_s(const char *comm) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  double sum = 0;
  char p[300], name[64];
  unsigned long long ns;
  while (d && (e = readdir(d))) {
    FILE *f;
    if (e->d_name[0] == '.')
      continue;
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
    if (!(f = fopen(p, "r")))
      continue;
    if (!fgets(name, sizeof name, f))
      name[0] = 0;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    if (strcmp(name, comm))
      continue;
    snprintf(p, sizeof p, "/proc/self/task/%s/schedstat", e->d_name);
    if ((f = fopen(p, "r"))) {
      if (fscanf(f, "%llu", &ns) == 1)
        sum += ns / 1e9;
      fclose(f);
    }
  }
  if (d)
    closedir(d);
  return sum;
}

static void *ih_stream(void *arg) {
  zkl_mutex_t *m = ((void **)arg)[0];
  int i = (int)(intptr_t)((void **)arg)[1];
  double c0 = thread_cpu_s();
  while (!atomic_load(&ih_stop)) {
    check(zkl_mutex_lock(m), "lock");
    usleep(110000);
    check(zkl_mutex_unlock(m), "unlock");
    atomic_fetch_add(&ih_cycles, 1);
  }
  ih_cpu[i] = thread_cpu_s() - c0;
  return NULL;
}

static void idle_holds(void) {
  static const int stages[] = {0, 1000, 10000};
  int H = stages[2], held = 0, st, i;
  zkl_client_t *c = new_client();
  zkl_mutex_t **hm = calloc((size_t)H, sizeof *hm), *sm[IH_S];
  void *args[IH_S][2];
  pthread_t t[IH_S];
  char r[300], name[32], key[48];
  snprintf(r, sizeof r, "%s/idleholds", base);
  for (i = 0; i < IH_S; i++) {
    snprintf(name, sizeof name, "s%d", i);
    sm[i] = new_mutex(c, r, name);
  }
  begin("idle-holds");
  key_int("ops", stages[2]);
  key_int("stream_threads", IH_S);
  key_int("stream_hold_ms", 110);
  for (st = 0; st < 3; st++) {
    double c0, c1, own0, own1, ev0, ev1, mine = 0, secs = 5;
    long cyc;
    for (; held < stages[st]; held++) {
      snprintf(name, sizeof name, "h%d", held);
      hm[held] = new_mutex(c, r, name);
      check(zkl_mutex_lock(hm[held]), "hold");
    }
    sleep(1); /* their own-node watches sent */
    atomic_store(&ih_stop, 0);
    atomic_store(&ih_cycles, 0);
    own0 = thread_cpu_s();
    c0 = cpu_s();
    ev0 = threads_cpu_s("zkl-event");
    for (i = 0; i < IH_S; i++) {
      args[i][0] = sm[i];
      args[i][1] = (void *)(intptr_t)i;
      pthread_create(&t[i], NULL, ih_stream, args[i]);
    }
    usleep((useconds_t)(secs * 1e6));
    atomic_store(&ih_stop, 1);
    for (i = 0; i < IH_S; i++) {
      pthread_join(t[i], NULL);
      mine += ih_cpu[i];
    }
    c1 = cpu_s();
    ev1 = threads_cpu_s("zkl-event");
    own1 = thread_cpu_s();
    cyc = atomic_load(&ih_cycles);
    mine += own1 - own0;
    snprintf(key, sizeof key, "library_cpu_ms_per_s_at_%d", stages[st]);
    key_num(key, round((c1 - c0 - mine) / secs * 1e4) / 10);
    snprintf(key, sizeof key, "library_cpu_us_per_hold_at_%d", stages[st]);
    key_num(key, cyc ? round((c1 - c0 - mine) / cyc * 1e7) / 10 : 0);
    snprintf(key, sizeof key, "event_thread_cpu_ms_per_s_at_%d", stages[st]);
    key_num(key, round((ev1 - ev0) / secs * 1e4) / 10);
    snprintf(key, sizeof key, "stream_holds_at_%d", stages[st]);
    key_int(key, cyc);
  }
  end();
  for (i = 0; i < held; i++) {
    zkl_mutex_unlock(hm[i]);
    zkl_mutex_destroy(hm[i]);
  }
  for (i = 0; i < IH_S; i++)
    zkl_mutex_destroy(sm[i]);
  zkl_client_destroy(c);
  free(hm);
}

/* ---- setup ------------------------------------------------------------------ */

static void no_watch(zhandle_t *zh, int t, int s, const char *p, void *x) {
  (void)zh, (void)t, (void)s, (void)p, (void)x;
}
static void quiet(const char *m) { (void)m; }

static void rm_tree(zhandle_t *zh, const char *path) {
  struct String_vector v;
  int i;
  if (zoo_get_children(zh, path, 0, &v) == ZOK) {
    for (i = 0; i < v.count; i++) {
      char child[1024];
      snprintf(child, sizeof child, "%s/%s", path, v.data[i]);
      rm_tree(zh, child);
    }
    deallocate_String_vector(&v);
  }
  zoo_delete(zh, path, -1);
}

static void cleanup(void) {
  zhandle_t *zh = zookeeper_init2(connect_str, no_watch, 10000, NULL, NULL, 0,
                                  quiet);
  int i;
  for (i = 0; zh && i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(50000);
  if (zh) {
    rm_tree(zh, base);
    zookeeper_close(zh);
  }
}

/* The ensemble's own round trips, with the plain ZooKeeper client: a write
 * (create or delete, each a quorum commit) and a read (getChildren, served
 * by the connected server). They bound what any lock recipe can gain: an
 * uncontended cycle costs Curator two writes and a read in sequence, and
 * zklock two writes (its getChildren rides with the create). */
static void rtt(void) {
  zhandle_t *zh = zookeeper_init2(connect_str, no_watch, session_ms, NULL,
                                  NULL, 0, quiet);
  long long *wr = calloc((size_t)N * 2, sizeof *wr), *rd = calloc((size_t)N, sizeof *rd);
  span_t sp = {.ncl = -1}; /* the plain ZooKeeper client: no counters */
  char node[320], made[320];
  struct String_vector v;
  double w50, r50;
  int i;
  for (i = 0; zh && i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(50000);
  if (!zh || !wr || !rd || zoo_state(zh) != ZOO_CONNECTED_STATE)
    die("rtt: connect", ZKL_ECONNECT);
  zoo_create(zh, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zoo_create(zh, base, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  snprintf(node, sizeof node, "%s/n-", base);
  span_start(&sp);
  for (i = 0; i < N; i++) {
    int64_t a = now_ns();
    if (zoo_create(zh, node, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                   made, sizeof made) != ZOK)
      die("rtt: create", ZKL_EPROTO);
    wr[2 * i] = now_ns() - a;
    a = now_ns();
    if (zoo_get_children(zh, base, 0, &v) != ZOK)
      die("rtt: getChildren", ZKL_EPROTO);
    rd[i] = now_ns() - a;
    deallocate_String_vector(&v);
    a = now_ns();
    if (zoo_delete(zh, made, -1) != ZOK)
      die("rtt: delete", ZKL_EPROTO);
    wr[2 * i + 1] = now_ns() - a;
  }
  span_stop(&sp);
  zookeeper_close(zh);
  qsort(wr, (size_t)N * 2, sizeof *wr, cmp_ll);
  qsort(rd, (size_t)N, sizeof *rd, cmp_ll);
  w50 = pct_us(wr, N * 2L, 0.50);
  r50 = pct_us(rd, N, 0.50);
  begin("rtt");
  key_num("write_p50_us", w50);
  key_num("write_p99_us", pct_us(wr, N * 2L, 0.99));
  key_num("read_p50_us", r50);
  key_num("read_p99_us", pct_us(rd, N, 0.99));
  /* best uncontended ratio to a recipe that adds one sequential read */
  key_num("uncontended_bound", round((2 * w50 + r50) / (2 * w50) * 100) / 100);
  span_keys(&sp, N); /* a cycle: create, getChildren, delete */
  end();
  free(wr), free(rd);
}

/* The most reads one session gets answered per second: exists on one node,
 * 64 in flight, with the plain ZooKeeper client. A session talks to one
 * server, which answers all its reads, so this bounds any recipe that
 * reads R times per cycle on one client at read_ceiling / R cycles/s. */
static pthread_mutex_t rc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rc_cv = PTHREAD_COND_INITIALIZER;
static int rc_out, rc_errors;

static void on_read_ceiling(int rc, const struct Stat *st, const void *d) {
  (void)st, (void)d;
  pthread_mutex_lock(&rc_mu);
  rc_out--;
  rc_errors += rc != ZOK;
  pthread_cond_signal(&rc_cv);
  pthread_mutex_unlock(&rc_mu);
}

static void read_ceiling(void) {
  zhandle_t *zh = zookeeper_init2(connect_str, no_watch, session_ms, NULL,
                                  NULL, 0, quiet);
  int i, n = M * 10;
  span_t sp = {.ncl = -1}; /* the plain ZooKeeper client: no counters */
  int64_t t0;
  double secs;
  for (i = 0; zh && i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
    usleep(50000);
  if (!zh || zoo_state(zh) != ZOO_CONNECTED_STATE)
    die("read-ceiling: connect", ZKL_ECONNECT);
  zoo_set_servers_resolution_delay(zh, -1);
  zoo_create(zh, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zoo_create(zh, base, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  span_start(&sp);
  t0 = now_ns();
  for (i = 0; i < n; i++) {
    pthread_mutex_lock(&rc_mu);
    while (rc_out >= 64)
      pthread_cond_wait(&rc_cv, &rc_mu);
    rc_out++;
    pthread_mutex_unlock(&rc_mu);
    if (zoo_aexists(zh, base, 0, on_read_ceiling, NULL) != ZOK)
      die("read-ceiling: exists", ZKL_EPROTO);
  }
  pthread_mutex_lock(&rc_mu);
  while (rc_out > 0)
    pthread_cond_wait(&rc_cv, &rc_mu);
  pthread_mutex_unlock(&rc_mu);
  secs = (double)(now_ns() - t0) / 1e9;
  span_stop(&sp);
  zookeeper_close(zh);
  begin("read-ceiling");
  key_int("ops", n);
  key_num("secs", secs);
  key_num("ops_per_s", round(n / secs * 10) / 10);
  key_int("inflight", 64);
  key_int("errors", rc_errors);
  span_keys(&sp, n); /* a cycle: one read */
  end();
}

/* What a per-key lock object costs on its own, made and destroyed with no
 * acquire (neither sends a request): nanoseconds per create and destroy,
 * and heap bytes per object with M of them alive (glibc's mallinfo2). */
static void object_cost(zkl_client_t *c) {
  zkl_mutex_t **m = calloc((size_t)M, sizeof *m);
  char dir[300], name[32];
  struct mallinfo2 before, after;
  span_t sp = {0};
  int64_t t0, el;
  int i;
  snprintf(dir, sizeof dir, "%s/objects", base);
  if (!m)
    die("object-cost", ZKL_ENOMEM);
  before = mallinfo2();
  for (i = 0; i < M; i++) {
    snprintf(name, sizeof name, "key-%d", i);
    m[i] = new_mutex(c, dir, name);
  }
  after = mallinfo2();
  for (i = 0; i < M; i++)
    zkl_mutex_destroy(m[i]);
  span_start(&sp);
  t0 = now_ns();
  for (i = 0; i < M; i++) {
    snprintf(name, sizeof name, "key-%d", i);
    zkl_mutex_destroy(new_mutex(c, dir, name));
  }
  el = now_ns() - t0;
  span_stop(&sp);
  begin("object-cost");
  key_int("objects", M);
  key_num("ns_per_object", round((double)el / M));
  key_num("heap_bytes_per_object",
          round((double)(after.uordblks - before.uordblks) / M));
  span_keys(&sp, M); /* a cycle: one object made and destroyed */
  end();
  free(m);
}

static const char *default_connect(void) {
  static char buf[1024];
  const char *e = getenv("ZKB_CONNECT"), *dir = getenv("ZKB_DIR");
  FILE *f;
  if (e && *e)
    return e;
  snprintf(buf, sizeof buf, "%s/connect", dir && *dir ? dir : "/tmp/zkb");
  if ((f = fopen(buf, "r")) && fgets(buf, sizeof buf, f)) {
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
  }
  if (f)
    fclose(f);
  return "127.0.0.1:21811";
}

static int num(const char *s) {
  char *e;
  long v = strtol(s, &e, 10);
  if (*e || v < 0 || v > 100000000) {
    fprintf(stderr, "zklock-bench: bad number %s\n", s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  static const struct option longs[] = {
      {"connect", required_argument, 0, 'c'},
      {"workloads", required_argument, 0, 'w'},
      {"n", required_argument, 0, 'N'},
      {"warmup", required_argument, 0, 'W'},
      {"clients", required_argument, 0, 'C'},
      {"threads", required_argument, 0, 'T'},
      {"m", required_argument, 0, 'M'},
      {"k", required_argument, 0, 'K'},
      {"session-timeout-ms", required_argument, 0, 's'},
      {"root", required_argument, 0, 'r'},
      {"label", required_argument, 0, 'l'},
      {"leases", required_argument, 0, 'L'},
      {"async-release", no_argument, 0, 'A'},
      {"flat", no_argument, 0, 'F'},
      {"servers", required_argument, 0, 'S'},
      {"server-pids", required_argument, 0, 'P'},
      {0, 0, 0, 0}};
  const char *workloads = "uncontended,contended,many-locks,reentrant";
  char wl[256], *save = NULL, *w;
  zkl_client_t *c;
  int o;
  while ((o = getopt_long(argc, argv, "w:N:C:T:M:K:", longs, NULL)) != -1) {
    switch (o) {
    case 'c': connect_str = optarg; break;
    case 'w': workloads = optarg; break;
    case 'N': N = num(optarg); break;
    case 'W': warmup = num(optarg); break;
    case 'C': C = num(optarg); break;
    case 'T': T = num(optarg); break;
    case 'M': M = num(optarg); break;
    case 'K': K = num(optarg); break;
    case 's': session_ms = num(optarg); break;
    case 'r': root = optarg; break;
    case 'l': label = optarg; break;
    case 'L': leases = num(optarg); break;
    case 'A': async_release = 1; break;
    case 'F': flat = 1; break;
    case 'S': servers_str = optarg; break;
    case 'P': server_pids_str = optarg; break;
    default:
      fprintf(stderr, "usage: zklock-bench [--connect HOSTS] [-w LIST] [-N n] "
                      "[--warmup n] [-C n] [-T n] [-M n] [-K n] "
                      "[--session-timeout-ms ms] [--root PATH] [--label L] "
                      "[--leases n] [--async-release] [--flat] "
                      "[--servers HOSTS] [--server-pids PID,...]\n");
      return 2;
    }
  }
  if (!connect_str)
    connect_str = default_connect();
  if (N < 1 || C < 1 || T < 1 || M < 1 || K < 1 || leases < 1) {
    fprintf(stderr, "zklock-bench: counts must be positive\n");
    return 2;
  }
  servers_init();
  snprintf(base, sizeof base, "%s/zklock-%ld-%llx", root, (long)getpid(),
           (unsigned long long)now_ns());
  c = stats_client = new_client();
  snprintf(wl, sizeof wl, "%s", workloads);
  for (w = strtok_r(wl, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (!strcmp(w, "uncontended"))
      uncontended(c);
    else if (!strcmp(w, "contended"))
      contended();
    else if (!strcmp(w, "many-locks"))
      many_locks(c);
    else if (!strcmp(w, "many-keys"))
      many_keys(c);
    else if (!strcmp(w, "reentrant"))
      reentrant(c);
    else if (!strcmp(w, "multi-nested"))
      multi_nested();
    else if (!strcmp(w, "idle-waiters"))
      idle_waiters();
    else if (!strcmp(w, "idle-holds"))
      idle_holds();
    else if (!strcmp(w, "rtt"))
      rtt();
    else if (!strcmp(w, "read-ceiling"))
      read_ceiling();
    else if (!strcmp(w, "object-cost"))
      object_cost(c);
    else if (!strcmp(w, "read-heavy"))
      family(w, 0);
    else if (!strcmp(w, "semaphore"))
      family(w, 1);
    else {
      fprintf(stderr, "zklock-bench: unknown workload %s\n", w);
      return 2;
    }
  }
  stats_client = NULL;
  zkl_client_destroy(c);
  cleanup();
  return 0;
}
