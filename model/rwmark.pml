/* SPDX-License-Identifier: Apache-2.0 */
/* rwmark.pml: a read-write writer's node whose data someone else rewrites
 * (lib/engine/acq.c on_verified with zkl__acq_data_intact, lib/engine/guard.c's check
 * of the node at a->dversion, lib/engine/release.c zkl__queue_downgrade,
 * zkl__queue_verify and remove_node), checked with spin.
 * model/README.md ("The downgrade mark") says what is modelled and what
 * is left out; scripts/model.sh runs the checks.
 *
 * One writer W holds (its node is first); one reader R waits behind it,
 * W's node being its one conflict (the plan's downgrade_ok): R enters
 * when it reads W's node marked "mode=read" or finds it gone. W's
 * downgrade writes that mark itself. A co-tenant (rogue, same ACL) may
 * write the mark into W's node (setData at version -1): R enters beside
 * W, which cannot be prevented, since readers trust the mark. What must
 * hold is that W, while it believes it holds the lock exclusively, never
 * commits a guarded write after that (its check at the data version it
 * last found intact fails), and that it is told: the hold ends LOST.
 * With LIVE, what must also hold is that R does not wait for ever once
 * W's node is gone or no longer says "exclusive" (marked, or rewritten):
 * R reads again on every change, and a hold lost to a rewrite deletes its
 * node at once, even if its user never unlocks (STAY).
 *
 * Bounds (spin -DNAME=VALUE):
 *   GW         guarded writes W tries                                 [2]
 *   DOWNGRADE  W may downgrade (once)
 *   ROGUE      rewrites of W's node by someone else                   [1]
 *   JUNK       a rewrite may also be data that is not the mark (someone
 *              else's: R cannot go in on it)
 *   STAY       W's user may never unlock (LOST or not)
 *   LIVE       the liveness claim instead of the end-state check (run
 *              pan with -a -f)
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_IGNORE_CHANGE  on_verified takes rewritten data for ours (and
 *                      its version for the one to check)
 *   BUG_CHECK_ANY      the guarded write checks W's node at version -1
 *   BUG_NO_REREAD      R's wait takes no notice of a change event (only
 *                      a deletion would end it, and the watch is spent)
 *   BUG_KEEP_NODE      a hold LOST to a rewrite keeps its node until its
 *                      user unlocks (no zkl__defer_delete_now)
 *   BUG_NO_REWATCH     own_event() does not read W's node again after a
 *                      change, so its watch is not set again
 */

#ifndef GW
#define GW 2
#endif
#ifndef ROGUE
#define ROGUE 1
#endif
#ifndef STAY
#define STAY 0
#endif

/* W's node's data, as a reply carries it: no node, or its data */
#define NONODE 0
#define PLAIN 1 /* zklock's header, as W wrote it */
#define MARK 2  /* with the line "mode=read" */
#define JUNKD 3 /* someone else's data: neither ours nor the mark */

mtype = { EV_CHG, EV_DEL, R_GET };
chan win = [3] of { mtype, byte, byte }; /* W's session, in order: events and replies */

/* ZooKeeper: W's node */
bool nexists = 1;
byte ndata = PLAIN;
byte nver = 0;      /* its data version */
bool wwatch;        /* W's data watch on it, set at the server */
bool rwatch;        /* R's */
bool rheard;        /* R's watch fired */
bool rwait = 1;     /* R waits: it has not gone in yet */

/* W (its client's view, under c->mu) */
#define HELD 1
#define LOST 2
byte wst = HELD;
bool wmarkread;     /* a->marks & ZKL__MARK_READ: W may have written the mark */
byte wdv = 0;       /* a->dversion: the version W last found intact */
bool wshared;       /* W downgraded: it holds shared */
#define OWN_NONE 0
#define OWN_PENDING 1
#define OWN_OK 2
byte own = OWN_NONE;
bool wdue = 1;      /* a->watch_due: the own-node watch is still to be set */

/* R */
bool rin;           /* R is in its critical section */
bool ovl;           /* R went in while W held exclusive and had not been told */
byte fin;
byte rogue_left = ROGUE;

/* zkl__acq_data_intact(): the data is W's own (the mark only if W
 * may have written it); on_verified's use of it may be removed */
#define INTACT(d) ((d) == PLAIN || ((d) == MARK && wmarkread))
#ifdef BUG_IGNORE_CHANGE
#define INTACT_EV(d) 1
#else
#define INTACT_EV(d) INTACT(d)
#endif

/* setData applied: the watches fire (R's: zkl__path_watcher's
 * ZKL__W_CHANGED, and step_wait_eval() reads again) */
inline changed() {
  nver++;
  if :: wwatch -> wwatch = 0; win!EV_CHG, 0, 0 :: else fi;
#ifdef BUG_NO_REREAD
  if :: rwatch -> rwatch = 0 :: else fi
#else
  if :: rwatch -> rwatch = 0; rheard = 1 :: else fi
#endif
}

inline deleted() {
  nexists = 0;
  if :: wwatch -> wwatch = 0; win!EV_DEL, 0, 0 :: else fi;
  if :: rwatch -> rwatch = 0; rheard = 1 :: else fi
}

/* zkl__lose_rewritten() on a hold whose node is ours but rewritten:
 * LOST, and the node deleted at once (zkl__defer_delete_now), or the
 * queue behind it would wait for its user's unlock */
inline lose_rewritten() {
  wst = LOST;
#ifndef BUG_KEEP_NODE
  if :: nexists -> deleted() :: else fi;
#endif
  printf("MSC: W is told LOST: its data rewritten\n")
}

/* zkl__watch_own(): getData with a watch; the reply joins the FIFO */
inline watch_own() {
  own = OWN_PENDING;
  if
  :: nexists -> wwatch = 1; win!R_GET, ndata, nver
  :: else -> win!R_GET, NONODE, 0
  fi
}

/* The client's threads: the watch due some time after the hold began,
 * and the watcher and completions (acq.c). */
proctype wclient() {
  mtype m;
  byte d, v;
end:
  do
  /* zkl__acqs_watch_due(): once, some time into the hold (without JUNK
   * a node that has downgraded can only be rewritten with the mark, its
   * own by then: watching it changes nothing, and is left out) */
#ifdef JUNK
  :: atomic { wdue && wst == HELD -> wdue = 0; watch_own() }
#else
  :: atomic { wdue && wst == HELD && !wshared -> wdue = 0; watch_own() }
#endif
  :: atomic { win?m, d, v ->
       if
       :: m == EV_DEL -> /* own_event() */
          own = OWN_NONE;
          if :: wst == HELD -> wst = LOST; printf("MSC: W is told LOST: deleted\n") :: else fi
       :: m == EV_CHG -> /* own_event(): read again */
          printf("MSC: W hears its node's data changed\n");
          own = OWN_NONE;
#ifndef BUG_NO_REWATCH
          if :: wst == HELD -> watch_own() :: else fi
#endif
       :: m == R_GET -> /* on_verified() */
          printf("MSC: W reads its node: data %d, version %d\n", d, v);
          if
          :: d != NONODE && INTACT_EV(d) -> /* mine */
             wdv = v;
             if :: own == OWN_PENDING -> own = OWN_OK :: else fi
          :: else ->
             if :: own == OWN_PENDING -> own = OWN_NONE :: else fi;
             if
             :: wst == HELD && d != NONODE -> lose_rewritten()
             :: wst == HELD && d == NONODE -> wst = LOST; printf("MSC: W is told LOST: deleted\n")
             :: else
             fi
          fi
       fi;
       d = 0; v = 0 }
  od
}

/* W's user thread: guarded writes, perhaps a downgrade, the unlock. */
proctype writer() {
  byte gw;
  bool ok, dg;
  do
  :: gw < GW ->
     /* zkl__guarded(): multi(check(node, dversion), the caller's op) */
again: atomic {
       if
       :: wst == LOST -> ok = 0 /* nothing sent: ZKL_ELOST */
#ifdef BUG_CHECK_ANY
       :: wst != LOST && nexists -> ok = 1
#else
       :: wst != LOST && nexists && nver == wdv -> ok = 1
#endif
       :: else -> ok = 0
       fi;
       if
       :: ok ->
          printf("MSC: W commits a guarded write (%d)\n", wshared);
          assert(wshared || !rin) /* exclusive: no reader beside it */
       :: else
       fi
     }
     if
     :: !ok && wst != LOST && nexists ->
        /* ZBADVERSION: zkl__queue_verify() reads the node; its data
         * intact (a revoker's request), again at that version; else the
         * hold is LOST and its node deleted */
        atomic {
          if
          :: nexists && INTACT(ndata) -> wdv = nver; ok = 1
          :: nexists -> lose_rewritten()
          :: else -> wst = LOST
          fi
        }
        if :: ok -> ok = 0; goto again :: else fi
     :: !ok && wst != LOST && !nexists -> wst = LOST /* the check found no node */
     :: else
     fi;
     ok = 0;
     gw++
#ifdef DOWNGRADE
  :: !dg && wst == HELD ->
     /* zkl__queue_downgrade(): the mark ours before the write; setData
      * at version 0, and on ZBADVERSION (reread()) again at the version
      * read if the data is intact (with the mark now ours, a forged mark
      * is); not intact, the hold is lost (zkl__lose_rewritten), and
      * rwlock.c's downgrade() releases it at once */
     dg = 1;
     wmarkread = 1;
     atomic {
       if
       :: nexists && INTACT(ndata) -> ndata = MARK; changed(); wdv = nver; wshared = 1;
          printf("MSC: W downgrades\n")
       :: nexists -> lose_rewritten()
       :: else -> wst = LOST
       fi
     }
     if :: wst == LOST -> goto unlock :: else fi
#endif
  :: break
  od;
#if STAY > 0
  /* the user never unlocks, whatever its hold's state */
  if
  :: atomic { printf("MSC: W's user never unlocks\n");
end_stay:
       false }
  :: true
  fi;
#endif
unlock:
  /* zkl_rwlock_unlock() -> remove_node(): read, delete, judge */
  atomic {
    if
    :: wst == LOST -> ok = 0; if :: nexists -> deleted() :: else fi
    :: else ->
       ok = nexists && INTACT(ndata);
       if :: nexists -> deleted() :: else fi
    fi;
    printf("MSC: W unlocks: %d\n", ok);
    /* told: a hold beside which a reader went in while it was exclusive
     * ends LOST, unless it downgraded since (the mark is then its own) */
    assert(!ok || !ovl || wshared);
    wst = LOST;
    fin++
  }
}

/* R: waits behind W's node, reads it (getData with a watch), and goes
 * in when it is marked "mode=read" or gone (step_read_done). */
proctype reader() {
  do
  :: atomic {
       rheard = 0;
       if
       :: !nexists || ndata == MARK ->
          rin = 1;
          rwait = 0;
          ovl = wst == HELD && !wshared;
          printf("MSC: R goes in (W's node %d, data %d)\n", nexists, ndata);
          break
       :: else -> rwatch = 1;
          printf("MSC: R reads W's node (data %d) and waits\n", ndata)
       fi
     }
     rheard /* the watch fired: read again */
  od;
  atomic { rin = 0; fin++ }
}

#if ROGUE > 0
/* a co-tenant writes the mark into W's node: setData(version -1) */
proctype rogue() {
end:
  do
  :: atomic { rogue_left > 0 && nexists -> rogue_left--; ndata = MARK; changed();
              printf("MSC: rogue writes mode=read into W's node\n") }
#ifdef JUNK
  :: atomic { rogue_left > 0 && nexists -> rogue_left--; ndata = JUNKD; changed();
              printf("MSC: rogue writes its own data into W's node\n") }
#endif
  od
}
#endif

init {
  atomic {
    run wclient();
    run writer();
    run reader();
#if ROGUE > 0
    run rogue();
#endif
  }
}

#ifndef LIVE
/* Nothing can move: W and R are done, W's node is gone. */
active proctype quiet() {
  timeout ->
  assert(fin == 2 && !nexists)
}
#else
/* R waits although W's node is gone, or says something other than W's
 * exclusive data (the mark: R may go in; data not W's: W's hold is
 * lost, and its node must go). R must not wait so for ever. */
#define STARVED (rwait && (!nexists || ndata != PLAIN))
ltl live { [] <> !STARVED }
#endif
