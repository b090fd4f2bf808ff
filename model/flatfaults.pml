/* SPDX-License-Identifier: Apache-2.0 */
/* flatfaults.pml: the flat lock (ZKL_MUTEX_FLAT: lib/engine/flat.c, the flat
 * unlock of lib/engine/release.c (its guarded delete), the deferred
 * deletes of lib/zk/deferred.c, the create's stat and version of
 * lib/zk/batch.c's with_set, the client's own identity and the claim of
 * lib/engine/acq.c),
 * checked with spin under lost answers, expiry, cancels and shared
 * sessions (flat.pml checks it against a co-tenant). model/README.md
 * ("The flat lock under faults") says what is modelled and what is left
 * out; scripts/model.sh runs the checks.
 *
 * One ZooKeeper server and one name: at most one node there, with its
 * czxid, its ephemeralOwner (a session, 0 if persistent) and the guid its
 * data carries. N lock objects, each on a client of its own (SHARED:
 * objects 0 and 1 on one client, so one session), lock and unlock CYCLES
 * times; objects of one client share its identity (digest.c), and one
 * of them at a time has the claim on the name (zkl__claim_take). A node
 * an object makes is at data version 1 with its client's ACL (every
 * right to that identity alone). A request is applied and its answer
 * handled in one step: the
 * handling reads only the answer, and what it sends next goes in a later
 * step, so anything can happen between a reply and the next request. A
 * data watch is one-shot and fires when the node is deleted; its event is
 * the waiter's unless a later request of that object was applied first
 * (an event comes before the answer of any later request of its session,
 * and nobody waits for it then). A hostile session deletes the node, or
 * deletes it and makes it again at once with the same data (our guid
 * too), ephemeral on its own session or persistent, with a plain create:
 * at version 0, open to every writer.
 *
 * Properties:
 *   excl     where a hold begins, no other object holds (in its critical
 *            section, not LOST) unless the hostile deleted one of the two
 *            nodes: assert on incs[j]
 *   fencing  a hold's token is the czxid of the node there, ours, and
 *            greater than every token a hold began with before, unless the
 *            hostile deleted that node already: assert on maxtok
 *   foreign  a delete removes the node it meant (the czxid a read found
 *            ours), or another only when the hostile deleted the one meant
 *            between that read and the delete: assert((nz == meant ...
 *   unlock   an unlock says OK only if nobody else had deleted our node
 *            when it was called, unless its answer was lost and the
 *            session's verdict stood in: assert on judged
 *   orphan   once nothing can move, no node of a live client session is
 *            left: assert on salive[nown]
 *   stuck    once nothing can move, every object is done or waits behind
 *            the hostile's own node: assert((fin == ...
 *   live     (LIVE) every acquisition ends, under weak fairness
 *   (pan -l) (PROGRESS) no run goes round for ever without a hold
 *
 * Bounds (spin -DNAME=VALUE):
 *   N        lock objects, 2 or 3                                    [2]
 *   CYCLES   acquisitions of each                                    [1]
 *   SHARED   objects 0 and 1 on one client: one session
 *   CONN     answers lost with the connection (a write applied or not) [1]
 *   EXPIRE   session expiries                                        [0]
 *   GIVEUP   acquisitions cancelled while they read or wait          [1]
 *   ROGUE    hostile actions                                         [1]
 *   LIVE     the liveness claim instead of the end-state checks
 *   PROGRESS a progress label where a hold begins (pan -l)
 * Guards removed (model/README.md, "The flat lock under faults"):
 *   BUG_GUARD_ANY_ACL     the unlock's guard passes whoever made the node
 *   BUG_GUARD_ANY_VERSION the unlock's guard at any version
 *   BUG_NO_CLAIM     objects of one client acquire the name at once
 *   BUG_ADOPT_ANY    read_found() adopts a node our session owns, whatever
 *                    guid its data carries
 *   BUG_TOKEN_OTHER  a create's token from an exists after its transaction
 *                    (learn_stat(), owner test kept), not from the setData
 *                    inside it (with_set())
 *   BUG_RETRY_ANY    a waiter creates again before its watch fires
 *   BUG_PDEL_OWNER   a deferred delete takes a node our session owns,
 *                    whatever its czxid or guid
 *   BUG_NO_WATCH     the waiter's read sets no watch (a try's read)
 *   BUG_BLIND_RETRY  after a lost create reply, create again before reading
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
#ifndef ROGUE
#define ROGUE 1
#endif

#define HS 15         /* the hostile session; clients' are 1..14 */
#define OPEN 9        /* nacl: a plain create's ACL, open to all writers */
/* the identity of object i's client (SHARED: objects 0 and 1 share one) */
#ifdef SHARED
#define IDENT(i) ((i) == 1 -> 1 : (i) + 1)
#else
#define IDENT(i) ((i) + 1)
#endif
#define ZX 16         /* czxids 1..15; 0: no node */
#define PD 2          /* deferred deletes per object (c->pdel) */
/* a guid per acquisition (flat_top makes one per zkl__acq_t); 0 is the
 * hostile's own */
#define GUID(i, c) (1 + (i) + N * (c))
/* the session object i starts on (SHARED: object 1 on object 0's client);
 * after an expiry its client goes on with the session 3 above */
#ifdef SHARED
#define SID0(i) ((i) == 1 -> 1 : (i) + 1)
#else
#define SID0(i) ((i) + 1)
#endif

/* ZooKeeper codes */
#define ZOK 0
#define ZNONODE 1
#define ZEXISTS 2     /* ZNODEEXISTS */
/* what unlock returns */
#define OK 0
#define ELOST 10

/* where each object's run is */
#define P_START 0     /* zkl_mutex_lock(), or done */
#define P_CREATE 1    /* step_create, step_created */
#define P_LEARN 2     /* BUG_TOKEN_OTHER: learn_stat()'s exists */
#define P_READ 3      /* step_node_read, step_node_read_done, read_found */
#define P_WAIT 4      /* wait_begin .. step_node_watched */
#define P_HELD 5      /* a hold begins (the progress label) */
#define P_CS 6        /* the critical section, then the unlock's guarded
                       * delete */

#define S_NONE 0
#define S_HELD 1
#define S_LOST 2

/* ZooKeeper: the node at <root>/<name> */
byte zxid;            /* the last czxid given */
byte nz;              /* the node's czxid; 0: no node */
byte nown;            /* its ephemeralOwner: a session, 0 if persistent */
byte ng;              /* the guid its data carries */
byte nv;              /* its data version */
byte nacl;            /* the identity its ACL gives the write right, or OPEN */
byte claim[N];        /* per identity: the object (i + 1) with the claim */
bool ended[N];        /* object i has made all its acquisitions */
bool salive[16];
bool hdel[ZX];        /* the node made at z was deleted by the hostile, or by
                       * a delete the hostile let through (foreign) */
bool wt[N];           /* object i's data watch on the name */
bool ev[N];           /* its NodeDeleted, not taken yet */

/* the lock objects */
byte cs[N];           /* the session of object i's client (c->sess) */
byte pc[N], st[N], tok[N];
bool incs[N], acq[N];
byte maxtok;          /* the greatest token a hold began with */
byte fin;
byte fconn, fexp, fgive, nrog;  /* faults spent */

/* deferred deletes (lib/zk/deferred.c), PD slots per object */
byte pd_s[N * PD];    /* its session; 0: a free slot */
byte pd_z[N * PD];    /* only the node made at this czxid; 0: */
byte pd_g[N * PD];    /*   only one whose data carries this guid */
byte pd_m[N * PD];    /* read and found ours: its czxid; 0: not yet */

/* f := 0 answered, 1 applied and its answer lost, 2 lost before it was
 * applied. A read's lost answer is 2: it changed nothing, and the watch it
 * set went with the connection. */
inline fate(w) {
  if
  :: f = 0
  :: fconn < CONN -> fconn++; f = 2
  :: w && fconn < CONN -> fconn++; f = 1
  fi
}

/* The node goes: every watch on it fires. */
inline node_gone() {
  nz = 0; nown = 0; ng = 0; nv = 0; nacl = 0;
  k = 0;
  do
  :: k < N -> if :: wt[k] -> wt[k] = 0; ev[k] = 1 :: else fi; k++
  :: else -> break
  od
}

inline zk_create(x, gd) {
  if
  :: nz == 0 -> zxid++; assert(zxid < ZX); nz = zxid; nown = x; ng = gd; rc = ZOK;
     nv = 1; nacl = IDENT(i);
     printf("MSC: %d creates %d\n", i, nz)
  :: else -> rc = ZEXISTS
  fi
}

/* delete(path, -1), meaning the node made at `meant`, on a read that found
 * it ours (rk). The name is everybody's: if the hostile deleted that node
 * after our read and someone made another, ours deletes theirs (zklock.h:
 * the few milliseconds between read and delete); it is then the hostile's
 * doing, and so is the loss of the node deleted. */
inline zk_delete(meant, rk) {
  if
  :: nz == 0 -> rc = ZNONODE
  :: else ->
     printf("MSC: %d deletes %d, meaning %d\n", i, nz, meant);
     assert(nz == meant || (rk && hdel[meant]));
     if :: nz != meant -> hdel[nz] = 1 :: else fi;
     node_gone();
     rc = ZOK
  fi
}

/* zkl__defer_delete (czxid z) or zkl__defer_delete_guid (z 0, guid gd) */
inline defer(x, z, gd) {
  if
  :: pd_s[i * PD] == 0 -> k = i * PD
  :: else -> assert(pd_s[i * PD + 1] == 0); k = i * PD + 1
  fi;
  pd_s[k] = x; pd_z[k] = z; pd_g[k] = gd; pd_m[k] = 0;
  printf("MSC: %d defers the delete of czxid %d / guid %d\n", i, z, gd)
}

/* hold(): the node at z is ours. Where a hold begins: its token, then
 * mutual exclusion (a holder whose node the hostile deleted stays HELD
 * until told, then LOST: the token covers that window, not the lock). */
inline hold(z) {
  tok[i] = z;
  assert(hdel[tok[i]] || (tok[i] > maxtok && nz == tok[i] && nown == s));
  if :: tok[i] > maxtok -> maxtok = tok[i] :: else fi;
  j = 0;
  do
  :: j < N ->
     assert(j == i || !incs[j] || st[j] == S_LOST || hdel[tok[j]] || hdel[tok[i]]);
     j++
  :: else -> break
  od;
  st[i] = S_HELD; incs[i] = 1; acq[i] = 0; unsure = 0;
#ifdef PROGRESS
  pc[i] = P_HELD;
#else
  pc[i] = P_CS;
#endif
  printf("MSC: %d holds, token %d\n", i, tok[i])
}

/* flat_top on a new session: what we made died with the old one */
inline restart() { s = cs[i]; unsure = 0; pc[i] = P_CREATE }

inline drop_claim() {
  if :: claim[IDENT(i) - 1] == i + 1 -> claim[IDENT(i) - 1] = 0 :: else fi
}

inline next_cycle() { acq[i] = 0; unsure = 0; cyc++; pc[i] = P_START; drop_claim() }

/* flat_end(): a create whose fate is unknown is left to the deferred
 * deletes, by owner and guid */
inline flat_end() {
  if :: unsure && salive[s] -> defer(s, 0, g) :: else fi;
  next_cycle()
}

inline unlock_end() {
  assert(res != OK || !judged || !hit);
  printf("MSC: %d unlocks: %d\n", i, res);
  st[i] = S_NONE; judged = 0; hit = 0; res = 0;
  next_cycle()
}

#ifdef BUG_ADOPT_ANY
#define OURS (nown == s)
#else
#define OURS (nown == s && ng == g)
#endif

/* The release's guard: the version our create gave, and the write right
 * for our identity (the node's own ACL, or an open one) */
#if defined(BUG_GUARD_ANY_ACL)
#define GUARD (nv == 1)
#elif defined(BUG_GUARD_ANY_VERSION)
#define GUARD (nacl == IDENT(i) || nacl == OPEN)
#else
#define GUARD (nv == 1 && (nacl == IDENT(i) || nacl == OPEN))
#endif

/* Another object of this client has the claim on the name */
#ifdef BUG_NO_CLAIM
#define FREE_CLAIM (1)
#else
#define FREE_CLAIM (claim[IDENT(i) - 1] == 0 || claim[IDENT(i) - 1] == i + 1)
#endif

proctype user(byte i) {
  byte g, s, rc, res, f, k, j, cyc;
  bool unsure, judged, hit, rd;
end:
  do
  :: atomic { pc[i] == P_START && cyc < CYCLES && FREE_CLAIM ->
       claim[IDENT(i) - 1] = i + 1;
       g = GUID(i, cyc); s = cs[i]; acq[i] = 1; pc[i] = P_CREATE }
  :: atomic { pc[i] == P_START && cyc == CYCLES -> fin++; ended[i] = 1; break }
  :: atomic { pc[i] == P_CREATE ->
       /* step_create: ephemeral, its data with our guid= line. Alone,
        * its answer has the node's stat; in a group-commit transaction a
        * setData of the node at version 0 rides behind it (with_set), and
        * the setData's stat is that of the node the create made. */
       ev[i] = 0;
       fate(1);
       if
       :: !salive[s] -> restart()  /* a session error: restart_reconnected */
       :: salive[s] ->
          if :: f != 2 -> zk_create(s, g) :: else fi;
          if
          :: f != 0 -> unsure = 1;  /* made, maybe */
             printf("MSC: %d create's answer lost (%d)\n", i, f);
#ifdef BUG_BLIND_RETRY
             skip
#else
             pc[i] = P_READ  /* unsure_reconnected: read before any retry */
#endif
#ifdef BUG_TOKEN_OTHER
          :: f == 0 && rc == ZOK -> pc[i] = P_LEARN
#else
          :: f == 0 && rc == ZOK -> hold(nz)
#endif
          :: f == 0 && rc == ZEXISTS -> pc[i] = P_READ;
             printf("MSC: %d finds %d there\n", i, nz)
          fi
       fi;
       f = 0; rc = 0 }
#ifdef BUG_TOKEN_OTHER
  :: atomic { pc[i] == P_LEARN ->
       /* on_stat_learnt(): ours if our session owns what is there now */
       ev[i] = 0;
       if
       :: salive[s] && nz != 0 && nown == s -> hold(nz)
       :: else -> unsure = 1; pc[i] = P_READ  /* ZCONNECTIONLOSS: by guid */
       fi }
#endif
  :: atomic { pc[i] == P_READ && fgive < GIVEUP ->
       fgive++; printf("MSC: %d is cancelled\n", i); flat_end() }
  :: atomic { pc[i] == P_READ ->
       /* step_node_read: getData with a watch (behind a sync when unsure: one
        * server here, so it sees our create anyway) */
       ev[i] = 0;
       fate(0);
       if
       :: !salive[s] -> restart()
       :: salive[s] && f == 2 -> skip  /* node_read_reconnected: again */
       :: salive[s] && f == 0 && nz == 0 -> pc[i] = P_CREATE  /* released */
       :: salive[s] && f == 0 && nz != 0 ->
#ifndef BUG_NO_WATCH
          wt[i] = 1;
#endif
          if  /* read_found() */
          :: OURS -> printf("MSC: %d adopts %d\n", i, nz); hold(nz)
          :: !OURS && nown == 0 ->
             printf("MSC: %d EMISMATCH\n", i); flat_end()
          :: !OURS && nown != 0 -> pc[i] = P_WAIT;  /* wait_begin */
             printf("MSC: %d waits on %d\n", i, nz)
          fi
       fi;
       f = 0 }
  /* step_node_watched: our watch fired (deleted: create again), the session
   * ended (step_restart), or a cancel */
  :: atomic { pc[i] == P_WAIT && ev[i] -> ev[i] = 0; pc[i] = P_CREATE }
  :: atomic { pc[i] == P_WAIT && !salive[s] -> restart() }
  :: atomic { pc[i] == P_WAIT && fgive < GIVEUP ->
       fgive++; printf("MSC: %d is cancelled\n", i); flat_end() }
#ifdef BUG_RETRY_ANY
  :: atomic { pc[i] == P_WAIT -> pc[i] = P_CREATE }
#endif
#ifdef PROGRESS
  :: pc[i] == P_HELD ->
progress:
     pc[i] = P_CS
#endif
  :: atomic { pc[i] == P_CS ->
       /* zkl_mutex_unlock(): a LOST hold sends nothing; else the guarded
        * delete (send_guarded), one transaction: [setData at version 1,
        * which our identity alone may write, delete]. ZNONODE, ZNOAUTH,
        * ZBADVERSION: LOST, nothing deleted (after a ZBADVERSION the read
        * finds the node not ours, the same). A lost answer: deferred,
        * and the session's verdict. */
       incs[i] = 0;
       hit = hdel[tok[i]];
       judged = 1;
       if
       :: st[i] == S_LOST -> res = ELOST
       :: st[i] != S_LOST && !salive[s] -> res = ELOST
       :: st[i] != S_LOST && salive[s] ->
          ev[i] = 0;
          fate(1);
          rd = nz != 0 && GUARD;
          if :: f != 2 && rd -> zk_delete(tok[i], 0) :: else fi;
          if
          :: f != 0 -> defer(s, tok[i], 0); judged = 0;
             res = (salive[s] -> OK : ELOST)
          :: f == 0 -> res = (rd -> OK : ELOST)
          fi
       fi;
       unlock_end();
       f = 0; rd = 0; rc = 0 }
  od
}

/* zkl__pdel_run, on the client's event thread: read the node (getData by
 * guid, exists by czxid), delete it only if ours, read again after a lost
 * delete; dropped once its session is over (the node went with it). */
#ifdef BUG_PDEL_OWNER
#define PD_MINE (nz != 0 && nown == pd_s[x])
#else
#define PD_MINE (nz != 0 && nown == pd_s[x] && \
                 ((pd_z[x] != 0 && nz == pd_z[x]) || (pd_z[x] == 0 && ng == pd_g[x])))
#endif
inline pdel_run() {
  if
  :: pd_s[x] != cs[i] -> pd_s[x] = 0
  :: pd_s[x] == cs[i] && pd_m[x] == 0 ->  /* on_pdel_read */
     fate(0);
     if
     :: f == 2 -> skip
     :: f == 0 && PD_MINE -> pd_m[x] = nz
     :: f == 0 && !PD_MINE -> pd_s[x] = 0
     fi
  :: pd_s[x] == cs[i] && pd_m[x] != 0 ->  /* on_pdel_deleted */
     fate(1);
     /* the czxid it was given, or the one its guid's read found */
     m = (pd_z[x] != 0 -> pd_z[x] : pd_m[x]);
     if :: f != 2 -> zk_delete(m, 1) :: else fi;
     printf("MSC: %d deferred delete of %d (%d)\n", i, pd_m[x], f);
     if :: f == 0 -> pd_s[x] = 0 :: else -> pd_m[x] = 0 fi
  fi;
  f = 0; rc = 0; m = 0
}

proctype pdel(byte i) {
  byte x, f, k, rc, m;
end:
  do
  :: atomic { pd_s[i * PD] != 0 -> x = i * PD; pdel_run() }
  :: atomic { pd_s[i * PD + 1] != 0 -> x = i * PD + 1; pdel_run() }
  od
}

/* A session expires: its ephemeral node goes, its watches too; a hold on
 * it was told LOST before (acq.c's deadline: zklock.pml checks that), and
 * the client goes on with a new session. */
inline expire(x) {
  assert(x + 3 < HS);
  salive[x] = 0;
  printf("MSC: session %d expires\n", x);
  if :: nz != 0 && nown == x -> node_gone() :: else fi;
  j = 0;
  do
  :: j < N ->
     if
     :: cs[j] == x ->
        cs[j] = x + 3; salive[x + 3] = 1; wt[j] = 0;
        /* LOST (acq.c lose()): never released with a delete, its claim
         * is let go */
        if
        :: st[j] == S_HELD -> st[j] = S_LOST;
           if :: claim[IDENT(j) - 1] == j + 1 -> claim[IDENT(j) - 1] = 0 :: else fi
        :: else
        fi
     :: else
     fi;
     j++
  :: else -> break
  od
}

/* The hostile session, with open ACLs, and session expiry. */
proctype env() {
  byte k, j, gd;
end:
  do
  :: atomic { nrog < ROGUE && nz != 0 ->
       nrog++; hdel[nz] = 1;
       printf("MSC: the hostile deletes %d\n", nz);
       node_gone() }
  :: atomic { nrog < ROGUE && nz != 0 ->
       nrog++; hdel[nz] = 1; gd = ng;
       node_gone();
       zxid++; assert(zxid < ZX); nz = zxid; ng = gd; nv = 0; nacl = OPEN;
       if :: nown = HS :: nown = 0 fi;
       printf("MSC: the hostile re-creates it as %d (owner %d)\n", nz, nown);
       gd = 0 }
  :: atomic { fexp < EXPIRE -> fexp++; gd = cs[0]; expire(gd); gd = 0 }
  :: atomic { fexp < EXPIRE -> fexp++; gd = cs[N - 1]; expire(gd); gd = 0 }
  od
}

init {
  byte i;
  atomic {
    do
    :: i < N -> cs[i] = SID0(i); salive[cs[i]] = 1; run user(i); run pdel(i); i++
    :: else -> break
    od;
    salive[HS] = 1;
    run env()
  }
}

#ifndef LIVE
/* Once nothing can move: every object is done or waits behind the
 * hostile's own node (held, as a lock is), and no node of a live client
 * session is left. */
active proctype quiet() {
  byte k, w;
  timeout ->
  do
  :: k < N ->
     if
     :: pc[k] == P_WAIT -> w++
     /* waits for the claim of an object of its client that waits */
     :: pc[k] == P_START && !ended[k] && claim[IDENT(k) - 1] != 0 &&
        claim[IDENT(k) - 1] != k + 1 && pc[claim[IDENT(k) - 1] - 1] == P_WAIT -> w++
     :: else
     fi;
     k++
  :: else -> break
  od;
  assert(fin == N - w && (w == 0 || nown == HS));
  assert(!(nz != 0 && nown != 0 && nown != HS && salive[nown]))
}
#endif

#ifdef LIVE
/* Every acquisition ends. */
ltl live { [] ((acq[0] -> <> !acq[0]) && (acq[1] -> <> !acq[1])
#if N > 2
              && (acq[2] -> <> !acq[2])
#endif
              ) }
#endif
