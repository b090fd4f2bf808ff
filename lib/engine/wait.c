/* wait.c: a contender's wait behind the nodes its place in the queue
 * names (the wait set: acquire.c's position(), from policy.c's plan).
 *
 * zkl__step_wait watches the wait set and parks until its nodes go; a
 * node whose data changes is read again, since its data may prove we hold
 * (a downgrade). The wait ends through r->back, which acquire.c sets:
 * ZKL__HOLD when the plan proves nothing lower can have come (the
 * zero-read hand-off), ZKL__REVOKED when our own node's watch fired,
 * ZKL__RELIST, ZKL__RETRY, or an error. zkl__try_last is a try's last
 * look before ZKL_EBUSY: what a wait would read at once. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void step_read(zkl__acq_t *a);
static void step_read_done(zkl__acq_t *a);
static void step_try_read_done(zkl__acq_t *a);
static void step_wait_eval(zkl__acq_t *a);

/* Watches the wait set and parks until its nodes go. Our own node gets a
 * watch too, once per acquisition: deleted or replaced while we wait, the
 * wait ends (ZKL_EREVOKED), and the same watch serves the hold that
 * follows. A watched node whose data changes is read again: its data may
 * prove we hold (a downgrade); a change never means it is gone. Ends with
 * ZKL__HOLD (zero-read hand-off), ZKL__RELIST, ZKL__RETRY, or an error. */
void zkl__step_wait(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int rc, i;
  if ((rc = zkl__stopped(r)) != ZKL_OK) {
    zkl__waitset_free(&r->w);
    r->back(a, rc);
    return;
  }
  r->waited = 1;
  r->polled = r->gone_all = r->gone_any = r->changed = 0;
  memset(r->wflags, ZKL__W_READ, sizeof r->wflags);
  a->watch = r->w.paths;
  a->wflags = r->wflags;
  a->nwatch = r->w.plan.nwatch;
  for (i = 0; i < a->nwatch; i++)
    zkl__went_add(c, &r->went[i], r->w.paths[i], a, i);
  if (a->own_watch == ZKL__OWN_NONE && !(a->q->flags & ZKL__Q_NO_NODE_WATCH))
    zkl__watch_own(c, a->sess, a);
  r->until = r->deadline;
  if (r->w.plan.poll &&
      (r->until < 0 || r->until > zkl_now_ms() + ZKL__POLL_MS))
    r->until = zkl_now_ms() + ZKL__POLL_MS;
  r->next = step_read;
}

/* How the wait ended: rc is ZKL_OK when the flags tell. */
static void wait_end(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  int i;
  for (i = 0; i < a->nwatch; i++)
    zkl__went_del(c, &r->went[i]);
  a->watch = NULL;
  a->wflags = NULL;
  a->nwatch = 0;
  if (a->session_lost)
    rc = ZKL__RETRY;
  else if (a->revoked)
    rc = ZKL__REVOKED;
  else if (rc != ZKL_OK)
    ;
  else if (r->polled || r->changed)
    rc = ZKL__RELIST;
  /* The zero-read hand-off is only sound if nothing happened in between
   * that could have made our last listing stale: no reconnection. */
  else if ((r->gone_all || (r->gone_any && r->w.plan.any)) &&
           r->w.plan.handoff && c->conn_epoch == r->epoch &&
           c->state == ZKL_CLIENT_CONNECTED)
    rc = ZKL__HOLD;
  else
    rc = ZKL__RELIST;
  zkl__waitset_free(&r->w);
  r->handoff = rc == ZKL__HOLD; /* zkl_client_stats_t.handoffs */
  r->back(a, rc);
}

static void read_reconnected(zkl__acq_t *a, int rc) {
  wait_end(a, rc == ZKL_OK ? ZKL__RELIST : rc);
}

/* Reads, with a watch, every node of the wait set still to be read, in one
 * round trip. */
static void step_read(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = a->sess;
  int i, k = 0;
  if (c->state != ZKL_CLIENT_CONNECTED) { /* as in step_list() */
    zkl__await_conn(a, s, r->epoch, read_reconnected);
    return;
  }
  for (i = 0; i < a->nwatch; i++)
    k += (a->wflags[i] & ZKL__W_READ) != 0;
  if (!k) {
    r->next = step_wait_eval;
    return;
  }
  if (!(r->reads = calloc((size_t)a->nwatch, sizeof *r->reads))) {
    wait_end(a, ZKL_ENOMEM);
    return;
  }
  r->rs = s;
  s->refs++;
  for (i = 0; i < a->nwatch; i++) {
    if (!(a->wflags[i] & ZKL__W_READ))
      continue;
    a->wflags[i] &= ~(ZKL__W_READ | ZKL__W_CHANGED);
    zkl__prep(a, &r->reads[i]);
    zkl__sent(a, &r->reads[i], zkl__get(&r->reads[i], s, a->watch[i], 1));
  }
  r->next = step_read_done;
}

/* A node already gone is marked so; one that is not ephemeral is never
 * waited for (ZKL__RELIST); watch[0] found downgraded when that proves we hold
 * gives ZKL__HOLD. */
static void step_read_done(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = r->rs;
  int i, rc = ZKL_OK, hold = 0, relist = 0;
  zkl__session_put(c, s);
  r->rs = NULL;
  for (i = 0; i < a->nwatch; i++) {
    zkl__call_t *g = &r->reads[i];
    if (!g->done)
      continue; /* not read this time */
    if (g->rc == ZNONODE) {
      a->wflags[i] |= ZKL__W_GONE;
    } else if (g->rc == ZOK && g->stat.ephemeralOwner == 0) {
      /* never goes by itself: do not wait behind it (its watch, left
       * set, fires into nobody's wait) */
      if (rc == ZKL_OK)
        rc = zkl__ignore(a->q, strrchr(a->watch[i], '/') + 1);
      if (rc == ZKL_OK)
        rc = ZKL__RELIST;
    } else if (g->rc == ZOK) {
      size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
      hold |= i == 0 && r->w.plan.downgrade_ok &&
              zkl__data_mark(g->data, len, ZKL__LINE_READ);
      /* promoted before our watch was set: no event will tell us */
      relist |= i == 0 && r->w.plan.relist_on_change &&
                zkl__data_mark(g->data, len, ZKL__LINE_HELD);
    } else if (rc == ZKL_OK || rc == ZKL__RELIST) {
      rc = g->rc;
    }
    zkl__call_free(g);
  }
  free(r->reads);
  r->reads = NULL;
  if (zkl__is_conn_error(rc))
    zkl__await_conn(a, s, r->epoch, read_reconnected);
  else if (zkl__is_session_error(rc))
    wait_end(a, ZKL__RETRY);
  else if (rc == ZKL_OK && hold)
    wait_end(a, c->conn_epoch == r->epoch && c->state == ZKL_CLIENT_CONNECTED
                    ? ZKL__HOLD
                    : ZKL__RELIST);
  else if (rc == ZKL_OK && relist)
    wait_end(a, ZKL__RELIST);
  else if (rc != ZKL_OK)
    wait_end(a, rc);
  else
    r->next = step_wait_eval;
}

/* A try that would wait reads, before it says ZKL_EBUSY, what a wait
 * reads at once and may hold on without waiting: its one conflict, when
 * that is a zklock writer (the plan's downgrade_ok; another library's
 * never carries our mark), marked "mode=read" by a downgrade, or gone
 * (the hand-off), exactly as step_read_done() finds it. Our own node is
 * read in the same round trip (confirm()'s read). So zkl_rwlock_tryrdlock
 * and zkl_rwlock_timedrdlock agree after a downgrade; a try with nothing
 * such to read costs nothing more. */
void zkl__try_last(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  zkl__session_t *s = a->sess;
  if (!r->w.plan.downgrade_ok || r->w.plan.nwatch < 1 ||
      zkl__name_foreign(strrchr(r->w.paths[0], '/') + 1, q->marker,
                        q->marker_shared) ||
      !s || s != c->sess || s->expired || a->session_lost ||
      c->state != ZKL_CLIENT_CONNECTED || c->conn_epoch != r->epoch ||
      zkl__stopped(r) != ZKL_OK) {
    zkl__waitset_free(&r->w);
    zkl__finish(a, ZKL_EBUSY);
    return;
  }
  r->rs = s;
  s->refs++;
  zkl__prep(a, &r->aux);
  zkl__prep(a, &r->gd);
  zkl__sent(a, &r->aux, zkl__get(&r->aux, s, r->w.paths[0], 0));
  zkl__sent(a, &r->gd, zkl__exists(&r->gd, s, a->path));
  r->next = step_try_read_done;
}

static void step_try_read_done(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  zkl__session_t *s = r->rs;
  zkl__call_t *g = &r->aux;
  size_t len = g->data_len > 0 ? (size_t)g->data_len : 0;
  int mine = r->gd.rc == ZOK && zkl__owns(a, &r->gd.stat) && s == c->sess &&
             !s->expired && !a->session_lost;
  int own_gone = r->gd.rc == ZNONODE || (r->gd.rc == ZOK && !mine);
  int hold =
      (g->rc == ZNONODE || (g->rc == ZOK && g->stat.ephemeralOwner != 0 &&
                            zkl__data_mark(g->data, len, ZKL__LINE_READ))) &&
      c->conn_epoch == r->epoch && c->state == ZKL_CLIENT_CONNECTED;
  zkl__session_put(c, s); /* a->sess keeps it alive, if it is still ours */
  r->rs = NULL;
  zkl__call_free(g);
  zkl__call_free(&r->gd);
  zkl__waitset_free(&r->w);
  if (hold && mine)
    r->back(a, ZKL__HOLD);
  else if (hold && own_gone)
    r->back(a, zkl__gone(a));
  else
    zkl__finish(a, ZKL_EBUSY);
}

/* Parked here between events: what the watches said so far. */
static void step_wait_eval(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  int i, rc = ZKL_OK;
  r->gone_all = 1;
  r->gone_any = r->changed = 0;
  for (i = 0; i < a->nwatch; i++) {
    r->gone_all &= (a->wflags[i] & ZKL__W_GONE) != 0;
    r->gone_any |= (a->wflags[i] & ZKL__W_GONE) != 0;
    r->changed |= (a->wflags[i] & ZKL__W_CHANGED) != 0;
  }
  if (!(r->gone_all || (r->gone_any && r->w.plan.any) || r->changed ||
        a->session_lost || a->revoked || (rc = zkl__stopped(r)) != ZKL_OK)) {
    if (r->until == r->deadline || zkl_now_ms() < r->until) {
      zkl__park(a, step_wait_eval, r->until);
      return;
    }
    r->polled = 1; /* a relay may have been lost: look again */
  }
  if (r->changed && !(r->gone_all || (r->gone_any && r->w.plan.any) ||
                      r->w.plan.relist_on_change || a->session_lost ||
                      a->revoked || rc != ZKL_OK || r->polled)) {
    for (i = 0; i < a->nwatch; i++) /* read it again, and wait on */
      if (a->wflags[i] & ZKL__W_CHANGED)
        a->wflags[i] |= ZKL__W_READ;
    r->next = step_read;
    return;
  }
  wait_end(a, rc);
}
