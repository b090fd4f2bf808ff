/* SPDX-License-Identifier: Apache-2.0 */
/* util.c: names, guids, time, handle registry. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int zkl__valid_name(const char *name) {
  size_t n;
  const unsigned char *p;
  if (name == NULL)
    return 0;
  n = strlen(name);
  if (n == 0 || n > ZKL_NAME_MAX)
    return 0;
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return 0;
  /* The server rejects "zookeeper" only at the top level; we refuse it
   * nowhere. Control characters are refused because tools print names. */
  for (p = (const unsigned char *)name; *p; p++)
    if (*p == '/' || *p < 0x20 || *p == 0x7f)
      return 0;
  return 1;
}

int zkl__valid_root(const char *root) {
  size_t n;
  const char *p, *slash;
  if (root == NULL || root[0] != '/')
    return 0;
  n = strlen(root);
  if (n < 2 || n > ZKL_ROOT_MAX || root[n - 1] == '/')
    return 0;
  for (p = root + 1;; p = slash + 1) {
    char comp[ZKL_ROOT_MAX + 1];
    size_t len;
    slash = strchr(p, '/');
    len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 0 || len > ZKL_NAME_MAX)
      return 0;
    memcpy(comp, p, len);
    comp[len] = '\0';
    if (!zkl__valid_name(comp))
      return 0;
    if (!slash)
      return 1;
  }
}

int zkl_name_check(const char *name) {
  return zkl__valid_name(name) ? ZKL_OK : ZKL_EINVAL;
}

int zkl_root_check(const char *root) {
  return zkl__valid_root(root) ? ZKL_OK : ZKL_EINVAL;
}

int zkl__guid(char out[ZKL__GUID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char raw[ZKL__GUID_LEN / 2];
  size_t got = 0;
  int i;
  while (got < sizeof raw) {
    ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return ZKL_ESYSTEM;
    }
    got += (size_t)r;
  }
  for (i = 0; i < ZKL__GUID_LEN / 2; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[ZKL__GUID_LEN] = '\0';
  return ZKL_OK;
}

/* Thread ids: see zkl__self_tid() in internal.h. initial-exec: a shared
 * library's TLS otherwise goes through __tls_get_addr on every access, a
 * function call on the nested path. The 8 bytes fit in the static TLS
 * surplus glibc keeps for libraries loaded later with dlopen. */
__thread uint64_t zkl__tid __attribute__((tls_model("initial-exec")));

uint64_t zkl__tid_assign(void) {
  static _Atomic uint64_t next = 1;
  zkl__tid = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
  return zkl__tid;
}

char *zkl__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

char *zkl__concat(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *d = malloc(la + lb + 1);
  if (d) {
    memcpy(d, a, la);
    memcpy(d + la, b, lb + 1);
  }
  return d;
}

char *zkl__child(const char *dir, const char *name) {
  size_t la = strlen(dir), lb = strlen(name);
  char *d = malloc(la + lb + 2);
  if (d) {
    memcpy(d, dir, la);
    d[la] = '/';
    memcpy(d + la + 1, name, lb + 1);
  }
  return d;
}

void zkl__deadline_ts(int64_t deadline_ms, struct timespec *ts) {
  /* A negative time would give a negative tv_nsec, which the timed waits
   * refuse (EINVAL), and one past what time_t holds would wrap: a
   * deadline passed, or too far to ever come, is clamped to one that is. */
  const int64_t far = sizeof(time_t) < 8 ? INT32_MAX : INT64_MAX / 2000;
  if (deadline_ms < 0)
    deadline_ms = 0;
  if (deadline_ms / 1000 > far)
    deadline_ms = far * 1000;
  ts->tv_sec = (time_t)(deadline_ms / 1000);
  ts->tv_nsec = (long)(deadline_ms % 1000) * 1000000;
}

/* Condition variables wait on CLOCK_MONOTONIC, the clock of deadlines. */
int zkl__cond_init(pthread_cond_t *cv) {
  pthread_condattr_t at;
  int rc;
  if (pthread_condattr_init(&at) != 0)
    return ZKL_ESYSTEM;
  pthread_condattr_setclock(&at, CLOCK_MONOTONIC);
  rc = pthread_cond_init(cv, &at);
  pthread_condattr_destroy(&at);
  return rc == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

/* ---- live handle registry ------------------------------------------------ */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static const void **reg;
static size_t reg_n, reg_cap;

int zkl__handle_add(const void *h) {
  int rc = ZKL_OK;
  pthread_mutex_lock(&reg_mu);
  if (reg_n == reg_cap) {
    size_t cap = reg_cap ? reg_cap * 2 : 16;
    const void **n = realloc(reg, cap * sizeof *n);
    if (!n)
      rc = ZKL_ENOMEM;
    else {
      reg = n;
      reg_cap = cap;
    }
  }
  if (rc == ZKL_OK)
    reg[reg_n++] = h;
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

static size_t reg_find(const void *h) {
  size_t i;
  for (i = 0; i < reg_n; i++)
    if (reg[i] == h)
      return i;
  return (size_t)-1;
}

int zkl__handle_remove(const void *h) {
  size_t i;
  int ok = 0;
  pthread_mutex_lock(&reg_mu);
  i = reg_find(h);
  if (i != (size_t)-1) {
    reg[i] = reg[--reg_n];
    ok = 1;
  }
  if (reg_n == 0) {
    free(reg);
    reg = NULL;
    reg_cap = 0;
  }
  pthread_mutex_unlock(&reg_mu);
  return ok;
}

int zkl__handle_live(const void *h) {
  int ok;
  pthread_mutex_lock(&reg_mu);
  ok = reg_find(h) != (size_t)-1;
  pthread_mutex_unlock(&reg_mu);
  return ok;
}

/* fork(): see zkl__forked() (internal.h). */
_Atomic unsigned zkl__fork_gen;

static void in_child(void) {
  atomic_fetch_add_explicit(&zkl__fork_gen, 1, memory_order_relaxed);
}

static void watch_forks(void) { pthread_atfork(NULL, NULL, in_child); }

void zkl__fork_watch(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, watch_forks);
}
