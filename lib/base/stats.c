/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c: the client's counters and histograms, and zkl_client_stats().
 * The layers above add to them where things happen (run.c settle() for
 * acquires, acq.c for losses, session.c, call.c and batch.c for the
 * wire); each is a relaxed atomic, so nothing here takes a lock and a
 * reader never stops a writer. */
#include "config.h"

#include <string.h>
#include <time.h>

#include "internal.h"

int64_t zkl__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int zkl__stats_bucket(int64_t v) {
  int b;
  if (v < 2)
    return 0;
  b = 63 - __builtin_clzll((unsigned long long)v); /* floor(log2 v) */
  return b < ZKL_STATS_BUCKETS ? b : ZKL_STATS_BUCKETS - 1;
}

void zkl__stats_time(zkl__hist_t *h, int64_t since_us) {
  int64_t v = zkl__now_us() - since_us;
  if (v < 0)
    v = 0;
  zkl__stat_add(&h->bucket[zkl__stats_bucket(v)], 1);
  zkl__stat_add(&h->sum_us, (uint64_t)v);
  zkl__stat_add(&h->count, 1);
}

void zkl__stats_transaction(zkl__stats_t *st, int ops) {
  zkl__stat_add(&st->transactions, 1);
  zkl__stat_add(&st->transaction_ops, (uint64_t)ops);
}

static int outcome(int rc) {
  switch (rc) {
  case ZKL_OK: return ZKL_STATS_OK;
  case ZKL_ETIMEDOUT:
  case ZKL_EBUSY: return ZKL_STATS_TIMEDOUT; /* a try: a timeout of zero */
  case ZKL_ECANCELED: return ZKL_STATS_CANCELED;
  default: return ZKL_STATS_ERROR;
  }
}

void zkl__stats_acquire(zkl__stats_t *st, int recipe, int rc, int contended,
                        int handoff, int64_t start_us) {
  int o = outcome(rc);
  zkl__stat_add(&st->acquires[recipe][o], 1);
  if (contended || o == ZKL_STATS_TIMEDOUT)
    zkl__stat_add(&st->contended, 1);
  if (o == ZKL_STATS_OK && handoff)
    zkl__stat_add(&st->handoffs, 1);
  if (o == ZKL_STATS_OK)
    zkl__stats_time(&st->wait, start_us);
}

static uint64_t ld(const _Atomic uint64_t *v) {
  return atomic_load_explicit(v, memory_order_relaxed);
}

static void hist_copy(zkl_stats_histogram_t *out, const zkl__hist_t *h) {
  int i;
  for (i = 0; i < ZKL_STATS_BUCKETS; i++)
    out->bucket[i] = ld(&h->bucket[i]);
  out->count = ld(&h->count);
  out->sum_us = ld(&h->sum_us);
}

static void copy(zkl_client_stats_t *o, const zkl__stats_t *st) {
  int i, j;
  for (i = 0; i < ZKL_STATS_RECIPES; i++)
    for (j = 0; j < ZKL_STATS_OUTCOMES; j++)
      o->acquires[i][j] = ld(&st->acquires[i][j]);
  o->contended = ld(&st->contended);
  o->handoffs = ld(&st->handoffs);
  o->lost = ld(&st->lost);
  o->revoked = ld(&st->revoked);
  o->forced = ld(&st->forced);
  o->sessions_expired = ld(&st->expired);
  o->reconnections = ld(&st->reconnections);
  for (i = 0; i < ZKL_STATS_REQ_KINDS; i++)
    o->requests[i] = ld(&st->requests[i]);
  o->transactions = ld(&st->transactions);
  o->transaction_ops = ld(&st->transaction_ops);
  hist_copy(&o->wait, &st->wait);
  hist_copy(&o->hold, &st->hold);
}

int zkl_client_stats(const zkl_client_t *c, zkl_client_stats_t *out) {
  zkl_client_stats_t all;
  size_t n;
  if (!c || !out || out->size < 8)
    return ZKL_EINVAL;
  /* the caller's struct may be older (shorter) or newer (longer) than
   * ours: fill what both know, zero the rest of theirs */
  n = out->size < sizeof all ? out->size : sizeof all;
  memset(&all, 0, sizeof all);
  copy(&all, &c->stats);
  all.size = (uint32_t)n;
  memset(out, 0, out->size);
  memcpy(out, &all, n);
  return ZKL_OK;
}
