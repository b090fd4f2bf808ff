/* SPDX-License-Identifier: Apache-2.0 */
/* multilock.pml: the multi-lock's rule that keeps it out of wait cycles
 * with lockers that hold one lock while they wait for another
 * (lib/engine/join.c: zkl__join_enqueue, zkl__join_still_held;
 * lib/recipes/multilock.c: wait_all, someone_behind, back_off), checked
 * with spin. model/README.md ("The multi-lock") says
 * what is modelled and what is left out; scripts/model.sh runs the checks.
 *
 * Two locks, A and B, each a queue of nodes in creation order (one
 * server: a create is applied at once, and a queue's order is its
 * sequence order). A node is a process id + 1; a queue holds at most one
 * node per process.
 *
 * Processes:
 *   multi   a multi-lock on {A, B} (a tagged guid): one transaction puts
 *           a node in both queues, each member waits like a mutex and is
 *           granted when its node is first; held in part, the set may
 *           look behind the members it holds and give way; every member
 *           granted, it holds only if every node is still there
 *   nested  a nested locker: takes A, then B (one at a time, each a
 *           mutex wait), releases B then A. Curator's sequential
 *           multi-lock (InterProcessMultiLock) is the same process: it
 *           holds its first lock while it queues for its second
 *   rogue   (ROGUE) deletes one node of multi 0, at any time: a session
 *           of another client, or a lost session of ours
 *
 * Bounds (spin -DNAME=VALUE):
 *   MULTIS   multi-lock processes (ids 0..MULTIS-1)                  [1]
 *   NESTED   nested processes (ids MULTIS..)                          [1]
 *   MCYCLES  acquisitions per multi-lock                              [1]
 *   NCYCLES  acquisitions per nested locker                           [1]
 *   GIVEUP   multi-lock acquisitions cancelled while they wait        [0]
 *   ROGUE    nodes of multi 0 deleted by someone else                 [0]
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_NO_YIELD       a set held in part never gives way
 *   BUG_YIELD_ANY      a set gives way to a multi-lock too (the tag ignored)
 *   BUG_NO_STILL_HELD  every member granted is taken for a hold, without
 *                      reading the nodes again
 */

#ifndef MULTIS
#define MULTIS 1
#endif
#ifndef NESTED
#define NESTED 1
#endif
#ifndef MCYCLES
#define MCYCLES 1
#endif
#ifndef NCYCLES
#define NCYCLES 1
#endif
#ifndef GIVEUP
#define GIVEUP 0
#endif
#ifndef ROGUE
#define ROGUE 0
#endif

#define NP (MULTIS + NESTED)
#define QS 4 /* a queue's room: NP <= QS */
#define A 0
#define B 1

byte q[2 * QS];      /* queue l: q[l*QS ..], node = owner + 1, 0 after the last */
bool incs[2 * QS];   /* incs[l*QS + p]: p is in its critical section on l */
byte holders[2];     /* those in a critical section on l whose node is there */
byte fin;            /* processes done */
byte giveups = GIVEUP;

#define AT(l, k) q[(l) * QS + (k)]
#define PRESENT(l, v) (AT(l, 0) == (v) || AT(l, 1) == (v) || AT(l, 2) == (v) || AT(l, 3) == (v))
/* a node someone_behind() counts: any node not a multi-lock's (the tag) */
#ifdef BUG_YIELD_ANY
#define COUNTS(v) ((v) != 0)
#else
#define COUNTS(v) ((v) > MULTIS)
#endif
/* someone waits behind v, which holds l (is first in it) */
#define BEHIND(l, v) (AT(l, 0) == (v) && (COUNTS(AT(l, 1)) || COUNTS(AT(l, 2)) || COUNTS(AT(l, 3))))

/* a create: the node goes last */
inline append(l, p) {
  i = 0;
  do
  :: AT(l, i) == 0 -> AT(l, i) = p + 1; break
  :: else -> i++
  od;
  i = 0
}

/* a delete, if the node is there */
inline remove(l, p) {
  i = 0;
  do
  :: i < QS && AT(l, i) != p + 1 -> i++
  :: else -> break
  od;
  do
  :: i < QS - 1 -> AT(l, i) = AT(l, i + 1); i++
  :: i == QS - 1 -> AT(l, i) = 0; break
  :: i == QS -> break
  od;
  i = 0
}

/* p begins a critical section on l: nobody else holds it with its node */
inline enter(l, p) {
  assert(holders[l] == 0);
  holders[l]++;
  incs[l * QS + p] = 1
}

/* p ends it (its node still there, or deleted meanwhile: then a LOST hold,
 * no longer counted) and deletes its node */
inline leave(l, p) {
  if
  :: PRESENT(l, p + 1) -> holders[l]--
  :: else
  fi;
  incs[l * QS + p] = 0;
  remove(l, p)
}

proctype multi(byte p) {
  byte c, i;
  bool gA, gB, saw, allmine;
  byte why; /* 0: every member granted; 1: gave way; 2: start over; 3: give up */
  do
  :: c < MCYCLES ->
     /* zkl__join_enqueue(): one transaction, one zxid, a node in every queue */
enq: atomic {
       append(A, p); append(B, p); gA = 0; gB = 0; saw = 0; why = 0;
       printf("MSC: multi %d enqueues in A and B\n", p)
     }
     do /* wait_all() */
     :: atomic { !gA && AT(A, 0) == p + 1 -> gA = 1; printf("MSC: multi %d granted A\n", p) }
     :: atomic { !gB && AT(B, 0) == p + 1 -> gB = 1; printf("MSC: multi %d granted B\n", p) }
#ifndef BUG_NO_YIELD
     /* someone_behind(), whenever it is due: lists the queues of the
      * members held and finds someone behind (a look that finds nobody
      * changes nothing, and is left out) */
     :: d_step { gA != gB && !saw && ((gA && BEHIND(A, p + 1)) || (gB && BEHIND(B, p + 1))) ->
                   saw = 1; printf("MSC: multi %d finds someone behind a member it holds\n", p) }
     /* its answer acted on, later: gives way if still held in part */
     :: d_step { saw -> saw = 0; if :: gA != gB -> why = 1 :: else fi }
        if :: why == 1 -> break :: else fi
#endif
     /* a member's run ends: its node went (the own-node watch of a
      * waiter, or of a member granted whose watch was set) */
     :: !(gA && gB) && !(PRESENT(A, p + 1) && PRESENT(B, p + 1)) -> why = 2; break
     :: giveups > 0 && !(gA && gB) -> giveups--; why = 3; break
     :: gA && gB -> saw = 0; break
     od;
     if
     :: why == 0 ->
        d_step {
          allmine = PRESENT(A, p + 1) && PRESENT(B, p + 1);
#ifndef BUG_NO_STILL_HELD
          /* zkl__join_still_held(): a node gone meanwhile, start over */
          if :: !allmine -> why = 2 :: else fi;
#endif
          if
          :: why == 0 ->
             assert(allmine); /* the set holds every member, now */
             enter(A, p); enter(B, p);
             printf("MSC: multi %d holds A and B\n", p)
          :: else
          fi;
          allmine = 0
        }
     :: else
     fi;
     if
     :: why == 0 ->
progress_m:
        d_step { leave(A, p); leave(B, p) }
        c++
     :: why == 1 ->
        /* gave way: every node deleted; back_off(), then enqueue again */
        printf("MSC: multi %d gives way\n", p);
        d_step { remove(A, p); remove(B, p); why = 0; gA = 0; gB = 0 }
        goto enq
     :: why == 2 ->
        printf("MSC: multi %d starts over\n", p);
        d_step { remove(A, p); remove(B, p); why = 0; gA = 0; gB = 0 }
        goto enq
     :: why == 3 ->
        printf("MSC: multi %d gives up\n", p);
        d_step { remove(A, p); remove(B, p); why = 0; gA = 0; gB = 0 }
        c++
     fi
  :: else -> break
  od;
  fin++
}

proctype nested(byte p) {
  byte c, i;
  do
  :: c < NCYCLES ->
     d_step { append(A, p) }
     d_step { AT(A, 0) == p + 1 -> enter(A, p); printf("MSC: nested %d holds A\n", p) }
     d_step { append(B, p); printf("MSC: nested %d queues for B\n", p) }
     d_step { AT(B, 0) == p + 1 -> enter(B, p); printf("MSC: nested %d holds A and B\n", p) }
progress_n:
     d_step { leave(B, p) }
     d_step { leave(A, p) }
     c++
  :: else -> break
  od;
  fin++
}

#if ROGUE > 0
proctype rogue() {
  byte i;
end:
  if
  :: d_step { PRESENT(A, 1) -> if :: incs[A * QS] -> holders[A]-- :: else fi; remove(A, 0) }
     printf("MSC: rogue deletes multi 0's node in A\n")
  :: d_step { PRESENT(B, 1) -> if :: incs[B * QS] -> holders[B]-- :: else fi; remove(B, 0) }
     printf("MSC: rogue deletes multi 0's node in B\n")
  fi
}
#endif

init {
  byte k;
  atomic {
    assert(NP <= QS);
    k = 0;
    do
    :: k < MULTIS -> run multi(k); k++
    :: k < NP && k >= MULTIS -> run nested(k); k++
    :: k == NP -> break
    od;
#if ROGUE > 0
    run rogue();
#endif
    k = 0
  }
}

/* Nothing can move: everyone is done, and no node is left behind. */
active proctype quiet() {
  bool left;
  timeout ->
  assert(fin == NP);
  left = q[A * QS] != 0 || q[B * QS] != 0;
  assert(!left) /* every node deleted */
}
