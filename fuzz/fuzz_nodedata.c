/* Fuzz target: lock node data, written by any client of the ensemble and
 * parsed by zkl_mutex_queue(), zkl_election_candidates() and the tools;
 * the status marks waiters read from it (downgrade, semaphore relay); a
 * semaphore directory's max=N. */
#include <stdlib.h>

#include "../lib/internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  zkl_contender_t *e = calloc(1, sizeof *e);
  if (!e)
    return 0;
  zkl__parse_node_data(e, (const char *)data, size);
  zkl_contenders_free(e, 1);
  (void)zkl__data_mark((const char *)data, size, "mode=read");
  (void)zkl__data_mark((const char *)data, size, "state=held");
  if (zkl__dir_limit((const char *)data, size) > ZKL_LEASES_MAX)
    __builtin_trap();
  return 0;
}
