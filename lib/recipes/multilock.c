/* multilock.c: several locks held as one, with no deadlock.
 *
 * The engine's join of k queues (join.c) makes a node in every member's
 * queue in one transaction, all with one creation zxid, and lists the
 * queues in the same round trip. Every node is then a run of the queue
 * engine (run.c) as a member: it waits in its own queue under its own
 * policy, and the set holds when every run has granted. A waiter only
 * waits for older nodes, and the nodes of one acquisition are all exactly
 * as old, so no wait cycle can form (model: waits point from a larger
 * zxid to a strictly smaller one).
 *
 * Rules that keep it so: the nodes are created all or none; a member whose
 * node is gone with the session never joins again alone (its run ends
 * with ZKL__AGAIN, and the set starts over with a new transaction and a
 * new guid); any member's failure ends the others, and every node made is
 * deleted, at once or by the deferred deletes (found by the guid when the
 * transaction's answer was lost). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"

/* How many times the set starts over (sessions expiring, parents reaped,
 * answers lost) before the acquire gives up with the last reason. */
#define AGAIN_MAX 8

/* A set holding some members while it waits for others looks behind the
 * members it holds: first after YIELD_FIRST_MS, then every YIELD_EVERY_MS
 * (each plus up to as much again at random), and it yields if someone
 * other than a multi-lock waits there. */
#define YIELD_FIRST_MS 100
#define YIELD_EVERY_MS 200
/* Nodes behind a held member read to tell a contender from a planted
 * node (ephemeral or not), at most. */
#define YIELD_READS 4
/* A set that yielded waits BACKOFF_MS << yields (at most BACKOFF_MAX_MS),
 * plus up to as much again at random, before it enqueues again. */
#define BACKOFF_MS 20
#define BACKOFF_MAX_MS 1000

/* A member run's end, internal: the set gave way (see wait_all). */
#define YIELDED (-1998)

struct member {
  zkl__queue_t q; /* first: notify() casts back */
  zkl_multilock_t *ml;
  zkl__acq_t *a;  /* the run, then the hold (under c->mu) */
  int rc;         /* the run's outcome, 1 while it runs (under c->mu) */
  int last;       /* the last state notified (callback thread) */
};

struct zkl_multilock {
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_multilock_fn fn;
  void *ctx;
  size_t n;
  struct member *m; /* in the order of their paths */
  void *data;
  zkl__join_t j;     /* the members' queues, in the same order */
  pthread_cond_t cv; /* member runs ended */
  /* under c->mu */
  int running;       /* member runs not ended yet */
  int failed;        /* the first member's failure, or 0 */
  int busy;          /* an acquire or release is under way */
  int held;          /* the set holds */
  int64_t token;
  unsigned yields; /* times the acquire under way gave way */
  int dropping;    /* deletes drop_siblings sent, not answered yet */
  /* the set's state as the callback last heard it, and for which hold */
  _Atomic uint64_t epoch;
  uint64_t told_epoch;
  int told;
};

/* Severity of a member's state: the set's is the worst. */
static int rank(int st) {
  switch (st) {
  case ZKL_STATE_HELD: return 1;
  case ZKL_STATE_REVOKE_REQUESTED: return 2;
  case ZKL_STATE_AT_RISK: return 3;
  case ZKL_STATE_LOST: return 4;
  }
  return 0;
}

/* The delete of a member's node the set gave up (drop_siblings). */
struct drop {
  zkl__call_t call;
  zkl_multilock_t *ml;
  zkl__session_t *s;
  char path[];
};

static void on_dropped(zkl__call_t *call) {
  struct drop *d = call->ctx;
  zkl_client_t *c = call->c;
  if (zkl__is_conn_error(call->rc))
    zkl__defer_delete(c, d->s, d->path); /* once connected again */
  d->ml->dropping--;
  zkl__session_put(c, d->s);
  zkl__call_free(call);
  free(d);
  pthread_cond_broadcast(&c->cv); /* an unlock may wait for us */
}

/* A member lost while the set holds (its node deleted or rewritten by
 * someone, or forced out): the set holds no more, and its other nodes
 * would only keep everyone out of those locks until the unlock. They go
 * now, as ours (their holds stood until this), and their holds are LOST
 * too; the unlock waits for these deletes and gives the verdict. Not
 * while an unlock is under way: it deletes them itself (it clears `held`
 * first). Under c->mu. */
static void drop_siblings(zkl_multilock_t *ml, const struct member *lost) {
  zkl_client_t *c = ml->c;
  size_t i;
  for (i = 0; ml->held && i < ml->n; i++) {
    zkl__acq_t *a = ml->m[i].a;
    int st = a ? atomic_load(&a->state) : ZKL_STATE_NONE;
    size_t len;
    struct drop *d;
    if (&ml->m[i] == lost || !a || !a->sess || !a->path ||
        (st != ZKL_STATE_HELD && st != ZKL_STATE_AT_RISK &&
         st != ZKL_STATE_REVOKE_REQUESTED))
      continue;
    len = strlen(a->path) + 1;
    if ((d = malloc(sizeof *d + len))) {
      memcpy(d->path, a->path, len);
      d->ml = ml;
      d->s = a->sess;
      d->s->refs++;
      ml->dropping++;
      zkl__call_init_fn(&d->call, c, on_dropped, d);
      if (zkl__delete(&d->call, d->s, d->path) != ZOK) {
        d->call.rc = ZCONNECTIONLOSS;
        on_dropped(&d->call);
      }
    } else {
      zkl__defer_delete(c, a->sess, a->path);
    }
    zkl__lose(c, a, "another member of its multi-lock was lost");
  }
}

/* A member's state change, on the callback thread: a loss ends the set
 * (drop_siblings); the set's state, when it holds and that state
 * changed, goes to the callback. */
static void member_notify(zkl__queue_t *q, int state, uint64_t token) {
  struct member *me = (struct member *)q;
  zkl_multilock_t *ml = me->ml;
  uint64_t epoch = atomic_load(&ml->epoch);
  int worst = ZKL_STATE_NONE;
  size_t i;
  (void)token;
  me->last = state;
  if (state == ZKL_STATE_LOST) {
    pthread_mutex_lock(&ml->c->mu);
    drop_siblings(ml, me);
    pthread_mutex_unlock(&ml->c->mu);
  }
  if (!epoch || !ml->fn)
    return;
  for (i = 0; i < ml->n; i++)
    if (rank(ml->m[i].last) > rank(worst))
      worst = ml->m[i].last;
  if (worst == ml->told && epoch == ml->told_epoch)
    return;
  ml->told = worst;
  ml->told_epoch = epoch;
  ml->fn(ml, worst, (uint64_t)ml->token, ml->ctx);
}

/* Closes the first `opened` members' queues and frees ml. */
static void ml_free(zkl_multilock_t *ml, size_t opened) {
  size_t i;
  for (i = 0; i < opened; i++) {
    zkl__handle_remove(&ml->m[i]);
    zkl__queue_close(&ml->m[i].q);
  }
  pthread_cond_destroy(&ml->cv);
  free(ml->data);
  free(ml->m);
  free(ml);
}

static int by_name(const void *x, const void *y) {
  const zkl_multilock_member_t *a = x, *b = y;
  return strcmp(a->name, b->name);
}

/* The members checked (as every recipe's create checks its arguments,
 * and each mode) and sorted by name into *out, which the caller frees:
 * ZKL_OK, ZKL_EINVAL (also for a name given twice), ZKL_EFORKED,
 * ZKL_ENOMEM. */
static int sort_members(zkl_client_t *c, const zkl_multilock_member_t *members,
                        size_t n, const char *root,
                        const zkl_multilock_options_t *o,
                        zkl_multilock_member_t **out) {
  zkl_multilock_member_t *sorted;
  size_t i;
  int rc = ZKL_OK;
  if (!members || n < 1 || n > ZKL_MULTILOCK_MAX)
    return ZKL_EINVAL;
  for (i = 0; i < n && rc == ZKL_OK; i++) {
    rc = zkl__recipe_args(c, members[i].name, root, o ? o->data : NULL,
                          o ? o->data_len : 0, o ? o->flags : 0,
                          ZKL_MUTEX_NO_NODE_WATCH | ZKL_MUTEX_KAZOO);
    if (rc == ZKL_OK && members[i].mode != ZKL_MODE_EXCLUSIVE &&
        members[i].mode != ZKL_MODE_SHARED)
      rc = ZKL_EINVAL;
  }
  if (rc != ZKL_OK)
    return rc;
  if (!(sorted = malloc(n * sizeof *sorted)))
    return ZKL_ENOMEM;
  memcpy(sorted, members, n * sizeof *sorted);
  /* sorted only so that the transaction's order is the same for all:
   * safety does not depend on it */
  qsort(sorted, n, sizeof *sorted, by_name);
  for (i = 1; i < n; i++)
    if (strcmp(sorted[i - 1].name, sorted[i].name) == 0) {
      free(sorted);
      return ZKL_EINVAL;
    }
  *out = sorted;
  return ZKL_OK;
}

/* A multi-lock of n members, none of their queues open yet; NULL when
 * out of memory. */
static zkl_multilock_t *ml_new(zkl_client_t *c, size_t n,
                               const zkl_multilock_options_t *o) {
  zkl_multilock_t *ml = calloc(1, sizeof *ml);
  if (!ml || !(ml->m = calloc(n, sizeof *ml->m)) ||
      zkl__cond_init(&ml->cv) != ZKL_OK) {
    if (ml)
      free(ml->m);
    free(ml);
    return NULL;
  }
  ml->c = c;
  ml->fork_gen = c->fork_gen;
  ml->fn = o ? o->state_fn : NULL;
  ml->ctx = o ? o->state_ctx : NULL;
  ml->n = n;
  ml->j.c = c;
  ml->j.n = n;
  return ml;
}

/* Opens member i's queue, <root>/<m->name>, whose nodes are named as a
 * mutex's (exclusive) or a read-write lock's (shared), or as kazoo's. */
static int open_member(zkl_multilock_t *ml, size_t i, const char *root,
                       const zkl_multilock_member_t *m,
                       const zkl_multilock_options_t *o) {
  unsigned flags = o ? o->flags : 0;
  int kazoo = (flags & ZKL_MUTEX_KAZOO) != 0;
  int shared = m->mode == ZKL_MODE_SHARED;
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, m->name, o);
  struct member *me = &ml->m[i];
  me->ml = ml;
  spec.marker = shared ? (kazoo ? "__lock__" : "__WRIT__")
                       : (kazoo ? "__lock__" : "-lock-");
  spec.marker_shared = shared ? (kazoo ? "__rlock__" : "__READ__") : NULL;
  spec.flags = (flags & ZKL_MUTEX_NO_NODE_WATCH ? ZKL__Q_NO_NODE_WATCH : 0) |
               (kazoo ? ZKL__Q_KEEP_DIR : 0);
  spec.notify = member_notify; /* a loss ends the set: drop_siblings */
  ml->j.q[i] = &me->q;
  ml->j.shared[i] = shared;
  return zkl__queue_open(&me->q, ml->c, &spec, me);
}

int zkl_multilock_create(zkl_multilock_t **out, zkl_client_t *c,
                         const zkl_multilock_member_t *members, size_t n,
                         const zkl_multilock_options_t *o) {
  const char *root = o && o->root ? o->root : "/locks";
  zkl_multilock_member_t *sorted = NULL;
  zkl_multilock_t *ml;
  size_t opened = 0;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  if ((rc = sort_members(c, members, n, root, o, &sorted)) != ZKL_OK)
    return rc;
  if (!(ml = ml_new(c, n, o))) {
    free(sorted);
    return ZKL_ENOMEM;
  }
  while (opened < n &&
         (rc = open_member(ml, opened, root, &sorted[opened], o)) == ZKL_OK)
    opened++;
  free(sorted);
  if (rc == ZKL_OK && o && o->data_len) {
    if ((ml->data = malloc(o->data_len)))
      memcpy(ml->data, o->data, o->data_len);
    else
      rc = ZKL_ENOMEM;
    ml->j.data = ml->data;
    ml->j.len = o->data_len;
  }
  if (rc == ZKL_OK)
    rc = zkl__handle_add(ml);
  if (rc != ZKL_OK) {
    ml_free(ml, opened);
    return rc;
  }
  *out = ml;
  return ZKL_OK;
}

/* ---- waiting in every queue ---------------------------------------------- */

/* The set's acquire fails with rc: every member run still going is given
 * up (it ends soon, and member_done() counts it). Under c->mu. */
static void fail(zkl_multilock_t *ml, int rc) {
  size_t i;
  ml->failed = rc;
  for (i = 0; i < ml->n; i++)
    if (ml->m[i].rc == 1)
      zkl__queue_abandon(ml->m[i].a);
}

/* A member's run ended (event thread, under c->mu). The first failure
 * ends the others: a set never holds in part. */
static void member_done(zkl__acq_t *a, int rc, void *ctx) {
  struct member *me = ctx;
  zkl_multilock_t *ml = me->ml;
  me->a = a;
  me->rc = rc;
  ml->running--;
  if (rc != ZKL_OK && !ml->failed)
    fail(ml, rc);
  pthread_cond_broadcast(&ml->cv);
}

/* A number from 0 to max - 1, not to be guessed alike by two processes. */
static unsigned jitter(unsigned max) {
  unsigned v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
    v = (unsigned)zkl_now_ms() * 2654435761u;
  return max ? v % max : 0;
}

/* Whether someone other than a multi-lock waits behind a member the set
 * holds (under c->mu, dropped while asking). Such a one may hold, or be
 * about to take, a lock the set waits for: a nested locker in one fixed
 * order, or a sequential multi-lock (Curator's) that holds its first lock
 * while it waits for its second. Kept, the set's held member would close
 * a wait cycle with it; given back, the cycle cannot form. Multi-locks
 * never hold while waiting for a lock held by a younger one, so they are
 * not waited for here: among themselves the sets keep their order. A node
 * behind must be ephemeral to count: a planted one never waits. */
static int someone_behind(zkl_multilock_t *ml, zkl__join_txn_t *t) {
  zkl_client_t *c = ml->c;
  zkl__call_t ls[ZKL_MULTILOCK_MAX], rd[YIELD_READS];
  zkl__call_t *w[ZKL_MULTILOCK_MAX > YIELD_READS ? ZKL_MULTILOCK_MAX
                                                 : YIELD_READS];
  size_t i, nl = 0, held[ZKL_MULTILOCK_MAX];
  int k, nr = 0, found = 0;
  if (t->s != c->sess || t->s->expired || c->state != ZKL_CLIENT_CONNECTED)
    return 0; /* the members' runs hear of it, and end */
  for (i = 0; i < ml->n; i++)
    if (ml->m[i].rc == ZKL_OK) {
      zkl__call_init(&ls[nl], c, &ml->cv);
      w[nl] = &ls[nl];
      held[nl++] = i;
    }
  t->s->refs++;
  pthread_mutex_unlock(&c->mu);
  for (i = 0; i < nl; i++)
    zkl__children(&ls[i], t->s, ml->m[held[i]].q.dir);
  pthread_mutex_lock(&c->mu);
  zkl__call_wait(w, (int)nl);
  for (i = 0; i < nl && nr < YIELD_READS; i++) {
    struct member *me = &ml->m[held[i]];
    const char *ours = strrchr(t->paths[held[i]], '/') + 1;
    zkl__entry_t *e = NULL;
    int n = ls[i].rc == ZOK ? zkl__contenders(ls[i].kids.data,
                                             ls[i].kids.count, &e)
                            : 0;
    int j, m = -1;
    for (j = 0; j < n; j++)
      if (strcmp(e[j].name, ours) == 0)
        m = j;
    for (j = 0; m >= 0 && j < n && nr < YIELD_READS; j++) {
      if (j == m || !zkl__seq_before(e[m].seq, e[j].seq) ||
          strstr(e[j].name, ZKL__ML_TAG) ||
          (ml->j.shared[held[i]] && !(e[j].kind & ZKL__KIND_EXCL)))
        continue;
      char *path = zkl__child(me->q.dir, e[j].name);
      if (!path)
        continue;
      zkl__call_init(&rd[nr], c, &ml->cv);
      w[nr] = &rd[nr];
      pthread_mutex_unlock(&c->mu);
      zkl__exists(&rd[nr], t->s, path);
      pthread_mutex_lock(&c->mu);
      nr++;
      free(path);
    }
    free(e);
  }
  zkl__call_wait(w, nr);
  for (k = 0; k < nr; k++) {
    found |= rd[k].rc == ZOK && rd[k].stat.ephemeralOwner != 0;
    zkl__call_free(&rd[k]);
  }
  for (i = 0; i < nl; i++)
    zkl__call_free(&ls[i]);
  zkl__session_put(c, t->s);
  return found;
}

/* Waits (under c->mu) for every member run to end; the first failure,
 * or ZKL_OK. While the set holds some members and waits for others, it
 * looks behind those it holds (YIELD_FIRST_MS says when) and gives way
 * (YIELDED) when someone_behind() says so. */
static int wait_members(zkl_multilock_t *ml, zkl__join_txn_t *t) {
  zkl_client_t *c = ml->c;
  int64_t look = 0;
  while (ml->running > 0) {
    size_t held = 0, i;
    struct timespec ts;
    for (i = 0; i < ml->n; i++)
      held += ml->m[i].rc == ZKL_OK;
    if (!held || ml->failed) {
      look = 0;
      pthread_cond_wait(&ml->cv, &c->mu);
      continue;
    }
    if (!look) /* held in part from now on */
      look = zkl_now_ms() + YIELD_FIRST_MS + jitter(YIELD_FIRST_MS);
    if (zkl_now_ms() < look) {
      zkl__deadline_ts(look, &ts);
      pthread_cond_timedwait(&ml->cv, &c->mu, &ts);
      continue;
    }
    look = zkl_now_ms() + YIELD_EVERY_MS + jitter(YIELD_EVERY_MS);
    if (someone_behind(ml, t) && !ml->failed && ml->running > 0)
      fail(ml, YIELDED);
  }
  return ml->failed;
}

/* Starts a member run on every node the transaction made, and waits for
 * all to end. ZKL_OK: every member holds (zkl__join_still_held). While it
 * holds some and waits for others, it gives way (YIELDED) to anyone else
 * who waits behind one it holds (someone_behind). */
static int wait_all(zkl_multilock_t *ml, zkl__join_txn_t *t, int mode,
                    int64_t deadline) {
  zkl_client_t *c = ml->c;
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  size_t i;
  int rc;
  pthread_mutex_lock(&c->mu);
  ml->failed = 0;
  ml->running = 0;
  if ((rc = zkl__join_halted(&ml->j, -1)) != ZKL_OK) {
    for (i = 0; i < ml->n; i++)
      zkl__defer_delete_now(c, t->s, t->paths[i]);
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
  for (i = 0; i < ml->n; i++) {
    struct member *me = &ml->m[i];
    me->rc = 1;
    me->a = NULL;
    ml->running++;
    rc = zkl__queue_start_member(&me->q, mode, ml->j.shared[i], deadline,
                                 t->s, t->paths[i], t->czxid, &t->ls[i],
                                 member_done, me, &me->a);
    if (rc != ZKL_OK) {
      zkl__defer_delete_now(c, t->s, t->paths[i]);
      me->a = NULL;
      member_done(NULL, rc, me);
    }
  }
  if ((rc = wait_members(ml, t)) == ZKL_OK) {
    for (i = 0; i < ml->n; i++)
      holds[i] = ml->m[i].a;
    rc = zkl__join_still_held(t, holds);
  }
  pthread_mutex_unlock(&c->mu);
  /* failed: every node still there goes before the call returns, as a
   * single lock's does (one the connection keeps from us is deferred) */
  for (i = 0; rc != ZKL_OK && i < ml->n; i++)
    if (ml->m[i].a) {
      zkl__queue_release(&ml->m[i].q, ml->m[i].a, 0);
      ml->m[i].a = NULL;
    }
  return rc;
}

/* After the set gave way: a pause that grows with each time it did, at
 * random within it, so that those it gave way to go first and two sets
 * that keep meeting part. ZKL_OK, or why the acquire must end. */
static int back_off(zkl_multilock_t *ml, int64_t deadline) {
  zkl_client_t *c = ml->c;
  unsigned shift = ml->yields < 6 ? ml->yields : 6;
  int64_t pause = (int64_t)BACKOFF_MS << shift, until;
  struct timespec ts;
  int rc;
  if (pause > BACKOFF_MAX_MS)
    pause = BACKOFF_MAX_MS;
  until = zkl_now_ms() + pause + jitter((unsigned)pause);
  if (deadline >= 0 && until > deadline)
    until = deadline;
  pthread_mutex_lock(&c->mu);
  ml->yields++;
  zkl__deadline_ts(until, &ts);
  while ((rc = zkl__join_halted(&ml->j, deadline)) == ZKL_OK &&
         zkl_now_ms() < until)
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  pthread_mutex_unlock(&c->mu);
  zkl__log(c, ZKL_LOG_DEBUG, "multi-lock gave way (%u times)", ml->yields);
  return rc;
}

/* One transaction and the wait in every queue behind it: ZKL_OK with the
 * set held, ZKL__AGAIN or YIELDED to start over, or why not. */
static int once(zkl_multilock_t *ml, int mode, int64_t deadline) {
  zkl__join_txn_t t;
  int rc = zkl__join_enqueue(&ml->j, &t, deadline);
  if (rc != ZKL_OK)
    return rc;
  rc = wait_all(ml, &t, mode, deadline);
  if (rc == ZKL_OK)
    ml->token = t.czxid;
  zkl__join_txn_free(&t);
  return rc;
}

/* An acquire begins: ZKL_OK (ml is busy with it until it ends), or why
 * not. A blocking one would never end where this thread holds a member
 * through another object already (ZKL_EDEADLK). */
static int begin(zkl_multilock_t *ml, int mode) {
  uint64_t me;
  size_t i;
  int rc = ZKL_OK;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  me = zkl__self_tid();
  for (i = 0; mode == ZKL__BLOCK && i < ml->n; i++)
    if (zkl__held_elsewhere(&ml->m[i].q, me))
      return ZKL_EDEADLK;
  pthread_mutex_lock(&ml->c->mu);
  if (ml->busy || ml->held)
    rc = ZKL_EBUSY;
  else if (ml->c->stopping)
    rc = ZKL_ECLOSED;
  if (rc == ZKL_OK) {
    ml->busy = 1;
    ml->yields = 0;
    zkl__join_begin(&ml->j);
  }
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

/* One transaction after another (once()) until the set holds or the
 * acquire must end: ZKL_OK, or why not. A set that gave way goes again
 * after its pause, as often as the deadline allows; one that must start
 * over (ZKL__AGAIN) at most AGAIN_MAX times. */
static int attempts(zkl_multilock_t *ml, int mode, int64_t deadline) {
  int64_t until = mode == ZKL__TIMED ? deadline : -1;
  int rc = ZKL_OK, tries;
  for (tries = 0; tries < AGAIN_MAX; tries++) {
    rc = once(ml, mode, deadline);
    if (rc == YIELDED) {
      tries--; /* not a failure: bounded by the deadline, if any */
      rc = back_off(ml, until);
      if (rc != ZKL_OK)
        break;
      rc = ZKL__AGAIN;
      continue;
    }
    if (rc != ZKL__AGAIN)
      break;
    pthread_mutex_lock(&ml->c->mu);
    rc = zkl__join_halted(&ml->j, until);
    pthread_mutex_unlock(&ml->c->mu);
    if (rc != ZKL_OK)
      break;
    rc = ZKL__AGAIN;
  }
  /* ZKL__AGAIN: starting over kept failing */
  return rc == ZKL__AGAIN ? ZSESSIONEXPIRED : rc;
}

static int acquire(zkl_multilock_t *ml, int mode, int64_t deadline) {
  zkl_client_t *c;
  int rc = begin(ml, mode);
  if (rc != ZKL_OK)
    return rc;
  c = ml->c;
  rc = attempts(ml, mode, deadline);
  pthread_mutex_lock(&c->mu);
  ml->busy = 0;
  if (rc == ZKL_OK) {
    ml->held = 1;
    /* the set's HELD: the members' came while it did not hold yet */
    atomic_fetch_add(&ml->epoch, 1);
    zkl__post_state(c, ml->m[0].a, atomic_load(&ml->m[0].a->state));
  }
  pthread_mutex_unlock(&c->mu);
  if (rc != ZKL_OK && rc != ZKL_EBUSY)
    zkl__log(c, ZKL_LOG_DEBUG, "multi-lock acquire ended: %s",
             zkl_err_name(rc));
  return rc;
}

int zkl_multilock_lock(zkl_multilock_t *ml) {
  return acquire(ml, ZKL__BLOCK, -1);
}

int zkl_multilock_trylock(zkl_multilock_t *ml) {
  return acquire(ml, ZKL__TRY, -1);
}

int zkl_multilock_timedlock(zkl_multilock_t *ml, int64_t deadline_ms) {
  /* ZKL_NO_DEADLINE: zkl_multilock_lock(), its ZKL_EDEADLK check included */
  return acquire(ml, zkl__deadline_mode(deadline_ms),
                 zkl__deadline_in(deadline_ms));
}

/* The set's holds, kept for the caller until it gives them back with
 * put(): ZKL_OK, ZKL_ENOTOWNER (not held), ZKL_EINVAL, ZKL_EFORKED. */
static int holds_get(zkl_multilock_t *ml, zkl__acq_t **holds) {
  size_t i;
  int rc = ZKL_OK;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  if (!ml->held || ml->busy)
    rc = ml->busy ? ZKL_EBUSY : ZKL_ENOTOWNER;
  else
    ml->busy = 1;
  for (i = 0; rc == ZKL_OK && i < ml->n; i++)
    holds[i] = ml->m[i].a;
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

static int holds_put(zkl_multilock_t *ml, int rc) {
  pthread_mutex_lock(&ml->c->mu);
  ml->busy = 0;
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

/* Releases every member; the worst verdict. Returns once every node is
 * gone, or left to the deferred deletes while disconnected. */
static int release(zkl_multilock_t *ml, zkl__acq_t **holds) {
  size_t i;
  int rc = ZKL_OK;
  pthread_mutex_lock(&ml->c->mu);
  ml->held = 0;
  while (ml->dropping > 0)
    pthread_cond_wait(&ml->c->cv, &ml->c->mu);
  pthread_mutex_unlock(&ml->c->mu);
  for (i = 0; i < ml->n; i++) {
    int r = zkl__queue_release(&ml->m[i].q, holds[i], 1);
    if (rc == ZKL_OK || (r == ZKL_EREVOKED && rc == ZKL_ELOST))
      rc = r;
    ml->m[i].a = NULL;
  }
  return rc;
}

int zkl_multilock_unlock(zkl_multilock_t *ml) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  int rc = holds_get(ml, holds);
  return rc != ZKL_OK ? rc : holds_put(ml, release(ml, holds));
}

int zkl_multilock_guarded(zkl_multilock_t *ml, zkl_op_t *ops, size_t n,
                          unsigned flags) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  int rc = holds_get(ml, holds);
  if (rc != ZKL_OK)
    return rc;
  rc = zkl__guarded(holds, ml->n, ops, n, flags);
  if (rc == ZKL_OK && (flags & ZKL_GUARD_RELEASE))
    release(ml, holds); /* the nodes went with the transaction */
  return holds_put(ml, rc);
}

int zkl_multilock_verify(zkl_multilock_t *ml) {
  zkl__acq_t *holds[ZKL_MULTILOCK_MAX];
  size_t i;
  int rc = holds_get(ml, holds);
  if (rc != ZKL_OK)
    return rc;
  for (i = 0; i < ml->n && rc == ZKL_OK; i++)
    rc = zkl__queue_verify(&ml->m[i].q, holds[i]);
  return holds_put(ml, rc);
}

int zkl_multilock_state(const zkl_multilock_t *ml) {
  int worst = ZKL_STATE_NONE;
  size_t i;
  if (!ml)
    return ZKL_STATE_NONE;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  for (i = 0; ml->held && i < ml->n; i++) {
    int st = atomic_load(&ml->m[i].a->state);
    if (rank(st) > rank(worst))
      worst = st;
  }
  pthread_mutex_unlock(&ml->c->mu);
  return worst;
}

int zkl_multilock_token(const zkl_multilock_t *ml, uint64_t *token) {
  int rc = ZKL_OK;
  if (!ml || !token)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&ml->c->mu);
  if (ml->held)
    *token = (uint64_t)ml->token;
  else
    rc = ZKL_ENOTOWNER;
  pthread_mutex_unlock(&ml->c->mu);
  return rc;
}

int zkl_multilock_cancel(zkl_multilock_t *ml) {
  size_t i;
  if (!ml)
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  for (i = 0; i < ml->n; i++)
    zkl__queue_cancel(&ml->m[i].q);
  /* a transaction's wait for the connection looks at the generations */
  pthread_mutex_lock(&ml->c->mu);
  pthread_cond_broadcast(&ml->c->cv);
  pthread_mutex_unlock(&ml->c->mu);
  return ZKL_OK;
}

int zkl_multilock_destroy(zkl_multilock_t *ml) {
  zkl_client_t *c;
  int busy;
  if (!ml)
    return ZKL_OK;
  if (!zkl__handle_live(ml))
    return ZKL_EINVAL;
  if (zkl__forked(ml->fork_gen))
    return ZKL_EFORKED;
  c = ml->c;
  pthread_mutex_lock(&c->mu);
  busy = ml->busy || ml->held;
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(ml))
    return ZKL_EINVAL;
  ml_free(ml, ml->n);
  return ZKL_OK;
}
