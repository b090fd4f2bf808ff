/* request.c: every request the engine and the recipes send to ZooKeeper,
 * one function each. Writes that may share a transaction go through group
 * commit (batch.c); the rest go straight to the C client. Each answer
 * comes back through call.c's completions. A watch is given the client's
 * watcher (c->watcher), wired by client.c. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Writes that do not go through group commit are counted out on their
 * session while they are (batch.c's nudge, ZOOKEEPER-4537): before they
 * leave, so that an answer never comes before the count; and back in by
 * these completions, before call.c's, which may free the call. */
static int out(zkl__call_t *call, zkl__session_t *s) {
  call->wsess = s;
  zkl__session_write_out(s, call->fn != NULL); /* fn calls: under c->mu */
  return ZOK;
}

static int sent(zkl__call_t *call, int kind, int rc) {
  if (rc != ZOK && call->wsess) /* refused: never out */
    zkl__session_write_in(call->wsess);
  return zkl__issued(call, kind, rc);
}

static void back(const void *data) {
  zkl__session_write_in(((const zkl__call_t *)data)->wsess);
}

static void on_create_w(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  back(data);
  zkl__on_create(rc, value, stat, data);
}

static void on_stat_w(int rc, const struct Stat *stat, const void *data) {
  back(data);
  zkl__on_stat(rc, stat, data);
}

static void on_void_w(int rc, const void *data) {
  back(data);
  zkl__on_void(rc, data);
}

static void on_sync(int rc, const char *value, const void *data) {
  (void)value;
  on_void_w(rc, data);
}

int zkl__create(zkl__call_t *call, zkl__session_t *s, const char *path,
                const char *data, int len, int flags) {
  if (!(flags & ZOO_CONTAINER)) /* see batch.c */
    return zkl__issued(call, ZKL_STATS_REQ_CREATE,
                       zkl__batch_create(call, s, path, data, len, flags,
                                         NULL));
  out(call, s);
  return sent(call, ZKL_STATS_REQ_CREATE,
              zoo_acreate2(s->zh, path, data, len, call->c->acl, flags,
                           on_create_w, call));
}

int zkl__create_own(zkl__call_t *call, zkl__session_t *s, const char *path,
                    const char *data, int len, int flags) {
  return zkl__issued(call, ZKL_STATS_REQ_CREATE,
                     zkl__batch_create(call, s, path, data, len, flags,
                                       &call->c->own_acl));
}

int zkl__create_dir(zkl__call_t *call, zkl__session_t *s, const char *path,
                    const char *data, int len, int persistent) {
  if (!data && !persistent) /* ours to sweep (zkl_sweep) */
    data = ZKL__DIR_MARK, len = (int)strlen(ZKL__DIR_MARK);
  out(call, s);
  return sent(call, ZKL_STATS_REQ_CREATE,
              zoo_acreate2(s->zh, path, data, len, call->c->acl,
                           persistent ? 0 : ZOO_CONTAINER, on_create_w, call));
}

int zkl__create_with_dir(zkl__call_t *call, zkl__call_t *pcall,
                         zkl__session_t *s, const char *path, const char *data,
                         int len, int flags, const char *dir) {
  int rc = zkl__batch_create_pair(call, pcall, s, path, data, len, flags, dir);
  zkl__issued(pcall, ZKL_STATS_REQ_CREATE, rc);
  return zkl__issued(call, ZKL_STATS_REQ_CREATE, rc);
}

int zkl__children(zkl__call_t *call, zkl__session_t *s, const char *path) {
  return zkl__issued(
      call, ZKL_STATS_REQ_GET_CHILDREN,
      zoo_aget_children2(s->zh, path, 0, zkl__on_children, call));
}

int zkl__children_after(zkl__call_t *call, zkl__session_t *s, const char *path,
                        zkl__call_t *create) {
  return zkl__issued(call, ZKL_STATS_REQ_GET_CHILDREN,
                     zkl__batch_list(call, s, path, create));
}

#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_get_rewritten;

static void on_fault_set(int rc, const struct Stat *st, const void *data) {
  (void)rc, (void)st, (void)data;
}
#endif

int zkl__get(zkl__call_t *call, zkl__session_t *s, const char *path,
             int watch) {
  int rc;
  /* getData, not exists: a node already gone leaves no dangling watch. */
  if (watch)
    rc = zkl__issued(
        call, ZKL_STATS_REQ_GET_DATA,
        zoo_awget(s->zh, path, call->c->watcher, call->c, zkl__on_data, call));
  else
    rc = zkl__issued(call, ZKL_STATS_REQ_GET_DATA,
                     zoo_aget(s->zh, path, 0, zkl__on_data, call));
#ifdef ZKL_FAULT_INJECTION
  /* someone else rewrites the node right after our read, ahead of
   * anything we send next on s */
  if (rc == ZOK && atomic_exchange(&zkl__fault_get_rewritten, 0))
    (void)zoo_aset(s->zh, path, "x", 1, -1, on_fault_set, NULL);
#endif
  return rc;
}

int zkl__exists(zkl__call_t *call, zkl__session_t *s, const char *path) {
  return zkl__issued(call, ZKL_STATS_REQ_EXISTS,
                     zoo_aexists(s->zh, path, 0, zkl__on_stat, call));
}

int zkl__exists_watch(zkl__call_t *call, zkl__session_t *s, const char *path) {
  return zkl__issued(
      call, ZKL_STATS_REQ_EXISTS,
      zoo_awexists(s->zh, path, call->c->watcher, call->c, zkl__on_stat, call));
}

int zkl__delete(zkl__call_t *call, zkl__session_t *s, const char *path) {
  return zkl__issued(call, ZKL_STATS_REQ_DELETE,
                     zkl__batch_delete(call, s, path, -1));
}

int zkl__delete_at(zkl__call_t *call, zkl__session_t *s, const char *path,
                   int version) {
  return zkl__issued(call, ZKL_STATS_REQ_DELETE,
                     zkl__batch_delete(call, s, path, version));
}

int zkl__delete_guarded(zkl__call_t *gcall, zkl__call_t *call,
                        zkl__call_t *pcall, zkl__session_t *s,
                        const char *path, int set, int version,
                        const char *parent) {
  int rc = zkl__batch_delete_guarded(gcall, call, pcall, s, path, set,
                                     version, parent);
  zkl__issued(gcall, set ? ZKL_STATS_REQ_SET_DATA : ZKL_STATS_REQ_CHECK, rc);
  if (parent)
    zkl__issued(pcall, ZKL_STATS_REQ_DELETE, rc);
  return zkl__issued(call, ZKL_STATS_REQ_DELETE, rc);
}

int zkl__delete_with_parent(zkl__call_t *call, zkl__call_t *pcall,
                            zkl__session_t *s, const char *path,
                            const char *dir) {
  int rc = zkl__batch_delete_pair(call, pcall, s, path, dir);
  zkl__issued(pcall, ZKL_STATS_REQ_DELETE, rc);
  return zkl__issued(call, ZKL_STATS_REQ_DELETE, rc);
}

int zkl__set(zkl__call_t *call, zkl__session_t *s, const char *path,
             const char *data, int len, int version) {
  out(call, s);
  return sent(call, ZKL_STATS_REQ_SET_DATA,
              zoo_aset(s->zh, path, data, len, version, on_stat_w, call));
}

static void on_stat_ignored(int rc, const struct Stat *stat, const void *data) {
  (void)rc, (void)stat, (void)data;
}

void zkl__set_nowait(zkl__session_t *s, const char *path, const char *data,
                     int len, int version) {
  zkl_client_t *c = s->c;
  atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
  zkl__stat_add(&c->stats.requests[ZKL_STATS_REQ_SET_DATA], 1);
  /* the C client copies path and data into its request at once */
  (void)zoo_aset(s->zh, path, data, len, version, on_stat_ignored, NULL);
}

int zkl__sync(zkl__call_t *call, zkl__session_t *s, const char *path) {
  out(call, s);
  return sent(call, ZKL_STATS_REQ_SYNC, zoo_async(s->zh, path, on_sync, call));
}

int zkl__multi(zkl__call_t *call, zkl__session_t *s, int n, const zoo_op_t *ops,
               zoo_op_result_t *results) {
  int rc;
  out(call, s);
  rc = zkl__zoo_amulti(s->zh, n, ops, results, on_void_w, call);
  if (rc == ZOK)
    zkl__stats_transaction(&call->c->stats, n);
  return sent(call, ZKL_STATS_REQ_MULTI, rc);
}
