/* SPDX-License-Identifier: Apache-2.0 */
/* revoke.c: asking a lock's holders to give it up, and taking it from
 * those that do not.
 *
 * The request is a line "revoke=<nonce>,<grace_ms>" added to the header
 * of the holder's node data by a conditional setData, merged again on a
 * version conflict: the holder's identity lines and other revokers'
 * requests stay. The holder's own-node watch (acq.c) reads it and reports
 * REVOKE_REQUESTED. After the grace period the revoker deletes the node
 * by its exact name; names are never reused, so that is the acquisition
 * it asked, never a later one. A waiter holds nothing: its node goes at
 * once, and its acquire ends with ZKL_EREVOKED (acquire.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Requests a holder's data may carry before more add nothing but bytes:
 * it has been asked. */
#define REQUESTS_MAX 16
/* Conditional writes tried while the data keeps changing under us. */
#define WRITE_TRIES 16

enum { REVOKE_GET, REVOKE_SET, REVOKE_WATCH, REVOKE_DELETE };

typedef struct {
  zkl_client_t *c;
  pthread_cond_t cv;
  int64_t patience; /* how long a request waits for a connection */
} revoker_t;

/* One request on the current session, sent again once connected after a
 * connection loss (so a set carries a version, and a delete's ZNONODE
 * after a retry may be our own first attempt's). The call's result stays in
 * *call for the caller to read and free. */
static int request(revoker_t *v, int op, const char *path, const char *data,
                   int len, int version, zkl__call_t *call) {
  zkl_client_t *c = v->c;
  int64_t until = zkl_now_ms() + v->patience;
  for (;;) {
    zkl__call_t *ptrs[1] = {call};
    zkl__session_t *s;
    uint64_t epoch;
    int rc, again, wrc = ZKL_OK;
    pthread_mutex_lock(&c->mu);
    if (c->stopping) {
      pthread_mutex_unlock(&c->mu);
      return ZKL_ECLOSED;
    }
    s = zkl__session_get(c);
    epoch = c->conn_epoch;
    pthread_mutex_unlock(&c->mu);
    zkl__call_init(call, c, &v->cv);
    switch (op) {
    case REVOKE_GET:
      zkl__get(call, s, path, 0);
      break;
    case REVOKE_SET:
      zkl__set(call, s, path, data, len, version);
      break;
    case REVOKE_WATCH:
      zkl__exists_watch(call, s, path);
      break;
    default:
      zkl__delete(call, s, path);
      break;
    }
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = call->rc;
    /* a session error (ZINVALIDSTATE too: the handle died under the
     * call) waits for the next session, as a lost connection does */
    again = zkl__is_conn_error(rc) || zkl__is_session_error(rc);
    if (again)
      wrc = zkl__wait_usable(c, s, epoch, until);
    zkl__session_put(c, s);
    pthread_mutex_unlock(&c->mu);
    if (!again)
      return rc;
    if (wrc != ZKL_OK)
      return wrc == ZKL_ETIMEDOUT ? rc : wrc;
    zkl__call_free(call);
  }
}

/* Writes our request into path's data. ZOK (written, found written by
 * an earlier try, or the node is not zklock's: nothing to write there),
 * ZNONODE (released meanwhile), or what failed. */
static int ask(revoker_t *v, const char *path, const char *line) {
  int tries, rc = ZOK;
  for (tries = 0; tries < WRITE_TRIES; tries++) {
    zkl__call_t get, set;
    char *nd;
    size_t len, nlen;
    rc = request(v, REVOKE_GET, path, NULL, 0, 0, &get);
    len = rc == ZOK ? (size_t)get.data_len : 0;
    if (rc != ZOK || !zkl__data_ours(get.data, len) ||
        zkl__data_mark(get.data, len, line) ||
        zkl__revoke_count(get.data, len) >= REQUESTS_MAX) {
      zkl__call_free(&get);
      return rc;
    }
    rc = zkl__data_add_line(get.data, len, line, &nd, &nlen);
    if (rc != ZKL_OK) {
      zkl__call_free(&get);
      return rc;
    }
    rc = request(v, REVOKE_SET, path, nd, (int)nlen, get.stat.version, &set);
    zkl__call_free(&get);
    zkl__call_free(&set);
    free(nd);
    if (rc != ZBADVERSION) /* else someone wrote meanwhile: merge again */
      return rc;
  }
  return rc;
}

/* Waits until path is gone or deadline_ms passes: 1 gone, 0 still there,
 * or a negative code. Woken by the watch's event (zkl__path_watcher
 * counts node events while revokers wait), never by polling. */
static int wait_gone(revoker_t *v, const char *path, int64_t deadline_ms) {
  zkl_client_t *c = v->c;
  struct timespec ts;
  int rc = 0;
  zkl__deadline_ts(deadline_ms, &ts);
  pthread_mutex_lock(&c->mu);
  c->node_waiters++;
  for (;;) {
    uint64_t seen = c->node_events;
    zkl__call_t ex;
    int zrc;
    pthread_mutex_unlock(&c->mu);
    zrc = request(v, REVOKE_WATCH, path, NULL, 0, 0, &ex);
    zkl__call_free(&ex);
    pthread_mutex_lock(&c->mu);
    if (zrc != ZOK) {
      rc = zrc == ZNONODE ? 1 : zrc;
      break;
    }
    while (c->node_events == seen && !c->stopping &&
           zkl_now_ms() < deadline_ms)
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    if (c->stopping) {
      rc = ZKL_ECLOSED;
      break;
    }
    if (c->node_events == seen)
      break; /* the deadline */
  }
  c->node_waiters--;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* Asks, waits, forces: the targets' paths, holders first (nhold). */
static int revoke_paths(revoker_t *v, char **paths, size_t n, size_t nhold,
                        int64_t grace_ms, unsigned *forced) {
  char guid[ZKL__GUID_LEN + 1], line[ZKL__REVOKE_LINE_MAX];
  int64_t deadline = zkl_now_ms() + (grace_ms > 0 ? grace_ms : 0);
  size_t i;
  int rc = ZOK;
  if (zkl__guid(guid) != ZKL_OK)
    return ZKL_ESYSTEM;
  if ((rc = zkl__revoke_line(line, sizeof line, guid, grace_ms)) != ZKL_OK)
    return rc;
  /* a waiter holds nothing: it is not asked, only taken out of the queue */
  for (i = nhold; i < n && rc == ZOK; i++) {
    zkl__call_t del;
    rc = request(v, REVOKE_DELETE, paths[i], NULL, 0, 0, &del);
    zkl__call_free(&del);
    if (rc == ZOK)
      ++*forced;
    if (rc == ZNONODE)
      rc = ZOK;
  }
  for (i = 0; i < nhold && rc == ZOK; i++)
    if ((rc = ask(v, paths[i], line)) == ZNONODE)
      rc = ZOK;
  if (rc != ZOK || grace_ms < 0)
    return rc;
  for (i = 0; i < nhold && rc == ZOK; i++) {
    int gone = wait_gone(v, paths[i], deadline);
    zkl__call_t del;
    if (gone < 0)
      return gone;
    if (gone)
      continue;
    rc = request(v, REVOKE_DELETE, paths[i], NULL, 0, 0, &del);
    zkl__call_free(&del);
    if (rc == ZOK) {
      ++*forced;
      zkl__log(v->c, ZKL_LOG_INFO, "%s: not released within %lld ms: deleted",
               paths[i], (long long)grace_ms);
    }
    if (rc == ZNONODE)
      rc = ZOK;
  }
  return rc;
}

int zkl_revoke(zkl_client_t *c, const char *root, const char *name,
               const char *node, int64_t grace_ms, unsigned *forced) {
  revoker_t v;
  zkl_contender_t *list = NULL;
  size_t count = 0, i, n = 0, nhold = 0;
  char **paths = NULL, *dir = NULL;
  unsigned dummy = 0;
  int rc;
  if (!forced)
    forced = &dummy;
  *forced = 0;
  if (!root)
    root = "/locks";
  if (!c || !zkl__handle_live(c) || !zkl__valid_name(name) ||
      !zkl__valid_root(root) || (node && !zkl__valid_name(node)))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  if ((rc = zkl__list_named(c, root, name, &list, &count)) != ZKL_OK)
    return rc;
  v.c = c;
  pthread_mutex_lock(&c->mu);
  v.patience = c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req;
  pthread_mutex_unlock(&c->mu);
  if (zkl__cond_init(&v.cv) != ZKL_OK) {
    zkl_contenders_free(list, count);
    return ZKL_ESYSTEM;
  }
  dir = zkl__child(root, name);
  paths = calloc(count + 1, sizeof *paths);
  rc = dir && paths ? ZKL_OK : ZKL_ENOMEM;
  /* holders first, then (only when named) a waiter; the listing is in
   * queue order, holders at its head */
  for (i = 0; i < count && rc == ZKL_OK; i++) {
    if (node ? strcmp(list[i].node, node) != 0 : !list[i].holds)
      continue;
    if (!(paths[n] = zkl__child(dir, list[i].node)))
      rc = ZKL_ENOMEM;
    else if (list[i].holds)
      nhold = ++n;
    else
      n++;
  }
  if (rc == ZKL_OK && n == 0)
    rc = ZKL_ENOTHELD;
  if (rc == ZKL_OK)
    rc = revoke_paths(&v, paths, n, nhold, grace_ms, forced);
  for (i = 0; paths && i < n; i++)
    free(paths[i]);
  free(paths);
  free(dir);
  zkl_contenders_free(list, count);
  pthread_cond_destroy(&v.cv);
  return rc;
}
