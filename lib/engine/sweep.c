/* SPDX-License-Identifier: Apache-2.0 */
/* sweep.c: removing the lock parents nobody uses (zkl_sweep, zklock
 * --sweep).
 *
 * A lock's parent is a plain node made in its first node's transaction
 * (acquire.c, lean), which the server never removes, or a container,
 * which it removes once empty, but only at its next sweep (every minute
 * by default) and at most znode.container.maxPerMinute of them: a crash
 * that leaves no release or destroy to take the parent along can leave
 * many behind, plain ones for good. This does the server's work at once, for the children of one
 * root: a parent zklock made (its data is ZKL__DIR_MARK) with no
 * children. Nothing else is touched: kazoo's Lock makes its parent
 * persistent and relies on it staying (zklock's kazoo flavour too, which
 * writes no mark), a semaphore's parent says its N, and one made by hand
 * may carry ACLs someone set up.
 *
 * Nothing here is a hold's business: a parent deleted under a locker that
 * is about to create its node makes that create fail with ZNONODE, which
 * every join answers by making the parent again (acquire.c), as after the
 * server's own sweep. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/* Issues the n calls (each already initialised on cv) and waits for all;
 * `issue` sends call i, on paths[i], with vers[i] (a data version; -1
 * when vers is NULL). */
static void all_of(zkl_client_t *c, zkl__call_t *calls, int n,
                   void (*issue)(zkl__call_t *, zkl__session_t *,
                                 const char *, int),
                   zkl__session_t *s, char **paths, const int *vers) {
  zkl__call_t **ptrs = malloc((size_t)(n > 0 ? n : 1) * sizeof *ptrs);
  int i;
  if (!ptrs) {
    for (i = 0; i < n; i++)
      calls[i].done = 1, calls[i].rc = ZKL_ENOMEM;
    return;
  }
  for (i = 0; i < n; i++) {
    ptrs[i] = &calls[i];
    if (paths[i])
      issue(&calls[i], s, paths[i], vers ? vers[i] : -1);
    else
      calls[i].done = 1, calls[i].rc = ZKL_ENOMEM;
  }
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, n);
  pthread_mutex_unlock(&c->mu);
  free(ptrs);
}

static void read_one(zkl__call_t *call, zkl__session_t *s, const char *p,
                     int version) {
  (void)version;
  zkl__get(call, s, p, 0);
}

/* At the version read: a parent someone rewrote since, taking it for
 * theirs, stays (ZBADVERSION), as at a lock object's close (release.c,
 * model/README.md F10). */
static void delete_one(zkl__call_t *call, zkl__session_t *s, const char *p,
                       int version) {
#ifdef ZKL_FAULT_INJECTION
  if (atomic_exchange(&zkl__fault_dir_rewritten, 0))
    zkl__set_nowait(s, p, "x", 1, -1);
#endif
  zkl__delete_at(call, s, p, version);
}

/* Whether a read node is a parent zklock made, empty, and old enough. A
 * client cannot tell a container from a persistent node (the server shows
 * both with ephemeralOwner 0), so the data decides: ZKL__DIR_MARK, which
 * only the parents zklock makes carry, plain or container. */
static int unused(const zkl__call_t *r, int64_t older_ms, int64_t now) {
  const struct Stat *st = &r->stat;
  int64_t last = st->mtime > st->ctime ? st->mtime : st->ctime;
  return zkl__dir_marked(r->data, r->data_len) && st->numChildren == 0 &&
         st->ephemeralOwner == 0 && (older_ms <= 0 || now - last >= older_ms);
}

/* Reads every child of root, then deletes the unused ones; *removed
 * counts the deletes that landed. */
static int sweep_kids(zkl_client_t *c, zkl__session_t *s, const char *root,
                      const struct String_vector *kids, size_t *removed,
                      int64_t older_ms) {
  int n = kids->count, i, k = 0, rc = ZKL_OK;
  char **paths = calloc((size_t)n + 1, sizeof *paths);
  char **gone = calloc((size_t)n + 1, sizeof *gone); /* paths' to delete */
  int *vers = calloc((size_t)n + 1, sizeof *vers);    /* at these versions */
  zkl__call_t *st = calloc((size_t)n + 1, sizeof *st);
  zkl__call_t *del = calloc((size_t)n + 1, sizeof *del);
  pthread_cond_t cv;
  int64_t now = zkl_now_ms();
  if (!paths || !gone || !vers || !st || !del ||
      zkl__cond_init(&cv) != ZKL_OK) {
    rc = paths && gone && vers && st && del ? ZKL_ESYSTEM : ZKL_ENOMEM;
    free(paths), free(gone), free(vers), free(st), free(del);
    return rc;
  }
  for (i = 0; i < n; i++) {
    paths[i] = zkl__child(root, kids->data[i]);
    zkl__call_init(&st[i], c, &cv);
  }
  all_of(c, st, n, read_one, s, paths, NULL);
  for (i = 0; i < n; i++) {
    if (st[i].rc == ZOK && unused(&st[i], older_ms, now)) {
      gone[k] = paths[i], vers[k] = st[i].stat.version;
      zkl__call_init(&del[k++], c, &cv);
    } else if (st[i].rc != ZOK && st[i].rc != ZNONODE && rc == ZKL_OK) {
      rc = st[i].rc;
    }
    zkl__call_free(&st[i]);
  }
  all_of(c, del, k, delete_one, s, gone, vers);
  /* ZNOTEMPTY: someone came; ZNONODE: gone; ZBADVERSION: rewritten */
  for (i = 0; i < k; i++)
    *removed += del[i].rc == ZOK;
  for (i = 0; i < n; i++)
    free(paths[i]);
  pthread_cond_destroy(&cv);
  free(paths), free(gone), free(vers), free(st), free(del);
  return rc;
}

int zkl__sweep(zkl_client_t *c, const char *root, int64_t older_ms,
               size_t *removed) {
  pthread_cond_t cv;
  zkl__call_t sy, ls, *ptrs[2] = {&sy, &ls};
  zkl__session_t *s;
  int rc;
  *removed = 0;
  if (zkl__cond_init(&cv) != ZKL_OK)
    return ZKL_ESYSTEM;
  pthread_mutex_lock(&c->mu);
  s = zkl__session_get(c);
  pthread_mutex_unlock(&c->mu);
  zkl__call_init(&sy, c, &cv);
  zkl__call_init(&ls, c, &cv);
  /* a sync first: what we read then includes every release committed
   * before the call, whichever server it went through */
  zkl__sync(&sy, s, root);
  zkl__children(&ls, s, root);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 2);
  pthread_mutex_unlock(&c->mu);
  zkl__call_free(&sy);
  rc = ls.rc == ZNONODE ? ZOK : ls.rc;
  if (rc == ZOK && ls.kids.count > 0)
    rc = sweep_kids(c, s, root, &ls.kids, removed, older_ms);
  zkl__call_free(&ls);
  pthread_mutex_lock(&c->mu);
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
  pthread_cond_destroy(&cv);
  return rc;
}
