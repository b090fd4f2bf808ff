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
  REJOIN = 4, /* the queue's parents were missing and are made: join again */
  REVOKED = 5 /* a watch says our node is gone: ask before believing it */
};

/* Most planted nodes one queue object remembers; past that, a queue full
 * of them is an attack we report instead of growing without bound. */
#define IGNORED_MAX 1024

/* How many times in a row a missing parent may make us retry: a container
 * parent can be reaped between our mkdir and our create, but not forever. */
#define NONODE_RETRIES 8

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

typedef struct zkl__run run_t;
typedef void (*step_fn)(zkl__acq_t *a);

/* One acquisition's run through the protocol: a machine of steps. A step
 * runs under c->mu and never waits: it sends requests and names the step
 * that takes their answers, or parks until something it waits for
 * happens, or ends the run. Whoever makes progress possible moves the
 * machine on (advance()): the last answer's completion, an event on the
 * connection or a watched node (a->wake), or the thread that waits
 * for the run to end, when a parked step's time comes. */
struct zkl__run {
  zkl__queue_t *q;
  int mode;
  int64_t deadline; /* -1: none */
  uint64_t gen;     /* q->cancel_gen when we started */
  int waited;       /* we waited for someone (a semaphore relays) */
  int behind;       /* our last listing had contenders after us */
  int agreed;       /* the queue's directory data matched q->dir_data */
  int nonode;
  int first; /* no look at the queue yet */
  int member; /* one node of a multi-lock's: never joins again alone */

  step_fn next;     /* runs when nothing is in flight and we are not parked */
  int inflight;     /* requests sent, not yet answered */
  int parked;       /* waiting for an event, or for wake_at */
  int64_t wake_at;  /* parked: when to look again unasked (-1: never) */
  int done, outcome;
  /* An asynchronous run ends on the event thread, which calls done() */
  zkl__run_done_fn done_fn;
  void *done_ctx;
  int abandoned;           /* its caller gave up on it: end it quietly */
  int ended;               /* on c->ended, through ended_next */
  zkl__acq_t *ended_next;

  uint64_t epoch;   /* c->conn_epoch when this look at the queue began */
  int have_list, fresh;
  zkl__call_t cr, ls, gd, aux, sy;
  zkl__session_t *s;   /* joining on it (a reference), until adopted */
  zkl__session_t *rs;  /* the session a request in flight went on (a ref) */
  uint64_t repoch;     /* c->conn_epoch when that request went */
  char *mk;            /* making parents: the component being made */
  int rec_i;           /* recovering: the next listed name to look at */
  char *rec_path;
  int tries;           /* agreeing on the directory's data */
  int if_mine;         /* reading our own node: what "still ours" means */
  /* waiting for a usable connection: then() gets the verdict */
  zkl__session_t *cs;
  uint64_t cepoch;
  void (*then)(zkl__acq_t *a, int rc);
  /* waiting for the wait set */
  waitset_t w;
  zkl__went_t went[ZKL__WATCH_MAX];
  unsigned char wflags[ZKL__WATCH_MAX];
  zkl__call_t *reads;
  int64_t until;
  int polled, gone_all, gone_any, changed;
};

static void queue_fini(zkl__queue_t *q);

static int queue_init(zkl__queue_t *q, zkl_client_t *c,
                      const zkl__queue_spec_t *sp) {
  char max[32];
  memset(q, 0, sizeof *q);
  q->c = c;
  q->marker = sp->marker;
  q->marker_shared = sp->marker_shared;
  q->flags = sp->flags;
  q->limit = sp->limit;
  q->notify = sp->notify;
  q->dir = zkl__child(sp->root, sp->name);
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
 * not checked (see step_top()). */
static int halt(const run_t *r, int lenient) {
  zkl_client_t *c = r->q->c;
  if (c->stopping)
    return ZKL_ECLOSED;
  if (c->auth_failed)
    return ZKL_EAUTH;
  if (r->q->cancel_gen != r->gen || r->q->closed || r->abandoned)
    return ZKL_ECANCELED;
  if (r->deadline >= 0 && !lenient && zkl_now_ms() >= r->deadline)
    return ZKL_ETIMEDOUT;
  return ZKL_OK;
}

static int stopped(const run_t *r) { return halt(r, r->first); }

/* Before a request that only trouble makes necessary (a lost reply, a
 * failed listing): the deadline holds even on the first look. */
static int stopped_strict(const run_t *r) { return halt(r, 0); }

/* ---- the machine ---------------------------------------------------------- */

static void advance(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  while (!r->done && !r->inflight && !r->parked)
    r->next(a);
  if (!r->done_fn) {
    /* the waiting thread sleeps until the end, or a parked step's time */
    pthread_cond_broadcast(&a->cv);
  } else if (r->done && !r->ended) {
    /* Settled on the event thread: here, a watcher or a completion may
     * be walking the acquisitions, and a must outlive its walk. */
    r->ended = 1;
    r->ended_next = c->ended;
    c->ended = a;
    pthread_cond_broadcast(&c->cv);
  }
}

/* a->wake while a run is on a: a parked step runs again. */
static void kick(zkl__acq_t *a) {
  run_t *r = a->run;
  if (!r || r->done || !r->parked)
    return;
  r->parked = 0;
  advance(a);
}

static void park(zkl__acq_t *a, step_fn again, int64_t wake_at) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  r->next = again;
  r->wake_at = wake_at;
  r->parked = 1;
  /* an asynchronous run's time is kept by the event thread */
  if (r->done_fn && wake_at >= 0 && (!c->timer_due || wake_at < c->timer_due)) {
    c->timer_due = wake_at;
    if (!c->ev_wake_at || c->ev_wake_at > wake_at)
      pthread_cond_broadcast(&c->cv);
  }
}

static void finish(zkl__acq_t *a, int rc) {
  a->run->done = 1;
  a->run->outcome = rc;
}

/* A request's answer: the step named in r->next takes them all. */
static void on_reply(zkl__call_t *call) {
  zkl__acq_t *a = call->ctx;
  if (--a->run->inflight == 0)
    advance(a);
}

static void prep(zkl__acq_t *a, zkl__call_t *call) {
  zkl__call_init_fn(call, a->q->c, on_reply, a);
}

/* Counts a request sent by zkl__<request>(); one the C client refused is
 * answered at once with its code. */
static void sent(zkl__acq_t *a, zkl__call_t *call, int rc) {
  if (rc == ZOK) {
    a->run->inflight++;
  } else {
    call->rc = rc;
    call->done = 1;
  }
}

/* Waits for a usable connection after a request failed on session s at
 * connection epoch `epoch`, then hands then() ZKL_OK or why the wait
 * ended. */
static void step_conn(zkl__acq_t *a);
static void await_conn(zkl__acq_t *a, zkl__session_t *s, uint64_t epoch,
                       void (*then)(zkl__acq_t *, int)) {
  run_t *r = a->run;
  r->cs = s;
  r->cepoch = epoch;
  r->then = then;
  r->next = step_conn;
}

static void step_conn(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = stopped(r);
  if (rc == ZKL_OK && c->state == ZKL_CLIENT_CONNECTED &&
      (c->conn_epoch != r->cepoch || c->sess != r->cs))
    rc = ZKL_OK;
  else if (rc == ZKL_OK && r->deadline >= 0 && zkl_now_ms() >= r->deadline)
    rc = ZKL_ETIMEDOUT;
  else if (rc == ZKL_OK) {
    park(a, step_conn, r->deadline);
    return;
  }
  r->then(a, rc);
}

/* Forget our node (it is gone with its session, or was deleted, or is
 * somebody else's now): never to be deleted by us. */
static void drop_node(zkl_client_t *c, zkl__acq_t *a) {
  zkl__went_del(c, &a->own_went);
  free(a->path);
  a->path = NULL;
  zkl__session_put(c, a->sess);
  a->sess = NULL;
  a->session_lost = 0;
  a->revoked = 0;
  a->own_watch = ZKL__OWN_NONE;
}

/* Decide, leaving our node alone when it is not ours to delete; one whose
 * data someone rewrote is still ours, and goes. */
static void end_run(zkl__acq_t *a, int rc) {
  if (rc == ZKL_EREVOKED && a->tainted && a->path && a->sess)
    zkl__defer_delete_now(a->q->c, a->sess, a->path);
  if (rc == ZKL_EREVOKED)
    drop_node(a->q->c, a);
  finish(a, rc);
}

/* Our node is not where it must be, or not ours. Gone with an expired
 * session, it is no one's doing: join again. Deleted or replaced while
 * the session lives, it was revoked by another client, and joining again
 * at the tail behind its back would be wrong. */
static int gone(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  if (a->sess && a->sess == c->sess && !a->sess->expired && !a->session_lost) {
    zkl__post_log(c, ZKL_LOG_WARN, "%s: our waiting node was %s",
                  a->path ? a->path : a->q->dir,
                  a->revoked ? "deleted or replaced by another client"
                             : "deleted by another client");
    return ZKL_EREVOKED;
  }
  return RETRY;
}

/* ---- a look at the queue: the top of every pass --------------------------- */

static void step_join(zkl__acq_t *a);
static void step_list_start(zkl__acq_t *a);
static void step_position(zkl__acq_t *a);
static void step_wait(zkl__acq_t *a);
static void confirm(zkl__acq_t *a, int fresh);

/* A lock free now is taken whatever the deadline (as with
 * pthread_mutex_timedlock): the deadline is not checked until our first
 * look at the queue, which normally comes with the create, or after making
 * the queue's missing parents on first use. Waits for the network still
 * honour it, and so does every request that only trouble makes necessary,
 * so that a slow or broken link makes us overrun the deadline by at most
 * the round trip under way (and the delete of our node), not by one round
 * trip per recovery step. */
static void step_top(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = stopped(r);
  if (rc != ZKL_OK) {
    finish(a, rc);
    return;
  }
  if (a->session_lost || (a->path && !a->sess))
    drop_node(c, a);
  if (!a->path && r->member) {
    /* A new node of ours would be younger than the multi-lock's other
     * nodes, and a wait on it could close a cycle: all or none again. */
    finish(a, ZKL__AGAIN);
    return;
  }
  r->epoch = c->conn_epoch;
  r->have_list = r->fresh = 0;
  r->next = a->path ? step_list_start : step_join;
}

static void try_last(zkl__acq_t *a);

/* What a look at the queue came to (a position, an owner's confirmation,
 * a wait): hold, look again, join again, wait, or end. */
static void after_look(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  if (rc == HOLD) {
    finish(a, ZKL_OK);
    return;
  }
  r->first = 0;
  if (rc == RELIST) {
    r->next = step_top;
  } else if (rc == RETRY) {
    drop_node(a->q->c, a);
    r->next = step_top;
  } else if (rc != ZKL_OK) {
    end_run(a, rc);
  } else if (r->mode == ZKL__TRY) {
    try_last(a);
  } else {
    r->next = step_wait;
  }
}

/* ---- joining: create + getChildren in one round trip ---------------------- */

static void joined(zkl__acq_t *a);

/* How a join ended, when it did not end with our node: REJOIN (parents
 * made) keeps the first look lenient; RETRY joins again. */
static void join_failed(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  if (rc == REJOIN) {
    r->next = step_top;
    return;
  }
  r->first = 0;
  if (rc == RETRY)
    r->next = step_top;
  else if (rc == ZKL_OK)
    joined(a);
  else
    finish(a, rc);
}

static void step_joined(zkl__acq_t *a);

static void step_join(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  /* the directory is read once per incarnation: a listing tells which */
  int read_dir = q->dir_data && !q->dir_czxid;
  char *path, *full, *data = NULL;
  size_t len = 0;
  int rc;

  if ((rc = zkl__guid(a->guid)) != ZKL_OK) {
    finish(a, rc);
    return;
  }
  path = zkl__join(q->prefix, a->guid);
  full = path ? zkl__join(path, a->shared ? q->marker_shared : q->marker)
              : NULL;
  free(path);
  if (!full || (rc = zkl__node_data(q->id, q->user_data, q->user_len, &data,
                                    &len)) != ZKL_OK) {
    free(full);
    finish(a, full ? rc : ZKL_ENOMEM);
    return;
  }
  r->s = zkl__session_get(c);
  prep(a, &r->gd);
  prep(a, &r->cr);
  prep(a, &r->ls);
  prep(a, &r->aux);
  /* A directory this object has not seen is made first, in the same
   * round trip: per-key locks are mostly taken on keys never used before,
   * whose create would otherwise fail and wait for one more. Whatever it
   * answers (made, there already, not ours to make), the create tells. */
  if (!q->dir_seen)
    sent(a, &r->aux,
         zkl__create_dir(&r->aux, r->s, q->dir, q->dir_data,
                         q->dir_data ? (int)strlen(q->dir_data) : -1,
                         (q->flags & ZKL__Q_KEEP_DIR) != 0));
  if (read_dir) /* first: what the directory says binds a node made after */
    sent(a, &r->gd, zkl__get(&r->gd, r->s, q->dir, 0));
  sent(a, &r->cr,
       zkl__create(&r->cr, r->s, full, data, (int)len,
                   ZOO_EPHEMERAL_SEQUENTIAL));
  sent(a, &r->ls, zkl__children_after(&r->ls, r->s, q->dir, &r->cr));
  free(full);
  free(data);
  r->next = step_joined;
}

/* Adopt a node we created (from a create reply, or found again by guid);
 * takes the run's reference to the session. */
static void adopt(zkl__acq_t *a, char *path, const struct Stat *st) {
  run_t *r = a->run;
  const char *base = strrchr(path, '/');
  int kind;
  a->path = path;
  zkl__went_add(a->q->c, &a->own_went, path, a, -1);
  a->czxid = st->czxid;
  a->dversion = st->version;
  a->sess = r->s;
  r->s = NULL;
  if (!zkl__name_parse(base ? base + 1 : path, &a->seq, &kind))
    a->seq = 0;
}

static void step_mkdir(zkl__acq_t *a);
static void recover(zkl__acq_t *a, uint64_t epoch);
static void join_reconnected(zkl__acq_t *a, int rc);

static void step_joined(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = r->cr.rc;
  if (r->aux.done && r->aux.rc == ZOK) /* the directory, made first */
    a->q->dir_made = r->aux.stat.czxid;
  zkl__call_free(&r->aux);
  if (rc == ZOK) {
    a->q->dir_seen = 1;
    adopt(a, r->cr.path, &r->cr.stat);
    r->cr.path = NULL;
    r->nonode = 0;
    r->first = 0; /* any other pass is trouble */
    joined(a);
    return;
  }
  zkl__call_free(&r->cr);
  zkl__call_free(&r->ls);
  zkl__call_free(&r->gd);
  r->gd.rc = ZCONNECTIONLOSS; /* not read: agree() reads it again */
  /* The listing's names are gone, but not its code, which may be ZOK
   * (the create failed for want of memory, the listing did not): recovery
   * can still adopt our node, and the look that follows would take the
   * empty list for a fresh one and our node for deleted. Found by the
   * model (model/, F2). */
  r->ls.rc = ZCONNECTIONLOSS;
  if (rc == ZNONODE) {
    rc = ++r->nonode > NONODE_RETRIES ? ZNONODE
         : !(r->mk = zkl__strdup(a->q->dir)) ? ZKL_ENOMEM
                                              : ZOK;
    if (rc != ZOK) {
      zkl__session_put(c, r->s);
      r->s = NULL;
      join_failed(a, rc);
      return;
    }
    r->next = step_mkdir;
  } else if (zkl__is_conn_error(rc) || rc == ZKL_ENOMEM) {
    recover(a, rc == ZKL_ENOMEM ? 0 : r->epoch);
  } else if (is_session_error(rc)) {
    await_conn(a, r->s, r->epoch, join_reconnected);
  } else {
    zkl__session_put(c, r->s);
    r->s = NULL;
    join_failed(a, rc);
  }
}

static void join_reconnected(zkl__acq_t *a, int rc) {
  zkl__session_put(a->q->c, a->run->s);
  a->run->s = NULL;
  join_failed(a, rc == ZKL_OK ? RETRY : rc);
}

/* ---- making the queue's parents ------------------------------------------- */

/* Creates the missing components of q->dir as container nodes, deepest
 * first: the immediate parent, then, only on ZNONODE, one level up, and
 * back down. Creating a component that exists would need CREATE on its
 * own parent, which the server checks before it answers "exists": on a
 * secured ensemble that is often not ours to have, and asking only for
 * what is missing costs one round trip in the common case. */
static void step_mkdir_done(zkl__acq_t *a);

static void step_mkdir(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  /* the queue's own directory carries what its members agree on, and is
   * the one a kazoo flavour keeps (its parents hold it: never empty) */
  int leaf = strlen(r->mk) == strlen(q->dir);
  const char *d = leaf ? q->dir_data : NULL;
  prep(a, &r->aux);
  sent(a, &r->aux,
       zkl__create_dir(&r->aux, r->s, r->mk, d, d ? (int)strlen(d) : -1,
                       leaf && (q->flags & ZKL__Q_KEEP_DIR)));
  r->next = step_mkdir_done;
}

static void step_mkdir_done(zkl__acq_t *a) {
  run_t *r = a->run;
  size_t len = strlen(a->q->dir);
  int rc = r->aux.rc == ZNODEEXISTS ? ZOK : r->aux.rc;
  if (r->aux.rc == ZOK && strlen(r->mk) == len)
    a->q->dir_made = r->aux.stat.czxid;
  zkl__call_free(&r->aux);
  if (rc == ZNONODE && strchr(r->mk + 1, '/')) {
    *strrchr(r->mk, '/') = '\0'; /* its parent first */
    r->next = step_mkdir;
    return;
  }
  if (rc == ZOK && strlen(r->mk) != len) {
    r->mk[strlen(r->mk)] = '/'; /* one level back down */
    r->next = step_mkdir;
    return;
  }
  free(r->mk);
  r->mk = NULL;
  zkl__session_put(a->q->c, r->s);
  r->s = NULL;
  join_failed(a, rc == ZOK ? REJOIN
                 : zkl__is_conn_error(rc) || is_session_error(rc) ? RETRY
                                                                  : rc);
}

/* ---- recovering a create whose reply was lost ----------------------------- */

/* The reply to our create was lost. Find our node again by its guid, and
 * adopt it only if its ephemeral owner is this very session: a node left by
 * an expired session must never be taken for ours. Every name with our
 * guid is read: anyone may copy our name, and a copy must not hide our
 * node, which would then block the queue, us included (model/, F4).
 * `epoch` 0 lists at once if connected (the create failed with the
 * connection up, for want of memory: no reconnection is coming, F3). */
static void recover_connected(zkl__acq_t *a, int rc);

static void recover(zkl__acq_t *a, uint64_t epoch) {
  await_conn(a, a->run->s, epoch, recover_connected);
}

/* The recovery gave up: whatever we made must not outlive it. */
static void recover_failed(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (rc != RETRY)
    zkl__defer_find_delete(c, r->s, a->q->dir, a->guid);
  zkl__session_put(c, r->s);
  r->s = NULL;
  join_failed(a, rc);
}

static void step_recover_list(zkl__acq_t *a);

static void recover_connected(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (rc == ZKL_OK && c->sess != r->s) {
    /* expired: whatever we made died with it */
    recover_failed(a, RETRY);
    return;
  }
  if (rc != ZKL_OK || (rc = stopped_strict(r)) != ZKL_OK) {
    recover_failed(a, rc);
    return;
  }
  r->repoch = c->conn_epoch;
  prep(a, &r->sy);
  prep(a, &r->ls);
  /* sync first: the server we read from has then seen every write the
   * leader committed before it, our create included if it happened. */
  sent(a, &r->sy, zkl__sync(&r->sy, r->s, a->q->dir));
  sent(a, &r->ls, zkl__children(&r->ls, r->s, a->q->dir));
  r->rec_i = 0;
  r->next = step_recover_list;
}

static void recover_scan(zkl__acq_t *a);

static void recover_result(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl__call_free(&r->ls);
  r->ls.rc = ZCONNECTIONLOSS;
  if (zkl__is_conn_error(rc)) {
    recover(a, r->repoch);
    return;
  }
  if (rc == ZKL_ENOMEM)
    zkl__defer_find_delete(a->q->c, r->s, a->q->dir, a->guid);
  zkl__session_put(a->q->c, r->s);
  r->s = NULL;
  join_failed(a, rc == ZNONODE || is_session_error(rc) ? RETRY : rc);
}

static void step_recover_list(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__call_free(&r->sy);
  if (r->ls.rc != ZOK)
    recover_result(a, r->ls.rc);
  else
    recover_scan(a);
}

static void step_recover_stat(zkl__acq_t *a);

static void recover_scan(zkl__acq_t *a) {
  run_t *r = a->run;
  for (; r->rec_i < r->ls.kids.count; r->rec_i++) {
    const char *name = r->ls.kids.data[r->rec_i];
    if (!strstr(name, a->guid))
      continue;
    r->rec_i++;
    if (!(r->rec_path = zkl__join(a->q->prefix, name))) {
      recover_result(a, ZKL_ENOMEM);
      return;
    }
    prep(a, &r->aux);
    sent(a, &r->aux, zkl__exists(&r->aux, r->s, r->rec_path));
    r->next = step_recover_stat;
    return;
  }
  recover_result(a, RETRY);
}

/* Reads the node found with our guid, and adopts it if its owner is this
 * very session. */
static void step_recover_stat(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__session_t *s = r->s;
  int rc = r->aux.rc;
  if (rc == ZOK && r->aux.stat.ephemeralOwner == s->id && !s->expired) {
    adopt(a, r->rec_path, &r->aux.stat);
    r->rec_path = NULL;
    zkl__call_free(&r->ls);
    r->ls.rc = ZCONNECTIONLOSS;
    join_failed(a, ZKL_OK);
    return;
  }
  free(r->rec_path);
  r->rec_path = NULL;
  if (rc == ZOK || rc == ZNONODE)
    recover_scan(a); /* gone, or not ours: the next one */
  else
    recover_result(a, rc);
}

/* ---- the queue's directory data ------------------------------------------- */

/* How many times agree() reads and writes the directory before giving up
 * on a directory whose data keeps changing under it. */
#define AGREE_TRIES 8

static void step_position(zkl__acq_t *a);

/* Joined: our node is known, and r->ls may hold the listing that came
 * with it. */
static void step_agree(zkl__acq_t *a);
static void agreed(zkl__acq_t *a, int rc);

static void joined(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  r->have_list = r->fresh = r->ls.rc == ZOK;
  if (q->dir_data && !r->agreed) {
    /* the listing carries the directory's stat: unchanged since we read
     * it (same incarnation, same data version), it still says our N */
    if (r->have_list && r->ls.stat.czxid == q->dir_czxid &&
        r->ls.stat.version == q->dir_version) {
      r->agreed = 1;
    } else {
      /* read before our create: maybe of an earlier incarnation, or
       * rewritten since */
      if (r->have_list && r->gd.rc == ZOK &&
          (r->gd.stat.czxid != r->ls.stat.czxid ||
           r->gd.stat.version != r->ls.stat.version))
        r->gd.rc = ZCONNECTIONLOSS;
      r->tries = 0;
      r->next = step_agree;
      return;
    }
  }
  agreed(a, ZKL_OK);
}

static void agreed(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl__call_free(&r->gd);
  if (rc != ZKL_OK || !r->have_list)
    zkl__call_free(&r->ls);
  if (rc == RETRY) {
    drop_node(a->q->c, a);
    r->next = step_top;
  } else if (rc != ZKL_OK) {
    end_run(a, rc);
  } else {
    r->next = r->have_list ? step_position : step_list_start;
  }
}

/* Agreeing on N. Members that disagree on a semaphore's number of leases
 * would admit more than some of them allow. Two checks:
 *
 * The leases (position(), at every look at the queue): each lease's name
 * carries its N, and a member refuses while a live lease before its own
 * carries another. That alone keeps two leases of different N from both
 * being granted: of two such members the later one (the higher
 * sequence) made its node after the earlier one's, and lists the queue
 * after its create, so its listing shows the earlier node unless that is
 * gone already; and a lease is granted only by a listing (or by the
 * deletion of nodes a listing showed), never before its first one. No
 * one can rewrite a name, so no write to any node can override it. So
 * holders need not be told anything: a rewrite breaks no agreement under
 * them. The price: a refused member's node, until its delete lands, makes
 * a member of the other N right behind it refuse too. A misconfigured
 * member can fail correct ones for that moment, never admit one too many.
 *
 * The directory's data, "max=N" (q->dir_data), speaks for a semaphore
 * with no lease live, where no name can: a member refuses when it says
 * another N, unless live leases before it carry our N (they decide: the
 * directory was rewritten under them). A rewrite thus changes N once
 * every lease of the old N is gone. It is read once per incarnation and
 * data version of the directory (the listing's stat tells both), so the
 * uncontended path reads nothing more. Leases whose names carry no N (an
 * older version's) are judged by the directory alone, as they always
 * were.
 *
 * A directory without data (made by another recipe, an older version or
 * an operator) gets ours by a conditional write. r->gd is the read of the
 * directory sent with our join; any other code than ZOK means read it
 * again. Ends with ZKL_OK, ZKL_EMISMATCH, RETRY, or an error. */
static void step_agree_set(zkl__acq_t *a);
static void agree_reread(zkl__acq_t *a, int rc);

static int ignored(const zkl__queue_t *q, const char *name);

/* Whether the listing of our join shows live leases before ours that
 * carry our N, and none that carries another. */
static int leases_agree(zkl__acq_t *a) {
  run_t *r = a->run;
  const char *me = a->path ? strrchr(a->path, '/') + 1 : NULL;
  zkl__entry_t *e = NULL;
  unsigned char *skip = NULL;
  int n, i, idx = -1, agree = 0, ok = 0;
  if (!r->have_list || !me)
    return 0;
  n = zkl__contenders(r->ls.kids.data, r->ls.kids.count, &e);
  if (n > 0 && (skip = calloc((size_t)n, 1))) {
    for (i = 0; i < n; i++) {
      if (strcmp(e[i].name, me) == 0)
        idx = i;
      else
        skip[i] = ignored(a->q, e[i].name);
    }
    ok = idx >= 0 &&
         zkl__lease_disagrees(e, n, idx, skip, a->q->limit, &agree) < 0 &&
         agree > 0;
  }
  free(skip);
  free(e);
  return ok;
}

static void step_agree(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  zkl__call_t *gd = &r->gd;
  const char *want = q->dir_data;
  size_t wl = strlen(want);
  if (r->tries++ >= AGREE_TRIES) {
    agreed(a, ZKL_EPROTO);
    return;
  }
  r->repoch = c->conn_epoch;
  if (gd->rc == ZOK && gd->data_len > 0) {
    if ((size_t)gd->data_len == wl && memcmp(gd->data, want, wl) == 0) {
      r->agreed = 1;
      q->dir_czxid = gd->stat.czxid;
      q->dir_version = gd->stat.version;
      agreed(a, ZKL_OK);
      return;
    }
    q->dir_czxid = 0; /* not ours: read it with every join */
    if (leases_agree(a)) {
      zkl__post_log(c, ZKL_LOG_WARN,
                    "%s: says \"%.*s\", but the live leases say \"%s\", "
                    "as this member does: joining",
                    q->dir, gd->data_len > 64 ? 64 : gd->data_len, gd->data,
                    want);
      agreed(a, ZKL_OK);
      return;
    }
    zkl__post_log(c, ZKL_LOG_ERROR,
                  "%s: its members were made with \"%.*s\", this one "
                  "with \"%s\": refusing to join",
                  q->dir, gd->data_len > 64 ? 64 : gd->data_len, gd->data,
                  want);
    agreed(a, ZKL_EMISMATCH);
    return;
  }
  if (gd->rc != ZOK && gd->rc != ZNONODE && !zkl__is_conn_error(gd->rc)) {
    agreed(a, is_session_error(gd->rc) ? RETRY : gd->rc);
    return;
  }
  if (!a->sess || a->session_lost) {
    agreed(a, RETRY);
    return;
  }
  r->rs = a->sess;
  r->rs->refs++;
  if (gd->rc == ZOK) { /* no data yet: ours, unless someone was first */
    prep(a, &r->aux);
    sent(a, &r->aux,
         zkl__set(&r->aux, r->rs, q->dir, want, (int)wl, gd->stat.version));
    r->next = step_agree_set;
    return;
  }
  agree_reread(a, ZKL_OK);
}

static void step_agree_set(zkl__acq_t *a) {
  run_t *r = a->run;
  int rc = r->aux.rc;
  zkl__call_free(&r->aux);
  if (rc == ZOK) {
    zkl__session_put(a->q->c, r->rs);
    r->rs = NULL;
    r->agreed = 1;
    a->q->dir_czxid = r->gd.stat.czxid;
    a->q->dir_version = r->gd.stat.version + 1; /* our conditional write */
    agreed(a, ZKL_OK);
    return;
  }
  agree_reread(a, rc);
}

static void step_agree_read(zkl__acq_t *a);

static void agree_reread(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl__call_free(&r->gd);
  prep(a, &r->gd);
  if (rc == ZOK || rc == ZBADVERSION)
    sent(a, &r->gd, zkl__get(&r->gd, r->rs, a->q->dir, 0));
  else
    r->gd.rc = rc;
  r->next = step_agree_read;
}

static void agree_reconnected(zkl__acq_t *a, int rc) {
  if (rc != ZKL_OK)
    agreed(a, rc);
  else
    a->run->next = step_agree;
}

static void step_agree_read(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__session_t *s = r->rs;
  zkl__session_put(a->q->c, s);
  r->rs = NULL;
  if (zkl__is_conn_error(r->gd.rc))
    await_conn(a, s, r->repoch, agree_reconnected);
  else
    r->next = step_agree;
}

/* ---- listing the queue ----------------------------------------------------- */

static void step_list(zkl__acq_t *a);
static void step_listed(zkl__acq_t *a);

static void step_list_start(zkl__acq_t *a) {
  a->run->first = 0;
  a->run->epoch = a->q->c->conn_epoch;
  a->run->next = step_list;
}

static void list_result(zkl__acq_t *a, int rc) {
  if (rc == RETRY) {
    drop_node(a->q->c, a);
    a->run->next = step_top;
  } else {
    end_run(a, rc);
  }
}

static void list_reconnected(zkl__acq_t *a, int rc) {
  if (rc != ZKL_OK)
    list_result(a, rc);
  else
    a->run->next = step_list;
}

/* Lists the queue on our node's session. */
static void step_list(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int rc;
  if (!s || a->session_lost) {
    list_result(a, RETRY);
    return;
  }
  if ((rc = stopped_strict(r)) != ZKL_OK) {
    list_result(a, rc);
    return;
  }
  /* Sent while disconnected, a request would wait in the C client for the
   * reconnection or its failure, past our deadline: wait here instead. */
  if (c->state != ZKL_CLIENT_CONNECTED) {
    await_conn(a, s, c->conn_epoch, list_reconnected);
    return;
  }
  r->rs = s;
  s->refs++;
  r->repoch = c->conn_epoch;
  prep(a, &r->ls);
  sent(a, &r->ls, zkl__children(&r->ls, s, a->q->dir));
  r->next = step_listed;
}

static void step_listed(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__session_t *s = r->rs;
  int rc = r->ls.rc;
  zkl__session_put(a->q->c, s);
  r->rs = NULL;
  if (rc == ZOK) {
    r->have_list = 1;
    r->next = step_position;
    return;
  }
  zkl__call_free(&r->ls);
  if (zkl__is_conn_error(rc))
    await_conn(a, s, r->repoch, list_reconnected);
  else if (is_session_error(rc))
    list_result(a, RETRY);
  else if (rc == ZNONODE) /* the parent cannot go while our node is in it */
    list_result(a, gone(a)); /* someone deleted both */
  else
    list_result(a, rc);
}

/* ---- our place in the queue ------------------------------------------------ */

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

/* Finds our place in a listing, from our own node's point of view (see
 * policy.c). Returns HOLD, ZKL_EMISMATCH (a lease before ours carries
 * another N), ZKL_EREVOKED or RETRY (our node is not there),
 * or ZKL_OK with *w: the nodes to watch, and whether their deletion alone
 * will prove we hold. */
static int position(zkl__acq_t *a, const zkl__call_t *ls, waitset_t *w) {
  run_t *r = a->run;
  const char *me = strrchr(a->path, '/') + 1;
  zkl__entry_t *e;
  unsigned char *skip;
  int n, i, idx = -1, rc = ZKL_OK, d, agree;
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
      skip[i] = ignored(a->q, e[i].name);
  }
  if (idx < 0) {
    rc = gone(a);
  } else if (a->q->limit && (e[idx].kind & ZKL__KIND_LEASE) &&
             (d = zkl__lease_disagrees(e, n, idx, skip, a->q->limit,
                                       &agree)) >= 0) {
    /* see "agreeing on N" above: the later of two disagreeing members
     * always sees the earlier one, and it is the one to give way */
    zkl__post_log(a->q->c, ZKL_LOG_ERROR,
                  "%s/%s: a live lease made with max=%d, this member with "
                  "max=%d: refusing to join",
                  a->q->dir, e[d].name, zkl__lease_limit(e[d].name),
                  a->q->limit);
    rc = ZKL_EMISMATCH;
  } else {
    zkl__decide(e, n, idx, skip, a->q->limit, &w->plan);
    if (!w->plan.before)
      rc = HOLD;
    r->behind = zkl__any_after(e, n, idx, skip);
    for (i = 0; i < w->plan.nwatch; i++)
      if (!(w->paths[i] = zkl__join(a->q->prefix, e[w->plan.watch[i]].name)))
        rc = ZKL_ENOMEM;
    if (rc != ZKL_OK)
      waitset_free(w);
  }
  free(skip);
  free(e);
  return rc;
}

/* Whether a listing shows a node that someone else than an object of
 * q's own flavour made (zkl__name_foreign). */
static int peer_listed(const zkl__queue_t *q, const zkl__call_t *ls) {
  int i;
  for (i = 0; i < ls->kids.count; i++)
    if (zkl__name_foreign(ls->kids.data[i], q->marker, q->marker_shared))
      return 1;
  return 0;
}

static void step_position(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  int rc;
  r->w.plan.nwatch = 0;
  rc = position(a, &r->ls, &r->w);
  q->dir_alone = r->ls.kids.count == 1 && q->dir_made &&
                 r->ls.stat.czxid == q->dir_made;
  if (!q->dir_peer && !(q->flags & ZKL__Q_KEEP_DIR))
    q->dir_peer = peer_listed(q, &r->ls);
  zkl__call_free(&r->ls);
  if (rc == HOLD)
    confirm(a, r->fresh);
  else
    after_look(a, rc);
}

/* ---- whose node it is ------------------------------------------------------ */

static void step_own_read(zkl__acq_t *a);

static void own_reconnected(zkl__acq_t *a, int rc) {
  after_look(a, rc == ZKL_OK ? RELIST : rc);
}

/* Reads our own node on our session, and lets the answer decide: still
 * ours (our czxid, owned by the session we are on now) gives `if_mine`;
 * gone or someone else's, gone(). A session that has ended cannot
 * answer at all, which is what makes the read worth its round trip. */
static void read_own(zkl__acq_t *a, int if_mine) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int rc;
  if (!s || s != c->sess || s->expired || a->session_lost || !a->path) {
    after_look(a, RETRY);
    return;
  }
  if ((rc = stopped(r)) != ZKL_OK) {
    after_look(a, rc);
    return;
  }
  r->if_mine = if_mine;
  r->rs = s;
  s->refs++;
  r->repoch = c->conn_epoch;
  prep(a, &r->aux);
  sent(a, &r->aux, zkl__exists(&r->aux, s, a->path));
  r->next = step_own_read;
}

static void step_own_read(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = r->rs;
  int rc = r->aux.rc;
  int mine = rc == ZOK && zkl__owns(a, &r->aux.stat) && s == c->sess &&
             !s->expired && !a->tainted;
  zkl__session_put(c, s); /* a->sess keeps it alive, if it is still ours */
  r->rs = NULL;
  if (mine) {
    a->revoked = 0;
    after_look(a, r->if_mine);
  } else if (zkl__is_conn_error(rc)) {
    await_conn(a, s, r->repoch, own_reconnected);
  } else if (rc == ZOK || rc == ZNONODE) {
    if (a->tainted) /* gone() says why */
      a->revoked = 1;
    after_look(a, gone(a));
  } else {
    after_look(a, is_session_error(rc) ? RETRY : rc);
  }
}

/* At the head: make sure our node is still there and ours before we
 * hold, unless that is already known: the listing came with our create,
 * or the watch on our node confirmed it and would have told us of any
 * change since. Elections always ask (ZKL__Q_VERIFY_OWNER): they must
 * never have two leaders, and a node left by an expired session must
 * never make one. */
static void confirm(zkl__acq_t *a, int fresh) {
  if (!(a->q->flags & ZKL__Q_VERIFY_OWNER) && !a->tainted &&
      (fresh || a->own_watch == ZKL__OWN_OK))
    after_look(a, HOLD);
  else
    read_own(a, HOLD);
}

/* A watch said our waiting node was deleted, or is someone else's. The
 * end of our own session deletes it too, and our watch may hear of that
 * before we hear of the end (a session closed by the server, or by
 * another handle): ask before believing it. Ours after all: look again. */
static void check_revoked(zkl__acq_t *a) { read_own(a, RELIST); }

/* ---- waiting ---------------------------------------------------------------- */

/* Watches the wait set and parks until its nodes go. Our own node gets a
 * watch too, once per acquisition: deleted or replaced while we wait, the
 * wait ends (ZKL_EREVOKED), and the same watch serves the hold that
 * follows. A watched node whose data changes is read again: its data may
 * prove we hold (a downgrade); a change never means it is gone. Ends with
 * HOLD (zero-read hand-off), RELIST, RETRY, or an error. */
static void step_read(zkl__acq_t *a);

static void step_wait(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc, i;
  if ((rc = stopped(r)) != ZKL_OK) {
    waitset_free(&r->w);
    after_look(a, rc);
    return;
  }
  r->waited = 1;
  r->polled = r->gone_all = r->gone_any = r->changed = 0;
  memset(r->wflags, ZKL__W_READ, sizeof r->wflags);
  a->watch = r->w.paths;
  a->wflags = r->wflags;
  a->nwatch = r->w.plan.nwatch;
  for (i = 0; i < a->nwatch; i++)
    zkl__went_add(c, &r->went[i], r->w.paths[i], a, i);
  if (a->own_watch == ZKL__OWN_NONE && !(a->q->flags & ZKL__Q_NO_NODE_WATCH))
    zkl__watch_own(c, a->sess, a);
  r->until = r->deadline;
  if (r->w.plan.poll &&
      (r->until < 0 || r->until > zkl_now_ms() + ZKL__POLL_MS))
    r->until = zkl_now_ms() + ZKL__POLL_MS;
  r->next = step_read;
}

/* How the wait ended: rc is ZKL_OK when the flags tell. */
static void wait_end(zkl__acq_t *a, int rc) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int i;
  for (i = 0; i < a->nwatch; i++)
    zkl__went_del(c, &r->went[i]);
  a->watch = NULL;
  a->wflags = NULL;
  a->nwatch = 0;
  if (a->session_lost)
    rc = RETRY;
  else if (a->revoked)
    rc = REVOKED;
  else if (rc != ZKL_OK)
    ;
  else if (r->polled || r->changed)
    rc = RELIST;
  /* The zero-read hand-off is only sound if nothing happened in between
   * that could have made our last listing stale: no reconnection. */
  else if ((r->gone_all || (r->gone_any && r->w.plan.any)) &&
           r->w.plan.handoff && c->conn_epoch == r->epoch &&
           c->state == ZKL_CLIENT_CONNECTED)
    rc = HOLD;
  else
    rc = RELIST;
  waitset_free(&r->w);
  if (rc == HOLD)
    confirm(a, 0);
  else if (rc == REVOKED)
    check_revoked(a);
  else
    after_look(a, rc);
}

static void read_reconnected(zkl__acq_t *a, int rc) {
  wait_end(a, rc == ZKL_OK ? RELIST : rc);
}

static void step_read_done(zkl__acq_t *a);
static void step_wait_eval(zkl__acq_t *a);

/* Reads, with a watch, every node of the wait set still to be read, in one
 * round trip. */
static void step_read(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int i, k = 0;
  if (c->state != ZKL_CLIENT_CONNECTED) { /* as in step_list() */
    await_conn(a, s, r->epoch, read_reconnected);
    return;
  }
  for (i = 0; i < a->nwatch; i++)
    k += (a->wflags[i] & ZKL__W_READ) != 0;
  if (!k) {
    r->next = step_wait_eval;
    return;
  }
  if (!(r->reads = calloc((size_t)a->nwatch, sizeof *r->reads))) {
    wait_end(a, ZKL_ENOMEM);
    return;
  }
  r->rs = s;
  s->refs++;
  for (i = 0; i < a->nwatch; i++) {
    if (!(a->wflags[i] & ZKL__W_READ))
      continue;
    a->wflags[i] &= ~(ZKL__W_READ | ZKL__W_CHANGED);
    prep(a, &r->reads[i]);
    sent(a, &r->reads[i], zkl__get(&r->reads[i], s, a->watch[i], 1));
  }
  r->next = step_read_done;
}

/* A node already gone is marked so; one that is not ephemeral is never
 * waited for (RELIST); watch[0] found downgraded when that proves we hold
 * gives HOLD. */
static void step_read_done(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = r->rs;
  int i, rc = ZKL_OK, hold = 0, relist = 0;
  zkl__session_put(c, s);
  r->rs = NULL;
  for (i = 0; i < a->nwatch; i++) {
    zkl__call_t *g = &r->reads[i];
    if (!g->done)
      continue; /* not read this time */
    if (g->rc == ZNONODE) {
      a->wflags[i] |= ZKL__W_GONE;
    } else if (g->rc == ZOK && g->stat.ephemeralOwner == 0) {
      /* never goes by itself: do not wait behind it (its watch, left
       * set, fires into nobody's wait) */
      if (rc == ZKL_OK)
        rc = ignore(a->q, strrchr(a->watch[i], '/') + 1);
      if (rc == ZKL_OK)
        rc = RELIST;
    } else if (g->rc == ZOK) {
      size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
      hold |= i == 0 && r->w.plan.downgrade_ok &&
              zkl__data_mark(g->data, len, "mode=read");
      /* promoted before our watch was set: no event will tell us */
      relist |= i == 0 && r->w.plan.relist_on_change &&
                zkl__data_mark(g->data, len, "state=held");
    } else if (rc == ZKL_OK || rc == RELIST) {
      rc = g->rc;
    }
    zkl__call_free(g);
  }
  free(r->reads);
  r->reads = NULL;
  if (zkl__is_conn_error(rc))
    await_conn(a, s, r->epoch, read_reconnected);
  else if (is_session_error(rc))
    wait_end(a, RETRY);
  else if (rc == ZKL_OK && hold)
    wait_end(a, c->conn_epoch == r->epoch && c->state == ZKL_CLIENT_CONNECTED
                    ? HOLD
                    : RELIST);
  else if (rc == ZKL_OK && relist)
    wait_end(a, RELIST);
  else if (rc != ZKL_OK)
    wait_end(a, rc);
  else
    r->next = step_wait_eval;
}

/* A try that would wait reads, before it says ZKL_EBUSY, what a wait
 * reads at once and may hold on without waiting: its one conflict, when
 * that is a zklock writer (the plan's downgrade_ok; another library's
 * never carries our mark), marked "mode=read" by a downgrade, or gone
 * (the hand-off), exactly as step_read_done() finds it. Our own node is
 * read in the same round trip (confirm()'s read). So zkl_rwlock_tryrdlock
 * and zkl_rwlock_timedrdlock agree after a downgrade; a try with nothing
 * such to read costs nothing more. */
static void step_try_read_done(zkl__acq_t *a);

static void try_last(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  zkl__session_t *s = a->sess;
  if (!r->w.plan.downgrade_ok || r->w.plan.nwatch < 1 ||
      zkl__name_foreign(strrchr(r->w.paths[0], '/') + 1, q->marker,
                        q->marker_shared) ||
      !s || s != c->sess || s->expired || a->session_lost ||
      c->state != ZKL_CLIENT_CONNECTED || c->conn_epoch != r->epoch ||
      stopped(r) != ZKL_OK) {
    waitset_free(&r->w);
    finish(a, ZKL_EBUSY);
    return;
  }
  r->rs = s;
  s->refs++;
  prep(a, &r->aux);
  prep(a, &r->gd);
  sent(a, &r->aux, zkl__get(&r->aux, s, r->w.paths[0], 0));
  sent(a, &r->gd, zkl__exists(&r->gd, s, a->path));
  r->next = step_try_read_done;
}

static void step_try_read_done(zkl__acq_t *a) {
  run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = r->rs;
  zkl__call_t *g = &r->aux;
  size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
  int mine = r->gd.rc == ZOK && zkl__owns(a, &r->gd.stat) && s == c->sess &&
             !s->expired && !a->session_lost;
  int own_gone = r->gd.rc == ZNONODE || (r->gd.rc == ZOK && !mine);
  int hold = (g->rc == ZNONODE ||
              (g->rc == ZOK && g->stat.ephemeralOwner != 0 &&
               zkl__data_mark(g->data, len, "mode=read"))) &&
             c->conn_epoch == r->epoch && c->state == ZKL_CLIENT_CONNECTED;
  zkl__session_put(c, s); /* a->sess keeps it alive, if it is still ours */
  r->rs = NULL;
  zkl__call_free(g);
  zkl__call_free(&r->gd);
  waitset_free(&r->w);
  if (hold && mine)
    after_look(a, HOLD);
  else if (hold && own_gone)
    after_look(a, gone(a));
  else
    finish(a, ZKL_EBUSY);
}

/* Parked here between events: what the watches said so far. */
static void step_wait_eval(zkl__acq_t *a) {
  run_t *r = a->run;
  int i, rc = ZKL_OK;
  r->gone_all = 1;
  r->gone_any = r->changed = 0;
  for (i = 0; i < a->nwatch; i++) {
    r->gone_all &= (a->wflags[i] & ZKL__W_GONE) != 0;
    r->gone_any |= (a->wflags[i] & ZKL__W_GONE) != 0;
    r->changed |= (a->wflags[i] & ZKL__W_CHANGED) != 0;
  }
  if (!(r->gone_all || (r->gone_any && r->w.plan.any) || r->changed ||
        a->session_lost || a->revoked || (rc = stopped(r)) != ZKL_OK)) {
    if (r->until == r->deadline || zkl_now_ms() < r->until) {
      park(a, step_wait_eval, r->until);
      return;
    }
    r->polled = 1; /* a relay may have been lost: look again */
  }
  if (r->changed && !(r->gone_all || (r->gone_any && r->w.plan.any) ||
                      r->w.plan.relist_on_change || a->session_lost ||
                      a->revoked || rc != ZKL_OK || r->polled)) {
    for (i = 0; i < a->nwatch; i++) /* read it again, and wait on */
      if (a->wflags[i] & ZKL__W_CHANGED)
        a->wflags[i] |= ZKL__W_READ;
    r->next = step_read;
    return;
  }
  wait_end(a, rc);
}

/* Reads a's node on session s; under c->mu, dropped while the requests
 * are out. With `sync`, a sync goes first in the same round trip, so that
 * the read sees every write committed before the call, through any
 * server. *intact: whether its data is as we wrote it (zkl__data_intact).
 * Returns the read's ZooKeeper code. */
static int stat_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a,
                    int sync, struct Stat *out, int *intact) {
  zkl__call_t sy, st, *ptrs[2] = {&sy, &st};
  int left, rc;
  s->refs++;
  zkl__call_init(&sy, c, &a->cv);
  zkl__call_init(&st, c, &a->cv);
  if (sync)
    zkl__call_batch(ptrs, 2, &left);
  pthread_mutex_unlock(&c->mu);
  if (sync)
    zkl__sync(&sy, s, a->path);
  zkl__get(&st, s, a->path, 0);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs + !sync, sync ? 2 : 1);
  *out = st.stat;
  *intact = st.rc == ZOK && zkl__acq_data_intact(a, st.data, st.data_len);
  rc = st.rc;
  zkl__call_free(&st);
  zkl__call_free(&sy);
  zkl__session_put(c, s); /* a->sess or the caller keeps it alive */
  return rc;
}
/* A delete that landed vouches for the hold only with a read, just
 * before it, that found our node: without one (the read failed, or found
 * no node and someone created one at our name between the two) what we
 * deleted may not have been ours (model/, F1); and with its data as we
 * wrote it, or it was no hold (someone else's mark could have let others
 * in). Under c->mu; logs why not. */
static int vouched(zkl_client_t *c, const zkl__acq_t *a, zkl__session_t *s,
                   const zkl__call_t *st) {
  const char *why = NULL;
  if (!(st->rc == ZOK && zkl__owns_on(a, s, &st->stat)))
    why = st->rc == ZOK || st->rc == ZNONODE
              ? "deleted and re-created by someone else before unlock"
              : "deleted, but whose it was could not be read";
  else if (!zkl__acq_data_intact(a, st->data, st->data_len))
    why = "its data was rewritten by someone else before unlock";
  if (why)
    zkl__post_log(c, ZKL_LOG_WARN, "%s: %s", a->path, why);
  return !why;
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
/* Whether q's directory is this object's to delete, as far as it knows
 * (under c->mu): made by it, its node alone there at the last look, no
 * other library's node ever seen in it, and not kept for kazoo. */
static int dir_ours(const zkl__queue_t *q) {
  return q->dir_made && q->dir_alone && !q->dir_peer &&
         !(q->flags & ZKL__Q_KEEP_DIR);
}

static int remove_node(zkl_client_t *c, zkl__acq_t *a, int judge) {
  zkl__session_t *s = a->sess;
  zkl__queue_t *q = a->q;
  zkl__call_t st, del, pd, *ptrs[3] = {&st, &del, &pd};
  uint64_t epoch = c->conn_epoch;
  int rc, left, tidy;
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
    /* A release that leaves the parent this object made empty takes it
     * along (when it is ours to take: dir_ours), in the same transaction: per-key locks would otherwise leave
     * the server a parent per key to sweep, at a bounded rate. Only on an
     * object's first release: one taken again keeps its parent from then
     * on (deleted at close, tidy_dir) rather than make it anew each time. */
    tidy = judge && dir_ours(q) && !q->dir_kept;
    if (judge)
      q->dir_kept = 1;
    zkl__call_init(&st, c, &a->cv);
    zkl__call_init(&del, c, &a->cv);
    zkl__call_init(&pd, c, &a->cv);
    if (judge)
      zkl__call_batch(ptrs, tidy ? 3 : 2, &left);
    pthread_mutex_unlock(&c->mu);
    if (judge) /* with its data: rewritten by someone, it was no hold */
      zkl__get(&st, s, a->path, 0);
    if (tidy)
      zkl__delete_with_parent(&del, &pd, s, a->path, q->dir);
    else
      zkl__delete(&del, s, a->path);
    pthread_mutex_lock(&c->mu);
    if (judge)
      zkl__call_wait(ptrs, tidy ? 3 : 2);
    else
      zkl__call_wait(&ptrs[1], 1);
    if (tidy && pd.rc == ZOK) /* gone: the next join makes it again */
      q->dir_made = 0, q->dir_seen = 0, q->dir_alone = 0;
    rc = del.rc;
    if (rc == ZOK && judge && !vouched(c, a, s, &st))
      rc = ZNONODE;
    zkl__call_free(&st);
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
  a->marks |= ZKL__MARK_HELD; /* before our own watch can see it */
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
  zkl__went_del(c, &a->own_went);
  free(a->path);
  pthread_cond_destroy(&a->cv);
  free(a);
}

/* What a run leaves when it ends (it ends with nothing in flight). */
static void run_free(run_t *r) {
  zkl__call_free(&r->cr);
  zkl__call_free(&r->ls);
  zkl__call_free(&r->gd);
  zkl__call_free(&r->aux);
  zkl__call_free(&r->sy);
  waitset_free(&r->w);
  free(r->reads);
  free(r->mk);
  free(r->rec_path);
  free(r);
}

/* The run is over: a hold is granted, or the acquisition unwinds and a is
 * freed. Under c->mu. `wait`: the caller may wait for the delete of our
 * node (a blocking acquire); else it is left to the event thread. */
static int settle(zkl__acq_t *a, int wait) {
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  run_t *r = a->run;
  int rc = r->outcome, relay_due = q->limit && (r->waited || r->behind);
  int member = r->member;
  if (rc == ZKL_OK && r->abandoned)
    rc = ZKL_ECANCELED; /* granted as it was given up: nobody is told */
  if (member)
    a->waited = r->waited;
  a->run = NULL;
  a->wake = NULL;
  run_free(r);
  if (member && rc != ZKL_OK) {
    /* a multi-lock deletes its nodes itself, and waits for the deletes */
    zkl__acq_unlink(c, a);
    return rc;
  }
  if (rc == ZKL_OK) {
    zkl__set_state(c, a, c->state == ZKL_CLIENT_CONNECTED
                             ? ZKL_STATE_HELD
                             : ZKL_STATE_AT_RISK);
    zkl__schedule_node_watch(c, a);
    if (relay_due)
      relay(q, a);
    return ZKL_OK;
  }
  zkl__acq_unlink(c, a); /* no watcher may take our delete for a loss */
  if (wait)
    remove_node(c, a, 0);
  else
    zkl__queue_drop(a);
  acq_free(c, a);
  return rc;
}

static zkl__acq_t *run_new(zkl__queue_t *q, int mode, int shared,
                           int64_t deadline_ms, zkl__run_done_fn done,
                           void *ctx, int *rc) {
  zkl__acq_t *a = calloc(1, sizeof *a);
  run_t *r = calloc(1, sizeof *r);
  if (!a || !r || zkl__cond_init(&a->cv) != ZKL_OK) {
    *rc = a && r ? ZKL_ESYSTEM : ZKL_ENOMEM;
    free(a);
    free(r);
    return NULL;
  }
  a->q = q;
  a->shared = shared;
  a->run = r;
  a->wake = kick;
  r->q = q;
  r->mode = mode;
  r->deadline = mode == ZKL__TIMED ? deadline_ms : -1;
  r->first = 1;
  r->next = step_top;
  r->gen = q->cancel_gen;
  r->done_fn = done;
  r->done_ctx = ctx;
  return a;
}

int zkl__queue_start(zkl__queue_t *q, int mode, int shared,
                     int64_t deadline_ms, zkl__run_done_fn done, void *ctx,
                     zkl__acq_t **out) {
  int rc = ZKL_OK;
  zkl__acq_t *a = run_new(q, mode, shared, deadline_ms, done, ctx, &rc);
  if (!a)
    return rc;
  zkl__acq_link(q->c, a);
  *out = a;
  advance(a);
  return ZKL_OK;
}

int zkl__queue_start_member(zkl__queue_t *q, int mode, int shared,
                            int64_t deadline_ms, zkl__session_t *s,
                            const char *path, int64_t czxid,
                            zkl__call_t *ls, zkl__run_done_fn done,
                            void *ctx, zkl__acq_t **out) {
  int rc = ZKL_OK;
  zkl__acq_t *a = run_new(q, mode, shared, deadline_ms, done, ctx, &rc);
  char *p = zkl__strdup(path);
  struct Stat st;
  if (!a || !p) {
    if (a) {
      pthread_cond_destroy(&a->cv);
      free(a->run);
      free(a);
    }
    free(p);
    return a ? ZKL_ENOMEM : rc;
  }
  a->run->member = 1;
  zkl__acq_link(q->c, a);
  memset(&st, 0, sizeof st);
  st.czxid = czxid;
  s->refs++;
  a->run->s = s;
  adopt(a, p, &st);
  q->dir_seen = 1;
  a->run->epoch = q->c->conn_epoch;
  a->run->first = 0; /* as after a join: the look below is the first */
  a->run->ls = *ls;  /* the listing sent behind the transaction */
  memset(ls, 0, sizeof *ls);
  joined(a);
  *out = a;
  advance(a);
  return ZKL_OK;
}

void zkl__queue_abandon(zkl__acq_t *a) {
  if (!a->run)
    return;
  a->run->abandoned = 1;
  kick(a);
}

void zkl__queue_discard(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  zkl__acq_unlink(c, a);
  zkl__queue_drop(a);
  zkl__set_state(c, a, ZKL_STATE_NONE);
  acq_free(c, a);
}

void zkl__queue_drop(zkl__acq_t *a) {
  zkl_client_t *c = a->q->c;
  if (a->path && a->sess && !a->sess->expired)
    zkl__defer_delete_now(c, a->sess, a->path);
  zkl__went_del(c, &a->own_went);
  free(a->path);
  a->path = NULL;
}

void zkl__runs_settle(zkl_client_t *c) {
  while (c->ended) {
    zkl__acq_t *a = c->ended;
    zkl__run_done_fn fn = a->run->done_fn;
    void *ctx = a->run->done_ctx;
    int rc, member = a->run->member;
    c->ended = a->run->ended_next;
    rc = settle(a, 0);
    fn(rc == ZKL_OK || member ? a : NULL, rc, ctx);
  }
}

int64_t zkl__runs_timers(zkl_client_t *c) {
  int64_t now = zkl_now_ms();
  zkl__acq_t *a, *next;
  if (!c->timer_due || now < c->timer_due)
    return c->timer_due;
  c->timer_due = 0;
  for (a = c->acqs; a; a = next) {
    run_t *r = a->run;
    next = a->next; /* a kick ends a run on c->ended, never unlinked here */
    if (!r || !r->done_fn || !r->parked || r->wake_at < 0)
      continue;
    if (r->wake_at <= now)
      kick(a);
    else if (!c->timer_due || r->wake_at < c->timer_due)
      c->timer_due = r->wake_at;
  }
  return c->timer_due;
}

/* A run its caller stopped waiting for has ended (event thread). */
static void detached_done(zkl__acq_t *hold, int rc, void *ctx) {
  zkl__queue_t *q = ctx;
  (void)hold, (void)rc; /* never a hold: settle() unwound it */
  q->async_refs--;
  pthread_cond_broadcast(&q->c->cv);
}

/* Starts the run, then waits for its end: the blocking face of the
 * machine. A parked step is looked at again when its time comes. Once
 * the acquire must end (deadline, cancel) while an answer is still on its
 * way, the caller waits for it a moment (ZKL__GIVE_UP_MS): on a working
 * link it comes in a round trip, and the caller returns with its node
 * deleted, as a peer's acquire does. On a link slow or silently dead,
 * which the C client may take its receive timeout to give up on, the
 * caller returns then and leaves the run to end in the background,
 * abandoned. The first look is the exception, as everywhere: a lock free
 * now is taken whatever the deadline. */
int zkl__queue_acquire(zkl__queue_t *q, int mode, int shared,
                       int64_t deadline_ms, zkl__acq_t **out) {
  zkl_client_t *c = q->c;
  zkl__acq_t *a = NULL;
  run_t *r;
  int64_t give_up = -1;
  int rc;
  pthread_mutex_lock(&c->mu);
  rc = zkl__queue_start(q, mode, shared, deadline_ms, NULL, NULL, &a);
  while (rc == ZKL_OK && !(r = a->run)->done) {
    int64_t wake = r->parked ? r->wake_at : r->first ? -1 : r->deadline;
    struct timespec ts;
    if (r->inflight && stopped(r) != ZKL_OK) {
      if (give_up < 0)
        give_up = zkl_now_ms() + ZKL__GIVE_UP_MS;
      if (zkl_now_ms() >= give_up) {
        rc = stopped(r);
        r->abandoned = 1;
        r->done_fn = detached_done;
        r->done_ctx = q;
        q->async_refs++;
        break;
      }
      wake = give_up;
    }
    if (wake >= 0 && zkl_now_ms() >= wake && r->parked) {
      kick(a);
    } else if (wake < 0) {
      pthread_cond_wait(&a->cv, &c->mu);
    } else {
      zkl__deadline_ts(wake, &ts);
      pthread_cond_timedwait(&a->cv, &c->mu, &ts);
    }
  }
  if (rc == ZKL_OK && (rc = settle(a, 1)) == ZKL_OK)
    *out = a;
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
    rc = zkl__lost_rc(a);
  } else {
    int zrc = remove_node(c, a, judge);
    /* ZNONODE: someone deleted our node while we held it. */
    if (zrc == ZNONODE || is_session_error(zrc))
      rc = zkl__lost_rc(a);
  }
  atomic_store(&a->state, ZKL_STATE_NONE);
  zkl__post_state(c, a, ZKL_STATE_NONE);
  acq_free(c, a);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* A downgrade's verdict from its write's code rc (under c->mu): the
 * hold is lost, or read from now on (also when the write did not land:
 * the node then keeps its data, exclusive, which is more than a reader
 * needs, until the hold ends). */
static int downgraded(zkl_client_t *c, zkl__acq_t *a, int rc, int rewritten) {
  if (rewritten) {
    zkl__lose_rewritten(c, a);
    return ZKL_ELOST;
  }
  if (rc == ZNONODE || is_session_error(rc) || rc == ZKL_ELOST) {
    zkl__lose(c, a, rc == ZNONODE ? "deleted or replaced by someone else"
                                  : "session expired");
    return ZKL_ELOST;
  }
  if (rc != ZOK)
    zkl__post_log(c, ZKL_LOG_WARN,
                  "%s: downgrade not written (%s): readers wait for the "
                  "release",
                  a->path, zkl_err_name(rc));
  a->shared = 1;
  return ZKL_OK;
}

/* How many times a downgrade retries its conditional write when the data
 * version has moved (another client rewrote our node's data). */
#define DOWNGRADE_TRIES 3

int zkl__queue_downgrade(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  char *nd;
  size_t len = 0;
  int rc, version = 0, tries, rewritten = 0;
  if ((rc = marked_data(q, "mode=read", &nd, &len)) != ZKL_OK)
    return rc;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  rc = ZKL_ELOST;
  a->marks |= ZKL__MARK_READ; /* before our own watch can see it */
  for (tries = 0; s && !s->expired && a->path && tries < DOWNGRADE_TRIES &&
                  atomic_load(&a->state) != ZKL_STATE_LOST;
       tries++) {
    zkl__call_t set, *ptrs[1] = {&set};
    struct Stat st;
    int intact;
    s->refs++;
    zkl__call_init(&set, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__set(&set, s, a->path, nd, (int)len, version);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = set.rc;
    if (rc == ZOK)
      a->dversion = set.stat.version;
    if (rc == ZBADVERSION) {
      /* Someone else wrote to our node: write again over it, if it is
       * still ours (creation zxid and owner) and what they wrote was a
       * revoker's request, at the version it has. */
      rc = stat_own(c, s, a, 0, &st, &intact);
      if (rc == ZOK && !zkl__owns(a, &st))
        rc = ZNONODE;
      if (rc == ZOK && !intact)
        rewritten = 1, rc = ZKL_ELOST;
      version = st.version;
      if (rc == ZOK) {
        zkl__session_put(c, s);
        continue;
      }
    }
    zkl__session_put(c, s);
    break;
  }
  rc = downgraded(c, a, rc, rewritten);
  pthread_mutex_unlock(&c->mu);
  free(nd);
  return rc;
}

int zkl__queue_verify(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  struct Stat st;
  int rc, intact;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  if (atomic_load(&a->state) == ZKL_STATE_LOST || !s || !a->path ||
      s->expired) {
    zkl__lose(c, a, "session expired");
    pthread_mutex_unlock(&c->mu);
    return zkl__lost_rc(a);
  }
  s->refs++; /* past stat_own: a loss meanwhile drops a->sess's */
  rc = stat_own(c, s, a, 1, &st, &intact);
  if (rc == ZOK && a->sess == s && zkl__owns(a, &st) && intact) {
    a->dversion = st.version;
    rc = ZKL_OK;
  } else if (rc == ZOK && a->sess == s && zkl__owns(a, &st)) {
    zkl__lose_rewritten(c, a);
    rc = zkl__lost_rc(a);
  } else if (rc == ZOK || rc == ZNONODE || is_session_error(rc) ||
             a->sess != s) {
    zkl__lose(c, a, rc == ZOK ? "replaced by someone else's node"
                    : rc == ZNONODE ? "deleted by someone else"
                                    : "session expired");
    rc = zkl__lost_rc(a);
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

/* The directory's read, then delete, which nobody waits for. */
typedef struct {
  zkl__call_t call;
  zkl__session_t *s;
  char *path;
  int64_t czxid; /* the incarnation we made */
} dir_delete_t;

static void on_dir_done(zkl__call_t *call) {
  dir_delete_t *d = call->ctx;
  zkl_client_t *c = call->c;
  zkl__call_free(call);
  zkl__session_put(c, d->s);
  free(d->path);
  free(d);
  pthread_cond_broadcast(&c->cv);
}

/* Deleted only if it is still the one we made, and empty: a directory
 * someone deleted and made again since our last look is theirs. */
static void on_dir_read(zkl__call_t *call) {
  dir_delete_t *d = call->ctx;
  if (call->rc != ZOK || call->stat.czxid != d->czxid ||
      call->stat.numChildren != 0) {
    on_dir_done(call);
    return;
  }
  zkl__call_init_fn(call, call->c, on_dir_done, d);
  if (zkl__delete(call, d->s, d->path) != ZOK)
    on_dir_done(call);
}

/* Deletes the queue's directory when it is this object's (dir_ours): gone
 * with its last user instead of at the server's next sweep. A newcomer leaves it be (or makes the delete fail,
 * ZNOTEMPTY), and a node created just after it finds no directory and
 * makes it again, as after a sweep. Under c->mu. */
static void tidy_dir(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  dir_delete_t *d;
  if (!dir_ours(q) || !c->sess || c->sess->expired ||
      c->state != ZKL_CLIENT_CONNECTED || c->stopping)
    return;
  if (!(d = calloc(1, sizeof *d)) || !(d->path = zkl__strdup(q->dir))) {
    free(d);
    return; /* the server's sweep takes it */
  }
  d->czxid = q->dir_made;
  d->s = zkl__session_get(c);
  zkl__call_init_fn(&d->call, c, on_dir_read, d);
  if (zkl__exists(&d->call, d->s, d->path) != ZOK)
    on_dir_done(&d->call);
}

void zkl__queue_close(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  pthread_mutex_lock(&c->mu);
  while (q->async_refs > 0) /* cancelled runs still answering */
    pthread_cond_wait(&c->cv, &c->mu);
  zkl__wait_cb_refs(c, q);
  tidy_dir(q);
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
    if (a->q == q) {
      kick(a);
      pthread_cond_broadcast(&a->cv); /* a caller waiting on an answer */
    }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}
