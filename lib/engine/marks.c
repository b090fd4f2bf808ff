/* SPDX-License-Identifier: Apache-2.0 */
/* marks.c: what a granted hold writes on its own node, and the read that
 * tells whether the node is still ours.
 *
 * Downgrade marks it "mode=read"; a semaphore's relay marks it
 * "state=held" for the waiter behind; verify reads it once. These are not
 * steps of a machine yet: they drop c->mu, send, and wait on the caller's
 * thread for their round trip (the relay waits for nothing: its answer,
 * when it comes, says whose node took the write). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Reads a's node on session s; under c->mu, dropped while the requests
 * are out. With `sync`, a sync goes first in the same round trip, so that
 * the read sees every write committed before the call, through any
 * server. *intact: whether its data is as we wrote it (zkl__data_intact).
 * With `data`, the data read is handed over (*data NULL when none; the
 * caller frees it). Returns the read's ZooKeeper code. */
static int stat_own(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a, int sync,
                    struct Stat *out, int *intact, char **data,
                    size_t *data_len) {
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
  if (data) {
    *data = rc == ZOK ? st.data : NULL;
    *data_len = rc == ZOK && st.data_len > 0 ? (size_t)st.data_len : 0;
    if (rc == ZOK)
      st.data = NULL; /* handed over */
  }
  zkl__call_free(&st);
  zkl__call_free(&sy);
  zkl__session_put(c, s); /* a->sess or the caller keeps it alive */
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

/* A relay mark's write, out. `a` is NULL once the acquisition is freed
 * (step.c zkl__acq_free, through a->relay). */
struct relay {
  zkl__call_t call;
  zkl__acq_t *a;
  zkl__session_t *s;
};

/* The relay's write answered. Landed, the stat says whose node took it:
 * ours, nothing to do (a->dversion counted it in); someone else's (ours
 * deleted and made again at our name, at version 0 as ours was), the
 * lease is lost, for that node is now at the version our guard checks:
 * a standing lease is LOST, and a release already sent (a->sess let go)
 * says so (release.c answered). Not landed: the guard finds another
 * version, and reads. */
static void on_relayed(zkl__call_t *call) {
  struct relay *r = call->ctx;
  zkl_client_t *c = call->c;
  zkl__acq_t *a = r->a;
  if (a) {
    a->relay = NULL;
    if (call->rc == ZOK && !zkl__owns_on(a, r->s, &call->stat)) {
      a->relay_foreign = 1;
      if (a->sess == r->s)
        zkl__lose(c, a, "deleted and made again by someone else");
    }
  }
  zkl__session_put(c, r->s);
  zkl__call_free(call);
  free(r);
}

/* A semaphore lease granted after waiting, or with contenders after it,
 * marks its node "state=held": the waiter right behind it watches only
 * it, and a grant is no event ZooKeeper would otherwise send. Not waited
 * for: a mark lost with the connection costs that waiter one poll
 * (ZKL__POLL_MS), nothing else. A lease granted at its first look with
 * nobody after it writes nothing: whoever joins later lists after our
 * create, so sees no more nodes before us than we saw, and counts us as
 * a holder. Under c->mu. */
void zkl__relay(zkl__queue_t *q, zkl__acq_t *a) {
  zkl_client_t *c = q->c;
  zkl__session_t *s = a->sess;
  struct relay *r;
  char *d;
  size_t len;
  int version = a->dversion;
  if (!s || !a->path || a->relay ||
      marked_data(q, ZKL__LINE_HELD, &d, &len) != ZKL_OK)
    return;
  if (!(r = malloc(sizeof *r))) {
    free(d);
    return; /* as a mark lost with the connection */
  }
  a->marks |= ZKL__MARK_HELD; /* before our own watch can see it */
  /* The version it will have, if the write lands: a release's guard
   * checks it (release.c), and one that finds another reads the node
   * instead, so a write that did not land costs a read, never a verdict;
   * one that landed on someone else's node is told by its answer */
  a->dversion++;
  zkl__call_init_fn(&r->call, c, on_relayed, r);
  r->a = a;
  r->s = s;
  s->refs++;
  a->relay = &r->a;
  if ((r->call.rc = zkl__set(&r->call, s, a->path, d, (int)len, version)) !=
      ZOK)
    on_relayed(&r->call); /* refused: nothing sent */
  free(d);
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

/* The downgrade's write failed with ZBADVERSION: someone else wrote to
 * our node. It is written again if it is still ours (creation zxid and
 * owner) and what they wrote was a revoker's request, at the version it
 * has, and with their lines kept: our mark is added to what we read,
 * never written over it (F6). Under c->mu; ZOK with *nd, *len and
 * *version for the next write, or why not (*rewritten: not intact). */
static int reread(zkl_client_t *c, zkl__session_t *s, zkl__acq_t *a,
                  char **nd, size_t *len, int *version, int *rewritten) {
  struct Stat st;
  char *rd = NULL;
  size_t rl = 0;
  int intact, rc = stat_own(c, s, a, 0, &st, &intact, &rd, &rl);
  if (rc == ZOK && !zkl__owns(a, &st))
    rc = ZNONODE;
  if (rc == ZOK && !intact)
    *rewritten = 1, rc = ZKL_ELOST;
  *version = st.version;
  if (rc == ZOK) {
    free(*nd);
    *nd = NULL;
    if (zkl__data_mark(rd, rl, ZKL__LINE_READ)) /* there already */
      *nd = rd, *len = rl, rd = NULL;
    else
      rc = zkl__data_add_line(rd, rl, ZKL__LINE_READ, nd, len);
  }
  free(rd);
  return rc;
}

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
  version = a->dversion; /* as we wrote it: 1 if its create marked it */
  rc = ZKL_ELOST;
  a->marks |= ZKL__MARK_READ; /* before our own watch can see it */
  for (tries = 0; s && !s->expired && a->path && tries < DOWNGRADE_TRIES &&
                  atomic_load(&a->state) != ZKL_STATE_LOST;
       tries++) {
    zkl__call_t set, *ptrs[1] = {&set};
    s->refs++;
    zkl__call_init(&set, c, &a->cv);
    pthread_mutex_unlock(&c->mu);
    zkl__set(&set, s, a->path, nd, (int)len, version);
    pthread_mutex_lock(&c->mu);
    zkl__call_wait(ptrs, 1);
    rc = set.rc;
    /* landed, on whose node? One made again at our name by someone else
     * was at version 0, as ours may have been: ours lost, and that node,
     * now at the version our guard would check, never taken for ours */
    if (rc == ZOK && !zkl__owns_on(a, s, &set.stat))
      rc = ZNONODE;
    else if (rc == ZOK)
      a->dversion = set.stat.version;
    if (rc == ZBADVERSION)
      rc = reread(c, s, a, &nd, &len, &version, &rewritten);
    zkl__session_put(c, s);
    if (rc != ZOK || set.rc == ZOK)
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
  rc = stat_own(c, s, a, 1, &st, &intact, NULL, NULL);
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

