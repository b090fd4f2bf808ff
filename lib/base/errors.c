/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c: error text and names, version, clock, state names. */
#include "config.h"

#include <time.h>

#include "internal.h"

/* ZooKeeper's own codes, by name, so zkl_err_name() covers them too. */
#define ZKL__ZK_CODES(XX)                                                      \
  XX(ZSYSTEMERROR) XX(ZRUNTIMEINCONSISTENCY) XX(ZDATAINCONSISTENCY)            \
  XX(ZCONNECTIONLOSS) XX(ZMARSHALLINGERROR) XX(ZUNIMPLEMENTED)                 \
  XX(ZOPERATIONTIMEOUT) XX(ZBADARGUMENTS) XX(ZINVALIDSTATE)                    \
  XX(ZNEWCONFIGNOQUORUM) XX(ZRECONFIGINPROGRESS) XX(ZSSLCONNECTIONERROR)       \
  XX(ZAPIERROR) XX(ZNONODE) XX(ZNOAUTH) XX(ZBADVERSION)                        \
  XX(ZNOCHILDRENFOREPHEMERALS) XX(ZNODEEXISTS) XX(ZNOTEMPTY)                   \
  XX(ZSESSIONEXPIRED) XX(ZINVALIDCALLBACK) XX(ZINVALIDACL) XX(ZAUTHFAILED)     \
  XX(ZCLOSING) XX(ZNOTHING) XX(ZSESSIONMOVED) XX(ZNOTREADONLY)                 \
  XX(ZEPHEMERALONLOCALSESSION) XX(ZNOWATCHER) XX(ZRECONFIGDISABLED)            \
  XX(ZSESSIONCLOSEDREQUIRESASLAUTH) XX(ZTHROTTLEDOP)

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
#define ZKL__ZK_NAME(name)                                                     \
  case name:                                                                   \
    return #name;
    ZKL__ZK_CODES(ZKL__ZK_NAME)
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
