/* SPDX-License-Identifier: Apache-2.0 */
/* demo.c: one worker of the demo (scripts/demo.sh starts several).
 *
 *   zklock-demo HOSTS NAME WORKER ROUNDS
 *
 * Each round: wait for the lock, say so with the fencing token and who
 * waits behind us, "work" for a moment, release, and pause before queueing
 * again so that the workers visibly take turns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "zklock.h"

static void stamp(char *buf, size_t n) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);
  snprintf(buf, n, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec,
           ts.tv_nsec / 1000000);
}

static void say(const char *who, const char *fmt, uint64_t a, size_t b) {
  char t[32];
  stamp(t, sizeof t);
  printf("%s  %-9s ", t, who);
  printf(fmt, a, b);
  printf("\n");
  fflush(stdout);
}

int main(int argc, char **argv) {
  zkl_client_t *c;
  zkl_mutex_t *m;
  zkl_mutex_options_t o = {0};
  char who[32];
  int rounds, r, rc;
  if (argc != 5) {
    fprintf(stderr, "usage: %s HOSTS NAME WORKER ROUNDS\n", argv[0]);
    return 2;
  }
  rounds = atoi(argv[4]);
  snprintf(who, sizeof who, "worker-%s", argv[3]);
  o.data = who;
  o.data_len = sizeof who - 1;
  if ((rc = zkl_client_create(&c, argv[1], NULL)) != ZKL_OK ||
      (rc = zkl_mutex_create(&m, c, argv[2], &o)) != ZKL_OK) {
    fprintf(stderr, "%s: %s\n", who, zkl_strerror(rc));
    return 1;
  }
  for (r = 1; r <= rounds; r++) {
    uint64_t token = 0;
    zkl_contender_t *q = NULL;
    size_t n = 0;
    say(who, "waiting for the lock (round %" PRIu64 ")", (uint64_t)r, 0);
    if ((rc = zkl_mutex_lock(m)) != ZKL_OK)
      break;
    zkl_mutex_token(m, &token);
    zkl_mutex_queue(c, NULL, argv[2], &q, &n);
    say(who, ">>> HOLDS the lock, token %" PRIu64 ", %zu waiting behind",
        token, n ? n - 1 : 0);
    zkl_contenders_free(q, n);
    usleep(400000); /* the critical section */
    say(who, "<<< releases (token %" PRIu64 ")", token, 0);
    if ((rc = zkl_mutex_unlock(m)) != ZKL_OK)
      break;
    usleep(150000);
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "%s: %s\n", who, zkl_strerror(rc));
  zkl_mutex_destroy(m);
  zkl_client_destroy(c);
  return rc == ZKL_OK ? 0 : 1;
}
