/* SPDX-License-Identifier: Apache-2.0 */
/* call.c: the record of one ZooKeeper request (zkl__call_t) and the
 * completions that fill it in.
 *
 * Every request is asynchronous; its completion (on the ZooKeeper completion
 * thread) stores the answer in its zkl__call_t under c->mu, then signals the
 * waiter's condition variable, or runs the call's own function (a step of
 * the engine, or background work that no thread waits for). Nothing here
 * blocks, so completions never stall the completion thread, and a thread
 * may send several requests before waiting: the session's FIFO order
 * pipelines them in one round trip. The requests themselves are sent by
 * request.c (one at a time) and batch.c (writes grouped in a transaction). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_create_nomem, zkl__fault_stat_lost,
    zkl__fault_children_lost;
#define FAULT(f) atomic_exchange(&(f), 0)
#else
#define FAULT(f) 0
#endif

void zkl__call_init(zkl__call_t *call, zkl_client_t *c, pthread_cond_t *cv) {
  memset(call, 0, sizeof *call);
  call->c = c;
  call->cv = cv;
}

void zkl__call_init_fn(zkl__call_t *call, zkl_client_t *c, zkl__call_fn fn,
                       void *ctx) {
  memset(call, 0, sizeof *call);
  call->c = c;
  call->fn = fn;
  call->ctx = ctx;
}

void zkl__call_free(zkl__call_t *call) {
  int i;
  free(call->path);
  free(call->data);
  for (i = 0; i < call->kids.count; i++)
    free(call->kids.data[i]);
  free(call->kids.data);
  call->path = call->data = NULL;
  call->kids.data = NULL;
  call->kids.count = 0;
}

/* Under c->mu: publish the result and wake the waiter, or run the call's
 * function. After this the call may be freed: by the waiter as soon as
 * c->mu is released, by the function at once. */
void zkl__call_finish(zkl__call_t *call, int rc) {
  call->rc = rc;
  call->done = 1;
  if (call->fn)
    call->fn(call);
  else if (!call->left || --*call->left == 0)
    pthread_cond_broadcast(call->cv);
}

void zkl__call_batch(zkl__call_t **calls, int n, int *left) {
  int i;
  *left = n;
  for (i = 0; i < n; i++)
    calls[i]->left = left;
}

/* Counts the request, in all and by kind. When the client refused it outright no completion
 * will come: a waited-for call is done now; a call with a function is
 * left to the caller, which may hold c->mu. */
int zkl__issued(zkl__call_t *call, int kind, int rc) {
  zkl_client_t *c = call->c;
  atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
  zkl__stat_add(&c->stats.requests[kind], 1);
  if (rc != ZOK && !call->fn) {
    pthread_mutex_lock(&c->mu);
    zkl__call_finish(call, rc);
    pthread_mutex_unlock(&c->mu);
  }
  return rc;
}

void zkl__on_create(int rc, const char *value, const struct Stat *stat,
                    const void *data) {
  zkl__call_t *call = (zkl__call_t *)data;
  zkl_client_t *c = call->c;
  pthread_mutex_lock(&c->mu);
  if (rc == ZOK) {
    call->path =
        value && !FAULT(zkl__fault_create_nomem) ? zkl__strdup(value) : NULL;
    if (stat)
      call->stat = *stat;
    /* Created, but we cannot name it: recover it by guid like a lost reply. */
    if (!call->path)
      rc = ZKL_ENOMEM;
  }
  zkl__call_finish(call, rc);
  pthread_mutex_unlock(&c->mu);
}

void zkl__on_children(int rc, const struct String_vector *v,
                      const struct Stat *stat, const void *data) {
  zkl__call_t *call = (zkl__call_t *)data;
  zkl_client_t *c = call->c;
  pthread_mutex_lock(&c->mu);
  if (FAULT(zkl__fault_children_lost))
    rc = ZCONNECTIONLOSS;
  if (rc == ZOK && stat)
    call->stat = *stat; /* the parent's: which incarnation we listed */
  if (rc == ZOK && v && v->count > 0) {
    int i;
    call->kids.data = calloc((size_t)v->count, sizeof(char *));
    if (!call->kids.data)
      rc = ZKL_ENOMEM;
    for (i = 0; rc == ZOK && i < v->count; i++) {
      call->kids.data[i] = zkl__strdup(v->data[i]);
      call->kids.count = i + 1;
      if (!call->kids.data[i])
        rc = ZKL_ENOMEM;
    }
  }
  zkl__call_finish(call, rc);
  pthread_mutex_unlock(&c->mu);
}

void zkl__on_data(int rc, const char *value, int len, const struct Stat *stat,
                  const void *data) {
  zkl__call_t *call = (zkl__call_t *)data;
  zkl_client_t *c = call->c;
  pthread_mutex_lock(&c->mu);
  if (FAULT(zkl__fault_stat_lost))
    rc = ZCONNECTIONLOSS;
  if (rc == ZOK) {
    if (stat)
      call->stat = *stat;
    if (len < 0)
      len = 0;
    call->data = malloc((size_t)len + 1);
    if (!call->data)
      rc = ZKL_ENOMEM;
    else {
      if (len)
        memcpy(call->data, value, (size_t)len);
      call->data[len] = '\0';
      call->data_len = len;
    }
  }
  zkl__call_finish(call, rc);
  pthread_mutex_unlock(&c->mu);
}

void zkl__on_stat(int rc, const struct Stat *stat, const void *data) {
  zkl__call_t *call = (zkl__call_t *)data;
  zkl_client_t *c = call->c;
  pthread_mutex_lock(&c->mu);
  if (FAULT(zkl__fault_stat_lost))
    rc = ZCONNECTIONLOSS;
  if (rc == ZOK && stat)
    call->stat = *stat;
  zkl__call_finish(call, rc);
  pthread_mutex_unlock(&c->mu);
}

void zkl__on_void(int rc, const void *data) {
  zkl__call_t *call = (zkl__call_t *)data;
  zkl_client_t *c = call->c;
  pthread_mutex_lock(&c->mu);
  zkl__call_finish(call, rc);
  pthread_mutex_unlock(&c->mu);
}

/* Debian's 3.8.0 zoo_amulti checks the handle's state op by op, and once
 * one op fails the check (session expired, credentials refused), each later
 * op frees the path left in a stack slot by the op before: one of the
 * caller's paths, freed behind its back, and twice from the third op on.
 * A handle in those states refuses every request anyway, so the refusal
 * is made here, before the client can do that. The state moves there only
 * when a (re)connection's handshake is answered, so the check can be
 * overtaken only if this thread stalls inside the call for that long. */
int zkl__zoo_amulti(zhandle_t *zh, int n, const zoo_op_t *ops,
                    zoo_op_result_t *results, void_completion_t fn,
                    const void *data) {
  if (zoo_state(zh) < 0) /* ZOO_EXPIRED_SESSION_STATE, ZOO_AUTH_FAILED_STATE */
    return ZINVALIDSTATE;
  return zoo_amulti(zh, n, ops, results, fn, data);
}

void zkl__call_wait(zkl__call_t **calls, int n) {
  int i;
  for (i = 0; i < n; i++)
    while (!calls[i]->done)
      pthread_cond_wait(calls[i]->cv, &calls[i]->c->mu);
  for (i = 0; i < n; i++)
    calls[i]->left = NULL; /* the batch counter may die with the caller */
}

/* The request may or may not have been applied, and the session lives
 * on: wait for a connection and look again. ZSESSIONMOVED (an answer from
 * a server our session has left) is one of these: taking it for the end
 * of the session would forget a node that still exists, an orphan that
 * our next node would then queue behind. */
int zkl__is_conn_error(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
         rc == ZSESSIONMOVED;
}
