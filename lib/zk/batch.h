/* batch.h: group commit's own records (batch.c), shared by the files of
 * lib/zk/ that make them (batchops.c: the ops callers hand over) and send
 * and answer them (batch.c). Nothing else includes it. */
#ifndef ZKLOCK_ZK_BATCH_H
#define ZKLOCK_ZK_BATCH_H

#include <stdlib.h>

#include "internal.h"

/* A guard (BOP_CHECK, BOP_SET) goes only in a transaction, bound to the
 * delete it guards (zkl__batch_delete_guarded). */
enum { BOP_CREATE, BOP_DELETE, BOP_CHECK, BOP_SET };

typedef struct zkl__bop bop_t;
typedef struct rd rd_t;

struct rd {
  zkl__call_t *call;
  bop_t *op;
  char *path;
  int redo; /* its create was sent again: ask again behind it; once
             * refused, the client's code */
  rd_t *next;
};

struct zkl__bop {
  zkl__session_t *s;
  zkl__call_t *call;
  int kind, flags, len;
  /* a delete's, a guard's: the node's data version, or -1 (any) */
  int version;
  const struct ACL_vector *acl; /* a create's: NULL is the client's */
  /* A create's setData in its transaction, of the node made (see with_set):
   * its path, which for a sequential node is the name it surely gets */
  char *set_path;
  char *path, *data;
  char *out; /* create: the name made */
  int outlen;
  struct zkl__batch *b; /* the transaction it waits for or is in */
  rd_t *rd;             /* its listing, if any */
  int listed;           /* the listing's answer is in */
  int learnt;           /* its stat is in (or it failed) */
  int zi;               /* its (first) op's index in the transaction */
  struct Stat sst;      /* with_set(): the setData's answer */
  zkl__call_t st;       /* that exists */
  bop_t *dep;           /* applied only with this one, in its transaction */
  /* The op whose setData's stat, in the same transaction, gives this
   * op's czxid: a pair's node, for its parent (zkl__batch_create_pair);
   * and whether it did (probed) */
  bop_t *probe;
  int probed;
  int blamed;           /* the op its transaction failed for */
  int forced;           /* its answer, its dep having failed */
  bop_t *next;
};

typedef struct zkl__batch {
  struct zkl__batch *next; /* queued behind this one */
  bop_t *ops, **tail;
  int n;                /* ops */
  int nz;               /* requests in the transaction (with_set: 2) */
  size_t bytes;
  rd_t *rds;
  int sent;
  int forced_rc; /* refused: the client's code */
  zoo_op_t *zops;
  zoo_op_result_t *res;
} batch_t;

static inline void bop_free(bop_t *op) {
  free(op->path);
  free(op->set_path);
  free(op->data);
  free(op->out);
  free(op);
}

static inline void rd_free(rd_t *rd) {
  free(rd->path);
  free(rd);
}

static inline batch_t *batch_new(void) {
  batch_t *b = calloc(1, sizeof *b);
  if (b)
    b->tail = &b->ops;
  return b;
}

static inline void batch_free(batch_t *b) {
  free(b->zops);
  free(b->res);
  free(b);
}

/* batch.c: queues ops[0..n) (bound to each other when n > 1) behind the
 * transaction in flight, or sends them now; refused, or out of memory,
 * every op is freed. The client's code. */
ZKL__HIDDEN int zkl__batch_submit(zkl__session_t *s, bop_t *const *ops, int n);

#endif
