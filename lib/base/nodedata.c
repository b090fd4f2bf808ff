/* SPDX-License-Identifier: Apache-2.0 */
/* nodedata.c: what a zklock node's data says; written and read here only.
 *
 * Every node a zklock object creates carries text first, so that zkCli
 * and our tools show who holds a lock (zkl__node_data):
 *
 *   zklock 1            the format and its version: the magic line
 *   host=<name>         where the creator runs
 *   pid=<pid>           its process
 *   thread=<tid>        its thread (the kernel's id)
 *   id=<id>             an election candidate's id; only when it has one
 *   guid=<guid>         a flat lock's node (ZKL_MUTEX_FLAT): the guid of
 *                       the acquisition that made it, whose name cannot
 *                       carry it (no other line is written by the creator)
 *   <empty line>        the end of the header
 *   <caller's data>     any bytes, to the end
 *
 * Each header line ends in '\n'. Lines are added to a live node's header
 * by a conditional setData, always as its first line after the magic one
 * (zkl__data_add_line), and only these:
 *   - by the owner, status lines (ZKL__LINE_*): "mode=read" when a
 *     read-write writer downgrades, "state=held" when a semaphore lease
 *     is granted after a wait (the relay: release.c);
 *   - by anyone asking for the lock, "revoke=<nonce>,<grace_ms>"
 *     (revoke.c). Apache Curator's Revoker writes "__REVOKE__" over the
 *     whole data instead: a request too.
 * The owner takes any other change for a rewrite (zkl__data_intact).
 * Data without the magic line is another library's: it is kept whole as
 * the caller's data, and nobody adds to it.
 *
 * A semaphore's directory carries "max=N" and nothing else: its number of
 * leases (zkl__dir_data).
 *
 * Any client of the ensemble can write any bytes into any node: every
 * function here reads untrusted input, and fuzz/fuzz_nodedata.c covers
 * all of them. Nothing here talks to ZooKeeper. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static const char magic[] = "zklock 1\n";
/* The magic line's length, newline included: where the header's own
 * lines start. */
#define MAGIC_LEN (sizeof magic - 1)

/* What Curator's Revoker writes over a holder's data. */
static const char curator_revoke[] = "__REVOKE__";
#define CURATOR_REVOKE_LEN (sizeof curator_revoke - 1)

#define REVOKE_KEY "revoke="
#define MAX_KEY "max="
#define GUID_KEY "guid="

/* ---- writing ------------------------------------------------------------- */

/* The header with "id=<id>" and "guid=<guid>" lines when given. */
static int node_data(const char *id, const char *guid, const void *user,
                     size_t len, char **out, size_t *out_len) {
  char host[256] = "";
  char head[400 + ZKL_ID_MAX + ZKL__GUID_LEN];
  int n;
  char *buf;
  if (gethostname(host, sizeof host - 1) != 0)
    strcpy(host, "unknown");
  n = snprintf(head, sizeof head,
               "%shost=%s\npid=%ld\nthread=%ld\n%s%s%s%s%s%s\n", magic, host,
               (long)getpid(), (long)syscall(SYS_gettid), id ? "id=" : "",
               id ? id : "", id ? "\n" : "", guid ? GUID_KEY : "",
               guid ? guid : "", guid ? "\n" : "");
  if (n < 0 || (size_t)n >= sizeof head)
    return ZKL_ESYSTEM;
  buf = malloc((size_t)n + len + 1);
  if (!buf)
    return ZKL_ENOMEM;
  memcpy(buf, head, (size_t)n);
  if (len)
    memcpy(buf + n, user, len);
  buf[(size_t)n + len] = '\0';
  *out = buf;
  *out_len = (size_t)n + len;
  return ZKL_OK;
}

int zkl__node_data(const char *id, const void *user, size_t len, char **out,
                   size_t *out_len) {
  return node_data(id, NULL, user, len, out, out_len);
}

int zkl__node_data_guid(const char *guid, const void *user, size_t len,
                        char **out, size_t *out_len) {
  return node_data(NULL, guid, user, len, out, out_len);
}

int zkl__data_ours(const char *d, size_t len) {
  return d && len >= MAGIC_LEN && memcmp(d, magic, MAGIC_LEN) == 0;
}

int zkl__data_add_line(const char *d, size_t len, const char *line,
                       char **out, size_t *out_len) {
  size_t m = strlen(line);
  char *nd;
  *out = NULL;
  *out_len = 0;
  /* an empty line would end the header before the creator's lines, a
   * newline would add two */
  if (!zkl__data_ours(d, len) || m == 0 || strchr(line, '\n'))
    return ZKL_EINVAL;
  if (!(nd = malloc(len + m + 2)))
    return ZKL_ENOMEM;
  memcpy(nd, d, MAGIC_LEN);
  memcpy(nd + MAGIC_LEN, line, m);
  nd[MAGIC_LEN + m] = '\n';
  memcpy(nd + MAGIC_LEN + m + 1, d + MAGIC_LEN, len - MAGIC_LEN);
  nd[len + m + 1] = '\0';
  *out = nd;
  *out_len = len + m + 1;
  return ZKL_OK;
}

int zkl__revoke_line(char *buf, size_t size, const char *nonce,
                     int64_t grace_ms) {
  int n = snprintf(buf, size, REVOKE_KEY "%s,%lld", nonce, (long long)grace_ms);
  return n > 0 && (size_t)n < size && !strchr(nonce, '\n') ? ZKL_OK
                                                           : ZKL_EINVAL;
}

/* ---- reading the header -------------------------------------------------- */

/* How many lines of the header of zklock node data d are `line` (`prefix`
 * 0) or start with it (1). Only whole lines count: the scan ends at the
 * empty line, or at a last line with no newline. */
static int header_lines(const char *d, size_t len, const char *line,
                        int prefix) {
  const char *end = d + len, *p, *nl;
  size_t m = strlen(line);
  int n = 0;
  if (!zkl__data_ours(d, len))
    return 0;
  for (p = d + MAGIC_LEN; p < end && *p != '\n'; p = nl + 1) {
    if (!(nl = memchr(p, '\n', (size_t)(end - p))))
      break;
    n += (prefix ? (size_t)(nl - p) >= m : (size_t)(nl - p) == m) &&
         memcmp(p, line, m) == 0;
  }
  return n;
}

int zkl__data_mark(const char *d, size_t len, const char *mark) {
  return header_lines(d, len, mark, 0) > 0;
}

static int curator_asked(const char *d, size_t len) {
  return d && len == CURATOR_REVOKE_LEN &&
         memcmp(d, curator_revoke, CURATOR_REVOKE_LEN) == 0;
}

int zkl__revoke_asked(const char *d, size_t len) {
  return curator_asked(d, len) || header_lines(d, len, REVOKE_KEY, 1) > 0;
}

int zkl__revoke_count(const char *d, size_t len) {
  return header_lines(d, len, REVOKE_KEY, 1);
}

int zkl__data_has_guid(const char *d, size_t len, const char *guid) {
  char line[sizeof GUID_KEY + ZKL__GUID_LEN];
  int n = snprintf(line, sizeof line, GUID_KEY "%s", guid);
  return n > 0 && (size_t)n < sizeof line && header_lines(d, len, line, 0) > 0;
}

/* Whether line [p, nl) is `key` followed by exactly `val` (vlen bytes). */
static int line_is(const char *p, const char *nl, const char *key,
                   const char *val, size_t vlen) {
  size_t k = strlen(key);
  return (size_t)(nl - p) == k + vlen && memcmp(p, key, k) == 0 &&
         memcmp(p + k, val, vlen) == 0;
}

/* Whether line [p, nl) starts with `key` (a NUL-terminated literal). */
static int line_has_key(const char *p, const char *nl, const char *key) {
  size_t k = strlen(key);
  return (size_t)(nl - p) >= k && memcmp(p, key, k) == 0;
}

int zkl__data_intact(const char *d, size_t len, long pid, const char *id,
                     const void *user, size_t ulen, unsigned marks) {
  const char *end = d + len, *p, *nl;
  char pidv[24];
  int n = snprintf(pidv, sizeof pidv, "%ld", pid), seen = 0;
  if (curator_asked(d, len))
    return 1; /* a request, written over everything */
  if (!zkl__data_ours(d, len) || n <= 0)
    return 0;
  for (p = d + MAGIC_LEN; p < end && *p != '\n'; p = nl + 1) {
    if (!(nl = memchr(p, '\n', (size_t)(end - p))))
      return 0;
    if (line_is(p, nl, "pid=", pidv, (size_t)n))
      seen |= 1;
    else if (id && line_is(p, nl, "id=", id, strlen(id)))
      seen |= 2;
    else if (((marks & ZKL__MARK_READ) &&
              line_is(p, nl, ZKL__LINE_READ, "", 0)) ||
             ((marks & ZKL__MARK_HELD) &&
              line_is(p, nl, ZKL__LINE_HELD, "", 0)))
      ;
    /* what no reader of the queue acts on: where we run, a flat lock's
     * guid (read only to adopt a node our own session owns), and
     * revokers' requests, which anyone may add */
    else if (!(line_has_key(p, nl, "host=") ||
               line_has_key(p, nl, GUID_KEY) ||
               line_has_key(p, nl, "thread=") ||
               line_has_key(p, nl, REVOKE_KEY)))
      return 0;
  }
  if (p >= end || seen != (id ? 3 : 1))
    return 0; /* no end to the header, or a line of ours taken out */
  p++;
  return (size_t)(end - p) == ulen && (ulen == 0 || memcmp(p, user, ulen) == 0);
}

/* ---- parsing for tools --------------------------------------------------- */

/* A copy of the value of a "key=value" line (l bytes, key k bytes). */
static char *value_of(const char *p, size_t l, size_t k) {
  char *v = malloc(l - k + 1);
  if (v) {
    memcpy(v, p + k, l - k);
    v[l - k] = '\0';
  }
  return v;
}

/* The number in a "key=value" line; the value need not be NUL-terminated
 * (found by fuzz/fuzz_nodedata.c: strtol read past the buffer). */
static long long number_of(const char *p, size_t l, size_t k) {
  char buf[32];
  size_t n = l - k < sizeof buf - 1 ? l - k : sizeof buf - 1;
  memcpy(buf, p + k, n);
  buf[n] = '\0';
  return strtoll(buf, NULL, 10);
}

/* One header line [p, p + l) into e; lines of no known key are skipped.
 * Any client writes node data: a repeated key replaces the earlier value
 * (found by fuzz/fuzz_nodedata.c: it used to leak it). */
static int parse_line(zkl_contender_t *e, const char *p, size_t l) {
  char **s = NULL;
  size_t k = 0;
  if (l > 5 && memcmp(p, "host=", 5) == 0)
    s = &e->host, k = 5;
  else if (l > 3 && memcmp(p, "id=", 3) == 0)
    s = &e->id, k = 3;
  else if (l > 4 && memcmp(p, "pid=", 4) == 0)
    e->pid = (long)number_of(p, l, 4);
  else if (l > 7 && memcmp(p, "thread=", 7) == 0)
    e->thread = (unsigned long)number_of(p, l, 7);
  if (!s)
    return ZKL_OK;
  free(*s);
  return (*s = value_of(p, l, k)) ? ZKL_OK : ZKL_ENOMEM;
}

int zkl__parse_node_data(zkl_contender_t *e, const char *d, size_t len) {
  const char *end = d + len, *p, *body = d;
  if (zkl__data_ours(d, len)) {
    for (p = d + MAGIC_LEN; p < end && *p != '\n';) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
      int rc = parse_line(e, p, l);
      if (rc != ZKL_OK)
        return rc;
      p = nl ? nl + 1 : end;
    }
    body = p < end ? p + 1 : end;
  }
  if (body < end) {
    e->data_len = (size_t)(end - body);
    e->data = malloc(e->data_len + 1);
    if (!e->data)
      return ZKL_ENOMEM;
    memcpy(e->data, body, e->data_len);
    ((char *)e->data)[e->data_len] = '\0';
  }
  return ZKL_OK;
}

/* ---- a semaphore directory's "max=N" ------------------------------------- */

int zkl__dir_marked(const char *d, int len) {
  return d && len == (int)sizeof ZKL__DIR_MARK - 1 &&
         memcmp(d, ZKL__DIR_MARK, sizeof ZKL__DIR_MARK - 1) == 0;
}

char *zkl__dir_data(int limit) {
  char buf[32];
  if (limit < 1 || limit > ZKL_LEASES_MAX)
    return NULL;
  snprintf(buf, sizeof buf, MAX_KEY "%d", limit);
  return zkl__strdup(buf);
}

int zkl__dir_limit(const char *d, size_t len) {
  const size_t k = sizeof MAX_KEY - 1;
  long v = 0;
  size_t i;
  /* 1 to 5 digits, the first not 0: the one way zkl__dir_data says N */
  if (len < k + 1 || len > k + 5 || memcmp(d, MAX_KEY, k) != 0 || d[k] == '0')
    return 0;
  for (i = k; i < len; i++) {
    if (d[i] < '0' || d[i] > '9')
      return 0;
    v = v * 10 + (d[i] - '0');
  }
  return v <= ZKL_LEASES_MAX ? (int)v : 0;
}
