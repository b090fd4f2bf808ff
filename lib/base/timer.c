/* SPDX-License-Identifier: Apache-2.0 */
/* timer.c: the client's timers, one heap that the event thread sleeps on.
 *
 * A timer is a due time and a function, embedded in what it is for (an
 * acquisition's own-node watch, a parked run's wake). The heap keeps the
 * earliest at its root, so the event thread finds the next due time at
 * once and fires only what is due: no walk over every acquisition, which
 * with thousands of holds cost O(n) each time one was due.
 *
 * It is a pairing heap: intrusive (adding or removing a timer never
 * allocates, so it never fails), O(1) to add, and O(log n) amortized to
 * take the earliest or remove any one. All under c->mu. */
#include "config.h"

#include "internal.h"

/* Links b under a (b's due is not earlier); returns a. */
static zkl__timer_t *link_under(zkl__timer_t *a, zkl__timer_t *b) {
  b->prev = a;
  b->sibling = a->child;
  if (a->child)
    a->child->prev = b;
  a->child = b;
  return a;
}

/* The heap of the two heaps a and b (either may be NULL), roots alone. */
static zkl__timer_t *meld(zkl__timer_t *a, zkl__timer_t *b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return b->due < a->due ? link_under(b, a) : link_under(a, b);
}

/* One heap of a list of sibling heaps: melded in pairs from the left,
 * then the pairs melded from the right. Iterative, so that a root with
 * thousands of children (after as many adds) needs no deep stack. */
static zkl__timer_t *merge_siblings(zkl__timer_t *first) {
  zkl__timer_t *pairs = NULL, *a, *b, *next, *h;
  while (first) {
    a = first;
    b = a->sibling;
    next = b ? b->sibling : NULL;
    a->sibling = a->prev = NULL;
    if (b)
      b->sibling = b->prev = NULL;
    h = meld(a, b);
    h->sibling = pairs; /* the pairs, newest first */
    pairs = h;
    first = next;
  }
  h = NULL;
  while (pairs) {
    next = pairs->sibling;
    pairs->sibling = NULL;
    h = meld(h, pairs);
    pairs = next;
  }
  return h;
}

void zkl__timer_stop(zkl_client_t *c, zkl__timer_t *t) {
  zkl__timer_t *sub;
  if (!t->armed)
    return;
  t->armed = 0;
  sub = merge_siblings(t->child);
  t->child = NULL;
  if (t == c->timers) {
    c->timers = sub;
  } else {
    /* t->prev is its parent when t is the first child, else its left
     * sibling */
    if (t->prev->child == t)
      t->prev->child = t->sibling;
    else
      t->prev->sibling = t->sibling;
    if (t->sibling)
      t->sibling->prev = t->prev;
    c->timers = meld(c->timers, sub);
  }
  t->sibling = t->prev = NULL;
  c->ntimers--;
}

void zkl__timer_set(zkl_client_t *c, zkl__timer_t *t, int64_t due,
                    void (*fire)(zkl__timer_t *)) {
  zkl__timer_stop(c, t);
  t->due = due;
  t->fire = fire;
  t->armed = 1;
  c->timers = meld(c->timers, t);
  c->ntimers++;
  /* The event thread sleeps until its next due time: wake it only when
   * it sleeps and this one is earlier. Awake, it reads the heap before it
   * sleeps again (loop.c). Waking it for every hold would cost a context
   * switch and a fight for c->mu per cycle. */
  if (c->timers == t && c->ev_asleep && (!c->ev_wake_at || c->ev_wake_at > due))
    pthread_cond_broadcast(&c->cv);
}

int64_t zkl__timers_fire(zkl_client_t *c, int64_t now) {
  zkl__timer_t *t;
  while ((t = c->timers) && t->due <= now) {
    zkl__timer_stop(c, t);
    t->fire(t); /* it may set or stop any timer, itself included */
  }
  return c->timers ? c->timers->due : 0;
}
