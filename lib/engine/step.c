/* SPDX-License-Identifier: Apache-2.0 */
/* step.c: the parts of the machine every step is made of.
 *
 * A step runs under c->mu and never waits (engine.h: struct zkl__run). It
 * sends requests (zkl__prep, zkl__sent), and the answer of the last one
 * moves the machine on (on_reply); or it waits for a usable connection
 * (zkl__await_conn), or parks until a watched node changes or a time comes
 * (zkl__park, woken by zkl__kick, which is a->wake); or it ends the run
 * (zkl__finish). zkl__advance() runs the next steps until one is in flight or
 * parked. Whoever makes progress possible moves the machine, on its own
 * thread: ZooKeeper's completion thread, a watch or session event, the
 * event thread when a parked step's time comes, a thread that cancels, or
 * the caller that waits. This file names no step: steps name each other
 * (acquire.c, recover.c), and run.c starts and settles runs. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void step_conn(zkl__acq_t *a);

void zkl__waitset_free(zkl__waitset_t *w) {
  int i;
  for (i = 0; i < w->plan.nwatch; i++)
    free(w->paths[i]);
  w->plan.nwatch = 0;
}

/* The session is over (ZSESSIONMOVED is not: see zkl__is_conn_error). */
int zkl__is_session_error(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING;
}

/* Why an acquisition on q, begun at cancel generation gen, must end now,
 * or ZKL_OK: the client closing, its credentials refused, q cancelled or
 * closed, the deadline passed (-1: none). Under c->mu. A multi-lock's join
 * asks it of each of its queues (join.c). */
int zkl__queue_halted(const zkl__queue_t *q, uint64_t gen, int64_t deadline) {
  zkl_client_t *c = q->c;
  if (c->stopping)
    return ZKL_ECLOSED;
  if (c->auth_failed)
    return ZKL_EAUTH;
  if (q->cancel_gen != gen || q->closed)
    return ZKL_ECANCELED;
  if (deadline >= 0 && zkl_now_ms() >= deadline)
    return ZKL_ETIMEDOUT;
  return ZKL_OK;
}

/* The same for run r, which its caller may also have given up on.
 * `lenient`: the deadline is not checked (see zkl__step_top()). */
static int halt(const zkl__run_t *r, int lenient) {
  int rc = zkl__queue_halted(r->q, r->gen, lenient ? -1 : r->deadline);
  if ((rc == ZKL_OK || rc == ZKL_ETIMEDOUT) && r->abandoned)
    rc = ZKL_ECANCELED; /* before the deadline, as a cancel is */
  return rc;
}

int zkl__stopped(const zkl__run_t *r) { return halt(r, r->first); }

/* Before a request that only trouble makes necessary (a lost reply, a
 * failed listing): the deadline holds even on the first look. */
int zkl__stopped_strict(const zkl__run_t *r) { return halt(r, 0); }

/* ---- the machine --------------------------------------------------------- */

void zkl__advance(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  while (!r->done && !r->inflight && !r->parked)
    r->next(a);
  if (r->looked_fn && (!r->first || r->done || r->parked)) {
    void (*looked)(void *, int) = r->looked_fn;
    r->looked_fn = NULL;
    looked(r->done_ctx, r->done);
  }
  if (!r->done_fn) {
    /* the waiting thread sleeps until the end, or a parked step's time */
    zkl__wake(&a->cv, &a->cv_pin);
  } else if (r->done && !r->ended) {
    /* Settled on the event thread: here, a watcher or a completion may
     * be walking the acquisitions, and a must outlive its walk. */
    r->ended = 1;
    r->ended_next = c->ended;
    c->ended = a;
    pthread_cond_broadcast(&c->cv);
  }
}

/* a->wake while a run is on a: a parked step runs again. */
void zkl__kick(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  if (!r || r->done || !r->parked)
    return;
  r->parked = 0;
  zkl__timer_stop(a->q->c, &a->wake_tm);
  zkl__advance(a);
}

/* a->wake_tm's time came: the parked run looks again. */
static void wake_due(zkl__timer_t *t) {
  zkl__kick((zkl__acq_t *)((char *)t - offsetof(zkl__acq_t, wake_tm)));
}

void zkl__park(zkl__acq_t *a, zkl__step_fn again, int64_t wake_at) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  r->next = again;
  r->wake_at = wake_at;
  r->parked = 1;
  /* an asynchronous run's time is kept by the event thread; a blocking
   * one's caller sleeps until it (run.c) */
  if (r->done_fn && wake_at >= 0)
    zkl__timer_set(c, &a->wake_tm, wake_at, wake_due);
  else
    zkl__timer_stop(c, &a->wake_tm);
}

void zkl__finish(zkl__acq_t *a, int rc) {
  a->run->done = 1;
  a->run->outcome = rc;
}

/* A request's answer: the step named in r->next takes them all. */
static void on_reply(zkl__call_t *call) {
  zkl__acq_t *a = call->ctx;
  if (--a->run->inflight == 0)
    zkl__advance(a);
}

void zkl__prep(zkl__acq_t *a, zkl__call_t *call) {
  zkl__call_init_fn(call, a->q->c, on_reply, a);
}

/* Counts a request sent by zkl__<request>(); one the C client refused is
 * answered at once with its code. */
void zkl__sent(zkl__acq_t *a, zkl__call_t *call, int rc) {
  if (rc == ZOK) {
    a->run->inflight++;
  } else {
    call->rc = rc;
    call->done = 1;
  }
}

/* Waits for a usable connection after a request failed on session s at
 * connection epoch `epoch`, then hands then() ZKL_OK or why the wait
 * ended. */
void zkl__await_conn(zkl__acq_t *a, zkl__session_t *s, uint64_t epoch,
                     void (*then)(zkl__acq_t *, int)) {
  zkl__run_t *r = a->run;
  r->cs = s;
  r->cepoch = epoch;
  r->then = then;
  r->next = step_conn;
}

static void step_conn(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = zkl__stopped(r);
  if (rc == ZKL_OK && c->state == ZKL_CLIENT_CONNECTED &&
      (c->conn_epoch != r->cepoch || c->sess != r->cs))
    rc = ZKL_OK;
  else if (rc == ZKL_OK && r->deadline >= 0 && zkl_now_ms() >= r->deadline)
    rc = ZKL_ETIMEDOUT;
  else if (rc == ZKL_OK) {
    zkl__park(a, step_conn, r->deadline);
    return;
  }
  r->then(a, rc);
}

/* Forget our node (it is gone with its session, or was deleted, or is
 * somebody else's now): never to be deleted by us. */
void zkl__drop_node(zkl_client_t *c, zkl__acq_t *a) {
  zkl__went_del(c, &a->own_went);
  free(a->path);
  a->path = NULL;
  zkl__session_put(c, a->sess);
  a->sess = NULL;
  a->session_lost = 0;
  a->revoked = 0;
  a->revoke_asked = 0; /* asked of the node dropped */
  a->own_watch = ZKL__OWN_NONE;
}

/* Decide, leaving our node alone when it is not ours to delete; one whose
 * data someone rewrote is still ours, and goes. */
void zkl__end_run(zkl__acq_t *a, int rc) {
  if (rc == ZKL_EREVOKED && a->tainted && a->path && a->sess)
    zkl__defer_delete_now(a->q->c, a->sess, a->path, a->czxid);
  if (rc == ZKL_EREVOKED)
    zkl__drop_node(a->q->c, a);
  zkl__finish(a, rc);
}

/* Our node is not where it must be, or not ours. Gone with an expired
 * session, it is no one's doing: join again. Deleted or replaced while
 * the session lives, it was revoked by another client, and joining again
 * at the tail behind its back would be wrong. */
int zkl__gone(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  if (a->sess && a->sess == c->sess && !a->sess->expired && !a->session_lost) {
    zkl__post_log(c, ZKL_LOG_WARN, "%s: our waiting node was %s",
                  a->path ? a->path : a->q->dir,
                  a->revoked ? "deleted or replaced by another client"
                             : "deleted by another client");
    return ZKL_EREVOKED;
  }
  return ZKL__RETRY;
}

void zkl__acq_free(zkl_client_t *c, zkl__acq_t *a) {
  if (a->held_us) /* a hold counted in acquires: its end */
    zkl__stats_time(&c->stats.hold, a->held_us);
  zkl__acq_unlink(c, a);
  zkl__claim_drop(c, a);
  if (a->relay) /* a relay's answer still out finds nobody (marks.c) */
    *a->relay = NULL;
  zkl__session_put(c, a->sess);
  zkl__went_del(c, &a->own_went);
  free(a->path);
  zkl__wake_settle(&a->cv_pin);
  pthread_cond_destroy(&a->cv);
  free(a);
}

/* Adopt a node we created (from a create reply, or found again by guid);
 * takes the run's reference to the session. */
void zkl__adopt(zkl__acq_t *a, char *path, const struct Stat *st) {
  zkl__run_t *r = a->run;
  const char *base = strrchr(path, '/');
  int kind;
  a->path = path;
  zkl__went_add(a->q->c, &a->own_went, path, a, -1);
  a->czxid = st->czxid;
  a->dversion = st->version;
  a->sess = r->s;
  r->s = NULL;
  if (!zkl__name_parse(base ? base + 1 : path, &a->seq, &kind))
    a->seq = 0;
}
