/* SPDX-License-Identifier: Apache-2.0 */
/* guard.c: writes that commit only while a hold is ours.
 *
 * One transaction (zoo_amulti) on the hold's session: a check of the
 * hold's own node first, the caller's ops after it, and, to commit and
 * release at once, the delete of that node last. The leader applies all
 * of it or none: a hold lost before the commit fails the check, however
 * late the holder sends. The check is of the node's data version as we
 * last found its data intact (acq.c), so that a node whose data someone
 * rewrote meanwhile (a forged "mode=read" lets readers in) commits
 * nothing either: the node is read, and the transaction sent again only
 * if what changed was a revoker's request. The recipes' guarded calls
 * find the hold and keep it alive; everything else is here. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A value no ZooKeeper result carries: a result still holding it was
 * never filled in by an answer. */
#define UNANSWERED 1

/* How many times a transaction is sent again after a hold's data version
 * moved for a revoker's request (each needs another such request). */
#define VERSION_TRIES 3

/* The parts of one transaction, freed together: the checks of the
 * holds' nodes (k of them) first, the caller's ops, then the deletes. */
typedef struct {
  size_t n, k;           /* ops in the transaction; holds checked */
  zoo_op_t *ops;
  zoo_op_result_t *res;
  struct Stat *stats;    /* a set's result */
  char **bufs;           /* a create's path as made; a hold's node */
} txn_t;

static void txn_free(txn_t *t) {
  size_t i;
  for (i = 0; t->bufs && i < t->n; i++)
    free(t->bufs[i]);
  free(t->bufs);
  free(t->ops);
  free(t->res);
  free(t->stats);
}

static int op_ok(const zkl_op_t *o) {
  size_t need;
  if (!o->path || o->path[0] != '/' || (o->data_len && !o->data) ||
      o->data_len > ZKL_GUARD_BYTES_MAX)
    return 0;
  switch (o->type) {
  case ZKL_OP_CREATE:
    if (o->create_flags & ~(unsigned)(ZKL_CREATE_EPHEMERAL |
                                      ZKL_CREATE_SEQUENTIAL))
      return 0;
    need = strlen(o->path) + 1 +
           (o->create_flags & ZKL_CREATE_SEQUENTIAL ? ZKL__SEQ_LEN : 0);
    return !o->created || o->created_size >= need;
  case ZKL_OP_SET:
  case ZKL_OP_DELETE:
  case ZKL_OP_CHECK:
    return o->version >= -1;
  }
  return 0;
}

static int args_ok(const zkl_op_t *ops, size_t n, unsigned flags) {
  size_t i, bytes = 0;
  if ((n && !ops) || n > ZKL_GUARD_OPS_MAX || (flags & ~ZKL_GUARD_RELEASE))
    return 0;
  for (i = 0; i < n; i++) {
    if (!op_ok(&ops[i]))
      return 0;
    bytes += strlen(ops[i].path) + ops[i].data_len;
  }
  return bytes <= ZKL_GUARD_BYTES_MAX;
}

static int build(txn_t *t, const zkl_client_t *c, zkl__acq_t *const *holds,
                 size_t nh, const zkl_op_t *ops, size_t n, int release) {
  size_t i, k, total = n + nh * (release ? 2 : 1);
  if (!(t->ops = calloc(total, sizeof *t->ops)) ||
      !(t->res = calloc(total, sizeof *t->res)) ||
      !(t->stats = calloc(total, sizeof *t->stats)) ||
      !(t->bufs = calloc(total, sizeof *t->bufs)))
    return ZKL_ENOMEM;
  t->n = total;
  t->k = nh;
  for (k = 0; k < nh; k++) {
    if (!(t->bufs[k] = zkl__strdup(holds[k]->path)))
      return ZKL_ENOMEM;
    zoo_check_op_init(&t->ops[k], t->bufs[k], holds[k]->dversion);
  }
  for (i = 0; i < n; i++, k++) {
    const zkl_op_t *o = &ops[i];
    const char *d = o->data;
    int len = d ? (int)o->data_len : -1;
    switch (o->type) {
    case ZKL_OP_CREATE: {
      size_t size = strlen(o->path) + ZKL__SEQ_LEN + 1;
      int mode = (o->create_flags & ZKL_CREATE_EPHEMERAL ? ZOO_EPHEMERAL : 0) |
                 (o->create_flags & ZKL_CREATE_SEQUENTIAL ? ZOO_SEQUENCE : 0);
      if (!(t->bufs[k] = calloc(1, size)))
        return ZKL_ENOMEM;
      zoo_create_op_init(&t->ops[k], o->path, d, len, c->acl, mode,
                         t->bufs[k], (int)size);
      break;
    }
    case ZKL_OP_SET:
      zoo_set_op_init(&t->ops[k], o->path, d, len, o->version,
                      &t->stats[k]);
      break;
    case ZKL_OP_DELETE:
      zoo_delete_op_init(&t->ops[k], o->path, o->version);
      break;
    default:
      zoo_check_op_init(&t->ops[k], o->path, o->version);
      break;
    }
  }
  for (i = 0; release && i < nh; i++, k++)
    zoo_delete_op_init(&t->ops[k], t->bufs[i], -1);
  for (k = 0; k < total; k++)
    t->res[k].err = UNANSWERED;
  return ZKL_OK;
}

/* The caller's view of an answered transaction; under c->mu. */
static int judge(zkl_client_t *c, zkl__acq_t *const *holds, const txn_t *t,
                 zkl_op_t *ops, size_t n, int rc, int release) {
  int answered = t->res[0].err != UNANSWERED, lost = 0;
  size_t i, k = t->k;
  if (rc == ZOK) {
    for (i = 0; i < n; i++) {
      ops[i].rc = ZOK;
      if (ops[i].type == ZKL_OP_SET)
        ops[i].new_version = t->stats[k + i].version;
      if (ops[i].type == ZKL_OP_CREATE && ops[i].created)
        memcpy(ops[i].created, t->bufs[k + i], strlen(t->bufs[k + i]) + 1);
    }
    for (i = 0; release && i < k; i++) {
      /* gone by our hand: the release has nothing to delete */
      zkl__went_del(c, &holds[i]->own_went);
      free(holds[i]->path);
      holds[i]->path = NULL;
    }
    return ZKL_OK;
  }
  for (i = 0; i < n; i++)
    ops[i].rc = answered ? t->res[k + i].err : rc;
  for (i = 0; answered && i < k; i++)
    if (t->res[i].err == ZNONODE) {
      zkl__lose(c, holds[i],
                "deleted by someone else (a guarded write found it gone)");
      lost = 1;
    }
  for (i = 0; !lost && i < k &&
              (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING);
       i++)
    zkl__lose(c, holds[i], "session expired");
  if (lost || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING)
    return ZKL_ELOST;
  /* Refused for one of the caller's ops: our nodes stood. A watch event
   * on them that came meanwhile was passed over (self_delete): look
   * again. */
  for (i = 0; answered && release && i < k; i++)
    if (holds[i]->own_watch == ZKL__OWN_OK && holds[i]->sess)
      zkl__watch_own(c, holds[i]->sess, holds[i]);
  for (i = 0; answered && i < t->n; i++)
    if (t->res[i].err != ZOK && t->res[i].err != ZRUNTIMEINCONSISTENCY)
      return t->res[i].err;
  return rc;
}

/* Whether every hold stands on session s (under c->mu): all on one
 * session, as the transaction's checks demand, the client's. A hold on
 * another, or on none, is lost, and only that one: ZKL_ELOST. */
static int holds_usable(zkl_client_t *c, zkl__acq_t *const *holds, size_t nh,
                        const zkl__session_t *s) {
  int rc = ZKL_OK;
  size_t i;
  for (i = 0; i < nh; i++) {
    zkl__acq_t *a = holds[i];
    if (atomic_load(&a->state) == ZKL_STATE_LOST || !a->sess || !a->path ||
        a->sess->expired || a->sess != s) {
      zkl__lose(c, a, "session expired");
      rc = ZKL_ELOST;
    }
  }
  return rc;
}

/* The first hold whose check failed for its data version, or -1. */
static int moved(const txn_t *t, int rc) {
  size_t i;
  if (rc != ZBADVERSION)
    return -1;
  for (i = 0; i < t->k; i++)
    if (t->res[i].err == ZBADVERSION)
      return (int)i;
  return -1;
}

int zkl__guarded(zkl__acq_t *const *holds, size_t nh, zkl_op_t *ops,
                 size_t n, unsigned flags) {
  zkl_client_t *c = holds[0]->q->c;
  zkl__session_t *s = NULL;
  zkl__call_t call, *ptrs[1] = {&call};
  txn_t t;
  size_t i;
  int rc, release = (flags & ZKL_GUARD_RELEASE) != 0, tries = 0, h;
  if (!args_ok(ops, n, flags))
    return ZKL_EINVAL;
again:
  memset(&t, 0, sizeof t);
  pthread_mutex_lock(&c->mu);
  s = c->sess;
  rc = holds_usable(c, holds, nh, s);
  if (rc == ZKL_OK && c->state != ZKL_CLIENT_CONNECTED)
    rc = ZCONNECTIONLOSS; /* nothing sent: it would wait for a server */
  if (rc == ZKL_OK)
    rc = build(&t, c, holds, nh, ops, n, release);
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&c->mu);
    txn_free(&t);
    return rc;
  }
  s->refs++;
  for (i = 0; i < nh; i++)
    holds[i]->self_delete = release;
  zkl__call_init(&call, c, &holds[0]->cv);
  pthread_mutex_unlock(&c->mu);
  zkl__multi(&call, s, (int)t.n, t.ops, t.res);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs, 1);
  for (i = 0; i < nh; i++)
    holds[i]->self_delete = 0;
  if ((h = moved(&t, call.rc)) >= 0 && tries++ < VERSION_TRIES) {
    /* its data changed: a revoker's request, or a forgery that ends the
     * hold (the read tells, and takes the hold's version) */
    zkl__session_put(c, s);
    pthread_mutex_unlock(&c->mu);
    txn_free(&t);
    rc = zkl__queue_verify(holds[h]->q, holds[h]);
    if (rc == ZKL_OK)
      goto again;
    for (i = 0; i < n; i++)
      ops[i].rc = ZRUNTIMEINCONSISTENCY;
    return rc == ZKL_EREVOKED ? ZKL_ELOST : rc;
  }
  rc = judge(c, holds, &t, ops, n, call.rc, release);
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
  txn_free(&t);
  return rc;
}
