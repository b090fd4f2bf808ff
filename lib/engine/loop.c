/* SPDX-License-Identifier: Apache-2.0 */
/* loop.c: the client's event thread, the table of contents of everything
 * the client does in the background. It sits on top of the engine and
 * names its duties one by one: make a new session when one expired
 * (session.c), close dead handles, deliver notices (notice.c), settle
 * async runs (run.c), send deletes that could not reach the server
 * (deferred.c), judge async releases by their session's fate
 * (release.c), nudge a write the server sits on (session.c), and fire
 * the client's timers (base/timer.c: the watch on a hold that lasted and
 * the connection's deadline for AT_RISK holds, acq.c; a parked async
 * run's time, step.c; when to look again at what it polls, here). It
 * sleeps until the earliest timer. Nothing below calls it. */
#include "config.h"

#include <errno.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "internal.h"

/* Under c->mu, on the event thread: a new session for an expired one, made
 * with c->mu dropped (the C client's handshake may take a while). */
static void new_session(zkl_client_t *c) {
  int rc, e;
  c->need_session = 0;
  pthread_mutex_unlock(&c->mu);
  rc = zkl__new_session(c);
  e = errno;
  pthread_mutex_lock(&c->mu);
  /* posted, as every line logged here: the hook runs with no lock */
  if (rc != 0) {
    zkl__post_log(c, ZKL_LOG_ERROR, "cannot create a ZooKeeper handle: %s",
                  strerror(e));
    c->need_session = 1;
    c->session_retry_at = zkl_now_ms() + 1000;
  } else {
    zkl__post_log(c, ZKL_LOG_INFO, "new session requested");
  }
}

/* Does the first duty that is due, in order of urgency; 0 if none was. */
static int duty(zkl_client_t *c) {
  if (c->need_session && !c->stopping &&
      zkl_now_ms() >= c->session_retry_at)
    new_session(c);
  else if (c->dead)
    zkl__close_dead(c);
  else if (c->evq_head && c->dispatch_fd < 0)
    zkl__notice_deliver(c);
  else if (c->ended)
    zkl__runs_settle(c);
  else
    return 0;
  return 1;
}

/* A look timer's time came: nothing to do but be awake, and look. */
static void look_due(zkl__timer_t *t) { (void)t; }

/* The event thread looks again at due (0: no need). */
static void look_at(zkl_client_t *c, zkl__timer_t *t, int64_t due) {
  if (!due)
    zkl__timer_stop(c, t);
  else if (!t->armed || t->due != due)
    zkl__timer_set(c, t, due, look_due);
}

/* The timed duties that are due now, and when the next one is (-1: none).
 * What the event thread polls tells it when to look again; that, the
 * holds' own-node watches, parked runs and the connection's deadline are
 * all timers in one heap, whose root is the wake time. */
static int64_t timers(zkl_client_t *c) {
  int64_t now = zkl_now_ms(), wake;
  look_at(c, &c->looks.judge, zkl__releases_judge(c));
  look_at(c, &c->looks.nudge, zkl__session_nudge(c->sess, now));
  /* deferred deletes that could not go: tried again each second */
  look_at(c, &c->looks.pdel,
          !c->pdel ? 0 : c->looks.pdel.armed ? c->looks.pdel.due : now + 1000);
  look_at(c, &c->looks.retry, c->need_session ? c->session_retry_at : 0);
  wake = zkl__timers_fire(c, zkl_now_ms());
  return wake ? wake : -1;
}

static void sleep_until(zkl_client_t *c, int64_t wake) {
  struct timespec ts;
  c->ev_asleep = 1;
  if (wake < 0) {
    pthread_cond_wait(&c->cv, &c->mu);
  } else {
    zkl__deadline_ts(wake, &ts);
    c->ev_wake_at = wake;
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    c->ev_wake_at = 0;
  }
  c->ev_asleep = 0;
}

void *zkl__event_main(void *arg) {
  zkl_client_t *c = arg;
#ifdef __linux__
  /* named, so that top -H, gdb and /proc tell it from the program's own */
  prctl(PR_SET_NAME, "zkl-event", 0, 0, 0);
#endif
  pthread_mutex_lock(&c->mu);
  for (;;) {
    int64_t wake;
    if (duty(c))
      continue;
    zkl__pdel_run(c);
    if (c->stopping)
      break;
    wake = timers(c);
    /* a run woken above may have ended, or posted a notice */
    if (c->ended || (c->evq_head && c->dispatch_fd < 0))
      continue;
    sleep_until(c, wake);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}
