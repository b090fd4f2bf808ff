/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: all of lib/base/nodedata.c, lock node data that any client
 * of the ensemble can write. On any bytes: the parser of the tools and
 * zkl_mutex_queue(), the header's marks, revocation requests, the intact
 * check under every set of marks, the splice (on the bytes and on the
 * bytes behind our magic line), and a semaphore directory's max=N. From
 * the bytes as an id and user data: the round trip write, mark, parse.
 * A property that fails traps. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/internal.h"
#include "must.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char magic[] = "zklock 1\n";
#define MAGIC_LEN (sizeof magic - 1)

/* The lines anyone adds to a header, and the mark each needs to be ours. */
static const struct {
  const char *line;
  unsigned mark;
} added[] = {
    {ZKL__LINE_READ, ZKL__MARK_READ},
    {ZKL__LINE_HELD, ZKL__MARK_HELD},
    {"revoke=0123abcd,500", 0},
};
#define NADDED (sizeof added / sizeof added[0])

static zkl_contender_t *parse(const char *d, size_t len) {
  zkl_contender_t *e = calloc(1, sizeof *e);
  if (e && zkl__parse_node_data(e, d, len) != ZKL_OK) {
    zkl_contenders_free(e, 1);
    e = NULL;
  }
  return e;
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether two parses found the same fields. */
static int same_parse(const zkl_contender_t *a, const zkl_contender_t *b) {
  return same_str(a->host, b->host) && same_str(a->id, b->id) &&
         a->pid == b->pid && a->thread == b->thread &&
         a->data_len == b->data_len &&
         (a->data_len == 0 || memcmp(a->data, b->data, a->data_len) == 0);
}

/* The intact check of d as the node of the contender e says it is, under
 * marks m. */
static int intact(const char *d, size_t len, const zkl_contender_t *e,
                  unsigned m) {
  return zkl__data_intact(d, len, e->pid, e->id, e->data, e->data_len, m);
}

/* Marks, requests and the intact check on any bytes. */
static void check_read(const char *d, size_t len, const zkl_contender_t *e) {
  int curator = len == 10 && memcmp(d, "__REVOKE__", 10) == 0;
  int n = zkl__revoke_count(d, len);
  unsigned m;
  MUST(n >= 0 && (n == 0 || zkl__data_ours(d, len)));
  MUST(zkl__revoke_asked(d, len) == (curator || n > 0));
  if (zkl__data_mark(d, len, ZKL__LINE_READ) ||
      zkl__data_mark(d, len, ZKL__LINE_HELD))
    MUST(zkl__data_ours(d, len));
  for (m = 0; m < 4; m++) {
    int ok = intact(d, len, e, m);
    /* a mark allowed takes nothing away */
    MUST(!ok || (intact(d, len, e, m | ZKL__MARK_READ) &&
                 intact(d, len, e, m | ZKL__MARK_HELD)));
    MUST(!ok || curator || zkl__data_ours(d, len));
    if (!ok || curator)
      continue;
    /* every "pid=" line says e's pid, so the parse does */
    MUST(!zkl__data_intact(d, len, e->pid ^ 1, e->id, e->data, e->data_len,
                           m));
  }
}

/* The splice of every added line into d: refused unless d is ours; else
 * the line first, the rest unchanged, and nothing else read differently. */
static void check_splice(const char *d, size_t len,
                         const zkl_contender_t *e) {
  size_t i;
  unsigned k;
  for (i = 0; i < NADDED; i++) {
    const char *line = added[i].line;
    size_t m = strlen(line), nlen = 1;
    char *nd = (char *)d;
    zkl_contender_t *ne;
    int rc = zkl__data_add_line(d, len, line, &nd, &nlen);
    if (!zkl__data_ours(d, len)) {
      MUST(rc == ZKL_EINVAL && nd == NULL && nlen == 0);
      continue;
    }
    if (rc == ZKL_ENOMEM)
      continue;
    MUST(rc == ZKL_OK && nlen == len + m + 1 && nd[nlen] == '\0');
    MUST(memcmp(nd, magic, MAGIC_LEN) == 0 &&
         memcmp(nd + MAGIC_LEN, line, m) == 0 && nd[MAGIC_LEN + m] == '\n' &&
         memcmp(nd + MAGIC_LEN + m + 1, d + MAGIC_LEN, len - MAGIC_LEN) == 0);
    MUST(zkl__data_mark(nd, nlen, line));
    MUST(zkl__revoke_count(nd, nlen) ==
         zkl__revoke_count(d, len) + (added[i].mark == 0));
    for (k = 0; k < 4; k++)
      MUST(intact(nd, nlen, e, k | added[i].mark) ==
           intact(d, len, e, k | added[i].mark));
    if ((ne = parse(nd, nlen))) {
      MUST(same_parse(ne, e));
      zkl_contenders_free(ne, 1);
    }
    free(nd);
  }
}

static void check_any(const char *d, size_t len) {
  zkl_contender_t *e = parse(d, len);
  if (!e)
    return;
  check_read(d, len, e);
  check_splice(d, len, e);
  zkl_contenders_free(e, 1);
}

/* The bytes behind our magic line: most inputs become our header. */
static void check_as_ours(const unsigned char *data, size_t size) {
  char *d = malloc(size + MAGIC_LEN);
  if (!d)
    return;
  memcpy(d, magic, MAGIC_LEN);
  if (size)
    memcpy(d + MAGIC_LEN, data, size);
  check_any(d, size + MAGIC_LEN);
  free(d);
}

/* Write from the input (byte 0: marks; then an id up to a NUL, its
 * control bytes replaced as an election would refuse them; then user
 * data), add the marks, parse: what was written comes back. */
static void check_round_trip(const unsigned char *data, size_t size) {
  char id[ZKL_ID_MAX + 1], *d = NULL, *nd;
  size_t k = 0, len = 0, nlen, i, ulen;
  unsigned marks = size ? data[0] & 3u : 0, have = 0, asked = 0;
  const unsigned char *user;
  zkl_contender_t *e;
  for (i = 1; i < size && data[i] && k < ZKL_ID_MAX; i++, k++)
    id[k] = data[i] < 0x20 || data[i] == 0x7f ? '_' : (char)data[i];
  id[k] = '\0';
  user = data + (i < size ? i + 1 : size);
  ulen = (size_t)(data + size - user);
  if (zkl__node_data(k ? id : NULL, user, ulen, &d, &len) != ZKL_OK)
    return;
  MUST(zkl__data_intact(d, len, (long)getpid(), k ? id : NULL, user, ulen, 0));
  MUST(!zkl__revoke_asked(d, len) && !zkl__data_mark(d, len, ZKL__LINE_READ));
  for (i = 0; i < NADDED; i++) {
    if (added[i].mark && !(marks & added[i].mark))
      continue;
    if (zkl__data_add_line(d, len, added[i].line, &nd, &nlen) != ZKL_OK)
      break;
    free(d);
    d = nd;
    len = nlen;
    have |= added[i].mark;
    asked |= added[i].mark == 0;
  }
  MUST(zkl__data_intact(d, len, (long)getpid(), k ? id : NULL, user, ulen,
                        have));
  MUST(!have ||
       !zkl__data_intact(d, len, (long)getpid(), k ? id : NULL, user, ulen, 0));
  MUST(zkl__revoke_asked(d, len) == (int)asked);
  if ((e = parse(d, len))) {
    MUST(e->pid == (long)getpid() && e->host != NULL);
    MUST(k ? e->id && strcmp(e->id, id) == 0 : e->id == NULL);
    MUST(e->data_len == ulen &&
         (ulen == 0 || memcmp(e->data, user, ulen) == 0));
    zkl_contenders_free(e, 1);
  }
  free(d);
}

/* max=N: what parses is exactly what zkl__dir_data writes, and what it
 * writes parses back; a revoker's line is one line. */
static void check_formats(const unsigned char *data, size_t size) {
  int v = zkl__dir_limit((const char *)data, size), n = 0;
  char *s, nonce[41], line[ZKL__REVOKE_LINE_MAX];
  size_t i;
  MUST(v >= 0 && v <= ZKL_LEASES_MAX);
  if (v && (s = zkl__dir_data(v))) {
    MUST(strlen(s) == size && memcmp(s, data, size) == 0);
    free(s);
  }
  for (i = 0; i < 4 && i < size; i++)
    n = (int)((unsigned)n << 8 | data[i]);
  if ((s = zkl__dir_data(n))) {
    MUST(n >= 1 && n <= ZKL_LEASES_MAX);
    MUST(zkl__dir_limit(s, strlen(s)) == n);
    free(s);
  }
  for (i = 0; i < size && i < sizeof nonce - 1 && data[i]; i++)
    nonce[i] = (char)data[i];
  nonce[i] = '\0';
  if (zkl__revoke_line(line, sizeof line, nonce, (int64_t)n) == ZKL_OK &&
      zkl__data_add_line("zklock 1\n\n", 10, line, &s, &i) == ZKL_OK) {
    MUST(zkl__revoke_asked(s, i) && zkl__revoke_count(s, i) == 1);
    free(s);
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  check_any((const char *)data, size);
  check_as_ours(data, size);
  check_round_trip(data, size);
  check_formats(data, size);
  return 0;
}
