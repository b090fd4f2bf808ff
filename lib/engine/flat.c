/* SPDX-License-Identifier: Apache-2.0 */
/* flat.c: a flat lock's acquire (ZKL__Q_FLAT, ZKL_MUTEX_FLAT).
 *
 * No queue: the lock is one ephemeral node, <dir> itself (<root>/<name>),
 * and whoever creates it holds, as with Redis's SET NX. Its data is our
 * usual header with a "guid=" line (nodedata.c): the name is everybody's,
 * so only the data can say which acquisition made it. Its token is its
 * czxid. The hold that follows is any hold's (acq.c), and so is its
 * release (release.c).
 *
 * A create that finds the node there reads it with a watch (getData):
 * gone already, we create again at once; not ephemeral (a queue lock's
 * directory of the same name, or a planted node), it never goes by
 * itself: ZKL_EMISMATCH; someone else's, we park until our own watch
 * fires. So a waiter sends one create per release it hears of: not FIFO,
 * and the herd is bounded by one create per waiter per release.
 *
 * The node is made at data version 1 with our own ACL (zkl__create_own):
 * read for all, every right for our identity alone, which the release's
 * guard needs (release.c). Two acquisitions of one client, which share
 * that identity, never make or hold it at once: the second waits for the
 * first's claim in the process (zkl__claim_take), as for a local mutex.
 *
 * A create whose reply is lost may have been made: the node is read
 * after the reconnection and adopted only if this very session owns it
 * and its data carries our guid; it is never created twice blind, never
 * taken from someone else. Given up while that is unknown, it is left to
 * the deferred deletes, which check owner and data too (deferred.c).
 *
 * Sits below acquire.c (which comes here from zkl__step_top) and above
 * recover.c (the parents, zkl__step_mkdir). Steps run as step.c says. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* As acquire.c's: a container parent can be reaped between our mkdir and
 * our create, but not forever. */
#define NONODE_RETRIES 8

static void step_restart(zkl__acq_t *a);
static void step_claim(zkl__acq_t *a);
static void step_create(zkl__acq_t *a);
static void step_created(zkl__acq_t *a);
static void step_node_read(zkl__acq_t *a);
static void step_node_read_done(zkl__acq_t *a);
static void step_node_watched(zkl__acq_t *a);

/* ---- the run's end, and its new passes ----------------------------------- */

/* Ends the run with rc, holding nothing. A create whose fate is unknown is
 * left to the deferred deletes, by owner and guid. */
static void flat_end(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (r->unsure && r->s && !r->s->expired)
    zkl__defer_delete_guid(c, r->s, a->q->dir, a->guid);
  r->unsure = 0;
  zkl__claim_drop(c, a); /* held nothing: the name is the next one's */
  zkl__session_put(c, r->s);
  r->s = NULL;
  zkl__finish(a, rc);
}

/* The node at <dir> is ours (st is its stat): hold it. */
static void hold(zkl__acq_t *a, char *path, const struct Stat *st) {
  zkl__run_t *r = a->run;
  r->unsure = 0;
  a->q->dir_seen = 1;
  zkl__adopt(a, path, st); /* takes r->s */
  zkl__finish(a, ZKL_OK);
}

void zkl__flat_top(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc;
  if (!a->guid[0] && (rc = zkl__guid(a->guid)) != ZKL_OK) {
    flat_end(a, rc);
    return;
  }
  if (r->s && r->s != c->sess) { /* expired: what we made died with it */
    r->unsure = 0;
    zkl__session_put(c, r->s);
    r->s = NULL;
  }
  if (!zkl__claim_take(c, a, a->q->dir)) {
    r->next = step_claim; /* kicked when the claim is let go */
    return;
  }
  if (!r->s)
    r->s = zkl__session_get(c);
  r->epoch = c->conn_epoch;
  r->next = step_create;
}

/* Another acquisition of this client makes or holds the node: parked
 * until it lets its claim go, or the run must end. */
static void step_claim(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  int rc = zkl__stopped(r);
  if (rc != ZKL_OK) {
    flat_end(a, rc);
  } else if (r->mode == ZKL__TRY) {
    flat_end(a, ZKL_EBUSY);
  } else if (zkl__claim_take(a->q->c, a, a->q->dir)) {
    zkl__flat_top(a);
  } else {
    r->first = 0; /* a wait, as behind a node */
    zkl__park(a, step_claim, r->deadline);
  }
}

/* A new pass after trouble (a new session, parents made): as
 * zkl__step_top, which this file does not call. */
static void step_restart(zkl__acq_t *a) {
  int rc = zkl__stopped(a->run);
  if (rc != ZKL_OK) {
    flat_end(a, rc);
    return;
  }
  if (a->session_lost)
    zkl__drop_node(a->q->c, a);
  zkl__flat_top(a);
}

static void restart_reconnected(zkl__acq_t *a, int rc) {
  if (rc != ZKL_OK)
    flat_end(a, rc);
  else
    a->run->next = step_restart;
}

/* Where zkl__step_mkdir hands back: ZKL__REJOIN keeps the first look
 * lenient (a lock free once its parents exist is taken). */
static void mkdir_back(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  if (rc == ZKL__REJOIN || rc == ZKL__RETRY) {
    r->first &= rc == ZKL__REJOIN;
    r->next = step_restart;
  } else {
    flat_end(a, rc);
  }
}

/* ---- the create ---------------------------------------------------------- */

static void step_create(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  char *data = NULL;
  size_t len = 0;
  int rc = zkl__node_data_guid(a->guid, q->user_data, q->user_len, &data, &len);
  if (rc != ZKL_OK) {
    flat_end(a, rc);
    return;
  }
  r->repoch = q->c->conn_epoch;
  zkl__prep(a, &r->cr);
  zkl__sent(a, &r->cr, zkl__create_own(&r->cr, r->s, q->dir, data, (int)len,
                                       zkl__node_mode(q)));
  free(data);
  r->next = step_created;
}

/* The parents are missing: made as any queue's (recover.c), then again. */
static void make_parents(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  const char *dir = a->q->dir;
  size_t n = (size_t)(strrchr(dir, '/') - dir);
  if (++r->nonode > NONODE_RETRIES || n == 0) {
    flat_end(a, ZNONODE);
    return;
  }
  if (!(r->mk = malloc(n + 1))) {
    flat_end(a, ZKL_ENOMEM);
    return;
  }
  memcpy(r->mk, dir, n);
  r->mk[n] = '\0';
  r->back = mkdir_back;
  r->next = zkl__step_mkdir;
}

/* After a lost reply, the reconnection: on the same session, read the
 * node before anything else; on a new one, what we made died. */
static void unsure_reconnected(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  if (rc == ZKL_OK && a->q->c->sess != r->s) {
    r->unsure = 0;
    r->next = step_restart;
  } else if (rc != ZKL_OK) {
    flat_end(a, rc);
  } else {
    r->next = step_node_read;
  }
}

static void step_created(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  int rc = r->cr.rc;
  if (rc == ZOK) {
    hold(a, r->cr.path, &r->cr.stat);
    r->cr.path = NULL;
    return;
  }
  zkl__call_free(&r->cr);
  r->first &= rc == ZNONODE; /* any other pass is trouble, or a wait */
  if (rc == ZNODEEXISTS && r->mode == ZKL__TRY && !r->unsure) {
    flat_end(a, ZKL_EBUSY); /* one create, and nobody's to adopt */
  } else if (rc == ZNODEEXISTS) {
    r->next = step_node_read;
  } else if (rc == ZNONODE) {
    make_parents(a);
  } else if (zkl__is_conn_error(rc) || rc == ZKL_ENOMEM) {
    r->unsure = 1; /* made, maybe: read it before any retry */
    zkl__await_conn(a, r->s, rc == ZKL_ENOMEM ? 0 : r->repoch,
                    unsure_reconnected);
  } else if (zkl__is_session_error(rc)) {
    zkl__await_conn(a, r->s, r->repoch, restart_reconnected);
  } else {
    flat_end(a, rc);
  }
}

/* ---- whose node it is ---------------------------------------------------- */

static void node_read_reconnected(zkl__acq_t *a, int rc) {
  if (rc == ZKL_OK && a->q->c->sess != a->run->s)
    unsure_reconnected(a, rc); /* a new session: start over */
  else if (rc != ZKL_OK)
    flat_end(a, rc);
  else
    a->run->next = step_node_read;
}

/* Reads the node, with a watch unless it is a try, and lets the answer
 * decide. After a lost create the read goes behind a sync: our server
 * has then applied whatever the leader committed, our create included. */
static void step_node_read(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc = zkl__stopped(r);
  if (rc != ZKL_OK) {
    flat_end(a, rc);
    return;
  }
  if (c->state != ZKL_CLIENT_CONNECTED) { /* as acquire.c's step_list */
    zkl__await_conn(a, r->s, c->conn_epoch, node_read_reconnected);
    return;
  }
  r->repoch = c->conn_epoch;
  zkl__prep(a, &r->aux);
  if (r->unsure) {
    zkl__prep(a, &r->sy);
    zkl__sent(a, &r->sy, zkl__sync(&r->sy, r->s, a->q->dir));
  }
  zkl__sent(a, &r->aux,
            zkl__get(&r->aux, r->s, a->q->dir, r->mode != ZKL__TRY));
  r->next = step_node_read_done;
}

/* Someone else's node, ephemeral: wait for our watch on it (set by the
 * read) to fire. The wait is registered as a wait set of one, on the
 * read's session, which the watcher (acq.c) matches. */
static void wait_begin(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (!(r->w.paths[0] = zkl__strdup(a->q->dir))) {
    flat_end(a, ZKL_ENOMEM);
    return;
  }
  r->w.plan.nwatch = 1;
  r->waited = 1;
  r->wflags[0] = 0;
  a->watch = r->w.paths;
  a->wflags = r->wflags;
  a->nwatch = 1;
  zkl__went_add(c, &r->went[0], r->w.paths[0], a, 0);
  a->sess = r->s; /* no node of ours: the waiter's session, for events */
  r->s->refs++;
  r->next = step_node_watched;
}

static void node_wait_end(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__went_del(c, &r->went[0]);
  a->watch = NULL;
  a->wflags = NULL;
  a->nwatch = 0;
  zkl__waitset_free(&r->w);
  zkl__session_put(c, a->sess);
  a->sess = NULL;
}

/* What the read found: ours (a lost create's), gone, planted, or
 * someone else's. */
static void read_found(zkl__acq_t *a, const zkl__call_t *g) {
  zkl__run_t *r = a->run;
  size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
  if (zkl__node_made_by(r->s, &g->stat) &&
      zkl__data_has_guid(g->data, len, a->guid)) {
    char *path = zkl__strdup(a->q->dir);
    zkl__post_log(a->q->c, ZKL_LOG_INFO,
                  "%s: made by our create whose reply was lost: held",
                  a->q->dir);
    if (path)
      hold(a, path, &g->stat);
    else
      flat_end(a, ZKL_ENOMEM);
  } else if (zkl__node_lasting(&g->stat)) {
    zkl__post_log(a->q->c, ZKL_LOG_WARN,
                  "%s: not ephemeral (a queue lock's directory, or planted?):"
                  " never free for a flat lock",
                  a->q->dir);
    flat_end(a, ZKL_EMISMATCH);
  } else if (r->mode == ZKL__TRY) {
    flat_end(a, ZKL_EBUSY);
  } else {
    wait_begin(a);
  }
}

static void step_node_read_done(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__call_t *g = &r->aux;
  int rc = g->rc;
  zkl__call_free(&r->sy);
  if (rc == ZOK)
    read_found(a, g);
  else if (rc == ZNONODE) /* released meanwhile: create again at once */
    r->next = step_create;
  else if (zkl__is_conn_error(rc))
    zkl__await_conn(a, r->s, r->repoch, node_read_reconnected);
  else if (zkl__is_session_error(rc))
    zkl__await_conn(a, r->s, r->repoch, restart_reconnected);
  else
    flat_end(a, rc);
  zkl__call_free(g);
}

/* ---- waiting ------------------------------------------------------------- */

/* Parked here until our watch fires, the session ends, or the run must
 * end. Deleted or changed, we create again at once: a holder's release
 * writes its node (the guard) in the transaction that deletes it, so a
 * change is most often the release itself, and a create, one op in a
 * transaction, costs less than the read a change would otherwise ask;
 * a node still there answers ZNODEEXISTS, and is read as before. */
static void step_node_watched(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  int rc = zkl__stopped(r);
  unsigned char f = r->wflags[0];
  if (rc == ZKL_OK && !a->session_lost &&
      !(f & (ZKL__W_GONE | ZKL__W_CHANGED))) {
    zkl__park(a, step_node_watched, r->deadline);
    return;
  }
  node_wait_end(a);
  if (rc != ZKL_OK)
    flat_end(a, rc);
  else if (a->session_lost)
    r->next = step_restart;
  else
    r->next = step_create;
}
