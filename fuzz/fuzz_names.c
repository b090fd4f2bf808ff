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
  {
    int kind;
    if (zkl__name_parse(s, &seq, &kind) && !(kind & (ZKL__KIND_EXCL | ZKL__KIND_SHARED)))
      __builtin_trap(); /* every contender has a kind */
  }
  for (p = strtok(s, "\n"); p && n < 64; p = strtok(NULL, "\n"))
    names[n++] = p;
  n = zkl__contenders(names, n, &e);
  if (n >= 0) {
    /* Entries less than 2^31 apart (here: all in [0, 2^30)) are what real
     * contenders are: at most one of them may see nothing before itself.
     * Any other input must just not crash. */
    int i, j, pred, heads = 0, near = 1, excl_holds = 0, holds = 0;
    int lease_holds = 0;
    zkl__plan_t plan;
    for (i = 0; i < n; i++) {
      near &= e[i].seq >= 0 && e[i].seq < (1 << 30);
      for (j = 0; j < i; j++) /* a listing's names are distinct */
        near &= strcmp(e[i].name, e[j].name) != 0;
      heads += zkl__place(e, n, i, NULL, &pred) == 0;
      (void)zkl__may_insert_below(e, n, i, NULL);
      /* the read-write policy: holders never conflict, and every watched
       * entry is another one of the listing */
      zkl__decide(e, n, i, NULL, 0, &plan);
      /* the semaphore's policy, for a limit of 2: at most 2 leases hold,
       * and never beside a lock's holder */
      {
        zkl__plan_t sp;
        zkl__decide(e, n, i, NULL, 2, &sp);
        if (sp.nwatch > sp.before + 1 || sp.nwatch > ZKL__WATCH_MAX)
          __builtin_trap();
        if (!sp.before && (e[i].kind & ZKL__KIND_LEASE))
          lease_holds++;
      }
      /* the N a lease's name carries: none, or a semaphore's */
      {
        int v = zkl__lease_limit(e[i].name);
        if (v < 0 || v > ZKL_LEASES_MAX)
          __builtin_trap();
      }
      if (plan.nwatch > plan.before || plan.nwatch > ZKL__WATCH_MAX)
        __builtin_trap();
      for (j = 0; j < plan.nwatch; j++)
        if (plan.watch[j] < 0 || plan.watch[j] >= n || plan.watch[j] == i)
          __builtin_trap();
      if (!plan.before) {
        holds++;
        excl_holds += (e[i].kind & ZKL__KIND_EXCL) != 0;
      }
    }
    if (near && (heads > 1 || excl_holds > 1 || (excl_holds && holds > 1) ||
                 lease_holds > 2))
      __builtin_trap();
    /* a lease of N=2 never holds behind a lease of another N */
    for (i = 0; near && i < n; i++) {
      zkl__plan_t sp;
      if (!(e[i].kind & ZKL__KIND_LEASE))
        continue;
      zkl__decide(e, n, i, NULL, 2, &sp);
      for (j = 0; !sp.before && j < n; j++) {
        int w = zkl__lease_limit(e[j].name);
        if (j != i && (e[j].kind & ZKL__KIND_LEASE) && w && w != 2 &&
            (zkl__seq_before(e[j].seq, e[i].seq) ||
             (e[j].seq == e[i].seq && strcmp(e[j].name, e[i].name) < 0)))
          __builtin_trap();
      }
    }
    free(e);
  }
  free(s);
  return 0;
}
