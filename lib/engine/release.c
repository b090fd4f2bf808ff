/* SPDX-License-Identifier: Apache-2.0 */
/* release.c: the end of a hold: the delete of our node, and the verdict.
 *
 * A release is a run of its own, and never waits: it sends the delete
 * (with, for a final unlock, the read that vouches for the node, and the
 * queue's directory when the node was alone in one this object made), and
 * the last answer moves it on. When the delete could not reach the server,
 * the session's fate is the verdict (zkl__session_verdict): a blocking
 * release (zkl__queue_release, zkl__remove_node) waits for that on its own
 * thread, which may be the event thread; an async one (zkl__release_start)
 * is put on c->rels, where the event thread judges it (zkl__releases_judge).
 * Everything here runs under c->mu. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

/* Whether q's directory is this object's to delete, as far as it knows
 * (under c->mu): made by it, its node alone there at the last look, no
 * other library's node ever seen in it, and not kept for kazoo. */
static int dir_ours(const zkl__queue_t *q) {
  return q->dir_made && q->dir_alone && !q->dir_peer &&
         !(q->flags & ZKL__Q_KEEP_DIR);
}

/* ---- the guard ------------------------------------------------------------ */

/* How a's node proves, inside the transaction of its delete, that it is
 * still the one we made, with no read (model/README.md, "The release's
 * guard"). ZooKeeper checks a guard against the node's data version and
 * ACL, never its czxid or owner, so it holds only for a node whose
 * version and rights no other node at that name has:
 * - a flat lock's node (ZKL_MUTEX_FLAT) is made at version 1 (its data
 *   written by a setData in the create's transaction, batch.c) with our
 *   own ACL, every right to our identity alone (digest.c): the guard is
 *   a setData at the version we know, which a node any other client made
 *   there fails (ZNOAUTH: another zklock client's, at version 1 too, made
 *   with its own identity; ZBADVERSION: a plain create's, at 0);
 * - a queue's node at a version above 0 (the first node of a parent made
 *   in the same transaction, or one we wrote a mark on): a check at that
 *   version, which a node made again at our name with a plain create,
 *   at 0, fails. Anyone may write a queue's node (a revoker must), so a
 *   check is all a guard can be there. A mark we write at version 0 may
 *   land on a node made again at our name, and leave it at the version
 *   we check: the mark's answer, which comes before the delete's, says
 *   whose node it landed on (marks.c), and the verdict goes by it;
 * - any other queue node has nothing a plain create does not have: it
 *   keeps the read (ZKL__GUARD_NONE).
 * node.c's zkl__node_guard says which.
 * What no guard can tell: a node made again at our name by someone who
 * also gives it our version and rights (a deliberate mimic), before any
 * watch of ours has told us our node went. */

/* ---- the delete and its verdict ------------------------------------------ */

/* The node is dealt with (zrc: the delete's ZooKeeper code, or the
 * session's verdict): the session the node was on is let go, and the
 * release goes on. */
static void removed(zkl__rel_t *rel, int zrc) {
  zkl__session_put(rel->c, rel->s);
  rel->s = NULL;
  rel->then(rel, zrc);
}

/* Asks the session's fate; 1 when it is known (rel has gone on). */
static int judge(zkl__rel_t *rel) {
  int zrc = zkl__session_verdict(rel->c, rel->s, rel->epoch, rel->end,
                                 &rel->due);
  if (zrc == ZKL__VERDICT_LATER)
    return 0;
  rel->pending = 0;
  removed(rel, zrc);
  return 1;
}

static void send_read_first(zkl__rel_t *rel);

/* How many times a guard that found another version asks the read again:
 * a revoker writes once, and each try sees its write */
#define READ_TRIES 3

/* A guard's refusal (the delete then failed with it): the node was ours
 * to the end only if it is there with its data as we wrote it, give or
 * take a revoker's request; a guard that found another version asks the
 * read, which knows (READ_TRIES times). Under c->mu; 1 when the delete
 * goes again. */
static int guard_refused(zkl__rel_t *rel, int *zrc) {
  zkl_client_t *c = rel->c;
  zkl__acq_t *a = rel->a;
  if (*zrc == ZBADVERSION && rel->read < READ_TRIES) {
    rel->read++;
    rel->guarded = 0;
    zkl__call_free(&rel->st);
    zkl__call_free(&rel->del);
    zkl__call_free(&rel->pd);
    send_read_first(rel);
    return 1;
  }
  if (*zrc == ZBADVERSION) /* ours, written to at every try: later */
    zkl__defer_delete(c, rel->s, a->path, a->czxid);
  if (*zrc == ZNOAUTH || *zrc == ZBADVERSION) {
    zkl__post_log(c, ZKL_LOG_WARN, "%s: %s before unlock: LOST", a->path,
                  *zrc == ZNOAUTH
                      ? "deleted and made again by another client"
                      : "deleted and made again, or rewritten, by someone else");
    *zrc = ZNONODE;
  }
  return 0;
}

/* Every answer is in. A release must not report a hold as kept when it
 * cannot know: a delete that did not reach the server is left to
 * deferred.c, and a final unlock's verdict is then the session's. */
static void answered(zkl__rel_t *rel) {
  zkl_client_t *c = rel->c;
  zkl__acq_t *a = rel->a;
  zkl__queue_t *q = a->q;
  int zrc = rel->del.rc;
  if (rel->guarded && zrc != ZOK && !zkl__is_conn_error(zrc) &&
      guard_refused(rel, &zrc))
    return;
  if (rel->tidy && rel->pd.rc == ZOK) /* gone: the next join makes it again */
    q->dir_made = 0, q->dir_seen = 0, q->dir_alone = 0, q->dir_lone = 0;
  if (zrc == ZOK && rel->judge && a->relay_foreign) {
    /* the relay's answer came first: its write, and so our guard, met a
     * node someone made again at our name */
    zkl__post_log(c, ZKL_LOG_WARN,
                  "%s: deleted and made again by someone else before unlock",
                  a->path);
    zrc = ZNONODE;
  }
  if (zrc == ZOK && rel->judge && !rel->guarded &&
      !vouched(c, a, rel->s, &rel->st))
    zrc = ZNONODE;
  if (zrc == ZOK && rel->judge && rel->guarded && !rel->intact) {
    zkl__post_log(c, ZKL_LOG_WARN,
                  "%s: its data was rewritten by someone else before unlock",
                  a->path);
    zrc = ZNONODE;
  }
  zkl__call_free(&rel->st);
  if (!zkl__is_conn_error(zrc)) {
    removed(rel, zrc);
    return;
  }
  zkl__defer_delete(c, rel->s, a->path, a->czxid);
  if (!rel->judge) {
    removed(rel, zrc);
    return;
  }
  rel->pending = 1;
  rel->end = zkl__verdict_end(c);
  if (judge(rel))
    return;
  if (rel->cv) {
    pthread_cond_broadcast(rel->cv); /* its waiter judges it from now on */
  } else {
    rel->next = c->rels;
    c->rels = rel;
    pthread_cond_broadcast(&c->cv); /* the event thread: a new timer */
  }
}

static void on_answer(zkl__call_t *call) {
  zkl__rel_t *rel = call->ctx;
  if (--rel->left == 0)
    answered(rel);
}

/* A request the C client refused: answered at once with its code. */
static void refused(zkl__rel_t *rel, zkl__call_t *call, int rc) {
  if (rc != ZOK) {
    call->rc = rc;
    on_answer(call);
  }
}

static void send_guarded(zkl__rel_t *rel);

/* A read before the delete answered (a flat lock's, or after a guard
 * found another version): the delete goes only if it found our node, for
 * a node someone else made at our name since ours went is theirs, and
 * then with its guard at the version read, so that nothing made there
 * between the read and the delete is taken for ours either. Otherwise
 * its code is the delete's: gone or not ours (ZNONODE) is a loss; no
 * answer leaves the node to the deferred deletes, which check its czxid.
 * Data rewritten by someone else (a revoker's request aside) was no hold
 * to the end: the node, ours, goes, and the verdict is a loss (vouched). */
static void on_flat_read(zkl__call_t *call) {
  zkl__rel_t *rel = call->ctx;
  zkl__acq_t *a = rel->a;
  if (!(call->rc == ZOK && zkl__owns_on(a, rel->s, &call->stat))) {
    rel->del.rc = call->rc == ZOK ? ZNONODE : call->rc;
    answered(rel);
    return;
  }
  if (zkl__node_guard(a) != ZKL__GUARD_NONE) {
    rel->intact = zkl__acq_data_intact(a, call->data, call->data_len);
    rel->gversion = call->stat.version;
    zkl__call_free(&rel->st);
    send_guarded(rel);
    return;
  }
  rel->left = 2; /* the delete, and one kept while we send it */
  zkl__call_init_fn(&rel->del, rel->c, on_answer, rel);
  refused(rel, &rel->del, zkl__delete(&rel->del, rel->s, a->path));
  on_answer(&rel->del);
}

/* The read of our node, then (on_flat_read) its delete. */
static void send_read_first(zkl__rel_t *rel) {
  int rc;
  zkl__call_init_fn(&rel->st, rel->c, on_flat_read, rel);
  if ((rc = zkl__get(&rel->st, rel->s, rel->a->path, 0)) != ZOK) {
    rel->st.rc = rc;
    on_flat_read(&rel->st);
  }
}

/* The delete in one transaction with its guard (guard_of), and the
 * directory's delete when it goes too: no read. */
static void send_guarded(zkl__rel_t *rel) {
  zkl__acq_t *a = rel->a;
  int rc;
  rel->guarded = 1;
  zkl__call_init_fn(&rel->st, rel->c, on_answer, rel);
  zkl__call_init_fn(&rel->del, rel->c, on_answer, rel);
  zkl__call_init_fn(&rel->pd, rel->c, on_answer, rel);
  /* one more than the requests: no answer ends the run while we send */
  rel->left = 3 + rel->tidy;
  rc = zkl__delete_guarded(&rel->st, &rel->del, &rel->pd, rel->s, a->path,
                           zkl__node_guard(a) == ZKL__GUARD_SET, rel->gversion,
                           rel->tidy ? a->q->dir : NULL);
  refused(rel, &rel->st, rc);
  if (rel->tidy)
    refused(rel, &rel->pd, rc);
  refused(rel, &rel->del, rc);
  on_answer(&rel->del); /* the one we kept */
}

/* With `judge`, a read of the node's czxid, owner and data goes in the
 * same round trip as the delete (for a flat lock, just before it): a node deleted and re-created by someone
 * else gives ZNONODE, the hold was not ours to the end. The read sees
 * whatever our server had applied when it answered, and nothing our watch
 * could tell us sooner: a change our server applies only after the read
 * (one committed through another server in that very instant) is judged
 * as after the unlock. A sync ahead of the read would close that instant,
 * at the cost of a round trip to the leader on every unlock. */
static void send_delete(zkl__rel_t *rel) {
  zkl_client_t *c = rel->c;
  zkl__acq_t *a = rel->a;
  zkl__queue_t *q = a->q;
  /* A release that leaves the parent this object made empty takes it
   * along (when it is ours to take: dir_ours), in the same transaction:
   * per-key locks would otherwise leave the server a parent per key to
   * sweep, at a bounded rate. A container, only on an object's first
   * release: one taken again keeps it from then on (deleted at close,
   * tidy_dir) rather than make it anew, alone, each time. One made in our
   * node's transaction (dir_lean) costs nothing to make again, and then
   * our node is its first and holds without a listing. */
  if (!rel->read) { /* not again for a guard's second try */
    rel->tidy = rel->judge && dir_ours(q) && (!q->dir_kept || q->dir_lean);
    if (rel->judge)
      q->dir_kept = 1;
  }
  if (rel->judge && !rel->read && zkl__node_guard(a) != ZKL__GUARD_NONE) {
    rel->gversion = a->dversion;
    rel->intact = 1; /* as far as we know: nobody told us otherwise */
    send_guarded(rel);
    return;
  }
  if (rel->judge && (q->flags & ZKL__Q_FLAT)) {
    send_read_first(rel);
    return;
  }
  zkl__call_init_fn(&rel->st, c, on_answer, rel);
  zkl__call_init_fn(&rel->del, c, on_answer, rel);
  zkl__call_init_fn(&rel->pd, c, on_answer, rel);
  /* one more than the requests: no answer ends the run while we send */
  rel->left = 2 + rel->judge + rel->tidy;
  if (rel->judge) /* with its data: rewritten by someone, it was no hold */
    refused(rel, &rel->st, zkl__get(&rel->st, rel->s, a->path, 0));
  if (rel->tidy) {
    int rc = zkl__delete_with_parent(&rel->del, &rel->pd, rel->s, a->path,
                                     q->dir);
    refused(rel, &rel->pd, rc);
    refused(rel, &rel->del, rc);
  } else {
    refused(rel, &rel->del, zkl__delete(&rel->del, rel->s, a->path));
  }
  on_answer(&rel->del); /* the one we kept */
}

/* Deletes a's node and forgets it; rel->then gets the delete's code (ZOK
 * when there was nothing to delete). When the connection is down, the
 * delete is left to the event thread; a final unlock (judge) then gets the
 * session's verdict instead (ZOK or ZSESSIONEXPIRED). */
static void remove_begin(zkl__rel_t *rel) {
  zkl_client_t *c = rel->c;
  zkl__acq_t *a = rel->a;
  zkl__session_t *s = a->sess;
  rel->epoch = c->conn_epoch;
  if (!a->path || !s) {
    rel->then(rel, s ? ZOK : ZSESSIONEXPIRED);
    return;
  }
  a->sess = NULL;
  rel->s = s;
  if (s->expired) {
    removed(rel, ZSESSIONEXPIRED);
  } else if (!rel->judge && c->state != ZKL_CLIENT_CONNECTED) {
    /* Nobody waits for this one's fate (an acquire giving up): a delete
     * sent now would only wait for the reconnection, or for the C client
     * to give up on it, past the caller's deadline. */
    zkl__defer_delete(c, s, a->path, a->czxid);
    removed(rel, ZCONNECTIONLOSS);
  } else {
    send_delete(rel);
  }
}

/* A blocking face's wait for rel to end (under c->mu). It judges the
 * verdict itself: the caller may be the event thread, or a thread the
 * event thread waits for. */
static void rel_wait(zkl__rel_t *rel) {
  zkl_client_t *c = rel->c;
  struct timespec ts;
  while (!rel->done) {
    if (!rel->pending) {
      pthread_cond_wait(rel->cv, &c->mu);
    } else if (!judge(rel)) {
      zkl__deadline_ts(rel->due, &ts); /* a reconnection wakes c->cv */
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
  }
}

static void rel_init(zkl__rel_t *rel, zkl__acq_t *a, int judge,
                     pthread_cond_t *cv) {
  memset(rel, 0, sizeof *rel);
  rel->c = a->q->c;
  rel->a = a;
  rel->judge = judge;
  rel->cv = cv;
}

static void node_removed(zkl__rel_t *rel, int zrc) {
  rel->rc = zrc;
  rel->done = 1;
  zkl__wake(rel->cv, &rel->cv_pin);
}

int zkl__remove_node(zkl__acq_t *a, int judge) {
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  zkl__rel_t rel;
  rel_init(&rel, a, judge, &cv);
  rel.then = node_removed;
  remove_begin(&rel);
  rel_wait(&rel);
  zkl__wake_settle(&rel.cv_pin);
  pthread_cond_destroy(&cv);
  return rel.rc;
}

/* ---- the release of a hold ----------------------------------------------- */

/* The hold is over: rc is the release's verdict. */
static void release_end(zkl__rel_t *rel, int rc) {
  zkl_client_t *c = rel->c;
  zkl__acq_t *a = rel->a;
  atomic_store(&a->state, ZKL_STATE_NONE);
  zkl__post_state(c, a, ZKL_STATE_NONE);
  zkl__acq_free(c, a);
  rel->a = NULL;
  rel->rc = rc;
  rel->done = 1;
  if (rel->cv)
    zkl__wake(rel->cv, &rel->cv_pin);
  else
    rel->done_fn(rc, rel->done_ctx); /* may free rel */
}

/* ZNONODE: someone deleted our node while we held it. */
static void released(zkl__rel_t *rel, int zrc) {
  int lost = zrc == ZNONODE || zkl__is_session_error(zrc);
  release_end(rel, lost ? zkl__lost_rc(rel->a) : ZKL_OK);
}

static void release_begin(zkl__rel_t *rel) {
  zkl__acq_t *a = rel->a;
  int st = atomic_load(&a->state);
  zkl__acq_unlink(rel->c, a); /* our own delete is not a loss */
  rel->then = released;
  if (st == ZKL_STATE_LOST)
    release_end(rel, zkl__lost_rc(a));
  else
    remove_begin(rel);
}

int zkl__queue_release(zkl__queue_t *q, zkl__acq_t *a, int judge) {
  zkl_client_t *c = q->c;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  zkl__rel_t rel;
  pthread_mutex_lock(&c->mu);
  rel_init(&rel, a, judge, &cv);
  release_begin(&rel);
  rel_wait(&rel);
  pthread_mutex_unlock(&c->mu);
  zkl__wake_settle(&rel.cv_pin);
  pthread_cond_destroy(&cv);
  return rel.rc;
}

void zkl__release_start(zkl__rel_t *rel, zkl__acq_t *a,
                        void (*done)(int rc, void *ctx), void *ctx) {
  rel_init(rel, a, 1, NULL);
  rel->done_fn = done;
  rel->done_ctx = ctx;
  release_begin(rel);
}

int64_t zkl__releases_judge(zkl_client_t *c) {
  zkl__rel_t *rel = c->rels, *keep = NULL;
  int64_t due = 0;
  c->rels = NULL;
  while (rel) {
    zkl__rel_t *next = rel->next;
    if (!judge(rel)) { /* else gone on, maybe freed */
      rel->next = keep;
      keep = rel;
      if (!due || rel->due < due)
        due = rel->due;
    }
    rel = next;
  }
  while (keep) { /* back on the list, beside any put there meanwhile */
    zkl__rel_t *next = keep->next;
    keep->next = c->rels;
    c->rels = keep;
    keep = next;
  }
  return due;
}

/* The directory's read, then delete, which nobody waits for. */
typedef struct {
  zkl__call_t call;
  zkl__session_t *s;
  char *path;
  int64_t czxid; /* the incarnation we made, or 0: one marked as zklock's */
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

#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_dir_rewritten;
#endif

/* Deleted only if it is still the one we made, and empty: a directory
 * someone deleted and made again since our last look is theirs. One we
 * did not make only if it is not ephemeral and its data is zklock's mark:
 * most likely a plain node someone's lock made in its node's transaction
 * (acquire.c, lean) and could not take along (a client cannot tell it
 * from one of zklock's containers, which carry the mark too, and go
 * early at no harm); any other directory is somebody else's. */
static void on_dir_read(zkl__call_t *call) {
  dir_delete_t *d = call->ctx;
  int v;
  int ours = d->czxid ? call->stat.czxid == d->czxid
                      : call->stat.ephemeralOwner == 0 &&
                            zkl__dir_marked(call->data, call->data_len);
  if (call->rc != ZOK || !ours || call->stat.numChildren != 0) {
    on_dir_done(call);
    return;
  }
  v = call->stat.version;
  zkl__call_free(call); /* the mark read */
  zkl__call_init_fn(call, call->c, on_dir_done, d);
  /* at the version read: data rewritten since (someone took the parent
   * for theirs, F10), or a parent deleted and made again in between by
   * someone else (a plain create leaves version 0; ours, made with its
   * setData, is at 1), is not the one we read */
#ifdef ZKL_FAULT_INJECTION
  if (atomic_exchange(&zkl__fault_dir_rewritten, 0))
    zkl__set_nowait(d->s, d->path, "x", 1, -1);
#endif
  if (zkl__delete_at(call, d->s, d->path, v) != ZOK)
    on_dir_done(call);
}

/* Deletes the queue's directory when it is this object's (dir_ours): gone
 * with its last user instead of at the server's next sweep. A newcomer leaves
 * it be (or makes the delete fail, ZNOTEMPTY), and a node created just after it
 * finds no directory and makes it again, as after a sweep. Or, when it may
 * be a plain directory someone's lock made in its node's transaction
 * (dir_lone), after a read of its mark: no server ever sweeps that one,
 * and whoever closes last finds it empty. Not at release: under
 * contention every release would pay the read, for a directory the next
 * holder still needs. Under c->mu. */
static void dir_delete(zkl__queue_t *q, int64_t czxid) {
  zkl_client_t *c = q->c;
  dir_delete_t *d;
  int rc;
  if (!c->sess || c->sess->expired || c->state != ZKL_CLIENT_CONNECTED ||
      c->stopping)
    return;
  if (!(d = calloc(1, sizeof *d)) || !(d->path = zkl__strdup(q->dir))) {
    free(d);
    return; /* the server's sweep takes it, or zkl_sweep() */
  }
  d->czxid = czxid;
  d->s = zkl__session_get(c);
  zkl__call_init_fn(&d->call, c, on_dir_read, d);
  rc = czxid ? zkl__exists(&d->call, d->s, d->path)
             : zkl__get(&d->call, d->s, d->path, 0);
  if (rc != ZOK)
    on_dir_done(&d->call);
}

void zkl__tidy_dir(zkl__queue_t *q) {
  if (dir_ours(q))
    dir_delete(q, q->dir_made);
  else if (q->dir_lone && !q->dir_peer && !(q->flags & ZKL__Q_KEEP_DIR))
    dir_delete(q, 0);
}
