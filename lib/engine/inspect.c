/* SPDX-License-Identifier: Apache-2.0 */
/* inspect.c: reading a queue for humans and tools (who holds, who waits). */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void zkl_contenders_free(zkl_contender_t *list, size_t count) {
  size_t i;
  if (!list)
    return;
  for (i = 0; i < count; i++) {
    free(list[i].node);
    free(list[i].host);
    free(list[i].data);
    free(list[i].id);
  }
  free(list);
}

/* Sends one getData per contender back to back, then waits for all. */
static int read_all(zkl_client_t *c, zkl__session_t *s, const char *dir,
                    const zkl__entry_t *it, int n, zkl_contender_t *out,
                    size_t *count) {
  pthread_cond_t cv;
  zkl__call_t *calls = calloc((size_t)n, sizeof *calls);
  zkl__call_t **ptrs = calloc((size_t)n, sizeof *ptrs);
  int i, rc = ZKL_OK;
  size_t k = 0;
  if (!calls || !ptrs || zkl__cond_init(&cv) != ZKL_OK) {
    free(calls), free(ptrs);
    return calls && ptrs ? ZKL_ESYSTEM : ZKL_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    char *path = zkl__child(dir, it[i].name);
    zkl__call_init(&calls[i], c, &cv);
    ptrs[i] = &calls[i];
    if (path)
      zkl__get(&calls[i], s, path, 0);
    else
      calls[i].done = 1, calls[i].rc = ZKL_ENOMEM;
    free(path);
  }
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, n);
  pthread_mutex_unlock(&c->mu);
  for (i = 0; i < n; i++) {
    zkl__call_t *cl = &calls[i];
    if (rc == ZKL_OK && cl->rc == ZOK) {
      zkl_contender_t *e = &out[k++];
      e->node = zkl__strdup(it[i].name);
      e->seq = it[i].seq;
      e->czxid = cl->stat.czxid;
      e->ctime_ms = cl->stat.ctime;
      e->owner = cl->stat.ephemeralOwner;
      e->mode = (it[i].kind & ZKL__KIND_LEASE) ? ZKL_MODE_LEASE
                : (it[i].kind & ZKL__KIND_EXCL) &&
                        !zkl__data_mark(cl->data, (size_t)cl->data_len,
                                        ZKL__LINE_READ)
                    ? ZKL_MODE_EXCLUSIVE
                    : ZKL_MODE_SHARED;
      rc = e->node ? zkl__parse_node_data(e, cl->data, (size_t)cl->data_len)
                   : ZKL_ENOMEM;
    } else if (rc == ZKL_OK && cl->rc != ZNONODE) {
      rc = cl->rc; /* a node that vanished is simply left out */
    }
    zkl__call_free(cl);
  }
  *count = k;
  pthread_cond_destroy(&cv);
  free(calls), free(ptrs);
  return rc;
}

struct ranked {
  int rank;
  zkl_contender_t e;
};

static int by_rank(const void *x, const void *y) {
  const struct ranked *a = x, *b = y;
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  return strcmp(a->e.node, b->e.node);
}

/* Puts a listing in the order contenders themselves decide (policy.c),
 * and marks who holds as they decide it:
 * by how many ephemeral contenders stand before each, computed pair by
 * pair, so planted names cannot make the listing disagree with the
 * queue; nodes that are not ephemeral, which nobody waits behind, last.
 * The sort is on those counts, plain integers, never on the sequences. */
static int order_listing(zkl_contender_t *res, size_t n, int limit) {
  zkl__entry_t *e = malloc(n * sizeof *e);
  unsigned char *skip = calloc(n, 1);
  struct ranked *r = malloc(n * sizeof *r);
  size_t i;
  int rc = ZKL_ENOMEM;
  if (e && skip && r) {
    for (i = 0; i < n; i++) {
      zkl__name_parse(res[i].node, &e[i].seq, &e[i].kind);
      e[i].name = res[i].node;
      skip[i] = res[i].owner == 0;
    }
    for (i = 0; i < n; i++) {
      zkl__plan_t p;
      r[i].rank = skip[i] ? INT_MAX : zkl__place(e, (int)n, (int)i, skip, NULL);
      res[i].holds = 0;
      if (!skip[i]) {
        /* a lease that says its N is judged by it: the directory's
         * data may have been rewritten since (recover.c, "agreeing") */
        int own = (e[i].kind & ZKL__KIND_LEASE) ? zkl__lease_limit(e[i].name)
                                                : 0;
        zkl__decide(e, (int)n, (int)i, skip, own ? own : limit, &p);
        /* a reader whose one conflict is a writer that downgraded (its
         * data read "mode=read", so res shows it shared) holds, as the
         * reader itself finds (acquire.c, plan.downgrade_ok) */
        res[i].holds = p.before == 0 ||
                       (p.downgrade_ok &&
                        res[p.watch[0]].mode == ZKL_MODE_SHARED);
      }
      r[i].e = res[i];
    }
    qsort(r, n, sizeof *r, by_rank);
    for (i = 0; i < n; i++)
      res[i] = r[i].e;
    rc = ZKL_OK;
  }
  free(e), free(skip), free(r);
  return rc;
}

/* <dir> itself is ephemeral: a flat lock's node (ZKL_MUTEX_FLAT), held.
 * It is the one entry, read by the getData gd. */
static int flat_entry(const char *dir, const zkl__call_t *gd,
                      zkl_contender_t **res, size_t *count) {
  zkl_contender_t *e = calloc(1, sizeof *e);
  int rc;
  if (!e || !(e->node = zkl__strdup(strrchr(dir, '/') + 1))) {
    free(e);
    return ZKL_ENOMEM;
  }
  e->czxid = gd->stat.czxid;
  e->ctime_ms = gd->stat.ctime;
  e->owner = gd->stat.ephemeralOwner;
  e->mode = ZKL_MODE_EXCLUSIVE;
  e->holds = 1;
  rc = zkl__parse_node_data(e, gd->data, (size_t)gd->data_len);
  *res = e;
  *count = 1;
  return rc;
}

/* A listing is reads alone, so one that met a lost connection or the end
 * of its session is read again on the next usable session, for about a
 * session timeout from its start (as zkl_revoke()'s requests): a client
 * whose session just expired lists from the new one, and never hands back
 * the dead handle's code. r holds the session read on, taken by
 * reader_take() and given back by reader_again(). */
typedef struct {
  zkl__session_t *s;
  uint64_t epoch;
  int64_t until;
} reader_t;

static void reader_take(zkl_client_t *c, reader_t *r) {
  pthread_mutex_lock(&c->mu);
  if (!r->until)
    r->until = zkl_now_ms() +
               (c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req);
  r->s = zkl__session_get(c);
  r->epoch = c->conn_epoch;
  pthread_mutex_unlock(&c->mu);
}

/* Gives r's session back; 1 when the listing that ended with *rc should be
 * read again (a usable session came), else 0 with *rc the verdict. */
static int reader_again(zkl_client_t *c, reader_t *r, int *rc) {
  int again = zkl__is_conn_error(*rc) || zkl__is_session_error(*rc);
  int wrc = ZKL_OK;
  pthread_mutex_lock(&c->mu);
  if (again)
    wrc = c->stopping ? ZKL_ECLOSED
                      : zkl__wait_usable(c, r->s, r->epoch, r->until);
  zkl__session_put(c, r->s); /* after the wait: it compares sessions */
  pthread_mutex_unlock(&c->mu);
  r->s = NULL;
  if (!again)
    return 0;
  if (wrc != ZKL_OK && wrc != ZKL_ETIMEDOUT)
    *rc = wrc;
  return wrc == ZKL_OK;
}

/* dir's queue, read on s. */
static int list_on(zkl_client_t *c, zkl__session_t *s, const char *dir,
                   zkl_contender_t **out, size_t *count) {
  pthread_cond_t cv;
  zkl__call_t sy, ls, gd, *ptrs[3] = {&sy, &ls, &gd};
  zkl__entry_t *it = NULL;
  zkl_contender_t *res = NULL;
  int n, rc, limit;
  *count = 0;
  if (zkl__cond_init(&cv) != ZKL_OK)
    return ZKL_ESYSTEM;
  zkl__call_init(&sy, c, &cv);
  zkl__call_init(&ls, c, &cv);
  zkl__call_init(&gd, c, &cv);
  /* sync first, in the same round trip: the server we read from has then
   * applied every write committed before the call, so a lock released by
   * another session just before is not shown as held; the directory's
   * data says how many leases a semaphore has */
  zkl__sync(&sy, s, dir);
  zkl__children(&ls, s, dir);
  zkl__get(&gd, s, dir, 0);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 3);
  pthread_mutex_unlock(&c->mu);
  zkl__call_free(&sy);
  limit = gd.rc == ZOK ? zkl__dir_limit(gd.data, (size_t)gd.data_len) : 0;
  rc = ls.rc == ZNONODE ? ZOK : ls.rc;
  if (rc == ZOK && gd.rc == ZOK && gd.stat.ephemeralOwner != 0)
    rc = flat_entry(dir, &gd, &res, count);
  zkl__call_free(&gd);
  if (rc == ZOK && ls.kids.count > 0) {
    n = zkl__contenders(ls.kids.data, ls.kids.count, &it);
    res = n >= 0 ? calloc((size_t)n + 1, sizeof *res) : NULL;
    rc = !res ? ZKL_ENOMEM : n ? read_all(c, s, dir, it, n, res, count) : ZOK;
    if (rc == ZOK && *count > 0)
      rc = order_listing(res, *count, limit);
  }
  free(it);
  zkl__call_free(&ls);
  pthread_cond_destroy(&cv);
  if (rc != ZOK || *count == 0) {
    zkl_contenders_free(res, *count);
    *count = 0;
    res = NULL;
  }
  *out = res;
  return rc;
}

int zkl__queue_list(zkl_client_t *c, const char *dir, zkl_contender_t **out,
                    size_t *count) {
  reader_t r = {NULL, 0, 0};
  int rc;
  do {
    reader_take(c, &r);
    rc = list_on(c, r.s, dir, out, count);
  } while (reader_again(c, &r, &rc));
  return rc;
}

int zkl__list_named(zkl_client_t *c, const char *root, const char *name,
                    zkl_contender_t **out, size_t *count) {
  char *dir;
  int rc;
  if (out)
    *out = NULL;
  if (count)
    *count = 0;
  if (!c || !out || !count || !zkl__handle_live(c) ||
      !zkl__valid_name(name) || !zkl__valid_root(root))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  if (!(dir = zkl__child(root, name)))
    return ZKL_ENOMEM;
  rc = zkl__queue_list(c, dir, out, count);
  free(dir);
  return rc;
}

void zkl_locks_free(zkl_lock_info_t *list, size_t count) {
  size_t i;
  if (!list)
    return;
  for (i = 0; i < count; i++) {
    free(list[i].name);
    zkl_contenders_free(list[i].contenders, list[i].count);
  }
  free(list);
}

static int name_order(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* root's children, sorted, after a sync, read on s: *names (n of them,
 * NULL when none or root is missing), each the caller's to free. */
static int children_on(zkl_client_t *c, zkl__session_t *s, const char *root,
                       char ***names, size_t *n) {
  pthread_cond_t cv;
  zkl__call_t sy, ls, *ptrs[2] = {&sy, &ls};
  int rc, i;
  *names = NULL;
  *n = 0;
  if (zkl__cond_init(&cv) != ZKL_OK)
    return ZKL_ESYSTEM;
  zkl__call_init(&sy, c, &cv);
  zkl__call_init(&ls, c, &cv);
  zkl__sync(&sy, s, root); /* as list_on(): every earlier write */
  zkl__children(&ls, s, root);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 2);
  pthread_mutex_unlock(&c->mu);
  zkl__call_free(&sy);
  rc = ls.rc == ZNONODE ? ZOK : ls.rc;
  if (rc == ZOK && ls.kids.count > 0 &&
      !(*names = calloc((size_t)ls.kids.count, sizeof **names)))
    rc = ZKL_ENOMEM;
  for (i = 0; rc == ZOK && i < ls.kids.count; i++)
    if (!((*names)[(*n)++] = zkl__strdup(ls.kids.data[i])))
      rc = ZKL_ENOMEM;
  if (rc == ZOK && *n > 1)
    qsort(*names, *n, sizeof **names, name_order);
  zkl__call_free(&ls);
  pthread_cond_destroy(&cv);
  if (rc != ZOK) {
    while (*n > 0)
      free((*names)[--*n]);
    free(*names);
    *names = NULL;
  }
  return rc;
}

static int root_children(zkl_client_t *c, const char *root, char ***names,
                         size_t *n) {
  reader_t r = {NULL, 0, 0};
  int rc;
  do {
    reader_take(c, &r);
    rc = children_on(c, r.s, root, names, n);
  } while (reader_again(c, &r, &rc));
  return rc;
}

int zkl__root_list(zkl_client_t *c, const char *root, zkl_lock_info_t **out,
                   size_t *count) {
  char **names = NULL;
  size_t n = 0, i;
  zkl_lock_info_t *res = NULL;
  int rc = root_children(c, root, &names, &n);
  if (rc == ZKL_OK && n > 0 && !(res = calloc(n, sizeof *res)))
    rc = ZKL_ENOMEM;
  /* one queue at a time: each is listed as zkl_mutex_queue() lists it;
   * a child gone meanwhile lists empty, as a lock never used */
  for (i = 0; rc == ZKL_OK && i < n; i++) {
    char *dir = zkl__child(root, names[i]);
    res[i].name = names[i];
    names[i] = NULL;
    rc = dir ? zkl__queue_list(c, dir, &res[i].contenders, &res[i].count)
             : ZKL_ENOMEM;
    free(dir);
  }
  for (i = 0; i < n; i++)
    free(names[i]);
  free(names);
  if (rc != ZKL_OK) {
    zkl_locks_free(res, n);
    res = NULL;
    n = 0;
  }
  *out = res;
  *count = n;
  return rc;
}
