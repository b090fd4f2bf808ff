/* SPDX-License-Identifier: Apache-2.0 */
/* joinwait.c: a multi-lock's acquire, one run of the machine with no
 * thread of its own (the conductor, run.c zkl__run_start_bare).
 *
 * An attempt joins every queue in one transaction (join.c), then starts a
 * member run on each node (run.c zkl__queue_start_member): each waits in
 * its own queue under its own policy, and the set holds when every run
 * has granted and join.c finds the k holds standing together. A waiter
 * only waits for older nodes, and the nodes of one attempt are all
 * exactly as old, so no wait cycle forms among multi-locks (model: waits
 * point from a larger zxid to a strictly smaller one). While the set
 * holds some members and waits for others, it looks behind those it holds
 * and gives way to anyone else waiting there (step_wait), pauses
 * (step_back_off) and joins again. A member whose node went with the
 * session never joins again alone (its run ends with ZKL__AGAIN): the set
 * starts over with a new transaction. Any member's failure ends the
 * others, and every node made is deleted before the next attempt or the
 * end (members_release).
 *
 * Every step runs under c->mu and never waits: the answers, the member
 * runs' ends (member_done, on the event thread), the event thread's
 * timers (zkl__park with a time) and kicks (cancel, session events) move
 * it on. When it ends, the event thread calls the caller's done. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"

/* How many times the set starts over at once (sessions
 * expiring, parents reaped, answers lost, its nodes deleted by someone);
 * each start-over after these first pauses as a set that gave way does,
 * so that trouble that keeps coming costs round trips at a bounded rate.
 * The acquire never gives up on it: only its deadline, a cancel, the
 * client's end or an error that retrying cannot fix end it, as a
 * mutex's. */
#define AGAIN_MAX 8

/* A set holding some members while it waits for others looks behind the
 * members it holds: first after YIELD_FIRST_MS, then every YIELD_EVERY_MS
 * (each plus up to as much again at random), and it yields if someone
 * other than a multi-lock waits there. At most ZKL__YIELD_READS nodes
 * behind are read per look. */
#define YIELD_FIRST_MS 100
#define YIELD_EVERY_MS 200
/* A set that yielded waits BACKOFF_MS << yields (at most BACKOFF_MAX_MS),
 * plus up to as much again at random, before it enqueues again. */
#define BACKOFF_MS 20
#define BACKOFF_MAX_MS 1000

/* A member run's end, internal: the set gave way (see step_wait). */
#define YIELDED (-1998)

static void step_once(zkl__acq_t *a);
static void step_back_off(zkl__acq_t *a);
static void step_wait(zkl__acq_t *a);

/* A number from 0 to max - 1, not to be guessed alike by two processes. */
static unsigned jitter(unsigned max) {
  unsigned v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
    v = (unsigned)zkl_now_ms() * 2654435761u;
  return max ? v % max : 0;
}

/* The attempt fails with rc: every member run still going is given up
 * (it ends soon, and member_done() counts it). */
static void fail(zkl__join_t *j, int rc) {
  size_t i;
  j->failed = rc;
  for (i = 0; i < j->n; i++)
    if (j->rc[i] == 1 && j->a[i])
      zkl__queue_abandon(j->a[i]);
}

/* A member's run ended (event thread). The first failure ends the others:
 * a set never holds in part. */
static void member_done(zkl__acq_t *a, int rc, void *ctx) {
  zkl__join_t *j = ctx;
  size_t i;
  for (i = 0; i < j->n; i++)
    if (j->a[i] == a && j->rc[i] == 1)
      j->rc[i] = rc;
  j->running--;
  if (rc != ZKL_OK && !j->failed)
    fail(j, rc);
  if (j->run)
    zkl__kick(j->run);
}

/* The conductor's end, on the event thread: its acquisition is freed. */
static void conductor_done(zkl__acq_t *none, int rc, void *ctx) {
  zkl__join_t *j = ctx;
  (void)none;
  j->run = NULL;
  free(j->w); /* every call in it answered and freed */
  j->w = NULL;
  j->done(j, rc, j->ctx);
}

/* ---- an attempt's end ---------------------------------------------------- */

/* The next attempt after a pause that grows with n (the times the set
 * gave way, or started over beyond AGAIN_MAX), at random within it, so
 * that those it gave way to go first and two sets that keep meeting
 * part; never past the deadline. */
static void pause_then_again(zkl__acq_t *a, unsigned n) {
  zkl__join_t *j = zkl__join_of(a);
  unsigned shift = n < 6 ? n : 6;
  int64_t pause = (int64_t)BACKOFF_MS << shift;
  if (pause > BACKOFF_MAX_MS)
    pause = BACKOFF_MAX_MS;
  j->pause = zkl_now_ms() + pause + jitter((unsigned)pause);
  if (j->until >= 0 && j->pause > j->until)
    j->pause = j->until;
  a->run->next = step_back_off;
}

/* The attempt ended with rc (its members released): the acquire ends, or
 * joins again (ZKL__AGAIN: at once AGAIN_MAX times, then each after
 * a pause; YIELDED after a pause, as often as the deadline allows). */
static void attempt_end(zkl__acq_t *a, int rc) {
  zkl__join_t *j = zkl__join_of(a);
  if (rc == ZKL_OK)
    j->token = j->w->t.czxid;
  zkl__join_txn_free(&j->w->t);
  if (rc == YIELDED) {
    pause_then_again(a, j->yields++);
    return;
  }
  if (rc == ZKL__AGAIN &&
      (rc = zkl__join_halted(j, j->first ? -1 : j->until)) == ZKL_OK) {
    if (++j->tries < AGAIN_MAX)
      a->run->next = step_once;
    else
      pause_then_again(a, (unsigned)(j->tries - AGAIN_MAX));
    return;
  }
  zkl__finish(a, rc);
}

/* The deletes members_release() sent are answered: what they could not
 * do is left to the deferred deletes; the members are no more. */
static void step_released(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  zkl_client_t *c = j->c;
  size_t i;
  for (i = 0; i < j->n; i++) {
    zkl__acq_t *m = j->a[i];
    zkl__call_t *del = &j->w->aux[i];
    if (!m)
      continue;
    if (del->ctx && zkl__is_conn_error(del->rc))
      zkl__defer_delete(c, m->sess, m->path, 0);
    zkl__call_free(del);
    atomic_store(&m->state, ZKL_STATE_NONE);
    zkl__post_state(c, m, ZKL_STATE_NONE);
    zkl__acq_free(c, m); /* and its session's reference */
    j->a[i] = NULL;
  }
  attempt_end(a, j->end);
}

/* The attempt failed with rc: every node still there goes before the next
 * attempt or the end, as a single lock's does when its acquire fails (one
 * the connection keeps from us is left to the deferred deletes). Not one
 * LOST already, nor one gone with its session. */
static void members_release(zkl__acq_t *a, int rc) {
  zkl__join_t *j = zkl__join_of(a);
  zkl_client_t *c = j->c;
  size_t i;
  j->end = rc;
  for (i = 0; i < j->n; i++) {
    zkl__acq_t *m = j->a[i];
    zkl__call_t *del = &j->w->aux[i];
    memset(del, 0, sizeof *del); /* ctx stays NULL: no delete sent */
    if (!m)
      continue;
    zkl__acq_unlink(c, m); /* our own delete is not a loss */
    if (atomic_load(&m->state) == ZKL_STATE_LOST || !m->path || !m->sess ||
        m->sess->expired)
      continue;
    if (c->state != ZKL_CLIENT_CONNECTED) {
      /* a delete sent now would only wait for the reconnection */
      zkl__defer_delete(c, m->sess, m->path, 0);
      continue;
    }
    zkl__prep(a, del);
    zkl__sent(a, del, zkl__delete(del, m->sess, m->path));
  }
  a->run->next = step_released;
}

/* ---- the wait in every queue --------------------------------------------- */

/* Every member run ended and, if all granted, join.c checked that they
 * stand together: rc is the attempt's outcome. */
static void members_ended(zkl__acq_t *a, int rc) {
  if (rc == ZKL_OK)
    attempt_end(a, ZKL_OK);
  else
    members_release(a, rc);
}

/* The reads step_behind_listed() sent: a node behind that is ephemeral is
 * someone waiting; then the set gives way, if it still waits. */
static void step_behind_read(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  struct zkl__join_calls *w = j->w;
  int k, found = 0;
  for (k = 0; k < w->nr; k++) {
    found |= w->rd[k].rc == ZOK && !zkl__node_lasting(&w->rd[k].stat);
    zkl__call_free(&w->rd[k]);
  }
  if (found && !j->failed && j->running > 0)
    fail(j, YIELDED);
  a->run->next = step_wait;
}

/* Reads the nodes behind a held member that may be contenders (not ours,
 * not a multi-lock's, exclusive where the member is shared), at most
 * ZKL__YIELD_READS in all, from listing ls of held member i. */
static void read_behind(zkl__acq_t *a, zkl__call_t *ls, size_t i) {
  zkl__join_t *j = zkl__join_of(a);
  struct zkl__join_calls *w = j->w;
  const char *ours = strrchr(w->t.paths[i], '/') + 1;
  zkl__entry_t *e = NULL;
  int n = ls->rc == ZOK ? zkl__contenders(ls->kids.data, ls->kids.count, &e)
                        : 0;
  int k, m = -1;
  for (k = 0; k < n; k++)
    if (strcmp(e[k].name, ours) == 0)
      m = k;
  for (k = 0; m >= 0 && k < n && w->nr < ZKL__YIELD_READS; k++) {
    char *path;
    if (k == m || !zkl__seq_before(e[m].seq, e[k].seq) ||
        strstr(e[k].name, ZKL__ML_TAG) ||
        (j->shared[i] && !(e[k].kind & ZKL__KIND_EXCL)))
      continue;
    if (!(path = zkl__child(j->q[i]->dir, e[k].name)))
      continue;
    zkl__prep(a, &w->rd[w->nr]);
    zkl__sent(a, &w->rd[w->nr], zkl__exists(&w->rd[w->nr], w->t.s, path));
    w->nr++;
    free(path);
  }
  free(e);
}

/* The listings of the held members' queues are in. */
static void step_behind_listed(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  size_t i;
  j->w->nr = 0;
  for (i = 0; i < j->w->nl; i++) {
    if (j->w->nr < ZKL__YIELD_READS)
      read_behind(a, &j->w->aux[i], j->w->held[i]);
    zkl__call_free(&j->w->aux[i]);
  }
  a->run->next = step_behind_read;
}

/* Whether someone other than a multi-lock waits behind a member the set
 * holds: lists those queues (step_behind_listed, step_behind_read follow). Such a one
 * may hold, or be about to take, a lock the set waits for: a nested
 * locker in one fixed order, or a sequential multi-lock (Curator's) that
 * holds its first lock while it waits for its second. Kept, the set's
 * held member would close a wait cycle with it; given back, the cycle
 * cannot form. Multi-locks never hold while waiting for a lock held by a
 * younger one, so they are not waited for here: among themselves the
 * sets keep their order. A node behind must be ephemeral to count: a
 * planted one never waits. */
static void look_behind(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  zkl_client_t *c = j->c;
  zkl__session_t *s = j->w->t.s;
  size_t i;
  a->run->next = step_wait;
  if (s != c->sess || s->expired || c->state != ZKL_CLIENT_CONNECTED)
    return; /* the members' runs hear of it, and end */
  j->w->nl = 0;
  for (i = 0; i < j->n; i++)
    if (j->rc[i] == ZKL_OK) {
      zkl__call_t *ls = &j->w->aux[j->w->nl];
      j->w->held[j->w->nl++] = i;
      zkl__prep(a, ls);
      zkl__sent(a, ls, zkl__children(ls, s, j->q[i]->dir));
    }
  a->run->next = step_behind_listed;
}

/* Waits for every member run to end. While the set holds some members
 * and waits for others, it looks behind those it holds (YIELD_FIRST_MS
 * says when) and gives way (YIELDED) when someone waits there. */
static void step_wait(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  int64_t now = zkl_now_ms();
  size_t held = 0, i;
  if (j->running <= 0) {
    if (j->failed)
      members_ended(a, j->failed);
    else
      zkl__join_check(a, members_ended);
    return;
  }
  for (i = 0; i < j->n; i++)
    held += j->rc[i] == ZKL_OK;
  if (!held || j->failed) {
    j->look = 0;
    zkl__park(a, step_wait, -1); /* member_done kicks it */
    return;
  }
  if (!j->look) /* held in part from now on */
    j->look = now + YIELD_FIRST_MS + jitter(YIELD_FIRST_MS);
  if (now < j->look) {
    zkl__park(a, step_wait, j->look);
    return;
  }
  j->look = now + YIELD_EVERY_MS + jitter(YIELD_EVERY_MS);
  look_behind(a);
}

/* The transaction is in: a member run on every node it made. */
static void joined(zkl__acq_t *a, int rc) {
  zkl__join_t *j = zkl__join_of(a);
  zkl__join_txn_t *t = &j->w->t;
  size_t i;
  if (rc != ZKL_OK) {
    attempt_end(a, rc);
    return;
  }
  j->failed = 0;
  j->running = 0;
  j->look = 0;
  j->first = 0; /* the members' looks are the first: ours is over */
  if ((rc = zkl__join_halted(j, -1)) != ZKL_OK) {
    for (i = 0; i < j->n; i++)
      zkl__defer_delete_now(j->c, t->s, t->paths[i], 0);
    attempt_end(a, rc);
    return;
  }
  for (i = 0; i < j->n; i++) {
    j->rc[i] = 1;
    j->a[i] = NULL;
    j->running++;
    rc = zkl__queue_start_member(j->q[i], j->mode, j->shared[i], j->deadline,
                                 t->s, t->paths[i], t->czxid, &t->ls[i],
                                 member_done, j, &j->a[i]);
    if (rc != ZKL_OK) {
      zkl__defer_delete_now(j->c, t->s, t->paths[i], 0);
      j->a[i] = NULL;
      j->rc[i] = rc;
      j->running--;
      if (!j->failed)
        fail(j, rc);
    }
  }
  a->run->next = step_wait;
}

/* An attempt: the transaction, then the wait (joined). */
static void step_once(zkl__acq_t *a) { zkl__join_send(a, joined); }

/* After giving way: the pause (until j->pause), then the next attempt,
 * unless the acquire must end meanwhile (a cancel, the deadline). */
static void step_back_off(zkl__acq_t *a) {
  zkl__join_t *j = zkl__join_of(a);
  int rc = zkl__join_halted(j, j->until);
  if (rc == ZKL_OK && zkl_now_ms() < j->pause) {
    zkl__park(a, step_back_off, j->pause);
    return;
  }
  zkl__post_log(j->c, ZKL_LOG_DEBUG,
                "multi-lock joins again (gave way %u times, started over %u)",
                j->yields, (unsigned)j->tries);
  if (rc != ZKL_OK)
    zkl__finish(a, rc);
  else
    step_once(a);
}

int zkl__join_acquire(zkl__join_t *j, int mode, int64_t deadline,
                      zkl__join_done_fn done, void *ctx) {
  int rc;
  j->mode = mode;
  j->deadline = deadline;
  j->until = mode == ZKL__TIMED ? deadline : -1;
  j->first = 1;
  j->done = done;
  j->ctx = ctx;
  j->tries = 0;
  j->yields = 0;
  j->token = 0;
  memset(j->a, 0, sizeof j->a);
  if (!(j->w = calloc(1, sizeof *j->w)))
    return ZKL_ENOMEM;
  rc = zkl__run_start_bare(j->q[0], step_once, j, conductor_done, j, &j->run);
  if (rc != ZKL_OK) {
    free(j->w);
    j->w = NULL;
  }
  return rc;
}

void zkl__join_kick(zkl__join_t *j) {
  if (j->run)
    zkl__kick(j->run);
}
