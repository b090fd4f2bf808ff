/* SPDX-License-Identifier: Apache-2.0 */
/* parentlife.pml: the life of a lock's plain parent made in its first
 * node's transaction (lib/engine/acquire.c send_join's `lean`,
 * step_joined, first_born, step_position's dir_alone and dir_lone;
 * lib/engine/release.c send_delete's pair delete, answered, dir_ours,
 * zkl__tidy_dir, dir_delete, on_dir_read; lib/engine/recover.c
 * zkl__step_mkdir), checked with spin. model/README.md ("The parent's
 * life") says what is modelled and what is left out; scripts/model.sh
 * runs the checks. leanparent.pml checks the same protocol for
 * exclusion, tokens and crashes, with two objects that always hold;
 * this one gives the parent its whole life: N objects that may give up,
 * the mkdir path, containers and their reaper.
 *
 * One key: its parent P and the contenders' nodes in it, on one server
 * (each request applied in one atomic step). N lock objects, each on a
 * client of its own, acquire CYCLES times and then close. An object that
 * has not seen P (q->dir_seen) sends [create P, data zklock's mark;
 * setData P; create its node in P] as one transaction: P there already,
 * the transaction fails and the node goes again alone (batch.c; the
 * binding of the two is groupcommit.pml's). An object that has seen P
 * creates its node alone, its listing right behind it. A create that
 * finds no P makes P as a container with the mark (zkl__step_mkdir):
 * made or found, P is seen, and the object joins again. A node of an
 * unlisted join whose sequence is P's first holds without a listing
 * (first_born); any other lists, waits for the nodes before it to go
 * (relisting or not), and holds.
 * Release: an object that made P and found its node alone there takes P
 * along, [delete node, delete P] in one transaction (NOTEMPTY: the node
 * alone): at every release if it made P in its node's transaction
 * (dir_lean), at the first only if it made a container (the mkdir);
 * else the node alone. Close: the maker reads
 * P's czxid (exists) and deletes P if it is the one it made and empty;
 * an object that may have seen a plain marked P (dir_lone) reads P's
 * data and deletes it if it carries the mark and is empty. Nobody waits
 * for either; each is a read, then a delete, and anyone may act between.
 *
 * A hostile session (ROGUE actions in all) plants P with other data when
 * it is missing, rewrites P's data, or deletes P when it is empty (an
 * operator, another tool, zkl_sweep of another process), or stops
 * acting. The server reaps an empty container that has had a child (REAP
 * reaps in all).
 *
 * Properties:
 *   foreign  a contender deletes P only if P carries the mark, or is the
 *            incarnation it made itself (the maker's identity is its
 *            czxid), unless P was deleted and made again since the read
 *            that decided the delete (no ZooKeeper delete can tell an
 *            incarnation from another with the same version):
 *            assert(pdelok) where the delete lands (kind pforeign)
 *   orphan   once every object has closed (no crash: every client stays
 *            connected), no plain parent with the mark and no child is
 *            left: assert(!(pleft)) (porphan); nothing is stuck: every
 *            object is done (stuck)
 *
 * Bounds (spin -DNAME=VALUE):
 *   N        lock objects, each on a client of its own            [2]
 *   CYCLES   acquisitions per object                              [1]
 *   GIVEUP   acquisitions that end without holding (cancelled, or the
 *            deadline): before the first listing of an unlisted join
 *            (zkl__stopped_strict in step_list) or while waiting     [1]
 *   ROGUE    hostile actions in all                               [1]
 *   RPLANT RREWRITE RDELETE  which hostile actions exist        [1 1 1]
 *   REAP     containers the server reaps                          [0]
 * Guards removed (model/README.md, "The parent's life"):
 *   BUG_TIDY_NO_MARK   the close of an object that did not make P
 *                      deletes it empty whatever its data
 *   BUG_NO_CLOSE_TIDY  only the maker deletes P at close (no dir_lone)
 * Defects found by this model, as the code was before their fixes
 * (model/README.md, "Findings"):
 *   BUG_F12  dir_lone is set only by a first_born hold or a listing: an
 *            object whose acquire ends before its first listing never
 *            reads P at close
 *   BUG_F10  the close deletes P at version -1, not at the version its
 *            read found
 *   BUG_F11  zkl__step_mkdir leaves P unseen: the join after it goes
 *            unlisted again, and a first_born hold takes P for the one
 *            this run made (r->made_dir), which may be gone since and
 *            another in its place
 */

#ifndef N
#define N 2
#endif
#ifndef CYCLES
#define CYCLES 1
#endif
#ifndef GIVEUP
#define GIVEUP 1
#endif
#ifndef ROGUE
#define ROGUE 1
#endif
#ifndef RPLANT
#define RPLANT 1
#endif
#ifndef RREWRITE
#define RREWRITE 1
#endif
#ifndef RDELETE
#define RDELETE 1
#endif
#ifndef REAP
#define REAP 0
#endif

/* P's kind */
#define NOP 0
#define PLAIN 1
#define CONT 2
/* P's data: zklock's mark, or anything else (of the mark's length, so
 * that a listing's test of the length, step_position, passes: the worst
 * case, every object reads P at close) */
#define MARK 1
#define OTHER 2

/* ---- ZooKeeper ------------------------------------------------------------ */
byte pk = NOP;          /* P's kind */
byte pd;                /* its data */
byte pv;                /* its data version */
byte pg;                /* its incarnation (its czxid): 1, 2, ... */
bit  prog;              /* this incarnation made by the hostile session */
byte cv;                /* its cversion: the next sequence number */
bit  kid[N];            /* object i's node in P */
byte kseq[N];           /* its sequence number */
byte nkids;

/* ---- each lock object (zkl__queue_t) -------------------------------------- */
bit  seen[N];           /* q->dir_seen */
byte made[N];           /* q->dir_made: the incarnation it made, or 0 */
bit  alone[N];          /* q->dir_alone */
bit  kept[N];           /* q->dir_kept */
bit  lone[N];           /* q->dir_lone */
bit  lm[N];             /* q->dir_lean: the P it made went with its node */
byte fin;
byte gives = GIVEUP, rogues = ROGUE, reaps = REAP;

#define OURS(i) (made[i] != 0 && alone[i])   /* dir_ours(); no peer */
/* no node of another object before ours */
#define FIRST(i) (!(kid[0] && 0 != i && kseq[0] < kseq[i]) && \
                  !(kid[1] && 1 != i && kseq[1] < kseq[i]) && \
                  (N < 3 || !(kid[N - 1] && N - 1 != i && kseq[N - 1] < kseq[i])))

/* P made: a new incarnation, with no child yet */
inline make_p(kind, data, rogue) {
  pk = kind; pd = data; pv = 0; pg++; prog = rogue; cv = 0;
  assert(pg < 255)
}

/* a node of object i created in P */
inline add_kid(i) {
  kid[i] = 1; kseq[i] = cv; cv++; nkids++
}

inline del_kid(i) {
  assert(kid[i]);
  kid[i] = 0; kseq[i] = 0; cv++; nkids--
}

/* object i's delete of P lands; `rg` the incarnation its read found
 * (the maker's pair delete: the one its node is in), `mk` it decided as
 * the maker (by czxid) */
inline delete_p(i, rg, mk) {
  pdelok = (pd == MARK) || pg != rg || (mk && pg == made[i]);
  assert(pdelok);
  printf("MSC: %d deletes P (incarnation %d, data %d)\n", i, pg, pd);
  pk = NOP; pd = 0; pv = 0; prog = 0; cv = 0
}

/* ---- the hostile session and the server's reaper -------------------------- */
active proctype rogue() {
end:
  do
#if RPLANT
  :: atomic { rogues > 0 && pk == NOP -> rogues--; make_p(PLAIN, OTHER, 1);
              printf("MSC: rogue plants P, other data\n") }
#endif
#if RREWRITE
  :: atomic { rogues > 0 && pk != NOP && pd != OTHER -> rogues--; pd = OTHER; pv++;
              printf("MSC: rogue rewrites P's data\n") }
#endif
#if RDELETE
  :: atomic { rogues > 0 && pk != NOP && nkids == 0 -> rogues--; pk = NOP; pd = 0; pv = 0; prog = 0;
              printf("MSC: rogue deletes P (empty)\n") }
#endif
  /* or no more: a run where it acts less is one of the runs too */
  :: atomic { rogues > 0 -> rogues = 0 }
  :: atomic { reaps > 0 && pk == CONT && nkids == 0 && cv > 0 -> reaps--; pk = NOP; pd = 0; pv = 0; prog = 0;
              printf("MSC: the server reaps P, an empty container\n") }
  od
}

/* ---- a lock object: acquires, releases, closes ---------------------------- */
proctype obj(byte i) {
  byte cyc, rg, rv;
  bit ml;     /* r->made_dir: P made in this run */
  bit lean;   /* the join sent P with the node (unlisted) */
  bit mk;
  bool pdelok;
  do
  :: cyc < CYCLES ->
     ml = 0;
join:
     lean = !seen[i];
     if
     :: lean ->
        /* send_join, lean: [create P (mark), setData P, create node] */
        atomic {
#ifndef BUG_F12
          lone[i] = 1; /* whoever leaves P last reads it at close */
#endif
          if
          :: pk == NOP ->
             make_p(PLAIN, MARK, 0);
             pv = 1; /* the setData */
             add_kid(i);
             made[i] = pg; ml = 1; seen[i] = 1; lm[i] = 1;
             printf("MSC: %d makes P (incarnation %d) and its node %d\n", i, pg, kseq[i])
          :: else -> printf("MSC: %d: P there already, its node goes alone\n", i)
          fi
        }
        if
        :: kid[i] -> skip
        :: else ->
           /* the node again, alone */
           atomic {
             if
             :: pk == NOP -> printf("MSC: %d: P gone, its node NONODE\n", i)
             :: else -> add_kid(i); seen[i] = 1; printf("MSC: %d makes its node %d\n", i, kseq[i])
             fi
           }
        fi
     :: else ->
        atomic {
          if
          :: pk == NOP -> printf("MSC: %d: no P, its node NONODE\n", i)
          :: else -> add_kid(i); printf("MSC: %d makes its node %d\n", i, kseq[i])
          fi
        }
     fi;
     if
     :: !kid[i] ->
        /* zkl__step_mkdir: P as a container with the mark, then again;
         * made or found, P is seen: the join lists with its create (F11) */
        atomic {
          if
          :: pk == NOP -> make_p(CONT, MARK, 0); made[i] = pg; ml = 1; lm[i] = 0;
             printf("MSC: %d makes P, a container (incarnation %d)\n", i, pg)
          :: else
          fi;
#ifndef BUG_F11
          seen[i] = 1
#endif
        }
        goto join
     :: else
     fi;
     /* step_joined */
     if
     :: lean && kseq[i] == 0 ->
        /* first_born: holds, unlisted */
        atomic {
          alone[i] = ml;
#ifdef BUG_F12
          lone[i] = 1;
#endif
          printf("MSC: %d holds, first born\n", i)
        }
        goto hold
     :: else
     fi;
     if
     :: lean && gives > 0 ->
        /* stopped before the first listing (zkl__stopped_strict) */
        atomic { gives--; del_kid(i); printf("MSC: %d gives up before listing\n", i) }
        goto done
     :: true
     fi;
list:
     /* step_position */
     atomic {
       alone[i] = (nkids == 1 && made[i] != 0 && pg == made[i]);
       lone[i] = 1; /* a plain node with the mark's length */
       printf("MSC: %d lists (alone %d)\n", i, alone[i])
     }
     if
     :: atomic { FIRST(i) -> skip }
     :: atomic { gives > 0 && !FIRST(i) -> gives--; del_kid(i); printf("MSC: %d gives up waiting\n", i) }
        goto done
     fi;
     if
     :: skip     /* the zero-read hand-off */
     :: goto list
     fi;
hold:
     /* release: send_delete */
     if
     :: OURS(i) && (!kept[i] || lm[i]) ->
        kept[i] = 1;
        atomic {
          if
          :: nkids == 1 ->
             del_kid(i); delete_p(i, pg, 1);
             made[i] = 0; seen[i] = 0; alone[i] = 0; lone[i] = 0; lm[i] = 0 /* answered() */
          :: else -> printf("MSC: %d's pair delete: P not empty\n", i)
          fi
        }
        if
        :: kid[i] -> atomic { del_kid(i); printf("MSC: %d deletes its node\n", i) }
        :: else
        fi
     :: else ->
        kept[i] = 1;
        atomic { del_kid(i); printf("MSC: %d deletes its node\n", i) }
     fi;
done:
     cyc++
  :: else -> break
  od;
  /* close: zkl__tidy_dir */
  if
  :: OURS(i) ->
     mk = 1;
     atomic {
       rg = pg; rv = pv;
       if
       :: pk != NOP && pg == made[i] && nkids == 0 -> printf("MSC: %d reads P: its own, empty\n", i)
       :: else -> rg = 0; printf("MSC: %d reads P: kept\n", i)
       fi
     }
#ifndef BUG_NO_CLOSE_TIDY
  :: !OURS(i) && lone[i] ->
     mk = 0;
     atomic {
       rg = pg; rv = pv;
#ifdef BUG_TIDY_NO_MARK
       if
       :: pk != NOP && nkids == 0 -> printf("MSC: %d reads P: empty\n", i)
#else
       if
       :: pk != NOP && pd == MARK && nkids == 0 -> printf("MSC: %d reads P: marked, empty\n", i)
#endif
       :: else -> rg = 0; printf("MSC: %d reads P: kept\n", i)
       fi
     }
#endif
  :: else -> rg = 0
  fi;
  if
  :: rg != 0 ->
     atomic {
       if
       :: pk == NOP -> skip
       :: pk != NOP && nkids > 0 -> printf("MSC: %d's delete of P: not empty\n", i)
#ifndef BUG_F10
       :: pk != NOP && nkids == 0 && pv != rv -> printf("MSC: %d's delete of P: bad version\n", i)
       :: pk != NOP && nkids == 0 && pv == rv -> delete_p(i, rg, mk)
#else
       :: pk != NOP && nkids == 0 -> delete_p(i, rg, mk)
#endif
       fi
     }
  :: else
  fi;
  atomic { rg = 0; rv = 0; mk = 0; ml = 0; lean = 0; cyc = 0; fin++ }
}

init {
  atomic {
    byte n;
    do
    :: n < N -> run obj(n); n++
    :: else -> break
    od
  }
}

/* Once nothing can move: every object is done, and no plain marked
 * parent is left empty (a container's the server reaps). */
active proctype quiet() {
  bool pleft;
  timeout ->
  assert(fin == N);
  pleft = (pk == PLAIN && pd == MARK && nkids == 0);
  assert(!(pleft))
}
