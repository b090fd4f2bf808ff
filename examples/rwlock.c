/* SPDX-License-Identifier: Apache-2.0 */
/* rwlock.c: a read-write lock. Readers hold it together; a writer holds
 * it alone.
 *
 *   rwlock HOSTS read|write [SECONDS]     (hold for SECONDS, default 2)
 *
 * Takes /locks/example-config in that mode, holds it SECONDS and releases
 * it. Start two readers and then a writer: the readers are in together,
 * the writer waits until both are out. Nobody jumps the queue: a reader
 * that comes after a waiting writer waits for it, so writers never starve.
 *
 *   cc -o rwlock rwlock.c $(pkg-config --cflags --libs zklock) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zklock.h>

int main(int argc, char **argv) {
  zkl_client_t *client = NULL;
  zkl_rwlock_t *rw = NULL;
  uint64_t token = 0;
  int writer, seconds, rc;

  if (argc < 3 || (strcmp(argv[2], "read") && strcmp(argv[2], "write"))) {
    fprintf(stderr, "usage: %s HOSTS read|write [SECONDS]\n", argv[0]);
    return 64;
  }
  writer = strcmp(argv[2], "write") == 0;
  seconds = argc > 3 ? atoi(argv[3]) : 2;
  setvbuf(stdout, NULL, _IOLBF, 0); /* each line at once, even into a file */

  rc = zkl_client_create(&client, argv[1], NULL);
  if (rc == ZKL_OK)
    rc = zkl_rwlock_create(&rw, client, "example-config", NULL);
  if (rc == ZKL_OK) /* blocks until our turn; _timed* forms take a deadline */
    rc = writer ? zkl_rwlock_wrlock(rw) : zkl_rwlock_rdlock(rw);
  if (rc == ZKL_OK) {
    zkl_rwlock_token(rw, &token);
    printf("%s %ld in, token %" PRIu64 "\n", argv[2], (long)getpid(), token);
    sleep(seconds); /* read, or write, what the lock protects */
    printf("%s %ld out\n", argv[2], (long)getpid());
    /* ZKL_OK vouches that the hold lasted to here; ZKL_ELOST that it did
     * not (the session expired, the node was deleted) */
    rc = writer ? zkl_rwlock_wrunlock(rw) : zkl_rwlock_rdunlock(rw);
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "rwlock: %s\n", zkl_strerror(rc));
  zkl_rwlock_destroy(rw);
  zkl_client_destroy(client);
  return rc == ZKL_OK ? 0 : 1;
}
