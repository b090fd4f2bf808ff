/* Fuzz target: lock names, roots, sequence suffixes and queue ordering,
 * all of which come from users or from other clients' node names. */
#include <stdlib.h>
#include <string.h>

#include "../lib/internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *s = malloc(size + 1), *names[64], *p;
  zkl__entry_t *e = NULL;
  int32_t seq;
  int n = 0;
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  zkl__valid_name(s);
  zkl__valid_root(s);
  if (zkl__seq_parse(s, "-lock-", &seq))
    (void)zkl__seq_before(seq, 0);
  zkl__seq_parse(s, "-elect-", &seq);
  for (p = strtok(s, "\n"); p && n < 64; p = strtok(NULL, "\n"))
    names[n++] = p;
  n = zkl__contenders(names, n, "-lock-", &e);
  if (n >= 0) {
    /* at most one entry may see nothing before itself among entries
     * that are less than 2^31 apart; any input must at least not crash */
    int i, pred;
    for (i = 0; i < n; i++)
      (void)zkl__place(e, n, i, NULL, &pred);
    free(e);
  }
  free(s);
  return 0;
}
