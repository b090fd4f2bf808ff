/* SPDX-License-Identifier: Apache-2.0 */
/* Run a critical section under the distributed lock "orders". */
#include <inttypes.h>
#include <stdio.h>
#include <zklock.h>

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  zkl_client_t *client;
  zkl_mutex_t *lock;
  uint64_t token;
  int rc;

  rc = zkl_client_create(&client, hosts, NULL); /* one session per process */
  if (rc != ZKL_OK) {
    fprintf(stderr, "connect: %s\n", zkl_strerror(rc));
    return 1;
  }
  rc = zkl_mutex_create(&lock, client, "orders", NULL); /* /locks/orders */
  if (rc == ZKL_OK)
    rc = zkl_mutex_timedlock(lock, zkl_now_ms() + 30000); /* wait <= 30 s */
  if (rc == ZKL_OK) {
    zkl_mutex_token(lock, &token);
    /* Pass the token to every write; the resource rejects tokens lower
     * than the highest it has seen ("Fencing" in ARCHITECTURE.md). */
    printf("holding /locks/orders, fencing token %" PRIu64 "\n", token);
    rc = zkl_mutex_unlock(lock);
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "lock: %s\n", zkl_strerror(rc));
  zkl_mutex_destroy(lock);
  zkl_client_destroy(client);
  return rc == ZKL_OK ? 0 : 1;
}
