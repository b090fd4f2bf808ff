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
 *
 * Bounds (spin -DNAME=VALUE):
 *   GW        guarded writes H tries                                 [2]
 *   GC        guarded writes C does                                  [1]
 *   REVOKERS  revokers, 1 or 2                                       [2]
 *   OWNW      H's own write of N0: 0 none, 1 the relay (zkl__relay),
 *             2 the downgrade (zkl__queue_downgrade)                 [1]
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_DOWNGRADE_FRESH  (with OWNW=2) the code before F6's fix: the
 *                   downgrade's retry writes data built before it read
 *   BUG_NO_CHECK    the guarded write without the check of N0
 *   BUG_REVOKE_ANY  the revoker's setData at version -1
 *   BUG_OWN_ANY     H's own write at version -1
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
#define VERSION_TRIES 3   /* guard.c */
#define DOWNGRADE_TRIES 3 /* marks.c */

/* N0's header lines beyond the creator's, a bit each: revoker r's
 * "revoke=<nonce>,<grace>" line, and H's status line (mode=read or
 * state=held) */
#define RQ(r) (1 << (r))
#define MK 4
#define NONODE 255 /* a read's answer: no node */

mtype = { EV_CHG, EV_DEL, R_GET };
chan hin = [3] of { mtype, byte, byte }; /* H's session: events and replies */

/* ZooKeeper: N0, N1 (C's node), S */
bool nexists = 1;
byte ndata;         /* the lines above; the creator's own are always there */
byte nver;          /* N0's data version */
bool hwatch;        /* H's data watch on N0 */
bool n1exists = 1;
byte swrites;       /* commits to S */

/* what happened, for the assertions */
byte asked;         /* revokers whose line a setData committed */
bool forced;        /* a revoker deleted N0 */
bool cwrote;        /* C committed a write to S */

/* H, its client's view (under c->mu) */
#define HELD 1
#define LOST 2
byte hst = HELD;
bool rasked;        /* a->revoke_asked: REVOKE_REQUESTED */
byte hdv;           /* a->dversion */
#define OWN_NONE 0
#define OWN_PENDING 1
#define OWN_OK 2
byte own = OWN_NONE;
byte fin;

/* setData of N0 applied (the caller checked the version); `line`: the
 * revoker whose write it is, 0 for H's */
inline set_n0(d, line) {
  ndata = d;
  nver++;
  asked = asked | line;
  if :: hwatch -> hwatch = 0; hin!EV_CHG, 0, 0 :: else fi;
  assert((ndata & asked) == asked)
}

inline delete_n0() {
  nexists = 0;
  if :: hwatch -> hwatch = 0; hin!EV_DEL, 0, 0 :: else fi
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
  /* zkl__acqs_watch_due() */
  :: atomic { hst == HELD && own == OWN_NONE -> watch_own() }
  :: atomic { hin?m, d, v ->
       if
       :: m == EV_DEL -> own = OWN_NONE; lose() /* own_event() */
       :: m == EV_CHG -> /* own_event(): read again */
          own = OWN_NONE;
          if :: hst == HELD -> watch_own() :: else fi
       :: m == R_GET && d != NONODE -> /* on_verified(): intact, mine */
          hdv = v;
          if :: own == OWN_PENDING -> own = OWN_OK :: else fi;
          if
          :: hst == HELD && (d & (RQ(0) | RQ(1))) && !rasked ->
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
  /* the grace period, abstract: H may release meanwhile */
  atomic {
    if
    :: nexists -> delete_n0(); forced = 1;
       printf("MSC: revoker %d deletes N0 (forced)\n", r)
    :: else
    fi
  }
done:
  skip
}

/* C: queued behind N0, holds once it is gone (zklock.pml checks the
 * wait), guarded writes checked on its own node, then the release. */
proctype contender() {
  byte g;
  !nexists;
  printf("MSC: C holds\n");
  do
  :: g < GC ->
     atomic { n1exists -> cwrote = 1; swrites++; printf("MSC: C commits a guarded write\n") };
     g++
  :: else -> break
  od;
  atomic { n1exists = 0; fin++ }
}

init {
  atomic {
    run hclient();
    run holder();
    run contender();
    run revoker(0);
#if REVOKERS > 1
    run revoker(1);
#endif
  }
}

/* Nothing can move: H and C are done, their nodes gone. */
active proctype quiet() {
  timeout ->
  assert(fin == 2 && !nexists && !n1exists)
}
