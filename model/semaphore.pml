/* semaphore.pml: the counting semaphore (lib/recipes/semaphore.c over the
 * queue engine: lib/base/policy.c decide_lease and our_lease,
 * lib/engine/acquire.c position, step_wait_eval, step_read_done, wait_end,
 * lib/engine/recover.c zkl__step_agree, lib/engine/run.c settle,
 * lib/engine/release.c zkl__relay and zkl__queue_release), checked with
 * spin. model/README.md ("The semaphore") says what is modelled and what
 * is left out; scripts/model.sh runs the checks.
 *
 * One directory, a queue of leases in creation order (one server: a
 * create is applied at once and goes last; the queue is compact, a
 * delete shifts the nodes after it). A lease is a sequence number, its
 * owner, the N its name carries (<guid>-n<N>-lease-<seq>) and whether it
 * is marked "state=held". The directory has its data, "max=N" (0: no
 * data), and a stamp that changes with every write and every incarnation
 * (czxid and data version, as the listing's stat carries them).
 *
 * Processes:
 *   member  a process with its own client, session and semaphore object
 *           of LIM[p] leases: acquires, holds, releases, CYCLES times.
 *           Each step is one atomic action of the server, or a decision
 *           taken on what the last reply said (the listing is judged when
 *           it is taken: position() is a pure function of it)
 *   rogue   (ROGUE) a co-tenant rewriting the directory's data: "max=K"
 *           for any K of 1..3, or no data
 *   reaper  (REAP) the server deleting the directory, a container, once
 *           it is empty; whoever joins next makes it with its own max=N
 *
 * Which N gets in (issue 34): the directory's max=N, as each member reads
 * it once its node is made; a lease of another N before ours is in our
 * way as a lock is (we wait behind it), never a reason to refuse. Without
 * a rogue, checked at every grant (the member's N is the directory's) and
 * at every refusal (it is not): exactly one N is admitted, every member of
 * it in the end (nothing stuck), and every member of another N refused.
 *
 * Bounds (spin -DNAME=VALUE):
 *   M         members (ids 0..M-1, M <= 4)                            [3]
 *   L0..L3    each member's N                                         [2]
 *   CYCLES    acquisitions per member                                 [1]
 *   GIVEUP    waits cancelled or timed out                            [0]
 *   EXPIRE    session expiries (a holder is told LOST first)          [0]
 *   LOSTMARK  relay marks lost with the connection                    [0]
 *   LISTLOST  join listings whose reply is lost with the connection   [0]
 *             (the create's reply came)
 *   ROGUE     rewrites of the directory's data                        [0]
 *   REAP      deletions of the empty directory                        [0]
 *   BARE      the directory there from the start, with no data (an
 *             operator's, or another recipe's): the first conditional
 *             write of a max=N decides                                [off]
 *   LIVE      the liveness claim instead of the end-state checks
 *             (run pan with -a -f); with STAY, holders that may keep
 *             their lease for ever
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_NO_NAME_N     lease names carry no N (the code before 9ec2af9:
 *                     the directory alone says N)
 *   BUG_HANDOFF_ANY   a later waiter takes its predecessor's deletion
 *                     for a grant, as the first waiter does
 *   BUG_WATCH_NEAREST the first waiter watches its nearest holder only
 *   BUG_NO_RELAY      no "state=held" mark on a grant after a wait
 *   BUG_RELAY_WAITED  the mark only after a wait, not for a lease granted
 *                     at its first look with someone behind it
 *   BUG_NO_POLL       a later waiter never lists again on its own
 *   BUG_NO_DELETE     the release does not delete the node
 *   BUG_KEEP_REFUSED  a refused member (ZKL_EMISMATCH) keeps its node
 *   BUG_NO_DIR        the directory's max=N is not read (every member
 *                     agrees with it)
 *   BUG_UNREAD_DIR    the code before F5's fix (model/README.md,
 *                     "Findings"): a join that did not read the directory
 *                     (the object agreed with it before) and lost its
 *                     listing takes the unsent read for a directory
 *                     without data; the fix reads it first
 *   BUG_REFUSE_LEASE  the code before issue 34's fix: a member refuses
 *                     while a live lease before its own carries another
 *                     N, and one whose N the directory does not say joins
 *                     if live leases before it carry its N (BUG_SUPPORT)
 *   BUG_SUPPORT       that second half alone: a refused member's lease,
 *                     not deleted yet, lets in the next of its N
 *   BUG_STALE_DIR     the code before issue 34's fix: a join whose
 *                     listing was lost judges the read sent before its
 *                     create (of an earlier incarnation, maybe)
 *   BUG_POLL_NO_OTHERS the code before issue 34's fix: a waiter behind a
 *                     node of another kind never polls, even when its
 *                     nearest node is a lease of its N (whose mark may be
 *                     lost)
 */

#ifdef BUG_REFUSE_LEASE
#define BUG_SUPPORT
#endif

#ifndef M
#define M 3
#endif
#ifndef L0
#define L0 2
#endif
#ifndef L1
#define L1 2
#endif
#ifndef L2
#define L2 2
#endif
#ifndef L3
#define L3 2
#endif
#ifndef CYCLES
#define CYCLES 1
#endif
#ifndef GIVEUP
#define GIVEUP 0
#endif
#ifndef EXPIRE
#define EXPIRE 0
#endif
#ifndef LOSTMARK
#define LOSTMARK 0
#endif
#ifndef ROGUE
#define ROGUE 0
#endif
#ifndef REAP
#define REAP 0
#endif
#ifndef STAY
#define STAY 0
#endif
#ifndef LISTLOST
#define LISTLOST 0
#endif

#define QS 4 /* the queue's room: M <= QS, one node per member at most */

/* ZooKeeper: the directory's children, in sequence order; slot QS stays
 * empty (the node after the last one) */
byte qs[QS + 1];   /* sequence, 0: no node */
byte qo[QS + 1];   /* owner + 1 */
byte qn[QS + 1];   /* the N its name carries (0: none, an older version's) */
bool qm[QS + 1];   /* its data says "state=held" */
byte seqc;         /* the directory's sequence counter */
bool dexists;      /* the directory */
byte dirN;         /* its data, "max=N"; 0: no data */
byte dstamp;       /* its (czxid, data version) */
byte dver;         /* its data version */
byte dst;          /* the stamps handed out */
bool ruled;        /* issue 34's rule, checked (see RULED) */

/* the members */
byte LIM[M];       /* each one's N */
byte mine[M];      /* its node's sequence, 0: none */
bool inq[M];       /* acquiring: not granted, refused or given up yet */
byte holding[M];   /* 1: in its critical section, counted; 2: told LOST */
byte fin;
byte giveups = GIVEUP;
byte expiries = EXPIRE;
byte lostmarks = LOSTMARK;
byte stays = STAY;
byte listlost = LISTLOST;

#define IN(s) ((s) != 0 && (qs[0] == (s) || qs[1] == (s) || qs[2] == (s) || qs[3] == (s)))
#define GONE(s) ((s) != 0 && !IN(s))
#define MARKED(s) ((s) != 0 && ((qs[0] == (s) && qm[0]) || (qs[1] == (s) && qm[1]) || \
                                (qs[2] == (s) && qm[2]) || (qs[3] == (s) && qm[3])))
/* member p waits with fewer than its N leases before it */
#define FREE(p) (inq[p] && mine[p] != 0 && (qs[0] == mine[p] || \
                 (LIM[p] > 1 && qs[1] == mine[p]) || (LIM[p] > 2 && qs[2] == mine[p])))

/* The rule holds while nobody but members writes the directory: its N
 * then never changes in one incarnation (made with a max=N, or without
 * data and given one once). BUG_NO_DIR agrees with any directory. */
#if ROGUE == 0 && !defined(BUG_NO_DIR)
#define RULED(c) ruled = (c); assert(ruled); ruled = 0
#else
#define RULED(c) skip
#endif

#ifdef BUG_NO_NAME_N
#define NAMEN(p) 0
#else
#define NAMEN(p) LIM[p]
#endif

/* a create: the node goes last */
inline append(p, s) {
  i = 0;
  do
  :: qs[i] == 0 -> qs[i] = s; qo[i] = p + 1; qn[i] = NAMEN(p); qm[i] = 0; break
  :: else -> i++
  od;
  i = 0
}

/* a delete, if the node is there */
inline remove(s) {
  i = 0;
  do
  :: i < QS && qs[i] != s -> i++
  :: else -> break
  od;
  do
  :: i < QS -> qs[i] = qs[i + 1]; qo[i] = qo[i + 1]; qn[i] = qn[i + 1]; qm[i] = qm[i + 1]; i++
  :: else -> break
  od;
  i = 0
}

/* Member steps (st) */
#define S_IDLE 0    /* between acquisitions */
#define S_CREATE 1  /* step_join: the create, sent */
#define S_LIST0 2   /* the listing pipelined with it */
#define S_REREAD 3  /* zkl__step_agree: the directory read again */
#define S_SET 4     /* step_agree_set: our max=N written, conditionally */
#define S_FIRST 5   /* waiting: the first waiter, watching the holders */
#define S_LATER 6   /* waiting: a later waiter, watching its predecessor */
#define S_HELD 8    /* in the critical section */
#define S_JOIN 9    /* joining again in the same run (ZKL__RETRY) */
#define S_RELIST 10 /* step_list_start: a listing after the join's was lost */
#define S_BEHIND 11 /* waiting behind a node of another N, which only goes */

/* position(): what a listing says, judged when it is taken */
#define P_HOLD 1
#define P_FIRST 2
#define P_LATER 3
#define P_REFUSE 4
#define P_GONE 5
#define P_BEHIND 6

/* position() with zkl__decide() -> decide_lease() (and, for the mutants,
 * the code before issue 34: zkl__lease_disagrees() and leases_agree() on
 * the same listing): every node is a lease; one of another N before ours
 * is in our way as a lock is: we watch the nearest node and list again
 * when it goes or is marked, polling only if that is a lease of our N;
 * else the first waiter (exactly N before it) watches them all, a later
 * one its predecessor */
inline look(p) {
  i = 0;
  do
  :: i < QS && qs[i] != mine[p] -> i++
  :: else -> break
  od;
  la = 0; dis = 0; k = 0;
  if
  :: mine[p] == 0 || i == QS -> plan = P_GONE
  :: else ->
     do
     :: k < i ->
        if
        :: qn[k] == 0
        :: qn[k] != 0 && qn[k] == LIM[p] -> la = 1
        :: qn[k] != 0 && qn[k] != LIM[p] -> dis = 1
        fi;
        k++
     :: else -> break
     od;
     la = la && !dis;
     behind = qs[i + 1] != 0; /* zkl__any_after() */
     w0 = 0; w1 = 0; w2 = 0; pred = 0;
     if
#ifdef BUG_REFUSE_LEASE
     :: dis -> plan = P_REFUSE
#elif defined(BUG_POLL_NO_OTHERS)
     :: dis -> plan = P_BEHIND; pred = qs[i - 1]
#else
     :: dis -> pred = qs[i - 1];
        if
        :: qn[i - 1] == 0 || qn[i - 1] == LIM[p] -> plan = P_LATER
        :: else -> plan = P_BEHIND
        fi
#endif
     :: !dis && i < LIM[p] -> plan = P_HOLD
#ifdef BUG_WATCH_NEAREST
     :: !dis && i == LIM[p] -> plan = P_FIRST; w0 = qs[i - 1]
#else
     :: !dis && i == LIM[p] -> plan = P_FIRST; w0 = qs[0];
        if :: i > 1 -> w1 = qs[1] :: else fi;
        if :: i > 2 -> w2 = qs[2] :: else fi
#endif
     :: !dis && i > LIM[p] -> plan = P_LATER; pred = qs[i - 1]
     fi
  fi;
  i = 0; k = 0
}

/* settle(): the hold granted; the exclusion property checked */
inline grant(p) {
  holding[p] = 1; inq[p] = 0; st = S_HELD;
  i = 0;
  do
  :: i < QS && qs[i] != mine[p] -> i++
  :: else -> break
  od;
  k = 0; lholders = 0; lmin = 255; lmax = 0;
  do
  :: k < M ->
     if
     :: holding[k] == 1 -> lholders++;
        if :: LIM[k] < lmin -> lmin = LIM[k] :: else fi;
        if :: LIM[k] > lmax -> lmax = LIM[k] :: else fi
     :: else
     fi;
     k++
  :: else -> break
  od;
  printf("MSC: %d (N=%d) holds %d, %d holders\n", p, LIM[p], mine[p], lholders);
  /* never more holders than the smallest N among them; never two
   * holders of different N (zklock.h: "never granted together") */
  assert(lholders <= lmin && lmax == lmin);
  RULED(dirN == LIM[p]); /* the directory's N, and only it, gets in */
  k = 0; lholders = 0; lmin = 0; lmax = 0;
  /* zkl__relay(), when due: setData "state=held" at version 0, not
   * waited for (the release's delete comes after it on the same
   * session); lost with the connection, it is never applied */
#if defined(BUG_NO_RELAY)
  relay = 0;
#elif defined(BUG_RELAY_WAITED)
  relay = waited;
#else
  relay = waited || behind; /* settle()'s relay_due */
#endif
  if
  :: relay && i < QS && lostmarks > 0 -> lostmarks--; printf("MSC: %d's relay mark is lost\n", p)
  :: relay && i < QS -> qm[i] = 1; printf("MSC: %d marks %d held\n", p, mine[p])
  :: else
  fi;
  relay = 0; w0 = 0; w1 = 0; w2 = 0; pred = 0; behind = 0; waited = 0; la = 0; i = 0
}

/* zkl__drop_node(): our node deleted, the acquisition over */
inline drop(p) {
  remove(mine[p]); mine[p] = 0; inq[p] = 0; c++; st = S_IDLE
}

/* a refusal (ZKL_EMISMATCH): settle() deletes the node */
#ifdef BUG_KEEP_REFUSED
#define REFUSE(p) printf("MSC: %d refused, keeps %d\n", p, mine[p]); RULED(dirN != LIM[p]); mine[p] = 0; inq[p] = 0; c++; st = S_IDLE
#else
#define REFUSE(p) printf("MSC: %d refused\n", p); RULED(dirN != LIM[p]); drop(p)
#endif

/* what a listing's plan leads to; `fresh`: the listing came with our
 * create (confirm() needs no read), else the read of our own node (it is
 * there, or the expiry would have restarted us) */
inline act(p) {
  la = 0;
  if
  :: plan == P_HOLD -> grant(p)
  :: plan == P_FIRST -> st = S_FIRST; waited = 1;
     printf("MSC: %d waits first, behind %d %d %d\n", p, w0, w1, w2)
  :: plan == P_LATER -> st = S_LATER; waited = 1;
     printf("MSC: %d waits behind %d\n", p, pred)
  :: plan == P_BEHIND -> st = S_BEHIND; waited = 1;
     printf("MSC: %d waits behind %d, a lease of another N before it: no poll\n", p, pred)
  :: plan == P_REFUSE -> REFUSE(p)
  :: plan == P_GONE -> st = S_JOIN /* not without an expiry, which restarts us */
  fi;
  plan = 0
}

/* agreed(): the join's listing judged, or a new one (step_list_start)
 * if there is none */
inline agreed(p) {
  if
  :: have -> act(p)
  :: else -> st = S_RELIST; plan = 0
  fi;
  have = 0
}

/* zkl__step_agree() on the directory read gdN (stamp gdS, data version
 * gdV), then agreed() */
inline agree(p) {
  if
  :: gdN == LIM[p] -> cS = gdS; gdN = 0; gdS = 0; gdV = 0; agreed(p)
  :: gdN != 0 && gdN != LIM[p] ->
     cS = 0;
     if
#ifdef BUG_SUPPORT
     :: la -> gdN = 0; gdS = 0; gdV = 0; agreed(p) /* the live leases before ours say our N */
#endif
     :: else -> printf("MSC: %d: the directory says max=%d\n", p, gdN); gdN = 0; gdS = 0; gdV = 0; la = 0; plan = 0; have = 0; REFUSE(p)
     fi
  :: gdN == 0 -> st = S_SET /* no data: ours, by a conditional write */
  fi
}

proctype member(byte p) {
  byte st, c, i, k, lholders, lmin, lmax, plan, w0, w1, w2, pred;
  byte gdN, gdS, gdV, lsS, cS; /* the directory read with the join, the listing's stamp, the one agreed */
  bool la, dis, behind, waited, relay, have;
end:
  do
  /* step_join(): the directory made first if missing (with our max=N),
   * and read unless this object agreed with it already */
  :: atomic { ((st == S_IDLE && c < CYCLES) || st == S_JOIN) ->
       if :: st == S_IDLE -> waited = 0 :: else fi; /* a new run */
       inq[p] = 1;
       if
       :: !dexists -> dexists = 1; dirN = LIM[p]; dver = 0; dst++; dstamp = dst;
          printf("MSC: %d makes the directory, max=%d\n", p, dirN)
       :: else
       fi;
#ifdef BUG_NO_DIR
       gdS = 0;
#else
       /* not sent: r->gd as zkl__prep() left it, ZOK and all zero */
       if :: cS == 0 -> gdN = dirN; gdS = dstamp; gdV = dver :: else -> gdN = 0; gdS = 0; gdV = 0 fi;
#endif
       st = S_CREATE }
  /* the create (ZNONODE: the directory made again, zkl__step_mkdir) */
  :: atomic { st == S_CREATE ->
       if
       :: dexists -> seqc++; mine[p] = seqc; append(p, seqc); st = S_LIST0;
          printf("MSC: %d (N=%d) creates %d\n", p, LIM[p], seqc)
       :: else -> st = S_JOIN
       fi }
  /* the listing, and zkl__joined(): agreed if the directory's stamp is
   * the one agreed with, or else judged on the read sent before the
   * create if that is of the same stamp, or else read again */
  :: atomic { st == S_LIST0 ->
       look(p); lsS = dstamp; have = 1;
       if
       :: listlost > 0 -> listlost--; have = 0; la = 0; /* (BUG_SUPPORT) leases_agree() needs a listing */
          printf("MSC: %d's listing is lost\n", p)
       :: true
       fi;
#ifdef BUG_NO_DIR
       agreed(p)
#else
       if
       :: have && cS != 0 && lsS == cS -> agreed(p)
       :: have && !(cS != 0 && lsS == cS) && gdS != lsS -> st = S_REREAD
       :: have && !(cS != 0 && lsS == cS) && gdS == lsS -> agree(p)
#ifdef BUG_UNREAD_DIR
       :: !have -> agree(p) /* r->gd as it is: read, or never sent */
#elif defined(BUG_STALE_DIR)
       /* step_join(): r->gd unsent is marked unread, and read here */
       :: !have && gdS == 0 -> st = S_REREAD
       :: !have && gdS != 0 -> agree(p)
#else
       /* zkl__joined(): with no listing to tell whether the read sent
        * before our create still holds, read the directory again */
       :: !have -> st = S_REREAD
#endif
       fi;
       lsS = 0
#endif
     }
  :: atomic { st == S_REREAD -> gdN = dirN; gdS = dstamp; gdV = dver; agree(p) }
  /* step_agree_set(): setData at the data version read; the directory
   * (czxid, version) kept as agreed with */
  :: atomic { st == S_SET ->
       if
       :: dver == gdV ->
          printf("MSC: %d writes max=%d over max=%d (version %d)\n", p, LIM[p], dirN, dver);
          /* a member writes its max=N only where there is none (or
           * its own: a version more, harmless) */
          assert(dirN == 0 || dirN == LIM[p]);
          dirN = LIM[p]; dver++; dst++;
          if :: dstamp == gdS -> cS = dst :: else -> cS = 0 fi;
          dstamp = dst; gdS = 0; gdV = 0; agreed(p)
       :: else -> st = S_REREAD
       fi }
  /* the first waiter: any of the holders it watches deleted, the zero-read
   * hand-off (p->any, p->handoff), then confirm() */
  :: atomic { st == S_FIRST && (GONE(w0) || GONE(w1) || GONE(w2)) ->
       printf("MSC: %d takes the lease freed\n", p); grant(p) }
  /* a later waiter: its predecessor deleted or marked held (its watch,
   * or the read that set it: step_read_done), lists again: step_list(),
   * step_position() (the listing taken at once: its condition stays
   * true, and the member may take this step at any later time) */
#ifdef BUG_HANDOFF_ANY
  :: atomic { st == S_LATER && GONE(pred) -> printf("MSC: %d takes %d's delete\n", p, pred); grant(p) }
  :: atomic { st == S_LATER && MARKED(pred) -> look(p); act(p) }
#else
  :: atomic { st == S_LATER && (GONE(pred) || MARKED(pred)) -> look(p); act(p) }
#endif
#ifndef BUG_NO_POLL
  /* or after ZKL__POLL_MS (p->poll): a relay may have been lost */
  :: atomic { st == S_LATER -> printf("MSC: %d polls\n", p); look(p); act(p) }
#endif
  /* behind a node of another N: its deletion, or its mark (its watch, or
   * the read that set it), and no poll */
  :: atomic { st == S_BEHIND && (GONE(pred) || MARKED(pred)) -> look(p); act(p) }
  /* step_list() after the join's listing was lost */
  :: atomic { st == S_RELIST -> look(p); act(p) }
  /* a cancel or a deadline ends a wait */
  :: d_step { (st == S_FIRST || st == S_LATER || st == S_BEHIND) && giveups > 0 ->
       giveups--; printf("MSC: %d gives up\n", p); drop(p) }
  /* zkl_lease_release() -> zkl__queue_release(): a LOST hold's node is
   * gone already; else it is deleted */
  :: d_step { st == S_HELD ->
       printf("MSC: %d releases\n", p);
#ifndef BUG_NO_DELETE
       if :: holding[p] == 1 -> remove(mine[p]) :: else fi;
#endif
       holding[p] = 0; mine[p] = 0; c++; st = S_IDLE }
#if STAY > 0
  /* a holder that keeps its lease for ever */
  :: atomic { st == S_HELD && stays > 0 -> stays--; printf("MSC: %d keeps its lease\n", p);
end_stay:
       false }
#endif
  /* the session expires: its node goes; a holder was told LOST first
   * (zklock.pml); a member still acquiring joins again (ZKL__RETRY) */
  :: d_step { expiries > 0 && mine[p] != 0 ->
       expiries--; printf("MSC: %d's session expires\n", p);
       remove(mine[p]); mine[p] = 0;
       if
       :: st == S_HELD -> if :: holding[p] == 1 -> holding[p] = 2 :: else fi
       :: else -> st = S_JOIN /* the same run joins again */
       fi }
  :: atomic { st == S_IDLE && c >= CYCLES -> fin++; break }
  od
}

#if ROGUE > 0
/* a co-tenant rewrites the directory: setData at version -1 */
proctype rogue() {
  byte left = ROGUE;
end:
  do
  :: atomic { left > 0 && dexists -> left--;
       if :: dirN = 0 :: dirN = 1 :: dirN = 2 :: dirN = 3 fi;
       dver++; dst++; dstamp = dst;
       printf("MSC: rogue writes max=%d into the directory\n", dirN) }
  od
}
#endif

#if REAP > 0
/* the container, empty, is deleted */
proctype reaper() {
  byte left = REAP;
end:
  do
  :: atomic { left > 0 && dexists && qs[0] == 0 -> left--; dexists = 0; dirN = 0; dver = 0;
       printf("MSC: the empty directory is deleted\n") }
  od
}
#endif

init {
  byte p;
  atomic {
    assert(M <= QS);
#ifdef BARE
    dexists = 1; dst = 1; dstamp = 1;
#endif
    LIM[0] = L0;
#if M > 1
    LIM[1] = L1;
#endif
#if M > 2
    LIM[2] = L2;
#endif
#if M > 3
    LIM[3] = L3;
#endif
    p = 0;
    do
    :: p < M -> run member(p); p++
    :: else -> break
    od;
#if ROGUE > 0
    run rogue();
#endif
#if REAP > 0
    run reaper();
#endif
    p = 0
  }
}

#ifndef LIVE
/* Nothing can move: every member is done, and no lease is left. */
active proctype quiet() {
  bool left;
  timeout ->
  assert(fin == M);
  left = qs[0] != 0;
  assert(!left) /* every lease node deleted */
}
#else
/* A member that waits with fewer than its N leases before it holds in
 * the end (or gives up, or is refused): no one waits so for ever. */
#if M > 3
#define STARVED (FREE(0) || FREE(1) || FREE(2) || FREE(3))
#elif M > 2
#define STARVED (FREE(0) || FREE(1) || FREE(2))
#else
#define STARVED (FREE(0) || FREE(1))
#endif
ltl live { [] <> !STARVED }
#endif
