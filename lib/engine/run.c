/* SPDX-License-Identifier: Apache-2.0 */
/* run.c: a run's life: start, wait, settle. The two faces of the machine.
 *
 * zkl__queue_acquire starts a run and sleeps on a->cv until it ends (every
 * blocking call). zkl__queue_start starts one with a done() that the event
 * thread calls when it ends (async holds, multi-lock members); a parked
 * one's time is a timer of the client's heap (step.c zkl__park).
 * zkl__run_start_bare starts a run that makes no node of its own: the
 * conductor of a multi-lock's acquire (joinwait.c), whose steps drive k
 * member runs.
 * settle() turns the end into a hold, or frees the acquisition with its
 * node deleted. The steps themselves are in acquire.c and recover.c, made
 * of step.c's parts. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

/* The acquire's end, for zkl_client_stats(): a multi-lock's set is
 * counted by its conductor (the bare run), not by its members' runs. */
static void count_end(const zkl__acq_t *a, const zkl__run_t *r, int rc) {
  const zkl__queue_t *q = a->q;
  int recipe = r->owner ? ZKL_STATS_MULTILOCK : q->recipe;
  if (r->member)
    return;
  if (recipe == ZKL_STATS_WRITE && a->shared)
    recipe = ZKL_STATS_READ;
  zkl__stats_acquire(&q->c->stats, recipe, rc, r->waited, r->handoff,
                     r->start_us);
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
  if (r->owner) {
    /* a bare run's acquisition only carried it: nothing to hold */
    count_end(a, r, rc);
    a->run = NULL;
    run_free(r);
    zkl__acq_free(c, a);
    return rc;
  }
  if (rc == ZKL_OK && r->abandoned)
    rc = ZKL_ECANCELED; /* granted as it was given up: nobody is told */
  count_end(a, r, rc);
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
    a->held_us = member ? 0 : zkl__now_us();
    zkl__set_state(c, a,
                   c->state == ZKL_CLIENT_CONNECTED ? ZKL_STATE_HELD
                                                    : ZKL_STATE_AT_RISK);
    /* asked while we waited (F9, acq.c on_verified()): our watch read
     * the request then and reads the node again only if it changes;
     * told now, after HELD, as a request read in the hold's first
     * moment would be */
    if (c->state == ZKL_CLIENT_CONNECTED)
      zkl__set_state(c, a, zkl__held_state(a));
    zkl__schedule_node_watch(c, a);
    if (relay_due)
      zkl__relay(q, a);
    return ZKL_OK;
  }
  zkl__acq_unlink(c, a); /* no watcher may take our delete for a loss */
  if (wait)
    zkl__remove_node(a, 0);
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
  r->start_us = zkl__now_us();
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
  zkl__advance(a);
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
  a->run->gd.rc = ZCONNECTIONLOSS; /* the directory was not read (F5) */
  zkl__joined(a);
  *out = a;
  zkl__advance(a);
  return ZKL_OK;
}

int zkl__run_start_bare(zkl__queue_t *q, zkl__step_fn first, void *owner,
                        zkl__run_done_fn done, void *ctx, zkl__acq_t **out) {
  int rc = ZKL_OK;
  zkl__acq_t *a = run_new(q, ZKL__BLOCK, 0, -1, done, ctx, &rc);
  if (!a)
    return rc;
  a->run->owner = owner;
  a->run->next = first;
  zkl__acq_link(q->c, a);
  *out = a;
  zkl__advance(a);
  return ZKL_OK;
}

/* Under c->mu, right after zkl__queue_start(): fn(done_ctx, ended) once
 * the run's first look at the queue is over (see looked_fn), at once if
 * it is over already. */
void zkl__run_on_looked(zkl__acq_t *a, void (*fn)(void *ctx, int ended)) {
  zkl__run_t *r = a->run;
  if (!r->first || r->done || r->parked)
    fn(r->done_ctx, r->done);
  else
    r->looked_fn = fn;
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
    zkl__defer_delete_now(c, a->sess, a->path, a->czxid);
  zkl__went_del(c, &a->own_went);
  free(a->path);
  a->path = NULL;
}

void zkl__runs_settle(zkl_client_t *c) {
  while (c->ended) {
    zkl__acq_t *a = c->ended;
    zkl__run_done_fn fn = a->run->done_fn;
    void *ctx = a->run->done_ctx;
    int rc, member = a->run->member, bare = a->run->owner != NULL;
    c->ended = a->run->ended_next;
    rc = settle(a, 0);
    fn((rc == ZKL_OK || member) && !bare ? a : NULL, rc, ctx);
  }
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
