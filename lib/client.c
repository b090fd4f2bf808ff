/* client.c: the ZooKeeper session, its state, and the client's event thread.
 *
 * Threads that touch a client:
 *  - user threads, which send requests and wait on condition variables;
 *  - ZooKeeper's completion thread, which runs our watchers and completions:
 *    they only update state under c->mu and signal, never block or call the
 *    user;
 *  - the client's event thread, which runs user callbacks (with no lock
 *    held), replaces an expired session, closes dead ZooKeeper handles,
 *    finishes deletes that could not reach the server (deferred.c), and
 *    declares holds LOST when the connection has been down too long. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAGIC_CLIENT 0x7a6b6c63u

_Atomic unsigned zkl__fork_gen;

static void in_child(void) {
  atomic_fetch_add_explicit(&zkl__fork_gen, 1, memory_order_relaxed);
}

static void watch_forks(void) { pthread_atfork(NULL, NULL, in_child); }

void zkl__fork_watch(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, watch_forks);
}

/* A state change waiting for delivery to a queue's recipe, or (q NULL) a
 * log line for the hook. */
struct zkl__event {
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

void zkl__log(zkl_client_t *c, int level, const char *fmt, ...) {
  char msg[512];
  FORMAT_OR_RETURN(c, level, fmt, msg);
  c->log_fn(c->log_ctx, level, msg);
}

static void enqueue(zkl_client_t *c, struct zkl__event *ev) {
  if (c->evq_tail)
    c->evq_tail->next = ev;
  else
    c->evq_head = ev;
  c->evq_tail = ev;
  pthread_cond_broadcast(&c->cv);
}

/* Under c->mu, where the hook must not run: the event thread delivers it. */
void zkl__post_log(zkl_client_t *c, int level, const char *fmt, ...) {
  struct zkl__event *ev;
  char msg[512];
  FORMAT_OR_RETURN(c, level, fmt, msg);
  ev = calloc(1, sizeof *ev);
  if (!ev || !(ev->msg = zkl__strdup(msg))) {
    free(ev);
    return;
  }
  ev->level = level;
  enqueue(c, ev);
}

/* ZooKeeper's own log lines have no context pointer to route them to a
 * client's hook, and the library must not write to stderr: drop them. */
static void zk_log_sink(const char *msg) { (void)msg; }

/* ---- sessions ------------------------------------------------------------ */

zkl__session_t *zkl__session_get(zkl_client_t *c) {
  c->sess->refs++;
  return c->sess;
}

void zkl__session_put(zkl_client_t *c, zkl__session_t *s) {
  if (s && --s->refs == 0) {
    s->next_dead = c->dead;
    c->dead = s;
    pthread_cond_broadcast(&c->cv);
  }
}

int zkl__on_event_thread(zkl_client_t *c) {
  return c->ev_running && pthread_equal(pthread_self(), c->ev_thread);
}

/* Under c->mu: wait until requests on the current session can succeed: the
 * client is connected, and either a new connection was made since `epoch`
 * (the one a request failed on) or the session `old` was replaced. */
int zkl__wait_usable(zkl_client_t *c, zkl__session_t *old, uint64_t epoch,
                     int64_t deadline_ms) {
  struct timespec ts;
  zkl__deadline_ts(deadline_ms, &ts);
  while (!(c->state == ZKL_CLIENT_CONNECTED &&
           (c->conn_epoch != epoch || c->sess != old))) {
    if (c->stopping)
      return ZKL_ECLOSED;
    if (c->auth_failed)
      return ZKL_EAUTH;
    if (deadline_ms < 0)
      pthread_cond_wait(&c->cv, &c->mu);
    else if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT &&
             zkl_now_ms() >= deadline_ms)
      return ZKL_ETIMEDOUT;
  }
  return ZKL_OK;
}

/* ---- acquisitions and their state ---------------------------------------- */

void zkl__acq_link(zkl_client_t *c, zkl__acq_t *a) {
  a->id = ++c->next_id;
  a->prev = NULL;
  a->next = c->acqs;
  if (c->acqs)
    c->acqs->prev = a;
  c->acqs = a;
}

void zkl__acq_unlink(zkl_client_t *c, zkl__acq_t *a) {
  if (a->prev)
    a->prev->next = a->next;
  else if (c->acqs == a)
    c->acqs = a->next;
  if (a->next)
    a->next->prev = a->prev;
  a->prev = a->next = NULL;
}

static zkl__acq_t *acq_by_id(zkl_client_t *c, uint64_t id) {
  zkl__acq_t *a;
  for (a = c->acqs; a; a = a->next)
    if (a->id == id)
      return a;
  return NULL;
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

void zkl__set_state(zkl_client_t *c, zkl__acq_t *a, int state) {
  if (atomic_load_explicit(&a->state, memory_order_relaxed) == state)
    return;
  atomic_store_explicit(&a->state, state, memory_order_release);
  zkl__post_state(c, a, state);
}

static int is_hold(const zkl__acq_t *a) {
  int st = atomic_load_explicit(&a->state, memory_order_relaxed);
  return st == ZKL_STATE_HELD || st == ZKL_STATE_AT_RISK;
}

/* Under c->mu: the hold is gone for good. Its session reference is dropped
 * at once so that an expired handle can be closed. */
static void lose(zkl_client_t *c, zkl__acq_t *a) {
  zkl__set_state(c, a, ZKL_STATE_LOST);
  zkl__session_put(c, a->sess);
  a->sess = NULL;
}

int zkl__owns_on(const zkl__acq_t *a, const zkl__session_t *s,
                 const struct Stat *st) {
  return s && st->czxid == a->czxid && st->ephemeralOwner == s->id;
}

int zkl__owns(const zkl__acq_t *a, const struct Stat *st) {
  return zkl__owns_on(a, a->sess, st);
}

void zkl__lose(zkl_client_t *c, zkl__acq_t *a, const char *why) {
  if (!is_hold(a))
    return;
  zkl__post_log(c, ZKL_LOG_WARN, "%s: %s: LOST", a->path ? a->path : a->q->dir,
                why);
  lose(c, a);
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

/* ---- watchers ------------------------------------------------------------ */

struct verify {
  zkl_client_t *c;
  uint64_t id;
  zkl__session_t *s;
  int64_t czxid; /* of the node asked about: a may have another by now */
};

/* The read of our own node (with its watch) answered: a hold is HELD if
 * the node is still ours, else LOST; a waiter whose node is gone or not
 * ours stops waiting (ZKL_EREVOKED). */
static void on_verified(int rc, const char *value, int len,
                        const struct Stat *stat, const void *data) {
  struct verify *v = (struct verify *)data;
  zkl_client_t *c = v->c;
  zkl__acq_t *a;
  (void)value, (void)len;
  pthread_mutex_lock(&c->mu);
  a = acq_by_id(c, v->id);
  if (a && a->path && a->sess == v->s && a->czxid == v->czxid) {
    int mine = rc == ZOK && stat && zkl__owns(a, stat);
    int gone = rc == ZNONODE || (rc == ZOK && !mine);
    if (mine && a->own_watch == ZKL__OWN_PENDING &&
        !(a->q->flags & ZKL__Q_NO_NODE_WATCH))
      a->own_watch = ZKL__OWN_OK;
    if (!mine && a->own_watch == ZKL__OWN_PENDING)
      a->own_watch = ZKL__OWN_NONE;
    if (is_hold(a)) {
      if (mine && c->state == ZKL_CLIENT_CONNECTED)
        zkl__set_state(c, a, ZKL_STATE_HELD);
      else if (gone)
        zkl__lose(c, a, rc == ZNONODE ? "deleted by someone else"
                                      : "replaced by someone else's node");
    } else if (gone) {
      a->revoked = 1;
      pthread_cond_broadcast(&a->cv);
    }
  }
  zkl__session_put(c, v->s);
  pthread_mutex_unlock(&c->mu);
  free(v);
}

void zkl__watch_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a) {
  struct verify *v = malloc(sizeof *v);
  if (!v)
    return;
  v->c = c;
  v->id = a->id;
  v->s = s;
  v->czxid = a->czxid;
  s->refs++;
  a->own_watch = ZKL__OWN_PENDING;
  atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
  if (zoo_awget(s->zh, a->path,
                (a->q->flags & ZKL__Q_NO_NODE_WATCH) ? NULL : zkl__path_watcher,
                c, on_verified, v) != ZOK) {
    a->own_watch = ZKL__OWN_NONE;
    s->refs--; /* others hold s: it cannot drop to 0 here */
    free(v);
  }
}

static void verify_hold(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a) {
  zkl__watch_own(c, s, a);
}

static void verify_holds(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  for (a = c->acqs; a; a = a->next)
    if (a->sess == s && is_hold(a) && a->path) {
      a->watch_due = 0; /* the verification re-arms the watch */
      verify_hold(c, s, a);
    }
}

void zkl__schedule_node_watch(zkl_client_t *c, zkl__acq_t *a) {
  if ((a->q->flags & ZKL__Q_NO_NODE_WATCH) || a->own_watch != ZKL__OWN_NONE)
    return; /* a waiter's watch on its own node carries over to the hold */
  a->watch_due = zkl_now_ms() + ZKL__NODE_WATCH_DELAY_MS;
  /* Waking the event thread on every acquire costs a context switch and a
   * fight for c->mu per cycle; if it already sleeps until no later than
   * this hold's due time, it will find the hold then. */
  if (!c->ev_wake_at || c->ev_wake_at > a->watch_due)
    pthread_cond_broadcast(&c->cv);
}

/* Event thread, under c->mu: watch the nodes of holds that have lasted
 * long enough; returns when the next one is due (0: none). */
static int64_t watch_due_holds(zkl_client_t *c) {
  int64_t now = zkl_now_ms(), next = 0;
  zkl__acq_t *a;
  if (c->state != ZKL_CLIENT_CONNECTED)
    return 0; /* reconnection verifies and watches every hold */
  for (a = c->acqs; a; a = a->next) {
    if (!a->watch_due || !is_hold(a) || !a->path || a->sess != c->sess)
      continue;
    if (a->watch_due <= now) {
      a->watch_due = 0;
      verify_hold(c, a->sess, a);
    } else if (!next || a->watch_due < next) {
      next = a->watch_due;
    }
  }
  return next;
}

static void on_connected(zkl_client_t *c, zkl__session_t *s) {
  if (c->state == ZKL_CLIENT_CONNECTED)
    return;
  c->state = ZKL_CLIENT_CONNECTED;
  c->conn_epoch++;
  c->disconnected_at = 0;
  c->timeout_neg = zoo_recv_timeout(s->zh);
  atomic_store(&c->session_id, s->id);
  zkl__post_log(c, ZKL_LOG_INFO, "connected: session 0x%llx, timeout %d ms",
                (unsigned long long)s->id, c->timeout_neg);
  verify_holds(c, s);
}

static void on_disconnected(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  if (c->state != ZKL_CLIENT_CONNECTED)
    return;
  c->state = ZKL_CLIENT_CONNECTING;
  c->disconnected_at = zkl_now_ms();
  zkl__post_log(c, ZKL_LOG_WARN, "disconnected: holds are AT_RISK");
  for (a = c->acqs; a; a = a->next) {
    if (a->sess != s || atomic_load_explicit(&a->state, memory_order_relaxed) !=
                            ZKL_STATE_HELD)
      continue;
    if (a->q->flags & ZKL__Q_LOSE_ON_DISCONNECT) {
      if (a->path)
        zkl__defer_delete(c, s, a->path); /* gone once reconnected */
      lose(c, a);
    } else {
      zkl__set_state(c, a, ZKL_STATE_AT_RISK);
    }
  }
}

static void on_expired(zkl_client_t *c, zkl__session_t *s) {
  zkl__acq_t *a;
  c->state = c->auth_failed ? ZKL_CLIENT_AUTH_FAILED : ZKL_CLIENT_EXPIRED;
  c->disconnected_at = 0;
  if (c->auth_failed)
    zkl__post_log(c, ZKL_LOG_ERROR,
                  "authentication (scheme %s) rejected by the ensemble: "
                  "holds LOST, no new session will be made",
                  c->auth_scheme);
  else
    zkl__post_log(c, ZKL_LOG_WARN,
                  "session 0x%llx expired: holds LOST, making a new session",
                  (unsigned long long)s->id);
  atomic_store(&c->session_id, 0);
  for (a = c->acqs; a; a = a->next) {
    if (a->sess != s)
      continue;
    if (is_hold(a))
      lose(c, a);
    else {
      a->session_lost = 1;
      pthread_cond_broadcast(&a->cv);
    }
  }
  /* New sessions with credentials the ensemble rejects would only be
   * rejected again, as fast as we could make them. */
  c->need_session = !c->auth_failed;
}

/* Applies a session's ZooKeeper state to the client; under c->mu. */
static void apply_state(zkl_client_t *c, zkl__session_t *s, int zstate) {
  if (zstate == ZOO_AUTH_FAILED_STATE)
    c->auth_failed = 1;
  if (zstate == ZOO_CONNECTED_STATE)
    on_connected(c, s);
  else if (zstate == ZOO_EXPIRED_SESSION_STATE ||
           zstate == ZOO_AUTH_FAILED_STATE)
    on_expired(c, s);
  else
    on_disconnected(c, s);
  atomic_store(&c->pub_state, c->state);
  pthread_cond_broadcast(&c->cv);
}

/* Session events of one handle; its context is the session, so an event
 * that arrives before the session is installed as current is still kept
 * (in s->zstate) and applied when it is. */
static void session_watcher(zhandle_t *zh, int type, int state,
                            const char *path, void *ctx) {
  zkl__session_t *s = ctx;
  zkl_client_t *c = s->c;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&c->mu);
  s->zstate = state;
  if (state == ZOO_CONNECTED_STATE) {
    const clientid_t *id = zoo_client_id(zh);
    s->id = id ? id->client_id : 0;
  }
  if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
    s->expired = 1;
  if (s == c->sess)
    apply_state(c, s, state);
  pthread_mutex_unlock(&c->mu);
}

/* An event on our own node: the watch is spent. Deleted: a hold is LOST
 * and a wait is revoked. Anything else (its data rewritten, or a delete
 * and re-create we missed while disconnected): watch again, and judge the
 * node by its creation zxid and owner, so a node re-created under our
 * name by someone else is never taken for ours. */
static void own_event(zkl_client_t *c, zkl__acq_t *a, int type) {
  a->own_watch = ZKL__OWN_NONE;
  if (type == ZOO_DELETED_EVENT) {
    if (is_hold(a)) {
      zkl__lose(c, a, "deleted by someone else");
    } else if (atomic_load_explicit(&a->state, memory_order_relaxed) ==
               ZKL_STATE_NONE) {
      a->revoked = 1;
      pthread_cond_broadcast(&a->cv);
    }
  } else if (a->sess && !a->sess->expired &&
             atomic_load_explicit(&a->state, memory_order_relaxed) !=
                 ZKL_STATE_LOST) {
    zkl__watch_own(c, a->sess, a);
  }
}

/* Node events for every path we watch. The C client also hands session
 * events to each path watcher: those are ignored here (session_watcher has
 * them), and so is any event on a path nobody waits on any more. */
void zkl__path_watcher(zhandle_t *zh, int type, int state, const char *path,
                       void *ctx) {
  zkl_client_t *c = ctx;
  zkl__acq_t *a;
  int i;
  (void)state;
  if (type == ZOO_SESSION_EVENT || !path)
    return;
  pthread_mutex_lock(&c->mu);
  for (a = c->acqs; a; a = a->next) {
    if (!a->sess || a->sess->zh != zh)
      continue;
    for (i = 0; i < a->nwatch; i++)
      if (strcmp(a->watch[i], path) == 0) {
        a->wflags[i] |=
            type == ZOO_DELETED_EVENT ? ZKL__W_GONE : ZKL__W_CHANGED;
        pthread_cond_broadcast(&a->cv);
      }
    if (a->path && strcmp(a->path, path) == 0)
      own_event(c, a, type);
  }
  pthread_mutex_unlock(&c->mu);
}

/* The answer to our credentials. A rejection also comes to session_watcher
 * as ZOO_AUTH_FAILED_STATE; whichever comes first decides. */
static void on_auth(int rc, const void *data) {
  zkl__session_t *s = (zkl__session_t *)data;
  zkl_client_t *c = s->c;
  pthread_mutex_lock(&c->mu);
  if (rc == ZOK)
    s->auth_done = 1;
  else if (rc != ZCLOSING && !zkl__is_conn_error(rc)) {
    c->auth_failed = 1;
    s->expired = 1;
    if (s == c->sess)
      apply_state(c, s, ZOO_AUTH_FAILED_STATE);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* ---- the event thread ----------------------------------------------------- */

/* Makes a new ZooKeeper handle and installs it as current. Called without
 * c->mu. Returns 0, or -1 when the handle could not be made (retried). */
static int new_session(zkl_client_t *c) {
  zkl__session_t *s = calloc(1, sizeof *s), *old;
  if (!s)
    return -1;
  s->c = c;
  s->refs = 1;
  s->zstate = ZOO_CONNECTING_STATE;
  s->zh = zookeeper_init2(c->hosts, session_watcher, c->timeout_req, NULL, s,
                          0, zk_log_sink);
  if (!s->zh) {
    free(s);
    return -1;
  }
  /* The C client sends the credentials ahead of every request, and again
   * on every reconnection of this handle; a new handle needs them anew. */
  if (c->auth_scheme &&
      zoo_add_auth(s->zh, c->auth_scheme, c->auth, (int)strlen(c->auth),
                   on_auth, s) != ZOK) {
    zookeeper_close(s->zh);
    free(s);
    return -1;
  }
  pthread_mutex_lock(&c->mu);
  old = c->sess;
  c->sess = s;
  c->state = ZKL_CLIENT_CONNECTING;
  apply_state(c, s, s->zstate);
  zkl__session_put(c, old);
  pthread_mutex_unlock(&c->mu);
  return 0;
}

/* When holds still AT_RISK must be called LOST: the server may expire the
 * session once it has heard nothing from us for the session timeout T. The
 * client notices silence after 2T/3 without a reply, so the server's expiry
 * comes at the earliest T/3 after the disconnect, less the time our last
 * reply spent in flight: T/20 of slack covers that. 0 = no such deadline. */
static int64_t lost_deadline(const zkl_client_t *c) {
  int t = c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req;
  if (c->state != ZKL_CLIENT_CONNECTING || c->disconnected_at == 0)
    return 0;
  return c->disconnected_at + t / 3 - t / 20;
}

/* Whether session s was alive when a request sent at connection epoch
 * `epoch` failed for want of a connection (a final unlock's delete: was the
 * hold still ours at the end of its critical section?). ZOK once s is
 * connected again at a later epoch; ZSESSIONEXPIRED when s expired, or when
 * it stays disconnected past the point where holds are called LOST, since a
 * process stopped for longer than the session timeout learns of it only
 * now. Under c->mu; waits at most about T/3. */
int zkl__session_verdict(zkl_client_t *c, zkl__session_t *s, uint64_t epoch) {
  int t = c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req;
  int64_t end = zkl_now_ms() + t / 3 - t / 20, due;
  struct timespec ts;
  for (;;) {
    if (s->expired || c->sess != s || c->stopping)
      return ZSESSIONEXPIRED;
    if (c->state == ZKL_CLIENT_CONNECTED && c->conn_epoch != epoch)
      return ZOK;
    due = lost_deadline(c); /* 0 until the disconnect is reported */
    if (due && due < end)
      end = due;
    if (zkl_now_ms() >= end)
      return ZSESSIONEXPIRED;
    zkl__deadline_ts(end, &ts);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
}

static void expire_at_risk(zkl_client_t *c) {
  zkl__acq_t *a;
  for (a = c->acqs; a; a = a->next)
    if (a->sess == c->sess &&
        atomic_load_explicit(&a->state, memory_order_relaxed) ==
            ZKL_STATE_AT_RISK) {
      /* If the session survives after all, the node must not block the
       * queue: delete it once connected. */
      if (a->path)
        zkl__defer_delete(c, a->sess, a->path);
      zkl__post_log(c, ZKL_LOG_WARN,
                    "%s: LOST, disconnected too long for the session to be "
                    "trusted",
                    a->path ? a->path : a->q->dir);
      lose(c, a);
    }
  c->disconnected_at = 0;
}

static void deliver_one(zkl_client_t *c) {
  struct zkl__event *ev = c->evq_head;
  c->evq_head = ev->next;
  if (!c->evq_head)
    c->evq_tail = NULL;
  delivered_freed = 0;
  pthread_mutex_unlock(&c->mu);
  if (ev->q)
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

static void close_dead(zkl_client_t *c) {
  zkl__session_t *s = c->dead;
  c->dead = s->next_dead;
  pthread_mutex_unlock(&c->mu);
  zookeeper_close(s->zh); /* flushes its completions with ZCLOSING */
  pthread_mutex_lock(&c->mu);
  free(s);
}

static void *event_main(void *arg) {
  zkl_client_t *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    int64_t due = lost_deadline(c), wake = -1;
    if (c->need_session && !c->stopping) {
      c->need_session = 0;
      pthread_mutex_unlock(&c->mu);
      if (new_session(c) != 0) {
        zkl__log(c, ZKL_LOG_ERROR, "cannot create a ZooKeeper handle: %s",
                 strerror(errno));
        pthread_mutex_lock(&c->mu);
        c->need_session = 1;
        wake = zkl_now_ms() + 1000;
      } else {
        pthread_mutex_lock(&c->mu);
        zkl__log(c, ZKL_LOG_INFO, "new session requested");
      }
      continue;
    }
    if (c->dead) {
      close_dead(c);
      continue;
    }
    if (c->evq_head) {
      deliver_one(c);
      continue;
    }
    if (due && zkl_now_ms() >= due) {
      expire_at_risk(c);
      continue;
    }
    zkl__pdel_run(c);
    if (c->stopping)
      break;
    if (due)
      wake = due;
    {
      int64_t w = watch_due_holds(c);
      if (w && (wake < 0 || w < wake))
        wake = w;
    }
    if (c->pdel)
      wake = wake < 0 ? zkl_now_ms() + 1000 : wake;
    if (wake < 0)
      pthread_cond_wait(&c->cv, &c->mu);
    else {
      struct timespec ts;
      zkl__deadline_ts(wake, &ts);
      c->ev_wake_at = wake;
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
      c->ev_wake_at = 0;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* ---- public API ---------------------------------------------------------- */

static int client_init(zkl_client_t *c, const char *hosts,
                       const zkl_client_options_t *o) {
  if (pthread_mutex_init(&c->mu, NULL) != 0)
    return ZKL_ESYSTEM;
  if (zkl__cond_init(&c->cv) != ZKL_OK) {
    pthread_mutex_destroy(&c->mu);
    return ZKL_ESYSTEM;
  }
  c->hosts = zkl__strdup(hosts);
  c->timeout_req = o && o->session_timeout_ms > 0 ? o->session_timeout_ms
                                                  : 10000;
  c->log_fn = o ? o->log_fn : NULL;
  c->log_ctx = o ? o->log_ctx : NULL;
  c->log_level = o && o->log_level > 0 ? o->log_level : ZKL_LOG_WARN;
  c->fork_gen = atomic_load(&zkl__fork_gen);
  if (o && o->auth_scheme) {
    c->auth_scheme = zkl__strdup(o->auth_scheme);
    c->auth = zkl__strdup(o->auth);
    if (!c->auth_scheme || !c->auth)
      return ZKL_ENOMEM;
  }
  if (o && o->acl == ZKL_ACL_CREATOR) {
    /* all rights to whoever authenticated the creating session, read to
     * all: waiters of other identities must still list and watch */
    c->acl_entries[0].perms = ZOO_PERM_ALL;
    c->acl_entries[0].id.scheme = (char *)"auth";
    c->acl_entries[0].id.id = (char *)"";
    c->acl_entries[1].perms = ZOO_PERM_READ;
    c->acl_entries[1].id.scheme = (char *)"world";
    c->acl_entries[1].id.id = (char *)"anyone";
    c->acl_vec.count = 2;
    c->acl_vec.data = c->acl_entries;
    c->acl = &c->acl_vec;
  } else {
    c->acl = &ZOO_OPEN_ACL_UNSAFE;
  }
  return c->hosts ? ZKL_OK : ZKL_ENOMEM;
}

static void client_free(zkl_client_t *c) {
  zkl__pdel_free_all(c);
  free(c->hosts);
  free(c->auth_scheme);
  if (c->auth) /* credentials: do not leave them in freed memory */
    memset(c->auth, 0, strlen(c->auth));
  free(c->auth);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* Close every handle the client still has, then free it. No other thread
 * uses the client any more. */
static void client_teardown(zkl_client_t *c) {
  zkl__session_t *s;
  pthread_mutex_lock(&c->mu);
  c->stopping = 1;
  c->state = ZKL_CLIENT_CLOSED;
  atomic_store(&c->pub_state, ZKL_CLIENT_CLOSED);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (c->ev_running)
    pthread_join(c->ev_thread, NULL);
  c->ev_running = 0;
  pthread_mutex_lock(&c->mu);
  /* Pending deletes are moot: closing a session deletes its ephemeral
   * nodes. Their session references go now (an expired session may have no
   * other), their records after the close, which may still complete them. */
  zkl__pdel_release(c);
  s = c->sess;
  c->sess = NULL;
  zkl__session_put(c, s);
  while (c->dead)
    close_dead(c);
  while (c->evq_head) {
    struct zkl__event *ev = c->evq_head;
    c->evq_head = ev->next;
    free(ev->msg);
    free(ev);
  }
  pthread_mutex_unlock(&c->mu);
  client_free(c);
}

int zkl_client_create(zkl_client_t **out, const char *hosts,
                      const zkl_client_options_t *opts) {
  zkl_client_t *c;
  int rc, wait_ms;
  if (!out || !hosts || !hosts[0])
    return ZKL_EINVAL;
  *out = NULL;
  if (opts && (opts->session_timeout_ms < 0 || opts->log_level < 0 ||
               opts->log_level > ZKL_LOG_DEBUG ||
               (opts->auth_scheme && (!opts->auth_scheme[0] || !opts->auth)) ||
               (opts->acl != ZKL_ACL_OPEN && opts->acl != ZKL_ACL_CREATOR) ||
               (opts->acl == ZKL_ACL_CREATOR && !opts->auth_scheme)))
    return ZKL_EINVAL;
  zkl__fork_watch();
  c = calloc(1, sizeof *c);
  if (!c)
    return ZKL_ENOMEM;
  rc = client_init(c, hosts, opts);
  if (rc != ZKL_OK) {
    if (rc == ZKL_ESYSTEM) { /* no lock or condition to destroy */
      free(c);
      return rc;
    }
    client_free(c);
    return rc;
  }
  if (new_session(c) != 0) {
    int e = errno;
    client_free(c);
    /* a host list the C client cannot parse or resolve comes back as
     * EINVAL or as the resolver's errno; only these are the system's */
    return e == ENOMEM ? ZKL_ENOMEM
           : e == EAGAIN || e == EMFILE || e == ENFILE ? ZKL_ESYSTEM
                                                      : ZKL_EINVAL;
  }
  if (pthread_create(&c->ev_thread, NULL, event_main, c) != 0) {
    client_teardown(c);
    return ZKL_ESYSTEM;
  }
  c->ev_running = 1;
  wait_ms = opts && opts->connect_timeout_ms ? opts->connect_timeout_ms
                                             : c->timeout_req;
  if (wait_ms > 0) {
    int64_t end = zkl_now_ms() + wait_ms;
    pthread_mutex_lock(&c->mu);
    rc = zkl__wait_usable(c, NULL, 0, end);
    /* credentials are judged after the session is made: wait for that */
    while (rc == ZKL_OK && c->auth_scheme && !c->sess->auth_done &&
           !c->auth_failed) {
      struct timespec ts;
      zkl__deadline_ts(end, &ts);
      if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT &&
          zkl_now_ms() >= end)
        rc = ZKL_ETIMEDOUT;
    }
    if (c->auth_failed)
      rc = ZKL_EAUTH;
    pthread_mutex_unlock(&c->mu);
    if (rc != ZKL_OK) {
      client_teardown(c);
      return rc == ZKL_EAUTH ? ZKL_EAUTH : ZKL_ECONNECT;
    }
  }
  if (zkl__handle_add(c) != ZKL_OK) {
    client_teardown(c);
    return ZKL_ENOMEM;
  }
  *out = c;
  return ZKL_OK;
}

int zkl_client_destroy(zkl_client_t *c) {
  int busy;
  if (!c)
    return ZKL_OK;
  if (!zkl__handle_live(c))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED; /* its lock may be held by a thread of the parent */
  pthread_mutex_lock(&c->mu);
  busy = c->nqueues > 0 || zkl__on_event_thread(c);
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(c))
    return ZKL_EINVAL; /* lost a race with another destroy */
  client_teardown(c);
  return ZKL_OK;
}

int zkl_client_state(const zkl_client_t *c) {
  if (c && zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  return c ? atomic_load(&c->pub_state) : ZKL_CLIENT_CLOSED;
}

int64_t zkl_client_session_id(const zkl_client_t *c) {
  return c && !zkl__forked(c->fork_gen) ? atomic_load(&c->session_id) : 0;
}

int zkl_client_session_timeout(const zkl_client_t *c) {
  int t;
  if (!c || zkl__forked(c->fork_gen))
    return 0;
  pthread_mutex_lock((pthread_mutex_t *)&c->mu);
  t = c->timeout_neg;
  pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
  return t;
}

uint64_t zkl_client_request_count(const zkl_client_t *c) {
  return c ? atomic_load_explicit(&c->requests, memory_order_relaxed) : 0;
}

int zkl_client_wait_connected(zkl_client_t *c, int64_t deadline_ms) {
  int rc = ZKL_OK;
  struct timespec ts;
  if (!c)
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  zkl__deadline_ts(deadline_ms, &ts);
  pthread_mutex_lock(&c->mu);
  while (c->state != ZKL_CLIENT_CONNECTED && rc == ZKL_OK) {
    if (c->stopping)
      rc = ZKL_ECLOSED;
    else if (c->auth_failed)
      rc = ZKL_EAUTH;
    else if (deadline_ms < 0)
      pthread_cond_wait(&c->cv, &c->mu);
    else if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
      rc = ZKL_ETIMEDOUT;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}
