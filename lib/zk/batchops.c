/* batchops.c: the ops callers hand to group commit (batch.c), one
 * function each: a create, a delete, a node and its parent made or
 * deleted together, a delete bound to its guard. Each makes its records
 * and submits them; batch.c holds them back, sends and answers them. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zk/batch.h"

static int submit(zkl__session_t *s, bop_t *op, bop_t *op2) {
  bop_t *ops[2] = {op, op2};
  return zkl__batch_submit(s, ops, op2 ? 2 : 1);
}

static bop_t *bop_new(zkl__call_t *call, zkl__session_t *s, int kind,
                      const char *path) {
  bop_t *op = calloc(1, sizeof *op);
  if (!op)
    return NULL;
  op->s = s;
  op->call = call;
  op->kind = kind;
  op->len = -1;
  op->version = -1;
  if (!(op->path = zkl__strdup(path))) {
    free(op);
    return NULL;
  }
  return op;
}

/* op's data: a copy of data[0..len), none for NULL; -1 out of memory */
static int bop_data(bop_t *op, const char *data, int len) {
  if (!data || len < 0)
    return 0;
  if (!(op->data = malloc((size_t)len + 1)))
    return -1;
  memcpy(op->data, data, (size_t)len);
  op->len = len;
  return 0;
}

int zkl__batch_create(zkl__call_t *call, zkl__session_t *s, const char *path,
                      const char *data, int len, int flags,
                      const struct ACL_vector *acl) {
  bop_t *op = bop_new(call, s, BOP_CREATE, path);
  if (!op)
    return ZSYSTEMERROR;
  op->flags = flags;
  op->acl = acl;
  /* a name known beforehand: its transaction marks it (with_set) */
  if (bop_data(op, data, len) != 0 ||
      (!(flags & ZOO_SEQUENCE) && !(op->set_path = zkl__strdup(path)))) {
    bop_free(op);
    return ZSYSTEMERROR;
  }
  return submit(s, op, NULL);
}

int zkl__batch_delete(zkl__call_t *call, zkl__session_t *s, const char *path,
                      int version) {
  bop_t *op = bop_new(call, s, BOP_DELETE, path);
  if (!op)
    return ZSYSTEMERROR;
  op->version = version;
  return submit(s, op, NULL);
}

int zkl__batch_delete_pair(zkl__call_t *call, zkl__call_t *pcall,
                           zkl__session_t *s, const char *path,
                           const char *parent) {
  bop_t *op = bop_new(call, s, BOP_DELETE, path), *op2;
  if (!op)
    return ZSYSTEMERROR;
  if (!(op2 = bop_new(pcall, s, BOP_DELETE, parent))) {
    bop_free(op);
    return ZSYSTEMERROR;
  }
  op2->dep = op;
  return submit(s, op, op2);
}

int zkl__batch_create_pair(zkl__call_t *call, zkl__call_t *pcall,
                           zkl__session_t *s, const char *path,
                           const char *data, int len, int flags,
                           const char *parent) {
  bop_t *op = bop_new(pcall, s, BOP_CREATE, parent), *op2 = NULL;
  if (!op)
    return ZSYSTEMERROR;
  op->flags = 0; /* persistent: a container's answer is misread, above */
  /* In a parent made in the same transaction the node is the first, its
   * sequence 0: its name is known, and its setData marks it and answers
   * the stat (the parent's czxid is the same: one transaction, one zxid).
   * Should the parent be there already, it goes again alone (on_multi). */
  if (bop_data(op, ZKL__DIR_MARK, (int)strlen(ZKL__DIR_MARK)) != 0 ||
      !(op2 = bop_new(call, s, BOP_CREATE, path)) ||
      bop_data(op2, data, len) != 0 ||
      !(op2->set_path = zkl__concat(path, "0000000000"))) {
    bop_free(op);
    if (op2)
      bop_free(op2);
    return ZSYSTEMERROR;
  }
  op2->flags = flags;
  op->dep = op2; /* never a parent alone, with nobody in it */
  op->probe = op2;
  return submit(s, op, op2);
}

int zkl__batch_delete_guarded(zkl__call_t *gcall, zkl__call_t *call,
                              zkl__call_t *pcall, zkl__session_t *s,
                              const char *path, int set, int version,
                              const char *parent) {
  bop_t *ops[3] = {NULL, NULL, NULL};
  int n = parent ? 3 : 2, i;
  if (!(ops[0] = bop_new(gcall, s, set ? BOP_SET : BOP_CHECK, path)) ||
      !(ops[1] = bop_new(call, s, BOP_DELETE, path)) ||
      (parent && !(ops[2] = bop_new(pcall, s, BOP_DELETE, parent)))) {
    for (i = 0; i < 3; i++)
      if (ops[i])
        bop_free(ops[i]);
    return ZSYSTEMERROR;
  }
  ops[0]->version = version;
  /* the delete only with its guard, the guard (a setData) never alone,
   * the parent only with the node */
  ops[1]->dep = ops[0];
  ops[0]->dep = ops[1];
  if (parent)
    ops[2]->dep = ops[1];
  return zkl__batch_submit(s, ops, n);
}

