/* SPDX-License-Identifier: Apache-2.0 */
/* multilock.c: several locks held as one, with no deadlock.
 *
 * The object: its members (each a queue of its own, named as a mutex's or
 * a read-write lock's nodes), the set's state as its callback hears it,
 * and what happens to the others when one member is lost while the set
 * holds (drop_siblings). The acquire itself is the engine's join of k
 * queues (join.c, joinwait.c): one run of the machine with no thread of
 * its own. zkl_multilock_lock_async() starts it and posts the outcome as
 * a notice; the blocking calls start the same run and wait for its end on
 * ml->cv.
 *
 * Rules that keep it so: the nodes are created all or none; a member whose
 * node is gone with the session never joins again alone; any member's
 * failure ends the others, and every node made is deleted, at once or by
 * the deferred deletes (found by the guid when the transaction's answer
 * was lost). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct member {
  zkl__queue_t q; /* first: notify() casts back */
  zkl_multilock_t *ml;
  int last;       /* the last state notified (callback thread) */
};

struct zkl_multilock {
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_multilock_fn fn;
  void *ctx;
  size_t n;
  struct member *m; /* in the order of their paths */
  void *data;
  zkl__join_t j; /* the members' queues, in the same order; their holds */
  pthread_cond_t cv; /* the acquire ended (a blocking caller waits) */
  /* under c->mu */
  int busy;     /* an acquire or release is under way */
  int held;     /* the set holds */
  int dropping; /* deletes drop_siblings sent, not answered yet */
  int ended;    /* the acquire under way ended, with `result` */
  int result;
  /* an async acquire's callback, and the notice that carries it */
  zkl_multilock_done_fn afn;
  void *aarg;
  struct zkl__event *notice;
  /* an async unlock whose verdict waits for drop_siblings' deletes */
  struct unlocking *unlocking;
  /* the set's state as the callback last heard it, and for which hold */
  _Atomic uint64_t epoch;
  uint64_t told_epoch;
  int told;
};

/* Severity of a member's state: the set's is the worst. */
static int rank(int st) {
  switch (st) {
  case ZKL_STATE_HELD: return 1;
  case ZKL_STATE_REVOKE_REQUESTED: return 2;
  case ZKL_STATE_AT_RISK: return 3;
  case ZKL_STATE_LOST: return 4;
  }
  return 0;
}

/* The delete of a member's node the set gave up (drop_siblings). */
struct drop {
  zkl__call_t call;
  zkl_multilock_t *ml;
  zkl__session_t *s;
  char path[];
};

static void unlock_told(struct unlocking *u);

static void on_dropped(zkl__call_t *call) {
  struct drop *d = call->ctx;
  zkl_client_t *c = call->c;
  if (zkl__is_conn_error(call->rc))
    zkl__defer_delete(c, d->s, d->path, 0); /* once connected again */
  if (--d->ml->dropping == 0 && d->ml->unlocking) {
    unlock_told(d->ml->unlocking); /* an async unlock waited for us */
    d->ml->unlocking = NULL;
  }
  zkl__session_put(c, d->s);
  zkl__call_free(call);
  free(d);
  pthread_cond_broadcast(&c->cv); /* a blocking unlock may wait for us */
}

/* A member lost while the set holds (its node deleted or rewritten by
 * someone, or forced out): the set holds no more, and its other nodes
 * would only keep everyone out of those locks until the unlock. They go
 * now, as ours (their holds stood until this), and their holds are LOST
 * too; the unlock waits for these deletes and gives the verdict. Not
 * while an unlock is under way: it deletes them itself (it clears `held`
 * first). Under c->mu. */
static void drop_siblings(zkl_multilock_t *ml, const struct member *lost) {
  zkl_client_t *c = ml->c;
  size_t i;
  for (i = 0; ml->held && i < ml->n; i++) {
    zkl__acq_t *a = ml->j.a[i];
    int st = a ? atomic_load(&a->state) : ZKL_STATE_NONE;
    size_t len;
    struct drop *d;
    if (&ml->m[i] == lost || !a || !a->sess || !a->path ||
        (st != ZKL_STATE_HELD && st != ZKL_STATE_AT_RISK &&
         st != ZKL_STATE_REVOKE_REQUESTED))
      continue;
    len = strlen(a->path) + 1;
    if ((d = malloc(sizeof *d + len))) {
      memcpy(d->path, a->path, len);
      d->ml = ml;
      d->s = a->sess;
      d->s->refs++;
      ml->dropping++;
      zkl__call_init_fn(&d->call, c, on_dropped, d);
      if (zkl__delete(&d->call, d->s, d->path) != ZOK) {
        d->call.rc = ZCONNECTIONLOSS;
        on_dropped(&d->call);
      }
    } else {
      zkl__defer_delete(c, a->sess, a->path, 0);
    }
    zkl__lose(c, a, "another member of its multi-lock was lost");
  }
}

/* A member's state change, on the callback thread: a loss ends the set
 * (drop_siblings); the set's state, when it holds and that state
 * changed, goes to the callback. */
static void member_notify(zkl__queue_t *q, int state, uint64_t token) {
  struct member *me = (struct member *)q;
  zkl_multilock_t *ml = me->ml;
  uint64_t epoch = atomic_load(&ml->epoch);
  int worst = ZKL_STATE_NONE;
  size_t i;
  (void)token;
  me->last = state;
  if (state == ZKL_STATE_LOST) {
    pthread_mutex_lock(&ml->c->mu);
    drop_siblings(ml, me);
    pthread_mutex_unlock(&ml->c->mu);
  }
  if (!epoch || !ml->fn)
    return;
  for (i = 0; i < ml->n; i++)
    if (rank(ml->m[i].last) > rank(worst))
      worst = ml->m[i].last;
  if (worst == ml->told && epoch == ml->told_epoch)
    return;
  ml->told = worst;
  ml->told_epoch = epoch;
  ml->fn(ml, worst, (uint64_t)ml->j.token, ml->ctx);
}

/* Closes the first `opened` members' queues and frees ml. */
static void ml_free(zkl_multilock_t *ml, size_t opened) {
  size_t i;
  for (i = 0; i < opened; i++) {
    zkl__handle_remove(&ml->m[i]);
    zkl__recipe_close(&ml->m[i].q);
  }
  pthread_cond_destroy(&ml->cv);
  free(ml->notice);
  free(ml->data);
  free(ml->m);
  free(ml);
}

static int member_order(const void *x, const void *y) {
  const zkl_multilock_member_t *a = x, *b = y;
  return strcmp(a->name, b->name);
}

/* The members checked (as every recipe's create checks its arguments,
 * and each mode) and sorted by name into *out, which the caller frees:
 * ZKL_OK, ZKL_EINVAL (also for a name given twice), ZKL_EFORKED,
 * ZKL_ENOMEM. */
static int sort_members(zkl_client_t *c, const zkl_multilock_member_t *members,
                        size_t n, const char *root,
                        const zkl_multilock_options_t *o,
                        zkl_multilock_member_t **out) {
  zkl_multilock_member_t *sorted;
  size_t i;
  int rc = ZKL_OK;
  if (!members || n < 1 || n > ZKL_MULTILOCK_MAX)
    return ZKL_EINVAL;
  for (i = 0; i < n && rc == ZKL_OK; i++) {
    rc = zkl__recipe_args(c, members[i].name, root, o ? o->data : NULL,
                          o ? o->data_len : 0, o ? o->flags : 0,
                          ZKL_MUTEX_NO_NODE_WATCH | ZKL_MUTEX_KAZOO);
    if (rc == ZKL_OK && members[i].mode != ZKL_MODE_EXCLUSIVE &&
        members[i].mode != ZKL_MODE_SHARED)
      rc = ZKL_EINVAL;
  }
  if (rc != ZKL_OK)
    return rc;
  if (!(sorted = malloc(n * sizeof *sorted)))
    return ZKL_ENOMEM;
  memcpy(sorted, members, n * sizeof *sorted);
  /* sorted only so that the transaction's order is the same for all:
   * safety does not depend on it */
  qsort(sorted, n, sizeof *sorted, member_order);
  for (i = 1; i < n; i++)
    if (strcmp(sorted[i - 1].name, sorted[i].name) == 0) {
      free(sorted);
      return ZKL_EINVAL;
    }
  *out = sorted;
  return ZKL_OK;
}

/* A multi-lock of n members, none of their queues open yet; NULL when
 * out of memory. */
static zkl_multilock_t *ml_new(zkl_client_t *c, size_t n,
                               const zkl_multilock_options_t *o) {
  zkl_multilock_t *ml = calloc(1, sizeof *ml);
  if (!ml || !(ml->m = calloc(n, sizeof *ml->m)) ||
      zkl__cond_init(&ml->cv) != ZKL_OK) {
    if (ml)
      free(ml->m);
    free(ml);
    return NULL;
  }
  ml->c = c;
  ml->fork_gen = c->fork_gen;
  ml->fn = o ? o->state_fn : NULL;
  ml->ctx = o ? o->state_ctx : NULL;
  ml->n = n;
  ml->j.c = c;
  ml->j.n = n;
  return ml;
}

/* Opens member i's queue, <root>/<m->name>, whose nodes are named as a
 * mutex's (exclusive) or a read-write lock's (shared), or as kazoo's. */
static int open_member(zkl_multilock_t *ml, size_t i, const char *root,
                       const zkl_multilock_member_t *m,
                       const zkl_multilock_options_t *o) {
  unsigned flags = o ? o->flags : 0;
  int kazoo = (flags & ZKL_MUTEX_KAZOO) != 0;
  int shared = m->mode == ZKL_MODE_SHARED;
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, m->name, o);
  struct member *me = &ml->m[i];
  me->ml = ml;
  spec.marker = shared ? (kazoo ? "__lock__" : "__WRIT__")
                       : (kazoo ? "__lock__" : "-lock-");
  spec.marker_shared = shared ? (kazoo ? "__rlock__" : "__READ__") : NULL;
  spec.flags = (flags & ZKL_MUTEX_NO_NODE_WATCH ? ZKL__Q_NO_NODE_WATCH : 0) |
               (kazoo ? ZKL__Q_KEEP_DIR : 0);
  spec.notify = member_notify; /* a loss ends the set: drop_siblings */
  spec.recipe = ZKL_STATS_MULTILOCK;
  ml->j.q[i] = &me->q;
  ml->j.shared[i] = shared;
  return zkl__queue_open(&me->q, ml->c, &spec, me);
}

int zkl_multilock_create(zkl_multilock_t **out, zkl_client_t *c,
                         const zkl_multilock_member_t *members, size_t n,
                         const zkl_multilock_options_t *o) {
  const char *root = o && o->root ? o->root : "/locks";
  zkl_multilock_member_t *sorted = NULL;
  zkl_multilock_t *ml;
  size_t opened = 0;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  if ((rc = sort_members(c, members, n, root, o, &sorted)) != ZKL_OK)
    return rc;
  if (!(ml = ml_new(c, n, o))) {
    free(sorted);
    return ZKL_ENOMEM;
  }
  while (opened < n &&
         (rc = open_member(ml, opened, root, &sorted[opened], o)) == ZKL_OK)
    opened++;
  free(sorted);
  if (rc == ZKL_OK && o && o->data_len) {
    if ((ml->data = malloc(o->data_len)))
      memcpy(ml->data, o->data, o->data_len);
    else
      rc = ZKL_ENOMEM;
    ml->j.data = ml->data;
    ml->j.len = o->data_len;
  }
  if (rc == ZKL_OK)
    rc = zkl__handle_add(ml);
  if (rc != ZKL_OK) {
    ml_free(ml, opened);
    return rc;
  }
  *out = ml;
  return ZKL_OK;
}

/* ---- the acquire --------------------------------------------------------- */

/* An async acquire's outcome, on the callback thread: ml is free for the
 * next call before fn runs (fn may unlock, lock again or destroy it). */
static void deliver(void *arg) {
  zkl_multilock_t *ml = arg;
  zkl_client_t *c = ml->c;
  zkl_multilock_done_fn fn;
  void *fn_arg;
  int rc;
  pthread_mutex_lock(&c->mu);
  fn = ml->afn;
  fn_arg = ml->aarg;
  rc = ml->result;
  ml->afn = NULL;
  ml->busy = 0;
  pthread_mutex_unlock(&c->mu);
  fn(ml, rc, fn_arg);
}

/* The engine's acquire ended (event thread, under c->mu): the set holds
 * with rc ZKL_OK, its nodes all gone otherwise. An async caller hears it
 * through the notice made when it started; a blocking one wakes. */
static void acquired(zkl__join_t *j, int rc, void *ctx) {
  zkl_multilock_t *ml = ctx;
  zkl_client_t *c = ml->c;
  (void)j;
  if (rc == ZKL_OK) {
    ml->held = 1;
    ml->j.a[0]->held_us = zkl__now_us(); /* the set's hold, counted once */
    /* the set's HELD: the members' came while it did not hold yet */
    atomic_fetch_add(&ml->epoch, 1);
    zkl__post_state(c, ml->j.a[0], atomic_load(&ml->j.a[0]->state));
  } else if (rc != ZKL_EBUSY) {
    zkl__post_log(c, ZKL_LOG_DEBUG, "multi-lock acquire ended: %s",
                  zkl_err_name(rc));
  }
  ml->result = rc;
  ml->ended = 1;
  if (ml->afn) {
    zkl__post_fn(c, ml->notice, deliver, ml);
    ml->notice = NULL;
  } else {
    pthread_cond_broadcast(&ml->cv);
  }
}

/* Starts an acquire: ZKL_OK (ml is busy with it until it ends), or why
 * not. fn: an async one (it takes `notice`); else a blocking one, which
 * would never end where this thread holds a member through another object
 * already (ZKL_EDEADLK). */
static int start(zkl_multilock_t *ml, int mode, int64_t deadline,
                 zkl_multilock_done_fn fn, void *arg,
                 struct zkl__event *notice) {
  uint64_t me;
  size_t i;
  int rc = ZKL_OK;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  me = zkl__self_tid();
  for (i = 0; !fn && mode == ZKL__BLOCK && i < ml->n; i++)
    if (zkl__held_elsewhere(&ml->m[i].q, me))
      return ZKL_EDEADLK;
  pthread_mutex_lock(&ml->c->mu);
  if (ml->busy || ml->held)
    rc = ZKL_EBUSY;
  else if (ml->c->stopping)
    rc = ZKL_ECLOSED;
  if (rc == ZKL_OK) {
    ml->busy = 1;
    ml->ended = 0;
    ml->afn = fn;
    ml->aarg = arg;
    ml->notice = notice;
    zkl__join_begin(&ml->j);
    rc = zkl__join_acquire(&ml->j, mode, deadline, acquired, ml);
    if (rc != ZKL_OK) {
      ml->busy = 0;
      ml->afn = NULL;
      ml->notice = NULL;
    }
  }
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

/* The blocking face: starts the acquire, and waits for its end. */
static int set_acquire(zkl_multilock_t *ml, int mode, int64_t deadline) {
  zkl_client_t *c;
  int rc = start(ml, mode, deadline, NULL, NULL, NULL);
  if (rc != ZKL_OK)
    return rc;
  c = ml->c;
  pthread_mutex_lock(&c->mu);
  while (!ml->ended)
    pthread_cond_wait(&ml->cv, &c->mu);
  ml->busy = 0;
  rc = ml->result;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int zkl_multilock_lock(zkl_multilock_t *ml) {
  return set_acquire(ml, ZKL__BLOCK, -1);
}

int zkl_multilock_trylock(zkl_multilock_t *ml) {
  return set_acquire(ml, ZKL__TRY, -1);
}

int zkl_multilock_timedlock(zkl_multilock_t *ml, int64_t deadline_ms) {
  /* ZKL_NO_DEADLINE: zkl_multilock_lock(), its ZKL_EDEADLK check included */
  return set_acquire(ml, zkl__deadline_mode(deadline_ms),
                     zkl__deadline_in(deadline_ms));
}

int zkl_multilock_lock_async(zkl_multilock_t *ml, int64_t deadline_ms,
                             zkl_multilock_done_fn fn, void *arg) {
  struct zkl__event *notice;
  int rc;
  if (!ml || !fn)
    return ZKL_EINVAL;
  /* made now: an outcome is never lost for want of memory */
  if (!(notice = zkl__notice_new()))
    return ZKL_ENOMEM;
  rc = start(ml, zkl__deadline_mode(deadline_ms),
             zkl__deadline_in(deadline_ms), fn, arg, notice);
  if (rc != ZKL_OK)
    free(notice);
  return rc;
}

/* The set's holds, kept for the caller until it gives them back with
 * put(): ZKL_OK, ZKL_ENOTOWNER (not held), ZKL_EINVAL, ZKL_EFORKED. */
static int holds_get(zkl_multilock_t *ml, zkl__acq_t **holds) {
  size_t i;
  int rc = ZKL_OK;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  if (!ml->held || ml->busy)
    rc = ml->busy ? ZKL_EBUSY : ZKL_ENOTOWNER;
  else
    ml->busy = 1;
  for (i = 0; rc == ZKL_OK && i < ml->n; i++)
    holds[i] = ml->j.a[i];
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

static int holds_put(zkl_multilock_t *ml, int rc) {
  pthread_mutex_lock(&ml->c->mu);
  ml->busy = 0;
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

/* The set's verdict so far, rc, with a member's, r: the first failure,
 * ZKL_EREVOKED over ZKL_ELOST (a member forced out says why). */
static int worse(int rc, int r) {
  return rc == ZKL_OK || (r == ZKL_EREVOKED && rc == ZKL_ELOST) ? r : rc;
}

/* Releases every member; the worst verdict. Returns once every node is
 * gone, or left to the deferred deletes while disconnected. */
static int set_release(zkl_multilock_t *ml, zkl__acq_t **holds) {
  size_t i;
  int rc = ZKL_OK;
  pthread_mutex_lock(&ml->c->mu);
  ml->held = 0;
  while (ml->dropping > 0)
    pthread_cond_wait(&ml->c->cv, &ml->c->mu);
  pthread_mutex_unlock(&ml->c->mu);
  for (i = 0; i < ml->n; i++) {
    rc = worse(rc, zkl__queue_release(&ml->m[i].q, holds[i], 1));
    ml->j.a[i] = NULL;
  }
  return rc;
}

int zkl_multilock_unlock(zkl_multilock_t *ml) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  int rc = holds_get(ml, holds);
  return rc != ZKL_OK ? rc : holds_put(ml, set_release(ml, holds));
}

/* ---- the unlock that never waits ----------------------------------------- */

/* An async unlock: one release run per member (release.c), the verdict
 * of all of them, and the notice that carries it to fn. */
struct unlocking {
  zkl_multilock_t *ml;
  size_t left; /* member releases not ended */
  int rc;
  zkl_release_fn fn;
  void *arg;
  struct zkl__event *notice;
  zkl__rel_t rel[];
};

/* On the callback thread: the verdict, then the object is free again. */
static void unlock_deliver(void *arg) {
  struct unlocking *u = arg;
  zkl_multilock_t *ml = u->ml;
  u->fn(u->rc, u->arg);
  holds_put(ml, ZKL_OK);
  free(u);
}

/* Under c->mu: every release ended, and no delete of drop_siblings() is
 * out (its completion writes to ml): the verdict goes out. */
static void unlock_told(struct unlocking *u) {
  zkl__post_fn(u->ml->c, u->notice, unlock_deliver, u);
}

/* A member's release ended (under c->mu, on any thread). */
static void member_released(int rc, void *ctx) {
  struct unlocking *u = ctx;
  u->rc = worse(u->rc, rc);
  if (--u->left > 0)
    return;
  if (u->ml->dropping > 0)
    u->ml->unlocking = u; /* the last delete tells (on_dropped) */
  else
    unlock_told(u);
}

int zkl_multilock_unlock_async(zkl_multilock_t *ml, zkl_release_fn fn,
                               void *arg) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  struct unlocking *u;
  size_t i;
  int rc = fn ? holds_get(ml, holds) : ZKL_EINVAL;
  if (rc != ZKL_OK)
    return rc;
  u = calloc(1, sizeof *u + ml->n * sizeof u->rel[0]);
  if (!u || !(u->notice = zkl__notice_new())) {
    free(u);
    return holds_put(ml, ZKL_ENOMEM); /* still held */
  }
  u->ml = ml;
  u->left = ml->n;
  u->fn = fn;
  u->arg = arg;
  pthread_mutex_lock(&ml->c->mu);
  ml->held = 0;
  for (i = 0; i < ml->n; i++) {
    ml->j.a[i] = NULL;
    zkl__release_start(&u->rel[i], holds[i], member_released, u);
  }
  pthread_mutex_unlock(&ml->c->mu);
  return ZKL_OK;
}

int zkl_multilock_guarded(zkl_multilock_t *ml, zkl_op_t *ops, size_t n,
                          unsigned flags) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  int rc = holds_get(ml, holds);
  if (rc != ZKL_OK)
    return rc;
  rc = zkl__guarded(holds, ml->n, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    set_release(ml, holds); /* the nodes went with the transaction */
  return holds_put(ml, rc);
}

int zkl_multilock_verify(zkl_multilock_t *ml) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  size_t i;
  int rc = holds_get(ml, holds);
  if (rc != ZKL_OK)
    return rc;
  for (i = 0; i < ml->n && rc == ZKL_OK; i++)
    rc = zkl__queue_verify(&ml->m[i].q, holds[i]);
  return holds_put(ml, rc);
}

int zkl_multilock_state(const zkl_multilock_t *ml) {
  int worst = ZKL_STATE_NONE;
  size_t i;
  if (!ml)
    return ZKL_STATE_NONE;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  for (i = 0; ml->held && i < ml->n; i++) {
    int st = atomic_load(&ml->j.a[i]->state);
    if (rank(st) > rank(worst))
      worst = st;
  }
  pthread_mutex_unlock(&ml->c->mu);
  return worst;
}

int zkl_multilock_token(const zkl_multilock_t *ml, uint64_t *token) {
  int rc = ZKL_OK;
  if (!ml || !token)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  if (ml->held)
    *token = (uint64_t)ml->j.token;
  else
    rc = ZKL_ENOTOWNER;
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

int zkl_multilock_cancel(zkl_multilock_t *ml) {
  size_t i;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  for (i = 0; i < ml->n; i++)
    zkl__queue_cancel(&ml->m[i].q);
  /* the acquire's run, wherever it waits, looks at the generations */
  pthread_mutex_lock(&ml->c->mu);
  zkl__join_kick(&ml->j);
  pthread_mutex_unlock(&ml->c->mu);
  return ZKL_OK;
}

int zkl_multilock_destroy(zkl_multilock_t *ml) {
  zkl_client_t *c;
  int busy;
  if (!ml)
    return ZKL_OK;
  if (!zkl__handle_live(ml))
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  c = ml->c;
  pthread_mutex_lock(&c->mu);
  busy = ml->busy || ml->held;
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(ml))
    return ZKL_EINVAL;
  ml_free(ml, ml->n);
  return ZKL_OK;
}
