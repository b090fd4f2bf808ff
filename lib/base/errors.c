/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c: error text and names, version, clock, state names. */
#include "config.h"

#include <time.h>

#include "internal.h"

/* The header names ZooKeeper's codes (ZKL_ZK_ERRNO_MAP) so that users
 * need not include zookeeper.h: each must be zookeeper.h's very value. */
#define ZKL__ZK_SAME(name, code)                                               \
  _Static_assert((int)ZKL_##name == (int)name && (code) == (int)name,         \
                 "zklock.h's ZKL_" #name " differs from zookeeper.h's");
ZKL_ZK_ERRNO_MAP(ZKL__ZK_SAME)
#undef ZKL__ZK_SAME

const char *zkl_strerror(int rc) {
  switch (rc) {
  case ZKL_OK:
    return "success";
#define ZKL__ERR_TEXT(name, code, text)                                        \
  case code:                                                                   \
    return text;
    ZKL_ERRNO_MAP(ZKL__ERR_TEXT)
#undef ZKL__ERR_TEXT
  }
  /* zerror() knows every ZooKeeper code and says so for unknown ones. */
  if (rc < 0 && rc > -1000)
    return zerror(rc);
  return "unknown error";
}

const char *zkl_err_name(int rc) {
  switch (rc) {
  case ZKL_OK:
    return "ZKL_OK";
#define ZKL__ERR_NAME(name, code, text)                                        \
  case code:                                                                   \
    return "ZKL_" #name;
    ZKL_ERRNO_MAP(ZKL__ERR_NAME)
#undef ZKL__ERR_NAME
#define ZKL__ZK_NAME(name, code)                                               \
  case code:                                                                   \
    return #name;
    ZKL_ZK_ERRNO_MAP(ZKL__ZK_NAME)
#undef ZKL__ZK_NAME
  }
  return "ZKL_UNKNOWN";
}

const char *zkl_version(void) { return PACKAGE_VERSION; }

int64_t zkl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *zkl_lock_state_name(int state) {
  switch (state) {
  case ZKL_STATE_NONE:
    return "NONE";
  case ZKL_STATE_HELD:
    return "HELD";
  case ZKL_STATE_AT_RISK:
    return "AT_RISK";
  case ZKL_STATE_LOST:
    return "LOST";
  case ZKL_STATE_REVOKE_REQUESTED:
    return "REVOKE_REQUESTED";
  }
  return "UNKNOWN";
}
