/* SPDX-License-Identifier: Apache-2.0 */
/* mutex.c: the reentrant distributed mutex.
 *
 * Reentrancy is per thread and costs no request: the thread that holds the
 * mutex finds itself in owner_tid (one relaxed atomic load) and only counts.
 * owner_acq is read and written by that thread alone. Every hold is also on
 * the mutex's `holds` list under c->mu, so a thread whose hold was LOST can
 * still unlock it after another thread took the lock (and the fast slot). */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl_mutex {
  zkl__queue_t q; /* first: the queue's notify() casts back */
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_state_fn fn;
  void *ctx;
  _Atomic uint64_t owner_tid;
  zkl__acq_t *owner_acq;
  zkl__acq_t *holds;
};

static void mutex_notify(zkl__queue_t *q, int state, uint64_t token) {
  zkl_mutex_t *m = (zkl_mutex_t *)q;
  m->fn(m, state, token, m->ctx);
}

int zkl_mutex_create(zkl_mutex_t **out, zkl_client_t *c, const char *name,
                     const zkl_mutex_options_t *o) {
  const char *root = o && o->root ? o->root : "/locks";
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, name, o);
  zkl_mutex_t *m;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  rc = zkl__recipe_args(c, name, root, o ? o->data : NULL, o ? o->data_len : 0,
                        o ? o->flags : 0,
                        ZKL_MUTEX_NO_NODE_WATCH | ZKL_MUTEX_KAZOO |
                            ZKL_MUTEX_FLAT);
  if (rc != ZKL_OK)
    return rc;
  /* a flat lock has no queue whose nodes kazoo could name */
  if (o && (o->flags & ZKL_MUTEX_FLAT) && (o->flags & ZKL_MUTEX_KAZOO))
    return ZKL_EINVAL;
  m = calloc(1, sizeof *m);
  if (!m)
    return ZKL_ENOMEM;
  m->c = c;
  m->fork_gen = c->fork_gen;
  m->fn = o ? o->state_fn : NULL;
  m->ctx = o ? o->state_ctx : NULL;
  spec.marker = o && (o->flags & ZKL_MUTEX_KAZOO) ? "__lock__" : "-lock-";
  if (o && (o->flags & ZKL_MUTEX_NO_NODE_WATCH))
    spec.flags = ZKL__Q_NO_NODE_WATCH;
  if (o && (o->flags & ZKL_MUTEX_KAZOO))
    spec.flags |= ZKL__Q_KEEP_DIR;
  if (o && (o->flags & ZKL_MUTEX_FLAT)) {
    spec.flags |= ZKL__Q_FLAT;
    spec.recipe = ZKL_STATS_FLAT;
  }
  spec.notify = m->fn ? mutex_notify : NULL;
  if ((rc = zkl__queue_open(&m->q, c, &spec, m)) != ZKL_OK) {
    free(m);
    return rc;
  }
  *out = m;
  return ZKL_OK;
}

/* The argument checks of every call but the fast path's: m and the out
 * parameter given, m not inherited across fork(). */
static int mutex_usable(const zkl_mutex_t *m, const void *out) {
  if (!m || !out)
    return ZKL_EINVAL;
  return zkl__forked(m->fork_gen) ? ZKL_EFORKED : ZKL_OK;
}

/* The calling thread's hold, without a lock when it owns the fast slot. */
static zkl__acq_t *my_hold(const zkl_mutex_t *m) {
  uint64_t me = zkl__self_tid();
  zkl__acq_t *a;
  if (atomic_load_explicit(&m->owner_tid, memory_order_relaxed) == me)
    return m->owner_acq;
  pthread_mutex_lock(&m->c->mu);
  a = zkl__hold_find(m->holds, me);
  pthread_mutex_unlock(&m->c->mu);
  return a;
}

static int mutex_reenter(zkl__acq_t *a) {
  /* acquire: revoke_asked was written before the state became LOST */
  if (atomic_load_explicit(&a->state, memory_order_acquire) ==
      ZKL_STATE_LOST)
    return zkl__lost_rc(a);
  if (a->depth == UINT_MAX)
    return ZKL_EOVERFLOW;
  a->depth++;
  return ZKL_OK;
}

/* The first acquire of a thread (or a nested one off the fast slot). Kept
 * out of line so that the reentrant fast path pays no prologue. */
__attribute__((noinline)) static int acquire_slow(zkl_mutex_t *m, int mode,
                                                  int64_t deadline,
                                                  uint64_t me) {
  uint64_t zero = 0;
  zkl_client_t *c;
  zkl__acq_t *a;
  int rc;
  c = m->c;
  /* trylock and timedlock end by themselves (EBUSY, ETIMEDOUT) */
  if (mode == ZKL__BLOCK && zkl__held_elsewhere(&m->q, me))
    return ZKL_EDEADLK;
  pthread_mutex_lock(&c->mu);
  a = zkl__hold_find(m->holds, me);
  rc = a ? mutex_reenter(a) : c->stopping ? ZKL_ECLOSED : ZKL_OK;
  if (!a && rc == ZKL_OK)
    m->q.users++;
  pthread_mutex_unlock(&c->mu);
  if (a || rc != ZKL_OK)
    return rc;
  rc = zkl__queue_acquire(&m->q, mode, 0, deadline, &a);
  if (rc == ZKL_OK)
    zkl__held_add(&m->q, me);
  pthread_mutex_lock(&c->mu);
  m->q.users--;
  if (rc == ZKL_OK) {
    a->tid = me;
    a->depth = 1;
    a->hnext = m->holds;
    m->holds = a;
  }
  pthread_mutex_unlock(&c->mu);
  if (rc == ZKL_OK &&
      atomic_compare_exchange_strong_explicit(&m->owner_tid, &zero, me,
                                              memory_order_acq_rel,
                                              memory_order_relaxed))
    m->owner_acq = a;
  return rc;
}

static inline int mutex_acquire(zkl_mutex_t *m, int mode, int64_t deadline) {
  uint64_t me;
  if (!m)
    return ZKL_EINVAL;
  if (zkl__forked(m->fork_gen))
    return ZKL_EFORKED;
  me = zkl__self_tid();
  if (atomic_load_explicit(&m->owner_tid, memory_order_relaxed) == me)
    return mutex_reenter(m->owner_acq);
  return acquire_slow(m, mode, deadline, me);
}

int zkl_mutex_lock(zkl_mutex_t *m) { return mutex_acquire(m, ZKL__BLOCK, -1); }

int zkl_mutex_trylock(zkl_mutex_t *m) { return mutex_acquire(m, ZKL__TRY, -1); }

int zkl_mutex_timedlock(zkl_mutex_t *m, int64_t deadline_ms) {
  return mutex_acquire(m, zkl__deadline_mode(deadline_ms),
                       zkl__deadline_in(deadline_ms));
}

/* Final release of hold a (depth reaching 0, or a lost hold); judge as in
 * zkl__queue_release: only an unlock reports on the hold it ends. */
static int mutex_release(zkl_mutex_t *m, zkl__acq_t *a, int judge) {
  uint64_t me = a->tid;
  if (atomic_load_explicit(&m->owner_tid, memory_order_relaxed) == me) {
    m->owner_acq = NULL;
    atomic_store_explicit(&m->owner_tid, 0, memory_order_release);
  }
  pthread_mutex_lock(&m->c->mu);
  zkl__hold_unlink(&m->holds, a);
  pthread_mutex_unlock(&m->c->mu);
  zkl__held_remove(&m->q, me);
  return zkl__queue_release(&m->q, a, judge);
}

int zkl_mutex_unlock(zkl_mutex_t *m) {
  zkl__acq_t *a;
  int rc = mutex_usable(m, m);
  if (rc != ZKL_OK)
    return rc;
  if (atomic_load_explicit(&m->owner_tid, memory_order_relaxed) ==
      zkl__self_tid())
    a = m->owner_acq; /* fast path: no call, no lock */
  else
    a = my_hold(m);
  if (!a)
    return ZKL_ENOTOWNER;
  if (a->depth > 1 &&
      atomic_load_explicit(&a->state, memory_order_relaxed) !=
          ZKL_STATE_LOST) {
    a->depth--;
    return ZKL_OK;
  }
  return mutex_release(m, a, 1);
}

int zkl_mutex_guarded(zkl_mutex_t *m, zkl_op_t *ops, size_t n,
                      unsigned flags) {
  zkl__acq_t *a;
  int rc = mutex_usable(m, m);
  if (rc != ZKL_OK)
    return rc;
  if (!(a = my_hold(m)))
    return ZKL_ENOTOWNER;
  if ((flags & ZKL_GUARD_RELEASE) && a->depth > 1)
    return ZKL_EBUSY;
  rc = zkl__guarded(&a, 1, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    mutex_release(m, a, 1); /* the node went with the transaction: frees only */
  return rc;
}

int zkl_mutex_lock_async(zkl_mutex_t *m, int64_t deadline_ms, zkl_hold_fn fn,
                         void *arg, zkl_hold_t **hold) {
  int rc;
  if (hold) /* NULL whatever the failure, as the header promises */
    *hold = NULL;
  rc = mutex_usable(m, m);
  return rc != ZKL_OK ? rc
                      : zkl__hold_start(&m->q, 0, deadline_ms, fn, arg, hold);
}

int zkl_mutex_cancel(zkl_mutex_t *m) {
  int rc = mutex_usable(m, m);
  if (rc != ZKL_OK)
    return rc;
  zkl__queue_cancel(&m->q);
  return ZKL_OK;
}

int zkl_mutex_destroy(zkl_mutex_t *m) {
  zkl_client_t *c;
  zkl__acq_t *mine;
  int busy;
  uint64_t me = zkl__self_tid();
  if (!m)
    return ZKL_OK;
  if (!zkl__handle_live(m))
    return ZKL_EINVAL;
  if (zkl__forked(m->fork_gen))
    return ZKL_EFORKED; /* its lock may be held by a thread of the parent */
  c = m->c;
  pthread_mutex_lock(&c->mu);
  busy = zkl__hold_others(m->holds, me) || m->q.users > 0 || m->q.async > 0;
  mine = zkl__hold_find(m->holds, me);
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(m))
    return ZKL_EINVAL;
  if (mine)
    mutex_release(m, mine, 0); /* a failed delete is deferred or moot: see header */
  zkl__recipe_close(&m->q);
  free(m);
  return ZKL_OK;
}

int zkl_mutex_state(const zkl_mutex_t *m) {
  const zkl__acq_t *a;
  if (m && zkl__forked(m->fork_gen))
    return ZKL_EFORKED;
  a = m ? my_hold(m) : NULL;
  return a ? atomic_load(&a->state) : ZKL_STATE_NONE;
}

unsigned zkl_mutex_depth(const zkl_mutex_t *m) {
  const zkl__acq_t *a = m && !zkl__forked(m->fork_gen) ? my_hold(m) : NULL;
  return a ? a->depth : 0;
}

int zkl_mutex_token(const zkl_mutex_t *m, uint64_t *token) {
  const zkl__acq_t *a;
  int rc = mutex_usable(m, token);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(m);
  if (!a)
    return ZKL_ENOTOWNER;
  *token = (uint64_t)a->czxid;
  return ZKL_OK;
}

int zkl_mutex_node_path(const zkl_mutex_t *m, char *buf, size_t size) {
  int rc = mutex_usable(m, buf);
  return rc != ZKL_OK ? rc : zkl__acq_path(my_hold(m), buf, size);
}

int zkl_mutex_queue(zkl_client_t *c, const char *root, const char *name,
                    zkl_contender_t **out, size_t *count) {
  return zkl__list_named(c, root ? root : "/locks", name, out, count);
}

int zkl_mutex_verify(zkl_mutex_t *m) {
  zkl__acq_t *a;
  int rc = mutex_usable(m, m);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(m);
  if (!a)
    return ZKL_ENOTOWNER;
  return zkl__queue_verify(&m->q, a); /* only this thread frees a */
}
