/* SPDX-License-Identifier: Apache-2.0 */
/* session.c: the client's ZooKeeper session and its state machine.
 *
 * One ZooKeeper handle is current (c->sess); its session events move the
 * client between CONNECTING, CONNECTED, EXPIRED and AUTH_FAILED, and tell
 * the acquisitions (acq.c) what that means for them. An expired session is
 * replaced by a new handle, made on the event thread; a handle nobody
 * refers to any more is closed there too. The event thread also nudges a
 * session whose write the server sits on (ZOOKEEPER-4537, below). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


/* ZooKeeper's own log lines have no context pointer to route them to a
 * client's hook, and the library must not write to stderr: drop them. */
static void zk_log_sink(const char *msg) { (void)msg; }

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

/* Tells the client's listener (acq.c's, wired by client.c). */
static void tell(zkl_client_t *c, zkl__session_t *s,
                 enum zkl__sess_news what) {
  if (c->on_session)
    c->on_session(c, s, what);
}

static void on_connected(zkl_client_t *c, zkl__session_t *s) {
  int first;
  if (c->state == ZKL_CLIENT_CONNECTED)
    return;
  c->state = ZKL_CLIENT_CONNECTED;
  c->conn_epoch++;
  first = !s->was_connected;
  if (!first) /* not this session's first connection */
    zkl__stat_add(&c->stats.reconnections, 1);
  s->was_connected = 1;
  c->disconnected_at = 0;
  c->timeout_neg = zoo_recv_timeout(s->zh);
  atomic_store(&c->session_id, s->id);
  zkl__post_log(c, ZKL_LOG_INFO, "connected: session 0x%llx, timeout %d ms",
                (unsigned long long)s->id, c->timeout_neg);
  /* the ensemble clamps what we ask to its [min, max]SessionTimeout:
   * holds are then lost after another delay than the caller chose */
  if (first && c->timeout_neg > 0 && c->timeout_neg != c->timeout_req)
    zkl__post_log(c, ZKL_LOG_WARN,
                  "the ensemble set the session timeout to %d ms, not the "
                  "%d ms asked (its minSessionTimeout/maxSessionTimeout)",
                  c->timeout_neg, c->timeout_req);
  tell(c, s, ZKL__SESS_CONNECTED);
}

static void on_disconnected(zkl_client_t *c, zkl__session_t *s) {
  if (c->state != ZKL_CLIENT_CONNECTED)
    return;
  c->state = ZKL_CLIENT_CONNECTING;
  c->disconnected_at = zkl_now_ms();
  zkl__post_log(c, ZKL_LOG_WARN, "disconnected: holds are AT_RISK");
  tell(c, s, ZKL__SESS_DISCONNECTED);
}

static void on_expired(zkl_client_t *c, zkl__session_t *s) {
  if (!c->auth_failed && c->state != ZKL_CLIENT_EXPIRED) /* told once */
    zkl__stat_add(&c->stats.expired, 1);
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
  tell(c, s, ZKL__SESS_EXPIRED);
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
  tell(c, s, ZKL__SESS_KICK); /* acquisitions waiting for a connection */
}

/* Session events of one handle; its context is the session, so an event
 * that arrives before the session is installed as current is still kept
 * (in s->zstate) and applied when it is. */
static int own_auth(zkl__session_t *s);

static void session_watcher(zhandle_t *zh, int type, int state,
                            const char *path, void *ctx) {
  zkl__session_t *s = ctx;
  zkl_client_t *c = s->c;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&c->mu);
  (void)own_auth(s); /* before anyone hears of a connection */
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

/* The answer to our credentials. A rejection also comes to session_watcher
 * as ZOO_AUTH_FAILED_STATE; whichever comes first decides. */
static void on_auth(int rc, const void *data) {
  zkl__session_t *s = (zkl__session_t *)data;
  zkl_client_t *c = s->c;
  pthread_mutex_lock(&c->mu);
  s->auth_answered = 1;
  if (rc == ZOK) /* ours next (own_auth), before anyone hears of this */
    (void)own_auth(s);
  if (rc == ZOK)
    s->auth_done = 1;
  else if (rc != ZCLOSING && !zkl__is_conn_error(rc)) {
    c->auth_failed = 1;
    s->expired = 1;
    if (s == c->sess)
      apply_state(c, s, ZOO_AUTH_FAILED_STATE);
  }
  pthread_cond_broadcast(&c->cv);
  tell(c, s, ZKL__SESS_KICK);
  pthread_mutex_unlock(&c->mu);
}

/* Our own identity's answer (digest.c): a digest is never refused, and
 * the requests behind it go in the session's order, after it. A session
 * whose identity could not be given fails its guarded releases with
 * ZNOAUTH, which reads as a loss: never as a hold kept. */
static void on_own_auth(int rc, const void *data) {
  zkl__session_t *s = (zkl__session_t *)data;
  if (rc != ZOK && rc != ZCLOSING && !zkl__is_conn_error(rc))
    zkl__log(s->c, ZKL_LOG_ERROR, "our own identity was refused: %s",
             zerror(rc));
}

/* Under c->mu: gives session s our own identity, if it is still to be
 * given: after the
 * user's credentials have been answered, for the C client hands the
 * answer to one of a handle's credentials to the callbacks of all those
 * still waiting (a rejection of the user's would then read as accepted).
 * A handle with no connection yet (state 0, its first connect under way)
 * takes no credentials: they are given at its first session event
 * instead, before that event is applied. Nothing needs the identity
 * before a hold, which comes after the connection and after the user's
 * credentials are accepted: a node is made with our ACL (which names the
 * identity) by anyone, only its release's guard must present it. */
static int own_auth(zkl__session_t *s) {
  zkl_client_t *c = s->c;
  int rc;
  if (!s->own_auth || (c->auth_scheme && !s->auth_answered))
    return ZOK;
  rc = zoo_add_auth(s->zh, "digest", c->ident.cred, (int)strlen(c->ident.cred),
                    on_own_auth, s);
  if (rc == ZOK)
    s->own_auth = 0;
  return rc == ZINVALIDSTATE && zoo_state(s->zh) == 0 ? ZOK : rc;
}

/* Makes a new ZooKeeper handle and installs it as current. Called without
 * c->mu. Returns 0, or -1 when the handle could not be made (retried). */
#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_new_session;
#endif

int zkl__new_session(zkl_client_t *c) {
  zkl__session_t *s, *old;
  int rc;
#ifdef ZKL_FAULT_INJECTION
  if (atomic_load(&zkl__fault_new_session) > 0) {
    atomic_fetch_sub(&zkl__fault_new_session, 1);
    errno = EMFILE;
    return -1;
  }
#endif
  if (!(s = calloc(1, sizeof *s)))
    return -1;
  s->c = c;
  s->refs = 1;
  pthread_mutex_init(&s->bmu, NULL); /* group commit's (batch.c) */
  s->zstate = ZOO_CONNECTING_STATE;
  s->zh = zookeeper_init2(c->hosts, session_watcher, c->timeout_req, NULL, s,
                          0, zk_log_sink);
  if (!s->zh) {
    pthread_mutex_destroy(&s->bmu);
    free(s);
    return -1;
  }
  /* The C client resolves the host list every time it polls its socket
   * (getaddrinfo: netlink dumps, a socket opened and closed): under load
   * that took more CPU than the lock itself. Resolve when a connection
   * is lost, as it does anyway. */
  zoo_set_servers_resolution_delay(s->zh, -1);
  /* The C client sends the credentials ahead of every request, and again
   * on every reconnection of this handle; a new handle needs them anew. */
  s->own_auth = 1;
  pthread_mutex_lock(&c->mu); /* own_auth: against the session's events */
  rc = c->auth_scheme ? zoo_add_auth(s->zh, c->auth_scheme, c->auth,
                                     (int)strlen(c->auth), on_auth, s)
                      : own_auth(s);
  pthread_mutex_unlock(&c->mu);
  if (rc != ZOK) {
    zookeeper_close(s->zh);
    pthread_mutex_destroy(&s->bmu);
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
int64_t zkl__lost_deadline(const zkl_client_t *c) {
  int t = c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req;
  if (c->state != ZKL_CLIENT_CONNECTING || c->disconnected_at == 0)
    return 0;
  return c->disconnected_at + t / 3 - t / 20;
}

/* When a release that could not reach the server stops waiting for its
 * session's fate: about T/3 from now (as zkl__lost_deadline). */
int64_t zkl__verdict_end(const zkl_client_t *c) {
  int t = c->timeout_neg > 0 ? c->timeout_neg : c->timeout_req;
  return zkl_now_ms() + t / 3 - t / 20;
}

/* Whether session s was alive when a request sent at connection epoch
 * `epoch` failed for want of a connection (a final unlock's delete: was the
 * hold still ours at the end of its critical section?). ZOK once s is
 * connected again at a later epoch; ZSESSIONEXPIRED when s expired, or when
 * it stays disconnected past `end` (zkl__verdict_end) or past the point
 * where holds are called LOST, since a process stopped for longer than the
 * session timeout learns of it only now. Under c->mu; never waits: while
 * it cannot tell yet, ZKL__VERDICT_LATER and *due, when to ask again (a
 * change of the connection broadcasts c->cv sooner). */
int zkl__session_verdict(const zkl_client_t *c, const zkl__session_t *s,
                         uint64_t epoch, int64_t end, int64_t *due) {
  int64_t lost;
  if (s->expired || c->sess != s || c->stopping)
    return ZSESSIONEXPIRED;
  if (c->state == ZKL_CLIENT_CONNECTED && c->conn_epoch != epoch)
    return ZOK;
  lost = zkl__lost_deadline(c); /* 0 until the disconnect is reported */
  if (lost && lost < end)
    end = lost;
  if (zkl_now_ms() >= end)
    return ZSESSIONEXPIRED;
  *due = end;
  return ZKL__VERDICT_LATER;
}

/* Event thread, under c->mu: close one handle nobody uses any more. */
void zkl__close_dead(zkl_client_t *c) {
  zkl__session_t *s = c->dead;
  c->dead = s->next_dead;
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&s->bmu);
  s->closing = 1; /* what its flushed answers would send next stays here */
  pthread_mutex_unlock(&s->bmu);
  zookeeper_close(s->zh); /* flushes its completions with ZCLOSING */
  pthread_mutex_lock(&c->mu);
  pthread_mutex_destroy(&s->bmu);
  free(s);
}

/* ---- the ZOOKEEPER-4537 nudge -------------------------------------------
 *
 * A write that stays out is nudged. Debian's 3.8.0 server has a missed
 * wakeup (ZOOKEEPER-4537, fixed in 3.8.1): under load its leader may
 * commit a write and not apply it until the session sends another
 * request, and the C client sends no ping while a request is out, so the
 * session dies of silence with every server idle. Group commit holds
 * everything back behind the write in flight, so nothing else would come.
 * When a write of the session has been out ZKL__NUDGE_MS (zk.h says why
 * 50 ms), the event thread (zkl__session_nudge, below) sends one
 * exists of "/" on the session, no watch: a request is all the server
 * needs to apply the write, and its answer comes after the write's. At
 * most one nudge is out per session, and another goes only ZKL__NUDGE_MS
 * after the last, while a write is still out. Here, s->out_since says
 * since when a write is out, and the first write of an idle session makes
 * sure the event thread will look (zkl__session_nudge_timer). */

/* A write left s with none out before (out_since is set): the event
 * thread, which may sleep with no deadline, must look at s within
 * ZKL__NUDGE_MS. A write with a function is issued under c->mu (by a step
 * of the machine or the event thread), a waited-for one with no lock held
 * (zk.h); under c->mu, the event thread is either before its look or
 * asleep, so the broadcast is not lost. Writes group commit sends when
 * a transaction is answered need none: one was out all along, and the event thread
 * looks again until none is. */
void zkl__session_nudge_timer(zkl__session_t *s, int locked) {
  zkl_client_t *c = s->c;
  int64_t due = zkl_now_ms() + ZKL__NUDGE_MS;
  if (!locked)
    pthread_mutex_lock(&c->mu);
  if (!c->ev_wake_at || c->ev_wake_at > due)
    pthread_cond_broadcast(&c->cv);
  if (!locked)
    pthread_mutex_unlock(&c->mu);
}

void zkl__session_write_out(zkl__session_t *s, int locked) {
  int64_t now = zkl_now_ms();
  int first;
  pthread_mutex_lock(&s->bmu);
  first = s->wout++ == 0;
  if (first)
    s->wout_since = now;
  s->out_last = now;
  pthread_mutex_unlock(&s->bmu);
  if (first)
    zkl__session_nudge_timer(s, locked);
}

void zkl__session_write_in(zkl__session_t *s) {
  pthread_mutex_lock(&s->bmu);
  if (s->wout > 0 && --s->wout == 0)
    s->wout_since = 0;
  pthread_mutex_unlock(&s->bmu);
}

static void on_nudged(int rc, const struct Stat *stat, const void *data) {
  zkl__session_t *s = (zkl__session_t *)data;
  zkl_client_t *c = s->c;
  (void)rc, (void)stat; /* only its coming matters */
  pthread_mutex_lock(&c->mu);
  s->nudging = 0;
  zkl__session_put(c, s);
  pthread_cond_broadcast(&c->cv); /* a teardown may wait for it (quiesce) */
  pthread_mutex_unlock(&c->mu);
}

int64_t zkl__session_nudge(zkl__session_t *s, int64_t now) {
  zkl_client_t *c;
  int64_t due = 0;
  if (!s || s->expired)
    return 0;
  c = s->c;
  pthread_mutex_lock(&s->bmu);
  if ((s->inflight > 0 && s->out_since) || s->wout > 0) {
    int64_t since = s->inflight > 0 && s->out_since ? s->out_since : now;
    if (s->wout > 0 && s->wout_since && s->wout_since < since)
      since = s->wout_since;
    due = (s->nudged_at > since ? s->nudged_at : since) + ZKL__NUDGE_MS;
    /* one at a time; and on a connection down the write fails anyway */
    if (now >= due && !s->nudging && s->zstate == ZOO_CONNECTED_STATE) {
      s->refs++; /* the handle stays until its answer comes */
      if (zoo_aexists(s->zh, "/", 0, on_nudged, s) == ZOK) {
        s->nudging = 1;
        /* not in c->requests: a caller's cost does not hang on timing */
        atomic_fetch_add_explicit(&c->nudges, 1, memory_order_relaxed);
      } else {
        s->refs--; /* ours and the client's current one: not the last */
      }
      s->nudged_at = now;
    }
    if (due <= now)
      due = now + ZKL__NUDGE_MS;
  } else if (s->out_last && now < s->out_last + ZKL__NUDGE_MS) {
    /* A write left lately: look again when it would be due. A client
     * that keeps writing then finds the event thread awake soon enough
     * (zkl__session_nudge_timer) and wakes it not once per write, but we do once per
     * ZKL__NUDGE_MS. */
    due = s->out_last + ZKL__NUDGE_MS;
  }
  pthread_mutex_unlock(&s->bmu);
  return due;
}
