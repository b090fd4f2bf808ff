/* SPDX-License-Identifier: Apache-2.0 */
/* lock_server.c: a server on one epoll loop that serves each request under
 * a per-key lock, with no thread per waiter. Acquisitions are asynchronous
 * (zkl_mutex_lock_async), their callbacks run on the loop's thread
 * (ZKL_CLIENT_DISPATCH), and a request whose key is busy waits in the
 * lock's queue while the loop serves the others.
 *
 *   zklock-lock-server HOSTS ROOT DIR [CONNECTIONS REQUESTS]
 *
 * It listens on 127.0.0.1, on a port it prints. A request is a line
 * "INCR <key>"; under the lock ROOT/<key> the server reads the number in
 * DIR/<key>, works for a millisecond (a timer: the loop serves others
 * meanwhile), writes the number plus one, releases the lock
 * (zkl_hold_release_async: the loop goes on) and, once released, answers
 * "<key> <number>". Servers sharing DIR and the ensemble never lose an
 * increment. With CONNECTIONS and REQUESTS it also drives itself: that
 * many connections, each sending REQUESTS requests on keys k0..k3, one
 * after another; then it prints what it served and exits. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "zklock.h"

struct key {
  char name[32];
  zkl_mutex_t *m;
  struct key *next;
};

/* A request, from its line to its answer. */
struct req {
  int fd; /* the connection to answer on */
  struct key *k;
  zkl_hold_t *hold;
  long value;
  int64_t done_at; /* working under the lock until then */
  struct req *next;
};

/* A connection: one of the server's, or (driving) one of ours to it. */
struct conn {
  int fd, driver, sent, answered;
  char buf[256];
  size_t len;
};

static zkl_client_t *client;
static const char *root, *dir;
static struct key *keys;
static struct req *working; /* holds granted, work under way */
static int pending, served, errors, requests;

static struct key *key_get(const char *name) {
  struct key *k;
  zkl_mutex_options_t o = {0};
  for (k = keys; k; k = k->next)
    if (strcmp(k->name, name) == 0)
      return k;
  if (!(k = calloc(1, sizeof *k)))
    return NULL;
  snprintf(k->name, sizeof k->name, "%s", name);
  o.root = root;
  if (zkl_mutex_create(&k->m, client, k->name, &o) != ZKL_OK) {
    free(k);
    return NULL;
  }
  k->next = keys;
  keys = k;
  return k;
}

static long read_number(const char *name) {
  char path[512];
  long n = 0;
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if ((f = fopen(path, "r"))) {
    if (fscanf(f, "%ld", &n) != 1)
      n = 0;
    fclose(f);
  }
  return n;
}

static void write_number(const char *name, long n) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if ((f = fopen(path, "w"))) {
    fprintf(f, "%ld\n", n);
    fclose(f);
  }
}

static void answer(int fd, const char *line) {
  if (write(fd, line, strlen(line)) < 0)
    perror("write");
}

/* The outcome of an acquire, on the loop's thread (zkl_client_dispatch). */
static void on_locked(zkl_hold_t *hold, int rc, void *arg) {
  struct req *r = arg;
  char line[96];
  pending--;
  if (rc != ZKL_OK) { /* the hold is gone with the callback */
    snprintf(line, sizeof line, "%s ERR %s\n", r->k->name, zkl_err_name(rc));
    answer(r->fd, line);
    errors++;
    free(r);
    return;
  }
  r->hold = hold;
  r->value = read_number(r->k->name) + 1;
  r->done_at = zkl_now_ms() + 1;
  r->next = working;
  working = r;
}

/* The release's verdict, on the loop's thread: the answer. "Released"
 * means "deleted", and the loop never waited for it. */
static void on_released(int rc, void *arg) {
  struct req *r = arg;
  char line[96];
  if (rc == ZKL_OK)
    snprintf(line, sizeof line, "%s %ld\n", r->k->name, r->value);
  else /* lost meanwhile: the write may have raced another holder's */
    snprintf(line, sizeof line, "%s ERR %s\n", r->k->name,
             zkl_err_name(rc));
  errors += rc != ZKL_OK;
  served++;
  answer(r->fd, line);
  free(r);
}

/* Work done: write, then release; the answer waits for the verdict. */
static void finish_work(void) {
  struct req **pp = &working, *r;
  int64_t now = zkl_now_ms();
  while ((r = *pp)) {
    if (r->done_at > now) {
      pp = &r->next;
      continue;
    }
    *pp = r->next;
    write_number(r->k->name, r->value);
    if (zkl_hold_release_async(r->hold, on_released, r) != ZKL_OK)
      on_released(zkl_hold_release(r->hold), r); /* out of memory */
  }
}

static void serve_line(int fd, const char *line) {
  char name[32];
  struct req *r;
  int rc;
  if (sscanf(line, "INCR %31s", name) != 1) {
    answer(fd, "ERR usage: INCR <key>\n");
    return;
  }
  if (!(r = calloc(1, sizeof *r)) || !(r->k = key_get(name))) {
    free(r);
    answer(fd, "ERR cannot make the lock\n");
    return;
  }
  r->fd = fd;
  rc = zkl_mutex_lock_async(r->k->m, zkl_now_ms() + 30000, on_locked, r,
                            &r->hold);
  if (rc != ZKL_OK) {
    answer(fd, "ERR cannot lock\n");
    free(r);
    return;
  }
  pending++;
}

static void drive_next(struct conn *d) {
  char line[32];
  snprintf(line, sizeof line, "INCR k%d\n", (d->fd + d->sent) % 4);
  d->sent++;
  answer(d->fd, line);
}

/* Lines that came in on a connection: requests, or (driving) answers. */
static void on_readable(struct conn *cn) {
  ssize_t n = read(cn->fd, cn->buf + cn->len, sizeof cn->buf - cn->len - 1);
  char *nl;
  if (n <= 0) {
    cn->fd = -1; /* closed: forgotten (its requests are still answered) */
    return;
  }
  cn->len += (size_t)n;
  cn->buf[cn->len] = '\0';
  while ((nl = strchr(cn->buf, '\n'))) {
    *nl = '\0';
    if (!cn->driver)
      serve_line(cn->fd, cn->buf);
    else if (++cn->answered < requests)
      drive_next(cn);
    cn->len -= (size_t)(nl + 1 - cn->buf);
    memmove(cn->buf, nl + 1, cn->len + 1);
  }
}

static int watch_fd(int ep, int fd, void *ptr) {
  struct epoll_event ev = {0};
  ev.events = EPOLLIN;
  ev.data.ptr = ptr;
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int main(int argc, char **argv) {
  zkl_client_options_t co = {0};
  struct sockaddr_in sa = {0};
  socklen_t sl = sizeof sa;
  struct itimerspec tick = {{0, 1000000}, {0, 1000000}}; /* 1 ms */
  struct conn *conns[1024] = {0}, lsn = {0}, zk = {0}, tm = {0};
  int ep, rc, nconn = 0, drivers = 0, i, done = 0;
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: %s HOSTS ROOT DIR [CONNECTIONS REQUESTS]\n",
            argv[0]);
    return 2;
  }
  root = argv[2];
  dir = argv[3];
  if (argc == 6) {
    drivers = atoi(argv[4]);
    requests = atoi(argv[5]);
    if (drivers < 1 || drivers > 256 || requests < 1) {
      fprintf(stderr, "CONNECTIONS: 1 to 256, REQUESTS: 1 or more\n");
      return 2;
    }
  }
  co.flags = ZKL_CLIENT_DISPATCH;
  if ((rc = zkl_client_create(&client, argv[1], &co)) != ZKL_OK) {
    fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
    return 1;
  }
  ep = epoll_create1(EPOLL_CLOEXEC);
  lsn.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  tm.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  zk.fd = zkl_client_fd(client); /* readable while callbacks wait */
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ep < 0 || lsn.fd < 0 || tm.fd < 0 ||
      bind(lsn.fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(lsn.fd, 512) != 0 ||
      getsockname(lsn.fd, (struct sockaddr *)&sa, &sl) != 0 ||
      timerfd_settime(tm.fd, 0, &tick, NULL) != 0 ||
      watch_fd(ep, lsn.fd, &lsn) || watch_fd(ep, tm.fd, &tm) ||
      watch_fd(ep, zk.fd, &zk)) {
    perror("lock server");
    return 1;
  }
  printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
  fflush(stdout);
  for (i = 0; i < drivers; i++) { /* the listen backlog takes them */
    struct conn *d = calloc(1, sizeof *d);
    d->driver = 1;
    d->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (d->fd < 0 || connect(d->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        watch_fd(ep, d->fd, d)) {
      perror("driver");
      return 1;
    }
    conns[nconn++] = d;
    drive_next(d);
  }
  while (!done) {
    struct epoll_event got[64];
    int n = epoll_wait(ep, got, 64, -1);
    if (n < 0 && errno != EINTR) {
      perror("epoll_wait");
      return 1;
    }
    for (i = 0; i < n; i++) {
      struct conn *cn = got[i].data.ptr;
      if (cn == &zk) {
        zkl_client_dispatch(client); /* runs on_locked() here */
      } else if (cn == &tm) {
        uint64_t ticks;
        if (read(tm.fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
          perror("timer");
        finish_work();
      } else if (cn == &lsn) {
        struct conn *s = calloc(1, sizeof *s);
        s->fd = accept4(lsn.fd, NULL, NULL, SOCK_CLOEXEC);
        if (s->fd < 0 || nconn == 1024 || watch_fd(ep, s->fd, s)) {
          if (s->fd >= 0)
            close(s->fd);
          free(s);
          continue;
        }
        conns[nconn++] = s;
      } else if (cn->fd >= 0) {
        int fd = cn->fd;
        on_readable(cn);
        if (cn->fd < 0)
          epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
      }
    }
    if (drivers) { /* driving: done once every answer is in */
      int answered = 0;
      for (i = 0; i < nconn; i++)
        if (conns[i]->driver)
          answered += conns[i]->answered;
      done = answered == drivers * requests;
    }
  }
  printf("%d requests served, %d errors\n", served, errors);
  for (i = 0; i < nconn; i++) {
    if (conns[i]->fd >= 0)
      close(conns[i]->fd);
    free(conns[i]);
  }
  while (keys) {
    struct key *k = keys;
    keys = k->next;
    if ((rc = zkl_mutex_destroy(k->m)) != ZKL_OK)
      fprintf(stderr, "destroy %s: %s\n", k->name, zkl_strerror(rc));
    free(k);
  }
  zkl_client_destroy(client);
  close(ep);
  close(lsn.fd);
  close(tm.fd);
  return errors != 0 || pending != 0;
}
