/* release.c: what a granted hold does, and the reads that tell whether
 * our node is still ours.
 *
 * Release deletes our node (and the queue's directory with it, in one
 * transaction, when we were alone in one this object made); downgrade marks
 * it "mode=read"; verify reads it once; a semaphore's relay marks it
 * "state=held" for the waiter behind. Unlike the acquire, these are not
 * steps of the machine yet: they drop c->mu, send, and wait on the
 * caller's thread for their round trip. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Reads a's node on session s; under c->mu, dropped while the requests
 * are out. With `sync`, a sync goes first in the same round trip, so that
 * the read sees every write committed before the call, through any
 * server. *intact: whether its data is as we wrote it (zkl__data_intact).
 * Returns the read's ZooKeeper code. */
static int stat_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a, int sync,
                    struct Stat *out, int *intact) {
  zkl__call_t sy, st, *ptrs[2] = {&sy, &st};
  int left, rc;
  s->refs++;
  zkl__call_init(&sy, c, &a->cv);
  zkl__call_init(&st, c, &a->cv);
  if (sync)
    zkl__call_batch(ptrs, 2, &left);
  pthread_mutex_unlock(&c->mu);
  if (sync)
    zkl__sync(&sy, s, a->path);
  zkl__get(&st, s, a->path, 0);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(ptrs + !sync, sync ? 2 : 1);
  *out = st.stat;
  *intact = st.rc == ZOK && zkl__acq_data_intact(a, st.data, st.data_len);
  rc = st.rc;
  zkl__call_free(&st);
  zkl__call_free(&sy);
  zkl__session_put(c, s); /* a->sess or the caller keeps it alive */
  return rc;
}

/* A delete that landed vouches for the hold only with a read, just
 * before it, that found our node: without one (the read failed, or found
 * no node and someone created one at our name between the two) what we
 * deleted may not have been ours (model/, F1); and with its data as we
 * wrote it, or it was no hold (someone else's mark could have let others
 * in). Under c->mu; logs why not. */
static int vouched(zkl_client_t *c, const zkl__acq_t *a, zkl__session_t *s,
                   const zkl__call_t *st) {
  const char *why = NULL;
  if (!(st->rc == ZOK && zkl__owns_on(a, s, &st->stat)))
    why = st->rc == ZOK || st->rc == ZNONODE
              ? "deleted and re-created by someone else before unlock"
              : "deleted, but whose it was could not be read";
  else if (!zkl__acq_data_intact(a, st->data, st->data_len))
    why = "its data was rewritten by someone else before unlock";
  if (why)
    zkl__post_log(c, ZKL_LOG_WARN, "%s: %s", a->path, why);
  return !why;
}

/* Whether q's directory is this object's to delete, as far as it knows
 * (under c->mu): made by it, its node alone there at the last look, no
 * other library's node ever seen in it, and not kept for kazoo. */
static int dir_ours(const zkl__queue_t *q) {
  return q->dir_made && q->dir_alone && !q->dir_peer &&
         !(q->flags & ZKL__Q_KEEP_DIR);
}

/* Deletes our node and forgets it; under c->mu. Returns the delete's
 * ZooKeeper code (ZOK when there was nothing to delete). When the
 * connection is down the delete is left to the event thread; with `judge`
 * the code is then the session's verdict (ZOK or ZSESSIONEXPIRED) instead:
 * a release must not report a hold as kept when it cannot know.
 *
 * Also with `judge`, a read of the node's czxid and owner goes in the same
 * round trip as the delete: a node deleted and re-created by someone else
 * gives ZNONODE, the hold was not ours to the end. The read sees whatever
 * our server had applied when it answered, and nothing our watch could
 * tell us sooner: a change our server applies only after the read (one
 * committed through another server in that very instant) is judged as
 * after the unlock. A sync ahead of the read would close that instant, at
 * the cost of a round trip to the leader on every unlock. */
int zkl__remove_node(zkl_client_t *c, zkl__acq_t *a, int judge) {
  zkl__session_t *s = a->sess;
  zkl__queue_t *q = a->q;
  zkl__call_t st, del, pd, *ptrs[3] = {&st, &del, &pd};
  uint64_t epoch = c->conn_epoch;
  int rc, left, tidy;
  if (!a->path || !s)
    return s ? ZOK : ZSESSIONEXPIRED;
  a->sess = NULL;
  if (s->expired) {
    rc = ZSESSIONEXPIRED;
  } else if (!judge && c->state != ZKL_CLIENT_CONNECTED) {
    /* Nobody waits for this one's fate (an acquire giving up): a delete
     * sent now would only wait for the reconnection, or for the C client
     * to give up on it, past the caller's deadline. */
    zkl__defer_delete(c, s, a->path);
    rc = ZCONNECTIONLOSS;
  } else {
    /* A release that leaves the parent this object made empty takes it
     * along (when it is ours to take: dir_ours), in the same transaction:
     * per-key locks would otherwise leave the server a parent per key to sweep,
     * at a bounded rate. Only on an object's first release: one taken again
     * keeps its parent from then on (deleted at close, tidy_dir) rather than
     * make it anew each time. */
    tidy = judge && dir_ours(q) && !q->dir_kept;
    if (judge)
      q->dir_kept = 1;
    zkl__call_init(&st, c, &a->cv);
    zkl__call_init(&del, c, &a->cv);
    zkl__call_init(&pd, c, &a->cv);
    if (judge)
      zkl__call_batch(ptrs, tidy ? 3 : 2, &left);
    pthread_mutex_unlock(&c->mu);
    if (judge) /* with its data: rewritten by someone, it was no hold */
      zkl__get(&st, s, a->path, 0);
    if (tidy)
      zkl__delete_with_parent(&del, &pd, s, a->path, q->dir);
    else
      zkl__delete(&del, s, a->path);
    pthread_mutex_lock(&c->mu);
    if (judge)
      zkl__call_wait(ptrs, tidy ? 3 : 2);
    else
      zkl__call_wait(&ptrs[1], 1);
    if (tidy && pd.rc == ZOK) /* gone: the next join makes it again */
      q->dir_made = 0, q->dir_seen = 0, q->dir_alone = 0;
    rc = del.rc;
    if (rc == ZOK && judge && !vouched(c, a, s, &st))
      rc = ZNONODE;
    zkl__call_free(&st);
    if (zkl__is_conn_error(rc)) {
      zkl__defer_delete(c, s, a->path);
      if (judge)
        rc = zkl__session_verdict(c, s, epoch);
    }
  }
  zkl__session_put(c, s);
  return rc;
}

/* Our node's data with the status line `line` (ZKL__LINE_*) in its
 * header, where zkl__data_mark() finds it. */
static int marked_data(const zkl__queue_t *q, const char *line, char **out,
                       size_t *len) {
  char *d = NULL;
  size_t l = 0;
  int rc = zkl__node_data(q->id, q->user_data, q->user_len, &d, &l);
  if (rc == ZKL_OK)
    rc = zkl__data_add_line(d, l, line, out, len);
  free(d);
  return rc;
}

/* A semaphore lease granted after waiting, or with contenders after it,
 * marks its node "state=held": the waiter right behind it watches only
 * it, and a grant is no event ZooKeeper would otherwise send. Not waited
 * for: a mark lost with the connection costs that waiter one poll
 * (ZKL__POLL_MS), nothing else. A lease granted at its first look with
 * nobody after it writes nothing: whoever joins later lists after our
 * create, so sees no more nodes before us than we saw, and counts us as
 * a holder. Under c->mu, dropped while sending. */
void zkl__relay(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s = a->sess;
  char *d;
  size_t len;
  if (!s || !a->path || marked_data(q, ZKL__LINE_HELD, &d, &len) != ZKL_OK)
    return;
  a->marks |= ZKL__MARK_HELD; /* before our own watch can see it */
  s->refs++;
  pthread_mutex_unlock(&c->mu);
  zkl__set_nowait(s, a->path, d, (int)len, 0);
  pthread_mutex_lock(&c->mu);
  zkl__session_put(c, s);
  free(d);
}

int zkl__queue_release(zkl__queue_t *q, zkl__acq_t *a, int judge) {
  zkl_client_t *c = q->c;
  int rc = ZKL_OK, st;
  pthread_mutex_lock(&c->mu);
  st = atomic_load(&a->state);
  zkl__acq_unlink(c, a); /* our own delete is not a loss */
  if (st == ZKL_STATE_LOST) {
    rc = zkl__lost_rc(a);
  } else {
    int zrc = zkl__remove_node(c, a, judge);
    /* ZNONODE: someone deleted our node while we held it. */
    if (zrc == ZNONODE || zkl__is_session_error(zrc))
      rc = zkl__lost_rc(a);
  }
  atomic_store(&a->state, ZKL_STATE_NONE);
  zkl__post_state(c, a, ZKL_STATE_NONE);
  zkl__acq_free(c, a);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* A downgrade's verdict from its write's code rc (under c->mu): the
 * hold is lost, or read from now on (also when the write did not land:
 * the node then keeps its data, exclusive, which is more than a reader
 * needs, until the hold ends). */
static int downgraded(zkl_client_t *c, zkl__acq_t *a, int rc, int rewritten) {
  if (rewritten) {
    zkl__lose_rewritten(c, a);
    return ZKL_ELOST;
  }
  if (rc == ZNONODE || zkl__is_session_error(rc) || rc == ZKL_ELOST) {
    zkl__lose(c, a,
              rc == ZNONODE ? "deleted or replaced by someone else"
                            : "session expired");
    return ZKL_ELOST;
  }
  if (rc != ZOK)
    zkl__post_log(c, ZKL_LOG_WARN,
                  "%s: downgrade not written (%s): readers wait for the "
                  "release",
                  a->path, zkl_err_name(rc));
  a->shared = 1;
  return ZKL_OK;
}

/* How many times a downgrade retries its conditional write when the data
 * version has moved (another client rewrote our node's data). */
#define DOWNGRADE_TRIES 3

int zkl__queue_downgrade(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  char *nd;
  size_t len = 0;
  int rc, version = 0, tries, rewritten = 0;
  if ((rc = marked_data(q, ZKL__LINE_READ, &nd, &len)) != ZKL_OK)
    return rc;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  rc = ZKL_ELOST;
  a->marks |= ZKL__MARK_READ; /* before our own watch can see it */
  for (tries = 0; s && !s->expired && a->path && tries < DOWNGRADE_TRIES &&
                  atomic_load(&a->state) != ZKL_STATE_LOST;
       tries++) {
    zkl__call_t set, *ptrs[1] = {&set};
    struct Stat st;
    int intact;
    s->refs++;
    zkl__call_init(&set, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__set(&set, s, a->path, nd, (int)len, version);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = set.rc;
    if (rc == ZOK)
      a->dversion = set.stat.version;
    if (rc == ZBADVERSION) {
      /* Someone else wrote to our node: write again over it, if it is
       * still ours (creation zxid and owner) and what they wrote was a
       * revoker's request, at the version it has. */
      rc = stat_own(c, s, a, 0, &st, &intact);
      if (rc == ZOK && !zkl__owns(a, &st))
        rc = ZNONODE;
      if (rc == ZOK && !intact)
        rewritten = 1, rc = ZKL_ELOST;
      version = st.version;
      if (rc == ZOK) {
        zkl__session_put(c, s);
        continue;
      }
    }
    zkl__session_put(c, s);
    break;
  }
  rc = downgraded(c, a, rc, rewritten);
  pthread_mutex_unlock(&c->mu);
  free(nd);
  return rc;
}

int zkl__queue_verify(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s;
  struct Stat st;
  int rc, intact;
  pthread_mutex_lock(&c->mu);
  s = a->sess;
  if (atomic_load(&a->state) == ZKL_STATE_LOST || !s || !a->path ||
      s->expired) {
    zkl__lose(c, a, "session expired");
    pthread_mutex_unlock(&c->mu);
    return zkl__lost_rc(a);
  }
  s->refs++; /* past stat_own: a loss meanwhile drops a->sess's */
  rc = stat_own(c, s, a, 1, &st, &intact);
  if (rc == ZOK && a->sess == s && zkl__owns(a, &st) && intact) {
    a->dversion = st.version;
    rc = ZKL_OK;
  } else if (rc == ZOK && a->sess == s && zkl__owns(a, &st)) {
    zkl__lose_rewritten(c, a);
    rc = zkl__lost_rc(a);
  } else if (rc == ZOK || rc == ZNONODE || zkl__is_session_error(rc) ||
             a->sess != s) {
    zkl__lose(c, a,
              rc == ZOK       ? "replaced by someone else's node"
              : rc == ZNONODE ? "deleted by someone else"
                              : "session expired");
    rc = zkl__lost_rc(a);
  }
  zkl__session_put(c, s);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int zkl__acq_path(const zkl__acq_t *a, char *buf, size_t size) {
  size_t n;
  if (!a || !a->path)
    return ZKL_ENOTOWNER;
  n = strlen(a->path);
  if (n + 1 > size)
    return ZKL_EINVAL;
  memcpy(buf, a->path, n + 1);
  return ZKL_OK;
}

/* The directory's read, then delete, which nobody waits for. */
typedef struct {
  zkl__call_t call;
  zkl__session_t *s;
  char *path;
  int64_t czxid; /* the incarnation we made */
} dir_delete_t;

static void on_dir_done(zkl__call_t *call) {
  dir_delete_t *d = call->ctx;
  zkl_client_t *c = call->c;
  zkl__call_free(call);
  zkl__session_put(c, d->s);
  free(d->path);
  free(d);
  pthread_cond_broadcast(&c->cv);
}

/* Deleted only if it is still the one we made, and empty: a directory
 * someone deleted and made again since our last look is theirs. */
static void on_dir_read(zkl__call_t *call) {
  dir_delete_t *d = call->ctx;
  if (call->rc != ZOK || call->stat.czxid != d->czxid ||
      call->stat.numChildren != 0) {
    on_dir_done(call);
    return;
  }
  zkl__call_init_fn(call, call->c, on_dir_done, d);
  if (zkl__delete(call, d->s, d->path) != ZOK)
    on_dir_done(call);
}

/* Deletes the queue's directory when it is this object's (dir_ours): gone
 * with its last user instead of at the server's next sweep. A newcomer leaves
 * it be (or makes the delete fail, ZNOTEMPTY), and a node created just after it
 * finds no directory and makes it again, as after a sweep. Under c->mu. */
void zkl__tidy_dir(zkl__queue_t *q) {
  zkl_client_t *c = q->c;
  dir_delete_t *d;
  if (!dir_ours(q) || !c->sess || c->sess->expired ||
      c->state != ZKL_CLIENT_CONNECTED || c->stopping)
    return;
  if (!(d = calloc(1, sizeof *d)) || !(d->path = zkl__strdup(q->dir))) {
    free(d);
    return; /* the server's sweep takes it */
  }
  d->czxid = q->dir_made;
  d->s = zkl__session_get(c);
  zkl__call_init_fn(&d->call, c, on_dir_read, d);
  if (zkl__exists(&d->call, d->s, d->path) != ZOK)
    on_dir_done(&d->call);
}
