/* SPDX-License-Identifier: Apache-2.0 */
/* held.c: which thread holds which lock through which object.
 *
 * Kept across every client and recipe of the process: a thread that
 * blocks on a second object naming a lock it already holds (a mutex and a
 * read-write lock on one name, or two objects of one kind) would wait
 * behind itself for ever. Best effort: without memory the check is
 * skipped, nothing else. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct held {
  const zkl__queue_t *q;
  uint64_t tid;
  struct held *next;
};
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct held *held_list;

static int same_queue(const zkl__queue_t *a, const zkl__queue_t *b) {
  return strcmp(a->dir, b->dir) == 0 && strcmp(a->c->hosts, b->c->hosts) == 0;
}

int zkl__held_elsewhere(const zkl__queue_t *q, uint64_t tid) {
  struct held *h;
  int found = 0;
  pthread_mutex_lock(&held_mu);
  for (h = held_list; h && !found; h = h->next)
    found = h->tid == tid && h->q != q && same_queue(h->q, q);
  pthread_mutex_unlock(&held_mu);
  return found;
}

void zkl__held_add(const zkl__queue_t *q, uint64_t tid) {
  struct held *h = malloc(sizeof *h);
  if (!h)
    return;
  h->q = q;
  h->tid = tid;
  pthread_mutex_lock(&held_mu);
  h->next = held_list;
  held_list = h;
  pthread_mutex_unlock(&held_mu);
}

void zkl__held_remove(const zkl__queue_t *q, uint64_t tid) {
  struct held **pp, *h;
  pthread_mutex_lock(&held_mu);
  for (pp = &held_list; (h = *pp); pp = &h->next)
    if (h->q == q && h->tid == tid) {
      *pp = h->next;
      free(h);
      break;
    }
  pthread_mutex_unlock(&held_mu);
}
