/* internal.h: what the library's files share. Never installed. */
#ifndef ZKLOCK_INTERNAL_H
#define ZKLOCK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zklock.h"

#define ZKL__HIDDEN __attribute__((visibility("hidden")))

#if defined(__GNUC__)
#define ZKL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ZKL__PRINTF(f, a)
#endif

/* Sequence numbers are printed by the server as %010d: 10 characters. */
#define ZKL__SEQ_LEN 10
#define ZKL__GUID_LEN 32
/* The end of every multi-lock node's guid: letters no hex guid (ours,
 * Curator's, kazoo's) has, so a listing tells the nodes of multi-locks,
 * which never hold one lock while they wait for another (multilock.c),
 * from those of everyone else. */
#define ZKL__ML_TAG "xmlk"
#define ZKL__ML_TAG_LEN 4

/* ---- policy.c: queue order from a listing's names ----------------------- */
ZKL__HIDDEN int zkl__seq_parse(const char *node, const char *marker,
                               int32_t *seq);
ZKL__HIDDEN int zkl__seq_before(int32_t a, int32_t b);

/* Kinds of contender node: exclusive ones conflict with every node,
 * shared ones only with exclusive ones. LOWERS: its client may later
 * create a node that sorts below later contenders (zkl__may_insert_below). */
enum {
  ZKL__KIND_EXCL = 1,
  ZKL__KIND_SHARED = 2,
  ZKL__KIND_LOWERS = 4,
  ZKL__KIND_LEASE = 8 /* a semaphore's: counted against its limit */
};
/* Whether `node` ends in a sequence, as every contender's name does,
 * whatever library made it: its sequence, and its kind by the marker
 * before it (an unknown marker: exclusive). */
ZKL__HIDDEN int zkl__name_parse(const char *node, int32_t *seq, int *kind);

/* Whether a queue's child `node` was made by someone else than a zklock
 * object of the queue's own flavour (markers `marker` and, if not NULL,
 * `marker_shared`): another library (Curator's "_c_<uuid>-lock-<seq>",
 * "__READ__<seq>"; kazoo's "__lock__" in a queue of zklock's default
 * naming), another zklock recipe, or anything planted. Names only: no
 * read. */
ZKL__HIDDEN int zkl__name_foreign(const char *node, const char *marker,
                                  const char *marker_shared);

/* One contender of a listing: its sequence, kind and (borrowed) name. */
typedef struct zkl__entry {
  int32_t seq;
  int kind;
  const char *name;
} zkl__entry_t;
/* The contenders among `names` (zkl__name_parse), in listing order.
 * *out (free()) borrows the names. Returns the count, or -1 when out of
 * memory. */
ZKL__HIDDEN int zkl__contenders(char *const *names, int n, zkl__entry_t **out);
ZKL__HIDDEN int zkl__may_insert_below(const zkl__entry_t *e, int n, int me,
                                      const unsigned char *skip);
/* What e[me] does next: hold when `before` (contenders before it that
 * conflict with it, skip[i] set left out) is 0; else watch the entries
 * watch[0..nwatch), the nearest first. `handoff`: the deletion of all of
 * them (of any one of them, with `any`) alone proves we hold, with no
 * new listing. `downgrade_ok`: so does watch[0]'s data marked "mode=read".
 * `relist_on_change`: a change to watch[0]'s data, or its mark
 * "state=held", means look at the queue again; `poll`: so does a long
 * quiet wait (ZKL__POLL_MS). `limit`: the semaphore's number of leases,
 * for an e[me] of kind LEASE (0: not a semaphore). */
#define ZKL__WATCH_MAX 32
#define ZKL__POLL_MS 5000
/* How long a blocking acquire that must end (deadline, cancel) waits for
 * an answer already on its way before it leaves the run to end in the
 * background: a round trip on any link that works. */
#define ZKL__GIVE_UP_MS 1000
typedef struct zkl__plan {
  int before;
  int nwatch;
  int watch[ZKL__WATCH_MAX];
  int handoff;
  int any;
  int downgrade_ok;
  int relist_on_change;
  int poll;
} zkl__plan_t;
ZKL__HIDDEN void zkl__decide(const zkl__entry_t *e, int n, int me,
                             const unsigned char *skip, int limit,
                             zkl__plan_t *p);
ZKL__HIDDEN int zkl__dir_limit(const char *d, size_t len);
/* The N a lease's name carries (<guid>-n<N>-lease-<seq>), or 0. */
ZKL__HIDDEN int zkl__lease_limit(const char *node);
/* For e[me], a lease of a semaphore of `limit` leases: the nearest lease
 * before it (skip[i] set left out) whose name carries another N, or -1;
 * *agree gets how many before it carry `limit`. Leases whose names carry
 * no N count as neither. */
ZKL__HIDDEN int zkl__lease_disagrees(const zkl__entry_t *e, int n, int me,
                                     const unsigned char *skip, int limit,
                                     int *agree);
/* Whether node data d carries the status line `mark` in its header. */
ZKL__HIDDEN int zkl__data_mark(const char *d, size_t len, const char *mark);
/* Whether any entry (skip[i] set left out) comes after e[me]. */
ZKL__HIDDEN int zkl__any_after(const zkl__entry_t *e, int n, int me,
                               const unsigned char *skip);
/* The number of entries before e[me] in queue order (0: e[me] holds),
 * leaving out those with skip[i] set (skip may be NULL); *pred (may be
 * NULL) gets the index of the nearest of them, the one to watch, or -1. */
ZKL__HIDDEN int zkl__place(const zkl__entry_t *e, int n, int me,
                           const unsigned char *skip, int *pred);

/* ---- util.c -------------------------------------------------------------- */
ZKL__HIDDEN int zkl__valid_name(const char *name);
ZKL__HIDDEN int zkl__valid_root(const char *root);
ZKL__HIDDEN int zkl__guid(char out[ZKL__GUID_LEN + 1]);
/* A process-unique id for the calling thread, cheap enough for the
 * reentrant fast path (pthread_t cannot be compared atomically); never 0,
 * which means "nobody". */
extern __thread uint64_t zkl__tid
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
ZKL__HIDDEN uint64_t zkl__tid_assign(void);
static inline uint64_t zkl__self_tid(void) {
  uint64_t t = zkl__tid;
  return t ? t : zkl__tid_assign();
}
ZKL__HIDDEN char *zkl__strdup(const char *s);
ZKL__HIDDEN char *zkl__join(const char *a, const char *b);
/* "dir/name", malloc()ed; NULL when out of memory. */
ZKL__HIDDEN char *zkl__child(const char *dir, const char *name);
ZKL__HIDDEN int zkl__node_data(const char *id, const void *user, size_t len,
                               char **out, size_t *out_len);
ZKL__HIDDEN void zkl__deadline_ts(int64_t deadline_ms, struct timespec *ts);
ZKL__HIDDEN int zkl__cond_init(pthread_cond_t *cv);

/* Registry of live handles, so that double destroy is detected instead of
 * touching freed memory. */
ZKL__HIDDEN int zkl__handle_add(const void *h);
ZKL__HIDDEN int zkl__handle_remove(const void *h);
ZKL__HIDDEN int zkl__handle_live(const void *h);

/* ---- the client: client.c, session.c, acq.c, events.c, deferred.c -------- */

/* One ZooKeeper handle. Kept alive by references: the client's "current"
 * pointer, each operation in flight, and each acquisition whose node may
 * still exist on it. The event thread closes it when the last one goes. */
typedef struct zkl__session {
  zkl_client_t *c;
  zhandle_t *zh;
  int zstate; /* last ZooKeeper state seen by its watcher */
  int refs;
  int expired;
  int auth_done; /* the ensemble accepted our credentials */
  int64_t id;
  struct zkl__session *next_dead;
  /* group commit (batch.c), under bmu: writes that wait for the
   * transaction in flight, and how many transactions are out */
  pthread_mutex_t bmu;
  struct zkl__batch *queued;
  int inflight;
  struct rd *refused; /* listings the client refused, answered by batch.c */
} zkl__session_t;

typedef struct zkl__acq zkl__acq_t;
typedef struct zkl__queue zkl__queue_t;

/* A path an acquisition watches, in the client's table of them (acq.c):
 * a watch event finds its acquisitions without walking them all. `idx`:
 * the wait set's index, or -1 for the acquisition's own node. Embedded
 * in what owns the path, so registering never fails. */
typedef struct zkl__went {
  const char *path; /* NULL: not registered */
  zkl__acq_t *a;
  int idx;
  struct zkl__went *next;
} zkl__went_t;
#define ZKL__WTAB 4096

/* Queue flags (internal; bit 0 is ZKL_MUTEX_NO_NODE_WATCH's on purpose). */
enum {
  ZKL__Q_NO_NODE_WATCH = 1 << 0,      /* no watch on our own node */
  ZKL__Q_LOSE_ON_DISCONNECT = 1 << 1, /* a disconnect ends the hold */
  ZKL__Q_VERIFY_OWNER = 1 << 2,       /* confirm ephemeralOwner at the head */
  /* kazoo's naming: kazoo checks a lock's parent once per Lock object and
   * never makes it again, so ours is a persistent node (as kazoo makes
   * it), never deleted by us, nor swept by the server as a container */
  ZKL__Q_KEEP_DIR = 1 << 3
};

/* A queue: the ZooKeeper directory <root>/<name> and how we join it.
 * The mutex (and later recipes) embed one; the engine in queue.c runs it. */
struct zkl__queue {
  zkl_client_t *c;
  char *dir;          /* "<root>/<name>" */
  char *prefix;       /* "<dir>/" : guid and marker follow */
  const char *marker; /* "-lock-", "-elect-", "__WRIT__": exclusive nodes */
  const char *marker_shared; /* "__READ__": shared nodes, or NULL */
  int limit;          /* a semaphore's leases (marker "-lease-"), or 0 */
  char *dir_data;     /* what <dir>'s data must say ("max=N"), or NULL */
  int64_t dir_czxid;  /* the <dir> found to say it, or 0 (under c->mu) */
  int32_t dir_version; /* at that data version: a rewrite changes it */
  /* <dir>, as this object knows it (under c->mu): seen (a create in it
   * went through, so joins need not make it first); the incarnation this
   * object made as a container, or 0; and whether the last look at the
   * queue found our node alone in that one: then it is this object's to
   * delete at close, where the server would only reap it a minute later
   * (at a bounded rate), and per-key locks would pile parents up; and
   * whether this object released a hold already (queue.c remove_node);
   * and whether any listing of it showed a node of another library (or
   * recipe, or flavour: zkl__name_foreign): then never ours to delete,
   * for that library may rely on it staying (kazoo checks it once per
   * Lock object), even when this object made it. */
  int dir_seen;
  int64_t dir_made;
  int dir_alone;
  int dir_kept;
  int dir_peer;
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
  int async;          /* async acquisitions pending or holds granted */
  int async_refs;     /* zkl_hold_t objects alive (under c->mu) */
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
  int64_t watch_due;     /* when to watch our node (0: not wanted/sent) */
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
   * data, read by the own-node watch): the hold's state is then
   * REVOKE_REQUESTED instead of HELD, and its loss ZKL_EREVOKED (under
   * c->mu). */
  int revoke_asked;
  /* Our node's data (under c->mu): the status lines we wrote or are
   * writing (ZKL__MARK_*); its version as last found intact, which a
   * guarded write checks; and whether a waiting node was found rewritten
   * by someone else (the wait then ends, ZKL_EREVOKED). */
  unsigned marks;
  int32_t dversion;
  int tainted;
  int waited; /* a multi-lock member's run waited before it granted */
  struct zkl__run *run;  /* while acquiring: the protocol's machine (queue.c) */
  /* Set by the run (queue.c) while it acquires: something it may wait
   * for happened (a watched node, the connection, a cancel). acq.c and
   * the watcher call it, under c->mu, and know nothing of the run. */
  void (*wake)(zkl__acq_t *a);
  zkl__went_t own_went;  /* path: our node's, while we know it */
  uint64_t evseq;        /* the path watcher's last event that saw us */
  pthread_cond_t cv;
  zkl__acq_t *prev, *next; /* client's list of acquisitions */
};

/* What a session's change means, told to the client's listener. */
enum zkl__sess_news {
  ZKL__SESS_CONNECTED,
  ZKL__SESS_DISCONNECTED,
  ZKL__SESS_EXPIRED,
  ZKL__SESS_KICK /* something a waiting acquire may need changed */
};

struct zkl_client {
  pthread_mutex_t mu;
  /* Hooks wired by client.c, so that the lower layers never name the
   * upper ones: the listener of session changes (acq.c's), and the
   * watcher given to every watch the library sets (acq.c's). */
  void (*on_session)(zkl_client_t *c, zkl__session_t *s,
                     enum zkl__sess_news what);
  watcher_fn watcher;
  unsigned fork_gen; /* zkl__fork_gen when created: see zkl__forked() */
  pthread_cond_t cv; /* state changes, new session, event queue, refs */
  char *hosts;
  int timeout_req;
  int timeout_neg;
  char *auth_scheme; /* NULL: no authentication */
  char *auth;
  int auth_failed;   /* the ensemble rejected the credentials: final */
  const struct ACL_vector *acl; /* of every node we create */
  struct ACL acl_entries[2];    /* acl's storage for ZKL_ACL_CREATOR */
  struct ACL_vector acl_vec;
  zkl_log_fn log_fn;
  void *log_ctx;
  int log_level;

  zkl__session_t *sess;
  int state;               /* zkl_client_state_t */
  uint64_t conn_epoch;     /* bumped on every CONNECTED event */
  int64_t disconnected_at; /* zkl_now_ms() of the last disconnect, 0 when up */
  _Atomic uint64_t requests;
  _Atomic int64_t session_id;
  _Atomic int pub_state;
  uint64_t next_id;

  zkl__acq_t *acqs;
  int nqueues;
  zkl__went_t *wtab[ZKL__WTAB]; /* watched paths, by hash */
  uint64_t evseq;

  pthread_t ev_thread;
  int ev_running;
  /* ZKL_CLIENT_DISPATCH: the eventfd readable while notices wait, or -1;
   * the thread in zkl_client_dispatch(), if any (under c->mu). */
  int dispatch_fd;
  int dispatching;
  pthread_t dispatch_thread;
  /* When the sleeping event thread wakes by itself (0: it is awake or
   * sleeps with no deadline); lets a new hold skip waking it. */
  int64_t ev_wake_at;
  int64_t watch_next; /* no hold's watch_due is earlier (0: none) */
  int stopping;
  int need_session;
  int64_t session_retry_at; /* after a handle could not be made */
  struct zkl__event *evq_head, *evq_tail;
  /* Asynchronous acquisitions: runs ended, for the event thread to
   * settle; when the earliest parked one is next due (0: none). */
  zkl__acq_t *ended;
  int64_t timer_due;
  struct zkl__pdel *pdel;
  zkl__session_t *dead;
  /* Revokers waiting for a node to go (revoke.c), and the node events
   * seen meanwhile: each one broadcasts c->cv. */
  int node_waiters;
  uint64_t node_events;
};

ZKL__HIDDEN void zkl__log(zkl_client_t *c, int level, const char *fmt, ...)
    ZKL__PRINTF(3, 4);
/* The same from under c->mu: delivered by the event thread. */
ZKL__HIDDEN void zkl__post_log(zkl_client_t *c, int level, const char *fmt,
                               ...) ZKL__PRINTF(3, 4);

/* Under c->mu. */
ZKL__HIDDEN zkl__session_t *zkl__session_get(zkl_client_t *c);
ZKL__HIDDEN void zkl__session_put(zkl_client_t *c, zkl__session_t *s);
ZKL__HIDDEN int zkl__wait_usable(zkl_client_t *c, zkl__session_t *old,
                                 uint64_t epoch, int64_t deadline_ms);
ZKL__HIDDEN int zkl__session_verdict(zkl_client_t *c, zkl__session_t *s,
                                     uint64_t epoch);
ZKL__HIDDEN void zkl__acq_link(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__acq_unlink(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN void zkl__post_state(zkl_client_t *c, zkl__acq_t *a, int state);
ZKL__HIDDEN void zkl__set_state(zkl_client_t *c, zkl__acq_t *a, int state);
ZKL__HIDDEN void zkl__defer_delete(zkl_client_t *c, zkl__session_t *s,
                                   const char *path);
/* The same, for a node given up with the connection up: sent at once by
 * the event thread, with no log line. */
ZKL__HIDDEN void zkl__defer_delete_now(zkl_client_t *c, zkl__session_t *s,
                                       const char *path);
ZKL__HIDDEN void zkl__defer_find_delete(zkl_client_t *c, zkl__session_t *s,
                                        const char *dir, const char *guid);
/* deferred.c, for the event thread: send what is due, free what is done;
 * at teardown, drop the records' sessions, then free the records. */
ZKL__HIDDEN void zkl__pdel_run(zkl_client_t *c);
ZKL__HIDDEN void zkl__pdel_release(zkl_client_t *c);
/* Teardown, under c->mu: wait, until `until` at the most, for the
 * deferred deletes' requests under way (pdel), or else for every other
 * request on the current session, to end. */
ZKL__HIDDEN void zkl__quiesce(zkl_client_t *c, int64_t until, int pdel);
ZKL__HIDDEN void zkl__pdel_free_all(zkl_client_t *c);
ZKL__HIDDEN void zkl__wait_cb_refs(zkl_client_t *c, zkl__queue_t *q);
/* A hold that lasts this long gets a watch on its own node, so that its
 * deletion is reported as LOST at once; shorter holds learn it at release
 * and send no extra request. */
#define ZKL__NODE_WATCH_DELAY_MS 100
ZKL__HIDDEN void zkl__schedule_node_watch(zkl_client_t *c, zkl__acq_t *a);
ZKL__HIDDEN int zkl__on_event_thread(zkl_client_t *c);

/* session.c, for the event thread and the teardown. zkl__new_session is
 * called without c->mu: 0, or -1 with errno when no handle could be made.
 * zkl__lost_deadline: when holds still AT_RISK become LOST (0: none). */
ZKL__HIDDEN int zkl__new_session(zkl_client_t *c);
ZKL__HIDDEN int64_t zkl__lost_deadline(const zkl_client_t *c);
ZKL__HIDDEN void zkl__close_dead(zkl_client_t *c);
/* acq.c: what the session's changes mean for the acquisitions on session
 * s; the event thread's timed duties (zkl__acqs_watch_due returns when it
 * is next due, 0: never). Under c->mu. */
ZKL__HIDDEN void zkl__acqs_on_session(zkl_client_t *c, zkl__session_t *s,
                                      enum zkl__sess_news what);
ZKL__HIDDEN void zkl__acqs_expire_at_risk(zkl_client_t *c);
ZKL__HIDDEN int64_t zkl__acqs_watch_due(zkl_client_t *c);
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
/* async.c: an asynchronous acquire on q (a recipe's, checked): starts
 * it, and hands the outcome to fn on the callback thread. The notice
 * that delivers it (notice.c: post under c->mu; unpost: taken back
 * before delivery, 1 if it was still queued; deliver: no lock held). */
ZKL__HIDDEN int zkl__hold_start(zkl__queue_t *q, int shared,
                                int64_t deadline_ms, zkl_hold_fn fn,
                                void *arg, zkl_hold_t **out);
/* A notice that runs fn(arg) on the callback thread, with no lock held.
 * It is allocated ahead (an outcome must never be lost for want of
 * memory: free() it if never posted); posted under c->mu; taken back
 * before delivery by unpost (1 if it was still queued). */
ZKL__HIDDEN struct zkl__event *zkl__notice_new(void);
ZKL__HIDDEN void zkl__post_fn(zkl_client_t *c, struct zkl__event *ev,
                              void (*fn)(void *arg), void *arg);
ZKL__HIDDEN int zkl__notice_unpost(zkl_client_t *c, const void *arg);
/* notice.c: under c->mu, run the first notice (c->mu dropped meanwhile);
 * the notices left at teardown. loop.c: the event thread's body. */
ZKL__HIDDEN void zkl__notice_deliver(zkl_client_t *c);
ZKL__HIDDEN void zkl__events_discard(zkl_client_t *c);
ZKL__HIDDEN void *zkl__event_main(void *arg);

/* Whether stat describes a's node: created by us (czxid) and owned by the
 * session we created it on. A node deleted and re-created under our name
 * by someone else fails this. */
ZKL__HIDDEN int zkl__owns(const zkl__acq_t *a, const struct Stat *st);
/* The same for the session s, which a->sess no longer names. */
ZKL__HIDDEN int zkl__owns_on(const zkl__acq_t *a, const zkl__session_t *s,
                             const struct Stat *st);
/* What a standing hold's state is while connected: HELD, or
 * REVOKE_REQUESTED once asked for; and what its loss is to the caller. */
static inline int zkl__held_state(const zkl__acq_t *a) {
  return a->revoke_asked ? ZKL_STATE_REVOKE_REQUESTED : ZKL_STATE_HELD;
}
static inline int zkl__lost_rc(const zkl__acq_t *a) {
  return a->revoke_asked ? ZKL_EREVOKED : ZKL_ELOST;
}
/* Whether node data d carries a revocation request: a "revoke=" line in
 * zklock's header, or Apache Curator's "__REVOKE__" (policy.c). */
ZKL__HIDDEN int zkl__revoke_asked(const char *d, size_t len);
/* Whether node data d is what we wrote to our node (zkl__node_data with
 * this pid, id and user data), give or take what others may add: revokers'
 * requests, or Curator's "__REVOKE__" over it all. `marks`: the status
 * lines we added or are adding (ZKL__MARK_*); any other line, or one of
 * ours changed or taken out, is someone else's doing (policy.c). */
enum { ZKL__MARK_READ = 1, ZKL__MARK_HELD = 2 };
ZKL__HIDDEN int zkl__data_intact(const char *d, size_t len, long pid,
                                 const char *id, const void *user,
                                 size_t ulen, unsigned marks);
/* The same for a's node (acq.c). */
ZKL__HIDDEN int zkl__acq_data_intact(const zkl__acq_t *a, const char *d,
                                     int len);
/* Under c->mu: a's node, ours still, has data someone else wrote
 * (zkl__acq_data_intact): it is deleted at once, and the hold LOST. */
ZKL__HIDDEN void zkl__lose_rewritten(zkl_client_t *c, zkl__acq_t *a);
/* Under c->mu: a's node is gone or not ours while it holds. */
ZKL__HIDDEN void zkl__lose(zkl_client_t *c, zkl__acq_t *a, const char *why);

/* fork(): objects made before a fork are unusable in the child. Bumped in
 * the child by a pthread_atfork() handler; an object remembers the value
 * it was created under. One relaxed load, for the reentrant fast path. */
extern _Atomic unsigned zkl__fork_gen
    __attribute__((visibility("hidden")));
ZKL__HIDDEN void zkl__fork_watch(void);
static inline int zkl__forked(unsigned gen) {
  return atomic_load_explicit(&zkl__fork_gen, memory_order_relaxed) != gen;
}

/* The watcher (acq.c) that client.c gives every watch (c->watcher). */
ZKL__HIDDEN void zkl__path_watcher(zhandle_t *zh, int type, int state,
                                   const char *path, void *ctx);

/* ---- call.c and request.c: the record of a request, and every request -- */

typedef struct zkl__call zkl__call_t;
/* A call's completion, run under c->mu on ZooKeeper's completion thread
 * once the answer is in the call; it may free the call. */
typedef void (*zkl__call_fn)(zkl__call_t *call);

struct zkl__call {
  zkl_client_t *c;
  pthread_cond_t *cv;       /* waited for: signalled when done */
  zkl__call_fn fn;          /* or this is run when done */
  void *ctx;                /* fn's */
  int done;
  int rc;
  char *path;               /* create: created path */
  struct Stat stat;         /* create2, exists, get; getChildren: parent's */
  struct String_vector kids; /* getChildren (deep copy) */
  char *data;               /* get */
  int data_len;
  int *left;                /* batch: calls not yet done (see call_batch) */
  struct zkl__bop *bop;     /* a write group commit holds back (batch.c) */
};

/* A call is waited for on cv (zkl__call_init, then zkl__call_wait) or
 * completed by fn (zkl__call_init_fn). Each request function below issues
 * one request on s and returns the C client's code: when it refuses the
 * request, a waited-for call is done at once with that code, while fn is
 * never run (the caller, which may hold c->mu, handles the refusal). A
 * waited-for call is issued with no lock held. */
ZKL__HIDDEN void zkl__call_init(zkl__call_t *call, zkl_client_t *c,
                                pthread_cond_t *cv);
ZKL__HIDDEN void zkl__call_init_fn(zkl__call_t *call, zkl_client_t *c,
                                   zkl__call_fn fn, void *ctx);
ZKL__HIDDEN void zkl__call_free(zkl__call_t *call);
ZKL__HIDDEN int zkl__create(zkl__call_t *call, zkl__session_t *s,
                            const char *path, const char *data, int len,
                            int flags);
/* A queue's directory, or one of its parents: a container, or with
 * `persistent` a plain node (a kazoo flavour's, as kazoo makes it). Never
 * held back for a transaction: the stat (czxid) must come back, and an
 * "exists" must not fail a neighbour's create with it. */
ZKL__HIDDEN int zkl__create_dir(zkl__call_t *call, zkl__session_t *s,
                                const char *path, const char *data, int len,
                                int persistent);
ZKL__HIDDEN int zkl__children(zkl__call_t *call, zkl__session_t *s,
                              const char *path);
ZKL__HIDDEN int zkl__get(zkl__call_t *call, zkl__session_t *s,
                         const char *path, int watch);
ZKL__HIDDEN int zkl__exists(zkl__call_t *call, zkl__session_t *s,
                            const char *path);
/* exists with a watch: its event reaches zkl__path_watcher, which counts
 * node events for the waiters of c->node_waiters (revoke.c). */
ZKL__HIDDEN int zkl__exists_watch(zkl__call_t *call, zkl__session_t *s,
                                  const char *path);
ZKL__HIDDEN int zkl__delete(zkl__call_t *call, zkl__session_t *s,
                            const char *path);
/* path and its parent `dir`, one transaction (zkl__batch_delete_pair):
 * pcall gets the parent's code. */
ZKL__HIDDEN int zkl__delete_with_parent(zkl__call_t *call, zkl__call_t *pcall,
                                        zkl__session_t *s, const char *path,
                                        const char *dir);
/* setData, if the node's data version is `version` (-1: any). */
ZKL__HIDDEN int zkl__set(zkl__call_t *call, zkl__session_t *s,
                         const char *path, const char *data, int len,
                         int version);
/* setData whose answer nobody waits for. Caller holds no lock. */
ZKL__HIDDEN void zkl__set_nowait(zkl__session_t *s, const char *path,
                                 const char *data, int len, int version);
ZKL__HIDDEN int zkl__sync(zkl__call_t *call, zkl__session_t *s,
                          const char *path);
/* zoo_amulti, refused with ZINVALIDSTATE without calling it on a handle
 * whose session expired or whose credentials were refused: there the
 * 3.8.0 client frees the caller's paths (call.c says how). */
ZKL__HIDDEN int zkl__zoo_amulti(zhandle_t *zh, int n, const zoo_op_t *ops,
                                zoo_op_result_t *results, void_completion_t fn,
                                const void *data);
/* A transaction (zoo_amulti) of ops[0..n); ops, their buffers and
 * results[0..n) must live until the call is done. */
ZKL__HIDDEN int zkl__multi(zkl__call_t *call, zkl__session_t *s, int n,
                           const zoo_op_t *ops, zoo_op_result_t *results);
/* A listing of `path` that must see the node `create` (issued just before
 * on the same session, not yet answered) makes: it leaves right behind
 * the transaction that carries the create, and is asked again if that
 * transaction fails for a neighbour's sake. */
ZKL__HIDDEN int zkl__children_after(zkl__call_t *call, zkl__session_t *s,
                                    const char *path, zkl__call_t *create);

/* ---- group commit (batch.c) ----------------------------------------------
 * The creates of lock nodes and every delete go through here: sent at once
 * when no write of the session is out, otherwise held back and sent, with
 * all the others that arrive meanwhile, as one zoo_amulti when the
 * transaction in flight is answered. Reads are never held back, except a
 * listing that must follow its create (zkl__children_after). */
ZKL__HIDDEN int zkl__batch_create(zkl__call_t *call, zkl__session_t *s,
                                  const char *path, const char *data,
                                  int len, int flags);
ZKL__HIDDEN int zkl__batch_delete(zkl__call_t *call, zkl__session_t *s,
                                  const char *path);
/* Deletes path and its parent in one transaction: the parent only if the
 * node's delete is applied with it (then the parent is surely the one the
 * node was in), and the node alone, once more, if the parent's fails
 * (someone else's node came in). */
ZKL__HIDDEN int zkl__batch_delete_pair(zkl__call_t *call, zkl__call_t *pcall,
                                       zkl__session_t *s, const char *path,
                                       const char *parent);
ZKL__HIDDEN int zkl__batch_list(zkl__call_t *call, zkl__session_t *s,
                                const char *path, zkl__call_t *create);
ZKL__HIDDEN void zkl__batch_init(zkl__session_t *s);
ZKL__HIDDEN void zkl__batch_fini(zkl__session_t *s);
/* One transaction of s answered: send what waited for it. Tests call it
 * after taking a transaction slot themselves (s->inflight++) to make a
 * batch of what they issue meanwhile. */
ZKL__HIDDEN void zkl__batch_done(zkl__session_t *s);
/* For tests: the ops held back on s, and in how many transactions. */
ZKL__HIDDEN int zkl__batch_queued(zkl__session_t *s, int *transactions);
/* call.c's completions, which request.c and batch.c give the C client,
 * and zkl__issued, which counts a request sent and finishes a waited-for
 * call that the client refused outright (it returns rc). */
ZKL__HIDDEN int zkl__issued(zkl__call_t *call, int rc);
ZKL__HIDDEN void zkl__on_data(int rc, const char *value, int len,
                              const struct Stat *stat, const void *data);
ZKL__HIDDEN void zkl__on_stat(int rc, const struct Stat *stat,
                              const void *data);
ZKL__HIDDEN void zkl__on_create(int rc, const char *value,
                                const struct Stat *stat, const void *data);
ZKL__HIDDEN void zkl__on_children(int rc, const struct String_vector *v,
                                  const struct Stat *stat, const void *data);
ZKL__HIDDEN void zkl__on_void(int rc, const void *data);
ZKL__HIDDEN void zkl__call_finish(zkl__call_t *call, int rc);
/* Makes calls[0..n) (initialised, not yet issued) one batch: the waiter
 * is woken once, when the last of them is done, not once per reply. */
ZKL__HIDDEN void zkl__call_batch(zkl__call_t **calls, int n, int *left);
/* Wait (c->mu held) until every call in calls[0..n) is done; ends any
 * batch they formed. */
ZKL__HIDDEN void zkl__call_wait(zkl__call_t **calls, int n);
#ifdef ZKL_FAULT_INJECTION
/* Only in libzklock_internal, for tests/test_faults.c: when set, the next
 * create completion cannot keep the node's name (as if out of memory), the
 * next exists or getData completion reports a lost connection. */
ZKL__HIDDEN extern _Atomic int zkl__fault_create_nomem, zkl__fault_stat_lost;
/* While positive, that many new session handles cannot be made (EMFILE). */
ZKL__HIDDEN extern _Atomic int zkl__fault_new_session;
#endif
ZKL__HIDDEN int zkl__is_conn_error(int rc);

/* ---- held.c: holds by thread, across the process ------------------------ */
/* Whether thread tid holds the lock of q (same directory, same ensemble)
 * through another object than q's. */
ZKL__HIDDEN int zkl__held_elsewhere(const zkl__queue_t *q, uint64_t tid);
ZKL__HIDDEN void zkl__held_add(const zkl__queue_t *q, uint64_t tid);
ZKL__HIDDEN void zkl__held_remove(const zkl__queue_t *q, uint64_t tid);

/* ---- guard.c: writes that commit only while a hold is ours ------------- */
/* The guarded call of every recipe, on holds[0..nh) (granted, on one
 * session, kept alive by the caller: a multi-lock checks all its nodes).
 * Caller holds no lock. With ZKL_GUARD_RELEASE and ZKL_OK, their nodes
 * are gone and forgotten: the recipe's release then only frees. */
ZKL__HIDDEN int zkl__guarded(zkl__acq_t *const *holds, size_t nh,
                             zkl_op_t *ops, size_t n, unsigned flags);

/* ---- queue.c: the queue protocol ----------------------------------------- */

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
  void (*notify)(zkl__queue_t *q, int state, uint64_t token); /* or NULL */
} zkl__queue_spec_t;
/* The fields every recipe fills alike; `o` is its options, maybe NULL. */
#define ZKL__QUEUE_SPEC(root_, name_, o)                                      \
  {.root = (root_), .name = (name_), .data = (o) ? (o)->data : NULL,        \
   .len = (o) ? (o)->data_len : 0}
/* The checks every recipe's create makes: a live client not inherited
 * across fork(), a valid name and root, data within ZKL_DATA_MAX, no flag
 * outside `allowed`. ZKL_OK, ZKL_EINVAL or ZKL_EFORKED. */
ZKL__HIDDEN int zkl__recipe_args(zkl_client_t *c, const char *name,
                                 const char *root, const void *data,
                                 size_t len, unsigned flags,
                                 unsigned allowed);
/* A recipe's per-thread holds, linked by hnext (under c->mu): the hold of
 * thread tid, whether a thread other than tid holds, and removal. */
ZKL__HIDDEN zkl__acq_t *zkl__hold_find(zkl__acq_t *list, uint64_t tid);
ZKL__HIDDEN int zkl__hold_others(const zkl__acq_t *list, uint64_t tid);
ZKL__HIDDEN void zkl__hold_unlink(zkl__acq_t **list, zkl__acq_t *a);
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
/* Under c->mu: end hold (or ended acquisition) a where nothing may wait:
 * its node is deleted by the event thread, and a is freed. */
ZKL__HIDDEN void zkl__queue_discard(zkl__acq_t *a);
/* Under c->mu: forget a's node, its delete left to the event thread
 * (an acquisition or hold given up where nothing may wait). */
ZKL__HIDDEN void zkl__queue_drop(zkl__acq_t *a);
/* The event thread's share, under c->mu: settle the runs that ended;
 * wake the parked ones whose time came, returning when the next is due
 * (0: none). */
ZKL__HIDDEN void zkl__runs_settle(zkl_client_t *c);
ZKL__HIDDEN int64_t zkl__runs_timers(zkl_client_t *c);
/* judge: when the delete cannot reach the server, wait for the session's
 * fate and report ZKL_ELOST unless it reconnects (a mutex's unlock). */
ZKL__HIDDEN int zkl__queue_release(zkl__queue_t *q, zkl__acq_t *a, int judge);
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
/* Fills host, pid, thread, id and data of e from node data d (untrusted:
 * any bytes). Returns ZKL_OK or ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__parse_node_data(zkl_contender_t *e, const char *d,
                                     size_t len);
/* The same after validating root and name (public list functions). */
ZKL__HIDDEN int zkl__list_named(zkl_client_t *c, const char *root,
                                const char *name, zkl_contender_t **out,
                                size_t *count);

#endif
