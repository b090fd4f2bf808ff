/* digest.c: a client's own secret identity, as ZooKeeper's digest scheme
 * names it.
 *
 * Each client authenticates every session it makes with a digest
 * identity nobody else has ("zkl-<random>:<random secret>"), and gives
 * the nodes whose release it guards the right that identity alone holds
 * (release.c): a node made at the same name by any other client, zklock or
 * not, fails the guard. An ACL names a digest identity as
 * "user:base64(sha1(user:password))", which ZooKeeper computes the same
 * way from the credentials (DigestAuthenticationProvider): SHA-1 and
 * base64 are here for that and nothing else. SHA-1 is FIPS 180-4's; the
 * secret itself never leaves the process but in the auth packet. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static uint32_t rol(uint32_t x, int n) { return x << n | x >> (32 - n); }

/* One 64-byte block into the state h. */
static void sha1_block(uint32_t h[5], const unsigned char *p) {
  uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
  int i;
  for (i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (; i < 80; i++)
    w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  for (i = 0; i < 80; i++) {
    if (i < 20)
      f = (b & c) | (~b & d), k = 0x5a827999u;
    else if (i < 40)
      f = b ^ c ^ d, k = 0x6ed9eba1u;
    else if (i < 60)
      f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdcu;
    else
      f = b ^ c ^ d, k = 0xca62c1d6u;
    t = rol(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rol(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void zkl__sha1(const void *data, size_t len, unsigned char out[20]) {
  uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                   0xc3d2e1f0u};
  const unsigned char *p = data;
  unsigned char last[128];
  size_t rest = len % 64, tail, i;
  uint64_t bits = (uint64_t)len * 8;
  for (i = 0; i + 64 <= len; i += 64)
    sha1_block(h, p + i);
  /* the rest, a 1 bit, zeros, and the length in bits: one or two blocks */
  tail = rest < 56 ? 64 : 128;
  memset(last, 0, sizeof last);
  memcpy(last, p + len - rest, rest);
  last[rest] = 0x80;
  for (i = 0; i < 8; i++)
    last[tail - 1 - i] = (unsigned char)(bits >> (8 * i));
  for (i = 0; i < tail; i += 64)
    sha1_block(h, last + i);
  for (i = 0; i < 20; i++)
    out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

size_t zkl__base64(const unsigned char *in, size_t n, char *out) {
  static const char abc[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i, o = 0;
  for (i = 0; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    out[o++] = abc[v >> 18 & 63], out[o++] = abc[v >> 12 & 63];
    out[o++] = abc[v >> 6 & 63], out[o++] = abc[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
    out[o++] = abc[v >> 18 & 63], out[o++] = abc[v >> 12 & 63];
    out[o++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
    out[o++] = '=';
  }
  out[o] = '\0';
  return o;
}

int zkl__digest_id(const char *cred, char *out, size_t size) {
  const char *colon = strchr(cred, ':');
  unsigned char sum[20];
  size_t user = colon ? (size_t)(colon - cred) + 1 : 0;
  if (!colon || user + 29 > size)
    return ZKL_EINVAL;
  zkl__sha1(cred, strlen(cred), sum);
  memcpy(out, cred, user);
  zkl__base64(sum, sizeof sum, out + user);
  return ZKL_OK;
}

int zkl__identity_make(zkl__identity_t *id) {
  char user[ZKL__GUID_LEN + 1], secret[ZKL__GUID_LEN + 1];
  unsigned char sum[20];
  int rc;
  if ((rc = zkl__guid(user)) != ZKL_OK || (rc = zkl__guid(secret)) != ZKL_OK)
    return rc;
  snprintf(id->cred, sizeof id->cred, "zkl-%s:%s", user, secret);
  zkl__sha1(id->cred, strlen(id->cred), sum);
  snprintf(id->acl_id, sizeof id->acl_id, "zkl-%s:", user);
  zkl__base64(sum, sizeof sum, id->acl_id + strlen(id->acl_id));
  /* the secret stays in cred only */
  memset(secret, 0, sizeof secret);
  return ZKL_OK;
}
