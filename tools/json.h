/* SPDX-License-Identifier: Apache-2.0 */
/* json.h: a small streaming JSON writer (RFC 8259) for the tools' --json
 * output. Values are written as they come, with the commas and colons
 * between them; nothing is buffered but what stdio buffers.
 *
 * Strings are taken by length and may hold any bytes, NUL included (node
 * data and names are written by any client of the ensemble). What comes
 * out is always valid JSON in UTF-8: '"' and '\\' are escaped, every
 * control character (U+0000..U+001F, U+007F..U+009F) and U+2028, U+2029
 * as \b \t \n \f \r or \uXXXX, and each byte that is not part of a valid
 * UTF-8 sequence (stray continuation bytes, overlong forms, surrogates,
 * code points past U+10FFFF, a sequence cut short) becomes U+FFFD, written
 * \ufffd. */
#ifndef ZKLOCK_JSON_H
#define ZKLOCK_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Deepest nesting of objects and arrays. */
#define JSON_DEPTH_MAX 16

typedef struct json {
  FILE *out;
  int depth;                     /* open objects and arrays */
  int after_key;                 /* a key was written: its value is next */
  unsigned count[JSON_DEPTH_MAX + 1]; /* values (or keys) at each depth */
} json_t;

/* Starts a document on `out`. */
void json_init(json_t *j, FILE *out);

/* Objects and arrays; nesting deeper than JSON_DEPTH_MAX is a caller's
 * bug (the extra levels are not opened, and their ends not written). */
void json_object_begin(json_t *j);
void json_object_end(json_t *j);
void json_array_begin(json_t *j);
void json_array_end(json_t *j);

/* A member's key (NUL-terminated), before its value. */
void json_key(json_t *j, const char *key);

/* Values. json_string writes n bytes of s; json_str writes a
 * NUL-terminated s, or null when s is NULL. */
void json_string(json_t *j, const char *s, size_t n);
void json_str(json_t *j, const char *s);
void json_int(json_t *j, int64_t v);
void json_bool(json_t *j, int v);
void json_null(json_t *j);

/* The length of the valid UTF-8 sequence at s (n > 0 bytes left), its
 * code point in *cp; 0 when s[0] does not start one (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF). */
size_t json_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);

/* Writes the JSON string literal of s (n bytes), quotes included, as
 * described above, on its own (no separator). */
void json_put_string(FILE *out, const char *s, size_t n);

#endif
