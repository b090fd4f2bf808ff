/* loop.c: the client's event thread, the table of contents of everything
 * the client does in the background. It sits on top of the engine and
 * names its duties one by one: make a new session when one expired
 * (session.c), close dead handles, deliver notices (notice.c), declare
 * AT_RISK holds LOST when the connection stays down too long and watch
 * holds that lasted (acq.c), settle async runs and wake parked ones when
 * their time comes (queue.c), and send deletes that could not reach the
 * server (deferred.c). Nothing below calls it. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "internal.h"

void *zkl__event_main(void *arg) {
  zkl_client_t *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    int64_t due = zkl__lost_deadline(c), wake = -1;
    if (c->need_session && !c->stopping &&
        zkl_now_ms() >= c->session_retry_at) {
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
      continue;
    }
    if (c->dead) {
      zkl__close_dead(c);
      continue;
    }
    if (c->evq_head && c->dispatch_fd < 0) {
      zkl__notice_deliver(c);
      continue;
    }
    if (due && zkl_now_ms() >= due) {
      zkl__acqs_expire_at_risk(c);
      continue;
    }
    if (c->ended) {
      zkl__runs_settle(c);
      continue;
    }
    zkl__pdel_run(c);
    if (c->stopping)
      break;
    if (due)
      wake = due;
    {
      int64_t w = zkl__acqs_watch_due(c);
      if (w && (wake < 0 || w < wake))
        wake = w;
      w = zkl__runs_timers(c);
      if (w && (wake < 0 || w < wake))
        wake = w;
    }
    if (c->pdel)
      wake = wake < 0 ? zkl_now_ms() + 1000 : wake;
    if (c->need_session && (wake < 0 || c->session_retry_at < wake))
      wake = c->session_retry_at;
    /* a run woken above may have ended, or posted a notice */
    if (c->ended || (c->evq_head && c->dispatch_fd < 0))
      continue;
    if (wake < 0)
      pthread_cond_wait(&c->cv, &c->mu);
    else {
      struct timespec ts;
      zkl__deadline_ts(wake, &ts);
      c->ev_wake_at = wake;
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
      c->ev_wake_at = 0;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}
