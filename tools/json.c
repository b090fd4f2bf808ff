/* SPDX-License-Identifier: Apache-2.0 */
/* json.c: the streaming JSON writer of json.h. */
#include "json.h"

#include <inttypes.h>
#include <string.h>

void json_init(json_t *j, FILE *out) {
  j->out = out;
  j->depth = 0;
  j->after_key = 0;
  j->count[0] = 0;
}

/* Before any value or key: the comma that separates it from the one
 * before, unless it is the value of the key just written. */
static void separate(json_t *j) {
  if (j->after_key) {
    j->after_key = 0;
    return;
  }
  if (j->count[j->depth]++)
    fputc(',', j->out);
}

static void open_level(json_t *j, char c) {
  separate(j);
  if (j->depth >= JSON_DEPTH_MAX)
    return;
  fputc(c, j->out);
  j->count[++j->depth] = 0;
}

static void close_level(json_t *j, char c) {
  if (j->depth == 0)
    return;
  j->depth--;
  j->after_key = 0;
  fputc(c, j->out);
}

void json_object_begin(json_t *j) { open_level(j, '{'); }
void json_object_end(json_t *j) { close_level(j, '}'); }
void json_array_begin(json_t *j) { open_level(j, '['); }
void json_array_end(json_t *j) { close_level(j, ']'); }

size_t json_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned char b = s[0], lo = 0x80, hi = 0xbf;
  size_t len, i;
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  if (b >= 0xc2 && b <= 0xdf)
    len = 2, *cp = b & 0x1fu;
  else if (b >= 0xe0 && b <= 0xef)
    len = 3, *cp = b & 0x0fu;
  else if (b >= 0xf0 && b <= 0xf4)
    len = 4, *cp = b & 0x07u;
  else
    return 0;
  /* the second byte's range rules out overlongs, surrogates and > U+10FFFF */
  if (b == 0xe0)
    lo = 0xa0;
  else if (b == 0xed)
    hi = 0x9f;
  else if (b == 0xf0)
    lo = 0x90;
  else if (b == 0xf4)
    hi = 0x8f;
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    *cp = *cp << 6 | (s[i] & 0x3fu);
  }
  return len;
}

/* Whether code point cp is written as an escape: '"', '\\', the C0 and C1
 * controls and DEL, and the two separators JavaScript takes as newlines. */
static int escaped(uint32_t cp) {
  return cp == '"' || cp == '\\' || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
         cp == 0x2028 || cp == 0x2029;
}

static void put_escape(FILE *out, uint32_t cp) {
  switch (cp) {
  case '"': fputs("\\\"", out); return;
  case '\\': fputs("\\\\", out); return;
  case '\b': fputs("\\b", out); return;
  case '\f': fputs("\\f", out); return;
  case '\n': fputs("\\n", out); return;
  case '\r': fputs("\\r", out); return;
  case '\t': fputs("\\t", out); return;
  }
  fprintf(out, "\\u%04" PRIx32, cp);
}

void json_put_string(FILE *out, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  fputc('"', out);
  while (i < n) {
    uint32_t cp = 0;
    size_t len = json_utf8_seq(p + i, n - i, &cp);
    if (len == 0) {
      fputs("\\ufffd", out); /* one per byte that is not UTF-8 */
      i++;
      continue;
    }
    if (escaped(cp))
      put_escape(out, cp);
    else
      fwrite(p + i, 1, len, out);
    i += len;
  }
  fputc('"', out);
}

void json_key(json_t *j, const char *key) {
  separate(j);
  json_put_string(j->out, key, strlen(key));
  fputc(':', j->out);
  j->after_key = 1;
}

void json_string(json_t *j, const char *s, size_t n) {
  separate(j);
  json_put_string(j->out, s, n);
}

void json_str(json_t *j, const char *s) {
  if (s)
    json_string(j, s, strlen(s));
  else
    json_null(j);
}

void json_int(json_t *j, int64_t v) {
  separate(j);
  fprintf(j->out, "%" PRId64, v);
}

void json_bool(json_t *j, int v) {
  separate(j);
  fputs(v ? "true" : "false", j->out);
}

void json_null(json_t *j) {
  separate(j);
  fputs("null", j->out);
}
