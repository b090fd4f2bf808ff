/* Fuzz target: lock node data, written by any client of the ensemble and
 * parsed by zkl_mutex_queue(), zkl_election_candidates() and the tools. */
#include <stdlib.h>

#include "../lib/internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  zkl_contender_t *e = calloc(1, sizeof *e);
  if (!e)
    return 0;
  zkl__parse_node_data(e, (const char *)data, size);
  zkl_contenders_free(e, 1);
  return 0;
}
