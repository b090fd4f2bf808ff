/* SPDX-License-Identifier: Apache-2.0 */
/* revoke.pml: revocation of a hold (lib/recipes/revoke.c ask, wait_gone,
 * revoke_paths; lib/base/nodedata.c's revoke lines), the hold's own-node
 * watch (lib/engine/acq.c own_event, on_verified), its guarded writes
 * (lib/engine/guard.c zkl__guarded, build's check op, judge) and its own
 * writes on its node (lib/engine/marks.c zkl__relay,
 * zkl__queue_downgrade), checked with spin. model/README.md
 * ("Revocation") says what is modelled and what is left out;
 * scripts/model.sh runs the checks.
 *
 * H holds (its node N0 is first) and does guarded writes to a shared node
 * S: one transaction, a check of N0 at the data version H last found
 * intact, then the write. H may be paused between building the
 * transaction and sending it. H may also write N0's data itself (a
 * semaphore's relay mark, or a downgrade's). Revokers ask (read N0, add
 * their line, setData at the version read, again on ZBADVERSION), then,
 * the grace period over, delete N0 by its name (forced). C, queued behind
 * N0, holds once N0 is gone and does guarded writes to S too.
 *
 * Properties:
 *   fenced   no guarded write of H commits once N0 was forcibly deleted,
 *            nor after one of C's: assert(!forced && !cwrote) at commit
 *   revline  a revoker's line, once written, stays in N0's data for as
 *            long as N0 lives (two revokers, H's own write):
 *            assert((ndata & asked) == asked) at every setData
 *   live     (LIVE) a request, once written, ends H's hold and C holds:
 *            the revokers force it after the grace period (GRACE), or H,
 *            cooperative (COOP), hears it and releases, even if H would
 *            otherwise keep its hold for ever (STAY): [] <> !STARVED
 *
 * Bounds (spin -DNAME=VALUE):
 *   GW        guarded writes H tries                                 [2]
 *   GC        guarded writes C does                                  [1]
 *   REVOKERS  revokers, 1 or 2                                       [2]
 *   OWNW      H's own write of N0: 0 none, 1 the relay (zkl__relay),
 *             2 the downgrade (zkl__queue_downgrade)                 [1]
 *   GRACE     1: the revokers force after the grace period (grace_ms
 *             >= 0); 0: they only ask (grace_ms < 0)                 [1]
 *   STAY      H's user may keep the hold after its writes: until it
 *             hears the request (COOP), or for ever
 *   COOP      H's user releases once the hold says REVOKE_REQUESTED
 *   WAITED    H's hold follows a wait behind a node P: its own-node
 *             watch was set while it waited (step_wait) and carries over
 *             to the hold; the revokers ask once P is gone, which H's
 *             client may hear of later
 *   LIVE      the liveness claim instead of the end-state check (run
 *             pan with -a -f)
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_DOWNGRADE_FRESH  (with OWNW=2) the code before F6's fix: the
 *                   downgrade's retry writes data built before it read
 *   BUG_NO_CHECK    the guarded write without the check of N0
 *   BUG_REVOKE_ANY  the revoker's setData at version -1
 *   BUG_OWN_ANY     H's own write at version -1
 *   BUG_EVENT_GONE  wait_gone() takes any event on N0 for its deletion
 *                   (no exists again): no forced delete
 *   BUG_NO_REREAD   own_event() does not read N0 again after a change,
 *                   so H's watch is not set again
 *   BUG_F9          (with WAITED) the code before F9's fix: a request
 *                   read while H still waits is not kept, and the hold
 *                   that follows starts HELD, its watch already on
 */

#ifndef GW
#define GW 2
#endif
#ifndef GC
#define GC 1
#endif
#ifndef REVOKERS
#define REVOKERS 2
#endif
#ifndef OWNW
#define OWNW 1
#endif
#ifndef GRACE
#define GRACE 1
#endif
#ifndef STAY
#define STAY 0
#endif
#ifndef COOP
#define COOP 0
#endif
#define VERSION_TRIES 3   /* guard.c */
#define DOWNGRADE_TRIES 3 /* marks.c */

/* N0's header lines beyond the creator's, a bit each: revoker r's
 * "revoke=<nonce>,<grace>" line, and H's status line (mode=read or
 * state=held) */
#define RQ(r) (1 << (r))
#define MK 4
#define NONODE 255 /* a read's answer: no node */

mtype = { EV_CHG, EV_DEL, R_GET, EV_PDEL };
chan hin = [3] of { mtype, byte, byte }; /* H's session: events and replies */

/* ZooKeeper: N0, N1 (C's node), S */
bool nexists = 1;
byte ndata;         /* the lines above; the creator's own are always there */
byte nver;          /* N0's data version */
bool hwatch;        /* H's data watch on N0 */
bool n1exists = 1;
byte swrites;       /* commits to S */
bool rvwatch[2];    /* revoker r's exists watch on N0 (wait_gone) */
bool rvev[2];       /* ... fired: c->node_events moved */

/* what happened, for the assertions */
byte asked;         /* revokers whose line a setData committed */
bool forced;        /* a revoker deleted N0 */
bool cwrote;        /* C committed a write to S */
bool cheld;         /* C holds (or held) */

/* H, its client's view (under c->mu) */
#define WAITING 0 /* its acquire still runs */
#define HELD 1
#define LOST 2    /* a hold lost, or a wait ended for its node gone */
#ifdef WAITED
byte hst = WAITING;
bool pexists = 1;   /* P, the node H waits behind */
bool hrun;          /* H's run is done (the hand-off), not yet settled */
#else
byte hst = HELD;
#define pexists 0
#endif
bool rasked;        /* a->revoke_asked: REVOKE_REQUESTED */
byte hdv;           /* a->dversion */
#define OWN_NONE 0
#define OWN_PENDING 1
#define OWN_OK 2
byte own = OWN_NONE;
#ifdef WAITED
bool hdue;          /* a->watch_due: set by settle() if no watch is on */
#else
bool hdue = 1;      /* a->watch_due: the own-node watch is still to be set */
#endif
byte fin;

/* the revokers' watches on N0 fire */
inline rv_fire() {
  if :: rvwatch[0] -> rvwatch[0] = 0; rvev[0] = 1 :: else fi;
  if :: rvwatch[1] -> rvwatch[1] = 0; rvev[1] = 1 :: else fi
}

/* setData of N0 applied (the caller checked the version); `line`: the
 * revoker whose write it is, 0 for H's */
inline set_n0(d, line) {
  ndata = d;
  nver++;
  asked = asked | line;
  if :: hwatch -> hwatch = 0; hin!EV_CHG, 0, 0 :: else fi;
  rv_fire();
  assert((ndata & asked) == asked)
}

inline delete_n0() {
  nexists = 0;
  if :: hwatch -> hwatch = 0; hin!EV_DEL, 0, 0 :: else fi;
  rv_fire()
}

/* zkl__lose() */
inline lose() {
  if :: hst != LOST -> hst = LOST; printf("MSC: H is told LOST (%d)\n", rasked) :: else fi
}

/* zkl__watch_own(): getData with a watch; the reply joins the FIFO */
inline watch_own() {
  own = OWN_PENDING;
  if
  :: nexists -> hwatch = 1; hin!R_GET, ndata, nver
  :: else -> hin!R_GET, NONODE, 0
  fi
}

/* H's client threads: the watch due some time after the hold began,
 * and the watcher and completions (acq.c). */
proctype hclient() {
  mtype m;
  byte d, v;
end:
  do
  /* zkl__acqs_watch_due(): once, some time into the hold */
  :: atomic { hdue && hst == HELD -> hdue = 0; watch_own() }
  :: atomic { hin?m, d, v ->
       if
       :: m == EV_DEL -> own = OWN_NONE; lose() /* own_event() */
       :: m == EV_CHG -> /* own_event(): read again, hold or wait */
          printf("MSC: H hears N0 changed\n");
          own = OWN_NONE;
#ifndef BUG_NO_REREAD
          if :: hst != LOST -> watch_own() :: else fi
#endif
#ifdef WAITED
       :: m == EV_PDEL -> /* P deleted: the wait's hand-off; the run is
                           * done, its caller settles it later */
          printf("MSC: H's wait hears P deleted: its run is done\n");
          hrun = 1
#endif
       :: m == R_GET && d != NONODE -> /* on_verified(): intact, mine */
          printf("MSC: H's own-node watch reads N0: version %d, data %d\n", v, d);
          hdv = v;
          if :: own == OWN_PENDING -> own = OWN_OK :: else fi;
          /* a waiter's request too (F9's fix): kept, and settle()
           * tells the hold of it as it begins */
          if
#ifdef BUG_F9
          :: hst == HELD && (d & (RQ(0) | RQ(1))) && !rasked ->
#else
          :: hst != LOST && (d & (RQ(0) | RQ(1))) && !rasked ->
#endif
             rasked = 1; printf("MSC: H reads a revoke line: REVOKE_REQUESTED\n")
          :: else
          fi
       :: m == R_GET && d == NONODE ->
          if :: own == OWN_PENDING -> own = OWN_NONE :: else fi;
          lose()
       fi;
       d = 0; v = 0 }
  od
}

/* H's user thread: guarded writes, its own write of N0, the unlock. */
proctype holder() {
  byte gw, dv, t, v, rd;
  bool ok, ownw;
#ifdef WAITED
  /* run.c settle(), on the caller's thread once woken: HELD, and the
   * own-node watch scheduled unless one is on (zkl__schedule_node_watch) */
  atomic {
    (hrun || hst == LOST) ->
    if
    :: hst == WAITING -> hst = HELD; hdue = own == OWN_NONE;
       printf("MSC: H holds (its own watch %d)\n", own)
    :: else -> printf("MSC: H's wait ends: its node is gone\n")
    fi
  }
#endif
  do
  :: gw < GW ->
     t = 0;
again:
     /* zkl__guarded(): usable() (a LOST hold sends nothing: ZKL_ELOST),
      * build()'s check of N0 at a->dversion */
     if
     :: hst == LOST -> goto next
     :: else -> dv = hdv; printf("MSC: H builds a guarded write checking N0 at version %d\n", dv)
     fi;
     /* sent, perhaps much later (paused); the transaction, all or nothing */
     atomic {
#ifdef BUG_NO_CHECK
       ok = 1;
#else
       ok = nexists && nver == dv;
#endif
       if
       :: ok ->
          printf("MSC: H commits a guarded write (N0 %d)\n", nexists);
          assert(!forced && !cwrote);
          swrites++
       :: !ok && !nexists -> lose() /* judge(): ZNONODE, ZKL_EREVOKED */
       :: else
       fi
     }
     if
     :: !ok && nexists && t < VERSION_TRIES ->
        /* moved(): ZBADVERSION; zkl__queue_verify(): sync, read; intact
         * (a revoker's line, our own mark): again at that version */
        t++;
        atomic {
          if
          :: nexists -> hdv = nver
          :: else -> lose()
          fi
        }
        goto again
     :: else
     fi;
next:
     ok = 0;
     dv = 0;
     gw++
#if OWNW == 1
  :: !ownw && hst != LOST ->
     /* zkl__relay(): a->marks first; setData of our data and the mark,
      * fresh, at version 0, not waited for */
     ownw = 1;
     atomic {
#ifdef BUG_OWN_ANY
       if :: nexists -> set_n0(MK, 0); printf("MSC: H's relay writes N0 at -1\n") :: else fi
#else
       if
       :: nexists && nver == 0 -> set_n0(MK, 0); printf("MSC: H's relay writes N0\n")
       :: else /* ZBADVERSION or ZNONODE: the mark is lost, a poll's cost */
       fi
#endif
     }
#endif
#if OWNW == 2
  :: !ownw && hst != LOST ->
     /* zkl__queue_downgrade(): setData at version 0; on ZBADVERSION
      * stat_own() reads the node (intact: a revoker's line) and the
      * write goes again at the version read */
     ownw = 1;
     v = 0;
     rd = 0;
     t = 0;
     do
     :: t < DOWNGRADE_TRIES ->
        t++;
        atomic {
#ifdef BUG_OWN_ANY
          if :: nexists -> ok = 1 :: else -> ok = 0 fi;
#else
          ok = nexists && nver == v;
#endif
          if
#ifdef BUG_DOWNGRADE_FRESH
          :: ok -> set_n0(MK, 0); hdv = nver;
#else
          :: ok -> set_n0(rd | MK, 0); hdv = nver; /* merged (F6) */
#endif
             printf("MSC: H's downgrade writes N0 at version %d\n", v)
          :: !ok && !nexists -> lose()
          :: else -> printf("MSC: H's downgrade at version %d: ZBADVERSION\n", v)
          fi
        }
        if
        :: ok || !nexists -> break
        :: else ->
           atomic {
             if
             :: nexists -> v = nver; rd = ndata;
                printf("MSC: H's downgrade reads N0: version %d, data %d\n", v, rd)
             :: else -> lose()
             fi
           };
           if :: !nexists -> break :: else fi
        fi
     :: else -> break /* written or not: downgraded() */
     od;
     ok = 0; v = 0; rd = 0; t = 0
#endif
  :: break
  od;
#if STAY > 0
  /* the user keeps the hold: a cooperative one until its state says
   * REVOKE_REQUESTED (or LOST), another for ever */
  if
  :: true
#if COOP
  :: atomic { printf("MSC: H's user keeps the hold until asked\n"); (rasked || hst == LOST) }
     printf("MSC: H's user is asked: it releases\n")
#else
  :: atomic { printf("MSC: H's user keeps the hold\n");
end_stay:
       false }
#endif
  fi;
#endif
  /* unlock: remove_node() deletes N0 if it is there */
  atomic {
    if :: nexists -> delete_n0(); printf("MSC: H unlocks\n") :: else fi;
    hst = LOST;
    fin++
  }
}

/* zkl_revoke() on the holder H: ask(), then wait_gone() until the grace
 * period ends, then the forced delete (revoke_paths()). */
proctype revoker(byte r) {
  byte d, v;
  bool ok;
  !pexists; /* zkl_revoke()'s listing shows N0 first, a holder */
  do
  :: atomic {
       if
       :: !nexists -> goto done /* ZNONODE: released meanwhile */
       :: else -> d = ndata; v = nver
       fi
     }
     atomic {
#ifdef BUG_REVOKE_ANY
       ok = nexists;
#else
       ok = nexists && nver == v;
#endif
       if
       :: ok -> set_n0(d | RQ(r), RQ(r));
          printf("MSC: revoker %d writes its line at version %d\n", r, v);
          break
       :: !ok && !nexists -> goto done
       :: else /* ZBADVERSION: someone wrote meanwhile, merge again */
       fi
     }
  od;
#if GRACE > 0
  /* the grace period, abstract: H may release meanwhile. With LIVE,
   * wait_gone() as it is: exists with a watch, woken by an event on N0
   * (and exists again), until N0 is gone or the deadline; for the safety
   * checks its steps only say when the forced delete may come, which the
   * abstract wait already lets come at any time */
#ifdef LIVE
wait:
  atomic {
    if
    :: !nexists -> goto done /* ZNONODE: released */
    :: else -> rvwatch[r] = 1
    fi
  }
  if
  :: atomic { rvev[r] -> rvev[r] = 0;
       printf("MSC: revoker %d hears of N0\n", r) }
#ifdef BUG_EVENT_GONE
     goto done
#else
     goto wait
#endif
  :: skip /* the deadline */
  fi;
#endif
  /* revoke_paths(): the forced delete */
  atomic {
    if
    :: nexists -> delete_n0(); forced = 1;
       printf("MSC: revoker %d deletes N0 (forced)\n", r)
    :: else
    fi
  }
#endif
done:
  skip
}

/* C: queued behind N0, holds once it is gone (zklock.pml checks the
 * wait), guarded writes checked on its own node, then the release. */
proctype contender() {
  byte g;
  atomic { !nexists -> cheld = 1; printf("MSC: C holds\n") }
  do
  :: g < GC ->
     atomic { n1exists -> cwrote = 1; swrites++; printf("MSC: C commits a guarded write\n") };
     g++
  :: else -> break
  od;
  atomic { n1exists = 0; fin++ }
}

#ifdef WAITED
/* P, the holder before H, releases: H's wait hears of it */
proctype pred() {
  atomic { pexists = 0; hin!EV_PDEL, 0, 0; printf("MSC: P is released\n") }
}
#endif

init {
  atomic {
#ifdef WAITED
    watch_own(); /* step_wait(): our own node read and watched */
    run pred();
#endif
    run hclient();
    run holder();
    run contender();
    run revoker(0);
#if REVOKERS > 1
    run revoker(1);
#endif
  }
}

#ifndef LIVE
/* Nothing can move: H and C are done, their nodes gone. */
active proctype quiet() {
  timeout ->
  assert(fin == 2 && !nexists && !n1exists)
}
#else
/* A request was written, and C does not hold yet: the hold it asked
 * for must end, by H's release or by force, and C hold. */
#define STARVED (asked != 0 && !cheld)
ltl live { [] <> !STARVED }
#endif
