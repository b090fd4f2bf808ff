/* SPDX-License-Identifier: Apache-2.0 */
/* base.h: the bottom layer (lib/base/): no ZooKeeper request is sent
 * from here. Names and guids, the format of node data and the policy
 * that reads a listing (pure, unit-tested and fuzzed), the table of
 * holds by thread, the client object every layer works under, and its
 * queue of notices, which every layer posts to and which calls nobody
 * back by name. Included by internal.h only. */

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
/* The N a lease's name carries (<guid>-n<N>-lease-<seq>), or 0. */
ZKL__HIDDEN int zkl__lease_limit(const char *node);
/* Whether any entry (skip[i] set left out) comes after e[me]. */
ZKL__HIDDEN int zkl__any_after(const zkl__entry_t *e, int n, int me,
                               const unsigned char *skip);
/* The number of entries before e[me] in queue order (0: e[me] holds),
 * leaving out those with skip[i] set (skip may be NULL); *pred (may be
 * NULL) gets the index of the nearest of them, the one to watch, or -1. */
ZKL__HIDDEN int zkl__place(const zkl__entry_t *e, int n, int me,
                           const unsigned char *skip, int *pred);

/* ---- nodedata.c: what a node's data says (the format: see there) ------- */
/* Our node's data: the header (host, pid, thread, and "id=<id>" unless id
 * is NULL) and `len` bytes of user data, in *out (malloc()ed, with a NUL
 * after *out_len bytes). ZKL_OK, ZKL_ENOMEM or ZKL_ESYSTEM. */
ZKL__HIDDEN int zkl__node_data(const char *id, const void *user, size_t len,
                               char **out, size_t *out_len);
/* The data of a lock's parent zklock makes as a container with nothing
 * else to say (not a semaphore's max=N, not kazoo's persistent parent):
 * zkl_sweep() deletes only parents that carry it. */
#define ZKL__DIR_MARK "zklock-parent"
/* Whether d (len bytes) is that mark. */
ZKL__HIDDEN int zkl__dir_marked(const char *d, int len);
/* The same for a flat lock's node (ZKL_MUTEX_FLAT), with a
 * "guid=<guid>" line instead of an id: its name is everybody's, so its
 * data says which acquisition made it. */
ZKL__HIDDEN int zkl__node_data_guid(const char *guid, const void *user,
                                    size_t len, char **out, size_t *out_len);
/* Whether the header of node data d has the line "guid=<guid>". */
ZKL__HIDDEN int zkl__data_has_guid(const char *d, size_t len,
                                   const char *guid);
/* Whether d is zklock node data: it starts with the magic line. */
ZKL__HIDDEN int zkl__data_ours(const char *d, size_t len);
/* The status lines an owner adds to its header (zkl__data_add_line), and
 * the bits that say which it added or is adding (zkl__data_intact). */
#define ZKL__LINE_READ "mode=read"  /* a read-write writer downgraded */
#define ZKL__LINE_HELD "state=held" /* a semaphore lease granted: relay */
enum { ZKL__MARK_READ = 1, ZKL__MARK_HELD = 2 };
/* d, zklock node data, with `line` added as the first line of its header,
 * in *out (malloc()ed, with a NUL after *out_len bytes); everything after
 * the magic line follows it unchanged, whatever it is (a header without
 * its empty line included). The line is added even if the header has it
 * already: ask zkl__data_mark() first where that matters. ZKL_EINVAL (*out
 * NULL) when d is not zklock node data or line is empty or holds a
 * newline; ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__data_add_line(const char *d, size_t len,
                                   const char *line, char **out,
                                   size_t *out_len);
/* Whether node data d carries the line `mark` in its header. */
ZKL__HIDDEN int zkl__data_mark(const char *d, size_t len, const char *mark);
/* A revoker's request line, "revoke=<nonce>,<grace_ms>", into buf.
 * ZKL_EINVAL when it does not fit or nonce holds a newline. */
#define ZKL__REVOKE_LINE_MAX 96
ZKL__HIDDEN int zkl__revoke_line(char *buf, size_t size, const char *nonce,
                                 int64_t grace_ms);
/* Whether node data d carries a revocation request: a "revoke=" line in
 * zklock's header, or Apache Curator's "__REVOKE__". */
ZKL__HIDDEN int zkl__revoke_asked(const char *d, size_t len);
/* How many "revoke=" lines the header of node data d has. */
ZKL__HIDDEN int zkl__revoke_count(const char *d, size_t len);
/* Whether node data d is what we wrote to our node (zkl__node_data with
 * this pid, id and user data), give or take what others may add: revokers'
 * requests, or Curator's "__REVOKE__" over it all. `marks`: the status
 * lines we added or are adding (ZKL__MARK_*); any other line, or one of
 * ours changed or taken out, is someone else's doing. */
ZKL__HIDDEN int zkl__data_intact(const char *d, size_t len, long pid,
                                 const char *id, const void *user,
                                 size_t ulen, unsigned marks);
/* Fills host, pid, thread, id and data of e from node data d (untrusted:
 * any bytes; data without the magic line is all user data). Returns
 * ZKL_OK or ZKL_ENOMEM. */
ZKL__HIDDEN int zkl__parse_node_data(zkl_contender_t *e, const char *d,
                                     size_t len);
/* A semaphore directory's data for `limit` leases, "max=N" (malloc()ed),
 * or NULL: out of memory, or limit not in 1..ZKL_LEASES_MAX. */
ZKL__HIDDEN char *zkl__dir_data(int limit);
/* The N of a directory's "max=N", exactly as zkl__dir_data writes it (no
 * sign, no leading zero, 1..ZKL_LEASES_MAX); 0 for anything else. */
ZKL__HIDDEN int zkl__dir_limit(const char *d, size_t len);

/* ---- digest.c ------------------------------------------------------------ */
/* A client's own digest identity (see digest.c): the credentials its
 * sessions authenticate with, and the id an ACL names it by. */
typedef struct zkl__identity {
  char cred[4 + 2 * ZKL__GUID_LEN + 2];   /* "zkl-USER:SECRET" */
  char acl_id[4 + ZKL__GUID_LEN + 1 + 29]; /* "zkl-USER:" base64(SHA-1) */
} zkl__identity_t;
ZKL__HIDDEN int zkl__identity_make(zkl__identity_t *id);
/* The id an ACL names digest credentials "user:password" by,
 * "user:base64(sha1(user:password))", in out (size bytes): ZKL_OK, or
 * ZKL_EINVAL (no ':', or too long). */
ZKL__HIDDEN int zkl__digest_id(const char *cred, char *out, size_t size);
ZKL__HIDDEN void zkl__sha1(const void *data, size_t len,
                           unsigned char out[20]);
/* base64 of n bytes into out (room for 4 * ((n + 2) / 3) + 1); its length */
ZKL__HIDDEN size_t zkl__base64(const unsigned char *in, size_t n, char *out);

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
ZKL__HIDDEN char *zkl__concat(const char *a, const char *b);
/* "dir/name", malloc()ed; NULL when out of memory. */
ZKL__HIDDEN char *zkl__child(const char *dir, const char *name);
ZKL__HIDDEN void zkl__deadline_ts(int64_t deadline_ms, struct timespec *ts);
ZKL__HIDDEN int zkl__cond_init(pthread_cond_t *cv);

/* ---- wake.c: wakes deferred until c->mu is let go --------------------------
 * zkl__wake broadcasts cv now, or, on a thread that called zkl__wake_defer,
 * once it calls zkl__wake_flush (after it unlocked c->mu), pinning *pin
 * meanwhile. Before cv's memory goes, zkl__wake_settle(pin). */
ZKL__HIDDEN void zkl__wake_defer(void);
ZKL__HIDDEN void zkl__wake(pthread_cond_t *cv, atomic_int *pin);
ZKL__HIDDEN void zkl__wake_flush(void);
ZKL__HIDDEN void zkl__wake_settle(atomic_int *pin);

/* ---- timer.c: the client's timers, one heap (under c->mu) ----------------
 * A timer lives inside what it is for, and a zeroed one is disarmed.
 * zkl__timer_set arms it (again) at due, a zkl_now_ms() time, with its
 * function, and wakes the event thread when it is the earliest;
 * zkl__timer_stop disarms it (a no-op if it is not armed). The event
 * thread's zkl__timers_fire calls fire(t) for each timer due at now,
 * disarmed first, and returns the next due time (0: none). Whatever
 * embeds an armed timer stops it before its memory goes. */
typedef struct zkl__timer zkl__timer_t;
struct zkl__timer {
  int64_t due;
  int armed;
  zkl__timer_t *child, *sibling, *prev; /* prev: parent, or left sibling */
  void (*fire)(zkl__timer_t *t);
};
ZKL__HIDDEN void zkl__timer_set(zkl_client_t *c, zkl__timer_t *t, int64_t due,
                                void (*fire)(zkl__timer_t *));
ZKL__HIDDEN void zkl__timer_stop(zkl_client_t *c, zkl__timer_t *t);
ZKL__HIDDEN int64_t zkl__timers_fire(zkl_client_t *c, int64_t now);

/* Registry of live handles, so that double destroy is detected instead of
 * touching freed memory. */
ZKL__HIDDEN int zkl__handle_add(const void *h);
ZKL__HIDDEN int zkl__handle_remove(const void *h);
ZKL__HIDDEN int zkl__handle_live(const void *h);

/* Watched paths, by hash, in each client's table of them (acq.c). */
#define ZKL__WTAB 4096

/* What a session's change means, told to the client's listener. */
enum zkl__sess_news {
  ZKL__SESS_CONNECTED,
  ZKL__SESS_DISCONNECTED,
  ZKL__SESS_EXPIRED,
  ZKL__SESS_KICK /* something a waiting acquire may need changed */
};

/* ---- stats.c: the client's counters (zkl_client_stats()) --------------- */
/* Every field a relaxed atomic: added to from any thread, under c->mu or
 * not, and read by zkl_client_stats() with no lock. */
typedef struct zkl__hist {
  _Atomic uint64_t bucket[ZKL_STATS_BUCKETS];
  _Atomic uint64_t count, sum_us;
} zkl__hist_t;
typedef struct zkl__stats {
  _Atomic uint64_t acquires[ZKL_STATS_RECIPES][ZKL_STATS_OUTCOMES];
  _Atomic uint64_t contended, handoffs, lost, revoked, forced;
  _Atomic uint64_t expired, reconnections;
  _Atomic uint64_t requests[ZKL_STATS_REQ_KINDS];
  _Atomic uint64_t transactions, transaction_ops;
  zkl__hist_t wait, hold;
} zkl__stats_t;
static inline void zkl__stat_add(_Atomic uint64_t *ctr, uint64_t n) {
  atomic_fetch_add_explicit(ctr, n, memory_order_relaxed);
}
/* Microseconds of CLOCK_MONOTONIC: the histograms' clock. */
ZKL__HIDDEN int64_t zkl__now_us(void);
/* The ZKL_STATS_* bucket of a value (negative: 0). */
ZKL__HIDDEN int zkl__stats_bucket(int64_t v);
/* A transaction of `ops` operations was sent. */
ZKL__HIDDEN void zkl__stats_transaction(zkl__stats_t *st, int ops);
/* Records now - since_us in h. */
ZKL__HIDDEN void zkl__stats_time(zkl__hist_t *h, int64_t since_us);
/* An acquire of `recipe` (ZKL_STATS_*) ended with rc, started at
 * start_us; contended and handoff as zkl_client_stats_t counts them. */
ZKL__HIDDEN void zkl__stats_acquire(zkl__stats_t *st, int recipe, int rc,
                                    int contended, int handoff,
                                    int64_t start_us);

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
  /* Our own identity, which every session of ours authenticates with, and
   * the ACL of the nodes whose release it guards: read for everyone,
   * everything for it alone (release.c) */
  zkl__identity_t ident;
  char user_id[256]; /* ZKL_ACL_CREATOR with digest credentials: their id */
  struct ACL own_entries[2];
  struct ACL_vector own_acl;
  zkl_log_fn log_fn;
  void *log_ctx;
  int log_level;

  zkl__session_t *sess;
  int state;               /* zkl_client_state_t */
  uint64_t conn_epoch;     /* bumped on every CONNECTED event */
  int64_t disconnected_at; /* zkl_now_ms() of the last disconnect, 0 when up */
  _Atomic uint64_t requests;
  _Atomic uint64_t nudges; /* reads sent because a write stayed out, not
                            * in requests (ZOOKEEPER-4537, lib/zk/batch.c) */
  _Atomic int64_t session_id;
  _Atomic int pub_state;
  zkl__stats_t stats; /* zkl_client_stats() */
  uint64_t next_id;

  zkl__acq_t *acqs;
  int nqueues;
  zkl__went_t *wtab[ZKL__WTAB]; /* watched paths, by hash */
  zkl__went_t *ftab[ZKL__WTAB]; /* flat locks' claims (acq.c), by hash */
  uint64_t evseq;

  pthread_t ev_thread;
  int ev_running;
  /* ZKL_CLIENT_DISPATCH: the eventfd readable while notices wait, or -1;
   * the thread in zkl_client_dispatch(), if any (under c->mu). */
  int dispatch_fd;
  int dispatching;
  pthread_t dispatch_thread;
  /* When the sleeping event thread wakes by itself (0: it is awake or
   * sleeps with no deadline), and whether it sleeps: lets a new hold skip
   * waking it. */
  int64_t ev_wake_at;
  int ev_asleep;
  zkl__timer_t *timers; /* timer.c: the heap's root (NULL: none armed) */
  size_t ntimers;
  /* Held connections' deadline: AT_RISK holds are LOST when it comes
   * (acq.c, armed at the disconnect). */
  zkl__timer_t lost_tm;
  /* When the event thread looks again at what it polls (loop.c): async
   * releases' verdicts, the nudge, the deferred deletes, a new session. */
  struct {
    zkl__timer_t judge, nudge, pdel, retry;
  } looks;
  int stopping;
  int need_session;
  int64_t session_retry_at; /* after a handle could not be made */
  struct zkl__event *evq_head, *evq_tail;
  /* Asynchronous acquisitions: runs ended, for the event thread to
   * settle. */
  zkl__acq_t *ended;
  /* Asynchronous releases waiting for their session's fate (release.c) */
  struct zkl__rel *rels;
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

ZKL__HIDDEN void zkl__post_state(zkl_client_t *c, zkl__acq_t *a, int state);
ZKL__HIDDEN void zkl__wait_cb_refs(zkl_client_t *c, zkl__queue_t *q);
ZKL__HIDDEN int zkl__on_event_thread(zkl_client_t *c);

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
/* fork(): objects made before a fork are unusable in the child. Bumped in
 * the child by a pthread_atfork() handler; an object remembers the value
 * it was created under. One relaxed load, for the reentrant fast path. */
extern _Atomic unsigned zkl__fork_gen
    __attribute__((visibility("hidden")));
ZKL__HIDDEN void zkl__fork_watch(void);
static inline int zkl__forked(unsigned gen) {
  return atomic_load_explicit(&zkl__fork_gen, memory_order_relaxed) != gen;
}

/* ---- held.c: holds by thread, across the process ------------------------ */
/* Whether thread tid holds the lock of q (same directory, same ensemble)
 * through another object than q's. */
ZKL__HIDDEN int zkl__held_elsewhere(const zkl__queue_t *q, uint64_t tid);
ZKL__HIDDEN void zkl__held_add(const zkl__queue_t *q, uint64_t tid);
ZKL__HIDDEN void zkl__held_remove(const zkl__queue_t *q, uint64_t tid);
