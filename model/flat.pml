/* SPDX-License-Identifier: Apache-2.0 */
/* flat.pml: the flat lock (ZKL_MUTEX_FLAT): lib/engine/flat.c's create,
 * read and wait, lib/zk/batch.c's with_set (the create's transaction
 * carries a setData of the node, whose stat gives the czxid, the token,
 * and leaves the node at data version 1), the node's ACL (every right to
 * the client's own identity alone, lib/base/digest.c), the claim a client
 * keeps on the name while an acquisition of its makes or holds the node
 * (acq.c zkl__claim_take), and lib/engine/release.c's guarded release
 * (one transaction: a setData of the node at version 1, which needs the
 * identity's write right, then its delete; no read), checked with spin.
 * model/README.md ("The flat lock") says what is modelled and what is
 * left out; scripts/model.sh runs the checks.
 *
 * One name K, one ephemeral node or none. Two clients C0, C1 (sessions and
 * identities 1 and 2, or both 1 with SHARED: two acquisitions of one
 * process, which then take turns at the claim) each lock and unlock
 * CYCLES times. A create that finds K reads it with a watch and waits for
 * the watch, then creates again. A co-tenant (the rogue, session 3, with
 * no identity of ours: its creates are plain, at version 0, and open to
 * all writers) may delete K, create it, or replace it.
 * Each step below is one request applied at the server with its reply
 * heard at once, unless the reply is lost (LOSTREPLY).
 *
 * Bounds (spin -DNAME=VALUE):
 *   CYCLES     lock/unlock cycles per client                        [2]
 *   ROGUE      the rogue's deletes, creates and replaces of K       [0]
 *   LOSTREPLY  creates whose reply is lost (applied or not)         [0]
 *   SHARED     both clients on one session (one identity)
 *   LIVE       the liveness claim instead of the end-state check (run
 *              pan with -a -f; a rogue's own node goes in the end, its
 *              session ending, so ROGUE may stay)
 * Guards removed (model/README.md, "The flat lock"):
 *   BUG_BLIND_UNLOCK   the unlock deletes K with no guard
 *   BUG_GUARD_ANY_ACL  the guard's setData passes whoever made K (the
 *                      node open to all writers, as a plain create's)
 *   BUG_GUARD_ANY_VERSION  the guard's setData at any version (-1)
 *   BUG_NO_CLAIM       two acquisitions of one client at once (SHARED)
 *   BUG_ADOPT_OWNER    after a lost reply, K adopted on its owner alone
 *   BUG_ADOPT_ANY      after a lost reply, K adopted whoever made it
 *   BUG_TOKEN_LATER    the token read by a later getData, not taken from
 *                      the create's transaction
 *   BUG_NO_WATCH_WAIT  the read that finds K taken sets no watch (as a
 *                      try's), so the waiter waits for an event that
 *                      never comes and never creates again
 */

#ifndef CYCLES
#define CYCLES 2
#endif
#ifndef ROGUE
#define ROGUE 0
#endif
#ifndef LOSTREPLY
#define LOSTREPLY 0
#endif

#ifdef SHARED
#define SID(c) 1
#else
#define SID(c) ((c) + 1)
#endif
#define RSID 3   /* the rogue's session */
#define OPEN 9   /* kacl: a plain create's ACL, every right to everyone */
#ifdef SHARED
#define IDENT(c) 1
#else
#define IDENT(c) ((c) + 1)
#endif
#define RBY 2    /* kby: made by the rogue */
#define RGUID 99 /* the guid in the rogue's data */

/* ZooKeeper: K */
byte zxid;       /* the last zxid given */
bool kex;        /* K exists */
byte kown;       /* its ephemeralOwner */
byte kcz;        /* its czxid */
byte kguid;      /* the guid line in its data */
byte kby;        /* who made it (not seen by anyone: for the asserts) */
byte kver;       /* its data version */
byte kacl;       /* the identity its ACL gives the write right, or OPEN */
byte claim;      /* SHARED: the client (c + 1) whose acquisition makes or
                  * holds K; 0: none */
bool kw[2];      /* client c's watch on K, set at the server */
bool kfired[2];  /* it fired: the event waits in c's session */

/* the clients, as the asserts see them */
#define S_CREATE 0 /* step_create */
#define S_READ 1   /* step_node_read: NODEEXISTS, or the reply was lost */
#define S_WAIT 2   /* step_node_watched, parked */
#define S_TOKEN 3  /* BUG_TOKEN_LATER: created, token not yet read */
#define S_HOLD 4   /* held: the critical section */
#define S_DONE 6
byte st[2];
bool held[2];    /* c believes it holds */
byte tok[2];     /* its token */
bool stolen[2];  /* someone else deleted the node of c's hold */
byte lasttok;    /* the last token a hold began with */
byte fin;
byte lost_left = LOSTREPLY;

/* K deleted by `by`: the watches on it fire; a hold whose node it was is
 * stolen, if someone else deleted it */
inline k_deleted(by) {
  kex = 0;
  if :: kw[0] -> kw[0] = 0; kfired[0] = 1 :: else fi;
  if :: kw[1] -> kw[1] = 0; kfired[1] = 1 :: else fi;
  if :: by != 0 && held[0] && kcz == tok[0] -> stolen[0] = 1 :: else fi;
  if :: by != 1 && held[1] && kcz == tok[1] -> stolen[1] = 1 :: else fi
}

inline k_made(sid, g, by, v, acl) {
  zxid++; kex = 1; kown = sid; kcz = zxid; kguid = g; kby = by; kver = v;
  kacl = acl
}

/* A hold begins with token x. Exclusion is checked here only: it can
 * fail only when a client begins to hold, for K's czxid changes only at
 * a create, whose new zxid no other hold has as its token. What is
 * asserted: no two clients hold while K is the very node each took its
 * token from. A client whose node someone else deleted may still believe
 * it holds (until unlock tells it LOST): that is allowed, as in
 * zklock.pml, and so is a hold that began on a node now gone. */
inline begin_hold(x) {
  tok[c] = x;
  held[c] = 1;
  assert(!(kex && kcz == tok[c] && held[1 - c] && kcz == tok[1 - c]));
  assert(tok[c] > lasttok);
  lasttok = tok[c];
  st[c] = S_HOLD;
  printf("MSC: C%d holds K, token %d\n", c, x)
}

inline end_cycle() {
  held[c] = 0;
  stolen[c] = 0;
  if :: claim == c + 1 -> claim = 0 :: else fi;
  cyc++;
  guid++; /* zkl__guid(): a new acquisition, a new guid */
  if :: cyc < CYCLES -> st[c] = S_CREATE :: else -> st[c] = S_DONE; fin++ fi
}

/* read_found(): after a lost reply, K is ours only if our session owns
 * it and its data carries our guid (for a NODEEXISTS, the same read: K
 * is then never ours, for our create was not applied) */
#if defined(BUG_ADOPT_ANY)
#define MINE (1)
#elif defined(BUG_ADOPT_OWNER)
#define MINE (kown == SID(c))
#else
#define MINE (kown == SID(c) && kguid == guid)
#endif

/* The guard: K's version is the one our create gave (1), and its ACL
 * gives our identity the write right (its own, or everyone's) */
#if defined(BUG_BLIND_UNLOCK)
#define GUARD (1)
#elif defined(BUG_GUARD_ANY_ACL)
#define GUARD (kver == 1)
#elif defined(BUG_GUARD_ANY_VERSION)
#define GUARD (kacl == IDENT(c) || kacl == OPEN)
#else
#define GUARD (kver == 1 && (kacl == IDENT(c) || kacl == OPEN))
#endif

/* SHARED: the other acquisition of this client has no claim on K */
#if defined(SHARED) && !defined(BUG_NO_CLAIM)
#define FREE_CLAIM(c) (claim == 0 || claim == (c) + 1)
#else
#define FREE_CLAIM(c) (1)
#endif

proctype client(byte c) {
  byte cyc;
  byte guid = 10 * (c + 1);
  bool judged; /* the unlock said OK */
  do
  :: atomic { st[c] == S_CREATE && FREE_CLAIM(c) -> claim = c + 1;
       if
       :: !kex -> k_made(SID(c), guid, c, 1, IDENT(c));
          printf("MSC: C%d creates K (czxid %d)\n", c, kcz);
          if
#if LOSTREPLY > 0
          :: lost_left > 0 -> lost_left--; st[c] = S_READ;
             printf("MSC: C%d: the create's reply is lost\n", c)
#endif
          :: true ->
#ifdef BUG_TOKEN_LATER
             st[c] = S_TOKEN
#else
             begin_hold(kcz) /* with_set: the setData's stat, same transaction */
#endif
          fi
       :: kex -> st[c] = S_READ; printf("MSC: C%d create: NODEEXISTS\n", c)
#if LOSTREPLY > 0
       :: !kex && lost_left > 0 -> lost_left--; st[c] = S_READ;
          printf("MSC: C%d create not applied, its reply lost\n", c)
#endif
       fi }
#ifdef BUG_TOKEN_LATER
  :: atomic { st[c] == S_TOKEN ->
       if
       :: kex -> begin_hold(kcz)
       :: else -> end_cycle() /* no node: the acquisition fails */
       fi }
#endif
  /* step_node_read / step_node_read_done / read_found (after a lost reply, behind
   * a sync; its watch is set whatever it finds) */
  :: atomic { st[c] == S_READ ->
       if
       :: !kex -> st[c] = S_CREATE; printf("MSC: C%d reads K: gone\n", c)
       :: kex && MINE -> printf("MSC: C%d reads K: ours, adopted\n", c);
          begin_hold(kcz)
       :: else ->
#ifndef BUG_NO_WATCH_WAIT
          kw[c] = 1;
#endif
          st[c] = S_WAIT;
          printf("MSC: C%d reads K (owner %d): waits\n", c, kown)
       fi }
  /* step_node_watched: the watch fired (K deleted): create again */
  :: atomic { st[c] == S_WAIT && kfired[c] -> kfired[c] = 0; st[c] = S_CREATE }
  /* the unlock: send_guarded()'s transaction, [setData(K, version 1),
   * delete(K)], all or nothing. ZNONODE (gone), ZNOAUTH (someone else's
   * identity made it) or ZBADVERSION (a plain create's, at 0): LOST, and
   * K is left alone (release.c reads it after a ZBADVERSION, and finds
   * it not ours: the same) */
  :: atomic { st[c] == S_HOLD ->
       judged = kex && GUARD;
       printf("MSC: C%d unlock's guarded delete: %d\n", c, judged);
       if
       :: judged -> assert((kby == c && kcz == tok[c])); k_deleted(c)
       :: else
       fi;
       assert(!judged || !stolen[c]);
       judged = 0;
       end_cycle() }
  :: st[c] == S_DONE -> break
  od
}

#if ROGUE > 0
byte rogue_left = ROGUE;
proctype rogue() {
end:
  do
  :: atomic { rogue_left > 0 && kex -> rogue_left--; k_deleted(RBY);
       printf("MSC: rogue deletes K\n") }
  :: atomic { rogue_left > 0 && !kex -> rogue_left--;
       k_made(RSID, RGUID, RBY, 0, OPEN);
       printf("MSC: rogue creates K (czxid %d)\n", kcz) }
  :: atomic { rogue_left > 0 && kex -> rogue_left--; k_deleted(RBY);
       k_made(RSID, RGUID, RBY, 0, OPEN);
       printf("MSC: rogue replaces K (czxid %d)\n", kcz) }
  /* its session ends, or it unlocks: its own node goes (unbounded) */
  :: atomic { kex && kby == RBY -> k_deleted(RBY); printf("MSC: rogue's K goes\n") }
  od
}
#endif

init {
  atomic {
    run client(0);
    run client(1);
#if ROGUE > 0
    run rogue();
#endif
  }
}

#ifndef LIVE
/* Nothing can move: both clients are done. */
active proctype quiet() {
  timeout ->
  assert(fin == 2)
}
#else
/* Every client finishes its cycles. */
ltl live { <> (fin == 2) }
#endif
