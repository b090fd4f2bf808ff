/* SPDX-License-Identifier: Apache-2.0 */
/* engine.h: the queue engine (lib/engine/): acquisitions and the state
 * of holds (acq.c), the queue protocol as a machine of steps (step.c,
 * acquire.c, recover.c, run.c), a hold's end as a run of its own
 * (release.c) and what a hold writes and reads of its node (marks.c), the
 * queue object (queue.c), the join of k queues in one transaction, a
 * multi-lock's (join.c), and its acquire as one run (joinwait.c), guarded
 * writes (guard.c), reading a queue (inspect.c), and on top the client's
 * event thread (loop.c). It calls zk/ and base/; recipes reach it by
 * name, it never reaches them. Included by internal.h only. */

/* A path an acquisition watches, in the client's table of them (acq.c):
 * a watch event finds its acquisitions without walking them all. `idx`:
 * the wait set's index, or -1 for the acquisition's own node. Embedded
 * in what owns the path, so registering never fails. */
struct zkl__went {
  const char *path; /* NULL: not registered */
  zkl__acq_t *a;
  int idx;
  struct zkl__went *next;
};

/* Queue flags (internal; bit 0 is ZKL_MUTEX_NO_NODE_WATCH's on purpose). */
enum {
  ZKL__Q_NO_NODE_WATCH = 1 << 0,      /* no watch on our own node */
  ZKL__Q_LOSE_ON_DISCONNECT = 1 << 1, /* a disconnect ends the hold */
  ZKL__Q_VERIFY_OWNER = 1 << 2,       /* confirm ephemeralOwner at the head */
  /* kazoo's naming: kazoo checks a lock's parent once per Lock object and
   * never makes it again, so ours is a persistent node (as kazoo makes
   * it), never deleted by us, nor swept by the server as a container */
  ZKL__Q_KEEP_DIR = 1 << 3,
  /* a flat lock (ZKL_MUTEX_FLAT, flat.c): the node is <dir> itself, an
   * ephemeral node whoever creates holds; its parent is made as any
   * queue's, never deleted by us (dir_made stays 0, so release.c's
   * dir_ours() is false) */
  ZKL__Q_FLAT = 1 << 4
};

/* A queue: the ZooKeeper directory <root>/<name> and how we join it.
 * Every recipe embeds one; the machine (run.c) runs its acquisitions. */
struct zkl__queue {
  zkl_client_t *c;
  char *dir;          /* "<root>/<name>" */
  char *prefix;       /* "<dir>/" : guid and marker follow */
  const char *marker; /* "-lock-", "-elect-", "__WRIT__": exclusive nodes */
  const char *marker_shared; /* "__READ__": shared nodes, or NULL */
  int limit;          /* a semaphore's leases (marker "-lease-"), or 0 */
  int recipe;         /* ZKL_STATS_*: what its acquires count as */
  char *dir_data;     /* what <dir>'s data must say ("max=N"), or NULL */
  int64_t dir_czxid;  /* the <dir> found to say it, or 0 (under c->mu) */
  int32_t dir_version; /* at that data version: a rewrite changes it */
  /* <dir>, as this object knows it (under c->mu): seen (a create in it
   * went through, so joins need not make it first); the incarnation this
   * object made as a container, or 0; and whether the last look at the
   * queue found our node alone in that one: then it is this object's to
   * delete at close, where the server would only reap it a minute later
   * (at a bounded rate), and per-key locks would pile parents up; and
   * whether this object released a hold already (release.c send_delete);
   * and whether any listing of it showed a node of another library (or
   * recipe, or flavour: zkl__name_foreign): then never ours to delete,
   * for that library may rely on it staying (kazoo checks it once per
   * Lock object), even when this object made it. */
  int dir_seen;
  int64_t dir_made;
  int dir_alone;
  int dir_kept;
  int dir_lean; /* the one we made went in our node's transaction */
  int dir_peer;
  /* and whether it may be a plain node carrying zklock's mark: this
   * object sent it with its node (acquire.c, lean), or a look found one
   * of the mark's length. Someone's lock made it in its node's
   * transaction, and no server sweeps it; at close we read it, and delete
   * it if it is marked and empty (release.c zkl__tidy_dir) */
  int dir_lone;
  char *id;           /* election candidate id, or NULL */
  void *user_data;    /* caller data stored in each node */
  size_t user_len;
  unsigned flags;     /* ZKL__Q_* */
  uint64_t cancel_gen;
  /* Names of children found not ephemeral: planted, never going away by
   * themselves, so nobody waits behind them (under c->mu). */
  char **ignored;
  int nignored;
  int closed;         /* acquires stop at once (under c->mu) */
  int users;          /* threads inside an acquire/release (under c->mu) */
  int cb_refs;        /* state events queued, not yet delivered */
  int async;          /* async acquisitions pending, holds granted, or
                       * async releases not yet told (destroy: EBUSY) */
  /* Things whose end is yet to write to the object (under c->mu): a
   * zkl_hold_t alive, an election's run, a run its blocking caller gave
   * up (run.c). zkl__queue_close waits for them. */
  int async_refs;
  /* Delivers a state change to the recipe; runs on the event thread. */
  void (*notify)(zkl__queue_t *q, int state, uint64_t token);
};

/* What became of a watched node: deleted; changed (read it again); to be
 * read. */
enum { ZKL__W_GONE = 1, ZKL__W_CHANGED = 2, ZKL__W_READ = 4 };

enum { ZKL__OWN_NONE = 0, ZKL__OWN_PENDING = 1, ZKL__OWN_OK = 2 };

/* One thread's place in one queue, from enqueue to final release. */
struct zkl__acq {
  uint64_t id;           /* unique; completions find acqs by it */
  zkl__queue_t *q;
  zkl__session_t *sess;  /* session owning our node (ref held), or NULL */
  char guid[ZKL__GUID_LEN + 1];
  char *path;            /* our node, NULL until created */
  int64_t czxid;
  int32_t seq;
  _Atomic int state;     /* ZKL_STATE_*; NONE while waiting */
  unsigned depth;        /* owner thread only (or under c->mu) */
  uint64_t tid;          /* thread that holds or acquires */
  /* A hold's own-node watch, to be sent ZKL__NODE_WATCH_DELAY_MS after it
   * began; a parked asynchronous run's time to look again (r->wake_at).
   * Both in the client's heap while armed; unlinking stops them. */
  zkl__timer_t watch_tm, wake_tm;
  zkl__acq_t *hnext;     /* recipe's list of holds (under c->mu) */
  /* The watch on our own node (ZKL__OWN_*, under c->mu). OK: its read
   * showed the node ours (our czxid, our session as owner), so any later
   * change to it reaches zkl__path_watcher before any later reply. */
  int own_watch;
  int shared;            /* our node is of the queue's shared kind */
  unsigned rdepth;       /* read holds of a read-write lock (owner thread) */
  /* Waiting: the nodes watched, and what became of each (ZKL__W_*),
   * under c->mu. */
  char **watch;
  unsigned char *wflags;
  int nwatch;
  int session_lost;
  int revoked; /* our waiting node was deleted or replaced by someone */
  /* A guarded transaction that deletes our node is on its way: the watch
   * event of that delete is no loss (under c->mu). */
  int self_delete;
  /* Someone asked for this hold back (a "revoke=" line in our node's
   * data, read by the own-node watch, perhaps while we still waited for
   * the hold): the hold's state is then
   * REVOKE_REQUESTED instead of HELD, and its loss ZKL_EREVOKED (under
   * c->mu). */
  int revoke_asked;
  /* Our node's data (under c->mu): the status lines we wrote or are
   * writing (ZKL__MARK_*); its version as last found intact, which a
   * guarded write checks; and whether a waiting node was found rewritten
   * by someone else (the wait then ends, ZKL_EREVOKED). */
  unsigned marks;
  int32_t dversion;
  /* A semaphore's relay mark still out (marks.c), and whether its answer
   * showed the node someone else's (under c->mu). a->dversion counts that
   * write in as soon as it is sent, so a release sent meanwhile checks
   * the version it gives: the release's verdict then hangs on the relay's
   * answer, which comes first (one session's order). */
  zkl__acq_t **relay; /* the write's pointer back to us, cleared as a goes */
  int relay_foreign;
  int tainted;
  int waited; /* a multi-lock member's run waited before it granted */
  int64_t held_us; /* zkl__now_us() of the grant, for the hold histogram;
                    * 0: not counted (a multi-lock's members but one) */
  struct zkl__run *run;  /* while acquiring: the protocol's machine (run.c) */
  /* Set by the run (run.c) while it acquires: something it may wait
   * for happened (a watched node, the connection, a cancel). acq.c and
   * the watcher call it, under c->mu, and know nothing of the run. */
  void (*wake)(zkl__acq_t *a);
  zkl__went_t own_went;  /* path: our node's, while we know it */
  /* A flat lock's claim on its name in this client (zkl__claim_take):
   * idx 0 while it may make or hold the node, 1 while it waits for the
   * claim; path NULL: none */
  zkl__went_t claim;
  uint64_t evseq;        /* the path watcher's last event that saw us */
  pthread_cond_t cv;
  atomic_int cv_pin;       /* deferred wakes of cv not made yet (wake.c) */
  zkl__acq_t *prev, *next; /* client's list of acquisitions */
};

ZKL__HIDDEN void zkl__acq_link(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__acq_unlink(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__set_state(zkl_client_t *c, zkl__acq_t *a, int state);
/* A client never has two acquisitions of one flat lock making or holding
 * its node: they share one identity, which a release's guard cannot tell
 * apart (release.c). Under c->mu: 1 when a holds the claim on path now;
 * else 0, a waits for it and is kicked when it is let go. */
ZKL__HIDDEN int zkl__claim_take(zkl_client_t *c, zkl__acq_t *a,
                                const char *path);
/* Under c->mu: lets a's claim (or its wait for one) go; no claim, nothing. */
ZKL__HIDDEN void zkl__claim_drop(zkl_client_t *c, zkl__acq_t *a);
/* A hold that lasts this long gets a watch on its own node, so that its
 * deletion is reported as LOST at once; shorter holds learn it at release
 * and send no extra request. */
#define ZKL__NODE_WATCH_DELAY_MS 100
ZKL__HIDDEN void zkl__schedule_node_watch(zkl_client_t *c, zkl__acq_t *a);
/* acq.c: what the session's changes mean for the acquisitions on session
 * s (a disconnect arms c->lost_tm: AT_RISK holds are LOST when it fires).
 * Under c->mu. */
ZKL__HIDDEN void zkl__acqs_on_session(zkl_client_t *c, zkl__session_t *s,
                                      enum zkl__sess_news what);
/* Under c->mu: put e (path, a, idx) in the table of watched paths; take
 * it out (nothing if it is not in). */
ZKL__HIDDEN void zkl__went_add(zkl_client_t *c, zkl__went_t *e,
                               const char *path, zkl__acq_t *a, int idx);
ZKL__HIDDEN void zkl__went_del(zkl_client_t *c, zkl__went_t *e);
/* Under c->mu: getData with a watch on a's own node (unless the queue
 * opted out of own-node watches, then without). The answer, on the
 * completion thread, confirms a hold (HELD) or loses it, and ends a wait
 * whose node is gone or not ours (a->revoked). */
ZKL__HIDDEN void zkl__watch_own(zkl_client_t *c, zkl__session_t *s,
                                zkl__acq_t *a);
ZKL__HIDDEN void *zkl__event_main(void *arg);

/* node.c: our node, how it is made and how we know it is ours. */
/* Its create mode: ephemeral, and sequential but for a flat lock. */
ZKL__HIDDEN int zkl__node_mode(const zkl__queue_t *q);
/* Whether stat describes a's node: created by us (czxid) and owned by the
 * session we created it on (zkl__owns_on: session s). A node deleted and
 * re-created under our name by someone else fails this. */
ZKL__HIDDEN int zkl__owns(const zkl__acq_t *a, const struct Stat *st);
ZKL__HIDDEN int zkl__owns_on(const zkl__acq_t *a, const zkl__session_t *s,
                             const struct Stat *st);
/* Whether the node of stat was made by session s, which is still alive
 * (what a node found by our guid after a lost reply must be to be ours). */
ZKL__HIDDEN int zkl__node_made_by(const zkl__session_t *s,
                                  const struct Stat *st);
/* Whether it is not ephemeral: it never goes by itself. */
ZKL__HIDDEN int zkl__node_lasting(const struct Stat *st);
/* What a's release checks in the delete's transaction instead of a read
 * (release.c): nothing (ZKL__GUARD_NONE: read), a check at a->dversion,
 * or a setData at it only our identity may write. */
enum { ZKL__GUARD_NONE, ZKL__GUARD_CHECK, ZKL__GUARD_SET };
ZKL__HIDDEN int zkl__node_guard(const zkl__acq_t *a);
/* What a standing hold's state is while connected: HELD, or
 * REVOKE_REQUESTED once asked for; and what its loss is to the caller. */
static inline int zkl__held_state(const zkl__acq_t *a) {
  return a->revoke_asked ? ZKL_STATE_REVOKE_REQUESTED : ZKL_STATE_HELD;
}
static inline int zkl__lost_rc(const zkl__acq_t *a) {
  return a->revoke_asked ? ZKL_EREVOKED : ZKL_ELOST;
}
/* The same for a's node (acq.c). */
ZKL__HIDDEN int zkl__acq_data_intact(const zkl__acq_t *a, const char *d,
                                     int len);
/* Under c->mu: a's node, ours still, has data someone else wrote
 * (zkl__acq_data_intact): it is deleted at once, and the hold LOST. */
ZKL__HIDDEN void zkl__lose_rewritten(zkl_client_t *c, zkl__acq_t *a);
/* Under c->mu: a's node is gone or not ours while it holds. */
ZKL__HIDDEN void zkl__lose(zkl_client_t *c, zkl__acq_t *a, const char *why);

/* The watcher (acq.c) that client.c gives every watch (c->watcher). */
ZKL__HIDDEN void zkl__path_watcher(zhandle_t *zh, int type, int state,
                                   const char *path, void *ctx);

/* ---- guard.c: writes that commit only while a hold is ours ------------- */
/* The guarded call of every recipe, on holds[0..nh) (granted, on one
 * session, kept alive by the caller: a multi-lock checks all its nodes).
 * Caller holds no lock. With ZKL_GUARD_RELEASE and ZKL_OK, their nodes
 * are gone and forgotten: the recipe's release then only frees. */
ZKL__HIDDEN int zkl__guarded(zkl__acq_t *const *holds, size_t nh,
                             zkl_op_t *ops, size_t n, unsigned flags);

/* ---- the queue and its acquisitions: queue.c, run.c, release.c ----------- */

enum { ZKL__BLOCK = 0, ZKL__TRY = 1, ZKL__TIMED = 2 };

/* What a recipe's queue is made of. */
typedef struct {
  const char *root, *name;
  const char *marker;        /* of exclusive nodes */
  const char *marker_shared; /* of shared nodes, or NULL */
  const char *id;            /* an election candidate's id, or NULL */
  const void *data;          /* the caller's data, stored in each node */
  size_t len;
  unsigned flags;            /* ZKL__Q_* */
  int limit;                 /* a semaphore's leases (its "max=N"), or 0 */
  int recipe;                /* ZKL_STATS_* (a read-write lock's: WRITE,
                                and its shared acquires count as READ) */
  void (*notify)(zkl__queue_t *q, int state, uint64_t token); /* or NULL */
} zkl__queue_spec_t;
/* The fields every recipe fills alike; `o` is its options, maybe NULL. */
#define ZKL__QUEUE_SPEC(root_, name_, o)                                      \
  {.root = (root_), .name = (name_), .data = (o) ? (o)->data : NULL,        \
   .len = (o) ? (o)->data_len : 0}
/* A recipe's create, once its own arguments are checked: q made from spec
 * and registered on c as `handle`. On failure q holds nothing and the
 * caller frees only its own object. zkl__queue_close undoes it (destroy). */
ZKL__HIDDEN int zkl__queue_open(zkl__queue_t *q, zkl_client_t *c,
                                const zkl__queue_spec_t *spec, void *handle);
ZKL__HIDDEN void zkl__queue_close(zkl__queue_t *q);
/* shared: join with q->marker_shared. Blocks until the acquisition ends:
 * *out is the hold. */
ZKL__HIDDEN int zkl__queue_acquire(zkl__queue_t *q, int mode, int shared,
                                   int64_t deadline_ms, zkl__acq_t **out);
/* An acquisition that nobody waits for: under c->mu, starts it and
 * returns (*out is the acquisition, while it runs). When it ends, the
 * event thread calls done(hold, rc, ctx) under c->mu: hold is the
 * granted hold, or NULL with the reason it failed (the acquisition is
 * then gone, its node deleted). done() must not wait. */
typedef void (*zkl__run_done_fn)(zkl__acq_t *hold, int rc, void *ctx);
ZKL__HIDDEN int zkl__queue_start(zkl__queue_t *q, int mode, int shared,
                                 int64_t deadline_ms, zkl__run_done_fn done,
                                 void *ctx, zkl__acq_t **out);
/* The same for one node of a multi-lock, made already (path, on session
 * s, created at czxid) and listed by *ls (a getChildren answer sent right
 * behind the create; taken over, *ls is left empty): the run starts at
 * its look at the queue, and ends with ZKL__AGAIN where a lone run would
 * join again. done() gets the acquisition whatever the outcome: one that
 * failed is off the client's list with its node, if any, still there,
 * for zkl__queue_release(). */
#define ZKL__AGAIN (-1999)
ZKL__HIDDEN int zkl__queue_start_member(zkl__queue_t *q, int mode,
                                        int shared, int64_t deadline_ms,
                                        zkl__session_t *s, const char *path,
                                        int64_t czxid, zkl__call_t *ls,
                                        zkl__run_done_fn done, void *ctx,
                                        zkl__acq_t **out);
/* Under c->mu: the started acquisition a is given up; it ends soon with
 * ZKL_ECANCELED (done() still comes). */
ZKL__HIDDEN void zkl__queue_abandon(zkl__acq_t *a);
ZKL__HIDDEN void zkl__run_on_looked(zkl__acq_t *a,
                                    void (*fn)(void *ctx, int ended));
/* Under c->mu: end hold (or ended acquisition) a where nothing may wait:
 * its node is deleted by the event thread, and a is freed. */
ZKL__HIDDEN void zkl__queue_discard(zkl__acq_t *a);
/* Under c->mu: forget a's node, its delete left to the event thread
 * (an acquisition or hold given up where nothing may wait). */
ZKL__HIDDEN void zkl__queue_drop(zkl__acq_t *a);
/* The event thread's share, under c->mu: settle the runs that ended.
 * (A parked asynchronous run's time is a timer, a->wake_tm: step.c.) */
ZKL__HIDDEN void zkl__runs_settle(zkl_client_t *c);
/* Ends hold a (release.c): deletes its node, frees a, and returns the
 * verdict: ZKL_OK, or zkl__lost_rc(a) when it had been lost or cannot be
 * vouched for. judge: a final unlock, which reads the node in the same
 * round trip (was it still ours?) and, when the delete cannot reach the
 * server, waits for the session's fate (ZKL_ELOST unless it reconnects,
 * at most about T/3). Caller holds no lock; blocks until the answers. */
ZKL__HIDDEN int zkl__queue_release(zkl__queue_t *q, zkl__acq_t *a, int judge);
/* The same as a run nobody waits for (judge always): under c->mu, starts
 * it and returns; done(rc, ctx) runs once, under c->mu, on whichever
 * thread ends it (a completion, the event thread judging the session's
 * fate, or this very call when the hold was LOST already), and must not
 * wait. rel is the caller's until done() ran. */
typedef struct zkl__rel zkl__rel_t;
struct zkl__rel {
  zkl_client_t *c;
  zkl__acq_t *a;
  zkl__session_t *s;     /* the node's session (a reference), while out */
  zkl__call_t st, del, pd; /* the read, the delete, the directory's delete */
  int judge, tidy, left;
  /* The delete went guarded (zkl__guard): st is the guard's answer; a
   * guard that found the node rewritten sends the read instead (read) */
  int guarded, read;
  int gversion; /* the version the guard checks: the one we know, or read */
  int intact;   /* the read before a guarded delete found our data intact */
  uint64_t epoch;        /* c->conn_epoch when the delete went */
  int pending;           /* the delete failed: waiting for the verdict */
  int64_t end, due;      /* ... at most until end; ask again at due */
  int done, rc;
  void (*then)(zkl__rel_t *rel, int zrc); /* after the node is dealt with */
  pthread_cond_t *cv;    /* a blocking face's, or NULL: done_fn */
  atomic_int cv_pin;     /* deferred wakes of cv not made yet (wake.c) */
  void (*done_fn)(int rc, void *ctx);
  void *done_ctx;
  zkl__rel_t *next;      /* on c->rels while pending */
};
ZKL__HIDDEN void zkl__release_start(zkl__rel_t *rel, zkl__acq_t *a,
                                    void (*done)(int rc, void *ctx),
                                    void *ctx);
/* Event thread, under c->mu: the async releases whose verdict is known
 * go on; returns when the next is due (0: none pending). */
ZKL__HIDDEN int64_t zkl__releases_judge(zkl_client_t *c);
ZKL__HIDDEN void zkl__queue_cancel(zkl__queue_t *q);
/* Turns a's exclusive hold into a shared one, keeping its node (and so
 * its place and token): the node's data gains "mode=read", which lets in
 * the shared contenders whose only conflict it was. Caller holds no lock.
 * ZKL_OK (also when the write cannot reach the ensemble: we then keep the
 * node exclusive, which is safe, until released), ZKL_ELOST, ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__queue_downgrade(zkl__queue_t *q, zkl__acq_t *a);
/* One read: is a's node still there and ours? ZKL_OK, ZKL_ELOST (a is
 * then LOST), or a ZooKeeper code when it cannot tell. Caller holds no
 * lock; a must stay alive meanwhile. */
ZKL__HIDDEN int zkl__queue_verify(zkl__queue_t *q, zkl__acq_t *a);
/* Copies a's node path into buf (a recipe's node_path function): ZKL_OK,
 * ZKL_ENOTOWNER (no hold, a NULL), ZKL_EINVAL (too small). */
ZKL__HIDDEN int zkl__acq_path(const zkl__acq_t *a, char *buf, size_t size);
ZKL__HIDDEN int zkl__queue_list(zkl_client_t *c, const char *dir,
                                zkl_contender_t **out, size_t *count);
/* sweep.c: deletes the empty containers among root's children (and,
 * with older_ms > 0, only those made or written that long ago); counts
 * the deletes that landed. ZKL_OK or a ZooKeeper code. */
ZKL__HIDDEN int zkl__sweep(zkl_client_t *c, const char *root,
                           int64_t older_ms, size_t *removed);
/* inspect.c: root's children, sorted by name, each with its queue as
 * zkl__queue_list() gives it (zkl_locks_list). ZKL_OK (also when root
 * does not exist: none), ZKL_ENOMEM, ZKL_ESYSTEM or a ZooKeeper code;
 * *out and *count are NULL and 0 on failure. */
ZKL__HIDDEN int zkl__root_list(zkl_client_t *c, const char *root,
                               zkl_lock_info_t **out, size_t *count);
/* The same after validating root and name (public list functions). */
ZKL__HIDDEN int zkl__list_named(zkl_client_t *c, const char *root,
                                const char *name, zkl_contender_t **out,
                                size_t *count);

/* ---- the machine (step.c, acquire.c, recover.c, release.c, run.c) -------
 * An acquisition is a run of steps; these are shared by the files of the
 * machine only, which call each other in one direction: step.c holds the
 * parts every step is made of (send, park, wake, end); recover.c the paths
 * trouble takes (missing parents, a lost create reply, the semaphore's
 * directory data), which hand the run back through r->back; acquire.c the
 * path every acquisition takes (join, list, position, wait); run.c starts,
 * waits for and settles runs; release.c a hold's end (a run of its own,
 * which never waits either: struct zkl__rel).
 *
 * One int carries every result inside the engine: 0 is success (ZOK and
 * ZKL_OK), ZooKeeper's codes are -1 to -999, zklock's ZKL_E* -1000 and
 * below (ZKL__AGAIN among them), and a look's outcome below is positive. */
enum zkl__look {
  ZKL__RETRY = 1,  /* our node is gone with its session, or unknown */
  ZKL__RELIST = 2, /* look at the queue again */
  ZKL__HOLD = 3,   /* we are the head */
  ZKL__REJOIN = 4, /* the queue's missing parents are made: join again */
  ZKL__REVOKED = 5 /* a watch says our node is gone: ask before believing it */
};

/* Where we wait: the paths to watch and the rule of policy.c's plan. */
typedef struct {
  zkl__plan_t plan;
  char *paths[ZKL__WATCH_MAX];
} zkl__waitset_t;
typedef struct zkl__run zkl__run_t;
typedef void (*zkl__step_fn)(zkl__acq_t *a);

/* One acquisition's run through the protocol: a machine of steps. A step
 * runs under c->mu and never waits: it sends requests and names the step
 * that takes their answers, or parks until something it waits for
 * happens, or ends the run. Whoever makes progress possible moves the
 * machine on (advance()): the last answer's completion, an event on the
 * connection or a watched node (a->wake), or the thread that waits
 * for the run to end, when a parked step's time comes. */
struct zkl__run {
  zkl__queue_t *q;
  int mode;
  int64_t deadline; /* -1: none */
  uint64_t gen;     /* q->cancel_gen when we started */
  int waited;       /* we waited for someone (a semaphore relays) */
  int handoff;      /* the last wait ended in the zero-read hand-off */
  int64_t start_us; /* zkl__now_us() at the start: the wait histogram */
  int behind;       /* our last listing had contenders after us */
  int agreed;       /* the queue's directory data matched q->dir_data */
  int nonode;
  int first; /* no look at the queue yet */
  int member; /* one node of a multi-lock's: never joins again alone */
  /* flat.c: a create of ours may have been made, its reply lost; nothing
   * has shown yet that it was not (the node is read before any retry) */
  int unsure;
  /* A run with no node of its own (zkl__run_start_bare): what its steps
   * work on, or NULL. */
  void *owner;

  zkl__step_fn next; /* runs when nothing is in flight, not parked */
  /* Where a trouble path (recover.c) hands the run back, with ZKL_OK, a
   * look's outcome or an error: set by acquire.c before it goes there. */
  void (*back)(zkl__acq_t *a, int rc);
  int inflight;     /* requests sent, not yet answered */
  int parked;       /* waiting for an event, or for wake_at */
  int64_t wake_at;  /* parked: when to look again unasked (-1: never) */
  int done, outcome;
  /* An asynchronous run ends on the event thread, which calls done() */
  zkl__run_done_fn done_fn;
  void *done_ctx;
  /* Called once, under c->mu, when the run's first look at the queue is
   * over: it holds, waits, ended, or is stalled by trouble (parked). For
   * a caller with no thread of its own in the run that must not give up
   * before that look (election.c: a deadline already past). */
  void (*looked_fn)(void *ctx, int ended);
  int abandoned;           /* its caller gave up on it: end it quietly */
  int ended;               /* on c->ended, through ended_next */
  zkl__acq_t *ended_next;

  uint64_t epoch;   /* c->conn_epoch when this look at the queue began */
  int have_list, fresh;
  int unlisted;        /* the join sent no listing (acquire.c first_born) */
  int lean;            /* its directory went in its create's transaction */
  int made_dir;        /* this run made the queue's directory */
  zkl__call_t cr, ls, gd, aux, sy;
  zkl__session_t *s;   /* joining on it (a reference), until adopted */
  zkl__session_t *rs;  /* the session a request in flight went on (a ref) */
  uint64_t repoch;     /* c->conn_epoch when that request went */
  char *mk;            /* making parents: the component being made */
  int rec_i;           /* recovering: the next listed name to look at */
  char *rec_path;
  int tries;           /* agreeing on the directory's data */
  int if_mine;         /* reading our own node: what "still ours" means */
  /* waiting for a usable connection: then() gets the verdict */
  zkl__session_t *cs;
  uint64_t cepoch;
  void (*then)(zkl__acq_t *a, int rc);
  /* waiting for the wait set */
  zkl__waitset_t w;
  zkl__went_t went[ZKL__WATCH_MAX];
  unsigned char wflags[ZKL__WATCH_MAX];
  zkl__call_t *reads;
  int64_t until;
  int polled, gone_all, gone_any, changed;
};

/* step.c */
ZKL__HIDDEN void zkl__waitset_free(zkl__waitset_t *w);
ZKL__HIDDEN int zkl__is_session_error(int rc);
ZKL__HIDDEN int zkl__queue_halted(const zkl__queue_t *q, uint64_t gen,
                                 int64_t deadline);
ZKL__HIDDEN int zkl__stopped(const zkl__run_t *r);
ZKL__HIDDEN int zkl__stopped_strict(const zkl__run_t *r);
ZKL__HIDDEN void zkl__advance(zkl__acq_t *a);
ZKL__HIDDEN void zkl__kick(zkl__acq_t *a);
ZKL__HIDDEN void zkl__park(zkl__acq_t *a, zkl__step_fn again, int64_t wake_at);
ZKL__HIDDEN void zkl__finish(zkl__acq_t *a, int rc);
ZKL__HIDDEN void zkl__prep(zkl__acq_t *a, zkl__call_t *call);
ZKL__HIDDEN void zkl__sent(zkl__acq_t *a, zkl__call_t *call, int rc);
ZKL__HIDDEN void zkl__await_conn(zkl__acq_t *a, zkl__session_t *s,
                                 uint64_t epoch,
                                 void (*then)(zkl__acq_t *, int));
ZKL__HIDDEN void zkl__drop_node(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__end_run(zkl__acq_t *a, int rc);
ZKL__HIDDEN int zkl__gone(zkl__acq_t *a);
ZKL__HIDDEN void zkl__acq_free(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__adopt(zkl__acq_t *a, char *path, const struct Stat *st);
/* queue.c */
ZKL__HIDDEN int zkl__ignore(zkl__queue_t *q, const char *name);
ZKL__HIDDEN int zkl__ignored(const zkl__queue_t *q, const char *name);
/* release.c */
ZKL__HIDDEN int zkl__remove_node(zkl__acq_t *a, int judge);
ZKL__HIDDEN void zkl__tidy_dir(zkl__queue_t *q);
/* marks.c */
ZKL__HIDDEN void zkl__relay(zkl__queue_t *q, zkl__acq_t *a);
/* recover.c */
ZKL__HIDDEN void zkl__step_mkdir(zkl__acq_t *a);
ZKL__HIDDEN void zkl__recover(zkl__acq_t *a, uint64_t epoch);
ZKL__HIDDEN void zkl__step_agree(zkl__acq_t *a);
/* flat.c: the top of a flat lock's every pass (zkl__step_top goes there
 * for a ZKL__Q_FLAT queue, once it checked that the run goes on) */
ZKL__HIDDEN void zkl__flat_top(zkl__acq_t *a);
/* wait.c: the wait behind a position's wait set, and a try's last look;
 * each ends through r->back (acquire.c sets it) */
ZKL__HIDDEN void zkl__step_wait(zkl__acq_t *a);
ZKL__HIDDEN void zkl__try_last(zkl__acq_t *a);
/* acquire.c */
ZKL__HIDDEN void zkl__step_top(zkl__acq_t *a);
ZKL__HIDDEN void zkl__joined(zkl__acq_t *a);
/* run.c */
/* Under c->mu: a run that makes no node of its own, on q's client and
 * halted by q's cancel (a kick), whose steps find `owner` in
 * a->run->owner: first runs at once. It parks, sends and ends as any
 * run; when it ends, the event thread frees it and calls done(NULL, rc,
 * ctx). *out is its acquisition while it runs (for zkl__kick). */
ZKL__HIDDEN int zkl__run_start_bare(zkl__queue_t *q, zkl__step_fn first,
                                    void *owner, zkl__run_done_fn done,
                                    void *ctx, zkl__acq_t **out);

/* ---- join.c, joinwait.c: one node in each of k queues, held as one --------
 * A multi-lock's acquire is one run of the machine with no node of its
 * own (run.c zkl__run_start_bare), the conductor: join.c's steps make a
 * node in each of k queues in one transaction and, once each node's own
 * run (a member, zkl__queue_start_member) has granted, check that the k
 * holds stand together; joinwait.c's start the members, look behind the
 * ones held while others wait (giving way), pause after giving way, and
 * start over. Every step runs under c->mu and never waits: answers,
 * member runs' ends, the event thread's timers (zkl__park with a time)
 * and kicks (a cancel, the connection) move it on. */

/* What one transaction made: the nodes paths[0..n) on session s, created
 * at czxid, and each queue's listing sent right behind them (ls[i]:
 * zkl__queue_start_member takes it over). The rest is join.c's. */
typedef struct {
  zkl__session_t *s; /* a reference, dropped by zkl__join_txn_free */
  char *paths[ZKL_MULTILOCK_MAX];
  zkl__call_t ls[ZKL_MULTILOCK_MAX];
  int64_t czxid;
  zkl_client_t *c;
  size_t n;
  char guid[ZKL__GUID_LEN + 1];
  zoo_op_t ops[ZKL_MULTILOCK_MAX];
  zoo_op_result_t res[ZKL_MULTILOCK_MAX];
  zkl__call_t mk[ZKL_MULTILOCK_MAX], tx, st; /* directories, multi, read */
  zkl__call_t *up; /* the parents' creates (j->deep) */
  size_t nup, levels;
} zkl__join_txn_t;

/* Nodes behind a held member read to tell a contender from a planted node
 * (ephemeral or not), at most, per look (joinwait.c). */
#define ZKL__YIELD_READS 4

/* The k queues a multi-lock joins as one, and its acquire. The caller
 * owns it (a multi-lock embeds it), fills c, n (1..ZKL_MULTILOCK_MAX), q
 * (in the transaction's order), shared and data, and keeps the queues and
 * the data alive; the rest is the engine's, under c->mu. */
typedef struct zkl__join zkl__join_t;
typedef void (*zkl__join_done_fn)(zkl__join_t *j, int rc, void *ctx);
struct zkl__join {
  zkl_client_t *c;
  size_t n;
  zkl__queue_t *q[ZKL_MULTILOCK_MAX];
  int shared[ZKL_MULTILOCK_MAX]; /* q[i]'s node is of its shared kind */
  const void *data;              /* stored in every node (user data) */
  size_t len;
  uint64_t gen[ZKL_MULTILOCK_MAX]; /* q[i]'s cancel_gen at zkl__join_begin */
  int deep; /* a parent was missing: make all of them from the top */
  /* The members: each node's run, then its hold (NULL: none), and the
   * run's outcome (1 while it runs). Granted, a[] are the set's holds. */
  zkl__acq_t *a[ZKL_MULTILOCK_MAX];
  int rc[ZKL_MULTILOCK_MAX];
  int64_t token; /* the nodes' creation zxid, once held */
  /* the acquire under way */
  zkl__acq_t *run;   /* the conductor, until it ends (NULL: none) */
  zkl__join_done_fn done;
  void *ctx;
  int mode;
  int64_t deadline;  /* as given (-1: none): the connection's wait */
  int64_t until;     /* a timed acquire's deadline, else -1 */
  /* No look at the queues yet: joining again because parents were
   * missing does not wait for the deadline (zklock.h, TIME) */
  int first;
  int running;       /* member runs not ended yet */
  int failed;        /* the first member's failure, or 0 */
  int tries;         /* times it started over (ZKL__AGAIN) */
  unsigned yields;   /* times it gave way */
  int64_t look;      /* held in part: when to look behind (0: not) */
  int64_t pause;     /* gave way: when to join again */
  int end;           /* the attempt's outcome, while members are released */
  void (*then)(zkl__acq_t *a, int rc); /* join.c hands the run back */
  struct zkl__join_calls *w; /* while an acquire runs: its requests */
};
/* An acquire's requests (tens of kilobytes, so made for each acquire and
 * freed at its end, not kept by every idle multi-lock): the transaction,
 * then the look behind held members, the check of the grants and the
 * deletes of an attempt that failed, one at a time. */
struct zkl__join_calls {
  zkl__join_txn_t t;
  zkl__call_t aux[ZKL_MULTILOCK_MAX];
  zkl__call_t rd[ZKL__YIELD_READS];
  size_t nl, held[ZKL_MULTILOCK_MAX];
  int nr;
};
/* Under c->mu, as an acquire begins: from now on a cancel of any of the
 * queues halts it. */
ZKL__HIDDEN void zkl__join_begin(zkl__join_t *j);
/* Under c->mu: why the acquire must end now (the client closing, its
 * credentials refused, a queue cancelled or closed, the deadline passed;
 * -1: no deadline), or ZKL_OK. */
ZKL__HIDDEN int zkl__join_halted(const zkl__join_t *j, int64_t deadline);
/* The set a conductor's steps work on (join.c, joinwait.c). */
static inline zkl__join_t *zkl__join_of(const zkl__acq_t *a) {
  return (zkl__join_t *)a->run->owner;
}
/* join.c, steps of the conductor a (a->run->owner is j), under c->mu.
 * zkl__join_send: one transaction makes a node in every queue, the
 * parents first if need be, with each queue's listing behind it, then one
 * node is read for their zxid; after a lost answer it waits for the
 * connection (until j->deadline). then(a, ZKL_OK): j->w->t holds what
 * it made. Otherwise it holds nothing: ZKL__AGAIN (none of the nodes
 * stands, or whichever may is being deleted: join again), or why not
 * (ZKL_ETIMEDOUT, ZKL_ECLOSED, ZKL_ENOMEM, a ZooKeeper code...). */
ZKL__HIDDEN void zkl__join_send(zkl__acq_t *a,
                                void (*then)(zkl__acq_t *a, int rc));
/* Frees what zkl__join_send made, but not the nodes; twice is harmless. */
ZKL__HIDDEN void zkl__join_txn_free(zkl__join_txn_t *t);
/* Once every member granted: then(a, ZKL_OK) if j->a[0..n) all stand,
 * else ZKL__AGAIN (start over; a hold whose node it finds gone or not
 * ours is then LOST). A run granted at its first look holds as of the
 * listings sent with the transaction, as all the others do; one granted
 * before another that had to wait may have lost its node meanwhile,
 * before its watch was set: then every node is read again, in one round
 * trip. So the k holds never stand in part. */
ZKL__HIDDEN void zkl__join_check(zkl__acq_t *a,
                                 void (*then)(zkl__acq_t *a, int rc));
/* joinwait.c, under c->mu: starts the acquire (mode, deadline as a
 * queue's: ZKL__BLOCK...), after zkl__join_begin. ZKL_OK: done(j, rc,
 * ctx) runs once, on the event thread under c->mu, when it ends; ZKL_OK
 * there means j->a[] are the set's holds, and j->token their zxid. Any
 * other outcome leaves no node of ours in any queue (deleted, or left to
 * the deferred deletes while the connection is down). Else why not
 * (ZKL_ENOMEM...), and done never runs. */
ZKL__HIDDEN int zkl__join_acquire(zkl__join_t *j, int mode, int64_t deadline,
                                  zkl__join_done_fn done, void *ctx);
/* Under c->mu: something the acquire may wait for changed (a cancel). */
ZKL__HIDDEN void zkl__join_kick(zkl__join_t *j);
