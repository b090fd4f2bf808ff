/* SPDX-License-Identifier: Apache-2.0 */
/* semaphore.c: the counting semaphore.
 *
 * A policy over the queue engine: a lease is a node of kind LEASE, the
 * queue's limit is N, and policy.c's decide_lease says who holds (the N
 * lowest leases) and whom to watch. Each lease's name carries N
 * (zkl__lease_limit), and a lease of another N before ours is in our way
 * as a lock is; the engine refuses a member whose N the directory's data
 * does not say (q->dir_data: recover.c, "agreeing on N"). It also relays
 * a grant after a wait to the next waiter. What is left here is the lease
 * handle: not owned by a thread, released once by any. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl_semaphore {
  zkl__queue_t q; /* first: the queue's notify() casts back */
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_semaphore_fn fn;
  void *ctx;
  int leases; /* not released yet (under c->mu) */
  char marker[24]; /* "-n<N>-lease-": q.marker points here */
};

struct zkl_lease {
  zkl_semaphore_t *sem;
  zkl__acq_t *a;
};

static void sem_notify(zkl__queue_t *q, int state, uint64_t token) {
  zkl_semaphore_t *sem = (zkl_semaphore_t *)q;
  sem->fn(sem, state, token, sem->ctx);
}

int zkl_semaphore_create(zkl_semaphore_t **out, zkl_client_t *c,
                         const char *name, unsigned leases,
                         const zkl_semaphore_options_t *o) {
  const char *root = o && o->root ? o->root : "/locks";
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, name, o);
  zkl_semaphore_t *sem;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  rc = zkl__recipe_args(c, name, root, o ? o->data : NULL, o ? o->data_len : 0,
                        o ? o->flags : 0, 0);
  if (rc != ZKL_OK)
    return rc;
  if (leases < 1 || leases > ZKL_LEASES_MAX)
    return ZKL_EINVAL;
  sem = calloc(1, sizeof *sem);
  if (!sem)
    return ZKL_ENOMEM;
  sem->c = c;
  sem->fork_gen = c->fork_gen;
  sem->fn = o ? o->state_fn : NULL;
  sem->ctx = o ? o->state_ctx : NULL;
  snprintf(sem->marker, sizeof sem->marker, "-n%u-lease-", leases);
  spec.marker = sem->marker;
  spec.limit = (int)leases;
  spec.recipe = ZKL_STATS_SEMAPHORE;
  spec.notify = sem->fn ? sem_notify : NULL;
  if ((rc = zkl__queue_open(&sem->q, c, &spec, sem)) != ZKL_OK) {
    free(sem);
    return rc;
  }
  *out = sem;
  return ZKL_OK;
}

static int lease_acquire(zkl_semaphore_t *sem, int mode, int64_t deadline,
                         zkl_lease_t **out) {
  zkl_client_t *c;
  zkl_lease_t *l;
  int rc, entered;
  if (out) /* NULL whatever the failure, as the header promises */
    *out = NULL;
  if (!sem || !out)
    return ZKL_EINVAL;
  if (zkl__forked(sem->fork_gen))
    return ZKL_EFORKED;
  if (!(l = calloc(1, sizeof *l)))
    return ZKL_ENOMEM;
  c = sem->c;
  pthread_mutex_lock(&c->mu);
  rc = c->stopping ? ZKL_ECLOSED : ZKL_OK;
  entered = rc == ZKL_OK;
  sem->q.users += entered;
  pthread_mutex_unlock(&c->mu);
  if (rc == ZKL_OK)
    rc = zkl__queue_acquire(&sem->q, mode, 0, deadline, &l->a);
  if (rc == ZKL_OK && (rc = zkl__handle_add(l)) != ZKL_OK)
    zkl__queue_release(&sem->q, l->a, 0);
  pthread_mutex_lock(&c->mu);
  sem->q.users -= entered;
  if (rc == ZKL_OK)
    sem->leases++;
  pthread_mutex_unlock(&c->mu);
  if (rc != ZKL_OK) {
    free(l);
    return rc;
  }
  l->sem = sem;
  *out = l;
  return ZKL_OK;
}

int zkl_semaphore_acquire(zkl_semaphore_t *sem, zkl_lease_t **lease) {
  return lease_acquire(sem, ZKL__BLOCK, -1, lease);
}

int zkl_semaphore_tryacquire(zkl_semaphore_t *sem, zkl_lease_t **lease) {
  return lease_acquire(sem, ZKL__TRY, -1, lease);
}

int zkl_semaphore_timedacquire(zkl_semaphore_t *sem, int64_t deadline_ms,
                               zkl_lease_t **lease) {
  return lease_acquire(sem, zkl__deadline_mode(deadline_ms),
                       zkl__deadline_in(deadline_ms), lease);
}

int zkl_semaphore_acquire_async(zkl_semaphore_t *sem, int64_t deadline_ms,
                                zkl_hold_fn fn, void *arg, zkl_hold_t **hold) {
  if (hold) /* NULL whatever the failure, as the header promises */
    *hold = NULL;
  if (!sem)
    return ZKL_EINVAL;
  if (zkl__forked(sem->fork_gen))
    return ZKL_EFORKED;
  return zkl__hold_start(&sem->q, 0, deadline_ms, fn, arg, hold);
}

int zkl_semaphore_cancel(zkl_semaphore_t *sem) {
  if (!sem)
    return ZKL_EINVAL;
  if (zkl__forked(sem->fork_gen))
    return ZKL_EFORKED;
  zkl__queue_cancel(&sem->q);
  return ZKL_OK;
}

int zkl_semaphore_destroy(zkl_semaphore_t *sem) {
  zkl_client_t *c;
  int busy;
  if (!sem)
    return ZKL_OK;
  if (!zkl__handle_live(sem))
    return ZKL_EINVAL;
  if (zkl__forked(sem->fork_gen))
    return ZKL_EFORKED;
  c = sem->c;
  pthread_mutex_lock(&c->mu);
  busy = sem->leases > 0 || sem->q.users > 0 || sem->q.async > 0;
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(sem))
    return ZKL_EINVAL;
  zkl__recipe_close(&sem->q);
  free(sem);
  return ZKL_OK;
}

/* The lease's checks: a live lease, not inherited across fork(). */
static int lease_usable(const zkl_lease_t *l) {
  if (!l || !zkl__handle_live(l))
    return ZKL_EINVAL;
  return zkl__forked(l->sem->fork_gen) ? ZKL_EFORKED : ZKL_OK;
}

int zkl_lease_release(zkl_lease_t *l) {
  zkl_semaphore_t *sem;
  int rc = lease_usable(l);
  if (rc != ZKL_OK)
    return rc;
  if (!zkl__handle_remove(l))
    return ZKL_EINVAL; /* released by another thread meanwhile */
  sem = l->sem;
  rc = zkl__queue_release(&sem->q, l->a, 1);
  pthread_mutex_lock(&sem->c->mu);
  sem->leases--;
  pthread_cond_broadcast(&sem->c->cv);
  pthread_mutex_unlock(&sem->c->mu);
  free(l);
  return rc;
}

int zkl_lease_state(const zkl_lease_t *l) {
  int rc = lease_usable(l);
  return rc != ZKL_OK ? rc : atomic_load(&l->a->state);
}

int zkl_lease_token(const zkl_lease_t *l, uint64_t *token) {
  int rc = lease_usable(l);
  if (rc != ZKL_OK)
    return rc;
  if (!token)
    return ZKL_EINVAL;
  *token = (uint64_t)l->a->czxid;
  return ZKL_OK;
}

int zkl_lease_verify(zkl_lease_t *l) {
  int rc = lease_usable(l);
  return rc != ZKL_OK ? rc : zkl__queue_verify(&l->sem->q, l->a);
}

int zkl_lease_guarded(zkl_lease_t *l, zkl_op_t *ops, size_t n,
                      unsigned flags) {
  int rc = lease_usable(l);
  if (rc != ZKL_OK)
    return rc;
  rc = zkl__guarded(&l->a, 1, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    zkl_lease_release(l); /* the node went with the transaction */
  return rc;
}

int zkl_lease_node_path(const zkl_lease_t *l, char *buf, size_t size) {
  int rc = lease_usable(l);
  if (rc != ZKL_OK)
    return rc;
  return buf ? zkl__acq_path(l->a, buf, size) : ZKL_EINVAL;
}
