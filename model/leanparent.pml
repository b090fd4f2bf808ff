/* SPDX-License-Identifier: Apache-2.0 */
/* leanparent.pml: a lock's parent made in its first node's transaction
 * (issue 26, "lean"), and who deletes it, checked with spin.
 * lib/engine/acquire.c send_join, step_joined, first_born, step_position;
 * lib/zk/batch.c zkl__batch_create_pair (the parent's setData: the token);
 * lib/engine/release.c send_delete (the pair delete), dir_ours,
 * zkl__tidy_dir, on_dir_read (the read of the mark, the versioned delete).
 * model/README.md ("The lean parent") says what is modelled and what is
 * left out; scripts/model.sh runs the checks.
 *
 * ZooKeeper holds one lock parent P (absent, or a plain node with its
 * data, data version, czxid and cversion) and the clients' nodes in it.
 * Two lock objects, each on a session of its own, lock and unlock CYC
 * times and are then destroyed. An object that has not seen P sends one
 * transaction [create P with zklock's mark, setData P, create our node]:
 * its token is the setData's zxid, our node is P's first (sequence 0,
 * first_born) and holds at once. When P is there already the transaction
 * fails and our node goes again alone, with a token of its own. Release:
 * the object that made P and found its node alone there deletes [node,
 * P] in one transaction (P only if then empty), every time; otherwise the
 * node alone. Destroy: the maker reads P by czxid; an object that saw P
 * as a plain node (dir_lone) reads its mark; either deletes P only if
 * empty, at the version read. A co-tenant (ROGUE actions) may plant P
 * with its own data, rewrite P's data, or delete an empty P.
 *
 * What must hold: one holder at a time, tokens increase; a client deletes
 * P only if it is the incarnation it made or carries the mark (pdelok);
 * when every object was destroyed and nobody crashed, no empty P with the
 * mark is left (pleft), for the server never sweeps a plain node. With
 * CRASH an object may die holding (its session's node goes, it is never
 * destroyed): what it leaves is zkl_sweep()'s, and only pdelok is checked.
 *
 * Bounds (spin -DNAME=VALUE):
 *   CYC    lock cycles per object                                   [2]
 *   ROGUE  co-tenant actions                                        [2]
 *   CRASH  objects that may die holding                             [0]
 * Guards removed (model/README.md, "Mutants"):
 *   BUG_TIDY_NO_MARK   the destroy's read does not look at the mark
 *   BUG_NO_CLOSE_TIDY  an object that did not make P never reads it at
 *                      destroy (only the maker deletes P)
 *   BUG_ANY_VERSION    the destroy's delete is at version -1, not the one
 *                      read
 *   BUG_PROBE_STALE    a node that went again alone keeps the parent's
 *                      setData zxid of the failed transaction as token
 */

#ifndef CYC
#define CYC 2
#endif
#ifndef ROGUE
#define ROGUE 2
#endif
#ifndef CRASH
#define CRASH 0
#endif

#define MARK 1
#define FOREIGN 2 /* someone else's data, of the mark's length */

/* ZooKeeper */
bool pex;        /* P exists */
byte pdata;      /* its data */
byte pver;       /* its data version */
byte pcz;        /* its czxid: which incarnation */
byte pcv;        /* its cversion: children made in this incarnation */
byte kid[2];     /* client i's node in P: its sequence + 1, or 0 */
byte zx = 1;     /* the next zxid */

/* what the checks look at */
byte holders;
byte last_token;
byte done;       /* objects destroyed, or dead */
byte crashed;
byte rogue_left = ROGUE;

#define EMPTY (kid[0] == 0 && kid[1] == 0)

/* A client deletes P at version v (-1: any) if it is empty: pdelok says
 * the P it removes is the one it made, or carries the mark. */
inline delete_p(v, made) {
  atomic {
    if
    :: pex && EMPTY && (v == 255 || pver == v) ->
       pdelok = (pcz == made || pdata == MARK);
       assert(pdelok);
       pex = 0; printf("MSC: %d: P deleted at destroy\n", i)
    :: else
    fi
  }
}

proctype client(byte i) {
  byte seen, made, alone, lone, lean, kept, madehere;
  byte token, cyc, v;
  bool pdelok, ok;
  do
  :: cyc == CYC -> break
  :: cyc < CYC ->
join:
     madehere = 0;
     /* send_join: the lean transaction, or our node alone */
     if
     :: !seen ->
        atomic {
          if
          :: !pex ->
             pex = 1; pdata = MARK; pver = 1; pcz = zx; pcv = 1;
             kid[i] = 1; token = zx; zx++;
             made = pcz; lean = 1; madehere = 1; ok = 1;
             printf("MSC: %d: [P, setData P, node] applied: token %d\n", i, token)
          :: else -> ok = 0;
#ifdef BUG_PROBE_STALE
             token = pcz;
#endif
             printf("MSC: %d: P there already: the transaction fails\n", i)
          fi
        }
     :: else -> ok = 0
     fi;
     if
     :: !ok ->
        atomic {
          if
          :: pex ->
             kid[i] = pcv + 1; pcv++;
#ifndef BUG_PROBE_STALE
             token = zx;
#endif
             zx++; seen = 1;
             printf("MSC: %d: node alone, sequence %d\n", i, kid[i] - 1)
          :: else ->
             /* P gone since we saw it: the join makes it again (C: a
              * container, through recover.c; here the lean way) */
             seen = 0
          fi
        }
     :: else -> seen = 1
     fi;
     if
     :: !seen -> goto join
     :: else
     fi;
     if
     :: kid[i] == 1 ->
        /* first_born: alone, ours to take along if we made it */
        alone = madehere; lone = 1
     :: else ->
        /* the listing (step_position): P is a plain node of the mark's
         * length either way */
        atomic {
          alone = (made != 0 && pcz == made && kid[1 - i] == 0);
          lone = 1
        };
        /* the wait: until no lower node is left */
        (kid[1 - i] == 0 || kid[1 - i] > kid[i])
     fi;
     /* the hold */
     atomic {
       holders++;
       assert(holders == 1);
       assert(token > last_token);
       last_token = token
     };
     if
     :: crashed < CRASH ->
        atomic { crashed++; holders--; kid[i] = 0; done++ };
        printf("MSC: %d dies holding: its session's node goes\n", i);
        goto dead
     :: true
     fi;
     holders--;
     /* the release: send_delete */
     if
     :: made && alone && (!kept || lean) ->
        atomic {
          kid[i] = 0;
          if
          :: EMPTY && pex ->
             pdelok = (pcz == made || pdata == MARK);
             assert(pdelok);
             pex = 0; made = 0; seen = 0; alone = 0; lone = 0;
             printf("MSC: %d: [node, P] deleted\n", i)
          :: else -> printf("MSC: %d: P not empty: the node alone\n", i)
          fi
        }
     :: else -> kid[i] = 0
     fi;
     kept = 1;
     cyc++
  od;
  /* destroy: zkl__tidy_dir */
  if
  :: made && alone ->
     atomic { ok = pex && pcz == made && EMPTY; v = pver };
#ifdef BUG_ANY_VERSION
     v = 255;
#endif
     if :: ok -> delete_p(v, made) :: else fi
  :: else ->
#ifdef BUG_NO_CLOSE_TIDY
     lone = 0;
#endif
     if
     :: lone ->
#ifdef BUG_TIDY_NO_MARK
        atomic { ok = pex && EMPTY; v = pver };
#else
        atomic { ok = pex && pdata == MARK && EMPTY; v = pver };
#endif
#ifdef BUG_ANY_VERSION
        v = 255;
#endif
        if :: ok -> delete_p(v, made) :: else fi
     :: else
     fi
  fi;
  done++;
dead:
  skip
}

/* The co-tenant, under open ACLs: plants P with its own data, rewrites
 * P's data, or deletes an empty P. */
proctype rogue() {
  do
  :: atomic {
       rogue_left > 0 && !pex ->
       pex = 1; pdata = FOREIGN; pver = 0; pcz = zx; pcv = 0; zx++;
       rogue_left--; printf("MSC: the rogue plants P\n")
     }
  :: atomic {
       rogue_left > 0 && pex ->
       pdata = FOREIGN; pver++; rogue_left--;
       printf("MSC: the rogue rewrites P\n")
     }
  :: atomic {
       rogue_left > 0 && pex && EMPTY ->
       pex = 0; rogue_left--; printf("MSC: the rogue deletes P\n")
     }
  :: rogue_left == 0 -> break
  :: done == 2 -> break
  od
}

init {
  bool pleft;
  atomic {
    run client(0);
    run client(1);
    run rogue()
  };
  done == 2;
  /* every object destroyed: no empty parent with the mark left behind,
   * unless an object died (zkl_sweep's) */
  pleft = pex && pdata == MARK && EMPTY && crashed == 0;
  assert(!pleft)
}
