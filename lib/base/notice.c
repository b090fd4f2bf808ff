/* SPDX-License-Identifier: Apache-2.0 */
/* notice.c: the client's queue of notices: state changes for a recipe's
 * callback, log lines for the hook, and functions to run there (an async
 * acquire's outcome).
 *
 * Watchers and completions run on ZooKeeper's completion thread under c->mu,
 * where no user code may run: they post a notice here, and the event thread
 * (loop.c) delivers it with no lock held; with ZKL_CLIENT_DISPATCH the
 * program's own thread does, in zkl_client_dispatch(), when an eventfd says
 * so. Every layer posts here; this file calls none of them: a notice
 * carries what to call. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* A state change waiting for delivery to a queue's recipe, or (q NULL) a
 * log line for the hook. */
struct zkl__event {
  void (*fn)(void *arg); /* or a function to run there (an async outcome) */
  void *arg;
  zkl__queue_t *q;
  int state;
  uint64_t token;
  int level;
  char *msg;
  struct zkl__event *next;
};

/* ---- logging ------------------------------------------------------------- */

#define FORMAT_OR_RETURN(c, level, fmt, msg)                                   \
  do {                                                                         \
    va_list ap;                                                                \
    if (!(c)->log_fn || (level) > (c)->log_level)                              \
      return;                                                                  \
    va_start(ap, fmt);                                                         \
    vsnprintf(msg, sizeof msg, fmt, ap);                                       \
    va_end(ap);                                                                \
  } while (0)

/* Makes the dispatch descriptor readable (an eventfd counts up). */
static void wake_dispatcher(zkl_client_t *c) {
  uint64_t one = 1;
  if (write(c->dispatch_fd, &one, sizeof one) < 0) {
    /* EAGAIN: the counter is at its maximum, readable already */
  }
}

static void enqueue(zkl_client_t *c, struct zkl__event *ev) {
  if (c->evq_tail)
    c->evq_tail->next = ev;
  else
    c->evq_head = ev;
  c->evq_tail = ev;
  if (c->dispatch_fd >= 0)
    wake_dispatcher(c);
  pthread_cond_broadcast(&c->cv);
}

/* Under c->mu: queue a log line for the hook. */
static void post_line(zkl_client_t *c, int level, const char *msg) {
  struct zkl__event *ev = calloc(1, sizeof *ev);
  if (!ev || !(ev->msg = zkl__strdup(msg))) {
    free(ev);
    return;
  }
  ev->level = level;
  enqueue(c, ev);
}

/* Called with no lock held. */
void zkl__log(zkl_client_t *c, int level, const char *fmt, ...) {
  char msg[512];
  FORMAT_OR_RETURN(c, level, fmt, msg);
  if (c->dispatch_fd < 0) {
    c->log_fn(c->log_ctx, level, msg);
    return;
  }
  /* the program's dispatching thread runs the hook, and only it */
  pthread_mutex_lock(&c->mu);
  post_line(c, level, msg);
  pthread_mutex_unlock(&c->mu);
}

/* Under c->mu, where the hook must not run: the event thread delivers it. */
void zkl__post_log(zkl_client_t *c, int level, const char *fmt, ...) {
  char msg[512];
  FORMAT_OR_RETURN(c, level, fmt, msg);
  post_line(c, level, msg);
}

/* Under c->mu: queue a state change for the recipe's callback. */
void zkl__post_state(zkl_client_t *c, zkl__acq_t *a, int state) {
  struct zkl__event *ev;
  if (!a->q->notify)
    return;
  ev = calloc(1, sizeof *ev);
  if (!ev)
    return; /* the query still answers; only the notification is lost */
  ev->q = a->q;
  ev->state = state;
  ev->token = (uint64_t)a->czxid;
  a->q->cb_refs++;
  enqueue(c, ev);
}

struct zkl__event *zkl__notice_new(void) {
  return calloc(1, sizeof(struct zkl__event));
}

void zkl__post_fn(zkl_client_t *c, struct zkl__event *ev,
                  void (*fn)(void *arg), void *arg) {
  ev->fn = fn;
  ev->arg = arg;
  enqueue(c, ev);
}

int zkl__notice_unpost(zkl_client_t *c, const void *arg) {
  struct zkl__event **pp, *ev, *last = NULL;
  for (pp = &c->evq_head; (ev = *pp); pp = &ev->next) {
    if (ev->fn && ev->arg == arg) {
      *pp = ev->next;
      if (c->evq_tail == ev)
        c->evq_tail = last;
      free(ev);
      return 1;
    }
    last = ev;
  }
  return 0;
}

/* Discard queued events of q (it is being destroyed); under c->mu. */
static void purge_events(zkl_client_t *c, zkl__queue_t *q) {
  struct zkl__event **pp = &c->evq_head, *ev;
  c->evq_tail = NULL;
  while ((ev = *pp)) {
    if (ev->q == q) {
      *pp = ev->next;
      q->cb_refs--;
      free(ev);
    } else {
      c->evq_tail = ev;
      pp = &ev->next;
    }
  }
}

static __thread int delivered_freed;

/* Under c->mu: make sure no callback of q runs now or later, so q can be
 * freed. On the event thread (destroy from q's own callback) the running
 * callback is told not to touch q again. */
void zkl__wait_cb_refs(zkl_client_t *c, zkl__queue_t *q) {
  purge_events(c, q);
  if (zkl__on_event_thread(c)) {
    if (q->cb_refs > 0)
      delivered_freed = 1;
    return;
  }
  while (q->cb_refs > 0)
    pthread_cond_wait(&c->cv, &c->mu);
}

/* ---- delivery ------------------------------------------------------- */

/* Whether the caller runs this client's callbacks (the event thread, or
 * a thread in zkl_client_dispatch()); under c->mu. */
int zkl__on_event_thread(zkl_client_t *c) {
  return (c->ev_running && pthread_equal(pthread_self(), c->ev_thread)) ||
         (c->dispatching && pthread_equal(pthread_self(), c->dispatch_thread));
}

/* Under c->mu: runs the first notice, with c->mu dropped meanwhile. */
void zkl__notice_deliver(zkl_client_t *c) {
  struct zkl__event *ev = c->evq_head;
  c->evq_head = ev->next;
  if (!c->evq_head)
    c->evq_tail = NULL;
  delivered_freed = 0;
  pthread_mutex_unlock(&c->mu);
  if (ev->fn)
    ev->fn(ev->arg);
  else if (ev->q)
    ev->q->notify(ev->q, ev->state, ev->token);
  else
    c->log_fn(c->log_ctx, ev->level, ev->msg);
  pthread_mutex_lock(&c->mu);
  if (ev->q && !delivered_freed)
    ev->q->cb_refs--;
  free(ev->msg);
  free(ev);
  pthread_cond_broadcast(&c->cv);
}

int zkl_client_fd(const zkl_client_t *c) {
  return c && c->dispatch_fd >= 0 ? c->dispatch_fd : ZKL_EINVAL;
}

int zkl_client_dispatch(zkl_client_t *c) {
  struct zkl__event *ev;
  uint64_t count;
  int n = 0, todo = 0;
  if (!c || c->dispatch_fd < 0)
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&c->mu);
  if (zkl__on_event_thread(c)) { /* from a callback: it is running them */
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  while (c->dispatching)
    pthread_cond_wait(&c->cv, &c->mu);
  c->dispatching = 1;
  c->dispatch_thread = pthread_self();
  /* reset the descriptor; what is posted from now on sets it again */
  if (read(c->dispatch_fd, &count, sizeof count) < 0) {
    /* EAGAIN: nothing was posted since the last reset */
  }
  for (ev = c->evq_head; ev; ev = ev->next)
    todo++;
  for (; n < todo && c->evq_head; n++)
    zkl__notice_deliver(c);
  if (c->evq_head)
    wake_dispatcher(c);
  c->dispatching = 0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return n;
}

/* Teardown, once the event thread has stopped: notices never delivered. */
void zkl__events_discard(zkl_client_t *c) {
  while (c->evq_head) {
    struct zkl__event *ev = c->evq_head;
    c->evq_head = ev->next;
    free(ev->msg);
    free(ev);
  }
  c->evq_tail = NULL;
}
