/* SPDX-License-Identifier: Apache-2.0 */
/* queue.c: the queue object every recipe embeds: its directory, the
 * prefix and markers of its nodes, what its nodes carry; and cancel and
 * close. Its acquisitions run in run.c. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Most planted nodes one queue object remembers; past that, a queue full
 * of them is an attack we report instead of growing without bound. */
#define IGNORED_MAX 1024

static void queue_fini(zkl__queue_t *q);

static int queue_init(zkl__queue_t *q, zkl_client_t *c,
                      const zkl__queue_spec_t *sp) {
  memset(q, 0, sizeof *q);
  q->c = c;
  q->marker = sp->marker;
  q->marker_shared = sp->marker_shared;
  q->flags = sp->flags;
  q->limit = sp->limit;
  q->recipe = sp->recipe;
  q->notify = sp->notify;
  q->dir = zkl__child(sp->root, sp->name);
  q->prefix = q->dir ? zkl__concat(q->dir, "/") : NULL;
  if (sp->len && (q->user_data = malloc(sp->len)))
    memcpy(q->user_data, sp->data, sp->len);
  q->user_len = sp->len;
  if (sp->id)
    q->id = zkl__strdup(sp->id);
  if (sp->limit) /* "max=N" (nodedata.c); the recipe checked N's range */
    q->dir_data = zkl__dir_data(sp->limit);
  if (!q->dir || !q->prefix || (sp->len && !q->user_data) ||
      (sp->id && !q->id) || (sp->limit && !q->dir_data)) {
    queue_fini(q);
    return ZKL_ENOMEM;
  }
  return ZKL_OK;
}

static void queue_fini(zkl__queue_t *q) {
  int i;
  for (i = 0; i < q->nignored; i++)
    free(q->ignored[i]);
  free(q->ignored);
  q->ignored = NULL;
  q->nignored = 0;
  free(q->id);
  q->id = NULL;
  free(q->dir_data);
  q->dir_data = NULL;
  free(q->dir);
  free(q->prefix);
  free(q->user_data);
  q->dir = q->prefix = NULL;
  q->user_data = NULL;
}

int zkl__queue_open(zkl__queue_t *q, zkl_client_t *c,
                    const zkl__queue_spec_t *spec, void *handle) {
  int rc = queue_init(q, c, spec);
  if (rc != ZKL_OK)
    return rc;
  pthread_mutex_lock(&c->mu);
  rc = c->stopping ? ZKL_ECLOSED : ZKL_OK;
  if (rc == ZKL_OK)
    c->nqueues++;
  pthread_mutex_unlock(&c->mu);
  if (rc == ZKL_OK && (rc = zkl__handle_add(handle)) != ZKL_OK) {
    pthread_mutex_lock(&c->mu);
    c->nqueues--;
    pthread_mutex_unlock(&c->mu);
  }
  if (rc != ZKL_OK)
    queue_fini(q);
  return rc;
}

void zkl__queue_close(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  pthread_mutex_lock(&c->mu);
  while (q->async_refs > 0) /* cancelled runs still answering */
    pthread_cond_wait(&c->cv, &c->mu);
  zkl__wait_cb_refs(c, q);
  zkl__tidy_dir(q);
  c->nqueues--;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  queue_fini(q);
}

void zkl__queue_cancel(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  zkl__acq_t *a;
  pthread_mutex_lock(&c->mu);
  q->cancel_gen++;
  for (a = c->acqs; a; a = a->next)
    if (a->q == q) {
      zkl__kick(a);
      pthread_cond_broadcast(&a->cv); /* a caller waiting on an answer */
    }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* ---- planted nodes --------------------------------------------------- */

/* Records a child that is not ephemeral: planted by an operator, a backup
 * restore or an attacker, it will never go by itself. Once per name. */
int zkl__ignore(zkl__queue_t *q, const char *name) {
  char **n;
  int i;
  for (i = 0; i < q->nignored; i++)
    if (strcmp(q->ignored[i], name) == 0)
      return ZKL_OK;
  if (q->nignored >= IGNORED_MAX)
    return ZKL_EPROTO;
  n = realloc(q->ignored, (size_t)(q->nignored + 1) * sizeof *n);
  if (!n)
    return ZKL_ENOMEM;
  q->ignored = n;
  if (!(n[q->nignored] = zkl__strdup(name)))
    return ZKL_ENOMEM;
  q->nignored++;
  zkl__post_log(q->c, ZKL_LOG_WARN,
                "%s/%s: not ephemeral (planted?): not waiting behind it",
                q->dir, name);
  return ZKL_OK;
}

/* Whether name is one of the planted children recorded by zkl__ignore. */
int zkl__ignored(const zkl__queue_t *q, const char *name) {
  int i;
  for (i = 0; i < q->nignored; i++)
    if (strcmp(q->ignored[i], name) == 0)
      return 1;
  return 0;
}
