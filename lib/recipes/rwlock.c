/* SPDX-License-Identifier: Apache-2.0 */
/* rwlock.c: the reentrant distributed read-write lock.
 *
 * A policy over the queue engine, nothing more: a read hold is a node of
 * the queue's shared kind, a write hold one of its exclusive kind, and
 * policy.c's conflict rule decides who waits for whom. What is left here
 * is per-thread bookkeeping: each thread has at most one node, whose
 * acquisition counts its write levels (depth) and read levels (rdepth),
 * so only a thread's first acquire and last release reach ZooKeeper. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl_rwlock {
  zkl__queue_t q; /* first: the queue's notify() casts back */
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_rwlock_fn fn;
  void *ctx;
  zkl__acq_t *holds; /* one per thread, under c->mu */
};

static void rwlock_notify(zkl__queue_t *q, int state, uint64_t token) {
  zkl_rwlock_t *rw = (zkl_rwlock_t *)q;
  rw->fn(rw, state, token, rw->ctx);
}

int zkl_rwlock_create(zkl_rwlock_t **out, zkl_client_t *c, const char *name,
                      const zkl_rwlock_options_t *o) {
  const char *root = o && o->root ? o->root : "/locks";
  int kazoo = o && (o->flags & ZKL_RWLOCK_KAZOO);
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, name, o);
  zkl_rwlock_t *rw;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  rc = zkl__recipe_args(c, name, root, o ? o->data : NULL, o ? o->data_len : 0,
                        o ? o->flags : 0,
                        ZKL_RWLOCK_NO_NODE_WATCH | ZKL_RWLOCK_KAZOO);
  if (rc != ZKL_OK)
    return rc;
  rw = calloc(1, sizeof *rw);
  if (!rw)
    return ZKL_ENOMEM;
  rw->c = c;
  rw->fork_gen = c->fork_gen;
  rw->fn = o ? o->state_fn : NULL;
  rw->ctx = o ? o->state_ctx : NULL;
  spec.marker = kazoo ? "__lock__" : "__WRIT__";
  spec.marker_shared = kazoo ? "__rlock__" : "__READ__";
  spec.recipe = ZKL_STATS_WRITE; /* a reader's counts as ZKL_STATS_READ */
  if (o && (o->flags & ZKL_RWLOCK_NO_NODE_WATCH))
    spec.flags = ZKL__Q_NO_NODE_WATCH;
  if (kazoo)
    spec.flags |= ZKL__Q_KEEP_DIR;
  spec.notify = rw->fn ? rwlock_notify : NULL;
  if ((rc = zkl__queue_open(&rw->q, c, &spec, rw)) != ZKL_OK) {
    free(rw);
    return rc;
  }
  *out = rw;
  return ZKL_OK;
}

static int rw_usable(const zkl_rwlock_t *rw, const void *out) {
  if (!rw || !out)
    return ZKL_EINVAL;
  return zkl__forked(rw->fork_gen) ? ZKL_EFORKED : ZKL_OK;
}

static zkl__acq_t *my_hold(const zkl_rwlock_t *rw) {
  zkl__acq_t *a;
  pthread_mutex_lock(&rw->c->mu);
  a = zkl__hold_find(rw->holds, zkl__self_tid());
  pthread_mutex_unlock(&rw->c->mu);
  return a;
}

/* One more level of an existing hold, in read mode (always allowed: write
 * implies read) or write mode (only over write). */
static int rw_reenter(zkl__acq_t *a, int write) {
  unsigned *n = write ? &a->depth : &a->rdepth;
  /* acquire: revoke_asked was written before the state became LOST */
  if (atomic_load_explicit(&a->state, memory_order_acquire) ==
      ZKL_STATE_LOST)
    return zkl__lost_rc(a);
  if (write && !a->depth)
    return ZKL_EDEADLK; /* read held: an upgrade would wait for ever */
  if (*n == UINT_MAX)
    return ZKL_EOVERFLOW;
  (*n)++;
  return ZKL_OK;
}

static int rw_acquire(zkl_rwlock_t *rw, int write, int mode, int64_t deadline) {
  zkl_client_t *c;
  zkl__acq_t *a;
  uint64_t me;
  int rc;
  if (!rw)
    return ZKL_EINVAL;
  if (zkl__forked(rw->fork_gen))
    return ZKL_EFORKED;
  c = rw->c;
  me = zkl__self_tid();
  pthread_mutex_lock(&c->mu);
  a = zkl__hold_find(rw->holds, me);
  rc = a ? rw_reenter(a, write) : c->stopping ? ZKL_ECLOSED : ZKL_OK;
  if (!a && rc == ZKL_OK)
    rw->q.users++;
  pthread_mutex_unlock(&c->mu);
  if (a || rc != ZKL_OK)
    return rc;
  /* trylock and timedlock end by themselves (EBUSY, ETIMEDOUT) */
  if (mode == ZKL__BLOCK && zkl__held_elsewhere(&rw->q, me))
    rc = ZKL_EDEADLK;
  else
    rc = zkl__queue_acquire(&rw->q, mode, !write, deadline, &a);
  if (rc == ZKL_OK)
    zkl__held_add(&rw->q, me);
  pthread_mutex_lock(&c->mu);
  rw->q.users--;
  if (rc == ZKL_OK) {
    a->tid = me;
    a->depth = write;
    a->rdepth = !write;
    a->hnext = rw->holds;
    rw->holds = a;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int zkl_rwlock_rdlock(zkl_rwlock_t *rw) {
  return rw_acquire(rw, 0, ZKL__BLOCK, -1);
}

int zkl_rwlock_tryrdlock(zkl_rwlock_t *rw) {
  return rw_acquire(rw, 0, ZKL__TRY, -1);
}

int zkl_rwlock_timedrdlock(zkl_rwlock_t *rw, int64_t deadline_ms) {
  return rw_acquire(rw, 0, zkl__deadline_mode(deadline_ms),
                    zkl__deadline_in(deadline_ms));
}

int zkl_rwlock_wrlock(zkl_rwlock_t *rw) {
  return rw_acquire(rw, 1, ZKL__BLOCK, -1);
}

int zkl_rwlock_trywrlock(zkl_rwlock_t *rw) {
  return rw_acquire(rw, 1, ZKL__TRY, -1);
}

int zkl_rwlock_timedwrlock(zkl_rwlock_t *rw, int64_t deadline_ms) {
  return rw_acquire(rw, 1, zkl__deadline_mode(deadline_ms),
                    zkl__deadline_in(deadline_ms));
}

/* Final release of hold a, both modes; judge as in zkl__queue_release. */
static int rw_release(zkl_rwlock_t *rw, zkl__acq_t *a, int judge) {
  uint64_t me = a->tid;
  pthread_mutex_lock(&rw->c->mu);
  zkl__hold_unlink(&rw->holds, a);
  pthread_mutex_unlock(&rw->c->mu);
  zkl__held_remove(&rw->q, me);
  return zkl__queue_release(&rw->q, a, judge);
}

/* The write hold's last level goes while read levels stay. */
static int downgrade(zkl_rwlock_t *rw, zkl__acq_t *a) {
  int rc = zkl__queue_downgrade(&rw->q, a);
  if (rc == ZKL_ELOST)
    rw_release(rw, a, 0);
  else if (rc == ZKL_OK)
    a->depth = 0;
  return rc;
}

static int unlock(zkl_rwlock_t *rw, int write) {
  zkl__acq_t *a;
  unsigned *n;
  int rc = rw_usable(rw, rw);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(rw);
  n = a ? write ? &a->depth : &a->rdepth : NULL;
  if (!n || !*n)
    return ZKL_ENOTOWNER;
  if (atomic_load_explicit(&a->state, memory_order_relaxed) ==
      ZKL_STATE_LOST)
    return rw_release(rw, a, 1);
  if (*n > 1 || a->depth + a->rdepth > 1) {
    if (write && *n == 1)
      return downgrade(rw, a);
    (*n)--;
    return ZKL_OK;
  }
  return rw_release(rw, a, 1);
}

int zkl_rwlock_rdunlock(zkl_rwlock_t *rw) { return unlock(rw, 0); }

int zkl_rwlock_wrunlock(zkl_rwlock_t *rw) { return unlock(rw, 1); }

int zkl_rwlock_downgrade(zkl_rwlock_t *rw) {
  zkl__acq_t *a;
  int rc = rw_usable(rw, rw);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(rw);
  if (!a || !a->depth)
    return ZKL_ENOTOWNER;
  if (a->depth > 1)
    return ZKL_EBUSY;
  if ((rc = rw_reenter(a, 0)) != ZKL_OK) {
    if (rc == ZKL_ELOST)
      rw_release(rw, a, 0);
    return rc;
  }
  rc = downgrade(rw, a);
  if (rc != ZKL_OK && rc != ZKL_ELOST)
    a->rdepth--; /* still write, as before the call */
  return rc;
}

int zkl_rwlock_guarded(zkl_rwlock_t *rw, zkl_op_t *ops, size_t n,
                       unsigned flags) {
  zkl__acq_t *a;
  int rc = rw_usable(rw, rw);
  if (rc != ZKL_OK)
    return rc;
  if (!(a = my_hold(rw)))
    return ZKL_ENOTOWNER;
  if ((flags & ZKL_GUARD_RELEASE) && a->depth + a->rdepth > 1)
    return ZKL_EBUSY;
  rc = zkl__guarded(&a, 1, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    rw_release(rw, a, 1); /* the node went with the transaction: frees only */
  return rc;
}

int zkl_rwlock_cancel(zkl_rwlock_t *rw) {
  int rc = rw_usable(rw, rw);
  if (rc != ZKL_OK)
    return rc;
  zkl__queue_cancel(&rw->q);
  return ZKL_OK;
}

int zkl_rwlock_verify(zkl_rwlock_t *rw) {
  zkl__acq_t *a;
  int rc = rw_usable(rw, rw);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(rw);
  if (!a)
    return ZKL_ENOTOWNER;
  return zkl__queue_verify(&rw->q, a); /* only this thread frees a */
}

int zkl_rwlock_state(const zkl_rwlock_t *rw) {
  const zkl__acq_t *a;
  if (rw && zkl__forked(rw->fork_gen))
    return ZKL_EFORKED;
  a = rw ? my_hold(rw) : NULL;
  return a ? atomic_load(&a->state) : ZKL_STATE_NONE;
}

void zkl_rwlock_depth(const zkl_rwlock_t *rw, unsigned *rd, unsigned *wr) {
  const zkl__acq_t *a =
      rw && !zkl__forked(rw->fork_gen) ? my_hold(rw) : NULL;
  if (rd)
    *rd = a ? a->rdepth : 0;
  if (wr)
    *wr = a ? a->depth : 0;
}

int zkl_rwlock_token(const zkl_rwlock_t *rw, uint64_t *token) {
  const zkl__acq_t *a;
  int rc = rw_usable(rw, token);
  if (rc != ZKL_OK)
    return rc;
  a = my_hold(rw);
  if (!a)
    return ZKL_ENOTOWNER;
  *token = (uint64_t)a->czxid;
  return ZKL_OK;
}

int zkl_rwlock_node_path(const zkl_rwlock_t *rw, char *buf, size_t size) {
  int rc = rw_usable(rw, buf);
  return rc != ZKL_OK ? rc : zkl__acq_path(my_hold(rw), buf, size);
}

int zkl_rwlock_rdlock_async(zkl_rwlock_t *rw, int64_t deadline_ms,
                            zkl_hold_fn fn, void *arg, zkl_hold_t **hold) {
  int rc;
  if (hold) /* NULL whatever the failure, as the header promises */
    *hold = NULL;
  rc = rw_usable(rw, rw);
  return rc != ZKL_OK ? rc
                      : zkl__hold_start(&rw->q, 1, deadline_ms, fn, arg, hold);
}

int zkl_rwlock_wrlock_async(zkl_rwlock_t *rw, int64_t deadline_ms,
                            zkl_hold_fn fn, void *arg, zkl_hold_t **hold) {
  int rc;
  if (hold) /* NULL whatever the failure, as the header promises */
    *hold = NULL;
  rc = rw_usable(rw, rw);
  return rc != ZKL_OK ? rc
                      : zkl__hold_start(&rw->q, 0, deadline_ms, fn, arg, hold);
}

int zkl_rwlock_destroy(zkl_rwlock_t *rw) {
  zkl_client_t *c;
  zkl__acq_t *mine;
  int busy;
  uint64_t me = zkl__self_tid();
  if (!rw)
    return ZKL_OK;
  if (!zkl__handle_live(rw))
    return ZKL_EINVAL;
  if (zkl__forked(rw->fork_gen))
    return ZKL_EFORKED;
  c = rw->c;
  pthread_mutex_lock(&c->mu);
  busy = zkl__hold_others(rw->holds, me) || rw->q.users > 0 ||
         rw->q.async > 0;
  mine = zkl__hold_find(rw->holds, me);
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(rw))
    return ZKL_EINVAL;
  if (mine)
    rw_release(rw, mine, 0);
  zkl__recipe_close(&rw->q);
  free(rw);
  return ZKL_OK;
}
