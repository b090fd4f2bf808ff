/* SPDX-License-Identifier: Apache-2.0 */
/* wake.c: waking a blocked caller once the waker has let c->mu go.
 *
 * A transaction's answer (batch.c) may end the waits of dozens of callers
 * at once, all under one hold of c->mu. A caller woken while c->mu is
 * still held wakes only to find it taken and sleeps again: two context
 * switches per wake instead of one, with dozens of callers on one client.
 * So a thread that answers a batch defers its wakes (zkl__wake_defer) and
 * makes them once it has let c->mu go (zkl__wake_flush). The waiter's
 * predicate is set under c->mu before the wake is queued, so no wake is
 * lost. Until a deferred wake is made, its condition variable must live:
 * it is pinned, and whoever would free or destroy it first waits for the
 * pin to go (zkl__wake_settle), which takes a moment: the waker is between
 * its unlock and its broadcast. */
#include "config.h"

#include <sched.h>

#include "internal.h"

/* More wakes than a transaction has ops (batch.c OPS_MAX) are made at once */
#define WAKES_MAX 512

typedef struct {
  pthread_cond_t *cv;
  atomic_int *pin;
} wake_t;

static __thread wake_t wakes[WAKES_MAX];
static __thread int nwakes, deferring;

void zkl__wake_defer(void) { deferring = 1; }

void zkl__wake(pthread_cond_t *cv, atomic_int *pin) {
  if (!deferring || nwakes == WAKES_MAX) {
    pthread_cond_broadcast(cv);
    return;
  }
  atomic_fetch_add(pin, 1);
  wakes[nwakes].cv = cv;
  wakes[nwakes].pin = pin;
  nwakes++;
}

void zkl__wake_flush(void) {
  int i;
  for (i = 0; i < nwakes; i++) {
    pthread_cond_broadcast(wakes[i].cv);
    atomic_fetch_sub(wakes[i].pin, 1); /* the last use of it */
  }
  nwakes = 0;
  deferring = 0;
}

void zkl__wake_settle(atomic_int *pin) {
  while (atomic_load(pin) > 0)
    sched_yield();
}
