/* SPDX-License-Identifier: Apache-2.0 */
/* acq.c: a client's acquisitions: the registry of them, the state of a
 * granted hold (HELD, AT_RISK, LOST) and what moves it, and the watch on a
 * hold's own node that verifies it is still ours.
 *
 * The queue engine (run.c) links an acquisition here for its whole life;
 * the session (session.c) and the ZooKeeper watchers below then change its
 * state, all under c->mu, and notices go to the recipe's callback through
 * the event thread (notice.c, loop.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void zkl__acq_link(zkl_client_t *c, zkl__acq_t *a) {
  a->id = ++c->next_id;
  a->prev = NULL;
  a->next = c->acqs;
  if (c->acqs)
    c->acqs->prev = a;
  c->acqs = a;
}

void zkl__acq_unlink(zkl_client_t *c, zkl__acq_t *a) {
  zkl__timer_stop(c, &a->watch_tm);
  zkl__timer_stop(c, &a->wake_tm);
  if (a->prev)
    a->prev->next = a->next;
  else if (c->acqs == a)
    c->acqs = a->next;
  if (a->next)
    a->next->prev = a->prev;
  a->prev = a->next = NULL;
}


void zkl__set_state(zkl_client_t *c, zkl__acq_t *a, int state) {
  if (atomic_load_explicit(&a->state, memory_order_relaxed) == state)
    return;
  atomic_store_explicit(&a->state, state, memory_order_release);
  zkl__post_state(c, a, state);
}

static int is_hold(const zkl__acq_t *a) {
  int st = atomic_load_explicit(&a->state, memory_order_relaxed);
  return st == ZKL_STATE_HELD || st == ZKL_STATE_AT_RISK ||
         st == ZKL_STATE_REVOKE_REQUESTED;
}

/* ---- flat locks' claims --------------------------------------------------- */

static unsigned bucket(const char *path);
static void kick(zkl__acq_t *a);

int zkl__claim_take(zkl_client_t *c, zkl__acq_t *a, const char *path) {
  unsigned b = bucket(path);
  zkl__went_t *e;
  if (a->claim.path && a->claim.idx == 0)
    return 1;
  for (e = c->ftab[b]; e; e = e->next)
    if (e->idx == 0 && e->a != a && strcmp(e->path, path) == 0)
      break;
  if (e && a->claim.path) /* waiting already */
    return 0;
  zkl__claim_drop(c, a);
  a->claim.path = path;
  a->claim.a = a;
  a->claim.idx = e ? 1 : 0;
  a->claim.next = c->ftab[b];
  c->ftab[b] = &a->claim;
  return !e;
}

void zkl__claim_drop(zkl_client_t *c, zkl__acq_t *a) {
  zkl__went_t **pp, *e;
  const char *path = a->claim.path;
  int owner = a->claim.idx == 0;
  if (!path)
    return;
  for (pp = &c->ftab[bucket(path)]; *pp; pp = &(*pp)->next)
    if (*pp == &a->claim) {
      *pp = a->claim.next;
      break;
    }
  a->claim.path = NULL;
  if (owner) /* the next one tries */
    for (e = c->ftab[bucket(path)]; e; e = e->next)
      if (e->idx == 1 && strcmp(e->path, path) == 0)
        kick(e->a);
}

/* Under c->mu: the hold is gone for good. Its session reference is dropped
 * at once so that an expired handle can be closed. */
static void lose(zkl_client_t *c, zkl__acq_t *a) {
  zkl__stat_add(&c->stats.lost, 1);
  if (a->revoke_asked) /* asked first: the revoker's force, as far as we know */
    zkl__stat_add(&c->stats.forced, 1);
  zkl__set_state(c, a, ZKL_STATE_LOST);
  zkl__session_put(c, a->sess);
  a->sess = NULL;
  /* a lost hold is never released with a delete: its name is free */
  zkl__claim_drop(c, a);
}


int zkl__acq_data_intact(const zkl__acq_t *a, const char *d, int len) {
  const zkl__queue_t *q = a->q;
  return zkl__data_intact(d, len > 0 ? (size_t)len : 0, (long)getpid(), q->id,
                          q->user_data, q->user_len, a->marks);
}

/* Wakes a's run, if one is parked on it (run.c set a->wake). */
static void kick(zkl__acq_t *a) {
  if (a->wake)
    a->wake(a);
}

void zkl__lose_rewritten(zkl_client_t *c, zkl__acq_t *a) {
  /* ours still: deleted at once, or it would keep the queue waiting
   * behind a hold that is no longer one */
  if (a->sess && a->path && is_hold(a))
    zkl__defer_delete_now(c, a->sess, a->path, a->czxid);
  zkl__lose(c, a, "its data rewritten by someone else");
}

void zkl__lose(zkl_client_t *c, zkl__acq_t *a, const char *why) {
  if (!is_hold(a))
    return;
  zkl__post_log(c, ZKL_LOG_WARN, "%s: %s: LOST", a->path ? a->path : a->q->dir,
                why);
  lose(c, a);
}

static void expire_at_risk(zkl_client_t *c);

/* c->lost_tm's time came: AT_RISK holds are LOST, unless the connection
 * came back meanwhile (zkl__lost_deadline is then 0). */
static void lost_due(zkl__timer_t *t) {
  zkl_client_t *c = (zkl_client_t *)((char *)t - offsetof(zkl_client_t, lost_tm));
  int64_t due = zkl__lost_deadline(c);
  if (due && zkl_now_ms() >= due)
    expire_at_risk(c);
  else if (due) /* a later disconnect's */
    zkl__timer_set(c, t, due, lost_due);
}

/* The connection is down: holds are AT_RISK, or LOST at once for a recipe
 * that must not lead while it cannot hear the ensemble. */
static void disconnected(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  int64_t due = zkl__lost_deadline(c);
  if (due)
    zkl__timer_set(c, &c->lost_tm, due, lost_due);
  for (a = c->acqs; a; a = a->next) {
    if (a->sess != s || !is_hold(a) ||
        atomic_load_explicit(&a->state, memory_order_relaxed) ==
            ZKL_STATE_AT_RISK)
      continue;
    if (a->q->flags & ZKL__Q_LOSE_ON_DISCONNECT) {
      if (a->path) /* gone once reconnected */
        zkl__defer_delete(c, s, a->path, a->czxid);
      lose(c, a);
    } else {
      zkl__set_state(c, a, ZKL_STATE_AT_RISK);
    }
  }
}

/* Session s expired: its holds are LOST, its waiters join again. */
static void expired(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  zkl__timer_stop(c, &c->lost_tm);
  for (a = c->acqs; a; a = a->next) {
    if (a->sess != s)
      continue;
    if (is_hold(a))
      lose(c, a);
    else {
      a->session_lost = 1;
      kick(a);
    }
  }
}

static void kick_all(zkl_client_t *c) {
  zkl__acq_t *a;
  for (a = c->acqs; a; a = a->next)
    kick(a);
}

static void expire_at_risk(zkl_client_t *c) {
  zkl__acq_t *a;
  for (a = c->acqs; a; a = a->next)
    if (a->sess == c->sess &&
        atomic_load_explicit(&a->state, memory_order_relaxed) ==
            ZKL_STATE_AT_RISK) {
      /* If the session survives after all, the node must not block the
       * queue: delete it once connected. */
      if (a->path)
        zkl__defer_delete(c, a->sess, a->path, a->czxid);
      zkl__post_log(c, ZKL_LOG_WARN,
                    "%s: LOST, disconnected too long for the session to be "
                    "trusted",
                    a->path ? a->path : a->q->dir);
      lose(c, a);
    }
  c->disconnected_at = 0;
}

/* ---- the table of watched paths ------------------------------------------ */

/* Whether a is on c's list: an acquisition being released is taken off
 * it first, and one whose guarded transaction deletes its node is passed
 * over meanwhile, so that its own delete is not taken for a loss. */
static int linked(const zkl_client_t *c, const zkl__acq_t *a) {
  return (a->prev || c->acqs == a) && !a->self_delete;
}

static unsigned bucket(const char *path) {
  uint32_t h = 2166136261u; /* FNV-1a */
  while (*path)
    h = (h ^ (unsigned char)*path++) * 16777619u;
  return h % ZKL__WTAB;
}

void zkl__went_add(zkl_client_t *c, zkl__went_t *e, const char *path,
                   zkl__acq_t *a, int idx) {
  unsigned b = bucket(path);
  e->path = path;
  e->a = a;
  e->idx = idx;
  e->next = c->wtab[b];
  c->wtab[b] = e;
}

void zkl__went_del(zkl_client_t *c, zkl__went_t *e) {
  zkl__went_t **pp;
  if (!e->path)
    return;
  for (pp = &c->wtab[bucket(e->path)]; *pp; pp = &(*pp)->next)
    if (*pp == e) {
      *pp = e->next;
      break;
    }
  e->path = NULL;
}

/* ---- verifying holds: their own node, read and watched ------------------ */

struct verify {
  zkl__call_t call;
  uint64_t id;
  zkl__session_t *s;
  int64_t czxid; /* of the node asked about: a may have another by now */
  char path[];   /* finds a again, if it still has that node */
};

/* The acquisition `id` with own node `path`, if it is still linked. */
static zkl__acq_t *acq_by_node(zkl_client_t *c, const char *path,
                               uint64_t id) {
  zkl__went_t *e;
  for (e = c->wtab[bucket(path)]; e; e = e->next)
    if (e->idx < 0 && e->a->id == id && strcmp(e->path, path) == 0)
      return linked(c, e->a) ? e->a : NULL;
  return NULL;
}

/* The read of our own node (with its watch) answered: a hold is HELD if
 * the node is still ours, else LOST; a waiter whose node is gone or not
 * ours stops waiting (ZKL_EREVOKED). */
static void on_verified(zkl__call_t *call) {
  struct verify *v = call->ctx;
  zkl_client_t *c = call->c;
  zkl__acq_t *a = acq_by_node(c, v->path, v->id);
  int rc = call->rc;
  if (a && a->path && a->sess == v->s && a->czxid == v->czxid) {
    int ours = rc == ZOK && zkl__owns(a, &call->stat);
    /* rewritten by someone else: a mark we did not write ("mode=read")
     * would let others in beside us, so the node is no longer a hold */
    int rewritten = ours && !zkl__acq_data_intact(a, call->data,
                                                  call->data_len);
    int mine = ours && !rewritten;
    int gone = rc == ZNONODE || (rc == ZOK && !mine);
    if (mine)
      a->dversion = call->stat.version;
    if (mine && a->own_watch == ZKL__OWN_PENDING &&
        !(a->q->flags & ZKL__Q_NO_NODE_WATCH))
      a->own_watch = ZKL__OWN_OK;
    if (!mine && a->own_watch == ZKL__OWN_PENDING)
      a->own_watch = ZKL__OWN_NONE;
    /* a waiter's request too (F9): a revoker asks the node its listing
     * shows first, maybe before we heard it is our turn, and the hold
     * that follows keeps this watch and reads the node no more; run.c's
     * settle() tells it */
    if (mine && !a->revoke_asked &&
        zkl__revoke_asked(call->data, (size_t)call->data_len)) {
      a->revoke_asked = 1;
      zkl__stat_add(&c->stats.revoked, 1);
      zkl__post_log(c, ZKL_LOG_INFO, "%s: revocation requested", a->path);
    }
    if (is_hold(a)) {
      if (mine && c->state == ZKL_CLIENT_CONNECTED)
        zkl__set_state(c, a, zkl__held_state(a));
      else if (rewritten)
        zkl__lose_rewritten(c, a);
      else if (gone)
        zkl__lose(c, a, rc == ZNONODE ? "deleted by someone else"
                                      : "replaced by someone else's node");
    } else if (gone) {
      a->tainted |= rewritten;
      a->revoked = 1;
      kick(a);
    }
  }
  zkl__session_put(c, v->s);
  pthread_cond_broadcast(&c->cv); /* a teardown may wait for us */
  zkl__call_free(call);
  free(v);
}

void zkl__watch_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a) {
  size_t n = strlen(a->path) + 1;
  struct verify *v = malloc(sizeof *v + n);
  if (!v)
    return;
  zkl__call_init_fn(&v->call, c, on_verified, v);
  v->id = a->id;
  v->s = s;
  v->czxid = a->czxid;
  memcpy(v->path, a->path, n);
  s->refs++;
  a->own_watch = ZKL__OWN_PENDING;
  if (zkl__get(&v->call, s, a->path,
               !(a->q->flags & ZKL__Q_NO_NODE_WATCH)) != ZOK) {
    a->own_watch = ZKL__OWN_NONE;
    s->refs--; /* others hold s: it cannot drop to 0 here */
    free(v);
  }
}

/* Connected again: every hold is read, and watched anew. */
static void connected(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  zkl__timer_stop(c, &c->lost_tm);
  for (a = c->acqs; a; a = a->next)
    if (a->sess == s && is_hold(a) && a->path) {
      zkl__timer_stop(c, &a->watch_tm); /* the verification re-arms it */
      zkl__watch_own(c, s, a);
    }
}

/* The session listener (c->on_session, wired by client.c): what a
 * change of session s means for the acquisitions. Under c->mu. */
void zkl__acqs_on_session(zkl_client_t *c, zkl__session_t *s,
                          enum zkl__sess_news what) {
  switch (what) {
  case ZKL__SESS_CONNECTED:
    connected(c, s);
    break;
  case ZKL__SESS_DISCONNECTED:
    disconnected(c, s);
    break;
  case ZKL__SESS_EXPIRED:
    expired(c, s);
    break;
  case ZKL__SESS_KICK:
    kick_all(c);
    break;
  }
}

/* a->watch_tm's time came: watch the node of a hold that lasted. A
 * client not connected now watches every hold once it is again
 * (connected()), so nothing is lost by doing nothing here. */
static void watch_due(zkl__timer_t *t) {
  zkl__acq_t *a = (zkl__acq_t *)((char *)t - offsetof(zkl__acq_t, watch_tm));
  zkl_client_t *c = a->q->c;
  if (c->state != ZKL_CLIENT_CONNECTED || !is_hold(a) || !a->path ||
      a->sess != c->sess)
    return;
  zkl__watch_own(c, a->sess, a);
}

void zkl__schedule_node_watch(zkl_client_t *c, zkl__acq_t *a) {
  if ((a->q->flags & ZKL__Q_NO_NODE_WATCH) || a->own_watch != ZKL__OWN_NONE)
    return; /* a waiter's watch on its own node carries over to the hold */
  zkl__timer_set(c, &a->watch_tm, zkl_now_ms() + ZKL__NODE_WATCH_DELAY_MS,
                 watch_due);
}

/* An event on our own node: the watch is spent. Deleted: a hold is LOST
 * and a wait is revoked. Anything else (its data rewritten, or a delete
 * and re-create we missed while disconnected): watch again, and judge the
 * node by its creation zxid and owner, so a node re-created under our
 * name by someone else is never taken for ours, and by its data
 * (on_verified), so a mark we did not write ends the hold. */
static void own_event(zkl_client_t *c, zkl__acq_t *a, int type) {
  a->own_watch = ZKL__OWN_NONE;
  if (type == ZOO_DELETED_EVENT) {
    if (is_hold(a)) {
      zkl__lose(c, a, "deleted by someone else");
    } else if (atomic_load_explicit(&a->state, memory_order_relaxed) ==
               ZKL_STATE_NONE) {
      a->revoked = 1;
      kick(a);
    }
  } else if (a->sess && !a->sess->expired &&
             atomic_load_explicit(&a->state, memory_order_relaxed) !=
                 ZKL_STATE_LOST) {
    zkl__watch_own(c, a->sess, a);
  }
}

/* Node events for every path we watch. The C client also hands session
 * events to each path watcher: those are ignored here (session_watcher has
 * them), and so is any event on a path nobody waits on any more. Each
 * acquisition that watches the path is told once; what it does then may
 * change the table, so the bucket is searched again from its head after
 * each, and the acquisitions already told are known by the event's
 * number. */
void zkl__path_watcher(zhandle_t *zh, int type, int state, const char *path,
                       void *ctx) {
  zkl_client_t *c = ctx;
  unsigned b;
  uint64_t seq;
  (void)state;
  if (type == ZOO_SESSION_EVENT || !path)
    return;
  b = bucket(path);
  pthread_mutex_lock(&c->mu);
  seq = ++c->evseq;
  if (c->node_waiters > 0) {
    c->node_events++;
    pthread_cond_broadcast(&c->cv);
  }
  for (;;) {
    zkl__went_t *e;
    zkl__acq_t *a = NULL;
    int i, own = 0, hit = 0;
    for (e = c->wtab[b]; e && !a; e = e->next)
      if (e->a->evseq != seq && strcmp(e->path, path) == 0 && e->a->sess &&
          e->a->sess->zh == zh && linked(c, e->a))
        a = e->a;
    if (!a)
      break;
    a->evseq = seq;
    for (e = c->wtab[b]; e; e = e->next) {
      if (e->a != a || strcmp(e->path, path) != 0)
        continue;
      if (e->idx < 0) {
        own = 1;
      } else {
        i = e->idx;
        a->wflags[i] |=
            type == ZOO_DELETED_EVENT ? ZKL__W_GONE : ZKL__W_CHANGED;
        hit = 1;
      }
    }
    if (own)
      own_event(c, a, type);
    if (hit)
      kick(a);
  }
  pthread_mutex_unlock(&c->mu);
}
