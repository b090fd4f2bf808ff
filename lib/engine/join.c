/* join.c: one node in each of k queues, made all or none: the join of a
 * multi-lock (multilock.c), which then runs each node as a member of its
 * queue (queue.c, zkl__queue_start_member).
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
 * guid. Once every node's run granted, zkl__join_still_held tells whether
 * the k holds stand together.
 *
 * It runs on the thread that acquires. zkl__join_enqueue and
 * zkl__join_txn_free take c->mu themselves; the others run under it, and
 * zkl__join_still_held drops it while it reads. */
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

/* Room for every request waited for: per queue at most a create of its
 * directory and a listing, the transaction, and with j->deep the creates
 * of the parents, at most one per '/' of each directory (t->up). */
static int alloc_waits(const zkl__join_t *j, zkl__join_txn_t *t) {
  size_t i;
  for (i = 0; j->deep && i < j->n; i++)
    t->levels += strlen(j->q[i]->dir) / 2 + 1;
  if (!(t->w = calloc(2 * j->n + 1 + t->levels, sizeof *t->w)) ||
      (t->levels && !(t->up = calloc(t->levels, sizeof *t->up))))
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
                       ZOO_EPHEMERAL_SEQUENTIAL, t->paths[i], (int)size);
    t->res[i].err = ZOK;
  }
  return ZKL_OK;
}

/* The parents of a queue's directory, made when a transaction found one
 * missing (first use of a root): every component from the top, in order
 * on the session, whatever each answers (the transaction tells). Not
 * waited for one by one: the transaction waits behind them. */
static size_t make_parents(zkl__session_t *s, const char *dir,
                           zkl__call_t *calls) {
  char *p = zkl__strdup(dir), *slash;
  size_t n = 0;
  if (!p)
    return 0;
  for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    zkl__create(&calls[n++], s, p, NULL, -1, ZOO_CONTAINER);
    *slash = '/';
  }
  free(p);
  return n;
}

/* make_parents() for every queue, each create waited for (t->w). */
static void send_parents(const zkl__join_t *j, zkl__join_txn_t *t) {
  size_t i, k;
  pthread_mutex_lock(&j->c->mu);
  for (k = 0; k < t->levels; k++)
    zkl__call_init(&t->up[k], j->c, &t->cv);
  pthread_mutex_unlock(&j->c->mu);
  for (i = 0; i < j->n; i++) {
    size_t made = make_parents(t->s, j->q[i]->dir, t->up + t->nup);
    for (k = 0; k < made; k++)
      t->w[t->nw++] = &t->up[t->nup + k];
    t->nup += made;
  }
}

/* Sends, in this order on the client's session: the parents' creates
 * (j->deep), the directories not known to exist, the transaction, and a
 * listing of each queue. Caller holds no lock. */
static void send_all(const zkl__join_t *j, zkl__join_txn_t *t) {
  zkl_client_t *c = j->c;
  size_t i;
  pthread_mutex_lock(&c->mu);
  t->s = zkl__session_get(c);
  for (i = 0; i < j->n; i++) {
    zkl__call_init(&t->mk[i], c, &t->cv);
    zkl__call_init(&t->ls[i], c, &t->cv);
  }
  zkl__call_init(&t->tx, c, &t->cv);
  pthread_mutex_unlock(&c->mu);
  /* parents first: a create of one that exists would fail the whole
   * transaction, and the C client cannot put a container in one */
  if (t->levels)
    send_parents(j, t);
  for (i = 0; i < j->n; i++)
    if (!j->q[i]->dir_seen) {
      zkl__create_dir(&t->mk[i], t->s, j->q[i]->dir, NULL, -1,
                      (j->q[i]->flags & ZKL__Q_KEEP_DIR) != 0);
      t->w[t->nw++] = &t->mk[i];
    }
  zkl__multi(&t->tx, t->s, (int)j->n, t->ops, t->res);
  t->w[t->nw++] = &t->tx;
  for (i = 0; i < j->n; i++) {
    zkl__children(&t->ls[i], t->s, j->q[i]->dir);
    t->w[t->nw++] = &t->ls[i];
  }
}

/* ---- its answers --------------------------------------------------------- */

/* The transaction made the nodes: the creation zxid they share, from one
 * read (under c->mu, dropped while asking). */
static int read_czxid(zkl__join_txn_t *t) {
  zkl_client_t *c = t->c;
  zkl__call_t *ptrs[1] = {&t->st};
  int rc;
  zkl__call_init(&t->st, c, &t->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__exists(&t->st, t->s, t->paths[0]);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  rc = t->st.rc;
  if (rc == ZOK && t->st.stat.ephemeralOwner != t->s->id)
    rc = ZNONODE; /* not ours: someone replaced it at once */
  t->czxid = t->st.stat.czxid;
  return rc;
}

/* Waits (under c->mu) for everything send_all() sent and notes the
 * directories made (q->dir_made). The transaction's code, or once it went
 * through, that of the read for the zxid. */
static int answers(const zkl__join_t *j, zkl__join_txn_t *t) {
  size_t i;
  zkl__call_wait(t->w, (int)t->nw);
  for (i = 0; i < t->nup; i++)
    zkl__call_free(&t->up[i]); /* the parents' creates: only their paths */
  free(t->up);
  free(t->w);
  t->up = NULL;
  t->w = NULL;
  for (i = 0; i < j->n; i++)
    if (t->mk[i].done && t->mk[i].rc == ZOK)
      j->q[i]->dir_made = t->mk[i].stat.czxid;
  return t->tx.rc == ZOK ? read_czxid(t) : t->tx.rc;
}

/* What the answers' code rc means (under c->mu): ZKL_OK, the directories
 * known to exist from now on; ZKL__AGAIN, join again (whatever may stand
 * is deleted, and the parents made first if one was reaped); or why not. */
static int settle(zkl__join_t *j, zkl__join_txn_t *t, int rc,
                  int64_t deadline) {
  int reaped = rc == ZNONODE && t->tx.rc == ZNONODE;
  size_t i;
  if (rc == ZOK) {
    for (i = 0; i < j->n; i++)
      j->q[i]->dir_seen = 1;
    j->deep = 0;
    return ZKL_OK;
  }
  if (!zkl__is_conn_error(rc) && rc != ZNONODE && rc != ZSESSIONEXPIRED)
    return rc;
  /* Made or not, all or none: whatever stands goes, found by the guid
   * once connected (nothing if the session is over). */
  for (i = 0; i < j->n; i++) {
    if (reaped)
      j->q[i]->dir_seen = 0; /* a parent was reaped: make them again */
    if (t->tx.rc != ZNONODE && t->tx.rc != ZSESSIONEXPIRED)
      zkl__defer_find_delete(j->c, t->s, j->q[i]->dir, t->guid);
  }
  if (reaped)
    j->deep = 1; /* from the top, if the root is missing */
  /* once connected again; at once if the connection is up (a lost
   * answer on a link that came back, or a read that failed alone) */
  if (rc != ZNONODE &&
      (rc = zkl__wait_usable(j->c, NULL, 0, deadline)) == ZKL_OK)
    rc = ZKL__AGAIN;
  if (rc == ZNONODE)
    rc = ZKL__AGAIN;
  return rc;
}

int zkl__join_enqueue(zkl__join_t *j, zkl__join_txn_t *t, int64_t deadline) {
  char *data = NULL;
  int rc;
  memset(t, 0, sizeof *t);
  t->c = j->c;
  t->n = j->n;
  if (zkl__cond_init(&t->cv) != ZKL_OK)
    return ZKL_ESYSTEM;
  if ((rc = alloc_waits(j, t)) == ZKL_OK &&
      (rc = make_ops(j, t, &data)) == ZKL_OK) {
    send_all(j, t);
    free_ops(t, j->n, data); /* the C client copied them */
    pthread_mutex_lock(&j->c->mu);
    rc = settle(j, t, answers(j, t), deadline);
    pthread_mutex_unlock(&j->c->mu);
  }
  if (rc != ZKL_OK)
    zkl__join_txn_free(t);
  return rc;
}

void zkl__join_txn_free(zkl__join_txn_t *t) {
  size_t i;
  for (i = 0; i < t->n; i++) {
    free(t->paths[i]);
    zkl__call_free(&t->mk[i]);
    zkl__call_free(&t->ls[i]);
  }
  zkl__call_free(&t->tx);
  zkl__call_free(&t->st);
  free(t->up);
  free(t->w);
  pthread_mutex_lock(&t->c->mu);
  zkl__session_put(t->c, t->s);
  pthread_mutex_unlock(&t->c->mu);
  pthread_cond_destroy(&t->cv);
}

/* ---- after the grants ---------------------------------------------------- */

int zkl__join_still_held(zkl__join_txn_t *t, zkl__acq_t *const *holds) {
  zkl_client_t *c = t->c;
  zkl__call_t st[ZKL_MULTILOCK_MAX], *w[ZKL_MULTILOCK_MAX];
  size_t i;
  int waited = 0, rc = ZKL_OK;
  for (i = 0; i < t->n; i++) {
    const zkl__acq_t *a = holds[i];
    if (atomic_load(&a->state) == ZKL_STATE_LOST || a->tainted || !a->sess)
      rc = ZKL__AGAIN;
    waited |= a->waited;
  }
  if (rc != ZKL_OK || !waited || t->n < 2)
    return rc;
  for (i = 0; i < t->n; i++) {
    zkl__call_init(&st[i], c, &t->cv);
    w[i] = &st[i];
  }
  t->s->refs++;
  pthread_mutex_unlock(&c->mu);
  for (i = 0; i < t->n; i++)
    zkl__exists(&st[i], t->s, t->paths[i]);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(w, (int)t->n);
  for (i = 0; i < t->n; i++) {
    if (st[i].rc == ZOK && zkl__owns_on(holds[i], t->s, &st[i].stat))
      continue;
    if (st[i].rc == ZOK || st[i].rc == ZNONODE)
      zkl__lose(c, holds[i], "deleted by someone else while the set waited");
    rc = ZKL__AGAIN; /* or the connection's trouble: start over */
  }
  zkl__session_put(c, t->s);
  return rc;
}
