/* SPDX-License-Identifier: Apache-2.0 */
/* batch.c: group commit of a session's writes.
 *
 * An ensemble commits a bounded number of transactions per second, and a
 * zoo_amulti of many operations is one transaction. So the creates of lock
 * nodes and the deletes of every thread of a client are sent alone while
 * none is out, and held back while one is: when the transaction in flight
 * is answered, everything held back leaves as one zoo_amulti. A lone
 * caller waits no longer than before; a busy client commits many nodes
 * per transaction.
 *
 * What it keeps:
 * - Order. Requests of one session reach the server in the order sent. A
 *   held-back write is concurrent with every request issued meanwhile by
 *   others, which nobody has seen answered, so sending it later is one of
 *   the orders the server could have seen anyway. What one caller sends
 *   in a row keeps its order: reads it sends before a write leave first;
 *   a listing that must see its create leaves right behind the
 *   transaction that carries it (zkl__batch_list), so an acquire stays at
 *   one round trip.
 * - A guarded delete (zkl__batch_delete_guarded): the guard (a check or
 *   a setData of the node at a version) and the delete are bound to each
 *   other, and go in one transaction or not at all.
 * - Failure of one op only. A transaction is all or nothing: when one of
 *   its ops fails (a node already deleted, a directory not empty or gone)
 *   that op gets its code and the others are sent again, at the head of
 *   the queue and in their order; the listings behind them are asked again
 *   behind their next transaction. Every round removes the failing op, so
 *   it ends. A transaction whose answer is lost gives every op the
 *   connection error, as a lone request would: the owners find their nodes
 *   by guid, as before.
 * - What a create answers. A create inside a transaction returns its name
 *   but no stat, and an owner needs the czxid (fencing token, ownership).
 *   A node whose name is known beforehand (a flat lock's, a parent, a
 *   queue's first node in a parent made with it) takes a setData of
 *   itself into the same transaction, which writes its data and whose
 *   answer has the stat (with_set): the node is then at data version 1,
 *   which a release's guard checks (release.c). Any other sequential
 *   node's name is not known until it is made, so an exists asks for its
 *   stat as soon as the transaction is answered. (The
 *   parent's pzxid in the listing behind it is it only when no node came
 *   after ours and none was ever deleted there: the server shows cversion
 *   as twice its count of creates minus the children, which is our
 *   sequence number + 1 only then. A lock used twice never passes, so
 *   one exists serves every case.)
 *
 * A write that stays out is nudged (session.c, ZOOKEEPER-4537).
 *
 * Container creates never go in a transaction: Debian's 3.8.0 C client
 * reads a container create's answer in a multi as a plain create's (path
 * only), while the server sends a stat too, and misreads what follows.
 *
 * Locks: s->bmu guards the queue and the count in flight; it is taken
 * under c->mu or alone, never the other way round, and requests are sent
 * under it, so that none is queued behind a send the client refuses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zk/batch.h"

/* jute.maxbuffer (1 MB by default) bounds a request: stay well under */
#define OPS_MAX 256
#define BYTES_MAX (256 * 1024)
#define INFLIGHT_MAX 1

/* ---- answers ------------------------------------------------------------ */

/* A lone write's answer: what waited for it leaves first, so that a
 * caller woken by this answer finds nothing in flight and sends at once. */
static void on_single_create(int rc, const char *value,
                             const struct Stat *stat, const void *data) {
  bop_t *op = (bop_t *)data;
  zkl__batch_done(op->s);
  zkl__on_create(rc, value, stat, op->call);
  bop_free(op);
}

static void on_single_void(int rc, const void *data) {
  bop_t *op = (bop_t *)data;
  zkl__batch_done(op->s);
  zkl__on_void(rc, op->call);
  bop_free(op);
}

/* Whether op's create goes into a transaction with a setData of the same
 * node right behind it (version 0), which writes the node's data: a
 * create inside a zoo_amulti answers no stat, but the setData does, and
 * in the same transaction its czxid is the node's, our own node's for
 * sure. The node is then at data version 1, which no plain create gives:
 * a release can tell it from a node made again at its name (release.c).
 * Only a node whose name is known before it is made: one not sequential
 * (a flat lock's, a parent), or a queue's first node in a parent made
 * in the same transaction (zkl__batch_create_pair); any other sequential
 * one learns its stat by an exists. */
static int with_set(const bop_t *op) {
  return op->kind == BOP_CREATE && op->set_path != NULL;
}

/* The requests op takes in a transaction. */
static int op_width(const bop_t *op) { return 1 + with_set(op); }

/* test_faults: a lock's node made in a transaction, its name not kept */
static int nomem_fault(const bop_t *op) {
#ifdef ZKL_FAULT_INJECTION
  return (op->flags & ZOO_SEQUENCE) &&
         atomic_exchange(&zkl__fault_create_nomem, 0);
#else
  (void)op;
  return 0;
#endif
}

/* Under c->mu: a create made in a transaction, once its czxid is known
 * (or, with_set(), its whole stat). */
static void create_done(bop_t *op, int rc, int64_t czxid) {
  zkl__call_t *call = op->call;
  if (rc == ZOK) {
    memset(&call->stat, 0, sizeof call->stat);
    if (with_set(op))
      call->stat = op->sst;
    call->stat.czxid = czxid;
    if (!with_set(op))
      call->stat.mzxid = czxid;
    call->stat.ephemeralOwner = op->flags & ZOO_EPHEMERAL ? op->s->id : 0;
    if (!(call->path = nomem_fault(op) ? NULL : zkl__strdup(op->out)))
      rc = ZKL_ENOMEM; /* made, but unnamed: found by guid */
  }
  zkl__call_finish(call, rc);
}

/* Under c->mu: op is done with when its stat is in and its listing (if
 * any) answered. */
static void op_release(bop_t *op) {
  if (op->learnt && (!op->rd || op->listed))
    bop_free(op);
}

static void on_stat_learnt(zkl__call_t *st) {
  bop_t *op = st->ctx;
  /* gone already (someone deleted it), or made again by another session
   * (a flat lock's name is everybody's): not the stat of ours, whose
   * owner finds out by guid */
  int ours = st->rc == ZOK && (!(op->flags & ZOO_EPHEMERAL) ||
                               st->stat.ephemeralOwner == op->s->id);
  create_done(op, ours ? ZOK : ZCONNECTIONLOSS, st->stat.czxid);
  op->learnt = 1;
  op_release(op);
}

/* Under c->mu: a create applied in a transaction; asks for its stat. */
static void learn_stat(bop_t *op) {
  zkl__call_init_fn(&op->st, op->call->c, on_stat_learnt, op);
  if (zkl__issued(&op->st, ZKL_STATS_REQ_EXISTS,
                  zoo_aexists(op->s->zh, op->out, 0, zkl__on_stat,
                              &op->st)) != ZOK) {
    create_done(op, ZCONNECTIONLOSS, 0);
    op->learnt = 1;
    op_release(op);
  }
}

static void send_rd(zkl__session_t *s, rd_t *rd);

static void on_after_list(int rc, const struct String_vector *v,
                          const struct Stat *stat, const void *data) {
  rd_t *rd = (rd_t *)data;
  bop_t *op = rd->op;
  zkl__session_t *s = op->s;
  zkl_client_t *c = s->c;
  int redo;
  pthread_mutex_lock(&s->bmu);
  redo = rd->redo > 0;
  if (redo) {
    /* behind the transaction that carries its create now */
    rd->redo = 0;
    rd->next = op->b->rds;
    op->b->rds = rd;
    if (op->b->sent)
      send_rd(s, rd);
  }
  pthread_mutex_unlock(&s->bmu);
  if (redo)
    return;
  zkl__on_children(rc, v, stat, rd->call);
  pthread_mutex_lock(&c->mu);
  op->listed = 1;
  op_release(op);
  pthread_mutex_unlock(&c->mu);
  rd_free(rd);
}

/* Under s->bmu. A listing the client refuses (the handle is closing) is
 * answered by zkl__batch_done, with no lock held, once the transaction
 * ahead of it is answered, as it will be. */
static void send_rd(zkl__session_t *s, rd_t *rd) {
  int rc = zoo_aget_children2(s->zh, rd->path, 0, on_after_list, rd);
  if (rc != ZOK) {
    rd->redo = rc;
    rd->next = s->refused;
    s->refused = rd;
  }
}

/* Codes a transaction gets for one of its ops, not for all of them. */
static int op_error(int rc) {
  return rc == ZNONODE || rc == ZNODEEXISTS || rc == ZNOTEMPTY ||
         rc == ZBADVERSION || rc == ZNOAUTH || rc == ZINVALIDACL ||
         rc == ZNOCHILDRENFOREPHEMERALS || rc == ZBADARGUMENTS;
}

/* Under c->mu: what one op of an answered transaction gets. */
static void op_answered(bop_t *op, int rc) {
  if (op->kind != BOP_CREATE) {
    zkl__call_finish(op->call, rc);
    bop_free(op);
    return;
  }
  if (rc == ZOK && !with_set(op) && !op->probed) {
    learn_stat(op);
    return;
  }
  if (rc == ZOK)
    create_done(op, ZOK, op->sst.czxid);
  else
    zkl__call_finish(op->call, rc);
  op->learnt = 1;
  op_release(op);
}

/* Under s->bmu: puts ops (their neighbour failed) back at the head of
 * the queue as q, a transaction of their own: they were one without the
 * failed op. In the same hold of s->bmu as the marks of on_multi(): a
 * listing asked in between would find its create's op still in the
 * transaction just answered, and go out at once, ahead of the create's
 * resend (model/, F7). */
static void requeue(zkl__session_t *s, batch_t *q, bop_t *again,
                    bop_t **again_tail) {
  bop_t *op;
  q->ops = again;
  q->tail = again_tail;
  for (op = again; op; op = op->next) {
    op->b = q;
    q->n++;
    q->bytes += strlen(op->path) + (size_t)(op->len > 0 ? op->len : 0);
  }
  q->next = s->queued;
  s->queued = q;
}

/* Which op of answered transaction b failed it (its index among the
 * ops, or -1: none, or the whole transaction); marks it, and the ops bound
 * to it. When one failed, *q is the neighbours' next transaction, made
 * here, before s->bmu is taken; with no memory for it they fail too, and
 * none is asked again. */
static int blame(batch_t *b, int rc, batch_t **q) {
  bop_t *op;
  int i, blamed = -1;
  if (op_error(rc))
    for (i = 0; i < b->nz && blamed < 0; i++)
      if (b->res[i].err == rc)
        blamed = i;
  for (op = b->ops; op; op = op->next)
    op->blamed = blamed >= 0 && blamed >= op->zi &&
                 blamed < op->zi + op_width(op);
  /* an op bound to a failed one fails with it, never goes alone */
  for (op = b->ops; op; op = op->next)
    if (op->dep && op->dep->blamed)
      op->forced = rc;
  if (blamed >= 0 && !(*q = batch_new()))
    for (op = b->ops; op; op = op->next)
      if (!op->blamed && !op->forced)
        op->forced = ZKL_ENOMEM;
  return blamed;
}

/* What answered transaction b (its code rc) means for the ops whose
 * stat another op's setData gives (op->probe). */
static void probes_settle(batch_t *b, int rc) {
  bop_t *op;
  for (op = b->ops; op; op = op->next)
    if (op->probe && rc == ZOK) {
      /* one transaction, one zxid: the probe's czxid is ours */
      op->sst.czxid = op->probe->sst.czxid;
      op->probed = 1;
    } else if (op->probe && (op->probe->blamed || op->probe->forced)) {
      op->probe = NULL; /* sent again alone: it asks for its stat */
    }
  for (op = b->ops; op; op = op->next)
    if (op->probe && op->probe->set_path &&
        (op->probe->flags & ZOO_SEQUENCE) && (op->blamed || op->forced)) {
      /* a pair's parent (zkl__batch_create_pair) was there already: its
       * node's name is not known beforehand, and it goes again alone,
       * with its data, at version 0 */
      free(op->probe->set_path);
      op->probe->set_path = NULL;
    }
}

static void on_multi(int rc, const void *data) {
  batch_t *b = (batch_t *)data;
  bop_t *op, *next, *again = NULL, **again_tail = &again;
  bop_t *done = NULL, **done_tail = &done;
  zkl__session_t *s = b->ops->s;
  zkl_client_t *c = s->c;
  batch_t *q = NULL;
  int blamed = blame(b, rc, &q);
  probes_settle(b, rc);
  pthread_mutex_lock(&s->bmu);
  for (op = b->ops; op; op = op->next)
    if (blamed >= 0 && !op->blamed && !op->forced) {
      if (op->rd)
        op->rd->redo = 1;
    } else {
      op->call->bop = NULL; /* answered: a listing asked now goes alone */
    }
  /* the failed op's neighbours go again first, in their order, and
   * everything waiting leaves before the answers wake anyone */
  for (op = b->ops; op; op = next) {
    next = op->next;
    op->next = NULL;
    if (blamed >= 0 && !op->blamed && !op->forced) {
      *again_tail = op;
      again_tail = &op->next;
    } else {
      *done_tail = op;
      done_tail = &op->next;
    }
  }
  if (again)
    requeue(s, q, again, again_tail);
  else if (q)
    batch_free(q);
  pthread_mutex_unlock(&s->bmu);
  zkl__batch_done(s);
  zkl__wake_defer(); /* the waiters this wakes: once c->mu is let go */
  pthread_mutex_lock(&c->mu);
  for (op = done; op; op = next) {
    next = op->next;
    /* the C client wrote the name into op->out */
    if (op->kind == BOP_CREATE && rc == ZOK && !op->out[0]) {
      op_answered(op, ZKL_ENOMEM);
      continue;
    }
    op_answered(op, op->forced ? op->forced : rc);
  }
  pthread_mutex_unlock(&c->mu);
  zkl__wake_flush();
  batch_free(b);
}

/* ---- sending ------------------------------------------------------------ */

/* Under s->bmu: sends b (one op alone, several as a transaction), then the
 * listings behind it. Returns the client's code; on refusal nothing is
 * sent and b is left to the caller. */
static int send_batch(zkl__session_t *s, batch_t *b) {
  bop_t *op;
  rd_t *rd, *next;
  int i, rc;
  free(b->zops);
  free(b->res);
  b->res = NULL;
  for (op = b->ops, b->nz = 0; op; op = op->next)
    b->nz += op_width(op);
  if (!(b->zops = calloc((size_t)b->nz, sizeof *b->zops)) ||
      !(b->res = calloc((size_t)b->nz, sizeof *b->res)))
    return ZSYSTEMERROR;
  for (op = b->ops, i = 0; op; op = op->next) {
    op->zi = i;
    if (op->kind == BOP_DELETE) {
      zoo_delete_op_init(&b->zops[i++], op->path, op->version);
      continue;
    }
    if (op->kind == BOP_CHECK) {
      zoo_check_op_init(&b->zops[i++], op->path, op->version);
      continue;
    }
    if (op->kind == BOP_SET) { /* no data: the node goes right after */
      zoo_set_op_init(&b->zops[i++], op->path, NULL, -1, op->version,
                      &op->sst);
      continue;
    }
    free(op->out);
    op->outlen = (int)strlen(op->path) + 16; /* the sequence's digits */
    if (!(op->out = calloc(1, (size_t)op->outlen)))
      return ZSYSTEMERROR;
    /* with_set: the data goes once, in the setData */
    zoo_create_op_init(&b->zops[i++], op->path, with_set(op) ? NULL : op->data,
                       with_set(op) ? -1 : op->len,
                       op->acl ? op->acl : s->c->acl, op->flags, op->out,
                       op->outlen);
    if (with_set(op))
      zoo_set_op_init(&b->zops[i++], op->set_path, op->data, op->len, 0,
                      &op->sst);
  }
  rc = zkl__zoo_amulti(s->zh, b->nz, b->zops, b->res, on_multi, b);
  if (rc != ZOK)
    return rc;
  zkl__stats_transaction(&s->c->stats, b->nz);
  b->sent = 1;
  /* in the order they were asked */
  for (rd = b->rds, b->rds = NULL; rd; rd = next) {
    next = rd->next;
    rd->next = b->rds;
    b->rds = rd;
  }
  for (rd = b->rds; rd; rd = rd->next)
    send_rd(s, rd);
  return ZOK;
}

/* Under s->bmu: sends op alone. */
static int send_single(zkl__session_t *s, bop_t *op) {
  if (op->kind == BOP_DELETE)
    return zoo_adelete(s->zh, op->path, op->version, on_single_void, op);
  return zoo_acreate2(s->zh, op->path, op->data, op->len,
                      op->acl ? op->acl : s->c->acl, op->flags,
                      on_single_create, op);
}

int zkl__batch_queued(zkl__session_t *s, int *transactions) {
  batch_t *b;
  int n = 0;
  pthread_mutex_lock(&s->bmu);
  *transactions = 0;
  for (b = s->queued; b; b = b->next)
    n += b->n, ++*transactions;
  pthread_mutex_unlock(&s->bmu);
  return n;
}

/* Under s->bmu: sends b, queued until now. Returns the client's code. */
#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_send_refused;
#endif

static int send_queued(zkl__session_t *s, batch_t *b) {
  rd_t *rd;
  int rc, lrc;
#ifdef ZKL_FAULT_INJECTION
  if (atomic_load(&zkl__fault_send_refused) > 0 &&
      atomic_fetch_sub(&zkl__fault_send_refused, 1) == 1)
    return ZSYSTEMERROR;
#endif
  if (b->n != 1 || (b->ops->rd && b->ops->rd->redo))
    return send_batch(s, b);
  /* alone, it needs no transaction, and its create answers its stat; its
   * listing follows it in the session's order */
  rd = b->ops->rd;
  b->ops->call->bop = NULL;
  b->ops->rd = NULL;
  b->rds = NULL;
  rc = send_single(s, b->ops);
  if (rc == ZOK)
    b->ops = NULL;
  if (rd) {
    lrc = rc == ZOK ? zoo_aget_children2(s->zh, rd->path, 0,
                                         zkl__on_children, rd->call)
                    : rc;
    if (lrc != ZOK) { /* answered by zkl__batch_done, with no lock held */
      rd->redo = lrc;
      rd->next = s->refused;
      s->refused = rd;
    } else {
      rd_free(rd);
    }
  }
  return rc;
}

/* What the client refused to send: every op and listing gets its code. */
static void refused_batch(zkl__session_t *s, batch_t *b, int rc) {
  zkl_client_t *c = s->c;
  bop_t *op, *next;
  rd_t *rd;
  /* A listing still out to be asked again behind b (a resend) gets its
   * first answer instead: b goes now, and that answer would find it gone
   * and never be passed on (model/, F8). Its create fails here anyway. */
  pthread_mutex_lock(&s->bmu);
  for (op = b->ops; op; op = op->next)
    if (op->rd && op->rd->redo > 0 && op->rd->op == op)
      op->rd->redo = 0;
  pthread_mutex_unlock(&s->bmu);
  while ((rd = b->rds)) {
    b->rds = rd->next;
    rd->redo = 0;
    on_after_list(rc, NULL, NULL, rd);
  }
  pthread_mutex_lock(&c->mu);
  for (op = b->ops; op; op = next) {
    next = op->next;
    op_answered(op, op->forced ? op->forced : rc);
  }
  pthread_mutex_unlock(&c->mu);
  zkl__wake_flush();
  batch_free(b);
}

void zkl__batch_done(zkl__session_t *s) {
  batch_t *b, *next, *failed = NULL;
  rd_t *refused, *rd;
  int rc;
  pthread_mutex_lock(&s->bmu);
  s->inflight--;
  if (s->inflight < INFLIGHT_MAX) {
    /* everything queued, one transaction after the other; on a closing
     * handle, refused as the C client would refuse it (zk.h, closing) */
    for (b = s->queued, s->queued = NULL; b; b = next) {
      next = b->next;
      b->next = NULL;
      s->inflight++;
      if ((rc = s->closing ? ZINVALIDSTATE : send_queued(s, b)) != ZOK) {
        s->inflight--;
        b->forced_rc = rc;
        b->next = failed;
        failed = b;
      } else if (!b->ops) {
        batch_free(b); /* sent alone */
      }
    }
  }
  /* what is out now left now, or after the answer just in: no earlier */
  s->out_since = s->inflight > 0 ? zkl_now_ms() : 0;
  if (s->out_since)
    s->out_last = s->out_since;
  refused = s->refused;
  s->refused = NULL;
  pthread_mutex_unlock(&s->bmu);
  while ((rd = refused)) {
    refused = rd->next;
    on_after_list(rd->redo, NULL, NULL, rd);
  }
  for (b = failed; b; b = next) {
    next = b->next;
    refused_batch(s, b, b->forced_rc);
  }
}

/* Under s->bmu: the queued transaction op joins. Two creates in one
 * directory never share one: a transaction has one zxid, and their
 * czxids, the lock's fencing tokens, would be equal. */
/* Whether creates a and b are of one lock, and so must not share a
 * transaction: every op of one gets the same zxid, so two nodes of one
 * queue made together would carry one czxid, and two holders one
 * fencing token. A sequential create is a queue's node, and its lock is
 * its directory; any other create (a flat lock's node, ZKL_MUTEX_FLAT) is
 * the lock itself, and only the same path is the same lock: flat locks on
 * many keys of one root commit together. */
static int ops_same_lock(const bop_t *a, const bop_t *b) {
  const char *sa, *sb;
  size_t da, db;
  if (!(a->flags & ZOO_SEQUENCE) || !(b->flags & ZOO_SEQUENCE))
    return strcmp(a->path, b->path) == 0;
  sa = strrchr(a->path, '/'), sb = strrchr(b->path, '/');
  da = sa ? (size_t)(sa - a->path) : 0, db = sb ? (size_t)(sb - b->path) : 0;
  return da == db && strncmp(a->path, b->path, da) == 0;
}

static batch_t *joining(zkl__session_t *s, bop_t *const *ops, int n,
                        size_t bytes) {
  batch_t *b, *last = NULL;
  bop_t *o;
  int i;
  for (b = s->queued; b; b = b->next)
    last = b;
  if (last && (last->n >= OPS_MAX - n || last->bytes + bytes > BYTES_MAX))
    last = NULL, b = NULL;
  for (o = last ? last->ops : NULL; o; o = o->next)
    for (i = 0; i < n && last; i++)
      if (o->kind == BOP_CREATE && ops[i]->kind == BOP_CREATE &&
          ops_same_lock(o, ops[i]))
        last = NULL;
  if (last)
    return last;
  if (!(b = batch_new()))
    return NULL;
  for (last = s->queued; last && last->next; last = last->next)
    ;
  if (last)
    last->next = b;
  else
    s->queued = b;
  return b;
}

/* Under s->bmu: a pair on an idle session (nothing else was queued): its
 * transaction leaves now. Refused, it is the caller's, as a lone write's
 * refusal is. */
static int send_pair(zkl__session_t *s, batch_t *b) {
  bop_t *op, *next;
  int rc;
  s->queued = NULL;
  s->inflight++;
  if ((rc = send_batch(s, b)) == ZOK)
    return ZOK;
  s->inflight--;
  for (op = b->ops; op; op = next) {
    next = op->next;
    op->call->bop = NULL;
    bop_free(op);
  }
  batch_free(b);
  return rc;
}

/* One op goes alone when nothing is out (but a create marked at version
 * 1, which needs its transaction), else as one transaction. */
int zkl__batch_submit(zkl__session_t *s, bop_t *const *ops, int n) {
  batch_t *q;
  bop_t *op = ops[0];
  int rc = ZOK, sent = 0, locked = op->call->fn != NULL, i;
  size_t bytes = 0;
  for (i = 0; i < n; i++)
    bytes += strlen(ops[i]->path) + (size_t)(ops[i]->len > 0 ? ops[i]->len : 0);
  pthread_mutex_lock(&s->bmu);
  /* a create marked at version 1 needs its transaction even alone */
  if (s->inflight < INFLIGHT_MAX && !s->queued && n == 1 && !with_set(op)) {
    s->inflight++;
    if ((rc = send_single(s, op)) != ZOK) {
      s->inflight--;
      bop_free(op);
    }
    sent = rc == ZOK;
  } else if (!(q = joining(s, ops, n, bytes))) {
    for (i = 0; i < n; i++)
      bop_free(ops[i]);
    rc = ZSYSTEMERROR;
  } else {
    for (i = 0; i < n; i++) {
      ops[i]->b = q;
      ops[i]->call->bop = ops[i];
      *q->tail = ops[i];
      q->tail = &ops[i]->next;
      q->n++;
    }
    q->bytes += bytes;
    if (s->inflight < INFLIGHT_MAX)
      sent = (rc = send_pair(s, q)) == ZOK;
  }
  if (sent)
    s->out_since = s->out_last = zkl_now_ms();
  pthread_mutex_unlock(&s->bmu);
  if (sent)
    zkl__session_nudge_timer(s, locked);
  return rc;
}

int zkl__batch_list(zkl__call_t *call, zkl__session_t *s, const char *path,
                    zkl__call_t *create) {
  rd_t *rd;
  bop_t *op;
  pthread_mutex_lock(&s->bmu);
  op = create->bop;
  if (!op || op->s != s) {
    /* sent alone, or answered: the session's order suffices */
    pthread_mutex_unlock(&s->bmu);
    return zoo_aget_children2(s->zh, path, 0, zkl__on_children, call);
  }
  if (!(rd = calloc(1, sizeof *rd)) || !(rd->path = zkl__strdup(path))) {
    pthread_mutex_unlock(&s->bmu);
    free(rd);
    return ZSYSTEMERROR;
  }
  rd->call = call;
  rd->op = op;
  op->rd = rd;
  if (op->b->sent) {
    rd->next = op->b->rds;
    op->b->rds = rd;
    send_rd(s, rd);
  } else {
    rd->next = op->b->rds;
    op->b->rds = rd;
  }
  pthread_mutex_unlock(&s->bmu);
  return ZOK;
}
