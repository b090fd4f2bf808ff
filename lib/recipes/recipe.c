/* SPDX-License-Identifier: Apache-2.0 */
/* recipe.c: what every recipe's object shares above the engine: the
 * checks its create makes, the reading of a caller's deadline, and its
 * list of per-thread holds (a mutex's or read-write lock's reentrancy:
 * which thread holds, through which acquisition), and its close. */
#include "config.h"

#include <stddef.h>

#include "internal.h"

int zkl__recipe_args(zkl_client_t *c, const char *name, const char *root,
                     const void *data, size_t len, unsigned flags,
                     unsigned allowed) {
  if (!c || !zkl__handle_live(c) || !zkl__valid_name(name) ||
      !zkl__valid_root(root))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  if (len > ZKL_DATA_MAX || (len && !data) || (flags & ~allowed))
    return ZKL_EINVAL;
  return ZKL_OK;
}

int zkl__deadline_mode(int64_t deadline_ms) {
  return deadline_ms == ZKL_NO_DEADLINE ? ZKL__BLOCK : ZKL__TIMED;
}

int64_t zkl__deadline_in(int64_t deadline_ms) {
  return deadline_ms == ZKL_NO_DEADLINE ? -1
         : deadline_ms < 0              ? 0
                                        : deadline_ms;
}

zkl__acq_t *zkl__hold_find(zkl__acq_t *list, uint64_t tid) {
  for (; list; list = list->hnext)
    if (list->tid == tid)
      return list;
  return NULL;
}

int zkl__hold_others(const zkl__acq_t *list, uint64_t tid) {
  for (; list; list = list->hnext)
    if (list->tid != tid)
      return 1;
  return 0;
}

void zkl__hold_unlink(zkl__acq_t **list, zkl__acq_t *a) {
  for (; *list; list = &(*list)->hnext)
    if (*list == a) {
      *list = a->hnext;
      return;
    }
}

/* An async run given up (a cancelled hold, a stopped candidacy) still
 * ends, and the event thread settles it; its done function then writes to
 * the object. A destroy called on that very thread (from a callback)
 * settles them itself: waiting for the event thread there would be
 * waiting for itself. */
void zkl__recipe_close(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  pthread_mutex_lock(&c->mu);
  while (q->async_refs > 0) {
    if (c->ended && zkl__on_event_thread(c))
      zkl__runs_settle(c);
    else
      pthread_cond_wait(&c->cv, &c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  zkl__queue_close(q);
}
