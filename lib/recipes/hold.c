/* SPDX-License-Identifier: Apache-2.0 */
/* hold.c: acquisitions nobody waits for, and the holds they grant.
 *
 * zkl_mutex_lock_async() and its siblings start a run of the queue
 * engine (run.c) with no thread behind it; when the run ends, the event
 * thread posts the outcome as a notice (notice.c), and the callback runs
 * where every callback runs. A zkl_hold_t follows one acquisition from
 * start to release, through the phases HOLD_*:
 *
 *   RUNNING -> POSTED -> DELIVERING -> DELIVERED (-> released)
 *      \          \
 *       `----------`--> CANCELLED (freed once the run is over)
 *
 * All transitions are under c->mu. A hold whose outcome was a failure is
 * freed after its callback; a granted one by its release. Whoever of the
 * callback's end and the release's end comes second frees it. The release
 * is a run of release.c: zkl_hold_release() waits for it, and
 * zkl_hold_release_async() lets it end on its own, its verdict posted as
 * a notice like the acquire's outcome (a release ends when that notice
 * was delivered, so an object is busy until then). */
#include "config.h"

#include <stdlib.h>

#include "internal.h"

enum {
  HOLD_RUNNING,
  HOLD_POSTED,
  HOLD_DELIVERING,
  HOLD_DELIVERED,
  HOLD_CANCELLED
};

struct zkl_hold {
  zkl_client_t *c;
  zkl__queue_t *q;
  zkl__acq_t *a;       /* the acquisition, then the hold; NULL on failure */
  zkl_hold_fn fn;
  void *arg;
  unsigned fork_gen;
  int phase;
  int rc;              /* the outcome */
  int released;        /* zkl_hold_release() began */
  int release_done;    /* ... and it returned, or its fn did */
  /* zkl_hold_release_async(): the release run, its fn and notice */
  zkl__rel_t *rel;
  zkl_release_fn rfn;
  void *rarg;
  int rrc;
  struct zkl__event *rnotice;
  int cancel_waiting;  /* cancels waiting for the callback to return */
  pthread_t deliverer;
  struct zkl__event *notice; /* until posted */
};

/* Under c->mu: h is no more. */
static void hold_free(zkl_hold_t *h) {
  h->q->async_refs--;
  pthread_cond_broadcast(&h->c->cv);
  zkl__handle_remove(h);
  free(h->notice);
  free(h->rnotice);
  free(h->rel);
  free(h);
}

/* Under c->mu: a cancelled acquisition whose outcome nobody will see (a
 * run that ended after the cancel is never a hold: see settle()). */
static void discard(zkl_hold_t *h) {
  if (h->a)
    zkl__queue_discard(h->a);
  h->a = NULL;
  hold_free(h);
}

/* The run ended (event thread, under c->mu). */
static void deliver(void *arg);

static void on_done(zkl__acq_t *hold, int rc, void *ctx) {
  zkl_hold_t *h = ctx;
  h->a = hold;
  h->rc = rc;
  if (h->phase == HOLD_CANCELLED) {
    discard(h);
    return;
  }
  h->phase = HOLD_POSTED;
  zkl__post_fn(h->c, h->notice, deliver, h);
  h->notice = NULL;
}

int zkl__hold_start(zkl__queue_t *q, int shared, int64_t deadline_ms,
                    zkl_hold_fn fn, void *arg, zkl_hold_t **out) {
  zkl_client_t *c = q->c;
  zkl_hold_t *h;
  int rc;
  if (!fn || !out)
    return ZKL_EINVAL;
  *out = NULL;
  if (!(h = calloc(1, sizeof *h)) || !(h->notice = zkl__notice_new())) {
    free(h);
    return ZKL_ENOMEM;
  }
  h->c = c;
  h->q = q;
  h->fn = fn;
  h->arg = arg;
  h->fork_gen = c->fork_gen;
  if ((rc = zkl__handle_add(h)) != ZKL_OK) {
    free(h->notice);
    free(h);
    return rc;
  }
  pthread_mutex_lock(&c->mu);
  rc = c->stopping ? ZKL_ECLOSED : q->closed ? ZKL_ECANCELED : ZKL_OK;
  if (rc == ZKL_OK)
    rc = zkl__queue_start(q, zkl__deadline_mode(deadline_ms), shared,
                          zkl__deadline_in(deadline_ms), on_done, h, &h->a);
  if (rc == ZKL_OK) {
    q->async++;
    q->async_refs++;
    *out = h;
  }
  pthread_mutex_unlock(&c->mu);
  if (rc != ZKL_OK) {
    zkl__handle_remove(h);
    free(h->notice);
    free(h);
  }
  return rc;
}

static void deliver(void *arg) {
  zkl_hold_t *h = arg;
  zkl_client_t *c = h->c;
  pthread_mutex_lock(&c->mu);
  if (h->phase == HOLD_CANCELLED) { /* while being taken off the queue */
    discard(h);
    pthread_mutex_unlock(&c->mu);
    return;
  }
  h->phase = HOLD_DELIVERING;
  h->deliverer = pthread_self();
  pthread_mutex_unlock(&c->mu);
  h->fn(h, h->rc, h->arg);
  pthread_mutex_lock(&c->mu);
  h->phase = HOLD_DELIVERED;
  pthread_cond_broadcast(&c->cv);
  if (h->rc != ZKL_OK)
    h->q->async--;
  if (!h->cancel_waiting && (h->rc != ZKL_OK || h->release_done))
    hold_free(h);
  pthread_mutex_unlock(&c->mu);
}

/* A live hold object, not inherited across fork(): its client, locked. */
static zkl_client_t *lock_hold(const zkl_hold_t *h, int *rc) {
  zkl_client_t *c;
  *rc = ZKL_EINVAL;
  if (!h || !zkl__handle_live(h))
    return NULL;
  if (zkl__forked(h->fork_gen)) {
    *rc = ZKL_EFORKED;
    return NULL;
  }
  c = h->c;
  pthread_mutex_lock(&c->mu);
  *rc = ZKL_OK;
  return c;
}

int zkl_hold_cancel(zkl_hold_t *h) {
  int rc;
  zkl_client_t *c = lock_hold(h, &rc);
  if (!c)
    return rc;
  switch (h->phase) {
  case HOLD_RUNNING:
    h->phase = HOLD_CANCELLED;
    h->q->async--;
    zkl__queue_abandon(h->a); /* the run ends soon; on_done frees h */
    break;
  case HOLD_POSTED:
    h->phase = HOLD_CANCELLED;
    h->q->async--;
    if (zkl__notice_unpost(c, h))
      discard(h);
    /* else being delivered: deliver() discards it */
    break;
  case HOLD_DELIVERING:
    rc = ZKL_EBUSY; /* the callback has the outcome */
    if (pthread_equal(h->deliverer, pthread_self()))
      break;
    h->cancel_waiting++;
    while (h->phase == HOLD_DELIVERING)
      pthread_cond_wait(&c->cv, &c->mu);
    if (--h->cancel_waiting == 0 && (h->rc != ZKL_OK || h->release_done))
      hold_free(h);
    break;
  default:
    rc = ZKL_EBUSY;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* Under c->mu: the granted hold of h, or NULL. */
static zkl__acq_t *granted(const zkl_hold_t *h) {
  return (h->phase == HOLD_DELIVERING || h->phase == HOLD_DELIVERED) &&
                 h->rc == ZKL_OK && !h->released
             ? h->a
             : NULL;
}

/* Under c->mu: the release that began has ended, and said so. */
static void release_over(zkl_hold_t *h) {
  h->release_done = 1;
  h->q->async--;
  if (h->phase == HOLD_DELIVERED && !h->cancel_waiting)
    hold_free(h);
}

/* The async release's fn, on the callback thread, as an acquire's. */
static void deliver_release(void *arg) {
  zkl_hold_t *h = arg;
  zkl_client_t *c = h->c;
  h->rfn(h->rrc, h->rarg);
  pthread_mutex_lock(&c->mu);
  release_over(h);
  pthread_mutex_unlock(&c->mu);
}

/* The release run ended (under c->mu, on any thread): its verdict goes
 * out as a notice, so fn runs where every callback runs. */
static void release_ended(int rc, void *ctx) {
  zkl_hold_t *h = ctx;
  h->a = NULL;
  h->rrc = rc;
  zkl__post_fn(h->c, h->rnotice, deliver_release, h);
  h->rnotice = NULL;
}

int zkl_hold_release(zkl_hold_t *h) {
  zkl__acq_t *a;
  int rc;
  zkl_client_t *c = lock_hold(h, &rc);
  if (!c)
    return rc;
  if (!(a = granted(h))) {
    pthread_mutex_unlock(&c->mu);
    return ZKL_EINVAL;
  }
  h->released = 1;
  pthread_mutex_unlock(&c->mu);
  rc = zkl__queue_release(h->q, a, 1);
  pthread_mutex_lock(&c->mu);
  h->a = NULL;
  release_over(h);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int zkl_hold_release_async(zkl_hold_t *h, zkl_release_fn fn, void *arg) {
  zkl__rel_t *rel = NULL;
  struct zkl__event *notice = NULL;
  zkl__acq_t *a;
  zkl_client_t *c;
  int rc;
  if (!fn)
    return ZKL_EINVAL;
  if (!(c = lock_hold(h, &rc)))
    return rc;
  if (!(a = granted(h)))
    rc = ZKL_EINVAL;
  else if (!(rel = calloc(1, sizeof *rel)) || !(notice = zkl__notice_new()))
    rc = ZKL_ENOMEM; /* still held */
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&c->mu);
    free(rel);
    free(notice);
    return rc;
  }
  h->released = 1;
  h->rel = rel;
  h->rfn = fn;
  h->rarg = arg;
  h->rnotice = notice;
  zkl__release_start(rel, a, release_ended, h);
  pthread_mutex_unlock(&c->mu);
  return ZKL_OK;
}

int zkl_hold_state(const zkl_hold_t *h) {
  const zkl__acq_t *a;
  int rc, st;
  zkl_client_t *c = lock_hold(h, &rc);
  if (!c)
    return rc;
  a = granted(h);
  st = a ? atomic_load(&a->state) : ZKL_STATE_NONE;
  pthread_mutex_unlock(&c->mu);
  return st;
}

int zkl_hold_token(const zkl_hold_t *h, uint64_t *token) {
  const zkl__acq_t *a;
  int rc;
  zkl_client_t *c;
  if (!token)
    return ZKL_EINVAL;
  if (!(c = lock_hold(h, &rc)))
    return rc;
  a = granted(h);
  if (a)
    *token = (uint64_t)a->czxid;
  pthread_mutex_unlock(&c->mu);
  return a ? ZKL_OK : ZKL_ENOTOWNER;
}

/* The granted acquisition of h for a call that reads or writes under it,
 * or NULL with *rc set. Only a release frees it, and the caller does not
 * release meanwhile. */
static zkl__acq_t *granted_unlocked(zkl_hold_t *h, int *rc) {
  zkl__acq_t *a;
  zkl_client_t *c = lock_hold(h, rc);
  if (!c)
    return NULL;
  a = granted(h);
  pthread_mutex_unlock(&c->mu);
  *rc = a ? ZKL_OK : ZKL_ENOTOWNER;
  return a;
}

int zkl_hold_verify(zkl_hold_t *h) {
  int rc;
  zkl__acq_t *a = granted_unlocked(h, &rc);
  return a ? zkl__queue_verify(h->q, a) : rc;
}

int zkl_hold_guarded(zkl_hold_t *h, zkl_op_t *ops, size_t n,
                     unsigned flags) {
  int rc;
  zkl__acq_t *a = granted_unlocked(h, &rc);
  if (!a)
    return rc;
  rc = zkl__guarded(&a, 1, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    zkl_hold_release(h); /* the node went with the transaction */
  return rc;
}

int zkl_hold_node_path(const zkl_hold_t *h, char *buf, size_t size) {
  const zkl__acq_t *a;
  int rc;
  zkl_client_t *c;
  if (!buf)
    return ZKL_EINVAL;
  if (!(c = lock_hold(h, &rc)))
    return rc;
  a = granted(h);
  rc = zkl__acq_path(a, buf, size);
  pthread_mutex_unlock(&c->mu);
  return rc;
}
