/* SPDX-License-Identifier: Apache-2.0 */
/* event_loop.c: a service that works only while it holds a lock, written
 * around one epoll loop: the client's callbacks run on the loop's thread
 * (ZKL_CLIENT_DISPATCH), next to the service's own timer.
 *
 *   zklock-event-loop HOSTS NAME SECONDS
 *
 * It takes the lock, then does one unit of work per timer tick while the
 * hold is HELD, pauses while it is AT_RISK (disconnected: the session may
 * expire), and stops at LOST. After SECONDS it releases the lock and
 * prints how many units it did. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "zklock.h"

static int state = ZKL_STATE_NONE;

/* Runs inside zkl_client_dispatch(), on the loop's thread: no locking. */
static void on_state(zkl_mutex_t *m, int st, uint64_t token, void *ctx) {
  (void)m, (void)ctx;
  state = st;
  printf("state %s, token %" PRIu64 "\n", zkl_lock_state_name(st), token);
}

int main(int argc, char **argv) {
  zkl_client_options_t co = {0};
  zkl_mutex_options_t mo = {0};
  struct itimerspec every = {{0, 100000000}, {0, 100000000}}; /* 100 ms */
  struct epoll_event ev = {0}, got;
  zkl_client_t *c;
  zkl_mutex_t *m;
  int64_t end;
  int ep, tfd, rc, units = 0;
  if (argc != 4) {
    fprintf(stderr, "usage: %s HOSTS NAME SECONDS\n", argv[0]);
    return 2;
  }
  co.flags = ZKL_CLIENT_DISPATCH;
  if ((rc = zkl_client_create(&c, argv[1], &co)) != ZKL_OK) {
    fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
    return 1;
  }
  mo.state_fn = on_state;
  if ((rc = zkl_mutex_create(&m, c, argv[2], &mo)) != ZKL_OK ||
      (rc = zkl_mutex_lock(m)) != ZKL_OK) {
    fprintf(stderr, "lock: %s\n", zkl_strerror(rc));
    return 1;
  }
  ep = epoll_create1(EPOLL_CLOEXEC);
  tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (ep < 0 || tfd < 0 || timerfd_settime(tfd, 0, &every, NULL) != 0) {
    perror("event loop");
    return 1;
  }
  ev.events = EPOLLIN;
  ev.data.fd = zkl_client_fd(c); /* readable while callbacks wait */
  epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
  ev.data.fd = tfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  end = zkl_now_ms() + 1000LL * atoi(argv[3]);
  while (state != ZKL_STATE_LOST && zkl_now_ms() < end) {
    if (epoll_wait(ep, &got, 1, 100) != 1)
      continue;
    if (got.data.fd == tfd) {
      uint64_t ticks;
      if (read(tfd, &ticks, sizeof ticks) == (ssize_t)sizeof ticks &&
          state == ZKL_STATE_HELD)
        units++; /* the work the lock protects */
    } else {
      zkl_client_dispatch(c); /* runs on_state here */
    }
  }
  rc = zkl_mutex_unlock(m);
  zkl_client_dispatch(c); /* the hold's last state change */
  printf("%d units of work, unlock: %s\n", units, zkl_err_name(rc));
  close(tfd);
  close(ep);
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  return rc == ZKL_OK ? 0 : 1;
}
