/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the tools' JSON writer (tools/json.c) and the --json
 * listing (tools/cli_json.c) on any bytes. What they write must parse as
 * JSON by the strict RFC 8259 reader below, written apart from the writer
 * (its own UTF-8 check, by code point ranges rather than by lead bytes),
 * and a string must read back as its bytes with each byte that is not
 * valid UTF-8 turned into U+FFFD. A property that fails traps. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/cli.h"
#include "../tools/json.h"
#include "must.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* ---- a strict JSON reader ------------------------------------------------ */

struct rd {
  const unsigned char *s;
  size_t n, i;
  int depth;
  unsigned char *str; /* the last string read, decoded (UTF-8) */
  size_t len, cap;
};

/* The length of the valid UTF-8 sequence at s, 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  uint32_t cp, min;
  size_t len, i;
  if (s[0] < 0x80)
    return 1;
  if ((s[0] & 0xe0) == 0xc0)
    len = 2, cp = s[0] & 0x1fu, min = 0x80;
  else if ((s[0] & 0xf0) == 0xe0)
    len = 3, cp = s[0] & 0x0fu, min = 0x800;
  else if ((s[0] & 0xf8) == 0xf0)
    len = 4, cp = s[0] & 0x07u, min = 0x10000;
  else
    return 0;
  if (n < len)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

static void put(struct rd *r, const void *p, size_t n) {
  if (n == 0)
    return;
  if (r->len + n > r->cap) {
    r->cap = (r->len + n) * 2 + 16;
    r->str = realloc(r->str, r->cap);
    MUST(r->str != NULL);
  }
  memcpy(r->str + r->len, p, n);
  r->len += n;
}

static void put_cp(struct rd *r, uint32_t cp) {
  unsigned char b[4];
  size_t n;
  if (cp < 0x80)
    b[0] = (unsigned char)cp, n = 1;
  else if (cp < 0x800)
    b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
  else if (cp < 0x10000)
    b[0] = (unsigned char)(0xe0 | cp >> 12),
    b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
    b[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
  else
    b[0] = (unsigned char)(0xf0 | cp >> 18),
    b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
    b[3] = (unsigned char)(0x80 | (cp & 0x3f)), n = 4;
  put(r, b, n);
}

static void ws(struct rd *r) {
  while (r->i < r->n && strchr(" \t\n\r", r->s[r->i]) && r->s[r->i])
    r->i++;
}

static int lit(struct rd *r, const char *w) {
  size_t k = strlen(w);
  if (r->n - r->i < k || memcmp(r->s + r->i, w, k) != 0)
    return 0;
  r->i += k;
  return 1;
}

/* Four hex digits after "\u". */
static int hex4(struct rd *r, uint32_t *v) {
  size_t k;
  *v = 0;
  if (r->n - r->i < 4)
    return 0;
  for (k = 0; k < 4; k++) {
    unsigned char c = r->s[r->i++];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return 0;
    *v = *v << 4 | (uint32_t)d;
  }
  return 1;
}

/* A \u escape (the "\u" read): a lone surrogate is refused. */
static int uescape(struct rd *r) {
  uint32_t v, lo;
  if (!hex4(r, &v))
    return 0;
  if (v >= 0xdc00 && v <= 0xdfff)
    return 0;
  if (v >= 0xd800 && v <= 0xdbff) {
    if (!lit(r, "\\u") || !hex4(r, &lo) || lo < 0xdc00 || lo > 0xdfff)
      return 0;
    v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
  }
  put_cp(r, v);
  return 1;
}

static int string(struct rd *r) {
  static const char esc[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";
  r->len = 0;
  if (!lit(r, "\""))
    return 0;
  while (r->i < r->n) {
    unsigned char c = r->s[r->i];
    size_t k;
    if (c == '"') {
      r->i++;
      return 1;
    }
    if (c < 0x20)
      return 0; /* a raw control character */
    if (c == '\\') {
      const char *e;
      if (++r->i >= r->n || r->s[r->i] == 0)
        return 0;
      if (r->s[r->i] == 'u') {
        r->i++;
        if (!uescape(r))
          return 0;
        continue;
      }
      if (!(e = strchr(esc, r->s[r->i])))
        return 0;
      put(r, &val[e - esc], 1);
      r->i++;
      continue;
    }
    if ((k = utf8_len(r->s + r->i, r->n - r->i)) == 0)
      return 0;
    put(r, r->s + r->i, k);
    r->i += k;
  }
  return 0;
}

static int digits(struct rd *r) {
  size_t start = r->i;
  while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
    r->i++;
  return r->i > start;
}

static int number(struct rd *r) {
  lit(r, "-");
  if (lit(r, "0")) {
    /* no leading zeros */
  } else if (r->i >= r->n || r->s[r->i] < '1' || r->s[r->i] > '9' || !digits(r)) {
    return 0;
  }
  if (lit(r, ".") && !digits(r))
    return 0;
  if (lit(r, "e") || lit(r, "E")) {
    if (!lit(r, "+"))
      lit(r, "-");
    if (!digits(r))
      return 0;
  }
  return 1;
}

static int value(struct rd *r);

/* The members or elements up to `end` (the opening bracket read). */
static int members(struct rd *r, int object, const char *end) {
  ws(r);
  if (lit(r, end))
    return 1;
  for (;;) {
    ws(r);
    if (object) {
      if (!string(r))
        return 0;
      ws(r);
      if (!lit(r, ":"))
        return 0;
    }
    if (!value(r))
      return 0;
    ws(r);
    if (lit(r, end))
      return 1;
    if (!lit(r, ","))
      return 0;
  }
}

static int value(struct rd *r) {
  int ok;
  ws(r);
  if (r->i >= r->n)
    return 0;
  switch (r->s[r->i]) {
  case '{':
  case '[': {
    int object = r->s[r->i++] == '{';
    if (++r->depth > 64)
      return 0;
    ok = members(r, object, object ? "}" : "]");
    r->depth--;
    return ok;
  }
  case '"':
    return string(r);
  case 't':
    return lit(r, "true");
  case 'f':
    return lit(r, "false");
  case 'n':
    return lit(r, "null");
  default:
    return number(r);
  }
}

/* Whether s (n bytes) is one JSON text; the last string it read is left
 * in r->str (freed by the caller). */
static int is_json(struct rd *r, const char *s, size_t n) {
  memset(r, 0, sizeof *r);
  r->s = (const unsigned char *)s;
  r->n = n;
  if (!value(r))
    return 0;
  ws(r);
  return r->i == n;
}

/* ---- the properties ------------------------------------------------------ */

/* What the writer must make of s: s with each byte not in a valid UTF-8
 * sequence replaced by U+FFFD. */
static void expect(struct rd *w, const unsigned char *s, size_t n) {
  size_t i = 0, k;
  w->len = 0;
  while (i < n) {
    if ((k = utf8_len(s + i, n - i)) == 0) {
      put_cp(w, 0xfffd);
      i++;
    } else {
      put(w, s + i, k);
      i += k;
    }
  }
}

/* One string literal: valid JSON that reads back as expected. */
static void check_string(const unsigned char *data, size_t size) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct rd r, w = {0};
  MUST(f != NULL);
  json_put_string(f, (const char *)data, size);
  MUST(fclose(f) == 0);
  MUST(is_json(&r, buf, len) && r.s[0] == '"');
  expect(&w, data, size);
  MUST(r.len == w.len && (r.len == 0 || memcmp(r.str, w.str, r.len) == 0));
  free(r.str), free(w.str), free(buf);
}

/* A NUL-terminated copy of up to n bytes of *p (stopping at a NUL, as a
 * name parsed from node data stops), consumed from *p. */
static char *take(const unsigned char **p, size_t *left, size_t n) {
  char *s;
  if (n > *left)
    n = *left;
  s = strndup((const char *)*p, n);
  MUST(s != NULL);
  *p += n, *left -= n;
  return s;
}

/* The --json listing of two contenders made of the input. */
/* With ZKL_FUZZ_JSON_OUT set, every listing written is appended to that
 * file, one per line, for a second reader: scripts/fuzz.sh replays the
 * corpus so and runs python3 -m json.tool --json-lines over it. */
static void dump(const char *buf, size_t len) {
  static FILE *out;
  static int tried;
  if (!tried) {
    const char *path = getenv("ZKL_FUZZ_JSON_OUT");
    tried = 1;
    out = path ? fopen(path, "a") : NULL;
  }
  if (out) {
    MUST(fwrite(buf, 1, len, out) == len);
    MUST(fflush(out) == 0);
  }
}

static void check_listing(const unsigned char *data, size_t size) {
  unsigned char c[8] = {0};
  zkl_contender_t e[2];
  const unsigned char *p = data + (size < 8 ? size : 8);
  size_t left = size - (size_t)(p - data), i, len = 0;
  char *buf = NULL;
  FILE *f;
  struct rd r;
  memcpy(c, data, size < 8 ? size : 8);
  memset(e, 0, sizeof e);
  for (i = 0; i < 2; i++) {
    e[i].node = take(&p, &left, c[4 * i] % 64);
    e[i].host = c[4 * i + 1] & 1 ? take(&p, &left, c[4 * i + 1] >> 1) : NULL;
    e[i].id = c[4 * i + 2] & 1 ? take(&p, &left, c[4 * i + 2] >> 1) : NULL;
    e[i].owner = (int64_t)(c[4 * i + 3] & 3) << 60;
    e[i].holds = c[4 * i + 3] >> 2 & 1;
    e[i].mode = c[4 * i + 3] >> 3 & 3;
    e[i].pid = c[4 * i + 3] >> 5;
    e[i].czxid = e[i].ctime_ms = (int64_t)c[4 * i] << 32;
    e[i].seq = -(int32_t)c[4 * i + 1];
  }
  e[1].data = (void *)p; /* the rest, NULs and all */
  e[1].data_len = left;
  f = open_memstream(&buf, &len);
  MUST(f != NULL);
  cli_json_queue(f, c[0] & 1 ? "election" : "lock", "/r\"\\",
                 e[0].node, e, 2);
  MUST(fclose(f) == 0);
  /* one object, then one newline */
  MUST(len >= 3 && buf[0] == '{' && buf[len - 1] == '\n' && buf[len - 2] == '}');
  MUST(is_json(&r, buf, len));
  dump(buf, len);
  free(r.str), free(buf);
  for (i = 0; i < 2; i++)
    free(e[i].node), free(e[i].host), free(e[i].id);
}

/* The writer's commas and colons: nested objects and arrays as the input
 * says, with keys and strings taken from it. */
static void check_nesting(const unsigned char *data, size_t size) {
  int object[JSON_DEPTH_MAX + 1] = {0}, d = 0;
  char *buf = NULL;
  size_t len = 0, i;
  FILE *f = open_memstream(&buf, &len);
  struct rd r;
  json_t j;
  MUST(f != NULL);
  json_init(&j, f);
  json_array_begin(&j);
  for (i = 0; i < size && i < 256; i++) {
    unsigned op = data[i] & 7;
    size_t n = data[i] >> 3;
    if (n > size - i - 1)
      n = size - i - 1;
    if (op == 0 && d > 0) {
      object[d] ? json_object_end(&j) : json_array_end(&j);
      d--;
      continue;
    }
    if (object[d])
      json_key(&j, op & 1 ? "k\"\x01" : "");
    if ((op == 1 || op == 2) && d < JSON_DEPTH_MAX - 1) {
      object[++d] = op == 1;
      op == 1 ? json_object_begin(&j) : json_array_begin(&j);
    } else if (op == 3) {
      json_string(&j, (const char *)data + i + 1, n);
    } else if (op == 4) {
      json_int(&j, (int64_t)n - 16);
    } else if (op == 5) {
      json_bool(&j, (int)n & 1);
    } else {
      json_null(&j);
    }
  }
  for (; d > 0; d--)
    object[d] ? json_object_end(&j) : json_array_end(&j);
  json_array_end(&j);
  MUST(fclose(f) == 0);
  MUST(is_json(&r, buf, len));
  free(r.str), free(buf);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  check_string(data, size);
  check_listing(data, size);
  check_nesting(data, size);
  return 0;
}
