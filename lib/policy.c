/* policy.c: who holds and whom to watch, from the names in a listing.
 *
 * Pure functions over a queue's child names, so that they can be tested
 * (tests/unit.c) and fuzzed (fuzz/fuzz_names.c) without an ensemble. Any
 * client of the ensemble can create children under a lock, so every name
 * here is untrusted input. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A contender's node name ends with <marker><seq>, where the server printed
 * seq with %010d: 10 digits, or after the parent's signed 32-bit counter
 * wraps, '-' and 9 or 10 digits. Other children are not contenders and are
 * ignored. */
int zkl__seq_parse(const char *node, const char *marker, int32_t *seq) {
  size_t m = strlen(marker), n;
  const char *s = NULL, *p;
  int64_t v = 0;
  int neg = 0;
  for (p = strstr(node, marker); p; p = strstr(p + 1, marker))
    s = p + m; /* the last occurrence: a guid may not contain it, but be safe */
  if (!s)
    return 0;
  n = strlen(s);
  if (*s == '-') {
    neg = 1;
    s++;
    n--;
    if (n != 9 && n != 10)
      return 0;
  } else if (n != ZKL__SEQ_LEN) {
    return 0;
  }
  for (p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + (*p - '0');
  }
  v = neg ? -v : v;
  if (v < INT32_MIN || v > INT32_MAX)
    return 0;
  *seq = (int32_t)v;
  return 1;
}

/* Serial-number order (RFC 1982 style) on the 32-bit counter: a is before b
 * when b is less than 2^31 steps ahead of a. Contenders that really queued
 * together are never 2^31 apart, so among them this is a total order that
 * stays right across the wrap to negative values, where comparing the
 * printed strings would put the newcomer first. It is not transitive over
 * arbitrary numbers, which anyone can plant as names: hence no sort below. */
int zkl__seq_before(int32_t a, int32_t b) {
  return (int32_t)((uint32_t)a - (uint32_t)b) < 0;
}

int zkl__contenders(char *const *names, int n, const char *marker,
                    zkl__entry_t **out) {
  zkl__entry_t *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
  int i, k = 0;
  if (!e)
    return -1;
  for (i = 0; i < n; i++)
    if (zkl__seq_parse(names[i], marker, &e[k].seq))
      e[k++].name = names[i];
  *out = e;
  return k;
}

/* Equal sequences happen only with planted names; the name then decides,
 * so that two distinct entries are never both before each other. */
static int before(const zkl__entry_t *a, const zkl__entry_t *b) {
  if (a->seq != b->seq)
    return zkl__seq_before(a->seq, b->seq);
  return strcmp(a->name, b->name) < 0;
}

/* How far below `me` entry x lies: smaller is nearer. */
static int nearer(const zkl__entry_t *x, const zkl__entry_t *y,
                  const zkl__entry_t *me) {
  uint32_t dx = (uint32_t)me->seq - (uint32_t)x->seq;
  uint32_t dy = (uint32_t)me->seq - (uint32_t)y->seq;
  if (dx != dy)
    return dx < dy;
  return strcmp(x->name, y->name) > 0;
}

/* Decided from e[me]'s own point of view, one pair at a time: two real
 * contenders each see the other on the same side, so at most one of them
 * sees nothing before itself, whatever else a listing holds. */
int zkl__place(const zkl__entry_t *e, int n, int me, const unsigned char *skip,
               int *pred) {
  int i, count = 0, best = -1;
  for (i = 0; i < n; i++) {
    if (i == me || (skip && skip[i]) || !before(&e[i], &e[me]))
      continue;
    count++;
    if (best < 0 || nearer(&e[i], &e[best], &e[me]))
      best = i;
  }
  if (pred)
    *pred = best;
  return count;
}
