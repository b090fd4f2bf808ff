/* run.c: the machine every acquisition runs on, and its two faces.
 *
 * An acquisition is a run of steps (engine.h: struct zkl__run). A step runs
 * under c->mu and never waits: it sends requests (zkl__prep, zkl__sent) and
 * names the step that takes their answers, or parks until an event or a
 * time (zkl__park), or ends the run (zkl__finish). advance() runs steps
 * until one has requests in flight or is parked. Whoever makes progress
 * possible moves the machine on, on its own thread: the completion of the
 * last answer (ZooKeeper's completion thread), a watch or session event
 * (a->wake, which is zkl__kick), the event thread when a parked step's
 * time comes (zkl__runs_timers), a thread that cancels, or the blocking
 * caller itself.
 *
 * The two faces: zkl__queue_acquire starts a run and sleeps on a->cv until
 * it ends (every blocking call); zkl__queue_start starts one with a done()
 * that the event thread calls when it ends (async holds, multi-lock
 * members). settle() turns the end into a hold, or frees the acquisition
 * with its node deleted. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
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

/* Why the acquisition must end now, or ZKL_OK. `lenient`: the deadline is
 * not checked (see zkl__step_top()). */
static int halt(const zkl__run_t *r, int lenient) {
  zkl_client_t *c = r->q->c;
  if (c->stopping)
    return ZKL_ECLOSED;
  if (c->auth_failed)
    return ZKL_EAUTH;
  if (r->q->cancel_gen != r->gen || r->q->closed || r->abandoned)
    return ZKL_ECANCELED;
  if (r->deadline >= 0 && !lenient && zkl_now_ms() >= r->deadline)
    return ZKL_ETIMEDOUT;
  return ZKL_OK;
}

int zkl__stopped(const zkl__run_t *r) { return halt(r, r->first); }

/* Before a request that only trouble makes necessary (a lost reply, a
 * failed listing): the deadline holds even on the first look. */
int zkl__stopped_strict(const zkl__run_t *r) { return halt(r, 0); }

/* ---- the machine --------------------------------------------------------- */

static void advance(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  while (!r->done && !r->inflight && !r->parked)
    r->next(a);
  if (!r->done_fn) {
    /* the waiting thread sleeps until the end, or a parked step's time */
    pthread_cond_broadcast(&a->cv);
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
  advance(a);
}

void zkl__park(zkl__acq_t *a, zkl__step_fn again, int64_t wake_at) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  r->next = again;
  r->wake_at = wake_at;
  r->parked = 1;
  /* an asynchronous run's time is kept by the event thread */
  if (r->done_fn && wake_at >= 0 && (!c->timer_due || wake_at < c->timer_due)) {
    c->timer_due = wake_at;
    if (!c->ev_wake_at || c->ev_wake_at > wake_at)
      pthread_cond_broadcast(&c->cv);
  }
}

void zkl__finish(zkl__acq_t *a, int rc) {
  a->run->done = 1;
  a->run->outcome = rc;
}

/* A request's answer: the step named in r->next takes them all. */
static void on_reply(zkl__call_t *call) {
  zkl__acq_t *a = call->ctx;
  if (--a->run->inflight == 0)
    advance(a);
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
  a->own_watch = ZKL__OWN_NONE;
}

/* Decide, leaving our node alone when it is not ours to delete; one whose
 * data someone rewrote is still ours, and goes. */
void zkl__end_run(zkl__acq_t *a, int rc) {
  if (rc == ZKL_EREVOKED && a->tainted && a->path && a->sess)
    zkl__defer_delete_now(a->q->c, a->sess, a->path);
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

/* ---- a look at the queue: the top of every pass -------------------------- */

/* A lock free now is taken whatever the deadline (as with
 * pthread_mutex_timedlock): the deadline is not checked until our first
 * look at the queue, which normally comes with the create, or after making
 * the queue's missing parents on first use. Waits for the network still
 * honour it, and so does every request that only trouble makes necessary,
 * so that a slow or broken link makes us overrun the deadline by at most
 * the round trip under way (and the delete of our node), not by one round
 * trip per recovery step. */
void zkl__step_top(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = zkl__stopped(r);
  if (rc != ZKL_OK) {
    zkl__finish(a, rc);
    return;
  }
  if (a->session_lost || (a->path && !a->sess))
    zkl__drop_node(c, a);
  if (!a->path && r->member) {
    /* A new node of ours would be younger than the multi-lock's other
     * nodes, and a wait on it could close a cycle: all or none again. */
    zkl__finish(a, ZKL__AGAIN);
    return;
  }
  r->epoch = c->conn_epoch;
  r->have_list = r->fresh = 0;
  r->next = a->path ? zkl__step_list_start : zkl__step_join;
}

/* What a look at the queue came to (a position, an owner's confirmation,
 * a wait): hold, look again, join again, wait, or end. */
void zkl__after_look(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  if (rc == ZKL__HOLD) {
    zkl__finish(a, ZKL_OK);
    return;
  }
  r->first = 0;
  if (rc == ZKL__RELIST) {
    r->next = zkl__step_top;
  } else if (rc == ZKL__RETRY) {
    zkl__drop_node(a->q->c, a);
    r->next = zkl__step_top;
  } else if (rc != ZKL_OK) {
    zkl__end_run(a, rc);
  } else if (r->mode == ZKL__TRY) {
    zkl__try_last(a);
  } else {
    r->next = zkl__step_wait;
  }
}

void zkl__acq_free(zkl_client_t *c, zkl__acq_t *a) {
  zkl__acq_unlink(c, a);
  zkl__session_put(c, a->sess);
  zkl__went_del(c, &a->own_went);
  free(a->path);
  pthread_cond_destroy(&a->cv);
  free(a);
}

/* What a run leaves when it ends (it ends with nothing in flight). */
static void run_free(zkl__run_t *r) {
  zkl__call_free(&r->cr);
  zkl__call_free(&r->ls);
  zkl__call_free(&r->gd);
  zkl__call_free(&r->aux);
  zkl__call_free(&r->sy);
  zkl__waitset_free(&r->w);
  free(r->reads);
  free(r->mk);
  free(r->rec_path);
  free(r);
}

/* The run is over: a hold is granted, or the acquisition unwinds and a is
 * freed. Under c->mu. `wait`: the caller may wait for the delete of our
 * node (a blocking acquire); else it is left to the event thread. */
static int settle(zkl__acq_t *a, int wait) {
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  zkl__run_t *r = a->run;
  int rc = r->outcome, relay_due = q->limit && (r->waited || r->behind);
  int member = r->member;
  if (rc == ZKL_OK && r->abandoned)
    rc = ZKL_ECANCELED; /* granted as it was given up: nobody is told */
  if (member)
    a->waited = r->waited;
  a->run = NULL;
  a->wake = NULL;
  run_free(r);
  if (member && rc != ZKL_OK) {
    /* a multi-lock deletes its nodes itself, and waits for the deletes */
    zkl__acq_unlink(c, a);
    return rc;
  }
  if (rc == ZKL_OK) {
    zkl__set_state(c, a,
                   c->state == ZKL_CLIENT_CONNECTED ? ZKL_STATE_HELD
                                                    : ZKL_STATE_AT_RISK);
    zkl__schedule_node_watch(c, a);
    if (relay_due)
      zkl__relay(q, a);
    return ZKL_OK;
  }
  zkl__acq_unlink(c, a); /* no watcher may take our delete for a loss */
  if (wait)
    zkl__remove_node(c, a, 0);
  else
    zkl__queue_drop(a);
  zkl__acq_free(c, a);
  return rc;
}

static zkl__acq_t *run_new(zkl__queue_t *q, int mode, int shared,
                           int64_t deadline_ms, zkl__run_done_fn done,
                           void *ctx, int *rc) {
  zkl__acq_t *a = calloc(1, sizeof *a);
  zkl__run_t *r = calloc(1, sizeof *r);
  if (!a || !r || zkl__cond_init(&a->cv) != ZKL_OK) {
    *rc = a && r ? ZKL_ESYSTEM : ZKL_ENOMEM;
    free(a);
    free(r);
    return NULL;
  }
  a->q = q;
  a->shared = shared;
  a->run = r;
  a->wake = zkl__kick;
  r->q = q;
  r->mode = mode;
  r->deadline = mode == ZKL__TIMED ? deadline_ms : -1;
  r->first = 1;
  r->next = zkl__step_top;
  r->gen = q->cancel_gen;
  r->done_fn = done;
  r->done_ctx = ctx;
  return a;
}

int zkl__queue_start(zkl__queue_t *q, int mode, int shared, int64_t deadline_ms,
                     zkl__run_done_fn done, void *ctx, zkl__acq_t **out) {
  int rc = ZKL_OK;
  zkl__acq_t *a = run_new(q, mode, shared, deadline_ms, done, ctx, &rc);
  if (!a)
    return rc;
  zkl__acq_link(q->c, a);
  *out = a;
  advance(a);
  return ZKL_OK;
}

int zkl__queue_start_member(zkl__queue_t *q, int mode, int shared,
                            int64_t deadline_ms, zkl__session_t *s,
                            const char *path, int64_t czxid, zkl__call_t *ls,
                            zkl__run_done_fn done, void *ctx,
                            zkl__acq_t **out) {
  int rc = ZKL_OK;
  zkl__acq_t *a = run_new(q, mode, shared, deadline_ms, done, ctx, &rc);
  char *p = zkl__strdup(path);
  struct Stat st;
  if (!a || !p) {
    if (a) {
      pthread_cond_destroy(&a->cv);
      free(a->run);
      free(a);
    }
    free(p);
    return a ? ZKL_ENOMEM : rc;
  }
  a->run->member = 1;
  zkl__acq_link(q->c, a);
  memset(&st, 0, sizeof st);
  st.czxid = czxid;
  s->refs++;
  a->run->s = s;
  zkl__adopt(a, p, &st);
  q->dir_seen = 1;
  a->run->epoch = q->c->conn_epoch;
  a->run->first = 0; /* as after a join: the look below is the first */
  a->run->ls = *ls;  /* the listing sent behind the transaction */
  memset(ls, 0, sizeof *ls);
  zkl__joined(a);
  *out = a;
  advance(a);
  return ZKL_OK;
}

void zkl__queue_abandon(zkl__acq_t *a) {
  if (!a->run)
    return;
  a->run->abandoned = 1;
  zkl__kick(a);
}

void zkl__queue_discard(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  zkl__acq_unlink(c, a);
  zkl__queue_drop(a);
  zkl__set_state(c, a, ZKL_STATE_NONE);
  zkl__acq_free(c, a);
}

void zkl__queue_drop(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  if (a->path && a->sess && !a->sess->expired)
    zkl__defer_delete_now(c, a->sess, a->path);
  zkl__went_del(c, &a->own_went);
  free(a->path);
  a->path = NULL;
}

void zkl__runs_settle(zkl_client_t *c) {
  while (c->ended) {
    zkl__acq_t *a = c->ended;
    zkl__run_done_fn fn = a->run->done_fn;
    void *ctx = a->run->done_ctx;
    int rc, member = a->run->member;
    c->ended = a->run->ended_next;
    rc = settle(a, 0);
    fn(rc == ZKL_OK || member ? a : NULL, rc, ctx);
  }
}

int64_t zkl__runs_timers(zkl_client_t *c) {
  int64_t now = zkl_now_ms();
  zkl__acq_t *a, *next;
  if (!c->timer_due || now < c->timer_due)
    return c->timer_due;
  c->timer_due = 0;
  for (a = c->acqs; a; a = next) {
    zkl__run_t *r = a->run;
    next = a->next; /* a kick ends a run on c->ended, never unlinked here */
    if (!r || !r->done_fn || !r->parked || r->wake_at < 0)
      continue;
    if (r->wake_at <= now)
      zkl__kick(a);
    else if (!c->timer_due || r->wake_at < c->timer_due)
      c->timer_due = r->wake_at;
  }
  return c->timer_due;
}

/* A run its caller stopped waiting for has ended (event thread). */
static void detached_done(zkl__acq_t *hold, int rc, void *ctx) {
  zkl__queue_t *q = ctx;
  (void)hold, (void)rc; /* never a hold: settle() unwound it */
  q->async_refs--;
  pthread_cond_broadcast(&q->c->cv);
}

/* Starts the run, then waits for its end: the blocking face of the
 * machine. A parked step is looked at again when its time comes. Once
 * the acquire must end (deadline, cancel) while an answer is still on its
 * way, the caller waits for it a moment (ZKL__GIVE_UP_MS): on a working
 * link it comes in a round trip, and the caller returns with its node
 * deleted, as a peer's acquire does. On a link slow or silently dead,
 * which the C client may take its receive timeout to give up on, the
 * caller returns then and leaves the run to end in the background,
 * abandoned. The first look is the exception, as everywhere: a lock free
 * now is taken whatever the deadline. */
int zkl__queue_acquire(zkl__queue_t *q, int mode, int shared,
                       int64_t deadline_ms, zkl__acq_t **out) {
  zkl_client_t *c = q->c;
  zkl__acq_t *a = NULL;
  zkl__run_t *r;
  int64_t give_up = -1;
  int rc;
  pthread_mutex_lock(&c->mu);
  rc = zkl__queue_start(q, mode, shared, deadline_ms, NULL, NULL, &a);
  while (rc == ZKL_OK && !(r = a->run)->done) {
    int64_t wake = r->parked ? r->wake_at : r->first ? -1 : r->deadline;
    struct timespec ts;
    if (r->inflight && zkl__stopped(r) != ZKL_OK) {
      if (give_up < 0)
        give_up = zkl_now_ms() + ZKL__GIVE_UP_MS;
      if (zkl_now_ms() >= give_up) {
        rc = zkl__stopped(r);
        r->abandoned = 1;
        r->done_fn = detached_done;
        r->done_ctx = q;
        q->async_refs++;
        break;
      }
      wake = give_up;
    }
    if (wake >= 0 && zkl_now_ms() >= wake && r->parked) {
      zkl__kick(a);
    } else if (wake < 0) {
      pthread_cond_wait(&a->cv, &c->mu);
    } else {
      zkl__deadline_ts(wake, &ts);
      pthread_cond_timedwait(&a->cv, &c->mu, &ts);
    }
  }
  if (rc == ZKL_OK && (rc = settle(a, 1)) == ZKL_OK)
    *out = a;
  pthread_mutex_unlock(&c->mu);
  if (rc != ZKL_OK && rc != ZKL_EBUSY)
    zkl__log(c, ZKL_LOG_DEBUG, "acquire of %s ended: %s", q->dir,
             zkl_err_name(rc));
  return rc;
}
