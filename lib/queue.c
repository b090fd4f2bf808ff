/* queue.c: the queue protocol shared by every recipe.
 *
 * A contender creates an ephemeral sequential node <dir>/<guid><marker><seq>
 * and sends getChildren(<dir>) right behind it without waiting: the session
 * runs its requests in order, so one round trip both creates our node and
 * lists a queue that contains it. The lowest sequence holds. Any other
 * contender watches only its immediate predecessor (getData, so a node that
 * is already gone leaves no watch behind) and sleeps on its condition
 * variable. When a predecessor that was the head of our last listing goes,
 * nothing lower can exist (sequence numbers only grow), so we hold without
 * listing again; in every other case we list again.
 *
 * Every path that gives up deletes our node: at once, or through the
 * client's deferred deletes when the connection is down, or by the session
 * ending. No orphan may block the queue.
 *
 * All functions here run on the caller's thread with c->mu held; they drop
 * it only around sending requests. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Internal outcomes, never returned to users. */
enum {
  RETRY = 1,  /* our node is gone with its session, or unknown: join again */
  RELIST = 2, /* look at the queue again */
  HOLD = 3,   /* we are the head */
  REJOIN = 4  /* the queue's parents were missing and are made: join again */
};

/* Most planted nodes one queue object remembers; past that, a queue full
 * of them is an attack we report instead of growing without bound. */
#define IGNORED_MAX 1024

/* How many times in a row a missing parent may make us retry: a container
 * parent can be reaped between our mkdir and our create, but not forever. */
#define NONODE_RETRIES 8

typedef struct {
  zkl__queue_t *q;
  zkl__acq_t *a;
  int mode;
  int64_t deadline; /* -1: none */
  uint64_t gen;     /* q->cancel_gen when we started */
  int shared;       /* join with the queue's shared marker */
  int waited;       /* we waited for someone (a semaphore relays) */
  int behind;       /* our last listing had contenders after us */
  int agreed;       /* the queue's directory data matched q->dir_data */
  int nonode;
  int first; /* no look at the queue yet */
} run_t;

static void queue_fini(zkl__queue_t *q);

static int queue_init(zkl__queue_t *q, zkl_client_t *c,
                      const zkl__queue_spec_t *sp) {
  char *tmp, max[32];
  memset(q, 0, sizeof *q);
  q->c = c;
  q->marker = sp->marker;
  q->marker_shared = sp->marker_shared;
  q->flags = sp->flags;
  q->limit = sp->limit;
  q->notify = sp->notify;
  tmp = zkl__join(sp->root, "/");
  q->dir = tmp ? zkl__join(tmp, sp->name) : NULL;
  free(tmp);
  q->prefix = q->dir ? zkl__join(q->dir, "/") : NULL;
  if (sp->len && (q->user_data = malloc(sp->len)))
    memcpy(q->user_data, sp->data, sp->len);
  q->user_len = sp->len;
  if (sp->id)
    q->id = zkl__strdup(sp->id);
  if (sp->limit) {
    snprintf(max, sizeof max, "max=%d", sp->limit); /* see zkl__dir_limit() */
    q->dir_data = zkl__strdup(max);
  }
  if (!q->dir || !q->prefix || (sp->len && !q->user_data) ||
      (sp->id && !q->id) || (sp->limit && !q->dir_data)) {
    queue_fini(q);
    return ZKL_ENOMEM;
  }
  return ZKL_OK;
}

int zkl__recipe_args(zkl_client_t *c, const char *name, const char *root,
                     const void *data, size_t len, unsigned flags,
                     unsigned allowed) {
  if (!c || !zkl__handle_live(c) || !zkl__valid_name(name) ||
      !zkl__valid_root(root))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  if (len > ZKL_DATA_MAX || (len && !data) || (flags & ~allowed))
    return ZKL_EINVAL;
  return ZKL_OK;
}

zkl__acq_t *zkl__hold_find(zkl__acq_t *list, uint64_t tid) {
  for (; list; list = list->hnext)
    if (list->tid == tid)
      return list;
  return NULL;
}

int zkl__hold_others(const zkl__acq_t *list, uint64_t tid) {
  for (; list; list = list->hnext)
    if (list->tid != tid)
      return 1;
  return 0;
}

void zkl__hold_unlink(zkl__acq_t **list, zkl__acq_t *a) {
  for (; *list; list = &(*list)->hnext)
    if (*list == a) {
      *list = a->hnext;
      return;
    }
}

static void queue_fini(zkl__queue_t *q) {
  int i;
  for (i = 0; i < q->nignored; i++)
    free(q->ignored[i]);
  free(q->ignored);
  q->ignored = NULL;
  q->nignored = 0;
  free(q->id);
  q->id = NULL;
  free(q->dir_data);
  q->dir_data = NULL;
  free(q->dir);
  free(q->prefix);
  free(q->user_data);
  q->dir = q->prefix = NULL;
  q->user_data = NULL;
}

/* The session is over (ZSESSIONMOVED is not: see zkl__is_conn_error). */
static int is_session_error(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING;
}

/* Why the acquisition must end now, or ZKL_OK. `lenient`: the deadline is
 * not checked (see run()). */
static int halt(const run_t *r, int lenient) {
  zkl_client_t *c = r->q->c;
  if (c->stopping)
    return ZKL_ECLOSED;
  if (c->auth_failed)
    return ZKL_EAUTH;
  if (r->q->cancel_gen != r->gen || r->q->closed)
    return ZKL_ECANCELED;
  if (r->deadline >= 0 && !lenient && zkl_now_ms() >= r->deadline)
    return ZKL_ETIMEDOUT;
  return ZKL_OK;
}

static int stopped(const run_t *r) { return halt(r, r->first); }

/* Before a request that only trouble makes necessary (a lost reply, a
 * failed listing): the deadline holds even on the first look. */
static int stopped_strict(const run_t *r) { return halt(r, 0); }

/* Waits for a usable connection after a request failed on session s at
 * connection epoch `epoch`; also wakes for cancellation. */
static int reconnect(run_t *r, zkl__session_t *s, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  int rc;
  while ((rc = stopped(r)) == ZKL_OK) {
    int64_t step = zkl_now_ms() + 200; /* re-check cancellation */
    if (r->deadline >= 0 && r->deadline <= step) {
      rc = zkl__wait_usable(c, s, epoch, r->deadline);
      return rc;
    }
    rc = zkl__wait_usable(c, s, epoch, step);
    if (rc != ZKL_ETIMEDOUT)
      return rc;
  }
  return rc;
}

/* Forget our node (it is gone with its session, or was deleted, or is
 * somebody else's now): never to be deleted by us. */
static void drop_node(zkl_client_t *c, zkl__acq_t *a) {
  free(a->path);
  a->path = NULL;
  zkl__session_put(c, a->sess);
  a->sess = NULL;
  a->session_lost = 0;
  a->revoked = 0;
  a->own_watch = ZKL__OWN_NONE;
}

/* One create of a container node on s, waited for; its ZooKeeper code. */
static int make_dir(run_t *r, zkl__session_t *s, const char *path,
                    const char *data) {
  zkl_client_t *c = r->q->c;
  zkl__call_t cr, *ptrs[1] = {&cr};
  int rc;
  zkl__call_init(&cr, c, &r->a->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__create(&cr, s, path, data, data ? (int)strlen(data) : -1,
              ZOO_CONTAINER);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  rc = cr.rc;
  zkl__call_free(&cr);
  return rc == ZNODEEXISTS ? ZOK : rc;
}

/* Creates the missing components of q->dir as container nodes, deepest
 * first: the immediate parent, then, only on ZNONODE, one level up, and
 * back down. Creating a component that exists would need CREATE on its
 * own parent, which the server checks before it answers "exists": on a
 * secured ensemble that is often not ours to have, and asking only for
 * what is missing costs one round trip in the common case. */
static int make_parents(run_t *r, zkl__session_t *s) {
  const char *dir = r->q->dir;
  char *path = zkl__strdup(dir);
  size_t len;
  int rc;
  if (!path)
    return ZKL_ENOMEM;
  len = strlen(path);
  for (;;) {
    /* the queue's own directory carries what its members agree on */
    rc = make_dir(r, s, path, strlen(path) == len ? r->q->dir_data : NULL);
    if (rc == ZNONODE && strchr(path + 1, '/')) {
      *strrchr(path, '/') = '\0'; /* its parent first */
      continue;
    }
    if (rc != ZOK || strlen(path) == len)
      break;
    path[strlen(path)] = '/'; /* one level back down */
  }
  free(path);
  return rc;
}

/* Adopt a node we created (from a create reply, or found again by guid). */
static void adopt(run_t *r, zkl__session_t *s, char *path,
                  const struct Stat *st) {
  zkl__acq_t *a = r->a;
  const char *base = strrchr(path, '/');
  a->path = path;
  a->czxid = st->czxid;
  a->sess = s; /* takes the caller's reference */
  int kind;
  if (!zkl__name_parse(base ? base + 1 : path, &a->seq, &kind))
    a->seq = 0;
}

/* Reads the node `name` found with our guid, and adopts it if its owner is
 * this very session: ZKL_OK, RETRY (gone, or not ours), a ZooKeeper code,
 * or ZKL_ENOMEM. */
static int adopt_if_ours(run_t *r, zkl__session_t *s, const char *name) {
  zkl_client_t *c = r->q->c;
  zkl__call_t st, *ptrs[1] = {&st};
  char *path = zkl__join(r->q->prefix, name);
  if (!path)
    return ZKL_ENOMEM;
  zkl__call_init(&st, c, &r->a->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__exists(&st, s, path);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  if (st.rc == ZOK && st.stat.ephemeralOwner == s->id && !s->expired) {
    adopt(r, s, path, &st.stat);
    return ZKL_OK;
  }
  free(path);
  return st.rc == ZOK || st.rc == ZNONODE ? RETRY : st.rc;
}

/* The reply to our create was lost. Find our node again by its guid, and
 * adopt it only if its ephemeral owner is this very session: a node left by
 * an expired session must never be taken for ours. Every name with our
 * guid is read: anyone may copy our name, and a copy must not hide our
 * node, which would then block the queue, us included (model/, F4).
 * `epoch` 0 lists at once if connected (the create failed with the
 * connection up, for want of memory: no reconnection is coming, F3). */
static int recover(run_t *r, zkl__session_t *s, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  for (;;) {
    zkl__call_t sy, ls, *ptrs[2] = {&sy, &ls};
    int i, rc = reconnect(r, s, epoch);
    if (rc != ZKL_OK) {
      zkl__defer_find_delete(c, s, r->q->dir, r->a->guid);
      zkl__session_put(c, s);
      return rc;
    }
    if (c->sess != s) { /* expired: whatever we made died with it */
      zkl__session_put(c, s);
      return RETRY;
    }
    if ((rc = stopped_strict(r)) != ZKL_OK) {
      zkl__defer_find_delete(c, s, r->q->dir, r->a->guid);
      zkl__session_put(c, s);
      return rc;
    }
    epoch = c->conn_epoch;
    zkl__call_init(&sy, c, &r->a->cv);
    zkl__call_init(&ls, c, &r->a->cv);
    pthread_mutex_unlock(&c->mu);
    /* sync first: the server we read from has then seen every write the
     * leader committed before it, our create included if it happened. */
    zkl__sync(&sy, s, r->q->dir);
    zkl__children(&ls, s, r->q->dir);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 2);
    zkl__call_free(&sy);
    rc = ls.rc == ZOK ? RETRY : ls.rc;
    for (i = 0; ls.rc == ZOK && rc == RETRY && i < ls.kids.count; i++)
      if (strstr(ls.kids.data[i], r->a->guid))
        rc = adopt_if_ours(r, s, ls.kids.data[i]);
    zkl__call_free(&ls);
    if (rc == ZKL_OK)
      return ZKL_OK; /* adopt() took our reference to s */
    if (zkl__is_conn_error(rc))
      continue;
    if (rc == ZKL_ENOMEM)
      zkl__defer_find_delete(c, s, r->q->dir, r->a->guid);
    zkl__session_put(c, s);
    return rc == ZNONODE || is_session_error(rc) ? RETRY : rc;
  }
}

/* Joins the queue: create + getChildren in one round trip. On ZKL_OK our
 * node is known and *ls holds the listing (ls->rc may be an error, then the
 * caller lists again). */
static int join(run_t *r, zkl__call_t *ls, zkl__call_t *gd) {
  zkl__queue_t *q = r->q;
  zkl_client_t *c = q->c;
  zkl__acq_t *a = r->a;
  zkl__call_t cr, *ptrs[3] = {&cr, ls, gd};
  /* the directory is read once per incarnation: a listing tells which */
  int n = q->dir_data && !q->dir_czxid ? 3 : 2;
  zkl__session_t *s;
  char *path, *data = NULL;
  size_t len = 0;
  uint64_t epoch;
  int rc, left;

  if ((rc = zkl__guid(a->guid)) != ZKL_OK)
    return rc;
  path = zkl__join(q->prefix, a->guid);
  if (!path)
    return ZKL_ENOMEM;
  {
    char *full = zkl__join(path, r->shared ? q->marker_shared : q->marker);
    free(path);
    path = full;
  }
  if (!path || (rc = zkl__node_data(q->id, q->user_data, q->user_len, &data,
                                    &len)) != ZKL_OK) {
    free(path);
    return path ? rc : ZKL_ENOMEM;
  }
  s = zkl__session_get(c);
  epoch = c->conn_epoch;
  zkl__call_init(&cr, c, &a->cv);
  zkl__call_init(ls, c, &a->cv);
  zkl__call_init(gd, c, &a->cv);
  zkl__call_batch(ptrs, n, &left);
  pthread_mutex_unlock(&c->mu);
  if (n == 3) /* first: what the directory says binds a node made after */
    zkl__get(gd, s, q->dir, 0);
  zkl__create(&cr, s, path, data, (int)len, ZOO_EPHEMERAL_SEQUENTIAL);
  zkl__children(ls, s, q->dir);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, n);
  free(path);
  free(data);
  rc = cr.rc;
  if (rc == ZOK) {
    adopt(r, s, cr.path, &cr.stat);
    cr.path = NULL;
    r->nonode = 0;
    return ZKL_OK;
  }
  zkl__call_free(&cr);
  zkl__call_free(ls);
  zkl__call_free(gd);
  gd->rc = ZCONNECTIONLOSS; /* not read: agree() reads it again */
  /* The listing's names are gone, but not its code, which may be ZOK
   * (the create failed for want of memory, the listing did not): recover()
   * can still give ZKL_OK, and run() would take the empty list for a fresh
   * one and our node for deleted. Found by the model (model/, F2). */
  ls->rc = ZCONNECTIONLOSS;
  if (rc == ZNONODE) {
    if (++r->nonode > NONODE_RETRIES) {
      zkl__session_put(c, s);
      return ZNONODE;
    }
    rc = make_parents(r, s);
    zkl__session_put(c, s);
    if (rc == ZOK)
      return REJOIN;
    return zkl__is_conn_error(rc) || is_session_error(rc) ? RETRY : rc;
  }
  if (zkl__is_conn_error(rc) || rc == ZKL_ENOMEM)
    return recover(r, s, rc == ZKL_ENOMEM ? 0 : epoch);
  if (is_session_error(rc)) {
    rc = reconnect(r, s, epoch);
    zkl__session_put(c, s);
    return rc == ZKL_OK ? RETRY : rc;
  }
  zkl__session_put(c, s);
  return rc;
}

/* Our node is not where it must be, or not ours. Gone with an expired
 * session, it is no one's doing: join again. Deleted or replaced while
 * the session lives, it was revoked by another client, and joining again
 * at the tail behind its back would be wrong. */
static int gone(run_t *r) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  if (a->sess && a->sess == c->sess && !a->sess->expired && !a->session_lost) {
    zkl__post_log(c, ZKL_LOG_WARN, "%s: our waiting node was %s",
                  a->path ? a->path : r->q->dir,
                  a->revoked ? "deleted or replaced by another client"
                             : "deleted by another client");
    return ZKL_EREVOKED;
  }
  return RETRY;
}

/* Records a child that is not ephemeral: planted by an operator, a backup
 * restore or an attacker, it will never go by itself. Once per name. */
static int ignore(zkl__queue_t *q, const char *name) {
  char **n;
  int i;
  for (i = 0; i < q->nignored; i++)
    if (strcmp(q->ignored[i], name) == 0)
      return ZKL_OK;
  if (q->nignored >= IGNORED_MAX)
    return ZKL_EPROTO;
  n = realloc(q->ignored, (size_t)(q->nignored + 1) * sizeof *n);
  if (!n)
    return ZKL_ENOMEM;
  q->ignored = n;
  if (!(n[q->nignored] = zkl__strdup(name)))
    return ZKL_ENOMEM;
  q->nignored++;
  zkl__post_log(q->c, ZKL_LOG_WARN,
                "%s/%s: not ephemeral (planted?): not waiting behind it",
                q->dir, name);
  return ZKL_OK;
}

static int ignored(const zkl__queue_t *q, const char *name) {
  int i;
  for (i = 0; i < q->nignored; i++)
    if (strcmp(q->ignored[i], name) == 0)
      return 1;
  return 0;
}

/* Lists the queue on our node's session. */
static int list(run_t *r, zkl__call_t *ls) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  for (;;) {
    zkl__call_t *ptrs[1] = {ls};
    zkl__session_t *s = a->sess;
    uint64_t epoch = c->conn_epoch;
    int rc;
    if (!s || a->session_lost)
      return RETRY;
    if ((rc = stopped_strict(r)) != ZKL_OK)
      return rc;
    if (c->state != ZKL_CLIENT_CONNECTED) { /* as in read_set() */
      if ((rc = reconnect(r, s, epoch)) != ZKL_OK)
        return rc;
      continue;
    }
    s->refs++;
    zkl__call_init(ls, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__children(ls, s, r->q->dir);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = ls->rc;
    zkl__session_put(c, s);
    if (rc == ZOK)
      return ZKL_OK;
    zkl__call_free(ls);
    if (zkl__is_conn_error(rc)) {
      if ((rc = reconnect(r, s, epoch)) != ZKL_OK)
        return rc;
      continue;
    }
    if (is_session_error(rc))
      return RETRY;
    /* the parent cannot go while our node is in it: someone deleted both */
    if (rc == ZNONODE)
      return gone(r);
    return rc;
  }
}

/* How many times agree() reads and writes the directory before giving up
 * on a directory whose data keeps changing under it. */
#define AGREE_TRIES 8

/* The queue's directory must carry q->dir_data (a semaphore's number of
 * leases): members that disagree would admit more than some of them
 * allow. A directory without data (made by another recipe, an older
 * version or an operator) gets ours by a conditional write. `gd` is the
 * read of the directory sent with our join; any other code than ZOK
 * means read it again. ZKL_OK, ZKL_EMISMATCH, RETRY, or an error. */
static int agree(run_t *r, zkl__call_t *gd) {
  zkl_client_t *c = r->q->c;
  const char *want = r->q->dir_data;
  size_t wl = strlen(want);
  int tries, rc = ZKL_OK;
  for (tries = 0; tries < AGREE_TRIES; tries++) {
    zkl__session_t *s = r->a->sess;
    zkl__call_t st, *ptrs[1];
    uint64_t epoch = c->conn_epoch;
    if (gd->rc == ZOK && gd->data_len > 0) {
      if ((size_t)gd->data_len == wl && memcmp(gd->data, want, wl) == 0) {
        r->agreed = 1;
        return ZKL_OK;
      }
      zkl__post_log(c, ZKL_LOG_ERROR,
                    "%s: its members were made with \"%.*s\", this one "
                    "with \"%s\": refusing to join",
                    r->q->dir, gd->data_len > 64 ? 64 : gd->data_len,
                    gd->data, want);
      return ZKL_EMISMATCH;
    }
    if (gd->rc != ZOK && gd->rc != ZNONODE && !zkl__is_conn_error(gd->rc))
      return is_session_error(gd->rc) ? RETRY : gd->rc;
    if (!s || r->a->session_lost)
      return RETRY;
    s->refs++;
    if (gd->rc == ZOK) { /* no data yet: ours, unless someone was first */
      zkl__call_init(&st, c, &r->a->cv);
      ptrs[0] = &st;
      pthread_mutex_unlock(&c->mu);
      zkl__set(&st, s, r->q->dir, want, (int)wl, gd->stat.version);
      pthread_mutex_lock(&c->mu);
      zkl__call_wait(ptrs, 1);
      rc = st.rc;
      zkl__call_free(&st);
      if (rc == ZOK) {
        zkl__session_put(c, s);
        r->agreed = 1;
        return ZKL_OK;
      }
    }
    zkl__call_free(gd);
    zkl__call_init(gd, c, &r->a->cv);
    ptrs[0] = gd;
    if (rc == ZOK || rc == ZBADVERSION) {
      pthread_mutex_unlock(&c->mu);
      zkl__get(gd, s, r->q->dir, 0);
      pthread_mutex_lock(&c->mu);
      zkl__call_wait(ptrs, 1);
    } else {
      gd->rc = rc;
    }
    zkl__session_put(c, s);
    rc = ZKL_OK;
    if (zkl__is_conn_error(gd->rc) && (rc = reconnect(r, s, epoch)) != ZKL_OK)
      return rc;
  }
  return ZKL_EPROTO;
}

/* Where we wait: the paths to watch and the rule of policy.c's plan. */
typedef struct {
  zkl__plan_t plan;
  char *paths[ZKL__WATCH_MAX];
} waitset_t;

static void waitset_free(waitset_t *w) {
  int i;
  for (i = 0; i < w->plan.nwatch; i++)
    free(w->paths[i]);
  w->plan.nwatch = 0;
}

/* Finds our place in a listing, from our own node's point of view (see
 * policy.c). Returns HOLD, ZKL_EREVOKED or RETRY (our node is not there),
 * or ZKL_OK with *w: the nodes to watch, and whether their deletion alone
 * will prove we hold. */
static int position(run_t *r, const zkl__call_t *ls, waitset_t *w) {
  const char *me = strrchr(r->a->path, '/') + 1;
  zkl__entry_t *e;
  unsigned char *skip;
  int n, i, idx = -1, rc = ZKL_OK;
  r->behind = 0;
  n = zkl__contenders(ls->kids.data, ls->kids.count, &e);
  if (n < 0)
    return ZKL_ENOMEM;
  skip = calloc((size_t)n + 1, 1);
  if (!skip) {
    free(e);
    return ZKL_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    if (strcmp(e[i].name, me) == 0)
      idx = i;
    else
      skip[i] = ignored(r->q, e[i].name);
  }
  if (idx < 0) {
    rc = gone(r);
  } else {
    zkl__decide(e, n, idx, skip, r->q->limit, &w->plan);
    if (!w->plan.before)
      rc = HOLD;
    r->behind = zkl__any_after(e, n, idx, skip);
    for (i = 0; i < w->plan.nwatch; i++)
      if (!(w->paths[i] = zkl__join(r->q->prefix, e[w->plan.watch[i]].name)))
        rc = ZKL_ENOMEM;
    if (rc != ZKL_OK)
      waitset_free(w);
  }
  free(skip);
  free(e);
  return rc;
}

/* Reads, with a watch, every node of the wait set still to be read, in one
 * round trip. A node already gone is marked so; one that is not
 * ephemeral is never waited for (RELIST); watch[0] found downgraded when
 * that proves we hold gives HOLD. Else ZKL_OK, or why the wait ends. */
static int read_set(run_t *r, waitset_t *w, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  zkl__session_t *s = a->sess;
  zkl__call_t calls[ZKL__WATCH_MAX], *ptrs[ZKL__WATCH_MAX];
  int i, k = 0, left, rc = ZKL_OK, hold = 0, relist = 0;
  /* Sent while disconnected, the reads would wait in the C client for the
   * reconnection or its failure, past our deadline: wait here instead. */
  if (c->state != ZKL_CLIENT_CONNECTED)
    return (rc = reconnect(r, s, epoch)) == ZKL_OK ? RELIST : rc;
  for (i = 0; i < w->plan.nwatch; i++) {
    if (!(a->wflags[i] & ZKL__W_READ))
      continue;
    a->wflags[i] &= ~(ZKL__W_READ | ZKL__W_CHANGED);
    zkl__call_init(&calls[i], c, &a->cv);
    ptrs[k++] = &calls[i];
  }
  if (!k)
    return ZKL_OK;
  s->refs++;
  zkl__call_batch(ptrs, k, &left);
  pthread_mutex_unlock(&c->mu);
  for (i = 0; i < k; i++)
    zkl__get(ptrs[i], s, w->paths[ptrs[i] - calls], 1);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, k);
  zkl__session_put(c, s);
  for (i = 0; i < k; i++) {
    zkl__call_t *g = ptrs[i];
    int at = (int)(g - calls);
    if (g->rc == ZNONODE) {
      a->wflags[at] |= ZKL__W_GONE;
    } else if (g->rc == ZOK && g->stat.ephemeralOwner == 0) {
      /* never goes by itself: do not wait behind it (its watch, left
       * set, fires into nobody's wait) */
      if (rc == ZKL_OK)
        rc = ignore(r->q, strrchr(w->paths[at], '/') + 1);
      if (rc == ZKL_OK)
        rc = RELIST;
    } else if (g->rc == ZOK) {
      size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
      hold |= at == 0 && w->plan.downgrade_ok &&
              zkl__data_mark(g->data, len, "mode=read");
      /* promoted before our watch was set: no event will tell us */
      relist |= at == 0 && w->plan.relist_on_change &&
                zkl__data_mark(g->data, len, "state=held");
    } else if (rc == ZKL_OK || rc == RELIST) {
      rc = g->rc;
    }
    zkl__call_free(g);
  }
  if (zkl__is_conn_error(rc))
    return (rc = reconnect(r, s, epoch)) == ZKL_OK ? RELIST : rc;
  if (is_session_error(rc))
    return RETRY;
  if (rc == ZKL_OK && hold)
    return c->conn_epoch == epoch && c->state == ZKL_CLIENT_CONNECTED ? HOLD
                                                                     : RELIST;
  return rc == ZKL_OK && relist ? RELIST : rc;
}

/* Watches the wait set and sleeps until its nodes go. Our own node gets a
 * watch too, once per acquisition: deleted or replaced while we wait, the
 * wait ends (ZKL_EREVOKED), and the same watch serves the hold that
 * follows. A watched node whose data changes is read again: its data may
 * prove we hold (a downgrade); a change never means it is gone. Returns
 * HOLD (zero-read hand-off), RELIST, RETRY, or an error. */
static int wait_set(run_t *r, waitset_t *w, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  unsigned char flags[ZKL__WATCH_MAX];
  struct timespec ts;
  int64_t until = r->deadline;
  int rc, i, gone_all = 0, gone_any = 0, changed = 0, polled = 0;

  if ((rc = stopped(r)) != ZKL_OK)
    return rc;
  r->waited = 1;
  memset(flags, ZKL__W_READ, sizeof flags);
  a->watch = w->paths;
  a->wflags = flags;
  a->nwatch = w->plan.nwatch;
  if (a->own_watch == ZKL__OWN_NONE && !(r->q->flags & ZKL__Q_NO_NODE_WATCH))
    zkl__watch_own(c, a->sess, a);
  if (w->plan.poll && (until < 0 || until > zkl_now_ms() + ZKL__POLL_MS))
    until = zkl_now_ms() + ZKL__POLL_MS;
  zkl__deadline_ts(until, &ts);
  for (;;) {
    if ((rc = read_set(r, w, epoch)) != ZKL_OK)
      break;
    for (;;) {
      gone_all = 1;
      gone_any = changed = 0;
      for (i = 0; i < a->nwatch; i++) {
        gone_all &= (a->wflags[i] & ZKL__W_GONE) != 0;
        gone_any |= (a->wflags[i] & ZKL__W_GONE) != 0;
        changed |= (a->wflags[i] & ZKL__W_CHANGED) != 0;
      }
      if (gone_all || (gone_any && w->plan.any) || changed ||
          a->session_lost || a->revoked || (rc = stopped(r)) != ZKL_OK)
        break;
      if (until != r->deadline && zkl_now_ms() >= until) {
        polled = 1; /* a relay may have been lost: look again */
        break;
      }
      if (until < 0)
        pthread_cond_wait(&a->cv, &c->mu);
      else
        pthread_cond_timedwait(&a->cv, &c->mu, &ts);
    }
    if (gone_all || (gone_any && w->plan.any) || !changed ||
        w->plan.relist_on_change || a->session_lost || a->revoked ||
        rc != ZKL_OK)
      break;
    for (i = 0; i < a->nwatch; i++)
      if (a->wflags[i] & ZKL__W_CHANGED)
        a->wflags[i] |= ZKL__W_READ;
  }
  a->watch = NULL;
  a->wflags = NULL;
  a->nwatch = 0;
  if (a->session_lost)
    return RETRY;
  if (a->revoked)
    return gone(r);
  if (rc != ZKL_OK)
    return rc;
  if (polled || changed)
    return RELIST;
  /* The zero-read hand-off is only sound if nothing happened in between
   * that could have made our last listing stale: no reconnection. */
  if ((gone_all || (gone_any && w->plan.any)) && w->plan.handoff &&
      c->conn_epoch == epoch && c->state == ZKL_CLIENT_CONNECTED)
    return HOLD;
  return RELIST;
}

/* Reads the stat of a's node on session s; under c->mu, dropped while
 * the requests are out. With `sync`, a sync goes first in the same round
 * trip, so that the read sees every write committed before the call,
 * through any server. Returns the read's ZooKeeper code. */
static int stat_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a,
                    int sync, struct Stat *out) {
  zkl__call_t sy, st, *ptrs[2] = {&sy, &st};
  int left;
  s->refs++;
  zkl__call_init(&sy, c, &a->cv);
  zkl__call_init(&st, c, &a->cv);
  if (sync)
    zkl__call_batch(ptrs, 2, &left);
  pthread_mutex_unlock(&c->mu);
  if (sync)
    zkl__sync(&sy, s, a->path);
  zkl__exists(&st, s, a->path);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs + !sync, sync ? 2 : 1);
  *out = st.stat;
  zkl__session_put(c, s); /* a->sess or the caller keeps it alive */
  return st.rc;
}

/* At the head: make sure our node is still there and ours (our czxid,
 * owned by the session we are on now) before we hold, unless that is
 * already known: the listing came with our create, or the watch on our
 * node confirmed it and would have told us of any change since. Elections
 * always ask (ZKL__Q_VERIFY_OWNER): they must never have two leaders,
 * and a node left by an expired session must never make one. */
static int confirm_owner(run_t *r, int fresh) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  zkl__session_t *s = a->sess;
  struct Stat st;
  uint64_t epoch = c->conn_epoch;
  int rc;
  if (!(r->q->flags & ZKL__Q_VERIFY_OWNER) &&
      (fresh || a->own_watch == ZKL__OWN_OK))
    return HOLD;
  if (!s || s != c->sess || s->expired)
    return RETRY;
  if ((rc = stopped(r)) != ZKL_OK)
    return rc;
  rc = stat_own(c, s, a, 0, &st);
  if (rc == ZOK && zkl__owns(a, &st) && s == c->sess && !s->expired)
    return HOLD;
  if (zkl__is_conn_error(rc))
    return (rc = reconnect(r, s, epoch)) == ZKL_OK ? RELIST : rc;
  if (rc == ZOK || rc == ZNONODE)
    return gone(r);
  return is_session_error(rc) ? RETRY : rc;
}

/* Decide, leaving our node alone when it is not ours to delete. */
static int end_run(run_t *r, int rc) {
  if (rc == ZKL_EREVOKED)
    drop_node(r->q->c, r->a);
  return rc;
}

static int run(run_t *r) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  /* A lock free now is taken whatever the deadline (as with
   * pthread_mutex_timedlock): the deadline is not checked until our first
   * look at the queue, which normally comes with the create, or after
   * making the queue's missing parents on first use. Waits for the
   * network still honour it, and so does every request that only trouble
   * makes necessary, so that a slow or broken link makes us overrun the
   * deadline by at most the round trip under way (and the delete of our
   * node), not by one round trip per recovery step. */
  r->first = 1;
  for (;;) {
    zkl__call_t ls, gd;
    waitset_t w;
    int rc, have_list = 0, fresh = 0;
    uint64_t epoch;
    if ((rc = stopped(r)) != ZKL_OK)
      return rc;
    if (a->session_lost || (a->path && !a->sess))
      drop_node(c, a);
    epoch = c->conn_epoch;
    if (!a->path) {
      zkl__call_init(&gd, c, &a->cv);
      rc = join(r, &ls, &gd);
      if (rc == REJOIN)
        continue; /* still our first look */
      r->first = 0; /* any other pass is trouble */
      if (rc == RETRY)
        continue;
      if (rc != ZKL_OK)
        return rc;
      have_list = fresh = ls.rc == ZOK;
      if (r->q->dir_data && !r->agreed) {
        if (have_list && ls.stat.czxid == r->q->dir_czxid) {
          r->agreed = 1;
        } else {
          /* read before our create: maybe of an earlier incarnation */
          if (have_list && gd.rc == ZOK && gd.stat.czxid != ls.stat.czxid)
            gd.rc = ZCONNECTIONLOSS;
          if ((rc = agree(r, &gd)) == ZKL_OK)
            r->q->dir_czxid = gd.stat.czxid;
        }
      }
      zkl__call_free(&gd);
      if (rc != ZKL_OK || !have_list)
        zkl__call_free(&ls);
      if (rc == RETRY) {
        drop_node(c, a);
        continue;
      }
      if (rc != ZKL_OK)
        return end_run(r, rc);
    }
    if (!have_list) {
      r->first = 0;
      epoch = c->conn_epoch;
      rc = list(r, &ls);
      if (rc == RETRY) {
        drop_node(c, a);
        continue;
      }
      if (rc != ZKL_OK)
        return end_run(r, rc);
    }
    w.plan.nwatch = 0;
    rc = position(r, &ls, &w);
    zkl__call_free(&ls);
    if (rc == HOLD)
      rc = confirm_owner(r, fresh);
    if (rc == HOLD)
      return ZKL_OK;
    r->first = 0;
    if (rc == RELIST)
      continue;
    if (rc == RETRY) {
      drop_node(c, a);
      continue;
    }
    if (rc != ZKL_OK)
      return end_run(r, rc);
    if (r->mode == ZKL__TRY) {
      waitset_free(&w);
      return ZKL_EBUSY;
    }
    rc = wait_set(r, &w, epoch);
    waitset_free(&w);
    if (rc == HOLD)
      rc = confirm_owner(r, 0);
    if (rc == HOLD)
      return ZKL_OK;
    if (rc == RETRY)
      drop_node(c, a);
    else if (rc != RELIST)
      return end_run(r, rc);
  }
}

/* Deletes our node and forgets it; under c->mu. Returns the delete's
 * ZooKeeper code (ZOK when there was nothing to delete). When the
 * connection is down the delete is left to the event thread; with `judge`
 * the code is then the session's verdict (ZOK or ZSESSIONEXPIRED) instead:
 * a release must not report a hold as kept when it cannot know.
 *
 * Also with `judge`, a read of the node's czxid and owner goes in the same
 * round trip as the delete: a node deleted and re-created by someone else
 * gives ZNONODE, the hold was not ours to the end. The read sees whatever
 * our server had applied when it answered, and nothing our watch could
 * tell us sooner: a change our server applies only after the read (one
 * committed through another server in that very instant) is judged as
 * after the unlock. A sync ahead of the read would close that instant, at
 * the cost of a round trip to the leader on every unlock. */
static int remove_node(zkl_client_t *c, zkl__acq_t *a, int judge) {
  zkl__session_t *s = a->sess;
  zkl__call_t st, del, *ptrs[2] = {&st, &del};
  uint64_t epoch = c->conn_epoch;
  int rc, left;
  if (!a->path || !s)
    return s ? ZOK : ZSESSIONEXPIRED;
  a->sess = NULL;
  if (s->expired) {
    rc = ZSESSIONEXPIRED;
  } else if (!judge && c->state != ZKL_CLIENT_CONNECTED) {
    /* Nobody waits for this one's fate (an acquire giving up): a delete
     * sent now would only wait for the reconnection, or for the C client
     * to give up on it, past the caller's deadline. */
    zkl__defer_delete(c, s, a->path);
    rc = ZCONNECTIONLOSS;
  } else {
    zkl__call_init(&st, c, &a->cv);
    zkl__call_init(&del, c, &a->cv);
    if (judge)
      zkl__call_batch(ptrs, 2, &left);
    pthread_mutex_unlock(&c->mu);
    if (judge)
      zkl__exists(&st, s, a->path);
    zkl__delete(&del, s, a->path);
    pthread_mutex_lock(&c->mu);
    if (judge)
      zkl__call_wait(ptrs, 2);
    else
      zkl__call_wait(&ptrs[1], 1);
    rc = del.rc;
    /* A delete that landed vouches only with a read, just before it, that
     * found our node: without one (the read failed, or found no node and
     * someone created one at our name between the two) what we deleted
     * may not have been ours (model/, F1). */
    if (rc == ZOK && judge && !(st.rc == ZOK && zkl__owns_on(a, s, &st.stat))) {
      zkl__post_log(c, ZKL_LOG_WARN,
                    st.rc == ZOK || st.rc == ZNONODE
                        ? "%s: deleted and re-created by someone else before "
                          "unlock"
                        : "%s: deleted, but whose it was could not be read",
                    a->path);
      rc = ZNONODE;
    }
    if (zkl__is_conn_error(rc)) {
      zkl__defer_delete(c, s, a->path);
      if (judge)
        rc = zkl__session_verdict(c, s, epoch);
    }
  }
  zkl__session_put(c, s);
  return rc;
}

/* Our node's data with a status line `line` in its header, which
 * zkl__data_mark() finds: "zklock 1\n" first, then the line. */
static int marked_data(const zkl__queue_t *q, const char *line, char **out,
                       size_t *len) {
  char *d = NULL, *nd;
  size_t l = 0, m = strlen(line);
  int rc = zkl__node_data(q->id, q->user_data, q->user_len, &d, &l);
  if (rc != ZKL_OK)
    return rc;
  if (!(nd = malloc(l + m + 1))) {
    free(d);
    return ZKL_ENOMEM;
  }
  memcpy(nd, d, 9);
  memcpy(nd + 9, line, m);
  nd[9 + m] = '\n';
  memcpy(nd + 10 + m, d + 9, l - 9);
  free(d);
  *out = nd;
  *len = l + m + 1;
  return ZKL_OK;
}

/* A semaphore lease granted after waiting, or with contenders after it,
 * marks its node "state=held": the waiter right behind it watches only
 * it, and a grant is no event ZooKeeper would otherwise send. Not waited
 * for: a mark lost with the connection costs that waiter one poll
 * (ZKL__POLL_MS), nothing else. A lease granted at its first look with
 * nobody after it writes nothing: whoever joins later lists after our
 * create, so sees no more nodes before us than we saw, and counts us as
 * a holder. Under c->mu, dropped while sending. */
static void relay(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s = a->sess;
  char *d;
  size_t len;
  if (!s || !a->path || marked_data(q, "state=held", &d, &len) != ZKL_OK)
    return;
  s->refs++;
  pthread_mutex_unlock(&c->mu);
  zkl__set_nowait(s, a->path, d, (int)len, 0);
  pthread_mutex_lock(&c->mu);
  zkl__session_put(c, s);
  free(d);
}

static void acq_free(zkl_client_t *c, zkl__acq_t *a) {
  zkl__acq_unlink(c, a);
  zkl__session_put(c, a->sess);
  free(a->path);
  pthread_cond_destroy(&a->cv);
  free(a);
}

int zkl__queue_acquire(zkl__queue_t *q, int mode, int shared,
                       int64_t deadline_ms, zkl__acq_t **out) {
  zkl_client_t *c = q->c;
  run_t r;
  zkl__acq_t *a = calloc(1, sizeof *a);
  int rc;
  if (!a)
    return ZKL_ENOMEM;
  if (zkl__cond_init(&a->cv) != ZKL_OK) {
    free(a);
    return ZKL_ESYSTEM;
  }
  a->q = q;
  memset(&r, 0, sizeof r);
  r.q = q;
  r.a = a;
  r.mode = mode;
  r.shared = shared;
  a->shared = shared;
  r.deadline = mode == ZKL__TIMED ? deadline_ms : -1;
  pthread_mutex_lock(&c->mu);
  r.gen = q->cancel_gen;
  zkl__acq_link(c, a);
  rc = run(&r);
  if (rc == ZKL_OK) {
    zkl__set_state(c, a, c->state == ZKL_CLIENT_CONNECTED
                             ? ZKL_STATE_HELD
                             : ZKL_STATE_AT_RISK);
    zkl__schedule_node_watch(c, a);
    if (q->limit && (r.waited || r.behind))
      relay(q, a);
    *out = a;
  } else {
    zkl__acq_unlink(c, a); /* no watcher may take our delete for a loss */
    remove_node(c, a, 0);
    acq_free(c, a);
  }
  pthread_mutex_unlock(&c->mu);
  if (rc != ZKL_OK && rc != ZKL_EBUSY)
    zkl__log(c, ZKL_LOG_DEBUG, "acquire of %s ended: %s", q->dir,
             zkl_err_name(rc));
  return rc;
}

int zkl__queue_release(zkl__queue_t *q, zkl__acq_t *a, int judge) {
  zkl_client_t *c = q->c;
  int rc = ZKL_OK, st;
  pthread_mutex_lock(&c->mu);
  st = atomic_load(&a->state);
  zkl__acq_unlink(c, a); /* our own delete is not a loss */
  if (st == ZKL_STATE_LOST) {
    rc = ZKL_ELOST;
  } else {
    int zrc = remove_node(c, a, judge);
    /* ZNONODE: someone deleted our node while we held it. */
    if (zrc == ZNONODE || is_session_error(zrc))
      rc = ZKL_ELOST;
  }
  atomic_store(&a->state, ZKL_STATE_NONE);
  zkl__post_state(c, a, ZKL_STATE_NONE);
  acq_free(c, a);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* How many times a downgrade retries its conditional write when the data
 * version has moved (another client rewrote our node's data). */
#define DOWNGRADE_TRIES 3

int zkl__queue_downgrade(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  char *nd;
  size_t len = 0;
  int rc, version = 0, tries;
  if ((rc = marked_data(q, "mode=read", &nd, &len)) != ZKL_OK)
    return rc;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  rc = ZKL_ELOST;
  for (tries = 0; s && !s->expired && a->path && tries < DOWNGRADE_TRIES &&
                  atomic_load(&a->state) != ZKL_STATE_LOST;
       tries++) {
    zkl__call_t set, *ptrs[1] = {&set};
    struct Stat st;
    s->refs++;
    zkl__call_init(&set, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__set(&set, s, a->path, nd, (int)len, version);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = set.rc;
    if (rc == ZBADVERSION) {
      /* Someone else wrote to our node: write again over it, if it is
       * still ours (creation zxid and owner), at the version it has. */
      rc = stat_own(c, s, a, 0, &st);
      if (rc == ZOK && !zkl__owns(a, &st))
        rc = ZNONODE;
      version = st.version;
      if (rc == ZOK) {
        zkl__session_put(c, s);
        continue;
      }
    }
    zkl__session_put(c, s);
    break;
  }
  if (rc == ZNONODE || is_session_error(rc) || rc == ZKL_ELOST) {
    zkl__lose(c, a, rc == ZNONODE ? "deleted or replaced by someone else"
                                  : "session expired");
    rc = ZKL_ELOST;
  } else if (rc != ZOK) {
    /* The node keeps its data: exclusive, which is more than a reader
     * needs, until the hold ends. */
    zkl__post_log(c, ZKL_LOG_WARN,
                  "%s: downgrade not written (%s): readers wait for the "
                  "release",
                  a->path, zkl_err_name(rc));
    rc = ZKL_OK;
  }
  if (rc == ZOK)
    a->shared = 1;
  pthread_mutex_unlock(&c->mu);
  free(nd);
  return rc;
}

int zkl__queue_verify(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  struct Stat st;
  int rc;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  if (atomic_load(&a->state) == ZKL_STATE_LOST || !s || !a->path ||
      s->expired) {
    zkl__lose(c, a, "session expired");
    pthread_mutex_unlock(&c->mu);
    return ZKL_ELOST;
  }
  s->refs++; /* past stat_own: a loss meanwhile drops a->sess's */
  rc = stat_own(c, s, a, 1, &st);
  if (rc == ZOK && a->sess == s && zkl__owns(a, &st)) {
    rc = ZKL_OK;
  } else if (rc == ZOK || rc == ZNONODE || is_session_error(rc) ||
             a->sess != s) {
    zkl__lose(c, a, rc == ZOK ? "replaced by someone else's node"
                    : rc == ZNONODE ? "deleted by someone else"
                                    : "session expired");
    rc = ZKL_ELOST;
  }
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int zkl__acq_path(const zkl__acq_t *a, char *buf, size_t size) {
  size_t n;
  if (!a || !a->path)
    return ZKL_ENOTOWNER;
  n = strlen(a->path);
  if (n + 1 > size)
    return ZKL_EINVAL;
  memcpy(buf, a->path, n + 1);
  return ZKL_OK;
}

int zkl__queue_open(zkl__queue_t *q, zkl_client_t *c,
                    const zkl__queue_spec_t *spec, void *handle) {
  int rc = queue_init(q, c, spec);
  if (rc != ZKL_OK)
    return rc;
  pthread_mutex_lock(&c->mu);
  rc = c->stopping ? ZKL_ECLOSED : ZKL_OK;
  if (rc == ZKL_OK)
    c->nqueues++;
  pthread_mutex_unlock(&c->mu);
  if (rc == ZKL_OK && (rc = zkl__handle_add(handle)) != ZKL_OK) {
    pthread_mutex_lock(&c->mu);
    c->nqueues--;
    pthread_mutex_unlock(&c->mu);
  }
  if (rc != ZKL_OK)
    queue_fini(q);
  return rc;
}

void zkl__queue_close(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  pthread_mutex_lock(&c->mu);
  zkl__wait_cb_refs(c, q);
  c->nqueues--;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  queue_fini(q);
}

void zkl__queue_cancel(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  zkl__acq_t *a;
  pthread_mutex_lock(&c->mu);
  q->cancel_gen++;
  for (a = c->acqs; a; a = a->next)
    if (a->q == q)
      pthread_cond_broadcast(&a->cv);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}
