/* SPDX-License-Identifier: Apache-2.0 */
/* join.c: one node in each of k queues, made all or none: the join of a
 * multi-lock, as steps of its conductor's run (joinwait.c starts it, then
 * runs each node as a member of its queue, zkl__queue_start_member).
 *
 * One transaction (zoo_amulti) creates the k nodes, named with one guid
 * that ends in ZKL__ML_TAG, and a listing of each queue follows it in the
 * same round trip; a read of one node then gives the creation zxid they
 * all share (a create in a multi returns no stat). The directories not
 * known to exist are made first on the same session, and after one was
 * found missing their parents too, from the top: a create of one that
 * exists would fail the whole transaction. When the answer is lost, the
 * nodes stand all or none, and whichever stand are deleted, found by the
 * guid once connected (deferred.c): the caller joins again, with a new
 * guid. Once every node's run granted, zkl__join_check tells whether the
 * k holds stand together.
 *
 * Every step runs under c->mu and never waits (engine.h: struct
 * zkl__run): it sends and names the step that takes the answers, or
 * parks, and hands the run back through j->then when it is done. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

void zkl__join_begin(zkl__join_t *j) {
  size_t i;
  for (i = 0; i < j->n; i++)
    j->gen[i] = j->q[i]->cancel_gen;
}

/* Why the k-queue acquire must end now: zkl__queue_halted() (step.c) of
 * each queue, then the one deadline (-1: none). */
int zkl__join_halted(const zkl__join_t *j, int64_t deadline) {
  size_t i;
  int rc = ZKL_OK;
  /* every queue's cancel before the one deadline, as for a lone run */
  for (i = 0; i < j->n && rc == ZKL_OK; i++)
    rc = zkl__queue_halted(j->q[i], j->gen[i], -1);
  if (rc == ZKL_OK && deadline >= 0 && zkl_now_ms() >= deadline)
    rc = ZKL_ETIMEDOUT;
  return rc;
}

/* ---- the transaction ----------------------------------------------------- */

/* A new guid that ends in the multi-lock's tag (ZKL__ML_TAG). */
static int tagged_guid(char guid[ZKL__GUID_LEN + 1]) {
  int rc = zkl__guid(guid);
  if (rc == ZKL_OK)
    memcpy(guid + ZKL__GUID_LEN - ZKL__ML_TAG_LEN, ZKL__ML_TAG,
           ZKL__ML_TAG_LEN);
  return rc;
}

/* Room for the creates of the parents, with j->deep: at most one per
 * '/' of each directory (t->levels). */
static int alloc_up(const zkl__join_t *j, zkl__join_txn_t *t) {
  size_t i;
  for (i = 0; j->deep && i < j->n; i++)
    t->levels += strlen(j->q[i]->dir) / 2 + 1;
  if (t->levels && !(t->up = calloc(t->levels, sizeof *t->up)))
    return ZKL_ENOMEM;
  return ZKL_OK;
}

/* The names of the first n creates, and the node data they share. */
static void free_ops(zkl__join_txn_t *t, size_t n, char *data) {
  size_t i;
  for (i = 0; i < n; i++)
    free((char *)t->ops[i].create_op.path);
  free(data);
}

/* The transaction's creates (t->ops): <dir>/<guid><marker> in each queue,
 * ephemeral and sequential, all with the node data *data (the caller
 * frees it with free_ops once sent); t->paths[i] receives the name the
 * server gives. ZKL_OK, or why not (names and data then freed, and
 * t->paths left to zkl__join_txn_free). */
static int make_ops(const zkl__join_t *j, zkl__join_txn_t *t, char **data) {
  size_t len = 0, i;
  int rc;
  if ((rc = tagged_guid(t->guid)) != ZKL_OK ||
      (rc = zkl__node_data(NULL, j->data, j->len, data, &len)) != ZKL_OK)
    return rc;
  for (i = 0; i < j->n; i++) {
    const zkl__queue_t *q = j->q[i];
    char *base = zkl__concat(q->prefix, t->guid);
    char *name =
        base ? zkl__concat(base, j->shared[i] ? q->marker_shared : q->marker)
             : NULL;
    size_t size = name ? strlen(name) + ZKL__SEQ_LEN + 1 : 0;
    free(base);
    if (!name || !(t->paths[i] = calloc(1, size))) {
      free(name);
      free_ops(t, i, *data);
      *data = NULL;
      return ZKL_ENOMEM;
    }
    zoo_create_op_init(&t->ops[i], name, *data, (int)len, j->c->acl,
                       zkl__node_mode(j->q[i]), t->paths[i], (int)size);
    t->res[i].err = ZOK;
  }
  return ZKL_OK;
}

/* The parents of a queue's directory, made when a transaction found one
 * missing (first use of a root): every component from the top, in order
 * on the session, whatever each answers (the transaction tells). Their
 * answers move the run on with the transaction's. */
static size_t make_parents(zkl__acq_t *a, zkl__session_t *s, const char *dir,
                           zkl__call_t *calls) {
  char *p = zkl__strdup(dir), *slash;
  size_t n = 0;
  if (!p)
    return 0;
  for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    zkl__prep(a, &calls[n]);
    zkl__sent(a, &calls[n], zkl__create_dir(&calls[n], s, p, NULL, -1, 0));
    n++;
    *slash = '/';
  }
  free(p);
  return n;
}

/* Sends, in this order on the client's session: the parents' creates
 * (j->deep), the directories not known to exist, the transaction, and a
 * listing of each queue. */
static void send_all(zkl__acq_t *a, const zkl__join_t *j, zkl__join_txn_t *t) {
  zkl_client_t *c = j->c;
  size_t i;
  t->s = zkl__session_get(c);
  /* parents first: a create of one that exists would fail the whole
   * transaction, and the C client cannot put a container in one */
  for (i = 0; t->levels && i < j->n; i++)
    t->nup += make_parents(a, t->s, j->q[i]->dir, t->up + t->nup);
  for (i = 0; i < j->n; i++)
    if (!j->q[i]->dir_seen) {
      zkl__prep(a, &t->mk[i]);
      zkl__sent(a, &t->mk[i],
                zkl__create_dir(&t->mk[i], t->s, j->q[i]->dir, NULL, -1,
                                (j->q[i]->flags & ZKL__Q_KEEP_DIR) != 0));
    }
  zkl__prep(a, &t->tx);
  zkl__sent(a, &t->tx, zkl__multi(&t->tx, t->s, (int)j->n, t->ops, t->res));
  for (i = 0; i < j->n; i++) {
    zkl__prep(a, &t->ls[i]);
    zkl__sent(a, &t->ls[i], zkl__children(&t->ls[i], t->s, j->q[i]->dir));
  }
}

/* ---- its answers --------------------------------------------------------- */

static void step_czxid(zkl__acq_t *a);
static void step_usable(zkl__acq_t *a);

/* The join is over: then() takes the run back, with ZKL_OK and j->w->t, or
 * why not and nothing. */
static void hand_back(zkl__acq_t *a, int rc) {
  zkl__join_t *j = zkl__join_of(a);
  if (rc != ZKL_OK)
    zkl__join_txn_free(&j->w->t);
  j->then(a, rc);
}

/* What the answers' code rc means: ZKL_OK, the directories known to exist
 * from now on; ZKL__AGAIN, join again (whatever may stand is deleted, and
 * the parents made first if one was reaped), once the connection is up
 * if it was lost; or why not. */
static void join_settle(zkl__acq_t *a, int rc) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  int reaped = rc == ZNONODE && t->tx.rc == ZNONODE;
  /* the session is over: its nodes went with it (or, refused on a dead
   * handle with ZINVALIDSTATE, were never sent), and the next one joins */
  int over = zkl__is_session_error(rc);
  size_t i;
  if (rc == ZOK) {
    for (i = 0; i < j->n; i++)
      j->q[i]->dir_seen = 1;
    j->deep = 0;
  }
  if (rc == ZOK ||
      (!zkl__is_conn_error(rc) && rc != ZNONODE && !over)) {
    hand_back(a, rc);
    return;
  }
  if (rc != ZNONODE || !reaped)
    j->first = 0; /* trouble: the deadline holds from here on */
  /* Made or not, all or none: whatever stands goes, found by the guid
   * once connected (nothing if the session is over). */
  for (i = 0; i < j->n; i++) {
    if (reaped)
      j->q[i]->dir_seen = 0; /* a parent was reaped: make them again */
    if (t->tx.rc != ZNONODE && !zkl__is_session_error(t->tx.rc))
      zkl__defer_find_delete(j->c, t->s, j->q[i]->dir, t->guid);
  }
  if (reaped)
    j->deep = 1; /* from the top, if the root is missing */
  /* once connected again; at once if the connection is up (a lost
   * answer on a link that came back, or a read that failed alone) */
  if (rc == ZNONODE)
    hand_back(a, ZKL__AGAIN);
  else
    a->run->next = step_usable;
}

/* Waits for a usable connection (until j->deadline), then joins again. */
static void step_usable(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  int rc = ZKL__AGAIN;
  if (j->c->state != ZKL_CLIENT_CONNECTED &&
      (rc = zkl__join_halted(j, j->deadline)) == ZKL_OK) {
    zkl__park(a, step_usable, j->deadline); /* a session event kicks it */
    return;
  }
  hand_back(a, rc);
}

/* Everything send_all() sent is answered: notes the directories made
 * (q->dir_made) and, once the transaction went through, reads one node
 * for the zxid. */
static void step_answered(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  size_t i;
  for (i = 0; i < t->nup; i++)
    zkl__call_free(&t->up[i]); /* the parents' creates: only their paths */
  free(t->up);
  t->up = NULL;
  t->nup = 0;
  for (i = 0; i < j->n; i++)
    if (t->mk[i].done && t->mk[i].rc == ZOK)
      j->q[i]->dir_made = t->mk[i].stat.czxid;
  if (t->tx.rc != ZOK) {
    join_settle(a, t->tx.rc);
    return;
  }
  zkl__prep(a, &t->st);
  zkl__sent(a, &t->st, zkl__exists(&t->st, t->s, t->paths[0]));
  a->run->next = step_czxid;
}

/* The creation zxid the nodes share. */
static void step_czxid(zkl__acq_t *a) {
  zkl__join_txn_t *t = &zkl__join_of(a)->w->t;
  int rc = t->st.rc;
  if (rc == ZOK && !zkl__node_made_by(t->s, &t->st.stat))
    rc = ZNONODE; /* not ours: someone replaced it at once */
  t->czxid = t->st.stat.czxid;
  join_settle(a, rc);
}

void zkl__join_send(zkl__acq_t *a, void (*then)(zkl__acq_t *a, int rc)) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  char *data = NULL;
  int rc;
  memset(t, 0, sizeof *t);
  t->c = j->c;
  t->n = j->n;
  j->then = then;
  if ((rc = alloc_up(j, t)) == ZKL_OK &&
      (rc = make_ops(j, t, &data)) == ZKL_OK) {
    send_all(a, j, t);
    free_ops(t, j->n, data); /* the C client copied them */
    a->run->next = step_answered;
    return;
  }
  hand_back(a, rc);
}

void zkl__join_txn_free(zkl__join_txn_t *t) {
  size_t i;
  for (i = 0; i < t->n; i++) {
    free(t->paths[i]);
    t->paths[i] = NULL;
    zkl__call_free(&t->mk[i]);
    zkl__call_free(&t->ls[i]);
  }
  zkl__call_free(&t->tx);
  zkl__call_free(&t->st);
  for (i = 0; i < t->nup; i++)
    zkl__call_free(&t->up[i]);
  free(t->up);
  t->up = NULL;
  t->nup = 0;
  if (t->s)
    zkl__session_put(t->c, t->s);
  t->s = NULL;
}

/* ---- after the grants ---------------------------------------------------- */

static void step_checked(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  size_t i;
  int rc = ZKL_OK;
  for (i = 0; i < j->n; i++) {
    zkl__call_t *st = &j->w->aux[i];
    if (!(st->rc == ZOK && zkl__owns_on(j->a[i], t->s, &st->stat))) {
      if (st->rc == ZOK || st->rc == ZNONODE)
        zkl__lose(j->c, j->a[i],
                  "deleted by someone else while the set waited");
      rc = ZKL__AGAIN; /* or the connection's trouble: start over */
    }
    zkl__call_free(st);
  }
  j->then(a, rc);
}

void zkl__join_check(zkl__acq_t *a, void (*then)(zkl__acq_t *a, int rc)) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  size_t i;
  int waited = 0, rc = ZKL_OK;
  j->then = then;
  for (i = 0; i < j->n; i++) {
    const zkl__acq_t *h = j->a[i];
    if (atomic_load(&h->state) == ZKL_STATE_LOST || h->tainted || !h->sess)
      rc = ZKL__AGAIN;
    waited |= h->waited;
  }
  a->run->waited |= waited; /* the set's, for zkl_client_stats() */
  if (rc != ZKL_OK || !waited || j->n < 2) {
    then(a, rc);
    return;
  }
  for (i = 0; i < j->n; i++) {
    zkl__call_t *st = &j->w->aux[i];
    zkl__prep(a, st);
    zkl__sent(a, st, zkl__exists(st, t->s, t->paths[i]));
  }
  a->run->next = step_checked;
}
