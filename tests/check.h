/* SPDX-License-Identifier: Apache-2.0 */
/* check.h: assertion macros that print both operands, and test plumbing. */
#ifndef ZKLOCK_TEST_CHECK_H
#define ZKLOCK_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

#define CHECK_INT(a, op, b)                                                    \
  do {                                                                         \
    long long va_ = (long long)(a), vb_ = (long long)(b);                      \
    if (!(va_ op vb_)) {                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s %s %s) failed: %lld vs %lld\n",         \
              __FILE__, __LINE__, #a, #op, #b, va_, vb_);                      \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

/* Compare zklock return codes and print their names. */
#define CHECK_RC(a, b)                                                         \
  do {                                                                         \
    int ra_ = (a), rb_ = (b);                                                  \
    if (ra_ != rb_) {                                                          \
      fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s (%d)\n",        \
              __FILE__, __LINE__, #a, zkl_err_name(ra_), ra_,                  \
              zkl_err_name(rb_), rb_);                                         \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *sa_ = (a), *sb_ = (b);                                         \
    if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                               \
      fprintf(stderr, "%s:%d: CHECK(%s == %s) failed: \"%s\" vs \"%s\"\n",     \
              __FILE__, __LINE__, #a, #b, sa_ ? sa_ : "(null)",                \
              sb_ ? sb_ : "(null)");                                           \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

/* Run one test function and print a TAP-like line. ZKL_TEST_ONLY=part
 * runs only the tests whose names contain it (for chasing a flake). */
#define RUN(fn)                                                                \
  do {                                                                         \
    int before_ = check_failures;                                              \
    const char *only_ = getenv("ZKL_TEST_ONLY");                               \
    if (only_ && !strstr(#fn, only_))                                          \
      break;                                                                   \
    fn();                                                                      \
    printf("%s %s\n", check_failures == before_ ? "ok" : "FAIL", #fn);         \
    fflush(stdout);                                                            \
  } while (0)

/* Polls a condition for up to ms milliseconds (tests only: the library
 * itself never sleeps to synchronise). Needs zklock.h and unistd.h. */
#define WAIT_FOR(cond, ms)                                                     \
  do {                                                                         \
    int64_t until_ = zkl_now_ms() + (ms);                                      \
    while (!(cond) && zkl_now_ms() < until_)                                   \
      usleep(10000);                                                           \
  } while (0)

#define CHECK_DONE()                                                           \
  (printf("%s\n", check_failures ? "FAILED" : "PASSED"),                       \
   check_failures ? 1 : 0)

#endif
