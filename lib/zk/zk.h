/* SPDX-License-Identifier: Apache-2.0 */
/* zk.h: the ZooKeeper layer (lib/zk/): one session's conversation with
 * the ensemble. The record of a request and its completions (call.c),
 * every request (request.c), group commit (batch.c), the session's state
 * machine (session.c) and deletes that wait for a connection
 * (deferred.c). It calls base/ only; what it must tell the engine goes
 * through hooks the client wires (c->on_session, c->watcher). Included by
 * internal.h only. */

/* ---- session.c, deferred.c ------------------------------------------- */

/* One ZooKeeper handle. Kept alive by references: the client's "current"
 * pointer, each operation in flight, and each acquisition whose node may
 * still exist on it. The event thread closes it when the last one goes. */
struct zkl__session {
  zkl_client_t *c;
  zhandle_t *zh;
  int zstate; /* last ZooKeeper state seen by its watcher */
  int refs;
  int expired;
  int auth_done; /* the ensemble accepted our credentials */
  int own_auth;  /* our own identity is still to be given (session.c) */
  int auth_answered; /* the user's credentials have had their answer */
  int was_connected; /* a CONNECTED event was applied (under c->mu) */
  int64_t id;
  struct zkl__session *next_dead;
  /* group commit (batch.c), under bmu: writes that wait for the
   * transaction in flight, and how many transactions are out */
  pthread_mutex_t bmu;
  struct zkl__batch *queued;
  int inflight;
  /* zookeeper_close has begun (zkl__close_dead): the answers it flushes
   * send nothing more on zh. Debian's 3.8.0 C client refuses a request
   * on a closing handle (ZINVALIDSTATE) and leaks what it had allocated
   * for it: a transaction's sub-op entries and its buffer. */
  int closing;
  struct rd *refused; /* listings the client refused, answered by batch.c */
  /* the ZOOKEEPER-4537 nudge (batch.c): when the write now out left (0:
   * none out, or only a test's slot), when the last one left, and when
   * the last nudge did, under bmu; whether a nudge is out, under c->mu */
  int64_t out_since, out_last, nudged_at;
  /* writes sent past group commit (a container's create, a setData, a
   * guarded or multi-lock transaction, a sync), out now and since when
   * the first of them left; under bmu */
  int wout;
  int64_t wout_since;
  int nudging;
};

/* How long a write is out before the session is nudged (ZOOKEEPER-4537,
 * lib/zk/batch.c). A healthy ensemble answers a write in a round trip and
 * a log fsync, a few ms; 50 ms is well past that, so a nudge is rare and
 * costs one read, and far below the third of the session timeout after
 * which the client gives up on a silent connection. (One read sent 50 ms
 * into a stalled write was seen to end the stall.) */
#define ZKL__NUDGE_MS 50

/* Under c->mu. */
ZKL__HIDDEN zkl__session_t *zkl__session_get(zkl_client_t *c);
ZKL__HIDDEN void zkl__session_put(zkl_client_t *c, zkl__session_t *s);
ZKL__HIDDEN int zkl__wait_usable(zkl_client_t *c, zkl__session_t *old,
                                 uint64_t epoch, int64_t deadline_ms);
ZKL__HIDDEN int64_t zkl__verdict_end(const zkl_client_t *c);
#define ZKL__VERDICT_LATER 1
ZKL__HIDDEN int zkl__session_verdict(const zkl_client_t *c,
                                     const zkl__session_t *s, uint64_t epoch,
                                     int64_t end, int64_t *due);
/* deferred.c: delete `path` once connected, if its ephemeral owner is s
 * and, when czxid is not 0, it is the node created at czxid: a flat
 * lock's name (ZKL_MUTEX_FLAT) is everybody's, and another acquisition
 * of this very session may have made it again since. */
ZKL__HIDDEN void zkl__defer_delete(zkl_client_t *c, zkl__session_t *s,
                                   const char *path, int64_t czxid);
/* The same, for a node given up with the connection up: sent at once by
 * the event thread, with no log line. */
ZKL__HIDDEN void zkl__defer_delete_now(zkl_client_t *c, zkl__session_t *s,
                                       const char *path, int64_t czxid);
/* The same for a flat lock's node whose create's reply was lost (its
 * czxid unknown): deleted only if s owns it and its data carries the
 * line "guid=<guid>" (zkl__data_has_guid). */
ZKL__HIDDEN void zkl__defer_delete_guid(zkl_client_t *c, zkl__session_t *s,
                                        const char *path, const char *guid);
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
/* session.c, for the event thread and the teardown. zkl__new_session is
 * called without c->mu: 0, or -1 with errno when no handle could be made.
 * zkl__lost_deadline: when holds still AT_RISK become LOST (0: none). */
ZKL__HIDDEN int zkl__new_session(zkl_client_t *c);
ZKL__HIDDEN int64_t zkl__lost_deadline(const zkl_client_t *c);
/* For the event thread, under c->mu: sends s (the current session, or
 * NULL) one cheap read if a write has been out on it ZKL__NUDGE_MS since it
 * left or since the last nudge; returns when to look again (0: no write
 * out). */
ZKL__HIDDEN int64_t zkl__session_nudge(zkl__session_t *s, int64_t now);
/* The first write of an idle session s left (batch.c, or request.c's
 * writes outside group commit): the event thread must look at s within
 * ZKL__NUDGE_MS. `locked`: the caller holds c->mu. */
ZKL__HIDDEN void zkl__session_nudge_timer(zkl__session_t *s, int locked);
/* A write outside group commit leaves (out) or is answered (in): the
 * nudge covers it too. */
ZKL__HIDDEN void zkl__session_write_out(zkl__session_t *s, int locked);
ZKL__HIDDEN void zkl__session_write_in(zkl__session_t *s);
ZKL__HIDDEN void zkl__close_dead(zkl_client_t *c);
/* ---- call.c and request.c: the record of a request, and every request -- */

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
  struct zkl__session *wsess; /* a write sent past group commit: counted
                               * out on this session for the nudge */
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
/* A node whose release is guarded by our own identity (release.c): with
 * the client's own ACL (c->own_acl), read for everyone and every right
 * for our identity alone, and marked at data version 1 (batch.c). */
ZKL__HIDDEN int zkl__create_own(zkl__call_t *call, zkl__session_t *s,
                                const char *path, const char *data, int len,
                                int flags);
/* A queue's directory, or one of its parents: a container (with no data
 * given, its data is ZKL__DIR_MARK: zkl_sweep() may delete it), or with
 * `persistent` a plain node (a kazoo flavour's, as kazoo makes it). Never
 * held back for a transaction: the stat (czxid) must come back, and an
 * "exists" must not fail a neighbour's create with it. */
ZKL__HIDDEN int zkl__create_dir(zkl__call_t *call, zkl__session_t *s,
                                const char *path, const char *data, int len,
                                int persistent);
/* A queue's node and its directory `dir`, one transaction
 * (zkl__batch_create_pair): the directory a plain persistent node with
 * data ZKL__DIR_MARK, for Debian's 3.8.0 client misreads a container
 * create in a transaction. pcall gets the directory's code (and, made,
 * its stat), call the node's (and its stat, at data version 1: see
 * zkl__batch_create_pair). The node goes again alone, and asks for its
 * stat, when the directory was there already. */
ZKL__HIDDEN int zkl__create_with_dir(zkl__call_t *call, zkl__call_t *pcall,
                                     zkl__session_t *s, const char *path,
                                     const char *data, int len, int flags,
                                     const char *dir);
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
/* delete, if the node's data version is still `version` */
ZKL__HIDDEN int zkl__delete_at(zkl__call_t *call, zkl__session_t *s,
                               const char *path, int version);
/* A delete guarded in its transaction (zkl__batch_delete_guarded): the
 * node at data version `version` (with `set`, and the write right our
 * identity alone has), then the node, then `parent` if not NULL. */
ZKL__HIDDEN int zkl__delete_guarded(zkl__call_t *gcall, zkl__call_t *call,
                                    zkl__call_t *pcall, zkl__session_t *s,
                                    const char *path, int set, int version,
                                    const char *parent);
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
/* acl: NULL for the client's (c->acl) */
ZKL__HIDDEN int zkl__batch_create(zkl__call_t *call, zkl__session_t *s,
                                  const char *path, const char *data,
                                  int len, int flags,
                                  const struct ACL_vector *acl);
/* A guarded delete, one transaction: a check of path at data version
 * `version` (with `set`, a setData instead, which also needs the write
 * right the node's ACL gives), then its delete, then (parent not NULL)
 * the parent's. gcall gets the guard's code, call the delete's (the
 * guard's when it failed), pcall the parent's. */
ZKL__HIDDEN int zkl__batch_delete_guarded(zkl__call_t *gcall, zkl__call_t *call,
                                          zkl__call_t *pcall,
                                          zkl__session_t *s, const char *path,
                                          int set, int version,
                                          const char *parent);
/* version: the node's data version, or -1 (any) */
ZKL__HIDDEN int zkl__batch_delete(zkl__call_t *call, zkl__session_t *s,
                                  const char *path, int version);
/* Creates parent (persistent, data ZKL__DIR_MARK) and then path, with a
 * setData of path's first name (sequence 0) that writes its data and
 * answers its stat, in one transaction: the node is then at version 1.
 * The parent never alone, and path alone, once more, with its data, if
 * the parent's create fails (it was there already). */
ZKL__HIDDEN int zkl__batch_create_pair(zkl__call_t *call, zkl__call_t *pcall,
                                       zkl__session_t *s, const char *path,
                                       const char *data, int len, int flags,
                                       const char *parent);
/* Deletes path and its parent in one transaction: the parent only if the
 * node's delete is applied with it (then the parent is surely the one the
 * node was in), and the node alone, once more, if the parent's fails
 * (someone else's node came in). */
ZKL__HIDDEN int zkl__batch_delete_pair(zkl__call_t *call, zkl__call_t *pcall,
                                       zkl__session_t *s, const char *path,
                                       const char *parent);
ZKL__HIDDEN int zkl__batch_list(zkl__call_t *call, zkl__session_t *s,
                                const char *path, zkl__call_t *create);
/* One transaction of s answered: send what waited for it. Tests call it
 * after taking a transaction slot themselves (s->inflight++) to make a
 * batch of what they issue meanwhile. */
ZKL__HIDDEN void zkl__batch_done(zkl__session_t *s);
/* For tests: the ops held back on s, and in how many transactions. */
ZKL__HIDDEN int zkl__batch_queued(zkl__session_t *s, int *transactions);
/* call.c's completions, which request.c and batch.c give the C client,
 * and zkl__issued, which counts a request sent, of `kind`
 * (ZKL_STATS_REQ_*), and finishes a waited-for call that the client
 * refused outright (it returns rc). */
ZKL__HIDDEN int zkl__issued(zkl__call_t *call, int kind, int rc);
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
/* The next getChildren completion reports a lost connection. */
ZKL__HIDDEN extern _Atomic int zkl__fault_children_lost;
/* When set to n, the n-th transaction batch.c sends from its queue from
 * now on is refused, as the C client refuses one on a closing handle
 * (ZSYSTEMERROR). */
ZKL__HIDDEN extern _Atomic int zkl__fault_send_refused;
/* While positive, that many new session handles cannot be made (EMFILE). */
ZKL__HIDDEN extern _Atomic int zkl__fault_new_session;
/* When set, the next delete of a lock's parent at close (release.c) or by
 * zkl_sweep (sweep.c) has the parent's data rewritten just before it, on
 * the same session, as if by someone else. */
ZKL__HIDDEN extern _Atomic int zkl__fault_dir_rewritten;
/* When set, the next lock directory a join makes (recover.c) is deleted
 * and made again with other data just after, on the same session, as if
 * by someone else. */
ZKL__HIDDEN extern _Atomic int zkl__fault_dir_replaced;
/* When set, the next getData sent (request.c) is followed, on the same
 * session, by a setData of that node to "x", as if someone else rewrote
 * it between our read and whatever we send next. */
ZKL__HIDDEN extern _Atomic int zkl__fault_get_rewritten;
#endif
ZKL__HIDDEN int zkl__is_conn_error(int rc);
