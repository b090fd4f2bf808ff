/* SPDX-License-Identifier: Apache-2.0 */
/* loop.c: the client's event thread, the table of contents of everything
 * the client does in the background. It sits on top of the engine and
 * names its duties one by one: make a new session when one expired
 * (session.c), close dead handles, deliver notices (notice.c), declare
 * AT_RISK holds LOST when the connection stays down too long (acq.c),
 * fire the client's timers (base/timer.c: the watch on a hold that lasted,
 * acq.c; a parked async run's time, step.c), settle async runs (run.c),
 * judge async releases by their session's fate
 * (release.c), nudge a write the server sits on (session.c), and send
 * deletes that could not reach the server (deferred.c). Nothing below
 * calls it. */
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
static int duty(zkl_client_t *c, int64_t lost_due) {
  if (c->need_session && !c->stopping &&
      zkl_now_ms() >= c->session_retry_at)
    new_session(c);
  else if (c->dead)
    zkl__close_dead(c);
  else if (c->evq_head && c->dispatch_fd < 0)
    zkl__notice_deliver(c);
  else if (lost_due && zkl_now_ms() >= lost_due)
    zkl__acqs_expire_at_risk(c);
  else if (c->ended)
    zkl__runs_settle(c);
  else
    return 0;
  return 1;
}

/* The earlier of wake (-1: none) and due (0: none). */
static int64_t earliest(int64_t wake, int64_t due) {
  return !due ? wake : (wake < 0 || due < wake) ? due : wake;
}

/* The timed duties that are due now, and when the next one is (-1: none). */
static int64_t timers(zkl_client_t *c, int64_t lost_due) {
  int64_t wake = lost_due ? lost_due : -1;
  wake = earliest(wake, zkl__timers_fire(c, zkl_now_ms()));
  wake = earliest(wake, zkl__releases_judge(c));
  wake = earliest(wake, zkl__session_nudge(c->sess, zkl_now_ms()));
  if (c->pdel)
    wake = wake < 0 ? zkl_now_ms() + 1000 : wake;
  if (c->need_session && (wake < 0 || c->session_retry_at < wake))
    wake = c->session_retry_at;
  return wake;
}

static void sleep_until(zkl_client_t *c, int64_t wake) {
  struct timespec ts;
  if (wake < 0) {
    pthread_cond_wait(&c->cv, &c->mu);
    return;
  }
  zkl__deadline_ts(wake, &ts);
  c->ev_wake_at = wake;
  pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  c->ev_wake_at = 0;
}

void *zkl__event_main(void *arg) {
  zkl_client_t *c = arg;
#ifdef __linux__
  /* named, so that top -H, gdb and /proc tell it from the program's own */
  prctl(PR_SET_NAME, "zkl-event", 0, 0, 0);
#endif
  pthread_mutex_lock(&c->mu);
  for (;;) {
    int64_t lost_due = zkl__lost_deadline(c), wake;
    if (duty(c, lost_due))
      continue;
    zkl__pdel_run(c);
    if (c->stopping)
      break;
    wake = timers(c, lost_due);
    /* a run woken above may have ended, or posted a notice */
    if (c->ended || (c->evq_head && c->dispatch_fd < 0))
      continue;
    sleep_until(c, wake);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}
