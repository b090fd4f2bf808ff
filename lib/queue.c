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
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Internal outcomes, never returned to users. */
enum {
  RETRY = 1,  /* our node is gone or unknown: join the queue again */
  RELIST = 2, /* look at the queue again */
  HOLD = 3    /* we are the head */
};

/* How many times in a row a missing parent may make us retry: a container
 * parent can be reaped between our mkdir and our create, but not forever. */
#define NONODE_RETRIES 8

typedef struct {
  zkl__queue_t *q;
  zkl__acq_t *a;
  int mode;
  int64_t deadline; /* -1: none */
  uint64_t gen;     /* q->cancel_gen when we started */
  int nonode;
  int first; /* no look at the queue yet */
} run_t;

int zkl__queue_init(zkl__queue_t *q, zkl_client_t *c, const char *root,
                    const char *name, const char *marker, const char *id,
                    const void *data, size_t len, unsigned flags) {
  char *tmp;
  memset(q, 0, sizeof *q);
  if (id && !(q->id = zkl__strdup(id)))
    return ZKL_ENOMEM;
  q->c = c;
  q->marker = marker;
  q->flags = flags;
  tmp = zkl__join(root, "/");
  q->dir = tmp ? zkl__join(tmp, name) : NULL;
  free(tmp);
  q->prefix = q->dir ? zkl__join(q->dir, "/") : NULL;
  if (len) {
    q->user_data = malloc(len);
    if (q->user_data)
      memcpy(q->user_data, data, len);
    q->user_len = len;
  }
  if (!q->dir || !q->prefix || (len && !q->user_data)) {
    zkl__queue_fini(q);
    return ZKL_ENOMEM;
  }
  return ZKL_OK;
}

void zkl__queue_fini(zkl__queue_t *q) {
  free(q->id);
  q->id = NULL;
  free(q->dir);
  free(q->prefix);
  free(q->user_data);
  q->dir = q->prefix = NULL;
  q->user_data = NULL;
}

static int is_session_error(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING ||
         rc == ZSESSIONMOVED;
}

/* Why the acquisition must end now, or ZKL_OK. `lenient`: the deadline is
 * not checked (see run()). */
static int halt(const run_t *r, int lenient) {
  zkl_client_t *c = r->q->c;
  if (c->stopping)
    return ZKL_ECLOSED;
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

/* Forget our node (it is gone with its session, or was deleted). */
static void drop_node(zkl_client_t *c, zkl__acq_t *a) {
  free(a->path);
  a->path = NULL;
  zkl__session_put(c, a->sess);
  a->sess = NULL;
  a->session_lost = 0;
}

/* Creates every missing component of q->dir as a container node, all in one
 * round trip: the session's FIFO order creates parents before children. */
static int make_parents(run_t *r, zkl__session_t *s) {
  zkl_client_t *c = r->q->c;
  const char *dir = r->q->dir;
  size_t max = strlen(dir) / 2 + 1;
  zkl__call_t *calls = calloc(max, sizeof *calls);
  zkl__call_t **ptrs = calloc(max, sizeof *ptrs);
  char *path = malloc(strlen(dir) + 1);
  int n = 0, i, rc = ZKL_OK;
  const char *p;
  if (!calls || !ptrs || !path) {
    free(calls), free(ptrs), free(path);
    return ZKL_ENOMEM;
  }
  pthread_mutex_unlock(&c->mu);
  for (p = strchr(dir + 1, '/');; p = strchr(p + 1, '/')) {
    size_t len = p ? (size_t)(p - dir) : strlen(dir);
    memcpy(path, dir, len);
    path[len] = '\0';
    zkl__call_init(&calls[n], c, &r->a->cv);
    ptrs[n] = &calls[n];
    zkl__create(&calls[n], s, path, NULL, -1, ZOO_CONTAINER);
    n++;
    if (!p)
      break;
  }
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, n);
  for (i = 0; i < n; i++) {
    if (rc == ZKL_OK && calls[i].rc != ZOK && calls[i].rc != ZNODEEXISTS)
      rc = calls[i].rc;
    zkl__call_free(&calls[i]);
  }
  free(calls), free(ptrs), free(path);
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
  if (!zkl__seq_parse(base ? base + 1 : path, r->q->marker, &a->seq))
    a->seq = 0;
}

/* The reply to our create was lost. Find our node again by its guid, and
 * adopt it only if its ephemeral owner is this very session: a node left by
 * an expired session must never be taken for ours. */
static int recover(run_t *r, zkl__session_t *s, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  for (;;) {
    zkl__call_t sy, ls, st, *ptrs[2] = {&sy, &ls};
    char *found = NULL, *path;
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
    for (i = 0; ls.rc == ZOK && i < ls.kids.count; i++)
      if (strstr(ls.kids.data[i], r->a->guid))
        found = ls.kids.data[i];
    rc = ls.rc;
    path = found ? zkl__join(r->q->prefix, found) : NULL;
    zkl__call_free(&sy);
    zkl__call_free(&ls);
    if (zkl__is_conn_error(rc))
      continue;
    if (rc != ZOK || !found) {
      free(path);
      zkl__session_put(c, s);
      return rc == ZOK || rc == ZNONODE || is_session_error(rc) ? RETRY : rc;
    }
    if (!path) {
      zkl__defer_find_delete(c, s, r->q->dir, r->a->guid);
      zkl__session_put(c, s);
      return ZKL_ENOMEM;
    }
    zkl__call_init(&st, c, &r->a->cv);
    ptrs[0] = &st;
    pthread_mutex_unlock(&c->mu);
    zkl__exists(&st, s, path);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    if (st.rc == ZOK && st.stat.ephemeralOwner == s->id && !s->expired) {
      adopt(r, s, path, &st.stat);
      return ZKL_OK;
    }
    free(path);
    if (zkl__is_conn_error(st.rc))
      continue;
    zkl__session_put(c, s);
    return RETRY;
  }
}

/* Joins the queue: create + getChildren in one round trip. On ZKL_OK our
 * node is known and *ls holds the listing (ls->rc may be an error, then the
 * caller lists again). */
static int join(run_t *r, zkl__call_t *ls) {
  zkl__queue_t *q = r->q;
  zkl_client_t *c = q->c;
  zkl__acq_t *a = r->a;
  zkl__call_t cr, *ptrs[2] = {&cr, ls};
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
    char *full = zkl__join(path, q->marker);
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
  zkl__call_batch(ptrs, 2, &left);
  pthread_mutex_unlock(&c->mu);
  zkl__create(&cr, s, path, data, (int)len, ZOO_EPHEMERAL_SEQUENTIAL);
  zkl__children(ls, s, q->dir);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 2);
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
  if (rc == ZNONODE) {
    if (++r->nonode > NONODE_RETRIES) {
      zkl__session_put(c, s);
      return ZNONODE;
    }
    rc = make_parents(r, s);
    zkl__session_put(c, s);
    return rc == ZOK || zkl__is_conn_error(rc) || is_session_error(rc) ? RETRY
                                                                       : rc;
  }
  if (zkl__is_conn_error(rc) || rc == ZKL_ENOMEM)
    return recover(r, s, epoch);
  if (is_session_error(rc)) {
    rc = reconnect(r, s, epoch);
    zkl__session_put(c, s);
    return rc == ZKL_OK ? RETRY : rc;
  }
  zkl__session_put(c, s);
  return rc;
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
    /* parent gone (so our node too) or session over: join again */
    if (rc == ZNONODE || is_session_error(rc))
      return RETRY;
    return rc;
  }
}

/* Finds our place in a listing. Returns HOLD, RETRY (our node is not there:
 * it was deleted), or ZKL_OK with *pred (allocated full path) and
 * *pred_is_head set. */
static int position(run_t *r, const zkl__call_t *ls, char **pred,
                    int *pred_is_head) {
  const char *me = strrchr(r->a->path, '/') + 1;
  zkl__entry_t *e;
  int n, i, idx = -1, rc;
  n = zkl__order(ls->kids.data, ls->kids.count, r->q->marker, &e);
  if (n < 0)
    return ZKL_ENOMEM;
  for (i = 0; i < n; i++)
    if (strcmp(e[i].name, me) == 0)
      idx = i;
  if (idx < 0)
    rc = RETRY;
  else if (idx == 0)
    rc = HOLD;
  else {
    *pred = zkl__join(r->q->prefix, e[idx - 1].name);
    *pred_is_head = idx == 1;
    rc = *pred ? ZKL_OK : ZKL_ENOMEM;
  }
  free(e);
  return rc;
}

/* Watches the predecessor and sleeps until it goes. Returns HOLD (zero-read
 * hand-off), RELIST, RETRY, or an error. */
static int wait_pred(run_t *r, char *pred, int pred_is_head, uint64_t epoch) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  zkl__session_t *s = a->sess;
  zkl__call_t gd, *ptrs[1] = {&gd};
  struct timespec ts;
  int rc;

  if ((rc = stopped(r)) != ZKL_OK) {
    free(pred);
    return rc;
  }
  a->watch_path = pred;
  a->pred_gone = a->woke = 0;
  s->refs++;
  zkl__call_init(&gd, c, &a->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__get(&gd, s, pred, 1);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  zkl__call_free(&gd);
  zkl__session_put(c, s);
  if (gd.rc == ZNONODE)
    a->pred_gone = 1;
  else if (gd.rc != ZOK) {
    rc = gd.rc;
    a->watch_path = NULL;
    free(pred);
    if (zkl__is_conn_error(rc))
      return (rc = reconnect(r, s, epoch)) == ZKL_OK ? RELIST : rc;
    return is_session_error(rc) ? RETRY : rc;
  }
  zkl__deadline_ts(r->deadline, &ts);
  while (!a->pred_gone && !a->woke && !a->session_lost &&
         (rc = stopped(r)) == ZKL_OK) {
    if (r->deadline < 0)
      pthread_cond_wait(&a->cv, &c->mu);
    else
      pthread_cond_timedwait(&a->cv, &c->mu, &ts);
  }
  a->watch_path = NULL;
  free(pred);
  if (a->session_lost)
    return RETRY;
  if (!a->pred_gone && !a->woke)
    return stopped(r);
  /* The zero-read hand-off is only sound if nothing happened in between
   * that could have made our last listing stale: no reconnection. */
  if (a->pred_gone && pred_is_head && c->conn_epoch == epoch &&
      c->state == ZKL_CLIENT_CONNECTED)
    return HOLD;
  return RELIST;
}

/* At the head: make sure our node is still there and owned by the session
 * we are on now, so that a node left by an expired session never makes us
 * the holder (used by elections, which must never have two leaders). */
static int confirm_owner(run_t *r) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  zkl__session_t *s = a->sess;
  zkl__call_t st, *ptrs[1] = {&st};
  uint64_t epoch = c->conn_epoch;
  int rc;
  if (!(r->q->flags & ZKL__Q_VERIFY_OWNER))
    return HOLD;
  if (!s || s != c->sess || s->expired)
    return RETRY;
  if ((rc = stopped(r)) != ZKL_OK)
    return rc;
  s->refs++;
  zkl__call_init(&st, c, &a->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__exists(&st, s, a->path);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  rc = st.rc;
  zkl__session_put(c, s);
  if (rc == ZOK && st.stat.ephemeralOwner == s->id && s == c->sess &&
      !s->expired)
    return HOLD;
  if (zkl__is_conn_error(rc))
    return (rc = reconnect(r, s, epoch)) == ZKL_OK ? RELIST : rc;
  return rc == ZOK || rc == ZNONODE || is_session_error(rc) ? RETRY : rc;
}

static int run(run_t *r) {
  zkl_client_t *c = r->q->c;
  zkl__acq_t *a = r->a;
  /* A lock free now is taken whatever the deadline (as with
   * pthread_mutex_timedlock): the deadline is not checked until our first
   * look at the queue, which normally comes with the create. Waits for the
   * network still honour it, and so does every request that only trouble
   * makes necessary, so that a slow or broken link makes us overrun the
   * deadline by at most the round trip under way (and the delete of our
   * node), not by one round trip per recovery step. */
  r->first = 1;
  for (;; r->first = 0) { /* a second pass is trouble too */
    zkl__call_t ls;
    char *pred = NULL;
    int rc, head = 0, have_list = 0;
    uint64_t epoch;
    if ((rc = stopped(r)) != ZKL_OK)
      return rc;
    if (a->session_lost || (a->path && !a->sess))
      drop_node(c, a);
    epoch = c->conn_epoch;
    if (!a->path) {
      rc = join(r, &ls);
      if (rc == RETRY)
        continue;
      if (rc != ZKL_OK)
        return rc;
      have_list = ls.rc == ZOK;
      if (!have_list)
        zkl__call_free(&ls);
    }
    if (!have_list) {
      epoch = c->conn_epoch;
      rc = list(r, &ls);
      if (rc == RETRY) {
        drop_node(c, a);
        continue;
      }
      if (rc != ZKL_OK)
        return rc;
    }
    rc = position(r, &ls, &pred, &head);
    zkl__call_free(&ls);
    if (rc == HOLD)
      rc = confirm_owner(r);
    if (rc == HOLD)
      return ZKL_OK;
    if (rc == RELIST)
      continue;
    if (rc == RETRY) {
      drop_node(c, a);
      continue;
    }
    if (rc != ZKL_OK)
      return rc;
    r->first = 0;
    if (r->mode == ZKL__TRY) {
      free(pred);
      return ZKL_EBUSY;
    }
    rc = wait_pred(r, pred, head, epoch);
    if (rc == HOLD)
      rc = confirm_owner(r);
    if (rc == HOLD)
      return ZKL_OK;
    if (rc == RETRY)
      drop_node(c, a);
    else if (rc != RELIST)
      return rc;
  }
}

/* Deletes our node and forgets it; under c->mu. Returns the delete's
 * ZooKeeper code (ZOK when there was nothing to delete). When the
 * connection is down the delete is left to the event thread; with `judge`
 * the code is then the session's verdict (ZOK or ZSESSIONEXPIRED) instead:
 * a release must not report a hold as kept when it cannot know. */
static int remove_node(zkl_client_t *c, zkl__acq_t *a, int judge) {
  zkl__session_t *s = a->sess;
  zkl__call_t del, *ptrs[1] = {&del};
  uint64_t epoch = c->conn_epoch;
  int rc;
  if (!a->path || !s)
    return s ? ZOK : ZSESSIONEXPIRED;
  a->sess = NULL;
  if (s->expired) {
    rc = ZSESSIONEXPIRED;
  } else {
    zkl__call_init(&del, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__delete(&del, s, a->path);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = del.rc;
    if (zkl__is_conn_error(rc)) {
      zkl__defer_delete(c, s, a->path);
      if (judge)
        rc = zkl__session_verdict(c, s, epoch);
    }
  }
  zkl__session_put(c, s);
  return rc;
}

static void acq_free(zkl_client_t *c, zkl__acq_t *a) {
  zkl__acq_unlink(c, a);
  zkl__session_put(c, a->sess);
  free(a->path);
  pthread_cond_destroy(&a->cv);
  free(a);
}

int zkl__queue_acquire(zkl__queue_t *q, int mode, int64_t deadline_ms,
                       zkl__acq_t **out) {
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

int zkl__queue_attach(zkl__queue_t *q, void *handle) {
  zkl_client_t *c = q->c;
  int rc;
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
  return rc;
}

void zkl__queue_detach(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  pthread_mutex_lock(&c->mu);
  zkl__wait_cb_refs(c, q);
  c->nqueues--;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__queue_fini(q);
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
