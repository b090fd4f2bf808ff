/* election.c: leader election on the queue engine.
 *
 * A candidacy is one run of the election's queue (run.c) with no thread
 * behind it, as an async hold's is (hold.c); leadership is the hold. The
 * engine confirms at the head that our node belongs to the current
 * session (ZKL__Q_VERIFY_OWNER) before the hold, and so the "elected"
 * callback, exists. When the run ends, the event thread calls
 * campaign_done() under c->mu, which records the outcome and wakes
 * zkl_election_wait().
 *
 * Stopping a candidacy (resign, a join after a loss, destroy) never waits
 * for its run: resign may be called from the election's own callback, on
 * the thread that settles runs. The run is abandoned, and the generation
 * it was started with tells campaign_done() that its end is stale. Only
 * destroy waits for the ends still to come, which write to the election. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { ELECT_IDLE, ELECT_CAMPAIGNING, ELECT_LEADING, ELECT_ENDED };

struct zkl_election {
  zkl__queue_t q; /* first: notify() casts back */
  zkl_client_t *c;
  unsigned fork_gen;
  zkl_election_fn fn;
  void *ctx;
  /* under c->mu */
  int phase;
  int campaign_rc;
  int looking;      /* the campaign's first look at the queue is under way */
  zkl__acq_t *acq;  /* the hold while leading, or a lost one */
  zkl__acq_t *run;  /* the acquisition while campaigning */
  unsigned gen;     /* the candidacy now; each stop moves it on */
  int inside;    /* threads in wait, join or verify: destroy is EBUSY */
  int verifying; /* threads reading or writing under e->acq: it stays */
  pthread_cond_t cv;
};

static int valid_id(const char *id) {
  size_t n;
  const unsigned char *p;
  if (!id)
    return 0;
  n = strlen(id);
  if (n == 0 || n > ZKL_ID_MAX)
    return 0;
  for (p = (const unsigned char *)id; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return 0;
  return 1;
}

/* Event thread, no lock held. A term resigned before its HELD came out
 * is not announced: a program that resigned must not hear it was elected
 * afterwards (its NONE still comes). */
static void election_notify(zkl__queue_t *q, int state, uint64_t token) {
  zkl_election_t *e = (zkl_election_t *)q;
  int current;
  pthread_mutex_lock(&e->c->mu);
  current = e->acq && (uint64_t)e->acq->czxid == token;
  pthread_mutex_unlock(&e->c->mu);
  if (state != ZKL_STATE_HELD || current)
    e->fn(e, state, token, e->ctx);
}

int zkl_election_create(zkl_election_t **out, zkl_client_t *c,
                        const char *name, const char *id,
                        const zkl_election_options_t *o) {
  const char *root = o && o->root ? o->root : "/election";
  unsigned flags = ZKL__Q_VERIFY_OWNER;
  zkl__queue_spec_t spec = ZKL__QUEUE_SPEC(root, name, o);
  zkl_election_t *e;
  int rc;
  if (!out)
    return ZKL_EINVAL;
  *out = NULL;
  rc = zkl__recipe_args(c, name, root, o ? o->data : NULL, o ? o->data_len : 0,
                        o ? o->flags : 0, ZKL_ELECTION_LOSE_ON_DISCONNECT);
  if (rc != ZKL_OK)
    return rc;
  if (!valid_id(id))
    return ZKL_EINVAL;
  if (o && (o->flags & ZKL_ELECTION_LOSE_ON_DISCONNECT))
    flags |= ZKL__Q_LOSE_ON_DISCONNECT;
  e = calloc(1, sizeof *e);
  if (!e)
    return ZKL_ENOMEM;
  if (zkl__cond_init(&e->cv) != ZKL_OK) {
    free(e);
    return ZKL_ESYSTEM;
  }
  e->c = c;
  e->fork_gen = c->fork_gen;
  e->fn = o ? o->fn : NULL;
  e->ctx = o ? o->ctx : NULL;
  spec.marker = "-elect-";
  spec.recipe = ZKL_STATS_ELECTION;
  spec.id = id;
  spec.flags = flags;
  spec.notify = e->fn ? election_notify : NULL;
  if ((rc = zkl__queue_open(&e->q, c, &spec, e)) != ZKL_OK) {
    pthread_cond_destroy(&e->cv);
    free(e);
    return rc;
  }
  *out = e;
  return ZKL_OK;
}

/* What a run needs to find its candidacy when it ends. */
struct campaign {
  zkl_election_t *e;
  unsigned gen;
};

/* A candidacy's run ended (event thread, under c->mu). */
static void campaign_done(zkl__acq_t *hold, int rc, void *ctx) {
  struct campaign *k = ctx;
  zkl_election_t *e = k->e;
  if (k->gen != e->gen) {
    /* stopped meanwhile, so abandoned: never a hold (run.c settle());
     * one would be given back, its node deleted in the background */
    if (hold)
      zkl__queue_discard(hold);
  } else {
    e->run = NULL;
    e->looking = 0;
    e->campaign_rc = rc;
    e->acq = hold;
    e->phase = hold ? ELECT_LEADING : ELECT_ENDED;
    if (rc != ZKL_OK)
      zkl__post_log(e->c, ZKL_LOG_DEBUG, "campaign in %s ended: %s",
                    e->q.dir, zkl_err_name(rc));
  }
  free(k);
  e->q.async_refs--; /* e may be freed once it is 0: see destroy */
  pthread_cond_broadcast(&e->cv);
  pthread_cond_broadcast(&e->c->cv);
}

/* The candidacy's first look at the queue is over (under c->mu): a wait
 * with its deadline passed may now look at the phase. A run that ended
 * there is the phase's once campaign_done() has settled it. */
static void campaign_looked(void *ctx, int ended) {
  struct campaign *k = ctx;
  zkl_election_t *e = k->e;
  if (k->gen == e->gen && !ended) {
    e->looking = 0;
    pthread_cond_broadcast(&e->cv);
  }
}

/* Under c->mu, idle: starts a candidacy, which the event thread settles. */
static int campaign_start(zkl_election_t *e) {
  struct campaign *k = malloc(sizeof *k);
  int rc;
  if (!k)
    return ZKL_ENOMEM;
  k->e = e;
  k->gen = e->gen;
  rc = zkl__queue_start(&e->q, ZKL__BLOCK, 0, -1, campaign_done, k, &e->run);
  if (rc != ZKL_OK) {
    free(k);
    return rc;
  }
  e->q.async_refs++; /* zkl__queue_close waits for campaign_done */
  e->phase = ELECT_CAMPAIGNING;
  e->looking = 1;
  zkl__run_on_looked(e->run, campaign_looked);
  return ZKL_OK;
}

/* Ends the current candidacy, whatever its phase; returns the old phase.
 * With `judge` (a resignation), *rc says whether a term that ends here
 * could be vouched for to its end (ZKL_OK) or not (ZKL_ELOST). Waits for
 * the delete of a term's node, never for the event thread. */
static int stop_candidacy(zkl_election_t *e, int judge, int *rc) {
  zkl_client_t *c = e->c;
  zkl__acq_t *a;
  int phase;
  pthread_mutex_lock(&c->mu);
  phase = e->phase;
  e->gen++; /* the end of a run still going is this candidacy's no more */
  if (e->run)
    zkl__queue_abandon(e->run); /* ends soon, its node deleted */
  e->run = NULL;
  e->looking = 0;
  while (e->verifying > 0)
    pthread_cond_wait(&e->cv, &c->mu);
  a = e->acq;
  e->acq = NULL;
  e->phase = ELECT_IDLE;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&c->mu);
  *rc = ZKL_OK;
  if (a) /* deletes our node unless lost; judged for a resignation only */
    *rc = zkl__queue_release(&e->q, a, judge);
  return phase;
}

static int enter(zkl_election_t *e) {
  if (!e)
    return ZKL_EINVAL;
  if (zkl__forked(e->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&e->c->mu);
  e->inside++;
  pthread_mutex_unlock(&e->c->mu);
  return ZKL_OK;
}

static int leave(zkl_election_t *e, int rc) {
  pthread_mutex_lock(&e->c->mu);
  e->inside--;
  pthread_mutex_unlock(&e->c->mu);
  return rc;
}

static int join(zkl_election_t *e) {
  int busy, rc;
  pthread_mutex_lock(&e->c->mu);
  busy = e->phase == ELECT_CAMPAIGNING ||
         (e->phase == ELECT_LEADING &&
          atomic_load(&e->acq->state) != ZKL_STATE_LOST);
  if (!busy && e->phase != ELECT_IDLE) {
    pthread_mutex_unlock(&e->c->mu);
    stop_candidacy(e, 0, &rc); /* clears a lost term or an ended campaign */
    pthread_mutex_lock(&e->c->mu);
  }
  /* another thread may have joined while the lock was dropped */
  rc = busy || e->phase != ELECT_IDLE ? ZKL_EBUSY : campaign_start(e);
  pthread_mutex_unlock(&e->c->mu);
  return rc;
}

int zkl_election_join(zkl_election_t *e) {
  int rc = enter(e);
  return rc == ZKL_OK ? leave(e, join(e)) : rc;
}

/* Waits while this candidate campaigns, at most until `until` (-1: no
 * end, as zkl__deadline_in() gives it); zkl_election_wait()'s codes. */
static int wait_leading(zkl_election_t *e, int64_t until) {
  struct timespec ts;
  int rc = ZKL_OK;
  pthread_mutex_lock(&e->c->mu);
  if (e->phase == ELECT_IDLE) {
    pthread_mutex_unlock(&e->c->mu);
    if ((rc = join(e)) != ZKL_OK && rc != ZKL_EBUSY)
      return rc;
    pthread_mutex_lock(&e->c->mu);
  }
  zkl__deadline_ts(until, &ts);
  /* Whatever the deadline, the campaign's first look is waited for, as an
   * acquire's is: a candidate that finds nobody ahead leads. */
  while (e->phase == ELECT_CAMPAIGNING) {
    if (until < 0 || e->looking)
      pthread_cond_wait(&e->cv, &e->c->mu);
    else if (pthread_cond_timedwait(&e->cv, &e->c->mu, &ts) != 0 &&
             zkl_now_ms() >= until)
      break;
  }
  if (e->phase == ELECT_CAMPAIGNING)
    rc = ZKL_ETIMEDOUT;
  else if (e->phase == ELECT_LEADING &&
           atomic_load(&e->acq->state) != ZKL_STATE_LOST)
    rc = ZKL_OK;
  else if (e->phase == ELECT_ENDED && e->campaign_rc != ZKL_ECANCELED)
    rc = e->campaign_rc;
  else
    rc = ZKL_ELOST;
  pthread_mutex_unlock(&e->c->mu);
  return rc;
}

int zkl_election_wait(zkl_election_t *e, int64_t deadline_ms) {
  int rc = enter(e);
  return rc == ZKL_OK
             ? leave(e, wait_leading(e, zkl__deadline_in(deadline_ms)))
             : rc;
}

int zkl_election_resign(zkl_election_t *e) {
  int rc;
  if (!e)
    return ZKL_EINVAL;
  if (zkl__forked(e->fork_gen))
    return ZKL_EFORKED;
  return stop_candidacy(e, 1, &rc) == ELECT_IDLE ? ZKL_ENOTHELD : rc;
}

/* The leader's hold, kept alive until term_put() (a resignation waits
 * for it), or NULL when not leading; after enter(). */
static zkl__acq_t *term_get(zkl_election_t *e) {
  zkl__acq_t *a;
  pthread_mutex_lock(&e->c->mu);
  a = e->phase == ELECT_LEADING ? e->acq : NULL;
  if (a)
    e->verifying++;
  pthread_mutex_unlock(&e->c->mu);
  return a;
}

static int term_put(zkl_election_t *e, int rc) {
  pthread_mutex_lock(&e->c->mu);
  e->verifying--;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->c->mu);
  return leave(e, rc);
}

int zkl_election_verify(zkl_election_t *e) {
  zkl__acq_t *a;
  int rc = enter(e);
  if (rc != ZKL_OK)
    return rc;
  if (!(a = term_get(e)))
    return leave(e, ZKL_ENOTHELD);
  return term_put(e, zkl__queue_verify(&e->q, a));
}

int zkl_election_guarded(zkl_election_t *e, zkl_op_t *ops, size_t n,
                         unsigned flags) {
  zkl__acq_t *a;
  int rc;
  if (flags & ZKL_GUARD_RELEASE)
    return ZKL_EINVAL; /* a term ends by resigning */
  if ((rc = enter(e)) != ZKL_OK)
    return rc;
  if (!(a = term_get(e)))
    return leave(e, ZKL_ENOTHELD);
  return term_put(e, zkl__guarded(&a, 1, ops, n, flags));
}

int zkl_election_state(const zkl_election_t *e) {
  int st = ZKL_STATE_NONE;
  if (!e)
    return st;
  if (zkl__forked(e->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&e->c->mu);
  if (e->phase == ELECT_LEADING && e->acq)
    st = atomic_load(&e->acq->state);
  pthread_mutex_unlock(&e->c->mu);
  return st;
}

int zkl_election_is_leader(const zkl_election_t *e) {
  int st = zkl_election_state(e); /* ZKL_EFORKED: not a leader here */
  return st == ZKL_STATE_HELD || st == ZKL_STATE_AT_RISK ||
         st == ZKL_STATE_REVOKE_REQUESTED;
}

int zkl_election_token(const zkl_election_t *e, uint64_t *token) {
  int rc = ZKL_ENOTHELD;
  if (!e || !token)
    return ZKL_EINVAL;
  if (zkl__forked(e->fork_gen))
    return ZKL_EFORKED;
  pthread_mutex_lock(&e->c->mu);
  if (e->phase == ELECT_LEADING && e->acq) {
    *token = (uint64_t)e->acq->czxid;
    rc = ZKL_OK;
  }
  pthread_mutex_unlock(&e->c->mu);
  return rc;
}

int zkl_election_destroy(zkl_election_t *e) {
  int busy, rc;
  if (!e)
    return ZKL_OK;
  if (!zkl__handle_live(e))
    return ZKL_EINVAL;
  if (zkl__forked(e->fork_gen))
    return ZKL_EFORKED; /* its lock may be held by a thread of the parent */
  pthread_mutex_lock(&e->c->mu);
  busy = e->inside > 0;
  pthread_mutex_unlock(&e->c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(e))
    return ZKL_EINVAL;
  stop_candidacy(e, 0, &rc);
  zkl__recipe_close(&e->q); /* campaign_done() writes to e */
  pthread_cond_destroy(&e->cv);
  free(e);
  return ZKL_OK;
}

int zkl_election_candidates(zkl_client_t *c, const char *root,
                            const char *name, zkl_contender_t **out,
                            size_t *count) {
  return zkl__list_named(c, root ? root : "/election", name, out, count);
}

