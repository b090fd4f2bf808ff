/* SPDX-License-Identifier: Apache-2.0 */
/* election.c: leader election. Start it on several machines, or several
 * times on one: one candidate leads, the others wait for their turn.
 *
 *   election HOSTS ID [SECONDS]     (lead for SECONDS, default 5)
 *
 * Each candidate joins the election /election/example. The leader works
 * in steps, checking before each one that it still leads, then steps
 * down; the next candidate in line leads, with a larger term token. A
 * leader that dies is replaced once its session times out.
 *
 *   cc -o election election.c $(pkg-config --cflags --libs zklock) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zklock.h>

int main(int argc, char **argv) {
  zkl_client_t *client = NULL;
  zkl_election_t *e = NULL;
  uint64_t token = 0;
  int seconds, rc;

  if (argc < 3) {
    fprintf(stderr, "usage: %s HOSTS ID [SECONDS]\n", argv[0]);
    return 64;
  }
  seconds = argc > 3 ? atoi(argv[3]) : 5;
  setvbuf(stdout, NULL, _IOLBF, 0); /* each line at once, even into a file */

  rc = zkl_client_create(&client, argv[1], NULL);
  if (rc == ZKL_OK) /* ID is what zkl_election_candidates() shows */
    rc = zkl_election_create(&e, client, "example", argv[2], NULL);
  if (rc == ZKL_OK) /* join, and wait for our turn */
    rc = zkl_election_wait(e, ZKL_NO_DEADLINE);
  if (rc == ZKL_OK) {
    zkl_election_token(e, &token);
    printf("%s leads, term token %" PRIu64 "\n", argv[2], token);
    /* Leadership can end at any moment (a partition, an expired
     * session): check before each step, and pass the token with every
     * write, so that the store refuses a deposed leader's late writes. */
    for (int step = 1; step <= seconds && zkl_election_is_leader(e); step++) {
      printf("%s works, step %d\n", argv[2], step);
      sleep(1);
    }
    /* Done: step down, so that the next candidate leads. ZKL_ELOST
     * would mean we had lost the lead before the end. */
    printf("%s steps down\n", argv[2]);
    rc = zkl_election_resign(e);
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "election: %s\n", zkl_strerror(rc));
  zkl_election_destroy(e);
  zkl_client_destroy(client);
  return rc == ZKL_OK ? 0 : 1;
}
