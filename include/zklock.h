/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklock.h: distributed locks on Apache ZooKeeper.
 *
 * This header is the whole contract of libzklock. Read this block first.
 *
 * OBJECTS
 *   zkl_client_t  owns one ZooKeeper session, shared by every lock and thread
 *                 of the process. After the session expires it creates a new
 *                 session for later work; holds made on the old session are
 *                 LOST.
 *   zkl_mutex_t   a reentrant distributed mutex <root>/<name> created on a
 *                 client. Several zkl_mutex_t objects, in one or many
 *                 processes, may name the same lock.
 *   zkl_rwlock_t  a reentrant distributed read-write lock, on the same
 *                 queue: it and zkl_mutex_t objects may share a name.
 *   zkl_semaphore_t  N leases (zkl_lease_t) of one name at once.
 *   zkl_hold_t    a hold taken by an asynchronous acquire on any of them:
 *                 it belongs to no thread.
 *
 * THREAD SAFETY
 *   Every object may be shared by any number of threads unless a function
 *   says otherwise. Objects do not survive fork(): in the child every call
 *   on an object created before the fork returns ZKL_EFORKED at once (the
 *   session, its threads and its holds belong to the parent); destroy calls
 *   free nothing there. Create new objects in the child. A zkl_mutex_t is held by a *thread*: two threads of one
 *   process exclude each other exactly like two processes, and only the
 *   thread that locked may unlock. Reentrancy is per thread: only a thread's
 *   first lock and its last unlock reach ZooKeeper.
 *
 * CALLBACKS
 *   State and log callbacks run on a thread owned by the client, named
 *   "zkl-event" on Linux (never on the caller's thread, never with an
 *   internal lock held). They may call any
 *   zklock function except zkl_client_destroy() on their own client, but they
 *   should return quickly: callbacks of one client run one after another.
 *   A program built around an event loop can have them run on its own
 *   thread instead: ZKL_CLIENT_DISPATCH, zkl_client_fd() and
 *   zkl_client_dispatch().
 *
 * ERRORS
 *   Every fallible function returns int: ZKL_OK (0) on success, a negative
 *   zkl_error_t (below -1000), or a ZooKeeper error code (ZCONNECTIONLOSS,
 *   ZNOAUTH, ...) passed through unchanged, which this header names
 *   ZKL_ZCONNECTIONLOSS, ZKL_ZNOAUTH, ... (zkl_zk_error_t): no need for
 *   zookeeper.h. The two ranges never overlap. zkl_strerror() and
 *   zkl_err_name() describe any of them. Codes are never renumbered.
 *
 * MEMORY
 *   Strings and buffers passed in are copied. Anything returned that the
 *   caller owns is freed with the one function its documentation names.
 *   A call that hands out an object through a pointer (*out of the create
 *   functions, a lease, a hold, a listing) sets that pointer to NULL
 *   whenever it fails, so destroying or freeing it then is harmless (every
 *   destroy and free function takes NULL).
 *
 * TIME
 *   Deadlines are absolute, in milliseconds of CLOCK_MONOTONIC as returned by
 *   zkl_now_ms(). A deadline is not restarted when a wait wakes up. Every
 *   deadline_ms argument follows one rule:
 *     ZKL_NO_DEADLINE  none: the call waits for as long as it takes;
 *     any other value  the time to give up at, with ZKL_ETIMEDOUT. One
 *                      already past, any negative value included, waits
 *                      for nothing: an acquire still takes a lock it finds
 *                      free at its first look (zkl_mutex_timedlock()), on
 *                      any key (new, used before, or under a parent made
 *                      by someone else); an election's wait waits for its
 *                      campaign's first look (zkl_election_wait()); and
 *                      a wait for the connection looks once.
 */
#ifndef ZKLOCK_H
#define ZKLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "zklock_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define ZKL_EXTERN __attribute__((visibility("default")))
#else
#define ZKL_EXTERN
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * zklock's own codes. ZooKeeper's codes (all > -1000) pass through as they
 * are. One table, ZKL_ERRNO_MAP, generates the enum, zkl_err_name() and
 * zkl_strerror(); append new codes at the end, never reuse a number.
 */
#define ZKL_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, -1001, "invalid argument")                                        \
  XX(ENOMEM, -1002, "out of memory")                                           \
  XX(ETIMEDOUT, -1003, "deadline passed before the lock was acquired")         \
  XX(EBUSY, -1004, "lock is held by someone else, or object is in use")        \
  XX(ECANCELED, -1005, "acquire was cancelled")                                \
  XX(ENOTOWNER, -1006, "calling thread does not hold this lock")               \
  XX(ELOST, -1007, "lock was lost (session expired or lock node deleted)")     \
  XX(ECLOSED, -1008, "client is being destroyed")                              \
  XX(ECONNECT, -1009, "could not connect to the ZooKeeper ensemble in time")   \
  XX(ESYSTEM, -1010, "system call failed")                                     \
  XX(EPROTO, -1011, "unexpected answer from ZooKeeper")                        \
  XX(EOVERFLOW, -1012, "hold count would overflow")                            \
  XX(ENOTHELD, -1013, "nobody holds the lock")                              \
  XX(EREVOKED, -1014, "revoked: another client took our node")              \
  XX(EAUTH, -1015, "authentication with the ensemble failed")                \
  XX(EFORKED, -1016, "object inherited across fork(): unusable in the child") \
  XX(EDEADLK, -1017, "calling thread holds this lock through another object") \
  XX(EMISMATCH, -1018, "members disagree on the lock's kind, or a semaphore's leases")

typedef enum zkl_error {
  ZKL_OK = 0,
#define ZKL__ERR_ENUM(name, code, text) ZKL_##name = (code),
  ZKL_ERRNO_MAP(ZKL__ERR_ENUM)
#undef ZKL__ERR_ENUM
} zkl_error_t;

/*
 * ZooKeeper's own codes, which zklock passes through unchanged, under names
 * of ours: ZKL_ZNOAUTH is ZooKeeper's ZNOAUTH (-102), and so on, so that a
 * program can test `rc == ZKL_ZNOAUTH` without including zookeeper.h. The
 * library checks when it is built that each equals zookeeper.h's value.
 * Those a lock, election or guarded write can return are among the first
 * lines: connection trouble (ZKL_ZCONNECTIONLOSS, ZKL_ZOPERATIONTIMEOUT,
 * ZKL_ZSESSIONEXPIRED, ZKL_ZSESSIONMOVED, ZKL_ZCLOSING), and what the
 * ensemble refused (ZKL_ZNOAUTH: an ACL; ZKL_ZNONODE: a node, such as a
 * connect string's chroot, does not exist; ZKL_ZNODEEXISTS, ZKL_ZBADVERSION,
 * ZKL_ZNOTEMPTY: a guarded write's op, see zkl_op_t.rc).
 */
#define ZKL_ZK_ERRNO_MAP(XX)                                                   \
  XX(ZCONNECTIONLOSS, -4) XX(ZOPERATIONTIMEOUT, -7) XX(ZSESSIONEXPIRED, -112)  \
  XX(ZSESSIONMOVED, -118) XX(ZCLOSING, -116) XX(ZNOAUTH, -102)                 \
  XX(ZNONODE, -101) XX(ZNODEEXISTS, -110) XX(ZBADVERSION, -103)                \
  XX(ZNOTEMPTY, -111) XX(ZNOCHILDRENFOREPHEMERALS, -108) XX(ZINVALIDACL, -114) \
  XX(ZAUTHFAILED, -115) XX(ZNOTREADONLY, -119) XX(ZTHROTTLEDOP, -127)          \
  XX(ZRUNTIMEINCONSISTENCY, -2) XX(ZSYSTEMERROR, -1)                           \
  XX(ZDATAINCONSISTENCY, -3) XX(ZMARSHALLINGERROR, -5)                         \
  XX(ZUNIMPLEMENTED, -6) XX(ZBADARGUMENTS, -8) XX(ZINVALIDSTATE, -9)           \
  XX(ZNEWCONFIGNOQUORUM, -13) XX(ZRECONFIGINPROGRESS, -14)                     \
  XX(ZSSLCONNECTIONERROR, -15) XX(ZAPIERROR, -100) XX(ZINVALIDCALLBACK, -113)  \
  XX(ZNOTHING, -117) XX(ZEPHEMERALONLOCALSESSION, -120) XX(ZNOWATCHER, -121)   \
  XX(ZRECONFIGDISABLED, -123) XX(ZSESSIONCLOSEDREQUIRESASLAUTH, -124)

typedef enum zkl_zk_error {
#define ZKL__ZK_ENUM(name, code) ZKL_##name = (code),
  ZKL_ZK_ERRNO_MAP(ZKL__ZK_ENUM)
#undef ZKL__ZK_ENUM
} zkl_zk_error_t;

/*
 * Static English text for any code returned by zklock, including ZooKeeper's
 * codes. Never NULL; an unknown code gives "unknown error". Thread-safe.
 */
ZKL_EXTERN const char *zkl_strerror(int rc);

/*
 * The symbolic name of a code: "ZKL_ETIMEDOUT", "ZCONNECTIONLOSS", "ZKL_OK".
 * Never NULL; an unknown code gives "ZKL_UNKNOWN". Thread-safe.
 */
ZKL_EXTERN const char *zkl_err_name(int rc);

/* ------------------------------------------------------------------------ */
/* Version, time, logging                                                    */
/* ------------------------------------------------------------------------ */

/* The library's version string at run time, e.g. "0.1.0". Static. */
ZKL_EXTERN const char *zkl_version(void);

/* Milliseconds of CLOCK_MONOTONIC: the clock of every deadline. */
ZKL_EXTERN int64_t zkl_now_ms(void);

/*
 * The deadline that never comes (see TIME). It is the largest int64_t, so
 * that "zkl_now_ms() < deadline" holds for it with no special case and a
 * negative value is left free to mean "passed". Pass it as it is: adding
 * to it overflows.
 */
#define ZKL_NO_DEADLINE INT64_MAX

typedef enum zkl_log_level {
  ZKL_LOG_ERROR = 1,
  ZKL_LOG_WARN = 2,
  ZKL_LOG_INFO = 3,
  ZKL_LOG_DEBUG = 4
} zkl_log_level_t;

/*
 * Log hook. msg is valid only during the call. Called on the client's event
 * thread or on the thread that made the call being logged (with
 * ZKL_CLIENT_DISPATCH: only in zkl_client_dispatch()), with no internal
 * lock held. The library never writes to stdout or stderr by itself.
 */
typedef void (*zkl_log_fn)(void *ctx, int level, const char *msg);

/* ------------------------------------------------------------------------ */
/* Client (one ZooKeeper session)                                            */
/* ------------------------------------------------------------------------ */

typedef struct zkl_client zkl_client_t;

typedef struct zkl_client_options {
  /* Requested session timeout; the ensemble may clamp it. 0 = 10000. */
  int session_timeout_ms;
  /* How long zkl_client_create() waits for the first session. 0 = the
   * session timeout. Negative = do not wait (connect in the background). */
  int connect_timeout_ms;
  /* Log hook and its context; NULL = silent. Messages above log_level are
   * not formatted. 0 = ZKL_LOG_WARN. */
  zkl_log_fn log_fn;
  void *log_ctx;
  int log_level;
  /* Authentication, applied with zoo_add_auth() to every session the
   * client makes (the first and each one after an expiry) before any
   * request. auth_scheme NULL = none; otherwise auth is the credential
   * text, for "digest" "user:password". Both are copied. Rejected
   * credentials make zkl_client_create() return ZKL_EAUTH at once, and
   * every later call on the client ZKL_EAUTH: no new session is tried.
   * Debian's libzookeeper_mt has no TLS: digest passwords travel in clear. */
  const char *auth_scheme;
  const char *auth;
  /* ACL of the nodes zklock creates (lock and election nodes, and the
   * parents it creates): ZKL_ACL_OPEN (0, the default) or ZKL_ACL_CREATOR,
   * which needs auth_scheme. */
  int acl;
  /* ZKL_CLIENT_* flags; 0 = none. */
  unsigned flags;
} zkl_client_options_t;

/* Flags of zkl_client_options_t.flags. */
enum {
  /* Callbacks (state changes and the log hook) wait until the program
   * calls zkl_client_dispatch(), which runs them on its thread; the file
   * descriptor of zkl_client_fd() is readable while any waits. The client
   * still keeps its session on its own threads. */
  ZKL_CLIENT_DISPATCH = 1 << 0
};

/* Values of zkl_client_options_t.acl. */
enum {
  /* world:anyone:cdrwa. Any client of the ensemble may delete a holder's
   * node (the holder is then told LOST) or create nodes under a lock. */
  ZKL_ACL_OPEN = 0,
  /* All rights to the authenticated identity of the creating session,
   * read to everyone. Sessions without that identity can still list a
   * queue and watch it, but get ZKL_ZNOAUTH when they delete or rewrite a
   * node, or create one under a lock. Parents that already exist keep
   * their ACL: only what zklock creates is protected. */
  ZKL_ACL_CREATOR = 1
};

/* Connection state of a client, as zkl_client_state() reports it. */
typedef enum zkl_client_state {
  ZKL_CLIENT_CONNECTING = 0, /* no session yet, or looking for a server */
  ZKL_CLIENT_CONNECTED = 1,  /* session valid, connected */
  ZKL_CLIENT_EXPIRED = 2,    /* session expired; a new one is being made */
  ZKL_CLIENT_CLOSED = 3,     /* being destroyed */
  ZKL_CLIENT_AUTH_FAILED = 4 /* the ensemble rejected the credentials: no
                                new session is tried; calls give ZKL_EAUTH */
} zkl_client_state_t;

/*
 * Create a client for the comma-separated host:port list `hosts` and start
 * its session. `opts` may be NULL for defaults; it is copied.
 *
 * Returns ZKL_OK (*out receives the client; the caller owns it and frees
 * it with zkl_client_destroy()), ZKL_EINVAL (NULL out or hosts, empty
 * hosts, a host list ZooKeeper cannot parse or resolve, bad option),
 * ZKL_ENOMEM, ZKL_ESYSTEM (thread or ZooKeeper handle creation failed; see
 * errno), ZKL_ECONNECT (no session within opts->connect_timeout_ms:
 * nothing is created), ZKL_EAUTH (the ensemble rejected the credentials).
 * On failure *out is NULL. Thread-safe.
 *
 * `hosts` may end with a chroot path ("zk1:2181,zk2:2181/myapp"): every
 * path, roots included, is then under it. ZooKeeper needs that node to
 * exist; calls that make nodes under a missing one fail with ZKL_ZNONODE.
 */
ZKL_EXTERN int zkl_client_create(zkl_client_t **out, const char *hosts,
                                 const zkl_client_options_t *opts);

/*
 * Close the session and free the client. Every zkl_mutex_t created on it
 * must have been destroyed first; otherwise returns ZKL_EBUSY and does
 * nothing. NULL is a no-op returning ZKL_OK. A pointer that is not a live
 * client (for instance one already destroyed) returns ZKL_EINVAL.
 * Must not be called from one of this client's callbacks (ZKL_EBUSY).
 */
ZKL_EXTERN int zkl_client_destroy(zkl_client_t *client);

/* The client's current zkl_client_state_t (ZKL_EFORKED in a child of
 * fork()). Thread-safe, never blocks. */
ZKL_EXTERN int zkl_client_state(const zkl_client_t *client);

/* Current ZooKeeper session id, 0 when none. Thread-safe. */
ZKL_EXTERN int64_t zkl_client_session_id(const zkl_client_t *client);

/* Session timeout negotiated with the ensemble (ms), 0 when unknown. */
ZKL_EXTERN int zkl_client_session_timeout(const zkl_client_t *client);

/*
 * Number of ZooKeeper requests this client has sent since it was created
 * (every create, read, setData, delete and watch registration, each
 * operation of a transaction counted; not pings, nor the
 * reads that nudge a write a server sits on, which like pings come only
 * with time). Lets a caller verify that reentrant calls cost no request.
 * Thread-safe.
 */
ZKL_EXTERN uint64_t zkl_client_request_count(const zkl_client_t *client);

/*
 * Counters of a client since it was created, for monitoring
 * (examples/metrics.c writes them in Prometheus's text format).
 *
 * ACQUIRES. An acquire is counted once, when it ends, by its recipe (the
 * first index, ZKL_STATS_MUTEX...) and its outcome (the second,
 * ZKL_STATS_OK...): every blocking, try, timed and asynchronous acquire of
 * a mutex, a read-write lock, a lease, a multi-lock's set, and each
 * candidacy of an election (which "acquires" when it leads, and is
 * cancelled when it resigns before). Not counted: a thread's reentrant
 * lock of what it holds already (the depth goes up, nothing else happens:
 * that path costs no request and no lock, and no counter either), nor a
 * call refused before it starts (ZKL_EINVAL, ZKL_EDEADLK, ZKL_EFORKED...).
 * A blocking acquire that returns while an answer is still on its way (a
 * link gone silent) is counted when its run ends behind it, maybe as
 * cancelled where the caller saw ZKL_ETIMEDOUT.
 *
 * THE STRUCT GROWS ONLY AT ITS END. Set `size` to sizeof the struct before
 * the call, as compiled (zkl_client_stats_t st = {.size = sizeof st}). The
 * library zeroes that many bytes, fills those of them it knows, and sets
 * `size` to how many it filled: a program built against an older header
 * gets the fields it knows; one built against a newer header, run with an
 * older library, finds `size` smaller than it asked and the fields past
 * it zero. Fields are never moved, resized or reused; array bounds
 * (ZKL_STATS_RECIPES, ZKL_STATS_OUTCOMES, ZKL_STATS_REQ_KINDS,
 * ZKL_STATS_BUCKETS) leave room and never change; new recipes and request
 * kinds take indexes below them that are zero until then.
 *
 * COST. Each counter is a relaxed atomic, added to where the event already
 * happens (mostly under the client's lock, held there anyway): no counter
 * takes a lock, and the reentrant path counts nothing. Each counter is
 * exact; the struct is not one snapshot: read while other threads work,
 * two counters may each be from a slightly different moment.
 */

/* Recipes: the first index of zkl_client_stats_t.acquires. */
enum {
  ZKL_STATS_MUTEX = 0,     /* zkl_mutex_t, a queue lock */
  ZKL_STATS_FLAT = 1,      /* zkl_mutex_t with ZKL_MUTEX_FLAT */
  ZKL_STATS_READ = 2,      /* zkl_rwlock_t in read mode */
  ZKL_STATS_WRITE = 3,     /* zkl_rwlock_t in write mode */
  ZKL_STATS_SEMAPHORE = 4, /* a lease of a zkl_semaphore_t */
  ZKL_STATS_ELECTION = 5,  /* a candidacy of a zkl_election_t */
  ZKL_STATS_MULTILOCK = 6, /* a zkl_multilock_t's whole set, counted once */
  ZKL_STATS_RECIPES = 8    /* the array's bound: 7 is free for later */
};

/* Outcomes: the second index of zkl_client_stats_t.acquires. */
enum {
  ZKL_STATS_OK = 0,       /* held (ZKL_OK) */
  ZKL_STATS_TIMEDOUT = 1, /* ZKL_ETIMEDOUT, and a try's ZKL_EBUSY (a
                             timeout of zero) */
  ZKL_STATS_CANCELED = 2, /* ZKL_ECANCELED: a cancel, an async acquire
                             given up (zkl_hold_cancel()), a resignation */
  ZKL_STATS_ERROR = 3,    /* any other code (ZKL_EREVOKED, ZKL_ECLOSED,
                             ZKL_EMISMATCH, a ZooKeeper code...) */
  ZKL_STATS_OUTCOMES = 4
};

/* Kinds of requests: the index of zkl_client_stats_t.requests. */
enum {
  ZKL_STATS_REQ_CREATE = 0,       /* create (also inside a transaction) */
  ZKL_STATS_REQ_DELETE = 1,       /* delete (also inside a transaction) */
  ZKL_STATS_REQ_GET_DATA = 2,     /* getData, with or without a watch */
  ZKL_STATS_REQ_EXISTS = 3,       /* exists, with or without a watch */
  ZKL_STATS_REQ_GET_CHILDREN = 4, /* getChildren */
  ZKL_STATS_REQ_SET_DATA = 5,     /* setData */
  ZKL_STATS_REQ_SYNC = 6,         /* sync */
  ZKL_STATS_REQ_MULTI = 7,        /* a transaction sent as one request (a
                                     guarded write's, a multi-lock's join) */
  ZKL_STATS_REQ_CHECK = 8,        /* check, inside a transaction: a
                                     release's guard (since 1.1) */
  ZKL_STATS_REQ_KINDS = 12        /* the array's bound: 9..11 are free */
};

/* Buckets of a histogram: bucket 0 counts the values 0 and 1, bucket i
 * (1..30) the values in [2^i, 2^(i+1)), bucket 31 every value from 2^31
 * on. The unit is the microsecond: bucket 10 is about 1 to 2 ms, bucket
 * 20 about 1 to 2 s, bucket 31 from about 36 minutes. */
#define ZKL_STATS_BUCKETS 32

typedef struct zkl_stats_histogram {
  uint64_t bucket[ZKL_STATS_BUCKETS]; /* counts, not cumulative */
  uint64_t count;                     /* values recorded: the buckets' sum */
  uint64_t sum_us;                    /* their sum, microseconds */
} zkl_stats_histogram_t;

typedef struct zkl_client_stats {
  /* In: sizeof(zkl_client_stats_t) as the caller was compiled. Out: the
   * bytes the library filled (see THE STRUCT GROWS ONLY AT ITS END). */
  uint32_t size;
  uint32_t reserved0; /* 0: keeps the counters on 8-byte boundaries */
  /* Acquires ended, by recipe and outcome (see ACQUIRES). */
  uint64_t acquires[ZKL_STATS_RECIPES][ZKL_STATS_OUTCOMES];
  /* Acquires that found the lock taken: they waited behind another node
   * (whatever their outcome), or gave up at once (a try's ZKL_EBUSY) or at
   * their deadline (every ZKL_ETIMEDOUT is counted here). A multi-lock's
   * set counts once, when a member of its last attempt waited. */
  uint64_t contended;
  /* Acquires granted by the hand-off: the nodes they watched were
   * deleted, and they held without listing the queue again (at most a read
   * of their own node, when its watch was not confirmed yet). The others
   * of the contended ones that held listed the queue again, after a
   * reconnection, or when a plan could not prove that nobody came in
   * between. */
  uint64_t handoffs;
  /* Holds (and leaderships) that turned ZKL_STATE_LOST: node deleted or
   * rewritten by someone else, session expired, disconnected too long, or
   * disconnected with ZKL_ELECTION_LOSE_ON_DISCONNECT. */
  uint64_t lost;
  /* Holds asked to give back: a revocation request (zkl_revoke(),
   * Curator's) read on their node, once per acquisition; a waiter whose
   * node is asked before it holds counts too. */
  uint64_t revoked;
  /* Of the holds lost, those that had heard a revocation request: their
   * node deleted by the revoker after its grace, their calls then
   * ZKL_EREVOKED (counted in `lost` too). A forced hold that never heard
   * the request is only in `lost`. */
  uint64_t forced;
  /* Sessions that expired (not those closed by zkl_client_destroy(), nor a
   * rejection of the credentials). */
  uint64_t sessions_expired;
  /* Connections made again to a session that had been connected (to the
   * same or another server): not the first connection of each session. */
  uint64_t reconnections;
  /* Requests sent, by kind (ZKL_STATS_REQ_*). They add up to
   * zkl_client_request_count() (taken when no request is being sent): a
   * write that goes out in a group-commit transaction counts as its own
   * kind, a transaction sent as one request as ZKL_STATS_REQ_MULTI. */
  uint64_t requests[ZKL_STATS_REQ_KINDS];
  /* Transactions (ZooKeeper multi requests) sent, group commit's and the
   * ZKL_STATS_REQ_MULTI ones, and the operations they carried in all. A
   * transaction sent again without the op that failed counts again. */
  uint64_t transactions;
  uint64_t transaction_ops;
  /* From the start of an acquire to the grant, of every acquire counted
   * ZKL_STATS_OK. */
  zkl_stats_histogram_t wait;
  /* From the grant of such a hold to its end: the answer to its release
   * (zkl_mutex_unlock()'s last level, zkl_hold_release(), a destroy that
   * releases, a guarded write with ZKL_GUARD_RELEASE, a resignation), or
   * the release of a hold lost before, which sends nothing. A
   * multi-lock's set counts once. */
  zkl_stats_histogram_t hold;
} zkl_client_stats_t;

/*
 * Fill *out with the client's counters since its creation (see above).
 * out->size must be set first. Returns ZKL_OK, ZKL_EINVAL (NULL client or
 * out, or out->size smaller than 8: nothing written). Never blocks, takes
 * no lock, sends nothing; callable from any thread and from callbacks,
 * also in a child of fork() (the counters as they were at the fork).
 */
ZKL_EXTERN int zkl_client_stats(const zkl_client_t *client,
                                zkl_client_stats_t *out);

/*
 * With ZKL_CLIENT_DISPATCH: a file descriptor that is readable (poll,
 * epoll, select; level-triggered) while callbacks wait for
 * zkl_client_dispatch(). The client owns it: do not read, write or close
 * it. It lives as long as the client. Returns the descriptor, or ZKL_EINVAL
 * (NULL client, or one made without ZKL_CLIENT_DISPATCH). Thread-safe.
 */
ZKL_EXTERN int zkl_client_fd(const zkl_client_t *client);

/*
 * With ZKL_CLIENT_DISPATCH: run, on the calling thread, the callbacks that
 * were waiting when the call began (those posted meanwhile wait for the
 * next call, and keep the descriptor readable). Never blocks on the
 * network; when another thread is dispatching it waits for that thread
 * to finish, so that callbacks still run one at a time. A callback may
 * call zkl_client_dispatch() (it returns 0 at once) and anything a callback
 * may call (see CALLBACKS). Returns how many callbacks ran (0 or more), or
 * ZKL_EINVAL (NULL client, or one made without ZKL_CLIENT_DISPATCH),
 * ZKL_EFORKED.
 */
ZKL_EXTERN int zkl_client_dispatch(zkl_client_t *client);

/*
 * Wait until the client is connected, or until deadline_ms (see TIME:
 * ZKL_NO_DEADLINE waits for ever; one already past, negative included,
 * only looks). Returns ZKL_OK (connected), ZKL_ETIMEDOUT, ZKL_EAUTH,
 * ZKL_ECLOSED, ZKL_EINVAL, ZKL_EFORKED.
 */
ZKL_EXTERN int zkl_client_wait_connected(zkl_client_t *client,
                                         int64_t deadline_ms);

/* ------------------------------------------------------------------------ */
/* Mutex                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct zkl_mutex zkl_mutex_t;

/* Longest lock name in bytes (a name is one path component). */
#define ZKL_NAME_MAX 200
/* Longest root path in bytes. */
#define ZKL_ROOT_MAX 512
/* Longest caller data stored in a lock node, in bytes. */
#define ZKL_DATA_MAX 512

/* State of one acquisition (one thread's hold of one lock). */
typedef enum zkl_lock_state {
  ZKL_STATE_NONE = 0,    /* the calling thread holds nothing */
  ZKL_STATE_HELD = 1,    /* held, connected */
  ZKL_STATE_AT_RISK = 2, /* held, but disconnected: the session may expire */
  ZKL_STATE_LOST = 3,    /* session expired or our lock node was deleted */
  /* held, and another client asked for it back (zkl_revoke()): release
   * it; after the revoker's grace period it is taken (LOST, and the
   * hold's calls return ZKL_EREVOKED) */
  ZKL_STATE_REVOKE_REQUESTED = 4
} zkl_lock_state_t;

/*
 * ZKL_OK if `name` is a valid lock or election name (see zkl_mutex_create),
 * else ZKL_EINVAL; the same for a root path. Talks to nobody. Thread-safe.
 */
ZKL_EXTERN int zkl_name_check(const char *name);
ZKL_EXTERN int zkl_root_check(const char *root);

/* Static name of a zkl_lock_state_t ("HELD", ...). Never NULL. */
ZKL_EXTERN const char *zkl_lock_state_name(int state);

/*
 * State change of one acquisition, reported on the client's event thread:
 * HELD when acquired, AT_RISK on disconnect, HELD again on reconnect, LOST
 * when the hold is gone, NONE after the final unlock. `token` is the
 * acquisition's fencing token. Called without any internal lock held.
 */
typedef void (*zkl_state_fn)(zkl_mutex_t *mutex, int state, uint64_t token,
                             void *ctx);

/* Flags of zkl_mutex_options_t. */
enum {
  /* Do not watch our own lock node while holding. By default a hold that
   * lasts 100 ms gets a watch on its node (one read request), so that a
   * delete, or a delete and re-create under the same name, by someone else
   * is reported as LOST at once; a waiter that took the lock by hand-off
   * has that watch from its wait. Our node's data is ours too: a
   * rewrite by someone else is a loss (a mark we did not write, such as a
   * read-write lock's "mode=read", would let others in beside us), and
   * the node, ours still, is deleted at once. Only a revoker's request
   * (zkl_revoke(), or Curator's) may be added to it: the hold goes on, as
   * REVOKE_REQUESTED. A waiting node rewritten ends its wait with
   * ZKL_EREVOKED. With this flag a hold learns of a delete, re-create or
   * rewrite only at reconnection, zkl_mutex_verify(), a guarded write or
   * unlock (which then returns ZKL_ELOST). */
  ZKL_MUTEX_NO_NODE_WATCH = 1 << 0,
  /* Name our node as kazoo's Lock does (<guid>__lock__<seq>), so that
   * Python services using kazoo's Lock, ReadLock or WriteLock on the same
   * path wait for us. By default nodes are named as Apache Curator's
   * InterProcessMutex names them (<guid>-lock-<seq>), which Curator waits
   * for and kazoo does not. Either way we wait for both (zkl_mutex_lock()).
   * Every process of one fleet must choose the same. With this flag the
   * lock's parent, when we make it, is a persistent node (as kazoo makes
   * it), not a container, and zklock never deletes it: kazoo checks the
   * parent once per Lock object and never makes it again. */
  ZKL_MUTEX_KAZOO = 1 << 1,
  /* A flat lock, for many keys each rarely contended: no queue, the lock
   * is one ephemeral node, <root>/<name> itself, and whoever creates it
   * holds (as Redis's SET NX). Uncontended it costs one transaction to
   * lock (the create, and a setData that writes its data) and one to
   * unlock, no read, and leaves no directory per key. Its data is our
   * usual header plus a "guid=" line naming the acquisition that made it;
   * the token is its czxid, as for any hold. Its ACL gives every right to
   * this client's own identity alone (a secret digest identity each
   * client makes and gives each of its sessions) and read to all, also
   * with ZKL_ACL_CREATOR. The whole mutex API works as documented, with
   * these differences:
   * - NOT FIFO: a waiter reads the node with a watch and, when that watch
   *   fires (the holder released, or its session ended), creates the node
   *   again; whichever create comes first holds, and the others wait
   *   again. A waiter may lose any number of such races (starvation is
   *   possible under steady contention: use the queue lock there). The
   *   herd is bounded: each waiter sends one create per release it hears
   *   of, and never retries before its own watch fires.
   * - A node at the name that is not ephemeral (a queue lock's directory
   *   of the same name, or one planted by hand) never goes by itself: the
   *   acquire returns ZKL_EMISMATCH at once, logs why at WARN, and leaves
   *   the node alone. A flat lock and a queue lock (zkl_mutex_t without
   *   this flag, zkl_rwlock_t, Curator, kazoo) on one name do not exclude
   *   each other: they are different locks that fail each other's
   *   acquires. Every process of one fleet must choose the same.
   * - zkl_mutex_trylock() sends one create: a node there that is not
   *   ours is ZKL_EBUSY (a planted one too).
   * - A create whose reply was lost is read again after the
   *   reconnection, and held only if our session owns the node and its
   *   data carries our guid: never created twice, never taken from
   *   someone else. Deletes that must wait for a connection check the
   *   node's owner and czxid (or guid) before they go, so a node another
   *   acquisition of this process made since is never deleted.
   * - The final unlock is one transaction, a setData of the node at the
   *   data version its create gave it (1), which only our identity may
   *   write, and its delete: the name is everybody's, and a node someone
   *   made there after ours was deleted behind our back is theirs. Any
   *   other client's (zklock's at version 1 too, but with its own
   *   identity; anyone's plain create, at version 0) fails that guard,
   *   and unlock returns ZKL_ELOST and leaves the node alone. What no
   *   guard can tell is a node made there with our identity: two
   *   acquisitions of one client never make or hold the node at once (a
   *   second waits in the process, sending nothing, as behind a local
   *   mutex; a try says ZKL_EBUSY); or by someone who deliberately copies
   *   both our version and an ACL open to our writes.
   * - The parent <root> is made as for a queue lock (a container, on
   *   first use) and never deleted by this object.
   * - zkl_mutex_queue() shows a held flat lock as one entry (seq 0).
   * Combining it with ZKL_MUTEX_KAZOO is ZKL_EINVAL. */
  ZKL_MUTEX_FLAT = 1 << 2
};

typedef struct zkl_mutex_options {
  const char *root;        /* parent of the lock; NULL = "/locks" */
  const void *data;        /* caller data stored in our lock node */
  size_t data_len;         /* <= ZKL_DATA_MAX */
  zkl_state_fn state_fn;   /* NULL = no callback */
  void *state_ctx;
  unsigned flags;          /* ZKL_MUTEX_* */
} zkl_mutex_options_t;

/*
 * Create a mutex object for lock `name` under opts->root (opts NULL, or
 * its root NULL: "/locks") on `client`. Talks to nobody: the first acquire
 * makes the lock's nodes.
 *
 * Returns ZKL_OK (*out set; free with zkl_mutex_destroy()), ZKL_EINVAL
 * (a bad name, root, data length or flag, ZKL_MUTEX_FLAT with
 * ZKL_MUTEX_KAZOO, a NULL or dead client), ZKL_ENOMEM, ZKL_ECLOSED,
 * ZKL_EFORKED. On failure *out is NULL. Thread-safe.
 *
 * `name` must be 1..ZKL_NAME_MAX bytes, contain no '/', no control
 * character, and not be "." or "..". opts->root must be an absolute path
 * without a trailing '/', empty components, "." or ".." components, at most
 * ZKL_ROOT_MAX bytes (zkl_name_check() and zkl_root_check() say).
 *
 * Notes: the lock's parent <root>/<name>. Parents above it are created on
 * first use, as container nodes. The lock's own parent, when this object
 * has not seen it, is made in the same transaction as the object's first
 * node, as a plain (persistent) node with the data "zklock-parent":
 * Debian's 3.8.0 C client cannot put a container in a transaction. That
 * node holds without a listing when it is the parent's first (its sequence
 * number 0: nobody can be before it), and its token comes from the
 * transaction with no read. The server never sweeps a plain node, so
 * whoever empties it deletes it. When this object made it and last found
 * its node alone in it, the object's first release deletes it in the same
 * transaction as the node (a per-key lock used once leaves nothing
 * behind), unless someone has joined since; an object that holds again
 * keeps it until destroyed, and then deletes it unless someone has joined
 * or deleted and made it again (it is read first: then it is theirs). An
 * object that found such a parent made by someone else reads it when
 * destroyed, and deletes it if it still says "zklock-parent" and is empty.
 * A process killed in between leaves it to zkl_sweep() (zklock --sweep).
 * Two exceptions, where the parent is never deleted by this object: with
 * ZKL_MUTEX_KAZOO (see there); and once any listing of the queue by this
 * object has shown a node that is not <guid><marker><seq> with this
 * object's own marker (another library's, such as Curator's
 * "_c_<uuid>-lock-<seq>" or kazoo's "__lock__", another zklock recipe's,
 * or a planted one), for that library may rely on the parent staying. The
 * names decide: nothing extra is read. A flat lock (ZKL_MUTEX_FLAT) has no
 * directory: its node is <root>/<name>, and <root> is never deleted by
 * this object.
 */
ZKL_EXTERN int zkl_mutex_create(zkl_mutex_t **out, zkl_client_t *client,
                                const char *name,
                                const zkl_mutex_options_t *opts);

/*
 * Free a mutex object. If the calling thread holds it (at any depth), the
 * hold is released first. If another thread holds it or is acquiring it,
 * returns ZKL_EBUSY and destroys nothing. NULL is a no-op (ZKL_OK). A
 * pointer that is not a live mutex (e.g. destroyed twice) gives ZKL_EINVAL.
 * Returns ZKL_OK otherwise (also when the release itself could not reach
 * ZooKeeper: the node is then deleted in the background, or goes with the
 * session).
 */
ZKL_EXTERN int zkl_mutex_destroy(zkl_mutex_t *mutex);

/*
 * Acquire, blocking until held, cancelled, or the client is destroyed.
 * A thread that already holds the mutex only increments its hold count and
 * sends no request.
 *
 * Returns ZKL_OK; ZKL_ECANCELED (zkl_mutex_cancel()); ZKL_ELOST (the
 * calling thread's existing hold was lost: unlock it first); ZKL_EOVERFLOW;
 * ZKL_ECLOSED; ZKL_EINVAL; ZKL_EREVOKED (another client deleted our waiting
 * node while our session lived: we do not join again behind its back);
 * ZKL_EDEADLK (the calling thread already holds the same lock through
 * another zkl_mutex_t of this process: waiting would never end);
 * ZKL_EAUTH; ZKL_EFORKED; a ZooKeeper code for errors that retrying cannot
 * fix (e.g. ZKL_ZNOAUTH). Connection loss and session expiry while waiting are
 * retried. On any error, no node of ours is left in the queue.
 *
 * The queue's order is decided from our own node: a node holds when no
 * other contender's sequence number lies before its own. A contender is
 * any child whose name ends in a sequence number, whatever made it:
 * zklock, Apache Curator (InterProcessMutex, the read-write lock), kazoo
 * (Lock, ReadLock, WriteLock), or a library this version does not know.
 * The mutex conflicts with them all. Nodes that other clients plant under
 * the lock (sequences far apart, non-sequential names) may delay us but
 * never make two holders. A node that is not ephemeral (ephemeralOwner 0)
 * will never go away by itself: we do not wait behind it, and log it once
 * at WARN. A flat lock (ZKL_MUTEX_FLAT) has no queue: see there; it also
 * returns ZKL_EMISMATCH (a node that is not ephemeral at its name).
 */
ZKL_EXTERN int zkl_mutex_lock(zkl_mutex_t *mutex);

/*
 * Acquire only if it can be done without waiting for another holder.
 * Returns ZKL_EBUSY when someone else holds or waits ahead of us (our node
 * is deleted before returning), plus the codes of zkl_mutex_lock(). A try
 * holds whenever the blocking acquire would hold without waiting: see
 * zkl_rwlock_tryrdlock() for the one case that costs a read.
 */
ZKL_EXTERN int zkl_mutex_trylock(zkl_mutex_t *mutex);

/*
 * Acquire, giving up at deadline_ms (see TIME) with ZKL_ETIMEDOUT; our
 * node is removed before returning. Other codes as zkl_mutex_lock().
 *
 * Notes: no new request is sent once the
 * deadline has passed, but a request already sent is waited for, and so
 * is the delete of our node: the call may return later than
 * the deadline by at most two ZooKeeper round trips (each bounded by the
 * session's receive timeout). If the connection is down, or our node's
 * name is not known yet because the create's reply was lost, the client's
 * event thread deletes the node after reconnecting (finding it by its
 * guid) instead. A lock that is free at our first look at the queue
 * (which comes with the create) is taken even if the deadline has passed
 * meanwhile, so a deadline already past (0, or any negative value)
 * behaves like zkl_mutex_trylock() with ZKL_ETIMEDOUT for ZKL_EBUSY.
 * ZKL_NO_DEADLINE makes it zkl_mutex_lock(), ZKL_EDEADLK included.
 */
ZKL_EXTERN int zkl_mutex_timedlock(zkl_mutex_t *mutex, int64_t deadline_ms);

/*
 * Release one level of the calling thread's hold; the last level deletes
 * our node (retried in the background if the connection is down).
 * Returns ZKL_OK; ZKL_ENOTOWNER if the calling thread holds nothing (nothing
 * is deleted); ZKL_ELOST if the hold had been lost (the hold is cleared all
 * the same, whatever its depth); ZKL_EINVAL.
 *
 * ZKL_OK from the last level means the hold was still ours when unlock was
 * called: our node was there, with our creation zxid and our session as its
 * owner. A node deleted (or deleted and re-created by another client) gives
 * ZKL_ELOST. How unlock knows depends on what tells our node apart:
 * - A node made at data version 1 (a flat lock's; a queue's first node in
 *   a parent made with it, as on a key never used before): the delete
 *   goes in one transaction with a guard at the version we know (a check;
 *   a flat lock's a setData only our identity may write), and no read.
 *   A node made again at our name by a plain create (version 0) fails it,
 *   and so does any node made again by another zklock client at a flat
 *   lock's name: ZKL_ELOST, and that node is left alone. Data written on
 *   our node by someone else moves its version: unlock then reads the
 *   node, and deletes it, guarded at the version read, only if it is ours
 *   and written to only by revokers (anything else is ZKL_ELOST).
 * - Any other node (a queue's, in a parent used before): unlock reads the
 *   node's identity in the same round trip as its delete, so any such
 *   change our ZooKeeper server has applied when it answers is judged (one
 *   it has not applied yet, committed in that very instant through another
 *   server, is not: a sync would be needed, a round trip to the leader on
 *   every unlock). A node another client deleted and re-created under our
 *   name (a name only we may use) before we heard of it is deleted by that
 *   round trip, which also reports the loss (as does a delete that landed
 *   while the read went unanswered: nothing vouches for what it deleted).
 * A node already known not to be ours is never deleted. If
 * the delete fails for want of a connection, unlock waits for the session's
 * fate: reconnected (ZKL_OK), expired, or still disconnected after about a
 * third of the session timeout (ZKL_ELOST). So a process stopped past its
 * session timeout inside the critical section (a debugger, a VM pause,
 * swapping) learns here that others may have held the lock.
 */
ZKL_EXTERN int zkl_mutex_unlock(zkl_mutex_t *mutex);

/*
 * Wake every thread blocked in zkl_mutex_lock()/zkl_mutex_timedlock() on this
 * object; they return ZKL_ECANCELED after removing their node. Holds are
 * not affected; acquires started later are not affected. Thread-safe and
 * callable from a state callback.
 */
ZKL_EXTERN int zkl_mutex_cancel(zkl_mutex_t *mutex);

/*
 * Confirm the calling thread's hold with the ensemble now (a sync and a
 * read on its session, one round trip through the leader): our node still
 * exists, was created by us, and belongs to our current session, as of
 * every write committed before the call. Returns ZKL_OK; ZKL_ELOST (the hold is gone, and is
 * marked LOST); ZKL_ENOTOWNER; a ZooKeeper code when it cannot tell
 * (e.g. ZKL_ZCONNECTIONLOSS: the hold is then AT_RISK, not lost). For a
 * caller that was stopped or paused and wants to know before acting.
 */
ZKL_EXTERN int zkl_mutex_verify(zkl_mutex_t *mutex);

/* State of the calling thread's hold (zkl_lock_state_t). Never blocks. */
ZKL_EXTERN int zkl_mutex_state(const zkl_mutex_t *mutex);

/* Hold depth of the calling thread (0 when it holds nothing). */
ZKL_EXTERN unsigned zkl_mutex_depth(const zkl_mutex_t *mutex);

/*
 * Fencing token of the calling thread's hold: the czxid of our lock node.
 * Successive holders of one lock get strictly increasing tokens, even if the
 * lock's parent node was deleted and recreated in between. A resource that
 * remembers the highest token it accepted and rejects lower ones is safe
 * against a holder that wakes after losing its lock.
 * Returns ZKL_OK, ZKL_ENOTOWNER (the thread holds nothing), ZKL_EINVAL.
 * Also answers for a LOST hold (the token it had).
 */
ZKL_EXTERN int zkl_mutex_token(const zkl_mutex_t *mutex, uint64_t *token);

/*
 * Full path of the calling thread's lock node, copied into buf (size
 * bytes, NUL-terminated). ZKL_EINVAL if it does not fit (nothing is
 * truncated), ZKL_ENOTOWNER if the thread holds nothing.
 */
ZKL_EXTERN int zkl_mutex_node_path(const zkl_mutex_t *mutex, char *buf,
                                   size_t size);

/* One contender of a lock's queue, as zkl_mutex_queue() returns it. */
typedef struct zkl_contender {
  char *node;           /* child node name, e.g. "<guid>-lock-0000000007" */
  int32_t seq;          /* sequence number */
  int64_t czxid;        /* the contender's fencing token */
  int64_t ctime_ms;     /* creation time (server clock, ms since epoch) */
  int64_t owner;        /* ephemeral owner session id; 0: not ephemeral
                           (planted by hand: never holds, see lock()) */
  char *host;           /* holder identity from node data; NULL if absent */
  long pid;             /* 0 if absent */
  unsigned long thread; /* 0 if absent */
  void *data;           /* caller data (NUL-terminated copy), NULL if none */
  size_t data_len;
  char *id;             /* election candidate id; NULL for lock nodes */
  int mode;             /* ZKL_MODE_EXCLUSIVE; ZKL_MODE_SHARED (a reader
                           of a read-write lock, or a writer that
                           downgraded to read); ZKL_MODE_LEASE (a lease
                           of a semaphore) */
  int holds;            /* 1: holds, by the rule contenders use (several
                           readers, or up to N leases, hold together; a
                           reader whose only conflict is a writer that
                           downgraded holds beside it) */
} zkl_contender_t;

/* zkl_contender_t.mode */
enum { ZKL_MODE_EXCLUSIVE = 0, ZKL_MODE_SHARED = 1, ZKL_MODE_LEASE = 2 };

/*
 * List the queue of lock `name` under `root` (NULL = "/locks") in order:
 * the holder (or the holders: readers of a read-write lock, in queue
 * order, each with its `mode`) first, then the waiters, then nodes that are not ephemeral
 * (owner 0), which contenders do not wait behind. The order is the one
 * contenders use (see zkl_mutex_lock()). *out receives an array of *count
 * entries (NULL and 0 when the queue is empty or the lock never existed);
 * free it with zkl_contenders_free(). Returns ZKL_OK, ZKL_EINVAL,
 * ZKL_ENOMEM, ZKL_EFORKED, a ZooKeeper code; on failure *out is NULL and
 * *count 0.
 *
 * Nodes that vanish while being read are left out. The listing is
 * preceded by a sync, so it reflects every change committed before the
 * call, by any session. A flat lock (ZKL_MUTEX_FLAT) held shows as one
 * entry: its node's name (`name`), seq 0, holds 1; its waiters leave no
 * trace to list.
 */
ZKL_EXTERN int zkl_mutex_queue(zkl_client_t *client, const char *root,
                               const char *name, zkl_contender_t **out,
                               size_t *count);

/*
 * Delete the lock parents under `root` that nobody uses: every child of
 * root whose data is "zklock-parent" (the parents zklock makes) and that
 * has no children; with older_than_ms > 0, only those made or last
 * written at least that long ago (by the server's clock, ctime and mtime,
 * compared with this machine's). *removed (may be NULL) gets the number
 * deleted. Returns ZKL_OK (also when root does not exist), ZKL_EINVAL
 * (NULL or dead client, bad root, older_than_ms < 0), ZKL_ENOMEM,
 * ZKL_EFORKED, ZKL_ESYSTEM, a ZooKeeper code. Blocks for about three round
 * trips. Thread-safe.
 *
 * No other node is deleted: kazoo (and zklock's ZKL_MUTEX_KAZOO flavour)
 * makes its lock's parent persistent, without that data, and relies on it
 * staying. Each delete is at the data version read: a parent rewritten
 * since stays. Only root's own children are looked at. A locker that was
 * about to create its node in a parent deleted here makes the parent
 * again, as after the server's sweep. A sync goes first, so every release
 * committed before the call counts.
 *
 * Notes: the parents zklock makes are containers, which the server
 * removes itself, but only at its next sweep (once a minute, at most
 * znode.container.maxPerMinute), and the plain ones a lock's first node is
 * made with (zkl_mutex_create()), which a killed process leaves for good.
 */
ZKL_EXTERN int zkl_sweep(zkl_client_t *client, const char *root,
                         int64_t older_than_ms, size_t *removed);

/* Free what zkl_mutex_queue() returned. NULL is a no-op. */
ZKL_EXTERN void zkl_contenders_free(zkl_contender_t *list, size_t count);

/* One child of a root, as zkl_locks_list() returns it. */
typedef struct zkl_lock_info {
  char *name;                  /* the child's name: the lock's NAME */
  zkl_contender_t *contenders; /* its queue, as zkl_mutex_queue() lists
                                  it; NULL when count is 0 */
  size_t count;                /* entries in contenders */
} zkl_lock_info_t;

/*
 * List every child of `root` (NULL = "/locks"), sorted by name, each with
 * its queue as zkl_mutex_queue() would list it: who holds, who waits,
 * what was planted. Any kind of queue counts (a lock, read-write lock,
 * semaphore, flat lock, or with root "/election" an election); a child
 * with no contenders (a lock's parent that nobody uses right now, or a
 * node that is no lock) has count 0, and the caller decides whether to
 * show it. *out receives an array of *count entries (NULL and 0 when root
 * has no children or does not exist); free it with zkl_locks_free(). A
 * sync goes first, then one zkl_mutex_queue()-like listing per child, in
 * turn (about a round trip per child, and one read per contender): meant
 * for tools and operators, not for a hot path. On failure *out is NULL
 * and *count 0. Returns ZKL_OK, ZKL_EINVAL (NULL or dead client, NULL
 * out or count, bad root), ZKL_ENOMEM, ZKL_EFORKED, ZKL_ESYSTEM, a
 * ZooKeeper code. Thread-safe.
 */
ZKL_EXTERN int zkl_locks_list(zkl_client_t *client, const char *root,
                              zkl_lock_info_t **out, size_t *count);

/* Free what zkl_locks_list() returned, contenders included. NULL is a
 * no-op. */
ZKL_EXTERN void zkl_locks_free(zkl_lock_info_t *list, size_t count);

/* ------------------------------------------------------------------------ */
/* Read-write lock                                                           */
/* ------------------------------------------------------------------------ */

/*
 * A reentrant distributed read-write lock <root>/<name>: any number of
 * readers at once, or one writer. Strictly first come, first served, by
 * the queue's sequence: a reader never passes a writer queued before it,
 * so writers never starve, and a writer waits only for nodes older than
 * its own. Readers watch only the nearest writer before them; a writer
 * watches the node before it, or, when only readers are ahead, all of
 * them at once (up to 32): nobody is woken for nothing.
 *
 * Holds belong to threads, as with zkl_mutex_t. A thread holds read, write,
 * or write with read levels on top; reentrancy costs no request in either
 * mode, and a read acquire while holding write costs nothing either.
 *
 * Wire compatibility: nodes are named as Apache Curator's
 * InterProcessReadWriteLock names them (<guid>__READ__<seq>,
 * <guid>__WRIT__<seq>), so zklock and Curator readers and writers on one
 * path exclude each other correctly; with ZKL_RWLOCK_KAZOO as kazoo's
 * ReadLock and WriteLock do (<guid>__rlock__<seq>, <guid>__lock__<seq>).
 * Either way every library's nodes count (zkl_mutex_lock()), and a
 * zkl_mutex_t on the same name conflicts with both modes.
 *
 * Fencing: the token of a hold is the czxid of its node. Tokens of
 * conflicting holds grow in the order the lock granted them, so a
 * resource that remembers the highest write token and the highest token
 * of any kind it has seen accepts a write only if its token is at least
 * the highest of any kind, and a read only if its token is at least the
 * highest write token. A downgrade keeps its writer's token.
 */
typedef struct zkl_rwlock zkl_rwlock_t;

/* Hold changes of one thread's hold, as zkl_state_fn for the mutex. */
typedef void (*zkl_rwlock_fn)(zkl_rwlock_t *rw, int state, uint64_t token,
                              void *ctx);

/* Flags of zkl_rwlock_options_t. */
enum {
  ZKL_RWLOCK_NO_NODE_WATCH = 1 << 0, /* as ZKL_MUTEX_NO_NODE_WATCH */
  /* Name nodes as kazoo's ReadLock and WriteLock do (see above). Every
   * process of one fleet must choose the same naming. */
  ZKL_RWLOCK_KAZOO = 1 << 1
};

typedef struct zkl_rwlock_options {
  const char *root;      /* parent of the lock; NULL = "/locks" */
  const void *data;      /* caller data stored in our nodes */
  size_t data_len;       /* <= ZKL_DATA_MAX */
  zkl_rwlock_fn state_fn; /* NULL = no callback */
  void *state_ctx;
  unsigned flags;        /* ZKL_RWLOCK_* */
} zkl_rwlock_options_t;

/*
 * Create a read-write lock object for lock `name`; the rules of
 * zkl_mutex_create() apply. Returns ZKL_OK (*out set; free with
 * zkl_rwlock_destroy()), ZKL_EINVAL, ZKL_ENOMEM, ZKL_ECLOSED, ZKL_EFORKED;
 * on failure *out is NULL.
 */
ZKL_EXTERN int zkl_rwlock_create(zkl_rwlock_t **out, zkl_client_t *client,
                                 const char *name,
                                 const zkl_rwlock_options_t *opts);

/* As zkl_mutex_destroy(): the calling thread's hold (both modes, any
 * depth) is released first; ZKL_EBUSY if another thread holds or
 * acquires. */
ZKL_EXTERN int zkl_rwlock_destroy(zkl_rwlock_t *rw);

/*
 * Acquire in read mode, blocking, trying, or until deadline_ms (see
 * TIME). A thread that already holds read or write only counts. The
 * codes, the deadline and what is left behind are those of
 * zkl_mutex_lock(), zkl_mutex_trylock() and zkl_mutex_timedlock().
 *
 * A try and a timed acquire agree: when the only conflict ahead of our
 * node is one zklock writer (named as ours are), tryrdlock reads that
 * writer's node once before it answers, and holds if the writer
 * downgraded (zkl_rwlock_downgrade()) or is gone, as timedrdlock would at
 * once; our own node is read in the same round trip. Behind anything
 * else (two writers, another library's writer) it answers ZKL_EBUSY with
 * no extra read.
 */
ZKL_EXTERN int zkl_rwlock_rdlock(zkl_rwlock_t *rw);
ZKL_EXTERN int zkl_rwlock_tryrdlock(zkl_rwlock_t *rw);
ZKL_EXTERN int zkl_rwlock_timedrdlock(zkl_rwlock_t *rw, int64_t deadline_ms);

/*
 * Acquire in write mode. A thread that holds write only counts. A thread
 * that holds read without write gets ZKL_EDEADLK at once, sending
 * nothing: an upgrade cannot be made safe (two upgraders would each wait
 * for the other's read), so release the read hold, take the write hold
 * and check again what was read. Other codes as zkl_rwlock_rdlock().
 */
ZKL_EXTERN int zkl_rwlock_wrlock(zkl_rwlock_t *rw);
ZKL_EXTERN int zkl_rwlock_trywrlock(zkl_rwlock_t *rw);
ZKL_EXTERN int zkl_rwlock_timedwrlock(zkl_rwlock_t *rw, int64_t deadline_ms);

/*
 * Release one read level, or one write level, of the calling thread's
 * hold. The last level of both deletes our node, with the verdict of
 * zkl_mutex_unlock() (ZKL_OK, or ZKL_ELOST when the hold cannot be
 * vouched for). Releasing the last write level while read levels remain
 * downgrades (zkl_rwlock_downgrade()). ZKL_ENOTOWNER when the thread
 * holds no level of that mode. A LOST hold is cleared whole, both modes,
 * with ZKL_ELOST.
 */
ZKL_EXTERN int zkl_rwlock_rdunlock(zkl_rwlock_t *rw);
ZKL_EXTERN int zkl_rwlock_wrunlock(zkl_rwlock_t *rw);

/*
 * Turn the calling thread's write hold (of depth 1) into a read hold,
 * atomically for every other contender: our node keeps its place in the
 * queue and its token. Writers queued behind us keep waiting; readers whose
 * only conflict was our node are let in; readers queued behind a later
 * writer are not. The same as zkl_rwlock_rdlock() then
 * zkl_rwlock_wrunlock(). Returns ZKL_OK; ZKL_ENOTOWNER (no write hold);
 * ZKL_EBUSY (write held more than once: release the inner levels first);
 * ZKL_ELOST (the hold was lost, and is cleared); ZKL_ENOMEM.
 *
 * Notes: only the node's data changes: it gains "mode=read" (one
 * conditional write). If the write cannot reach the ensemble, the node
 * stays exclusive until released: we hold read all the same, and readers
 * wait longer. Curator's readers wait for our node until it is released
 * whatever its data (they know nothing of the mark). Readers trust the
 * mark: another client that writes it into a writer's node (the open ACL
 * allows it; ZKL_ACL_CREATOR does not) lets them in, and that writer's
 * hold then ends as LOST at once (zkl_mutex_options_t's
 * ZKL_MUTEX_NO_NODE_WATCH says when it learns of it), its node deleted.
 * Our node deleted and made again at our name by someone else before the
 * write is a loss too (ZKL_ELOST): the write may land on their node, which
 * is then left alone, never taken for ours.
 */
ZKL_EXTERN int zkl_rwlock_downgrade(zkl_rwlock_t *rw);

/* Wake the threads blocked acquiring on this object (ZKL_ECANCELED), as
 * zkl_mutex_cancel(). */
ZKL_EXTERN int zkl_rwlock_cancel(zkl_rwlock_t *rw);

/* zkl_mutex_verify() for the calling thread's hold, in either mode. */
ZKL_EXTERN int zkl_rwlock_verify(zkl_rwlock_t *rw);

/* zkl_lock_state_t of the calling thread's hold. Never blocks. */
ZKL_EXTERN int zkl_rwlock_state(const zkl_rwlock_t *rw);

/* The calling thread's read and write depths (either pointer may be
 * NULL); 0 and 0 when it holds nothing. */
ZKL_EXTERN void zkl_rwlock_depth(const zkl_rwlock_t *rw, unsigned *rd,
                                 unsigned *wr);

/* Fencing token of the calling thread's hold (see above), as
 * zkl_mutex_token(). */
ZKL_EXTERN int zkl_rwlock_token(const zkl_rwlock_t *rw, uint64_t *token);

/* Full path of the calling thread's node, as zkl_mutex_node_path(). */
ZKL_EXTERN int zkl_rwlock_node_path(const zkl_rwlock_t *rw, char *buf,
                                    size_t size);

/* ------------------------------------------------------------------------ */
/* Counting semaphore                                                        */
/* ------------------------------------------------------------------------ */

/*
 * At most N leases of <root>/<name> at once, across every process. Each
 * lease is an ephemeral sequential node <guid>-n<N>-lease-<seq>; the N
 * lowest leases hold, the others wait in arrival order. Nobody is woken for
 * nothing: the first waiter watches the N holders (when N <= 32) and takes
 * the first lease freed, with no further read; each later waiter watches
 * only the waiter before it, which marks its node when it is granted. A
 * lease never leaks: its node goes with the release, with a failed or
 * cancelled acquire (deleted at once or, with the connection down, once
 * reconnected, found by its guid if its create's reply was lost), or with
 * the session when the process dies.
 *
 * Every member must agree on N, and one rule, the same for every member,
 * says which N: the semaphore's directory (a container node, gone once the
 * last lease is) carries "max=N", written by the member that made it (on
 * a directory made without data, by the first member whose conditional
 * write of it lands), and a member created with another N is refused:
 * ZKL_EMISMATCH from every acquire, no node left. Each member judges the
 * directory as it was once its own node was made, so of members of two N
 * racing on a fresh name exactly one N is admitted, whichever made the
 * directory, and the other is refused, again on every retry while the
 * directory says so. Leases of two N are never granted together, and no
 * write to any node can override that: each lease's name carries its N,
 * names cannot be rewritten, and a lease waits behind a lease of another N
 * before it as behind a lock (a refused member's node, until its delete
 * lands a round trip later; a holder of the old N after a rewrite). Anyone
 * allowed to write the directory can rewrite its data: holders keep their
 * leases (nothing breaks under them), members of the old N are refused
 * from then on, and members of the new N wait until every lease of the
 * old N before theirs is gone. Leases of older zklock versions carry no N
 * in their names: they count as leases of every N and are judged by the
 * directory alone, as those versions did, so a rewritten directory can
 * still over-admit while they take part. A lock (zkl_mutex_t,
 * zkl_rwlock_t) on the same name excludes every lease and is excluded by
 * them.
 *
 * Leases belong to no thread: any thread may release one, once. The token
 * of a lease (the czxid of its node) grows with the order of grants; it
 * tells lease epochs apart, it does not exclude other leases.
 */
typedef struct zkl_semaphore zkl_semaphore_t;
typedef struct zkl_lease zkl_lease_t;

/* Most leases one semaphore may have. */
#define ZKL_LEASES_MAX 65536

/* A lease's state changes, as zkl_state_fn: `token` tells which lease. */
typedef void (*zkl_semaphore_fn)(zkl_semaphore_t *sem, int state,
                                 uint64_t token, void *ctx);

typedef struct zkl_semaphore_options {
  const char *root;      /* parent of the semaphore; NULL = "/locks" */
  const void *data;      /* caller data stored in each lease node */
  size_t data_len;       /* <= ZKL_DATA_MAX */
  zkl_semaphore_fn state_fn; /* NULL = no callback */
  void *state_ctx;
  unsigned flags;        /* none yet: 0 */
} zkl_semaphore_options_t;

/*
 * Create a semaphore object of `leases` (1..ZKL_LEASES_MAX) leases for
 * `name` (the rules of zkl_mutex_create()). Talks to nobody. Returns ZKL_OK
 * (*out set; free with zkl_semaphore_destroy()), ZKL_EINVAL, ZKL_ENOMEM,
 * ZKL_ECLOSED, ZKL_EFORKED; on failure *out is NULL.
 */
ZKL_EXTERN int zkl_semaphore_create(zkl_semaphore_t **out,
                                    zkl_client_t *client, const char *name,
                                    unsigned leases,
                                    const zkl_semaphore_options_t *opts);

/*
 * Take one lease: blocking, trying (ZKL_EBUSY when all N are held or
 * waited for, or a lease of another N is in the way), or until deadline_ms (ZKL_ETIMEDOUT; see TIME, and
 * zkl_mutex_timedlock() for a deadline already past or ZKL_NO_DEADLINE,
 * which makes it zkl_semaphore_acquire()). *lease is set on
 * ZKL_OK (release it with zkl_lease_release()), NULL on any failure.
 * Other codes below. An uncontended acquire is
 * one round trip: the create and the listing, and on an object's first
 * acquire a read of the directory's max=N in the same round trip; once
 * the directory was made anew or its data rewritten (the listing tells),
 * or the listing was lost with the connection, one more round trip reads
 * it again.
 * Other codes: ZKL_EMISMATCH (see above), ZKL_ECANCELED, ZKL_ECLOSED,
 * ZKL_EREVOKED, ZKL_EAUTH, ZKL_EFORKED, ZKL_EINVAL, a ZooKeeper code. On
 * any error no node of ours is left.
 */
ZKL_EXTERN int zkl_semaphore_acquire(zkl_semaphore_t *sem,
                                     zkl_lease_t **lease);
ZKL_EXTERN int zkl_semaphore_tryacquire(zkl_semaphore_t *sem,
                                        zkl_lease_t **lease);
ZKL_EXTERN int zkl_semaphore_timedacquire(zkl_semaphore_t *sem,
                                          int64_t deadline_ms,
                                          zkl_lease_t **lease);

/* Wake every thread blocked acquiring on this object (ZKL_ECANCELED).
 * Leases already granted are not affected. */
ZKL_EXTERN int zkl_semaphore_cancel(zkl_semaphore_t *sem);

/*
 * Free a semaphore object. ZKL_EBUSY, freeing nothing, while any of its
 * leases is not released or a thread is acquiring; NULL is a no-op; a
 * dead pointer gives ZKL_EINVAL.
 */
ZKL_EXTERN int zkl_semaphore_destroy(zkl_semaphore_t *sem);

/*
 * Release a lease (from any thread) and free it: the verdict of
 * zkl_mutex_unlock(): ZKL_OK when the lease was still ours to the end,
 * ZKL_ELOST when it had been lost or cannot be vouched for. A pointer that
 * is not a live lease (released twice) gives ZKL_EINVAL.
 */
ZKL_EXTERN int zkl_lease_release(zkl_lease_t *lease);

/* zkl_lock_state_t of the lease. */
ZKL_EXTERN int zkl_lease_state(const zkl_lease_t *lease);

/* The lease's token (the czxid of its node). */
ZKL_EXTERN int zkl_lease_token(const zkl_lease_t *lease, uint64_t *token);

/* zkl_mutex_verify() for a lease. */
ZKL_EXTERN int zkl_lease_verify(zkl_lease_t *lease);

/* The lease's node path, as zkl_mutex_node_path(). */
ZKL_EXTERN int zkl_lease_node_path(const zkl_lease_t *lease, char *buf,
                                   size_t size);

/* ------------------------------------------------------------------------ */
/* Asynchronous acquire                                                      */
/* ------------------------------------------------------------------------ */

/*
 * For programs built around an event loop, which cannot park a thread per
 * waiting lock. zkl_mutex_lock_async() and its siblings return at once;
 * the acquisition runs on the client's own threads, with no thread of its
 * own (thousands may wait on one client), and `fn` runs exactly once, on
 * the client's callback thread (see CALLBACKS: the event thread, or with
 * ZKL_CLIENT_DISPATCH the thread in zkl_client_dispatch()), with `hold`
 * and the outcome:
 *   ZKL_OK         the lock is held: `hold` is the hold, until any thread
 *                  releases it, once, with zkl_hold_release();
 *   ZKL_ETIMEDOUT  the deadline passed first;
 *   ZKL_ECANCELED  the object's cancel function (zkl_mutex_cancel()...)
 *                  ran meanwhile;
 *   ZKL_EREVOKED, ZKL_EMISMATCH, ZKL_EAUTH, ...  as for the blocking call.
 * On any outcome but ZKL_OK, `hold` is freed when fn returns.
 *
 * deadline_ms follows TIME: ZKL_NO_DEADLINE waits for ever. As with
 * zkl_mutex_timedlock(), a lock found free at the first look is taken
 * even past the deadline: one already past (0, or any negative value)
 * makes a try that never waits in the queue, and fn gets ZKL_OK or
 * ZKL_ETIMEDOUT.
 *
 * An asynchronous hold belongs to no thread. It is never reentrant, and
 * a thread's blocking hold never covers it, nor the other way round: on
 * one name they queue behind each other as two processes would. A thread
 * that blocks on a lock whose asynchronous hold it means to release
 * itself would wait for ever: use the try or timed forms there. State
 * changes of the hold (AT_RISK, LOST) reach the object's state callback
 * like any hold's, and zkl_hold_state() tells them.
 *
 * The start functions return ZKL_OK (fn will run), or an error and fn
 * will not run: ZKL_EINVAL (NULL object, fn or hold), ZKL_ENOMEM,
 * ZKL_ECLOSED, ZKL_EFORKED. *hold is set before fn can run, and stays
 * valid until fn returns (a failure), or until released; when the start
 * function fails, *hold is NULL. An object with
 * asynchronous acquisitions pending, or holds they granted, cannot be
 * destroyed (ZKL_EBUSY): cancel or release them first.
 */
typedef struct zkl_hold zkl_hold_t;
typedef void (*zkl_hold_fn)(zkl_hold_t *hold, int rc, void *arg);

ZKL_EXTERN int zkl_mutex_lock_async(zkl_mutex_t *mutex, int64_t deadline_ms,
                                    zkl_hold_fn fn, void *arg,
                                    zkl_hold_t **hold);
ZKL_EXTERN int zkl_rwlock_rdlock_async(zkl_rwlock_t *rw, int64_t deadline_ms,
                                       zkl_hold_fn fn, void *arg,
                                       zkl_hold_t **hold);
ZKL_EXTERN int zkl_rwlock_wrlock_async(zkl_rwlock_t *rw, int64_t deadline_ms,
                                       zkl_hold_fn fn, void *arg,
                                       zkl_hold_t **hold);
/* A lease of the semaphore, held as a zkl_hold_t. */
ZKL_EXTERN int zkl_semaphore_acquire_async(zkl_semaphore_t *sem,
                                           int64_t deadline_ms,
                                           zkl_hold_fn fn, void *arg,
                                           zkl_hold_t **hold);

/*
 * Gives up an acquisition whose fn has not started: ZKL_OK, and fn never
 * runs; `hold` is freed, and a node already made is deleted in the
 * background. ZKL_EBUSY when fn has the outcome already: from inside fn,
 * at once; from another thread while fn runs, once fn has returned. Then
 * the outcome stands (a granted hold must be released). Never call it
 * after fn returned a failure (`hold` is gone), nor on a released hold.
 */
ZKL_EXTERN int zkl_hold_cancel(zkl_hold_t *hold);

/*
 * Releases a granted hold, from any thread, fn included: deletes its node
 * and frees `hold` (once fn has returned). Waits for the delete's answer,
 * one round trip, and returns as zkl_mutex_unlock(): ZKL_OK, or ZKL_ELOST
 * when the hold had been lost or cannot be vouched for. ZKL_EINVAL: not a
 * granted hold (still pending: cancel it; or released already).
 */
ZKL_EXTERN int zkl_hold_release(zkl_hold_t *hold);

/*
 * The same without waiting: starts the release and returns at once, and
 * `fn` runs exactly once, on the client's callback thread (as an async
 * acquire's fn), with zkl_hold_release()'s verdict: ZKL_OK, or ZKL_ELOST
 * (ZKL_EREVOKED) when the hold had been lost or cannot be vouched for.
 * When the delete cannot reach the ensemble, fn waits for the session's
 * fate as zkl_hold_release() does (at most about a third of the session
 * timeout), and no thread waits with it. `hold` may not be used once this
 * returns ZKL_OK; the object it came from stays busy (ZKL_EBUSY on
 * destroy) until fn has returned. Returns ZKL_OK, ZKL_EINVAL (NULL fn;
 * not a granted hold, or released already), ZKL_ENOMEM (the hold is
 * still held), ZKL_EFORKED. Callable from any thread, fn included.
 */
typedef void (*zkl_release_fn)(int rc, void *arg);
ZKL_EXTERN int zkl_hold_release_async(zkl_hold_t *hold, zkl_release_fn fn,
                                      void *arg);

/* A granted hold's state (ZKL_STATE_*), token (its node's czxid, as
 * zkl_mutex_token()), a check with the ensemble (as zkl_mutex_verify())
 * and its node's path. A hold still pending: ZKL_STATE_NONE and
 * ZKL_ENOTOWNER. */
ZKL_EXTERN int zkl_hold_state(const zkl_hold_t *hold);
ZKL_EXTERN int zkl_hold_token(const zkl_hold_t *hold, uint64_t *token);
ZKL_EXTERN int zkl_hold_verify(zkl_hold_t *hold);
ZKL_EXTERN int zkl_hold_node_path(const zkl_hold_t *hold, char *buf,
                                  size_t size);

/* ------------------------------------------------------------------------ */
/* Leader election                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Candidates join <root>/<name> (root default "/election"); the lowest node
 * leads and every other candidate watches only its predecessor: the
 * mutex's queue, with leadership in place of the lock. Before declaring
 * itself leader a candidate confirms that its node's ephemeral owner is its
 * current session. Each term has a fencing token (czxid of the leader's
 * node) that grows from term to term.
 *
 * A candidacy has no thread of its own: it campaigns on the client's
 * threads, as an asynchronous acquire does, so any number of candidates
 * may campaign on one client.
 */
typedef struct zkl_election zkl_election_t;

/* Longest candidate id in bytes. */
#define ZKL_ID_MAX 128

/*
 * Leadership changes, on the client's event thread, with no internal lock
 * held: ZKL_STATE_HELD (elected), ZKL_STATE_AT_RISK (leader, disconnected),
 * ZKL_STATE_LOST (leadership lost: session expired, node deleted, or
 * disconnected with ZKL_ELECTION_LOSE_ON_DISCONNECT), ZKL_STATE_NONE
 * (resigned). `token` is the term's fencing token. HELD comes once per
 * term; a term resigned before its HELD could be delivered is told only
 * NONE. The callback may join or resign its own election.
 */
typedef void (*zkl_election_fn)(zkl_election_t *e, int state, uint64_t token,
                                void *ctx);

/* Flags of zkl_election_options_t. */
enum {
  /* Treat a disconnection as loss of leadership at once, instead of
   * waiting to learn whether the session survives. */
  ZKL_ELECTION_LOSE_ON_DISCONNECT = 1 << 0
};

typedef struct zkl_election_options {
  const char *root;      /* NULL = "/election" */
  const void *data;      /* candidate data, <= ZKL_DATA_MAX bytes */
  size_t data_len;
  zkl_election_fn fn;    /* NULL = no callback */
  void *ctx;
  unsigned flags;        /* ZKL_ELECTION_* */
} zkl_election_options_t;

/*
 * Create a candidate `id` (1..ZKL_ID_MAX printable bytes, no newline) for
 * election `name` (same rules as lock names). Does not join yet.
 * Returns ZKL_OK (*out set; free with zkl_election_destroy()), ZKL_EINVAL,
 * ZKL_ENOMEM, ZKL_ECLOSED, ZKL_EFORKED, ZKL_ESYSTEM; on failure *out is
 * NULL. Thread-safe.
 */
ZKL_EXTERN int zkl_election_create(zkl_election_t **out, zkl_client_t *client,
                                   const char *name, const char *id,
                                   const zkl_election_options_t *opts);

/*
 * Join the election: campaign in the background, with no thread of its
 * own, and return at once. Joining again after a loss or a resignation
 * starts a new candidacy, also while the last one's node is still being
 * deleted. Returns ZKL_OK, ZKL_EBUSY (already campaigning or leading),
 * ZKL_EINVAL, ZKL_ENOMEM, ZKL_ESYSTEM.
 */
ZKL_EXTERN int zkl_election_join(zkl_election_t *e);

/*
 * Wait until this candidate leads, or until deadline_ms (see TIME:
 * ZKL_NO_DEADLINE waits for ever). Joins first if not campaigning, and a
 * timeout leaves the campaign running. Whatever the deadline, a campaign's
 * first look at the election's queue is waited for (about a round trip,
 * as an acquire's is): a candidate that finds nobody ahead leads, and
 * ZKL_OK comes even with a deadline already past (0, or negative); one
 * that finds a leader returns ZKL_ETIMEDOUT then, still campaigning.
 * Returns ZKL_OK (leader), ZKL_ETIMEDOUT (still campaigning), ZKL_ELOST
 * (the candidacy ended: lost or resigned), ZKL_EINVAL, or the error that
 * ended the campaign (ZKL_EREVOKED: another client deleted our node;
 * ZKL_EAUTH; a ZooKeeper code such as ZKL_ZNOAUTH).
 */
ZKL_EXTERN int zkl_election_wait(zkl_election_t *e, int64_t deadline_ms);

/*
 * Leave the election: stop campaigning, or give up leadership (our node is
 * deleted). A campaign stops at once, and a node it made is deleted in the
 * background; a term waits for its node's delete, one round trip. Never
 * waits for the client's callback thread: it may be called from this
 * election's own callback, also inside zkl_client_dispatch(). Returns
 * ZKL_OK, ZKL_ENOTHELD when not joined, ZKL_EINVAL, or
 * ZKL_ELOST when this candidate led and the term cannot be vouched for:
 * leadership had been lost, our node was gone or not ours any more, or the
 * delete could not reach the ensemble and the session did not come back
 * within about a third of its timeout (as zkl_mutex_unlock()).
 */
ZKL_EXTERN int zkl_election_resign(zkl_election_t *e);

/* zkl_lock_state_t of this candidate: HELD/AT_RISK while leading, LOST
 * after a loss, NONE otherwise (also while campaigning). */
ZKL_EXTERN int zkl_election_state(const zkl_election_t *e);

/* zkl_mutex_verify() for the leader's term: ZKL_OK, ZKL_ELOST,
 * ZKL_ENOTHELD (not leading), or a ZooKeeper code. */
ZKL_EXTERN int zkl_election_verify(zkl_election_t *e);

/* 1 when this candidate leads (HELD or AT_RISK), else 0. */
ZKL_EXTERN int zkl_election_is_leader(const zkl_election_t *e);

/* Fencing token of the current (or last lost) term. ZKL_ENOTHELD if this
 * candidate never led in its current candidacy. */
ZKL_EXTERN int zkl_election_token(const zkl_election_t *e, uint64_t *token);

/* Resign if needed, then free, once a campaign stopped here has ended (no
 * callback of it runs after). NULL is a no-op; a dead pointer gives
 * ZKL_EINVAL; ZKL_EBUSY, freeing nothing, while another thread is inside
 * zkl_election_wait() or zkl_election_join() on it. Must not be called
 * from this election's own callback. */
ZKL_EXTERN int zkl_election_destroy(zkl_election_t *e);

/*
 * The candidates of election `name` under `root` (NULL = "/election"), the
 * leader first; each entry's `id` is the candidate id. Free with
 * zkl_contenders_free(). Same codes as zkl_mutex_queue().
 */
ZKL_EXTERN int zkl_election_candidates(zkl_client_t *client, const char *root,
                                       const char *name,
                                       zkl_contender_t **out, size_t *count);

/* ------------------------------------------------------------------------ */
/* Multi-lock                                                                */
/* ------------------------------------------------------------------------ */

/*
 * Several locks held as one, with no deadlock whatever order callers name
 * them in, and whoever else uses the same names, one at a time or nested
 * (zklock, Curator's locks and its InterProcessMultiLock, kazoo). One
 * ZooKeeper transaction makes a node in every member's queue, all with
 * the same creation zxid, and the listings follow it in the same round
 * trip; each node then waits in its queue as a single lock's would, and
 * the set is held when all of them hold. Among multi-locks a waiter only
 * ever waits for older nodes, and the nodes of one acquisition are all
 * exactly as old, so every wait points at an older acquisition and no
 * cycle can form (Curator's InterProcessMultiLock, which takes its locks
 * one by one, deadlocks with two callers naming them in opposite orders).
 * A node lost with its session makes the whole set start over with a new
 * transaction, never that member alone: a younger node there could close
 * a cycle.
 *
 * Others may hold one lock while they wait for another: a nested locker
 * that takes A, then B, or Curator's multi-lock. A set that holds B while
 * it waits for A would close a cycle with one of them, so a set that
 * holds some members while it waits for others gives way: 100-200 ms
 * after it came to hold part of the set, and every 200-400 ms after that,
 * it lists the queues of the members it holds, and if anyone other than
 * a multi-lock waits behind one of them (an ephemeral node: a planted one
 * never waits), it deletes all its nodes, pauses (20 ms, doubling with
 * each time it gave way in this acquire up to 1 s, plus as much again at
 * random) and enqueues anew. The cost: while it holds part of the set, a
 * listing per held member and a read of at most 4 nodes every 200-400
 * ms; a set that gives way goes to the back of every queue, so under a
 * steady stream of single lockers on its locks it may wait longer than
 * they do (never for ever behind nested lockers: they hold for a while
 * and then go). Multi-locks never give way to each other (their nodes
 * are told apart by a tag in their names), so among themselves they keep
 * the two-round-trip acquire and their order.
 *
 * A member is held as a mutex (ZKL_MODE_EXCLUSIVE: excludes every other
 * node of the name) or as a read-write lock's reader (ZKL_MODE_SHARED:
 * shares with readers, excludes writers and mutexes). Nodes are named as
 * zkl_mutex_t and zkl_rwlock_t name theirs (with ZKL_MUTEX_KAZOO, as
 * kazoo's).
 *
 * A multi-lock's hold belongs to no thread: any thread may unlock it, once.
 * It is not reentrant (a second acquire while held: ZKL_EBUSY). Its token
 * is the creation zxid that all its nodes share: it grows like a single
 * lock's from holder to holder of each member. Its state is the worst of
 * its members' (LOST if any is lost, then AT_RISK, REVOKE_REQUESTED,
 * HELD); revoking any member revokes the set. A member lost while the
 * set holds ends the set: when that loss is delivered (on the client's
 * event thread, or in zkl_client_dispatch() with ZKL_CLIENT_DISPATCH),
 * the other members' nodes are deleted and their holds are LOST too;
 * zkl_multilock_unlock() then waits for those deletes and says so.
 */
typedef struct zkl_multilock zkl_multilock_t;

/* Most members of one multi-lock. */
#define ZKL_MULTILOCK_MAX 64

typedef struct zkl_multilock_member {
  const char *name; /* lock name, as for zkl_mutex_create() */
  int mode;         /* ZKL_MODE_EXCLUSIVE or ZKL_MODE_SHARED */
} zkl_multilock_member_t;

/* State changes of the set (see above), on the callback thread. */
typedef void (*zkl_multilock_fn)(zkl_multilock_t *ml, int state,
                                 uint64_t token, void *ctx);

typedef struct zkl_multilock_options {
  const char *root;        /* parent of every member; NULL = "/locks" */
  const void *data;        /* caller data stored in each node */
  size_t data_len;         /* <= ZKL_DATA_MAX */
  zkl_multilock_fn state_fn; /* NULL = no callback */
  void *state_ctx;
  unsigned flags;          /* ZKL_MUTEX_NO_NODE_WATCH, ZKL_MUTEX_KAZOO (not
                              ZKL_MUTEX_FLAT: no queue to join; ZKL_EINVAL) */
} zkl_multilock_options_t;

/*
 * Create a multi-lock of members[0..n) (1..ZKL_MULTILOCK_MAX; names are
 * copied, and must differ). Talks to nobody. Returns ZKL_OK (*out set;
 * free with zkl_multilock_destroy()), ZKL_EINVAL, ZKL_ENOMEM,
 * ZKL_ECLOSED, ZKL_EFORKED; on failure *out is NULL.
 */
ZKL_EXTERN int zkl_multilock_create(zkl_multilock_t **out,
                                    zkl_client_t *client,
                                    const zkl_multilock_member_t *members,
                                    size_t n,
                                    const zkl_multilock_options_t *opts);

/*
 * Acquire every member: blocking, trying (ZKL_EBUSY when any member would
 * have to wait), or until deadline_ms (ZKL_ETIMEDOUT; one deadline for the
 * whole set; see TIME). Uncontended: two round trips (the transaction
 * with the listings, then a read of the shared creation zxid). ZKL_OK only if
 * every member holds at that instant: when any member had to wait, every
 * node is read once more after the last grant (one round trip), and a
 * node someone deleted meanwhile makes the set start over. On any error no node
 * of ours is left in any queue (deleted at once, or once reconnected,
 * found by the acquisition's guid). As for a mutex, connection loss and
 * session expiry while it waits are retried: the set joins again on the
 * next session, however often, until its deadline; it never returns a
 * dead session's code (ZKL_ZINVALIDSTATE). Other codes as zkl_mutex_lock(),
 * and ZKL_EBUSY when this object holds or acquires already; ZKL_EDEADLK (the
 * blocking form, and the timed one given ZKL_NO_DEADLINE) when the calling
 * thread holds a member through another object.
 */
ZKL_EXTERN int zkl_multilock_lock(zkl_multilock_t *ml);
ZKL_EXTERN int zkl_multilock_trylock(zkl_multilock_t *ml);
ZKL_EXTERN int zkl_multilock_timedlock(zkl_multilock_t *ml,
                                       int64_t deadline_ms);

/*
 * The acquire of zkl_multilock_timedlock(), with no thread waiting for it
 * (see "Asynchronous acquire": it runs on the client's own threads, and
 * never blocks them). Returns ZKL_OK, and `fn` runs exactly once, on the
 * client's callback thread, with `arg` and the outcome:
 *   ZKL_OK         the set is held, as after zkl_multilock_lock(): any
 *                  thread releases it with zkl_multilock_unlock(), also
 *                  from inside fn;
 *   ZKL_ETIMEDOUT  the deadline passed first;
 *   ZKL_ECANCELED  zkl_multilock_cancel() ran meanwhile (one that comes
 *                  after the set is held changes nothing: fn gets ZKL_OK);
 *   ZKL_EREVOKED, ZKL_EAUTH, ...  as for the blocking call.
 * Or it returns an error and fn never runs: ZKL_EINVAL (NULL ml or fn),
 * ZKL_ENOMEM, ZKL_ECLOSED, ZKL_EFORKED, ZKL_EBUSY (this object holds or
 * acquires already). deadline_ms follows TIME: ZKL_NO_DEADLINE waits for
 * ever, one already past (0, or any negative value) makes a try. There is
 * no ZKL_EDEADLK check: an asynchronous acquire belongs to no thread. On
 * any outcome but ZKL_OK no node of ours is left in any queue. The object
 * is busy from the call until fn starts: zkl_multilock_destroy() says
 * ZKL_EBUSY meanwhile (cancel, then destroy it from fn or after).
 */
typedef void (*zkl_multilock_done_fn)(zkl_multilock_t *ml, int rc,
                                      void *arg);
ZKL_EXTERN int zkl_multilock_lock_async(zkl_multilock_t *ml,
                                        int64_t deadline_ms,
                                        zkl_multilock_done_fn fn, void *arg);

/* Release the set (from any thread): every node of it that still exists
 * is deleted, whatever became of the others (one deleted by someone, a
 * refused guarded write), and the verdict is zkl_mutex_unlock()'s for
 * all of them: ZKL_OK only if every member was ours to the end, else
 * ZKL_ELOST (ZKL_EREVOKED for a member forced out after a revocation
 * request). ZKL_ENOTOWNER: not held. */
ZKL_EXTERN int zkl_multilock_unlock(zkl_multilock_t *ml);

/* The same without waiting: returns at once, and fn(rc, arg) runs exactly
 * once on the callback thread with zkl_multilock_unlock()'s verdict (see
 * zkl_hold_release_async()). The object is busy (ZKL_EBUSY to lock and
 * destroy) until fn has returned. ZKL_OK, or fn never runs: ZKL_EINVAL
 * (NULL fn), ZKL_ENOTOWNER, ZKL_EBUSY, ZKL_ENOMEM (still held),
 * ZKL_EFORKED. */
ZKL_EXTERN int zkl_multilock_unlock_async(zkl_multilock_t *ml,
                                          zkl_release_fn fn, void *arg);

/* Wake a thread acquiring on this object, or end its asynchronous
 * acquire: ZKL_ECANCELED, no node left. */
ZKL_EXTERN int zkl_multilock_cancel(zkl_multilock_t *ml);

/* The set's zkl_lock_state_t (NONE when not held), its token, a check of
 * every member with the ensemble (as zkl_mutex_verify(): the first
 * failure), and writes guarded by every member (zkl_mutex_guarded(): one
 * transaction checks all the nodes; ZKL_GUARD_RELEASE releases the set). */
ZKL_EXTERN int zkl_multilock_state(const zkl_multilock_t *ml);
ZKL_EXTERN int zkl_multilock_token(const zkl_multilock_t *ml,
                                   uint64_t *token);
ZKL_EXTERN int zkl_multilock_verify(zkl_multilock_t *ml);

/* Free the object: ZKL_EBUSY, freeing nothing, while it holds, a thread
 * acquires, or an asynchronous acquire's fn has not started; NULL is a no-op; a dead pointer gives ZKL_EINVAL. */
ZKL_EXTERN int zkl_multilock_destroy(zkl_multilock_t *ml);

/* ------------------------------------------------------------------------ */
/* Revocation                                                                */
/* ------------------------------------------------------------------------ */

/*
 * Ask the holders of lock `name` under `root` (NULL = "/locks"; an
 * election's root and name work too: its leader holds) to give it up,
 * and take it from those that have not within grace_ms.
 *
 * *forced (may be NULL) receives the number of nodes deleted by force.
 * Returns ZKL_OK; ZKL_ENOTHELD (nobody holds, or `node` is not in the
 * queue: nothing written); ZKL_ZNOAUTH (the ACL refuses our credentials:
 * under ZKL_ACL_CREATOR only the creator's identity may ask or force);
 * ZKL_EINVAL; ZKL_ENOMEM; ZKL_EFORKED; ZKL_ECLOSED; or a connection code
 * when no server answered for about a session timeout. Blocks up to
 * grace_ms and a few round trips. Thread-safe.
 *
 * `node` NULL asks every current holder (a writer, all readers, all
 * leases); a contender's node name, as zkl_mutex_queue() lists it, asks
 * that one. A named waiter holds nothing to give back: its node is
 * deleted at once, and its acquire returns ZKL_EREVOKED.
 *
 * grace_ms < 0: only ask, and return once the requests are written.
 * grace_ms >= 0: then wait (on watches) up to grace_ms of this process's
 * monotonic clock for each holder to release, and delete the nodes still
 * there, by their exact names: never a later holder's, as names are
 * never reused. A holder forced out is LOST; its calls on the hold
 * (unlock, verify, a release, a reentrant lock) return ZKL_EREVOKED when
 * it had heard the request, else ZKL_ELOST; its guarded writes fail with
 * ZKL_ELOST, and the next holder's token is larger. Forcing breaks
 * exclusion in wall-clock time, since the old holder may still be
 * running: it protects what checks tokens or is written with guarded
 * writes.
 *
 * Notes: the request is a line "revoke=<nonce>,<grace_ms>" added to the
 * header of the holder's node data by a conditional write, merged again
 * when the data changed meanwhile: nothing there is lost, and two
 * revokers' lines both stay. A zklock holder (its node watched: the
 * default from 100 ms into a hold) turns ZKL_STATE_REVOKE_REQUESTED within
 * a round trip, or at 100 ms for a request in a hold's first 100 ms, in
 * its state callback and zkl_*_state(); it should finish and release.
 * Apache Curator's request ("__REVOKE__" as the node's data) is heard the
 * same way. Other libraries' nodes, and holds made with
 * ZKL_MUTEX_NO_NODE_WATCH, are not asked (their data is not ours to
 * change) or hear nothing: they are only forced.
 */
ZKL_EXTERN int zkl_revoke(zkl_client_t *client, const char *root,
                          const char *name, const char *node,
                          int64_t grace_ms, unsigned *forced);

/* ------------------------------------------------------------------------ */
/* Guarded writes                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Writes to ZooKeeper that commit only while a hold is still ours: for
 * state kept in ZooKeeper itself, "write only while I hold the lock".
 * Each call is one transaction (ZooKeeper's multi), sent on the hold's
 * session: a check that the hold's node still exists, at the data version
 * we last found its data as we wrote it, then the caller's ops in order,
 * then (with ZKL_GUARD_RELEASE) the delete of the hold's node. The leader
 * applies all of it or none, at one zxid: a hold lost meanwhile (session
 * expired, node deleted by someone, its data rewritten by someone, a
 * revocation forced) fails the check, and nothing the caller wrote lands,
 * however long the holder was paused before sending; there is no clock in
 * it. Node names are never reused, so the node's existence is the hold's.
 * When the version moved, the node is read: a revoker's request sends the
 * transaction again (at most 3 times, one round trip more each), anything
 * else ends the hold (ZKL_ELOST).
 *
 * This fences the holder's own late writes; it is no access control: a
 * client allowed to write the same paths writes them whatever our locks
 * say (ZKL_ACL_CREATOR and the ensemble's ACLs keep such clients out).
 * For resources outside ZooKeeper use the fencing token.
 */

/* Kinds of zkl_op_t. */
enum {
  ZKL_OP_CREATE = 1, /* create path with data (flags: ZKL_CREATE_*) */
  ZKL_OP_SET = 2,    /* set path's data, if its data version is `version` */
  ZKL_OP_DELETE = 3, /* delete path, if its data version is `version` */
  ZKL_OP_CHECK = 4   /* write nothing: path exists with that version */
};

/* zkl_op_t.create_flags */
enum {
  ZKL_CREATE_EPHEMERAL = 1 << 0, /* goes with the hold's session */
  ZKL_CREATE_SEQUENTIAL = 1 << 1 /* the server appends a 10-digit number */
};

/* Most ops in one guarded call, and most bytes of paths and data. */
#define ZKL_GUARD_OPS_MAX 1000
#define ZKL_GUARD_BYTES_MAX 1000000

/* One op of a guarded call. The caller fills the first fields; the call
 * fills rc (and version, created) for every op. */
typedef struct zkl_op {
  int type;              /* ZKL_OP_* */
  const char *path;      /* absolute node path */
  const void *data;      /* CREATE, SET: the node's data; NULL: none */
  size_t data_len;
  int version;           /* SET, DELETE, CHECK: expected data version; -1:
                            any. CREATE: ignored */
  unsigned create_flags; /* CREATE: ZKL_CREATE_*; nodes get the client's
                            ACL (zkl_client_options_t.acl) */
  char *created;         /* CREATE: where to copy the path made (with a
                            sequential create, the name the server chose),
                            or NULL; created_size must fit it: the path,
                            10 more bytes if sequential, and a NUL */
  size_t created_size;
  /* Out: ZOK for every op when the call returns ZKL_OK. When the ensemble
   * refused the transaction, the failing op's ZooKeeper code
   * (ZKL_ZNONODE, ZKL_ZNODEEXISTS, ZKL_ZBADVERSION, ZKL_ZNOAUTH...), 0
   * (ZOK) for the ops before it and ZKL_ZRUNTIMEINCONSISTENCY after it;
   * otherwise the call's code. */
  int rc;
  int new_version;       /* SET: the data version it wrote */
} zkl_op_t;

/* Flags of the guarded calls. */
enum {
  /* Commit the ops and the release together: the hold's node is deleted
   * in the same transaction, so the next holder never sees the lock free
   * before the writes. On ZKL_OK the hold is released as by its unlock
   * (a mutex's or read-write lock's last level: held once, else
   * ZKL_EBUSY; a lease or asynchronous hold is freed). On any failure the
   * hold is not released; release it as usual. */
  ZKL_GUARD_RELEASE = 1 << 0
};

/*
 * Commit ops[0..n) (n may be 0: a check alone) guarded by a hold: the
 * calling thread's hold of a mutex or read-write lock (either mode, any
 * depth), a lease, an asynchronous hold, a multi-lock's set (every node
 * checked), or a leader's term (no ZKL_GUARD_RELEASE: resign instead). One round trip; no request when the
 * arguments are refused or the hold is known lost.
 *
 * Returns:
 *   ZKL_OK       every op committed.
 *   ZKL_ELOST    nothing committed: the hold is gone (its node deleted, its
 *                session expired), and is marked LOST; release it.
 *   a ZooKeeper code: nothing committed; the ensemble refused an op (see
 *                zkl_op_t.rc), the hold stands. ZKL_ZCONNECTIONLOSS and other
 *                connection codes: the connection was down (nothing sent)
 *                or dropped with the transaction on its way, so it may or
 *                may not have committed: retry only ops that are safe to
 *                apply twice (a SET or DELETE with a version), or read
 *                first; a retry after the hold was lost fails its check.
 *   ZKL_ENOTOWNER  nothing held (ZKL_ENOTHELD: not leading);
 *   ZKL_EBUSY    ZKL_GUARD_RELEASE on a hold taken more than once;
 *   ZKL_EINVAL   NULL object, ops NULL with n > 0, an unknown type or flag,
 *                a path not starting with '/', data_len without data, a
 *                `created` too small, version below -1, more than
 *                ZKL_GUARD_OPS_MAX ops or ZKL_GUARD_BYTES_MAX bytes;
 *   ZKL_ENOMEM, ZKL_EFORKED.
 * A hold's thread rules apply: only the thread that holds a mutex or
 * read-write lock may write under it. Thread-safe otherwise.
 */
ZKL_EXTERN int zkl_mutex_guarded(zkl_mutex_t *mutex, zkl_op_t *ops, size_t n,
                                 unsigned flags);
ZKL_EXTERN int zkl_rwlock_guarded(zkl_rwlock_t *rw, zkl_op_t *ops, size_t n,
                                  unsigned flags);
ZKL_EXTERN int zkl_lease_guarded(zkl_lease_t *lease, zkl_op_t *ops, size_t n,
                                 unsigned flags);
ZKL_EXTERN int zkl_hold_guarded(zkl_hold_t *hold, zkl_op_t *ops, size_t n,
                                unsigned flags);
ZKL_EXTERN int zkl_election_guarded(zkl_election_t *e, zkl_op_t *ops,
                                    size_t n, unsigned flags);
ZKL_EXTERN int zkl_multilock_guarded(zkl_multilock_t *ml, zkl_op_t *ops,
                                     size_t n, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* ZKLOCK_H */
