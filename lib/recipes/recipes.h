/* SPDX-License-Identifier: Apache-2.0 */
/* recipes.h: the top layer (lib/recipes/): the public objects, each a
 * thin policy over the engine: the client, mutex, read-write lock,
 * semaphore, election, multi-lock, revocation, and the holds of async
 * acquires (hold.c); what they share (recipe.c). Included by internal.h
 * only. */

/* hold.c: an asynchronous acquire on q (a recipe's, checked; deadline_ms
 * as the caller gave it): starts it, and hands the outcome to fn on the
 * callback thread. The notice that delivers it (notice.c: post under
 * c->mu; unpost: taken back before delivery, 1 if it was still queued;
 * deliver: no lock held). */
ZKL__HIDDEN int zkl__hold_start(zkl__queue_t *q, int shared,
                                int64_t deadline_ms, zkl_hold_fn fn,
                                void *arg, zkl_hold_t **out);
/* The checks every recipe's create makes: a live client not inherited
 * across fork(), a valid name and root, data within ZKL_DATA_MAX, no flag
 * outside `allowed`. ZKL_OK, ZKL_EINVAL or ZKL_EFORKED. */
ZKL__HIDDEN int zkl__recipe_args(zkl_client_t *c, const char *name,
                                 const char *root, const void *data,
                                 size_t len, unsigned flags,
                                 unsigned allowed);
/* A caller's deadline_ms (zklock.h, TIME) in the terms of the engine and
 * of the waits below it, which know no ZKL_NO_DEADLINE: the mode of an
 * acquire (ZKL__BLOCK for ZKL_NO_DEADLINE, else ZKL__TIMED), and the time
 * (-1, their "none", for ZKL_NO_DEADLINE; 0, as passed, for a negative
 * one). Converted here, at the public calls, so that neither the
 * constant nor a negative time ever becomes a struct timespec. */
ZKL__HIDDEN int zkl__deadline_mode(int64_t deadline_ms);
ZKL__HIDDEN int64_t zkl__deadline_in(int64_t deadline_ms);
/* A recipe's per-thread holds, linked by hnext (under c->mu): the hold of
 * thread tid, whether a thread other than tid holds, and removal. */
ZKL__HIDDEN zkl__acq_t *zkl__hold_find(zkl__acq_t *list, uint64_t tid);
ZKL__HIDDEN int zkl__hold_others(const zkl__acq_t *list, uint64_t tid);
ZKL__HIDDEN void zkl__hold_unlink(zkl__acq_t **list, zkl__acq_t *a);
/* A recipe's destroy, once nothing of the object is in use: closes q
 * (zkl__queue_close) after the async runs given up on it have ended and
 * been settled. Caller holds no lock. */
ZKL__HIDDEN void zkl__recipe_close(zkl__queue_t *q);
