/* SPDX-License-Identifier: Apache-2.0 */
/* zklock.pml: the queue protocol of lib/engine/ (F1, F3, F4 fixed), with
 * the read-write lock's conflict rule (READERS), checked
 * with spin. ZooKeeper as zklock relies on it, N contenders running
 * today's steps under the names of the C functions they stand for, and a
 * hostile session. model/README.md says what is modelled, what is left out
 * and why, and lays each step beside its C function; scripts/model.sh runs
 * the checks.
 *
 * Bounds (spin -DNAME=VALUE):
 *   N        contenders, each with its own client and session       [2]
 *   CYCLES   acquisitions per contender                             [1]
 *   CONN     connection losses in all: at a request (applied or
 *            not, its answer lost) or while a thread waits           [1]
 *   EXPIRE   session expiries in all                                [0]
 *   GIVEUP   acquisitions cancelled or timed out while they wait    [1]
 *   ROGUE    hostile actions in all                                 [0]
 *   RPLANT RDELETE RREPLACE RCOPY  which hostile actions exist [1 1 1 0]
 *   RDURING  hostile actions only while some connection is down
 *   NOMEM    creates whose answer cannot be kept (ENOMEM)           [0]
 *   READERS  contenders 0..READERS-1 read (shared), the others write:
 *            a node counts only if it conflicts with ours          [0]
 *   STALE_SERVER  drop a ZooKeeper guarantee: once, a reconnection goes
 *            to a server that lacks a watched node of another session
 *            (it reports it deleted); shows what BUG_NO_EPOCH guards
 *   PEER     a Curator read-write writer on the same lock: it queues,
 *            holds, downgrades by creating a read node with its write
 *            node's sequence (CURATOR-621), deletes the write node, then
 *            releases; zkl__may_insert_below() guards the hand-off
 *   LIVE     the liveness claim instead of the end-state checks
 *            (run pan with -a -f)
 *   MARK     a holder whose node is at version 0 writes a mark on it
 *            (a downgrade's, a semaphore relay's: marks.c), at the
 *            version it knows, once per hold
 *   NO_HANDOFF  no zero-read hand-off: every wake lists again, as
 *            Curator's waiter does (with BUG_NO_OWN_READ: Curator's
 *            waiter; the listing alone cannot tell our node from one
 *            put at its name)
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_NO_SOLE        hand-off although the deleted predecessor was
 *                      not the only node before us
 *   BUG_NO_OWNER       recover() adopts a node found by its guid
 *                      whoever owns it, and zkl__owns_on() judges by
 *                      czxid alone
 *   BUG_NO_OWNER_RECOVER  only recover()'s ephemeralOwner test removed
 *   BUG_NO_EPOCH       hand-off although the connection changed
 *   BUG_WAIT_PLANTED   wait behind a node that is not ephemeral
 *   BUG_F2_LISTING     join() as before 8b1c784: a failed create leaves
 *                      the listing's code as it was
 *   BUG_NO_LOWERS      hand-off although a node before us may put a node
 *                      below us (zkl__may_insert_below ignored)
 *   BUG_RW_NEAREST_ONLY  a reader counts only the nearest writer before
 *                      it: the hand-off when that one goes
 *   BUG_NO_OWN_READ    a waiter asks nothing of its own node, as
 *                      Curator's does: no own-node watch while it waits,
 *                      and confirm_owner() trusts the listing (issue 35,
 *                      item 3: the request a contended cycle keeps)
 * Defects found by the model, as the code was before their fixes
 * (model/README.md, "Findings"):
 *   BUG_F1   a judged unlock trusts a delete whose read did not answer
 *   BUG_F3   recover() after ENOMEM waits for a new connection
 *   BUG_F4   recover() reads only one of the nodes found by guid
 *   BUG_F4_PDEL  the deferred delete deletes what it finds (by guid, or
 *            by name) without reading its owner
 *   BUG_MARK_BLIND  (with MARK) a mark's write that landed teaches the
 *            release's guard its version, whoever's node it landed on
 */

#ifndef N
#define N 2
#endif
#ifndef CYCLES
#define CYCLES 1
#endif
#ifndef CONN
#define CONN 1
#endif
#ifndef EXPIRE
#define EXPIRE 0
#endif
#ifndef GIVEUP
#define GIVEUP 1
#endif
#ifndef MARK
#define MARK 0
#endif
#ifndef ROGUE
#define ROGUE 0
#endif
#ifndef RPLANT
#define RPLANT 1
#endif
#ifndef RDELETE
#define RDELETE 1
#endif
#ifndef RREPLACE
#define RREPLACE 1
#endif
#ifndef RCOPY
#define RCOPY 0
#endif
#ifndef NOMEM
#define NOMEM 0
#endif
/* READERS: contenders 0..READERS-1 take the lock shared (zkl_rwlock_t's
 * read side), the others exclusive */
#ifndef READERS
#define READERS 0
#endif
/* RDURING: the hostile session acts only while some connection is down */
#if defined(RDURING) && N > 2
#define RWHEN (!conn[0] || !conn[1] || !conn[2])
#elif defined(RDURING)
#define RWHEN (!conn[0] || !conn[1])
#else
#define RWHEN 1
#endif

#define K 14          /* node slots, one per node ever created: czxid = slot+1 */
#define PEER_S 7      /* the Curator peer's session */
#define PEER_R 14     /* its read node's guid, and its write node's: */
#define PEER_W 15
#define NS 8          /* session ids 1..7; 0 = none, the owner of a persistent node */
#define QN 10         /* a session's inbound FIFO: replies and events */
#define IG 2          /* planted names a queue object remembers (q->ignored) */
#define PD 2          /* deferred deletes per client (c->pdel) */
#define HQ 4          /* requests held while disconnected */
#define JOINME 254    /* join's listing: "from the node our create just made" */
#define NONE 255

/* A node's name <guid>-lock-<seq> is guid*16+seq. Guid 0 is the hostile
 * session's own ("operator-lock-..."); contenders' guids and sequence
 * numbers start at 1, so a planted sequence 0 is before everyone. */
#define NAME(g, q) ((g) * 16 + (q))
#define GID(n) ((n) / 16)
#define SEQ(n) ((n) % 16)
#define BIT(k) (1 << (k))
/* policy.c: before(), nearer() on names with sequences that do not wrap */
#define BEFORE(a, b) (SEQ(a) < SEQ(b) || (SEQ(a) == SEQ(b) && GID(a) < GID(b)))
/* A node's kind by its name, as policy.c reads the marker: contender i's
 * guids are i+1, i+1+N, ...; the peer's read node is shared; the hostile
 * session's own names (guid 0) are of a kind nobody knows: exclusive. A
 * copy of a name has the kind of what it copies. */
#define RDR(g) ((g) == PEER_R || ((g) >= 1 && (g) < PEER_R && ((g) - 1) % N < READERS))
#define CONFLICT(a, b) (!(RDR(GID(a)) && RDR(GID(b))))
#define NEARER(a, b) (SEQ(a) > SEQ(b) || (SEQ(a) == SEQ(b) && GID(a) > GID(b)))

/* ZooKeeper codes */
#define ZOK 0
#define ZNONODE 1
#define ZCONNLOSS 2   /* ZCONNECTIONLOSS, ZOPERATIONTIMEOUT, ZSESSIONMOVED */
#define ZSESS 3       /* ZSESSIONEXPIRED, ZINVALIDSTATE */
#define ZNOMEM 4      /* ZKL_ENOMEM from on_create: created, name not kept */
#define ZBADV 5       /* ZBADVERSION: a guard's check at the wrong version */
/* what an acquisition returns, and run()'s internal outcomes */
#define OK 0
#define ECANCELED 10  /* ZKL_ECANCELED or ZKL_ETIMEDOUT */
#define EREVOKED 11
#define ELOST 12
#define RETRY 21
#define RELIST 22
#define HOLD 23
/* what the listing showed (position()) */
#define P_HOLD 0
#define P_WAIT 1
#define P_NOTME 2
/* zkl_lock_state_t */
#define S_NONE 0
#define S_HELD 1
#define S_AT_RISK 2
#define S_LOST 3
/* c->state */
#define C_CONNECTED 1
#define C_CONNECTING 2    /* also EXPIRED until the new session connects */
/* a->own_watch */
#define OWN_NONE 0
#define OWN_PENDING 1
#define OWN_OK 2
/* what happens to one request */
#define F_OK 0        /* applied, answered */
#define F_LOST 1      /* applied, the connection drops before the answer */
#define F_DROP 2      /* the connection drops before it is applied */
#define F_DOWN 3      /* no connection: fails (a reconnection attempt failed) */
#define F_HOLD 5      /* no connection: held, sent once connected again */
#define F_SESS 4      /* the handle's session is known to be over */
/* what the user thread waits for, with c->mu released */
#define W_NONE 0
#define W_CALLS 1     /* zkl__call_wait */
#define W_RECONN 2    /* zkl__wait_usable, in reconnect() */
#define W_PRED 3      /* wait_pred()'s condition variable */
#define W_VERDICT 4   /* zkl__session_verdict */
#define W_USER 5      /* in the critical section, or done */

mtype = { EV_DEL, EV_CHG, EV_DISC, EV_CONN, EV_EXP,
          R_CREATE, R_LIST, R_RLIST, R_SYNC, R_EXISTS, R_GETPRED, R_GETOWN,
          R_DELETE, R_PDDEL, R_PDLIST, R_PDSTAT, R_GDEL };

/* ---- the server ----------------------------------------------------------- */
byte cnt = 1;            /* the parent's sequence counter */
/* LEAN0 (issue 26): a node the first its parent ever had holds without a
 * listing (acquire.c first_born: suffix 0, the model's 1). The real
 * counter is the parent's cversion, which every create of a child moves,
 * sequential or not: so with LEAN0 the hostile session's creates move it
 * too (BUMP). BUG_LEAN_ANY, the mutant: any suffix holds unlisted. */
#ifdef BUG_LEAN_ANY
#define FIRST_BORN(n) 1
#else
#define FIRST_BORN(n) (SEQ(n) == 1)
#endif
#ifdef LEAN0
#define BUMP() assert(cnt < 16); cnt++
#else
#define BUMP() skip
#endif
byte nslots = 0;
bit  nalive[K];
byte nname[K];
byte nown[K];            /* ephemeralOwner */
bit  nver[K];            /* its data version: 1 for a node made with its
                          * parent (batch.c: a first born's setData, with
                          * LEAN0), 0 for any plain create (the hostile's) */
bit  nrogue[K];          /* deleted by the hostile session */
/* Ghost: node k has been, at some instant, first: alive, with no live
 * node of a contender's session before it that conflicts with it (a
 * persistent node counts as none: the policy never waits behind one). A
 * hold begins only on a node that has been first (hold_begins()); one
 * that is gone before it was first gives a holder that never held. */
bit  nfirst[K];
byte fk, fm;             /* first_scan()'s scratch, 0 outside it */
bit  salive[NS];         /* sessions not expired */
bit  conn[N];            /* client i's session has a connection */
byte dgen[N];            /* connection drops of client i so far */
bit  sx[N];              /* the client's LOST deadline for its last drop
                          * fired: the server may expire the session */
short sw[N];             /* the watches (node slots) that connection carries */
byte nlive = 0;          /* live nodes of contender sessions */
bit  planted;            /* the hostile session's own node exists */
byte peer_holds;            /* the Curator peer holds: 1 write, 2 read (downgraded) */
bit  peer_done;
chan inq[N] = [QN] of { mtype, byte, byte, byte, byte };
/* requests made while the connection is down: kind, argument, x2, session */
chan held[N] = [HQ] of { mtype, byte, byte, byte };
byte fconn = 0, fexp = 0, fgive = 0, fnomem = 0, fstale = 0;

/* ---- the clients (zkl_client_t), index i ----------------------------------- */
byte cl_sess[N];          /* c->sess */
byte cl_state[N];         /* c->state */
byte cl_epoch[N];         /* c->conn_epoch */
byte cl_dg[N];            /* the drop the client noticed last */
byte cl_exp[N];           /* sessions this client knows expired, a bit each */
bit  cl_disc[N];          /* c->disconnected_at != 0 */
bit  cl_late[N];          /* the LOST deadline of this disconnection has passed */
bit  cl_expq[N];          /* the expiry is on its way to the client */
short cl_watch[N];        /* watches the C client re-sets on reconnection */
bit  mu[N];              /* c->mu, held by the user thread */
bit  cl_vto[N];           /* the verdict's wait (about T/3) is over */
byte wc[N], wep[N], wsess[N];  /* what the user thread waits for */
/* ---- the acquisition (zkl__acq_t) ---------------------------------------- */
byte a_path[N];          /* a->path: a name, NONE */
byte a_sess[N];          /* a->sess: 0 = NULL */
byte a_czx[N];           /* a->czxid: slot+1, 0 = none */
byte a_guid[N];
byte a_own[N];           /* a->own_watch */
byte a_wpath[N];         /* a->watch_path */
bit  a_lost[N];          /* a->session_lost */
bit  a_revoked[N], a_pgone[N], a_woke[N], a_due[N];
bit  a_stop[N];          /* cancelled, or the deadline passed (stopped()) */
byte st[N];              /* a->state: what zkl_mutex_state() reports */
bit  incs[N];            /* acquire returned OK, unlock not called yet */
bit  acq[N];             /* inside the acquire call */
byte fin = 0;            /* user threads that are done */
/* ---- outstanding calls (zkl__call_t) -------------------------------------- */
byte left[N];
byte cr_rc[N], cr_slot[N], ls_rc[N], ls_pos[N], ls_pred[N];
byte st_rc[N], st_slot[N], gd_rc[N], gd_slot[N], del_rc[N], rl_rc[N], rl_found[N], rl_alt[N];
/* ---- the queue object (q->ignored) and deferred deletes (c->pdel) ---------- */
byte ign[N * IG];
/* pd_name: the node to read, then delete (NONE: find by guid first);
 * pd_alt: a second name found with the guid; pd_meant: the slot the
 * delete means, once read (NONE: not read) */
byte pd_s[N * PD], pd_name[N * PD], pd_gid[N * PD], pd_alt[N * PD], pd_meant[N * PD];
bit  pd_fly[N * PD];

#define apath a_path[i]
#define asess a_sess[i]
#define aczx a_czx[i]
#define own_watch a_own[i]
#define watch_path a_wpath[i]
#define session_lost a_lost[i]
#define revoked a_revoked[i]
#define pred_gone a_pgone[i]
#define woke a_woke[i]
#define watch_due a_due[i]
#define cst cl_state[i]
#define epoch cl_epoch[i]
#define csess cl_sess[i]
#define KNOWN_EXP(s) (cl_exp[i] & BIT(s))
#define IS_HOLD (st[i] == S_HELD || st[i] == S_AT_RISK)
#define IGNORED(n) (ign[i * IG] == (n) || ign[i * IG + 1] == (n))
/* zkl__owns_on(a, s, stat of slot k) */
#ifdef BUG_NO_OWNER
#define OWNS_ON(k, s) ((s) != 0 && (k) + 1 == aczx)
#else
#define OWNS_ON(k, s) ((s) != 0 && (k) + 1 == aczx && nown[k] == (s))
#endif

/* Whether the user thread's wait is over (it is runnable). */
#define USABLE(x) (cl_state[x] == C_CONNECTED && (cl_epoch[x] != wep[x] || cl_sess[x] != wsess[x]))
#define READY(x) ((wc[x] == W_CALLS && left[x] == 0) || \
  (wc[x] == W_RECONN && (USABLE(x) || a_stop[x])) || \
  (wc[x] == W_PRED && (a_pgone[x] || a_woke[x] || a_lost[x] || a_revoked[x] || a_stop[x])) || \
  (wc[x] == W_VERDICT && ((cl_exp[x] & BIT(wsess[x])) || cl_sess[x] != wsess[x] || \
     (cl_state[x] == C_CONNECTED && cl_epoch[x] != wep[x]) || cl_vto[x])))

/* ---- the server's steps ----------------------------------------------------- */

inline put(c, x1, x2, x3, x4) {
  assert(len(inq[i]) < QN);
  inq[i]!c, x1, x2, x3, x4
}

/* The live node named n, or NONE (paths are unique). */
inline lookup(n, out) {
  out = NONE;
  k = 0;
  do
  :: k < nslots -> if :: nalive[k] && nname[k] == n -> out = k :: else fi; k++
  :: else -> break
  od
}

/* Delete slot d: the one-shot watches on it fire; each event joins its
 * session's FIFO, so it comes before the reply to any later request. */
/* nfirst[] after a create or a delete: only a delete can make a node
 * first (a create comes after every live node but planted ones, which
 * count as none), and the new node itself. */
inline first_scan() {
  d_step {
    fk = 0;
    do
    :: fk < nslots ->
       if
       :: nalive[fk] && nown[fk] != 0 && !nfirst[fk] ->
          fm = 0;
          do
          :: fm < nslots && (fm == fk || !nalive[fm] || nown[fm] == 0 ||
                             !BEFORE(nname[fm], nname[fk]) || !CONFLICT(nname[fm], nname[fk])) -> fm++
          :: fm < nslots && !(fm == fk || !nalive[fm] || nown[fm] == 0 ||
                             !BEFORE(nname[fm], nname[fk]) || !CONFLICT(nname[fm], nname[fk])) -> break
          :: fm >= nslots -> nfirst[fk] = 1; break
          od
       :: else
       fi;
       fk++
    :: else -> break
    od;
    fk = 0; fm = 0
  }
}

inline delete_slot(d) {
  nalive[d] = 0;
  if :: nown[d] != 0 -> nlive-- :: else fi;
  j = 0;
  do
  :: j < N ->
     if
     :: sw[j] & BIT(d) ->
        sw[j] = sw[j] & ~BIT(d);
        cl_watch[j] = cl_watch[j] & ~BIT(d);
        assert(len(inq[j]) < QN);
        inq[j]!EV_DEL, nname[d], d, cl_sess[j], 0
     :: else
     fi;
     j++
  :: else -> break
  od;
  first_scan()
}

inline new_slot(n, owner) {
  assert(nslots < K);
  nalive[nslots] = 1;
  nver[nslots] = 0;
  nname[nslots] = n;
  nown[nslots] = owner;
  if :: owner != 0 -> nlive++ :: else fi;
  nslots++;
  first_scan()
}

/* The server expires session x: its ephemeral nodes go. */
inline expire_session(x) {
  salive[x] = 0;
  t = 0;
  do
  :: t < nslots -> if :: nalive[t] && nown[t] == x -> delete_slot(t) :: else fi; t++
  :: else -> break
  od
}

/* The connection of client i drops: the server forgets its watches, the
 * client hears of it before the failure of any request then pending. */
inline drop() {
  conn[i] = 0;
  dgen[i]++;
  sx[i] = 0;
  sw[i] = 0;
  put(EV_DISC, 0, dgen[i], csess, 0)
}

/* What becomes of a request sent on session x; `wr`: it writes. For a
 * read, "applied, answer lost" and "never applied" look the same to
 * everyone (a watch it set goes with the connection), so only writes
 * get both. */
inline pre(x, wr) {
  if
  /* the handle of an expired session refuses requests (ZINVALIDSTATE) */
  :: KNOWN_EXP(x) || x != csess || cl_expq[i] -> fate = F_SESS
  :: else ->
     if
     :: !conn[i] -> if :: fate = F_DOWN :: fate = F_HOLD fi
     :: else ->
        if
        :: fate = F_OK
        :: fconn < CONN -> fconn++; fate = F_LOST
        :: wr && fconn < CONN -> fconn++; fate = F_DROP
        fi
     fi
  fi;
  r1 = ZOK; r2 = 0; r3 = 0; r4 = 0
}
#define APPLIED (fate == F_OK || fate == F_LOST)

/* The answer: r1..r4 when applied and heard; on failure the reply still
 * names x2 (a deferred delete's index, or what a verification was of). */
inline post(kind, x, x2, a) {
  if
  :: fate == F_OK -> put(kind, r1, r2, r3, r4)
  :: fate == F_HOLD ->
     assert(len(held[i]) < HQ);
     held[i]!kind, a, x2, x;
     printf("MSC: %d %e held until connected\n", i, kind)
  :: fate == F_SESS -> put(kind, ZSESS, x2, x, x2)
  :: else ->
     if
     :: fate == F_LOST -> printf("MSC: %d connection lost: %e applied, answer lost\n", i, kind); drop()
     :: fate == F_DROP -> printf("MSC: %d connection lost: %e not applied\n", i, kind); drop()
     :: else
     fi;
     put(kind, ZCONNLOSS, x2, x, x2)
  fi
}

/* create(<dir>/<guid>-lock-, EPHEMERAL_SEQUENTIAL) on session x */
inline zk_create(g, x) {
  assert(cnt < 16);
  jslot = nslots;
  new_slot(NAME(g, cnt), x);
#ifdef LEAN0
  /* the first node its parent ever had: made with it, marked at 1 */
  if :: FIRST_BORN(NAME(g, cnt)) -> nver[jslot] = 1 :: else fi;
#endif
  cnt++;
  r2 = jslot
}

/* getChildren(<dir>), and position()'s reading of it from node `me`
 * (zkl__place): r2 = what*2 + sole, r3 = the nearest node before us.
 * The queue's ignored names are the client's own, unchanged while the
 * request is out, so they may be read here. */
inline zk_list(me) {
  lookup(me, u);
  if
  :: u == NONE -> r2 = P_NOTME * 2
  :: else ->
     t = NONE;
     r4 = 0;
     j = 0;    /* a node before us may put one below us (Curator RW) */
     k = 0;
     do
     :: k < nslots ->
        if
        :: nalive[k] && k != u && !IGNORED(nname[k]) && BEFORE(nname[k], me) ->
           if :: GID(nname[k]) == PEER_W -> j = 1 :: else fi;
           /* zkl__decide(): only the nodes that conflict with ours count,
            * and we watch the nearest of them */
           if
           :: CONFLICT(nname[k], me) ->
              r4++;
              if :: t == NONE || NEARER(nname[k], nname[t]) -> t = k :: else fi
           :: else
           fi
        :: else
        fi;
        k++
     :: else -> break
     od;
#ifdef BUG_RW_NEAREST_ONLY
     /* a reader counts the writers before it as one: the nearest */
     if :: RDR(GID(me)) && r4 > 1 -> r4 = 1 :: else fi;
#endif
     if
     :: r4 == 0 -> r2 = P_HOLD * 2
#ifdef BUG_NO_LOWERS
     :: else -> r2 = P_WAIT * 2 + (r4 == 1); r3 = nname[t]
#else
     :: else -> r2 = P_WAIT * 2 + (r4 == 1 && !j); r3 = nname[t]
#endif
     fi;
     r4 = 0
  fi
}

/* getChildren(<dir>) searched for names with guid g: r3 and r4 (NONE if
 * fewer), in the listing's (arbitrary) order. At most two exist: ours
 * and one copy (RCOPY). */
inline zk_find(g) {
  r3 = NONE; r4 = NONE;
  k = 0;
  do
  :: k < nslots ->
     if
     :: nalive[k] && GID(nname[k]) == g ->
        if
        :: r3 == NONE -> r3 = nname[k]
        :: r3 != NONE -> r4 = nname[k]
        :: r3 != NONE -> r4 = r3; r3 = nname[k]
        fi
     :: else
     fi;
     k++
  :: else -> break
  od
}

/* exists(path) or getData(path[, watch]): r2 = the node's slot, which
 * stands for its stat (czxid = slot+1, ephemeralOwner = nown[slot]). */
inline zk_stat(n, watch) {
  lookup(n, t);
  if
  :: t == NONE -> r1 = ZNONODE    /* getData leaves no watch on a missing node */
  :: else ->
     r2 = t;
     if
     :: watch ->
        sw[i] = sw[i] | BIT(t);
        /* the C client registers it when the answer comes */
        if :: fate == F_OK -> cl_watch[i] = cl_watch[i] | BIT(t) :: else fi
     :: else
     fi
  fi
}

/* delete(path) on session x, meaning slot `meant` (NONE: a node it has
 * not read). No foreign delete: what a contender deletes is a node of its
 * own session, unless the hostile session deleted the node it meant and
 * put another at its name (the unlock's round trip cannot tell, zklock.h) */
inline zk_delete(n, x, meant) {
  lookup(n, t);
  if
  :: t == NONE -> r1 = ZNONODE
  :: else ->
     assert(nown[t] == x || (meant != NONE && nrogue[meant]));
     delete_slot(t)
  fi
}

/* The release's guarded delete (release.c send_guarded): one
 * transaction, check(n, version 1) then delete(n). Only our own node is
 * at version 1 at our name (the hostile's creates are plain), so what it
 * deletes is ours: no exception for a node put there meanwhile. */
#ifdef BUG_GUARD_ANY_VERSION
#define GUARD_OK(t) (1)
#else
#define GUARD_OK(t) (nver[t] == 1)
#endif
inline zk_gdelete(n, x) {
  lookup(n, t);
  if
  :: t == NONE -> r1 = ZNONODE
  :: t != NONE && !GUARD_OK(t) -> r1 = ZBADV
  :: else ->
     assert(nown[t] == x);
     delete_slot(t)
  fi
}

/* ---- the hostile session --------------------------------------------------- */

/* t := one of the live nodes of contenders (u of them), chosen freely */
inline pick_target() {
  t = 0; j = 0;
  do :: j + 1 < u -> j++ :: break od;
  k = 0;
  do
  :: k < nslots && nalive[k] && nown[k] != 0 && j == 0 -> t = k; break
  :: k < nslots && nalive[k] && nown[k] != 0 && j > 0 -> j--; k++
  :: k < nslots && !(nalive[k] && nown[k] != 0) -> k++
  od
}

proctype rogue() {
  byte todo = ROGUE, p, k, j, t, u;
end_rogue:
  do
  :: atomic {
       todo > 0 && (nlive > 0 || (RPLANT && !planted)) && RWHEN ->
       u = nlive;
       if
#if RPLANT
       /* a persistent node with a contender's kind of name and the lowest
        * sequence: before every contender, and never going by itself */
       :: !planted ->
          planted = 1;
          new_slot(NAME(0, 0), 0); BUMP();
          printf("MSC: rogue plants persistent %d\n", NAME(0, 0))
#endif
#if RCOPY
       /* the same, under a live contender's guid (a copy of its name) */
       :: u > 0 ->
          pick_target();
          lookup(NAME(GID(nname[t]), 0), p);
          if
          :: p == NONE ->
             new_slot(NAME(GID(nname[t]), 0), 0); BUMP();
             printf("MSC: rogue plants persistent %d, a copy of %d\n", NAME(GID(nname[t]), 0), nname[t])
          :: else
          fi
#endif
#if RDELETE
       /* delete a contender's node, waiting or held */
       :: u > 0 ->
          pick_target();
          nrogue[t] = 1;
          delete_slot(t);
          printf("MSC: rogue deletes %d\n", nname[t])
#endif
#if RREPLACE
       /* delete it and create the same path again, persistent */
       :: u > 0 ->
          pick_target();
          nrogue[t] = 1;
          delete_slot(t);
          new_slot(nname[t], 0); BUMP();
          printf("MSC: rogue replaces %d by a persistent node\n", nname[t])
#endif
       fi;
       todo--
     }
  od
}

/* ---- the client: ZooKeeper's completion thread and the client's event
 * thread, which take c->mu (so run only while the user thread waits), and
 * the network and the server's session tracker (which do not). --------- */

/* lose(): the hold is gone for good, its session reference dropped */
inline lose() {
  st[i] = S_LOST;
  printf("MSC: %d LOST\n", i);
  asess = 0
}

/* zkl__watch_own: read our node with a watch; on_verified judges it */
inline watch_own(x) {
  own_watch = OWN_PENDING;
  pre(x, 0);
  if :: APPLIED -> zk_stat(apath, 1) :: else fi;
  r3 = x; r4 = aczx;
  post(R_GETOWN, x, aczx, apath)
}

/* defer(): a node to delete once connected, by name, or by guid (n NONE);
 * by name it is our node, slot m (BUG_F4_PDEL deletes it unread) */
inline defer(x, n, g, m) {
  if
  :: pd_s[i * PD] == 0 -> t = i * PD
  :: else -> assert(pd_s[i * PD + 1] == 0); t = i * PD + 1
  fi;
  pd_s[t] = x; pd_name[t] = n; pd_gid[t] = g; pd_fly[t] = 0; pd_alt[t] = NONE;
#ifdef BUG_F4_PDEL
  pd_meant[t] = m;
#else
  pd_meant[t] = NONE;
#endif
  if
  :: n == NONE -> printf("MSC: %d defers the delete of its node with guid %d\n", i, g)
  :: else -> printf("MSC: %d defers the delete of %d\n", i, n)
  fi
}

/* own_event(): an event on our own node */
inline own_event(ty) {
  own_watch = OWN_NONE;
  if
  :: ty == EV_DEL ->
     if
     :: IS_HOLD -> lose()
     :: st[i] == S_NONE -> revoked = 1
     :: else
     fi
  :: else ->
     if :: asess != 0 && !KNOWN_EXP(asess) && st[i] != S_LOST -> watch_own(asess) :: else fi
  fi
}

/* on_verified(): m1 rc, m2 slot, m3 session asked on, m4 czxid asked about */
inline on_verified() {
  if
  :: apath != NONE && asess != 0 && asess == m3 && aczx == m4 ->
     if :: m1 == ZOK && OWNS_ON(m2, asess) -> t = 1 :: else -> t = 0 fi;  /* mine */
     if
     :: t && own_watch == OWN_PENDING -> own_watch = OWN_OK
     :: !t && own_watch == OWN_PENDING -> own_watch = OWN_NONE
     :: else
     fi;
     if
     :: IS_HOLD ->
        if
        :: t && cst == C_CONNECTED -> st[i] = S_HELD
        :: !(t && cst == C_CONNECTED) && (m1 == ZNONODE || (m1 == ZOK && !t)) -> lose()
        :: else
        fi
     :: else ->
        if :: m1 == ZNONODE || (m1 == ZOK && !t) -> revoked = 1 :: else fi
     fi
  :: else
  fi
}

/* One message from the session's FIFO (the completion thread). */
inline handle() {
  if
  :: mk == EV_DEL || mk == EV_CHG ->
     /* zkl__path_watcher: m1 name, m3 the session it came on */
     if
     :: asess != 0 && asess == m3 ->
        if
        :: watch_path != NONE && watch_path == m1 ->
           woke = 1;
           if :: mk == EV_DEL -> pred_gone = 1 :: else fi
        :: else
        fi;
        if :: apath != NONE && apath == m1 -> own_event(mk) :: else fi
     :: else
     fi
  :: mk == EV_DISC ->
     /* on_disconnected */
     if
     :: m3 == csess && cst == C_CONNECTED ->
        cst = C_CONNECTING;
        cl_disc[i] = 1;
        cl_dg[i] = m2;
        if :: st[i] == S_HELD && asess == m3 -> st[i] = S_AT_RISK :: else fi
     :: else
     fi
  :: mk == EV_CONN ->
     /* on_connected, verify_holds */
     if
     :: m3 == csess && cst != C_CONNECTED ->
        cst = C_CONNECTED;
        epoch++;
        cl_disc[i] = 0;
        cl_late[i] = 0;
        if
        :: asess == m3 && IS_HOLD && apath != NONE -> watch_due = 0; watch_own(m3)
        :: else
        fi
     :: else
     fi
  :: mk == EV_EXP ->
     /* on_expired, then new_session (the event thread) */
     cl_expq[i] = 0;
     cl_exp[i] = cl_exp[i] | BIT(m3);
     cl_disc[i] = 0;
     cl_late[i] = 0;
     if
     :: asess == m3 -> if :: IS_HOLD -> lose() :: else -> session_lost = 1 fi
     :: else
     fi;
     t = 0;
     do
     :: t < PD -> if :: pd_s[i * PD + t] == m3 && !pd_fly[i * PD + t] -> pd_s[i * PD + t] = 0 :: else fi; t++
     :: else -> break
     od;
     assert(csess + N < PEER_S);
     csess = csess + N;
     salive[csess] = 1;
     cst = C_CONNECTING;
     conn[i] = 1;
     sw[i] = 0;
     cl_watch[i] = 0;
     put(EV_CONN, 0, 0, csess, 0)
  /* replies to the user thread's calls */
  :: mk == R_CREATE ->
     cr_rc[i] = m1; cr_slot[i] = m2;
#if NOMEM
     if
     :: m1 == ZOK && fnomem < NOMEM ->
        fnomem++; cr_rc[i] = ZNOMEM;
        printf("MSC: %d create applied, its answer not kept (ENOMEM)\n", i)
     :: else
     fi;
#endif
     left[i]--
  :: mk == R_LIST -> ls_rc[i] = m1; ls_pos[i] = m2; ls_pred[i] = m3; left[i]--
  :: mk == R_RLIST -> rl_rc[i] = m1; rl_found[i] = m3; rl_alt[i] = m4; left[i]--
  :: mk == R_SYNC -> left[i]--
  :: mk == R_EXISTS -> st_rc[i] = m1; st_slot[i] = m2; left[i]--
  :: mk == R_GETPRED -> gd_rc[i] = m1; gd_slot[i] = m2; left[i]--
  :: mk == R_DELETE -> del_rc[i] = m1; left[i]--
  :: mk == R_GDEL -> del_rc[i] = m1; left[i]--
  :: mk == R_GETOWN -> on_verified()
  /* replies to the event thread's deferred deletes: m2 = which */
  :: mk == R_PDDEL ->
     t = i * PD + m2;
     pd_fly[t] = 0;
     if
     :: m1 != ZCONNLOSS -> pd_s[t] = 0
#ifndef BUG_F4_PDEL
     :: else -> pd_meant[t] = NONE    /* it may have landed: read again */
#else
     :: else
#endif
     fi
  :: mk == R_PDLIST ->
     t = i * PD + m2;
     pd_fly[t] = 0;
     if
     :: m1 == ZOK && m3 != NONE -> pd_name[t] = m3; pd_alt[t] = m4
     :: m1 == ZOK && m3 == NONE -> pd_s[t] = 0
     :: m1 != ZOK && m1 != ZCONNLOSS -> pd_s[t] = 0
     :: else
     fi
  :: mk == R_PDSTAT ->
     /* on_pdel_read: m3 the slot read */
     t = i * PD + m2;
     pd_fly[t] = 0;
     if
     :: m1 == ZOK && nown[m3] == pd_s[t] -> pd_meant[t] = m3
     :: (m1 == ZOK && nown[m3] != pd_s[t]) || m1 == ZNONODE ->
        if
        :: pd_alt[t] != NONE -> pd_name[t] = pd_alt[t]; pd_alt[t] = NONE
        :: else -> pd_s[t] = 0
        fi
     :: m1 == ZSESS -> pd_s[t] = 0
     :: else
     fi
  fi
}

/* Whether deferred delete x may be sent now (pdel_run). */
#define PD_DUE(x) (pd_s[x] != 0 && !pd_fly[x] && cst == C_CONNECTED && pd_s[x] == csess)

inline pdel_send(x) {
  pd_fly[x] = 1;
  if
  :: pd_name[x] == NONE ->
     pre(pd_s[x], 0);
     if :: APPLIED -> zk_find(pd_gid[x]) :: else fi;
     r2 = x - i * PD;
     post(R_PDLIST, pd_s[x], x - i * PD, pd_gid[x])
#ifdef BUG_F4_PDEL
  :: pd_name[x] != NONE ->
#else
  :: pd_name[x] != NONE && pd_meant[x] == NONE ->
     pre(pd_s[x], 0);
     if :: APPLIED -> zk_stat(pd_name[x], 0); r3 = r2 :: else fi;
     r2 = x - i * PD;
     post(R_PDSTAT, pd_s[x], x - i * PD, pd_name[x])
  :: pd_name[x] != NONE && pd_meant[x] != NONE ->
#endif
     pre(pd_s[x], 1);
     printf("MSC: %d deferred delete of %d\n", i, pd_name[x]);
     if :: APPLIED -> zk_delete(pd_name[x], pd_s[x], pd_meant[x]) :: else fi;
     r2 = x - i * PD;
     post(R_PDDEL, pd_s[x], x - i * PD, pd_name[x])
  fi
}

proctype client(byte i) {
  /* scratch (spin resets dead locals, so these add no states) */
  mtype mk;
  byte m1, m2, m3, m4, k, j, t, u, r1, r2, r3, r4, fate, jslot;
end_client:
  do
  :: atomic { !mu[i] && nempty(inq[i]) -> inq[i]?mk, m1, m2, m3, m4; handle() }
  /* the event thread: pdel_run */
  :: atomic { !mu[i] && PD_DUE(i * PD) -> pdel_send(i * PD) }
  :: atomic { !mu[i] && PD_DUE(i * PD + 1) -> pdel_send(i * PD + 1) }
  /* the event thread: expire_at_risk, once the LOST deadline is past */
  :: atomic {
       !mu[i] && cl_late[i] && cl_disc[i] && cst == C_CONNECTING ->
       if
       :: st[i] == S_AT_RISK && asess == csess ->
          if :: apath != NONE -> defer(asess, apath, 0, aczx - 1) :: else fi;
          lose()
       :: else
       fi;
       cl_disc[i] = 0;
       sx[i] = (!conn[i] && cl_dg[i] == dgen[i])
     }
  /* the event thread: watch_due_holds, for a hold that lasted */
  :: atomic {
       !mu[i] && watch_due && cst == C_CONNECTED && IS_HOLD && apath != NONE && asess == csess ->
       watch_due = 0;
       watch_own(asess)
     }
  /* the network: the connection drops */
  :: atomic { conn[i] && fconn < CONN -> fconn++; printf("MSC: %d connection lost (waiting)\n", i); drop() }
  /* the network: the client connects again, and re-sets its watches; a
   * watched node gone meanwhile fires at once (changed if re-created) */
  :: atomic {
       !conn[i] && !cl_expq[i] && salive[csess] ->
       conn[i] = 1;
       printf("MSC: %d connected again\n", i);
       put(EV_CONN, 0, 0, csess, 0);
       u = 0;
       do
       :: u < nslots ->
          if
          :: cl_watch[i] & BIT(u) ->
             if
#ifdef STALE_SERVER
             /* a server behind the client's last zxid lacks the node and
              * reports it deleted (ZooKeeper refuses such a reconnection) */
             :: nalive[u] && fstale == 0 && nown[u] != csess ->
                fstale++;
                cl_watch[i] = cl_watch[i] & ~BIT(u);
                printf("MSC: %d reconnects to a server that lacks %d\n", i, nname[u]);
                put(EV_DEL, nname[u], u, csess, 0)
#endif
             :: nalive[u] -> sw[i] = sw[i] | BIT(u)
             :: else ->
                cl_watch[i] = cl_watch[i] & ~BIT(u);
                lookup(nname[u], t);
                if
                :: t == NONE -> put(EV_DEL, nname[u], u, csess, 0)
                :: else -> put(EV_CHG, nname[u], u, csess, 0)
                fi
             fi
          :: else
          fi;
          u++
       :: else -> break
       od;
       /* then what was asked meanwhile (SetWatches goes ahead of it) */
       jslot = NONE;
       do
       :: held[i]?mk, m1, m2, m3 ->
          fate = F_OK; r1 = ZOK; r2 = 0; r3 = 0; r4 = 0;
          if
          :: mk == R_CREATE -> zk_create(m1, m3)
          :: mk == R_LIST ->
             if
             :: m1 == JOINME -> zk_list((jslot == NONE -> NONE : nname[jslot]))
             :: else -> zk_list(m1)
             fi
          :: mk == R_RLIST -> zk_find(m1)
          :: mk == R_PDLIST -> zk_find(m1); r2 = m2
          :: mk == R_PDSTAT -> zk_stat(m1, 0); r3 = r2; r2 = m2
          :: mk == R_SYNC -> skip
          :: mk == R_EXISTS -> zk_stat(m1, 0)
          :: mk == R_GETPRED -> zk_stat(m1, 1)
          :: mk == R_GETOWN -> zk_stat(m1, 1); r3 = m3; r4 = m2
          :: mk == R_DELETE -> zk_delete(m1, m3, m2)
          :: mk == R_GDEL -> zk_gdelete(m1, m3)
          :: mk == R_PDDEL -> zk_delete(m1, m3, pd_meant[i * PD + m2]); r2 = m2
          fi;
          put(mk, r1, r2, r3, r4)
       :: empty(held[i]) -> break
       od
     }
  /* ... or learns that its session has expired */
  :: atomic {
       !conn[i] && !cl_expq[i] && !salive[csess] ->
       cl_expq[i] = 1;
       put(EV_EXP, 0, 0, csess, 0);
       do
       :: held[i]?mk, m1, m2, m3 -> put(mk, ZSESS, m2, m3, m2)
       :: empty(held[i]) -> break
       od
     }
  /* time passes: the LOST deadline (T/3 - T/20 after the disconnect was
   * noticed) comes while the user thread sleeps or is in user code and
   * the completion thread has handled all it received: a thread that can
   * run is not starved that long */
  :: atomic { !mu[i] && cl_disc[i] && !cl_late[i] && !READY(i) && empty(inq[i]) &&
              (st[i] == S_AT_RISK || fexp < EXPIRE) -> cl_late[i] = 1 }
  /* a waiting acquisition is cancelled, or its deadline passes */
  :: atomic {
       !mu[i] && (wc[i] == W_RECONN || wc[i] == W_PRED) && !READY(i) && fgive < GIVEUP ->
       fgive++;
       a_stop[i] = 1;
       printf("MSC: %d is cancelled or times out\n", i)
     }
  /* the verdict of an unlock that lost its connection waits about T/3 */
  :: atomic { !mu[i] && wc[i] == W_VERDICT && !READY(i) -> cl_vto[i] = 1 }
  /* the server expires the session: only T after the last contact, so
   * after the client's own deadline for this disconnection has fired
   * (expire_at_risk ran since the connection dropped) */
  :: atomic {
       !conn[i] && sx[i] && salive[csess] && fexp < EXPIRE ->
       fexp++;
       printf("MSC: session %d of %d expires\n", csess, i);
       /* holds are told LOST before the server can expire their session */
       assert(!(IS_HOLD && asess == csess));
       expire_session(csess)
     }
  od
}

/* ---- the user thread: lib/engine/run.c, acquire.c ---------------------------- */

/* Answers already read are forgotten before a long wait, so that stale
 * values do not multiply states. */
inline forget() {
  cr_rc[i] = 0; cr_slot[i] = 0; rl_rc[i] = 0; rl_found[i] = 0; rl_alt[i] = 0;
  st_rc[i] = 0; st_slot[i] = 0; gd_rc[i] = 0; gd_slot[i] = 0; del_rc[i] = 0;
  ls_rc[i] = 0; ls_pos[i] = 0; ls_pred[i] = 0
}

/* zkl__call_wait(): release c->mu until every answer is in */
inline wait_calls() {
  wc[i] = W_CALLS;
  mu[i] = 0;
  READY(i) -> mu[i] = 1; wc[i] = W_NONE
}

/* reconnect(): wait for a usable connection after a failure on session x
 * at epoch e; cancellation or the deadline end it too (res). */
inline reconnect(x, e) {
  forget();
  wsess[i] = x; wep[i] = e; wc[i] = W_RECONN;
  mu[i] = 0;
  READY(i) -> mu[i] = 1; wc[i] = W_NONE;
  res = (USABLE(i) -> OK : ECANCELED);
  wsess[i] = 0; wep[i] = 0
}

/* drop_node(): forget our node, never to delete it */
inline drop_node() {
  apath = NONE; asess = 0; aczx = 0;
  session_lost = 0; revoked = 0; own_watch = OWN_NONE
}

/* adopt(): a node we created, from a create reply or found again */
inline adopt(x, n) {
  apath = nname[n];
  aczx = n + 1;
  aver = nver[n];  /* the version its create's answer showed */
  asess = x;
  printf("MSC: %d adopts %d\n", i, apath)
}

/* gone(): our node is not there, or not ours: revoked while our session
 * lives, else gone with it */
inline gone() {
  if
  :: asess != 0 && asess == csess && !KNOWN_EXP(asess) && !session_lost -> res = EREVOKED
  :: else -> res = RETRY
  fi
}

/* adopt_if_ours(): read node n found by our guid; adopt it if its owner
 * is this very session (OK), else RETRY, or RELIST: the read failed with
 * the connection, list again */
inline adopt_if_ours(n) {
  atomic { left[i] = 1; pre(s, 0); if :: APPLIED -> zk_stat(n, 0) :: else fi; post(R_EXISTS, s, 0, n) }
  wait_calls();
  if
#if defined(BUG_NO_OWNER) || defined(BUG_NO_OWNER_RECOVER)
  :: st_rc[i] == ZOK && !KNOWN_EXP(s) ->
#else
  :: st_rc[i] == ZOK && nown[st_slot[i]] == s && !KNOWN_EXP(s) ->
#endif
     adopt(s, st_slot[i]); res = OK
  :: st_rc[i] == ZCONNLOSS -> res = RELIST
  :: else -> res = RETRY
  fi
}

/* recover(): the reply to our create was lost; find our node by its guid
 * (sync first): read every name with our guid, adopt the one whose owner
 * is this very session. BUG_F4 reads only the first. */
inline recover() {
  do
  :: reconnect(s, ep2);
     if
     :: res != OK -> defer(s, NONE, a_guid[i], NONE); break
     :: else
     fi;
     if
     :: csess != s -> res = RETRY; break    /* expired: our node went with it */
     :: else
     fi;
     if :: a_stop[i] -> defer(s, NONE, a_guid[i], NONE); res = ECANCELED; break :: else fi;
     ep2 = epoch;
     atomic { left[i] = 2; pre(s, 0); post(R_SYNC, s, 0, 0) }
     atomic { pre(s, 0); if :: APPLIED -> zk_find(a_guid[i]) :: else fi; post(R_RLIST, s, 0, a_guid[i]) }
     wait_calls();
     if
     :: rl_rc[i] == ZCONNLOSS -> skip
     :: rl_rc[i] != ZCONNLOSS && (rl_rc[i] != ZOK || rl_found[i] == NONE) -> res = RETRY; break
     :: rl_rc[i] == ZOK && rl_found[i] != NONE ->
        adopt_if_ours(rl_found[i]);
#ifndef BUG_F4
        if :: res == RETRY && rl_alt[i] != NONE -> adopt_if_ours(rl_alt[i]) :: else fi;
#endif
        if :: res != RELIST -> break :: else fi    /* RELIST: list again */
     fi
  od
}

/* join(): create and getChildren sent back to back: one round trip */
inline join() {
  a_guid[i] = i + 1 + N * natt; natt++;
  assert(a_guid[i] < PEER_R);
  s = csess; ep2 = epoch;
  jslot = NONE;
#ifdef LEAN0
  /* step_join with r->unlisted: the create alone; first_born() decides
   * whether a listing follows (run_loop lists when lrc is not ZOK) */
  atomic {
    left[i] = 1;
    pre(s, 1); if :: APPLIED -> zk_create(a_guid[i], s) :: else fi; post(R_CREATE, s, 0, a_guid[i])
  }
  wait_calls();
  lrc = ZCONNLOSS; lpos = 0; lpred = 0;
  if
  :: cr_rc[i] == ZOK && FIRST_BORN(nname[cr_slot[i]]) ->
     printf("MSC: %d first born: holds without a listing\n", i);
     lrc = ZOK; lpos = P_HOLD * 2
  :: else
  fi;
#else
  atomic {
    left[i] = 2;
    pre(s, 1); if :: APPLIED -> zk_create(a_guid[i], s) :: else fi; post(R_CREATE, s, 0, a_guid[i])
  }
  atomic {
    pre(s, 0); if :: APPLIED -> zk_list((jslot == NONE -> NONE : nname[jslot])) :: else fi;
    post(R_LIST, s, 0, (jslot == NONE -> JOINME : nname[jslot]))
  }
  wait_calls();
  lrc = ls_rc[i]; lpos = ls_pos[i]; lpred = ls_pred[i];
#endif
  if
  :: cr_rc[i] == ZOK -> adopt(s, cr_slot[i]); res = OK
  :: cr_rc[i] == ZCONNLOSS || cr_rc[i] == ZNOMEM ->
     /* zkl__call_free(ls), and its code marked failed, so that run()
      * lists again (BUG_F2_LISTING: the code before 8b1c784 kept it) */
     lpos = P_NOTME * 2; lpred = 0;
#ifndef BUG_F2_LISTING
     lrc = ZCONNLOSS;
#endif
#ifndef BUG_F3
     /* ENOMEM with the connection up: list at once (epoch 0: any) */
     if :: cr_rc[i] == ZNOMEM -> ep2 = 0 :: else fi;
#endif
     recover()
  :: cr_rc[i] == ZSESS ->
     reconnect(s, ep2);
     if :: res == OK -> res = RETRY :: else fi
  fi
}

/* list(): getChildren on our node's session */
inline list() {
  do
  :: if
     :: asess == 0 || session_lost -> res = RETRY; break
     :: else
     fi;
     if :: a_stop[i] -> res = ECANCELED; break :: else fi;
     s = asess; ep2 = epoch;
     atomic { left[i] = 1; pre(s, 0); if :: APPLIED -> zk_list(apath) :: else fi; post(R_LIST, s, 0, apath) }
     wait_calls();
     lrc = ls_rc[i]; lpos = ls_pos[i]; lpred = ls_pred[i];
     if
     :: lrc == ZOK -> res = OK; break
     :: lrc == ZCONNLOSS ->
        reconnect(s, ep2);
        if :: res != OK -> break :: else fi
     :: lrc == ZSESS -> res = RETRY; break
     fi
  od
}

/* position(): our place in the listing (zk_list read it from our node) */
inline position() {
  if
  :: lpos / 2 == P_NOTME -> gone()
  :: lpos / 2 == P_HOLD -> res = HOLD
  :: lpos / 2 == P_WAIT -> pred = lpred; sole = lpos % 2; res = OK
  fi;
  lrc = 0; lpos = 0; lpred = 0
}

/* confirm_owner(): at the head; our node must still be there and ours
 * unless the listing came with our create, or our own watch vouches */
inline confirm_owner(fr) {
  if
#ifdef BUG_NO_OWN_READ
  :: true -> res = HOLD
#else
  :: fr || own_watch == OWN_OK -> res = HOLD
#endif
  :: else ->
     if
     :: asess == 0 || asess != csess || KNOWN_EXP(asess) -> res = RETRY
     :: a_stop[i] && !(asess == 0 || asess != csess || KNOWN_EXP(asess)) -> res = ECANCELED
     :: else ->
        s = asess; ep2 = epoch;
        atomic { left[i] = 1; pre(s, 0); if :: APPLIED -> zk_stat(apath, 0) :: else fi; post(R_EXISTS, s, 0, apath) }
        wait_calls();
        if
        :: st_rc[i] == ZOK && OWNS_ON(st_slot[i], asess) && asess == csess && !KNOWN_EXP(asess) -> res = HOLD
        :: else ->
           if
           :: st_rc[i] == ZCONNLOSS ->
              reconnect(s, ep2);
              if :: res == OK -> res = RELIST :: else fi
           :: st_rc[i] == ZOK || st_rc[i] == ZNONODE -> gone()
           :: st_rc[i] == ZSESS -> res = RETRY
           fi
        fi
     fi
  fi
}

/* wait_pred(): watch the predecessor (and, once, our own node), sleep
 * until it goes; the zero-read hand-off */
inline wait_pred() {
  if
  :: a_stop[i] -> res = ECANCELED
  :: else ->
     watch_path = pred; pred_gone = 0; woke = 0;
     s = asess;
#ifndef BUG_NO_OWN_READ
     if
     :: own_watch == OWN_NONE -> atomic { watch_own(s) }
     :: else
     fi;
#endif
     atomic {
       left[i] = 1;
       pre(s, 0); if :: APPLIED -> zk_stat(pred, 1) :: else fi; post(R_GETPRED, s, 0, pred)
     }
     wait_calls();
     if
     :: gd_rc[i] == ZNONODE -> pred_gone = 1; res = OK
#ifndef BUG_WAIT_PLANTED
     :: gd_rc[i] == ZOK && nown[gd_slot[i]] == 0 ->
        /* never goes by itself: do not wait behind it; ignore() */
        watch_path = NONE;
        if
        :: ign[i * IG] == NONE -> ign[i * IG] = pred
        :: else -> assert(ign[i * IG + 1] == NONE); ign[i * IG + 1] = pred
        fi;
        res = RELIST
     :: gd_rc[i] == ZOK && nown[gd_slot[i]] != 0 -> res = OK
#else
     :: gd_rc[i] == ZOK -> res = OK
#endif
     :: gd_rc[i] == ZCONNLOSS ->
        watch_path = NONE;
        reconnect(s, ep);
        if :: res == OK -> res = RELIST :: else fi
     :: gd_rc[i] == ZSESS -> watch_path = NONE; res = RETRY
     fi;
     if
     :: res == OK ->
        forget();
        wc[i] = W_PRED;
        mu[i] = 0;
        READY(i) -> mu[i] = 1; wc[i] = W_NONE;
        watch_path = NONE;
        if
        :: session_lost -> res = RETRY
        :: !session_lost && revoked -> gone()
        :: !session_lost && !revoked && !pred_gone && !woke -> res = ECANCELED
        :: else ->
           /* the zero-read hand-off: our predecessor was the only node
            * before us in our last listing, and nothing has happened since
            * that could make the listing stale */
           if
#if defined(BUG_NO_SOLE)
           :: pred_gone && epoch == ep && cst == C_CONNECTED -> res = HOLD
#elif defined(BUG_NO_EPOCH)
           :: pred_gone && sole -> res = HOLD
#elif defined(NO_HANDOFF)
           :: false -> res = HOLD    /* every wake lists again, as Curator's */
#else
           :: pred_gone && sole && epoch == ep && cst == C_CONNECTED -> res = HOLD
#endif
           :: else -> res = RELIST
           fi
        fi;
        pred_gone = 0; woke = 0
     :: else
     fi
  fi
}

/* zkl__session_verdict(): was session x alive when the delete failed? */
inline verdict(x, e) {
  forget();
  wsess[i] = x; wep[i] = e; wc[i] = W_VERDICT;
  mu[i] = 0;
  READY(i) -> mu[i] = 1; wc[i] = W_NONE;
  if
  :: KNOWN_EXP(x) || csess != x -> res = ZSESS
  :: !(KNOWN_EXP(x) || csess != x) && cst == C_CONNECTED && epoch != e -> res = ZOK
  :: else -> res = ZSESS    /* about T/3 without news: lost */
  fi;
  cl_vto[i] = 0; wsess[i] = 0; wep[i] = 0
}

#ifdef BUG_LEAN_UNLOCK
#define JD ljd
#else
#define JD jd
#endif
/* remove_node(): delete our node and forget it; `jd`: judge the release
 * (a read of the node's identity in the same round trip as the delete).
 * The acquisition is unlinked, and a->sess NULL, meanwhile: no event or
 * verification reaches it. */
inline remove_node(jd) {
  if
  :: apath == NONE || asess == 0 -> res = (asess != 0 -> ZOK : ZSESS)
  :: else ->
     s = asess; asess = 0; ep2 = epoch;
     if
     :: KNOWN_EXP(s) -> res = ZSESS
     :: else ->
#ifdef BUG_LEAN_UNLOCK
        /* the shortcut issue 26 proposed, refused: no read while the
         * own-node watch is armed, trusting that any change to our node
         * is told before the delete's answer. Our own delete's event and
         * someone else's delete and re-create look the same, and the
         * latter's event may still be on its way when unlock is called. */
        ljd = jd; lean = 0;
        if :: ljd && own_watch == OWN_OK -> ljd = 0; lean = 1 :: else fi;
#endif
        /* a node at version 1 goes in one transaction with its guard, and
         * no read; a guard that found another version (ZBADVERSION: not
         * our node) sends the read and the delete instead */
        guarded = JD && aver;
        if
        :: guarded ->
           atomic { left[i] = 1; pre(s, 1); if :: APPLIED -> zk_gdelete(apath, s) :: else fi; post(R_GDEL, s, aczx - 1, apath) }
           wait_calls();
           res = del_rc[i];
           if :: res == ZBADV -> guarded = 0 :: else fi
        :: else
        fi;
        if
        :: !guarded ->
        atomic {
          left[i] = 1 + JD;
          if
          :: JD -> pre(s, 0); if :: APPLIED -> zk_stat(apath, 0) :: else fi; post(R_EXISTS, s, 0, apath)
          :: else
          fi
        }
        atomic { pre(s, 1); if :: APPLIED -> zk_delete(apath, s, aczx - 1) :: else fi; post(R_DELETE, s, aczx - 1, apath) }
        wait_calls();
        res = del_rc[i]
        :: else
        fi;
        /* a delete that landed vouches only with a read just before it
         * that found our node */
        if
#ifdef BUG_F1
        :: res == ZOK && JD && !guarded && st_rc[i] == ZOK && !OWNS_ON(st_slot[i], s) -> res = ZNONODE
#else
        :: res == ZOK && JD && !guarded && !(st_rc[i] == ZOK && OWNS_ON(st_slot[i], s)) -> res = ZNONODE
#endif
        :: else
        fi;
#ifdef BUG_LEAN_UNLOCK
        if :: lean -> ljd = 1 :: else fi;
#endif
        if
        :: res == ZCONNLOSS ->
           defer(s, apath, 0, aczx - 1);
           if :: JD -> verdict(s, ep2); judged = 0 :: else fi
        :: else
        fi
     fi
  fi;
  forget()
}

inline acq_free() {
  apath = NONE; asess = 0; aczx = 0; a_guid[i] = 0;
  own_watch = OWN_NONE; watch_path = NONE;
  session_lost = 0; revoked = 0; pred_gone = 0; woke = 0; watch_due = 0;
  a_stop[i] = 0; hit = 0;
  s = 0; ep = 0; ep2 = 0; pred = 0; sole = 0; have_list = 0; fresh = 0
}

/* end_run(): the acquisition ends; a revoked node is not ours to delete */
inline end_run(x) {
  if :: x == EREVOKED -> drop_node() :: else fi;
  rc = x
}

/* run(): the acquisition loop */
inline run_loop() {
  do
  :: if :: a_stop[i] -> rc = ECANCELED; break :: else fi;
     if :: session_lost || (apath != NONE && asess == 0) -> drop_node() :: else fi;
     ep = epoch;
     have_list = 0; fresh = 0;
     if
     :: apath == NONE ->
        join();
        if
        :: res == RETRY -> goto again
        :: res == OK -> have_list = (lrc == ZOK); fresh = have_list
        :: else -> rc = res; break
        fi
     :: else
     fi;
     if
     :: !have_list ->
        ep = epoch;
        list();
        if
        :: res == RETRY -> drop_node(); goto again
        :: res == OK
        :: else -> end_run(res); break
        fi
     :: else
     fi;
     position();
     if :: res == HOLD -> confirm_owner(fresh) :: else fi;
     if
     :: res == HOLD -> rc = OK; break
     :: res == RELIST -> goto again
     :: res == RETRY -> drop_node(); goto again
     :: res == OK ->
        wait_pred();
        if :: res == HOLD -> confirm_owner(0) :: else fi;
        if
        :: res == HOLD -> rc = OK; break
        :: res == RETRY -> drop_node()
        :: res == RELIST
        :: else -> end_run(res); break
        fi
     :: else -> end_run(res); break
     fi;
again:
     pred = 0; sole = 0; lrc = 0; lpos = 0; lpred = 0
  od
}

/* Mutual exclusion, checked where a hold begins: no other contender is
 * in its critical section HELD or AT_RISK on a node that the hostile
 * session has not deleted. (A holder whose node was deleted stays HELD
 * until it is told, then LOST: the fencing token covers that window, not
 * the lock. No other way of losing a node is exempt: expiry and our own
 * deletes must be told first.) */
inline check_exclusion() {
  j = 0;
  do
  :: j < N ->
     assert(j == i || !incs[j] || !(st[j] == S_HELD || st[j] == S_AT_RISK) ||
            nrogue[a_czx[j] - 1] || nrogue[aczx - 1] ||
            (i < READERS && j < READERS));
     j++
  :: else -> break
  od;
  /* 2: the peer holds read, after its downgrade */
  assert(!peer_holds || (peer_holds == 2 && i < READERS))
}

/* zkl__queue_acquire() */
inline queue_acquire() {
  acq[i] = 1;
  run_loop();
  if
  :: rc == OK ->
     st[i] = (cst == C_CONNECTED -> S_HELD : S_AT_RISK);
     if :: own_watch == OWN_NONE -> watch_due = 1 :: else fi;   /* zkl__schedule_node_watch */
     incs[i] = 1;
     printf("MSC: %d holds %d\n", i, apath);
     check_exclusion();
     /* and it begins on a node that has been first: a node deleted (or
      * replaced) before that never held. After check_exclusion(), so that
      * a second holder is told as such. */
     assert(aczx != 0 && nfirst[aczx - 1]);
     s = 0; ep = 0; ep2 = 0; have_list = 0; fresh = 0
  :: else ->
     printf("MSC: %d gives up: %d\n", i, rc);
     remove_node(0);
     acq_free()
  fi;
  acq[i] = 0
}

/* zkl__queue_downgrade(), zkl__relay(): the hold writes a mark on its
 * node with a setData at the version it knows, 0 here (a node at version
 * 1 has its guard already). A node the hostile made again at our name is
 * at version 0 too, so the write may land on it, and then leaves it at the
 * version our guard would check: the answer's stat (czxid, owner) says
 * whose node it was, and only ours teaches the guard (marks.c). A write
 * that did not land (gone, or at another version) is a hold lost as far
 * as this model goes: the code reads the node and finds it not ours. */
inline mark_own() {
  lookup(apath, t);
  if
  :: t != NONE && nver[t] == 0 ->
     nver[t] = 1;
     printf("MSC: %d writes its mark on %d\n", i, apath);
#ifdef BUG_MARK_BLIND
     aver = 1
#else
     if :: OWNS_ON(t, asess) -> aver = 1 :: else -> lose() fi
#endif
  :: else -> lose()
  fi
}

/* zkl__queue_release(judge = 1), as the last zkl_mutex_unlock() calls it */
inline queue_release() {
  incs[i] = 0;
  judged = 1;
  hit = nrogue[aczx - 1];    /* someone else deleted our node before the call */
  if
  :: st[i] == S_LOST -> rc = ELOST
  :: else ->
     remove_node(1);
     rc = (res == ZNONODE || res == ZSESS -> ELOST : OK);
     /* OK means the hold was still ours when unlock was called: nobody
      * else had deleted our node (unless the delete could not be sent and
      * the verdict was only about the session) */
     assert(rc != OK || !judged || !hit)
  fi;
  printf("MSC: %d released: %d\n", i, rc);
  st[i] = S_NONE;
  judged = 0; res = 0;
  acq_free()
}

proctype user(byte i) {
  byte rc, res, pred, s, ep, ep2, cycle, natt, lrc, lpos, lpred;
  byte k, j, t, u, r1, r2, r3, r4, fate, jslot;    /* scratch */
  bit have_list, fresh, sole, judged, hit, aver, guarded;
#ifdef BUG_LEAN_UNLOCK
  bit ljd, lean;
#endif
  /* Atomic except where it blocks: the thread holds c->mu but while it
   * waits, and a wait whose condition already holds does not block (a
   * condition variable checked under its mutex). */
  do
  :: cycle < CYCLES ->
     atomic { queue_acquire() }
     if
     :: rc == OK ->
        /* the critical section: the client's threads run meanwhile */
        atomic { wc[i] = W_USER; mu[i] = 0 }
#if MARK
        if
        :: atomic { !aver && st[i] == S_HELD && asess != 0 ->
                    mu[i] = 1; wc[i] = W_NONE; mark_own(); wc[i] = W_USER; mu[i] = 0 }
        :: else
        fi;
#endif
        atomic { mu[i] = 1; wc[i] = W_NONE; queue_release() }
     :: else
     fi;
     atomic { cycle++; rc = 0 }
  :: else -> break
  od;
  atomic { wc[i] = W_USER; mu[i] = 0; fin++ }
}

#ifdef PEER
/* A Curator read-write writer (session PEER_S): joins, holds once no node
 * is before its write node, downgrades by creating a read node that
 * carries the write node's sequence (below anyone queued after it), drops
 * the write node, and releases. It never loses its session. */
proctype peer() {
  byte w, r, k, j, t, sq;
  atomic {
    assert(cnt < 16);
    sq = cnt; cnt++;
    w = nslots; new_slot(NAME(PEER_W, sq), PEER_S);
    printf("MSC: peer queues write node %d\n", NAME(PEER_W, sq))
  }
  atomic {
    /* the head: no live ephemeral node before it */
    !(nalive[0] && nown[0] != 0 && SEQ(nname[0]) < sq) &&
    !(nalive[1] && nown[1] != 0 && SEQ(nname[1]) < sq) &&
    !(nalive[2] && nown[2] != 0 && SEQ(nname[2]) < sq) &&
    !(nalive[3] && nown[3] != 0 && SEQ(nname[3]) < sq) &&
    !(nalive[4] && nown[4] != 0 && SEQ(nname[4]) < sq) &&
    !(nalive[5] && nown[5] != 0 && SEQ(nname[5]) < sq) &&
    !(nalive[6] && nown[6] != 0 && SEQ(nname[6]) < sq) &&
    !(nalive[7] && nown[7] != 0 && SEQ(nname[7]) < sq) &&
    !(nalive[8] && nown[8] != 0 && SEQ(nname[8]) < sq) &&
    !(nalive[9] && nown[9] != 0 && SEQ(nname[9]) < sq) &&
    !(nalive[10] && nown[10] != 0 && SEQ(nname[10]) < sq) &&
    !(nalive[11] && nown[11] != 0 && SEQ(nname[11]) < sq) &&
    !(nalive[12] && nown[12] != 0 && SEQ(nname[12]) < sq) &&
    !(nalive[13] && nown[13] != 0 && SEQ(nname[13]) < sq) ->
    peer_holds = 1;
    printf("MSC: peer holds (write)\n");
    j = 0;
    do
    :: j < N -> assert(!incs[j] || !(st[j] == S_HELD || st[j] == S_AT_RISK)); j++
    :: else -> break
    od
  }
  atomic {
    r = nslots; new_slot(NAME(PEER_R, sq), PEER_S);
    peer_holds = 2;
    printf("MSC: peer downgrades: read node %d, below later waiters\n", NAME(PEER_R, sq))
  }
  atomic { delete_slot(w); printf("MSC: peer deletes its write node\n") }
  atomic { delete_slot(r); peer_holds = 0; peer_done = 1; printf("MSC: peer releases\n") }
}
#endif

init {
  byte n;
  atomic {
    n = 0;
    do
    :: n < N ->
       cl_sess[n] = n + 1; salive[n + 1] = 1; conn[n] = 1;
       cl_state[n] = C_CONNECTED; cl_epoch[n] = 1; mu[n] = 1;
       a_path[n] = NONE; a_wpath[n] = NONE;
       ign[n * IG] = NONE; ign[n * IG + 1] = NONE;
       run client(n); run user(n);
       n++
    :: else -> break
    od;
#if ROGUE > 0
    run rogue();
#endif
#ifdef PEER
    salive[PEER_S] = 1;
    run peer();
#else
    peer_done = 1;
#endif
  }
}

#ifndef LIVE
/* Once nothing can move: every contender is done (no deadlock), and no
 * node of a live contender session is left (no orphan). */
active proctype quiet() {
  byte n;
  timeout ->
  assert(fin == N && peer_done);
  n = 0;
  do
  :: n < nslots ->
     assert(!(nalive[n] && nown[n] != 0 && salive[nown[n]]));
     n++
  :: else -> break
  od
}
#endif

#ifdef LIVE
/* Every acquisition ends: it holds or gives up. */
ltl live { [] ((acq[0] -> <> !acq[0]) && (acq[1] -> <> !acq[1])
#if N > 2
              && (acq[2] -> <> !acq[2])
#endif
              ) }
#endif
