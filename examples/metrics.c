/* SPDX-License-Identifier: Apache-2.0 */
/* Take and release a lock a few times, then write the client's counters
 * (zkl_client_stats()) in Prometheus's text exposition format, as a
 * scrape endpoint or a node_exporter textfile would serve them.
 *
 *   metrics [HOSTS [NAME [TIMES]]]   (defaults: 127.0.0.1:2181, metrics, 3) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <zklock.h>

static const char *const recipes[ZKL_STATS_RECIPES] = {
    "mutex", "flat", "read", "write", "semaphore", "election", "multilock",
    NULL};
static const char *const outcomes[ZKL_STATS_OUTCOMES] = {"ok", "timedout",
                                                         "cancelled", "error"};
static const char *const kinds[ZKL_STATS_REQ_KINDS] = {
    "create", "delete", "getData", "exists", "getChildren", "setData", "sync",
    "multi"};

static void counter(const char *name, const char *help, uint64_t v) {
  printf("# HELP zklock_%s_total %s\n# TYPE zklock_%s_total counter\n"
         "zklock_%s_total %" PRIu64 "\n",
         name, help, name, name, v);
}

/* Buckets cumulative, each labelled by its upper edge in seconds
 * (Prometheus's "le", less or equal): bucket i counts whole microseconds
 * below 2^(i+1), so up to 2^(i+1) - 1; the last bucket has no edge. */
static void histogram(const char *name, const char *help,
                      const zkl_stats_histogram_t *h) {
  uint64_t below = 0;
  int i;
  printf("# HELP zklock_%s_seconds %s\n# TYPE zklock_%s_seconds histogram\n",
         name, help, name);
  for (i = 0; i < ZKL_STATS_BUCKETS - 1; i++) {
    below += h->bucket[i];
    printf("zklock_%s_seconds_bucket{le=\"%.6f\"} %" PRIu64 "\n", name,
           (double)((2ULL << i) - 1) / 1e6, below);
  }
  printf("zklock_%s_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", name,
         h->count);
  printf("zklock_%s_seconds_sum %.6f\n", name, (double)h->sum_us / 1e6);
  printf("zklock_%s_seconds_count %" PRIu64 "\n", name, h->count);
}

static void write_metrics(const zkl_client_stats_t *st) {
  int i, j;
  printf("# HELP zklock_acquires_total Acquires ended, by recipe and "
         "outcome.\n# TYPE zklock_acquires_total counter\n");
  for (i = 0; i < ZKL_STATS_RECIPES; i++)
    for (j = 0; recipes[i] && j < ZKL_STATS_OUTCOMES; j++)
      printf("zklock_acquires_total{recipe=\"%s\",outcome=\"%s\"} %" PRIu64
             "\n",
             recipes[i], outcomes[j], st->acquires[i][j]);
  counter("contended", "Acquires that found the lock taken.", st->contended);
  counter("handoffs", "Acquires granted by a hand-off, without a listing.",
          st->handoffs);
  counter("lost", "Holds that were lost.", st->lost);
  counter("revoked", "Holds asked to give the lock back.", st->revoked);
  counter("forced", "Holds taken by a revoker after its grace.", st->forced);
  counter("sessions_expired", "ZooKeeper sessions that expired.",
          st->sessions_expired);
  counter("reconnections", "Connections made again to a session.",
          st->reconnections);
  printf("# HELP zklock_requests_total ZooKeeper requests sent, by kind.\n"
         "# TYPE zklock_requests_total counter\n");
  for (i = 0; i < ZKL_STATS_REQ_KINDS && kinds[i]; i++)
    printf("zklock_requests_total{kind=\"%s\"} %" PRIu64 "\n", kinds[i],
           st->requests[i]);
  counter("transactions", "ZooKeeper transactions (multi) sent.",
          st->transactions);
  counter("transaction_ops", "Operations carried by those transactions.",
          st->transaction_ops);
  histogram("wait", "From the start of an acquire to the grant.", &st->wait);
  histogram("hold", "From the grant of a hold to its release.", &st->hold);
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  const char *name = argc > 2 ? argv[2] : "metrics";
  int i, times = argc > 3 ? atoi(argv[3]) : 3, rc;
  zkl_client_stats_t st = {.size = sizeof st}; /* size first: see zklock.h */
  zkl_client_t *client;
  zkl_mutex_t *lock;

  rc = zkl_client_create(&client, hosts, NULL);
  if (rc != ZKL_OK) {
    fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
    return 1;
  }
  rc = zkl_mutex_create(&lock, client, name, NULL);
  for (i = 0; rc == ZKL_OK && i < times; i++) {
    rc = zkl_mutex_timedlock(lock, zkl_now_ms() + 30000);
    if (rc == ZKL_OK)
      rc = zkl_mutex_unlock(lock);
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "lock: %s\n", zkl_strerror(rc));
  else if ((rc = zkl_client_stats(client, &st)) == ZKL_OK)
    write_metrics(&st);
  zkl_mutex_destroy(lock);
  zkl_client_destroy(client);
  return rc == ZKL_OK ? 0 : 1;
}
