/* acquire.c: the path every acquisition takes.
 *
 * A contender creates an ephemeral sequential node <dir>/<guid><marker><seq>
 * and sends getChildren(<dir>) right behind it without waiting: the session
 * runs its requests in order, so one round trip both creates our node and
 * lists a queue that contains it. policy.c reads the listing: who holds, and
 * whom a waiter watches (its nearest conflict, or every reader before a
 * writer, up to ZKL__WATCH_MAX; getData, so a node already gone leaves no
 * watch behind). The run parks until a watched node goes. When the plan
 * proves that nothing lower can have appeared, we hold without listing
 * again (the zero-read hand-off); otherwise we list again. The wait
 * itself is wait.c's.
 *
 * Every path that gives up deletes our node: at once, or through the
 * client's deferred deletes when the connection is down, or by the session
 * ending. No orphan may block the queue. The trouble paths (parents,
 * a lost create reply, the directory's data) are in recover.c. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How many times in a row a missing parent may make us retry: a container
 * parent can be reaped between our mkdir and our create, but not forever. */
#define NONODE_RETRIES 8

static void after_look(zkl__acq_t *a, int rc);
static void waited(zkl__acq_t *a, int rc);
static void join_failed(zkl__acq_t *a, int rc);
static void step_join(zkl__acq_t *a);
static void step_list_start(zkl__acq_t *a);
static void step_list_first(zkl__acq_t *a);
static void step_position(zkl__acq_t *a);
static void step_joined(zkl__acq_t *a);
static void agreed(zkl__acq_t *a, int rc);
static void join_reconnected(zkl__acq_t *a, int rc);
static void step_list(zkl__acq_t *a);
static void step_listed(zkl__acq_t *a);
static void step_own_read(zkl__acq_t *a);
static void confirm(zkl__acq_t *a, int fresh);

/* ---- a look at the queue: the top of every pass ------------------------- */

/* What a look at the queue came to (a position, an owner's confirmation,
 * a wait): hold, look again, join again, wait, or end. */
static void after_look(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  if (rc == ZKL__HOLD) {
    zkl__finish(a, ZKL_OK);
    return;
  }
  r->first = r->handoff = 0; /* a hand-off undone: the next grant is not */
  if (rc == ZKL__RELIST) {
    r->next = zkl__step_top;
  } else if (rc == ZKL__RETRY) {
    zkl__drop_node(a->q->c, a);
    r->next = zkl__step_top;
  } else if (rc != ZKL_OK) {
    zkl__end_run(a, rc);
  } else if (r->mode == ZKL__TRY) {
    r->back = after_look;
    zkl__try_last(a);
  } else {
    r->back = waited;
    r->next = zkl__step_wait;
  }
}

/* A lock free now is taken whatever the deadline (as with
 * pthread_mutex_timedlock): the deadline is not checked until our first
 * look at the queue, which normally comes with the create, or after making
 * the queue's missing parents on first use. Waits for the network still
 * honour it, and so does every request that only trouble makes necessary,
 * so that a slow or broken link makes us overrun the deadline by at most
 * the round trip under way (and the delete of our node), not by one round
 * trip per recovery step. */
void zkl__step_top(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = zkl__stopped(r);
  if (rc != ZKL_OK) {
    zkl__finish(a, rc);
    return;
  }
  if (a->session_lost || (a->path && !a->sess))
    zkl__drop_node(c, a);
  if (a->q->flags & ZKL__Q_FLAT) {
    zkl__flat_top(a); /* no queue: one node, whoever makes it holds */
    return;
  }
  if (!a->path && r->member) {
    /* A new node of ours would be younger than the multi-lock's other
     * nodes, and a wait on it could close a cycle: all or none again. */
    zkl__finish(a, ZKL__AGAIN);
    return;
  }
  r->epoch = c->conn_epoch;
  r->have_list = r->fresh = 0;
  r->next = a->path ? step_list_start : step_join;
}

/* ---- joining: create + getChildren in one round trip --------------------- */

/* How a join ended, when it did not end with our node: ZKL__REJOIN (parents
 * made) keeps the first look lenient; ZKL__RETRY joins again. */
static void join_failed(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  if (rc == ZKL__REJOIN) {
    r->next = zkl__step_top;
    return;
  }
  r->first = 0;
  if (rc == ZKL__RETRY)
    r->next = zkl__step_top;
  else if (rc == ZKL_OK)
    zkl__joined(a);
  else
    zkl__finish(a, rc);
}

/* Sends our node's create (named full, with data), and with it what the
 * directory needs: made, read, listed. */
static void send_join(zkl__acq_t *a, const char *full, const char *data,
                      size_t len) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  /* the directory is read once per incarnation: a listing tells which */
  int read_dir = q->dir_data && !q->dir_czxid, rc;
  /* A directory this object has not seen goes in our node's transaction
   * (lean): per-key locks are mostly taken on keys never used before. A
   * plain node, deleted by whoever empties it: a release, or a close that
   * reads its mark, this object's too (dir_lone, F12). A container cannot
   * go in one (batch.c), and alone costs a transaction per key.
   * A semaphore's (its data says N) and kazoo's go first, alone, in the
   * same round trip. Made, there already, not ours: the create tells. */
  int lean = !q->dir_seen && !q->dir_data && !(q->flags & ZKL__Q_KEEP_DIR);
  r->lean = lean;
  r->s = zkl__session_get(q->c);
  zkl__prep(a, &r->gd);
  zkl__prep(a, &r->cr);
  zkl__prep(a, &r->ls);
  zkl__prep(a, &r->aux);
  if (!q->dir_seen && !lean)
    zkl__sent(a, &r->aux,
              zkl__create_dir(&r->aux, r->s, q->dir, q->dir_data,
                              q->dir_data ? (int)strlen(q->dir_data) : -1,
                              (q->flags & ZKL__Q_KEEP_DIR) != 0));
  if (read_dir) /* first: what the directory says binds a node made after */
    zkl__sent(a, &r->gd, zkl__get(&r->gd, r->s, q->dir, 0));
  else /* not read: should the listing be lost, agree() reads it then, and
        * never takes this unsent call for a directory with no data (F5) */
    r->gd.rc = ZCONNECTIONLOSS;
  rc = lean ? zkl__create_with_dir(&r->cr, &r->aux, r->s, full, data,
                                   (int)len, ZOO_EPHEMERAL_SEQUENTIAL, q->dir)
            : zkl__create(&r->cr, r->s, full, data, (int)len,
                          ZOO_EPHEMERAL_SEQUENTIAL);
  if (lean) /* read at close, even if no listing comes (F12) */
    zkl__sent(a, &r->aux, rc), q->dir_lone = 1;
  zkl__sent(a, &r->cr, rc);
  /* In a directory made in this very round trip our node is most likely
   * its first, which needs no listing (first_born); otherwise we list
   * once the create has answered, one round trip later. */
  r->unlisted = !q->dir_seen && !q->dir_data;
  if (!r->unlisted)
    zkl__sent(a, &r->ls, zkl__children_after(&r->ls, r->s, q->dir, &r->cr));
  else
    r->ls.rc = ZCONNECTIONLOSS; /* not listed: zkl__joined lists */
}

static void step_join(zkl__acq_t *a) {
  zkl__queue_t *q = a->q;
  char *path, *full, *data = NULL;
  size_t len = 0;
  int rc;
  if ((rc = zkl__guid(a->guid)) != ZKL_OK) {
    zkl__finish(a, rc);
    return;
  }
  path = zkl__concat(q->prefix, a->guid);
  full =
      path ? zkl__concat(path, a->shared ? q->marker_shared : q->marker) : NULL;
  free(path);
  if (!full || (rc = zkl__node_data(q->id, q->user_data, q->user_len, &data,
                                    &len)) != ZKL_OK) {
    free(full);
    zkl__finish(a, full ? rc : ZKL_ENOMEM);
    return;
  }
  send_join(a, full, data, len);
  free(full);
  free(data);
  a->run->next = step_joined;
}

/* Whether our node is the first ever made in its directory's incarnation:
 * a sequence number is the directory's count of child creates and
 * deletes (cversion) when ours was made, so 0 means nobody came before
 * us, and nobody who comes later can be before us. We hold without a
 * listing. model/zklock.pml (LEAN0) checks this rule. */
static int first_born(const zkl__acq_t *a) {
  const char *base = strrchr(a->path, '/');
  int32_t seq;
  int kind;
  return base && zkl__name_parse(base + 1, &seq, &kind) && seq == 0;
}

static void step_joined(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  int rc = r->cr.rc;
  int made = r->aux.done && r->aux.rc == ZOK;
  if (made) /* the directory, made first */
    q->dir_made = r->aux.stat.czxid, r->made_dir = 1, q->dir_lean = r->lean;
  zkl__call_free(&r->aux);
  if (rc == ZOK) {
    q->dir_seen = 1;
    zkl__adopt(a, r->cr.path, &r->cr.stat);
    r->cr.path = NULL;
    r->nonode = 0;
    /* r->first stays until our first look at the queue has come to
     * something (after_look()): the listing a lean join leaves for later,
     * and the read of our own node that may confirm a hold, are part of
     * it (zklock.h, TIME) */
    if (r->unlisted && first_born(a)) {
      /* alone in it: ours to take along at release if we made it */
      q->dir_alone = r->made_dir;
      confirm(a, 1); /* the create's answer is as fresh as a listing */
      return;
    }
    zkl__joined(a);
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
    rc = ++r->nonode > NONODE_RETRIES        ? ZNONODE
         : !(r->mk = zkl__strdup(a->q->dir)) ? ZKL_ENOMEM
                                             : ZOK;
    if (rc != ZOK) {
      zkl__session_put(c, r->s);
      r->s = NULL;
      join_failed(a, rc);
      return;
    }
    r->back = join_failed;
    r->next = zkl__step_mkdir;
  } else if (zkl__is_conn_error(rc) || rc == ZKL_ENOMEM) {
    r->back = join_failed;
    zkl__recover(a, rc == ZKL_ENOMEM ? 0 : r->epoch);
  } else if (zkl__is_session_error(rc)) {
    zkl__await_conn(a, r->s, r->epoch, join_reconnected);
  } else {
    zkl__session_put(c, r->s);
    r->s = NULL;
    join_failed(a, rc);
  }
}

static void join_reconnected(zkl__acq_t *a, int rc) {
  zkl__session_put(a->q->c, a->run->s);
  a->run->s = NULL;
  join_failed(a, rc == ZKL_OK ? ZKL__RETRY : rc);
}

/* Joined: our node is known, and r->ls may hold the listing that came
 * with it. */
void zkl__joined(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
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
       * rewritten since; with no listing to tell, read it again (a member
       * judges the directory as it was once its node was made) */
      if (r->gd.rc == ZOK &&
          (!r->have_list || r->gd.stat.czxid != r->ls.stat.czxid ||
           r->gd.stat.version != r->ls.stat.version))
        r->gd.rc = ZCONNECTIONLOSS;
      r->tries = 0;
      r->back = agreed;
      r->next = zkl__step_agree;
      return;
    }
  }
  agreed(a, ZKL_OK);
}

/* Where the directory's agreement (recover.c) hands back; also the end of
 * a join that needed none. */
static void agreed(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl__call_free(&r->gd);
  if (rc != ZKL_OK || !r->have_list)
    zkl__call_free(&r->ls);
  if (rc == ZKL__RETRY) {
    zkl__drop_node(a->q->c, a);
    r->next = zkl__step_top;
  } else if (rc != ZKL_OK) {
    zkl__end_run(a, rc);
  } else {
    r->next = r->have_list ? step_position
              : r->first     ? step_list_first
                             : step_list_start;
  }
}

/* ---- listing the queue --------------------------------------------------- */

static void step_list_start(zkl__acq_t *a) {
  a->run->first = 0;
  step_list_first(a);
}

/* The listing a lean join left to make (step_joined): the deadline does
 * not stop it, as it would not have stopped the listing sent with the
 * create (zkl__step_top). */
static void step_list_first(zkl__acq_t *a) {
  a->run->epoch = a->q->c->conn_epoch;
  a->run->next = step_list;
}

static void list_result(zkl__acq_t *a, int rc) {
  if (rc == ZKL__RETRY) {
    zkl__drop_node(a->q->c, a);
    a->run->next = zkl__step_top;
  } else {
    zkl__end_run(a, rc);
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
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int rc;
  if (!s || a->session_lost) {
    list_result(a, ZKL__RETRY);
    return;
  }
  /* strict unless this is our first look (step_list_first) */
  if ((rc = zkl__stopped(r)) != ZKL_OK) {
    list_result(a, rc);
    return;
  }
  /* Sent while disconnected, a request would wait in the C client for the
   * reconnection or its failure, past our deadline: wait here instead,
   * as trouble (the deadline holds). */
  if (c->state != ZKL_CLIENT_CONNECTED) {
    r->first = 0;
    zkl__await_conn(a, s, c->conn_epoch, list_reconnected);
    return;
  }
  r->rs = s;
  s->refs++;
  r->repoch = c->conn_epoch;
  zkl__prep(a, &r->ls);
  zkl__sent(a, &r->ls, zkl__children(&r->ls, s, a->q->dir));
  r->next = step_listed;
}

static void step_listed(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__session_t *s = r->rs;
  int rc = r->ls.rc;
  zkl__session_put(a->q->c, s);
  r->rs = NULL;
  if (rc == ZOK) {
    /* our first look goes on to its end (a hold, or after_look()): the
     * read of our own node that may confirm a hold is part of it */
    r->have_list = 1;
    r->next = step_position;
    return;
  }
  r->first = 0; /* trouble: the deadline holds from here on */
  zkl__call_free(&r->ls);
  if (zkl__is_conn_error(rc))
    zkl__await_conn(a, s, r->repoch, list_reconnected);
  else if (zkl__is_session_error(rc))
    list_result(a, ZKL__RETRY);
  else if (rc == ZNONODE) /* the parent cannot go while our node is in it */
    list_result(a, zkl__gone(a)); /* someone deleted both */
  else
    list_result(a, rc);
}

/* ---- our place in the queue ---------------------------------------------- */

/* Finds our place in a listing, from our own node's point of view (see
 * policy.c: a lease before ours that carries another N is in our way as a
 * lock is). Returns ZKL__HOLD, ZKL_EREVOKED or ZKL__RETRY (our node is
 * not there), or ZKL_OK with *w: the nodes to watch, and whether their
 * deletion alone will prove we hold. */
static int position(zkl__acq_t *a, const zkl__call_t *ls, zkl__waitset_t *w) {
  zkl__run_t *r = a->run;
  const char *me = strrchr(a->path, '/') + 1;
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
      skip[i] = zkl__ignored(a->q, e[i].name);
  }
  if (idx < 0) {
    rc = zkl__gone(a);
  } else {
    zkl__decide(e, n, idx, skip, a->q->limit, &w->plan);
    if (!w->plan.before)
      rc = ZKL__HOLD;
    r->behind = zkl__any_after(e, n, idx, skip);
    for (i = 0; i < w->plan.nwatch; i++)
      if (!(w->paths[i] = zkl__concat(a->q->prefix, e[w->plan.watch[i]].name)))
        rc = ZKL_ENOMEM;
    if (rc != ZKL_OK)
      zkl__waitset_free(w);
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
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  int rc;
  r->w.plan.nwatch = 0;
  rc = position(a, &r->ls, &r->w);
  q->dir_alone =
      r->ls.kids.count == 1 && q->dir_made && r->ls.stat.czxid == q->dir_made;
  q->dir_lone |= r->ls.stat.ephemeralOwner == 0 &&
                 r->ls.stat.dataLength == (int)strlen(ZKL__DIR_MARK);
  if (!q->dir_peer && !(q->flags & ZKL__Q_KEEP_DIR))
    q->dir_peer = peer_listed(q, &r->ls);
  zkl__call_free(&r->ls);
  if (rc == ZKL__HOLD)
    confirm(a, r->fresh);
  else
    after_look(a, rc);
}

/* ---- whose node it is ---------------------------------------------------- */

static void own_reconnected(zkl__acq_t *a, int rc) {
  after_look(a, rc == ZKL_OK ? ZKL__RELIST : rc);
}

/* Reads our own node on our session, and lets the answer decide: still
 * ours (our czxid, owned by the session we are on now) gives `if_mine`;
 * gone or someone else's, zkl__gone(). A session that has ended cannot
 * answer at all, which is what makes the read worth its round trip. */
static void read_own(zkl__acq_t *a, int if_mine) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int rc;
  if (!s || s != c->sess || s->expired || a->session_lost || !a->path) {
    after_look(a, ZKL__RETRY);
    return;
  }
  if ((rc = zkl__stopped(r)) != ZKL_OK) {
    after_look(a, rc);
    return;
  }
  r->if_mine = if_mine;
  r->rs = s;
  s->refs++;
  r->repoch = c->conn_epoch;
  zkl__prep(a, &r->aux);
  zkl__sent(a, &r->aux, zkl__exists(&r->aux, s, a->path));
  r->next = step_own_read;
}

static void step_own_read(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
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
    zkl__await_conn(a, s, r->repoch, own_reconnected);
  } else if (rc == ZOK || rc == ZNONODE) {
    if (a->tainted) /* zkl__gone() says why */
      a->revoked = 1;
    after_look(a, zkl__gone(a));
  } else {
    after_look(a, zkl__is_session_error(rc) ? ZKL__RETRY : rc);
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
    after_look(a, ZKL__HOLD);
  else
    read_own(a, ZKL__HOLD);
}

/* How a wait (wait.c) ended. A hand-off holds once our own node is
 * confirmed. A watch that said our waiting node was deleted, or is
 * someone else's, is asked again: the end of our own session deletes it
 * too, and our watch may hear of that before we hear of the end (a
 * session closed by the server, or by another handle). Ours after all:
 * look again. */
static void waited(zkl__acq_t *a, int rc) {
  if (rc == ZKL__HOLD)
    confirm(a, 0);
  else if (rc == ZKL__REVOKED)
    read_own(a, ZKL__RELIST);
  else
    after_look(a, rc);
}
