/* SPDX-License-Identifier: Apache-2.0 */
/* groupcommit.pml: group commit of a session's writes (lib/zk/batch.c:
 * submit, joining, send_queued, send_batch, zkl__batch_done, on_multi,
 * requeue, refused_batch, on_after_list, zkl__batch_list, learn_stat,
 * zkl__batch_delete_pair, zkl__batch_create_pair), checked with spin. model/README.md ("Group
 * commit") says what is modelled and what is left out; scripts/model.sh
 * runs the checks.
 *
 * One session: its requests reach the server in the order sent (req) and
 * their answers come back in that order (rep) to one completion thread
 * (compl). The server applies a request when it takes it; a multi is
 * evaluated op by op, and all or nothing: the first op that fails gives
 * the transaction its code and nothing is applied. Callers of the session,
 * each a thread of the client:
 *   creator i  (CREATORS, 0 to 2) a lock node's create in directory A
 *              (zkl__batch_create), then the listing of A that must see it
 *              (zkl__batch_list), as step_join() sends them
 *   deleter    (DELETER) the delete of its node e, in another directory
 *   pair       (PAIR) a release that takes its parent: the delete of its
 *              node p in A and of A, one transaction
 *              (zkl__batch_delete_pair)
 *   maker      (CPAIR) a lock object's first acquire (acquire.c send_join,
 *              lean): A's create, with its setData, and its node's create
 *              in A, one transaction (zkl__batch_create_pair); the node's
 *              czxid, its token, is the setData's (the probe). No listing
 *              with it (unlisted).
 *   outsider   (FAULTS) another session: deletes e or p, puts a node x in
 *              A, or takes creator 0's path (its create then fails
 *              ZNODEEXISTS); with CPAIR, makes A while it is missing (the
 *              maker's parent then fails ZNODEEXISTS), or gives A an ACL
 *              that refuses the maker's node (its create fails ZNOAUTH,
 *              the one way a node can fail in a parent made just before
 *              it in its transaction); each such fault is that op's own
 *
 * Properties:
 *   token    two creates in A never in one transaction (one zxid: one
 *            czxid, one fencing token): assert(ncrA <= 1) at the multi
 *   twice    an op is applied at most once: assert(!once[o])
 *   once     an op answered with an op's error failed by its own fault
 *            (the server found that op failing, or its bound node delete):
 *            assert(ownerr[o]); at the end every op was applied, failed by
 *            its own fault, or was told the connection was lost (or the
 *            client's refusal)
 *   pair     the parent is deleted only in the transaction that deletes
 *            the node, after it: assert(pairok)
 *   token    (also) the maker's node reports as its token the czxid it
 *            has on the server: assert(ctok == czn) at its answer
 *   parent   the maker's parent is made only in a request that makes its
 *            node too (never a persistent parent alone): assert(pwith)
 *   listing  a listing answered OK, whose create was answered OK, sees
 *            that create: assert(lsaw[i])
 *   answer   every call gets one answer: assert(ans[c] == 0) at each
 *   freed    the batch an op points to is alive and holds it (C: a
 *            use after free otherwise): assert(bok)
 *   stuck    nothing can move: every caller has all its answers
 *   (pan -l) no run goes round for ever (PROGRESS)
 *
 * Bounds (spin -DNAME=VALUE):
 *   CREATORS  creators, 0..2                                          [2]
 *   DELETER   the deleter, 0 or 1                                     [1]
 *   PAIR      the pair, 0 or 1                                        [1]
 *   CPAIR     the maker, 0 or 1; with it A is missing at first unless
 *             PAIR (then A is there, p in it)                          [0]
 *   FAULTS    the outsider's actions                                  [1]
 *   CONN      connection losses (the answers out lost, a prefix of
 *             the requests out applied)                                [0]
 *   REFUSE    sends of a queued transaction the client refuses (an
 *             expired handle, no memory)                               [0]
 *   LATELIST  the creator's listing asked in a step of its own, any
 *             time after the create (not in the same step)
 *   PROGRESS  a progress label where each caller ends (pan -l: no run
 *             goes round for ever with a caller unanswered)
 * LATELIST and REFUSE show two open defects, F7 and F8 (model/README.md,
 * "Group commit": finding-gc-* in scripts/model.sh).
 * Guards removed (model/README.md, "Group commit"):
 *   BUG_SHARE_DIR    joining() lets two creates in one directory share
 *                    a transaction (the code before 01ecf72)
 *   BUG_NO_REQUEUE   a failed op's neighbours get its code, not sent again
 *   BUG_NO_DEP       the parent's delete goes again without the node's
 *                    (no `forced`)
 *   BUG_PAIR_BOTH    the node's delete fails with its parent's (forced
 *                    both ways)
 *   BUG_NO_REDO      the listing behind a create sent again is not asked
 *                    again (no rd->redo)
 *   BUG_SINGLE_REDO  send_queued() sends a lone op alone even when its
 *                    listing must be asked again
 *   BUG_RESEND_LOST  a transaction whose answer is lost is sent again
 *   BUG_RESEND_BLAMED the failed op goes again with its neighbours
 *   BUG_PROBE_STALE  the maker's node, sent again without its parent (it
 *                    failed), keeps the probe: its token is the setData's
 *                    of a transaction that was not applied
 *   BUG_PARENT_ALONE the parent's create is not bound to its node's (no
 *                    op->dep): it goes again alone when the node fails
 */

#ifndef CREATORS
#define CREATORS 2
#endif
#ifndef DELETER
#define DELETER 1
#endif
#ifndef PAIR
#define PAIR 1
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifndef CPAIR
#define CPAIR 0
#endif
#ifndef CONN
#define CONN 0
#endif
#ifndef REFUSE
#define REFUSE 0
#endif

/* ops (and their calls): creates C0, C1 in A; the deleter's delete of e;
 * the pair's delete of p (in A) and of A; the maker's create of A (with
 * its setData: one op here, two in the C client's transaction) and of its
 * node in A */
#define C0 0
#define C1 1
#define DL 2
#define PN 3
#define PP 4
#define CP 5
#define CN 6
#define NOPS 7
#define LS(i) (NOPS + (i)) /* creator i's listing, a call */
#define NCALLS 9
#define NONE 255
/* a sequential create in A: creator i's, or the maker's node */
#define INA(o) (o == C0 || o == C1 || o == CN)
/* its index in cnode[] */
#define CI(o) ((o) == CN -> 2 : (o))

/* codes */
#define OK 0
#define NONODE 1
#define NODEEXISTS 2
#define NOTEMPTY 3
#define CONNLOSS 4
#define REFUSED 5
#define NOAUTH 6
#define op_error(rc) (rc == NONODE || rc == NODEEXISTS || rc == NOTEMPTY || rc == NOAUTH)

#define NCALLERS (CREATORS + DELETER + PAIR + CPAIR)

/* requests and answers: a multi (id: a batch), a lone write (id: an op),
 * a listing behind a create (on_after_list; id: the creator), a listing
 * answered straight (zkl__on_children), an exists (learn_stat) */
mtype = { M, S, L, LD, X };
chan req = [10] of { mtype, byte };
chan rep = [10] of { mtype, byte, byte, byte };
/* a request sent: never blocks (a blocked send would break atomicity) */
#define SEND(t, id) assert(nfull(req)); req!t, id

/* ZooKeeper */
bool adir = (PAIR || !CPAIR); /* A */
bool cnode[3];          /* creator i's node in A; [2] the maker's */
bool pnode = PAIR;      /* the pair's node p in A */
bool xnode;             /* the outsider's node in A */
bool enode = DELETER;   /* the deleter's node e */
bool taken;             /* creator 0's path taken: its create ZNODEEXISTS */
bool noauth;            /* A refuses the maker's node: its create ZNOAUTH */
byte conns = CONN;
byte zxid;              /* the last write applied */
byte czn;               /* the maker's node's czxid */
byte psst;              /* the czxid the parent's setData answered (op->sst) */

/* ghosts, for the assertions */
bool once[NOPS];        /* applied */
bool ownerr[NOPS];      /* failed by its own fault, as the server found */
bool lost[NOPS];        /* told the connection was lost */
bool ans[NCALLS];       /* answered */
byte arc[NCALLS];       /* the answer */
bool lsaw[2];           /* the listing answered saw its create */
bool pairok = 1;
bool pwith = 1;         /* the maker's parent made with its node */
byte ctok;              /* the token the maker's node was answered with */
byte fin;

/* the session (batch.c), under s->bmu */
#define NB 5
byte bo[NB * NOPS];     /* batch b's ops, in order: b->ops */
byte bn[NB];            /* b->n */
bool bused[NB];
bool bsent[NB];         /* b->sent */
byte brd[NB];           /* b->rds: bit i, creator i's listing */
byte sq[NB];            /* s->queued, in order */
byte sqn;
byte inflight;          /* s->inflight */
byte refuse = REFUSE;
/* each op (bop_t), and its call's bop */
byte ob[NOPS] = NONE;   /* op->b */
/* s->bmu held by on_multi() from its marks through requeue() (the fix of
 * F7): a caller's listing waits for it. BUG_F7, the code before: the two
 * are separate holds, and a listing may come in between. */
bit requeuing;
bool bop[NOPS];         /* op->call->bop */
bool hasrd[2];          /* op->rd */
bool redo[2];           /* rd->redo > 0 */
bool blamed[NOPS];
byte forced[NOPS];      /* op->forced: 0 or a code */
bool probe = CPAIR;     /* CN's op->probe: CP, while it goes with it */
bool probed;            /* CN's op->probed: its czxid the probe's */
bool bok;

/* ---- answers to the callers (zkl__call_finish) ---- */

inline answer(c, rc) {
  assert(ans[c] == 0);
  ans[c] = 1;
  arc[c] = rc;
  printf("MSC: call %d answered %d\n", c, rc);
  /* the client's code: the owner finds out by other means (a create's
   * node by its guid) */
  if :: c < NOPS && (rc == CONNLOSS || rc == REFUSED) -> lost[c] = 1 :: else fi;
  if :: c < NOPS && op_error(rc) -> assert(ownerr[c]) :: else fi;
  if :: c == CN && rc == OK -> assert(ctok == czn) :: else fi
}

inline list_answer(i, rc, saw) {
  answer(LS(i), rc);
  lsaw[i] = saw
}

/* ---- the server ---- */

byte sc0, sc1, sp, sx, se, sa, ncrA, k, os;
bool pnin, ppbad; /* this transaction: p deleted; A deleted, p not before */
bool scn, spc;    /* the maker's node; A made in this request */

/* op o evaluated on the shadow state, as the server does op by op in a
 * multi (each op sees the ones before it); rc its code */
inline evalop(o, rc) {
  rc = OK;
  if
  :: INA(o) ->
     if
     :: !sa -> rc = NONODE
     :: o == C0 && taken -> rc = NODEEXISTS
     :: o == CN && noauth -> rc = NOAUTH
     :: else -> if :: o == C0 -> sc0 = 1 :: o == C1 -> sc1 = 1 :: else -> scn = 1 fi; ncrA++
     fi
  :: o == CP -> if :: sa -> rc = NODEEXISTS :: else -> sa = 1; spc = 1 fi
  :: o == DL -> if :: se -> se = 0 :: else -> rc = NONODE fi
  :: o == PN -> if :: sp -> sp = 0; pnin = 1 :: else -> rc = NONODE fi
  :: o == PP ->
     if
     :: !sa -> rc = NONODE
     :: sc0 || sc1 || sp || sx || scn -> rc = NOTEMPTY
     :: else -> sa = 0; if :: !pnin -> ppbad = 1 :: else fi
     fi
  fi
}

inline shadow() {
  sc0 = cnode[0]; sc1 = cnode[1]; scn = cnode[2]; sp = pnode; sx = xnode;
  se = enode; sa = adir; ncrA = 0; pnin = 0; ppbad = 0; spc = 0
}

/* the shadow state applied, at a zxid of its own; a parent made here has
 * its node made here too, for the setData's czxid (the parent's, this
 * zxid) to be the node's */
inline commit() {
  pairok = !ppbad;
  assert(pairok);
  pwith = !spc || (scn && !cnode[2]);
  assert(pwith);
#if CPAIR
  zxid++; /* only the maker's token reads it */
  if :: scn && !cnode[2] -> czn = zxid :: else fi;
  if :: spc -> psst = zxid :: else fi;
#endif
  cnode[0] = sc0; cnode[1] = sc1; cnode[2] = scn; pnode = sp; enode = se;
  adir = sa
}

inline applied(o) {
  assert(!once[o]);
  once[o] = 1
}

/* the request (t, id) applied; rc, aux its answer (a multi: the index of
 * the op that failed; a listing: whether it sees its create) */
inline apply(t, id, rc, aux) {
  rc = OK;
  aux = 0;
  shadow();
  if
  :: t == M ->
     k = 0;
     do
     :: k < bn[id] ->
        os = bo[id * NOPS + k];
        evalop(os, rc);
        if
        :: rc != OK -> ownerr[os] = 1; aux = k;
           printf("MSC: multi %d fails: op %d code %d\n", id, os, rc); break
        :: else -> k++
        fi
     :: else -> break
     od;
     if
     :: rc == OK ->
        printf("MSC: multi %d applied (%d ops)\n", id, bn[id]);
        assert(ncrA <= 1);
        commit();
        k = 0;
        do
        :: k < bn[id] -> os = bo[id * NOPS + k]; applied(os); k++
        :: else -> break
        od
     :: else
     fi
  :: t == S ->
     evalop(id, rc);
     if
     :: rc == OK -> commit(); applied(id); printf("MSC: op %d applied alone\n", id)
     :: else -> ownerr[id] = 1; printf("MSC: op %d alone fails: code %d\n", id, rc)
     fi
  :: t == L || t == LD ->
     if :: adir -> aux = cnode[id] :: else -> rc = NONODE fi;
     printf("MSC: listing of creator %d (sees its node: %d)\n", id, aux)
  :: t == X ->
     if :: cnode[CI(id)] -> skip :: else -> rc = NONODE fi
  fi;
  sc0 = 0; sc1 = 0; sp = 0; sx = 0; se = 0; sa = 0; ncrA = 0; k = 0; os = 0;
  pnin = 0; ppbad = 0; scn = 0; spc = 0
}

active proctype server() {
  mtype t;
  byte id, rc, aux;
  bool apl;
end:
  do
  :: atomic { req?t, id -> apply(t, id, rc, aux); assert(nfull(rep)); rep!t, id, rc, aux; rc = 0; aux = 0; id = 0 }
  :: atomic { conns > 0 && len(req) > 0 ->
       /* the connection drops: of the requests out, a prefix was
        * applied; every answer out is lost */
       conns--;
       apl = 1;
       printf("MSC: the connection is lost\n");
       do
       :: req?t, id ->
          if :: apl -> apply(t, id, rc, aux) :: apl = 0 fi;
          assert(nfull(rep)); rep!t, id, CONNLOSS, 0
       :: empty(req) -> break
       od;
       apl = 0; rc = 0; aux = 0; id = 0 }
  od
}

/* ---- batch.c ---- */

byte nb, j2, j3, o2; /* scratch, 0 between steps */

inline batch_new(b) {
  b = 0;
  do
  :: b < NB && bused[b] -> b++
  :: b < NB && !bused[b] -> break
  :: b == NB -> assert(false)
  od;
  bused[b] = 1; bn[b] = 0; bsent[b] = 0; brd[b] = 0
}

inline batch_free(b) {
  bused[b] = 0; bn[b] = 0; bsent[b] = 0; brd[b] = 0
}

inline append(b, o) {
  bo[b * NOPS + bn[b]] = o;
  bn[b]++;
  ob[o] = b
}

/* is op o in batch b, b alive (op->b dereferenced)? */
inline holds(b, o) {
  bok = 0;
  if
  :: b != NONE && bused[b] ->
     j3 = 0;
     do
     :: j3 < bn[b] && bo[b * NOPS + j3] == o -> bok = 1; break
     :: j3 < bn[b] && bo[b * NOPS + j3] != o -> j3++
     :: j3 >= bn[b] -> break
     od
  :: else
  fi;
  j3 = 0
}

/* send_rd(): the listing behind the transaction that carries its create */
inline send_rd(i) {
  SEND(L, i)
}

/* send_single() */
inline send_single(o) {
  SEND(S, o)
}

/* send_batch(): the multi, then the listings asked behind it */
inline send_batch(b) {
  SEND(M, b);
  bsent[b] = 1;
  j2 = 0;
  do
  :: j2 < 2 -> if :: brd[b] & (1 << j2) -> send_rd(j2) :: else fi; j2++
  :: else -> break
  od;
  brd[b] = 0;
  j2 = 0
}

/* joining(): the last queued transaction, unless it has a create in the
 * directory of op or of op2 (same_lock(): every sequential create here is
 * in A; the maker's parent, not sequential, is of no lock but its own
 * path) */
inline joining(o, o2x, q) {
  q = NONE;
  if
  :: sqn > 0 ->
     q = sq[sqn - 1];
#ifndef BUG_SHARE_DIR
     if
     :: INA(o) || (o2x != NONE && INA(o2x)) ->
        j2 = 0;
        do
        :: j2 < bn[q] ->
           if :: INA(bo[q * NOPS + j2]) -> q = NONE; break
              :: else -> j2++ fi
        :: else -> break
        od;
        j2 = 0
     :: else
     fi
#endif
  :: else
  fi;
  if
  :: q == NONE -> batch_new(q); sq[sqn] = q; sqn++
  :: else
  fi
}

/* submit(op, op2) */
inline submit(o, o2x) {
  printf("MSC: op %d submitted\n", o);
  if
  :: inflight < 1 && sqn == 0 && o2x == NONE ->
     inflight++;
     send_single(o)
  :: else ->
     joining(o, o2x, nb);
     append(nb, o); bop[o] = 1;
     if :: o2x != NONE -> append(nb, o2x); bop[o2x] = 1 :: else fi;
     if
     :: inflight < 1 ->
        /* a pair on an idle session: its transaction leaves now */
        assert(sqn == 1);
        sqn = 0;
        inflight++;
        send_batch(nb)
     :: else
     fi;
     nb = 0
  fi
}

/* zkl__batch_list(): creator i's listing, behind its create */
inline batch_list(i) {
  if
  :: !bop[i] -> SEND(LD, i) /* sent alone, or answered: the session's order */
  :: else ->
     holds(ob[i], i);
     assert(bok);
     bok = 0;
     hasrd[i] = 1;
     if
     :: bsent[ob[i]] -> send_rd(i)
     :: else -> brd[ob[i]] = brd[ob[i]] | (1 << i)
     fi
  fi
}

/* op_answered() */
inline op_answered(o, rc) {
  if
  :: INA(o) && rc == OK && !(o == CN && probed) -> SEND(X, o) /* learn_stat() */
  :: else ->
     if :: o == CN && rc == OK -> ctok = psst :: else fi; /* the probe's */
     answer(o, rc)
  fi
}

/* refused_batch(): every op and listing of b gets the client's code; a
 * listing still out to be asked again behind b gets its first answer
 * instead (the fix of F8; BUG_F8, the code before: it waits for b) */
inline refused_batch(b, rc) {
#ifndef BUG_F8
  j2 = 0;
  do
  :: j2 < bn[b] -> o2 = bo[b * NOPS + j2];
     if :: (o2 == C0 || o2 == C1) && redo[o2] -> redo[o2] = 0 :: else fi;
     j2++
  :: else -> break
  od;
  o2 = 0;
#endif
  j2 = 0;
  do
  :: j2 < 2 -> if :: brd[b] & (1 << j2) -> redo[j2] = 0; list_answer(j2, rc, 0) :: else fi; j2++
  :: else -> break
  od;
  j2 = 0;
  do
  :: j2 < bn[b] -> o2 = bo[b * NOPS + j2];
     if :: forced[o2] -> op_answered(o2, forced[o2]) :: else -> op_answered(o2, rc) fi;
     j2++
  :: else -> break
  od;
  j2 = 0; o2 = 0;
  batch_free(b)
}

/* send_queued(): b alone if it has one op whose listing need not be asked
 * again; else as a transaction. Refused (REFUSE): refused_batch. */
inline send_queued(b) {
  if
  :: refuse > 0 -> refuse--; o2 = 1
  :: true
  fi;
  if
  :: o2 ->
     printf("MSC: the client refuses a queued transaction (%d ops)\n", bn[b]);
     o2 = 0;
     inflight--;
     refused_batch(b, REFUSED)
#ifdef BUG_SINGLE_REDO
  :: !o2 && bn[b] == 1 ->
#else
  :: !o2 && bn[b] == 1 && !((bo[b * NOPS] == C0 || bo[b * NOPS] == C1) && hasrd[bo[b * NOPS]] && redo[bo[b * NOPS]]) ->
#endif
     o2 = bo[b * NOPS];
     bop[o2] = 0;
     send_single(o2);
     if
     :: (o2 == C0 || o2 == C1) && hasrd[o2] ->
        /* its listing follows it in the session's order, answered
         * straight, and the rd is freed */
        hasrd[o2] = 0;
        SEND(LD, o2)
     :: else
     fi;
     o2 = 0;
     batch_free(b)
  :: else -> send_batch(b)
  fi
}

/* zkl__batch_done() */
inline batch_done() {
  inflight--;
  if
  :: inflight < 1 ->
     do
     :: sqn > 0 ->
        inflight++;
        nb = sq[0];
        sq[0] = sq[1]; sq[1] = sq[2]; sq[2] = sq[3]; sq[3] = sq[4]; sq[4] = 0;
        sqn--;
        send_queued(nb)
     :: else -> break
     od;
     nb = 0
  :: else
  fi
}

/* on_multi(): op o goes again, in the transaction requeue() puts at the
 * head: a neighbour of the failed op, not bound to it */
#ifdef BUG_RESEND_BLAMED
#define AGAIN(o) (bl != NONE && !forced[o])
#else
#define AGAIN(o) (bl != NONE && !blamed[o] && !forced[o])
#endif

/* the completion thread: each handler, or each part of one that takes
 * s->bmu or c->mu, one atomic step */
active proctype compl() {
  mtype t;
  byte id, rc, aux, b, q, o, bl;
  bool again;
end:
  do
  :: atomic { rep?t, id, rc, aux ->
       if
       :: t == S ->
          /* on_single_create / on_single_void: the slot first */
          batch_done();
          if :: id == CN -> ctok = czn :: else fi; /* a create's stat came with it */
          answer(id, rc)
       :: t == X -> /* on_stat_learnt(): gone already, found by guid */
          if :: id == CN -> ctok = czn :: else fi;
          if :: rc == OK -> answer(id, OK) :: else -> answer(id, CONNLOSS) fi
       :: t == LD -> list_answer(id, rc, aux) /* zkl__on_children */
       :: t == L -> /* on_after_list() */
          if
          :: redo[id] ->
             /* behind the transaction that carries its create now */
             redo[id] = 0;
             holds(ob[id], id);
             assert(bok);
             bok = 0;
             if
             :: bsent[ob[id]] -> send_rd(id)
             :: else -> brd[ob[id]] = brd[ob[id]] | (1 << id)
             fi
          :: else -> list_answer(id, rc, aux); hasrd[id] = 0
          fi
       :: t == M -> b = id
       fi;
       if
       :: t != M -> t = X; id = 0; rc = 0; aux = 0
       :: t == M ->
          /* on_multi(), under s->bmu: the failed op, the bound one */
#ifndef BUG_F7
          requeuing = 1;
#endif
          bl = NONE;
          if :: op_error(rc) -> bl = aux :: else fi;
#ifdef BUG_RESEND_LOST
          if :: rc == CONNLOSS -> bl = NOPS :: else fi; /* none blamed, all again */
#endif
          o = 0;
          do
          :: o < bn[b] -> blamed[bo[b * NOPS + o]] = (o == bl); o++
          :: else -> break
          od;
#ifndef BUG_NO_DEP
          if
          :: blamed[PN] -> holds(b, PP);
             if :: bok -> forced[PP] = rc; ownerr[PP] = 1 /* its node's fault */ :: else fi;
             bok = 0
          :: else
          fi;
#endif
#ifdef BUG_PAIR_BOTH
          if
          :: blamed[PP] -> holds(b, PN); if :: bok -> forced[PN] = rc :: else fi; bok = 0
          :: else
          fi;
#endif
#ifndef BUG_PARENT_ALONE
          /* the maker's parent never goes without its node */
          if
          :: blamed[CN] -> holds(b, CP);
             if :: bok -> forced[CP] = rc; ownerr[CP] = 1 /* its node's fault */ :: else fi;
             bok = 0
          :: else
          fi;
#endif
          /* the probe: one transaction, one zxid, the parent's czxid is
           * its node's; gone with the parent when it failed */
          holds(b, CN);
          if
          :: bok && probe && rc == OK -> probed = 1
#ifndef BUG_PROBE_STALE
          :: bok && probe && rc != OK && (blamed[CP] || forced[CP]) -> probe = 0
#endif
          :: else
          fi;
          bok = 0;
          o = 0;
          do
          :: o < bn[b] -> q = bo[b * NOPS + o];
             if
             :: AGAIN(q) ->
#ifndef BUG_NO_REDO
                if :: (q == C0 || q == C1) && hasrd[q] -> redo[q] = 1 :: else fi
#else
                skip
#endif
             :: else -> bop[q] = 0
             fi;
             o++
          :: else -> break
          od;
          o = 0; q = 0
       fi }
     if
     :: t == M ->
        /* requeue(): the neighbours, in their order, at the head */
        atomic {
          again = 0;
#ifndef BUG_NO_REQUEUE
          o = 0;
          do
          :: o < bn[b] -> id = bo[b * NOPS + o];
             if
             :: AGAIN(id) ->
                if :: !again -> batch_new(q); again = 1 :: else fi;
                append(q, id)
             :: else
             fi;
             o++
          :: else -> break
          od;
          if
          :: again ->
             printf("MSC: %d ops sent again, at the head\n", bn[q]);
             sq[4] = sq[3]; sq[3] = sq[2]; sq[2] = sq[1]; sq[1] = sq[0]; sq[0] = q; sqn++
          :: else
          fi;
#endif
          o = 0; id = 0; q = 0;
          requeuing = 0
        }
        /* zkl__batch_done(), then the answers under c->mu */
        atomic {
          batch_done();
          o = 0;
          do
          :: o < bn[b] -> id = bo[b * NOPS + o];
#ifdef BUG_NO_REQUEUE
             if :: forced[id] -> op_answered(id, forced[id]) :: else -> op_answered(id, rc) fi;
#else
             if
             :: AGAIN(id) -> skip /* sent again */
             :: forced[id] -> op_answered(id, forced[id])
             :: else -> op_answered(id, rc)
             fi;
#endif
             o++
          :: else -> break
          od;
          batch_free(b);
          o = 0; id = 0; b = 0; bl = 0; again = 0; t = X; rc = 0; aux = 0
        }
     :: else
     fi
  od
}

/* ---- the callers ---- */

proctype creator(byte i) {
  atomic {
    !requeuing -> /* submit() and zkl__batch_list() take s->bmu */
    submit(i, NONE);
#ifndef LATELIST
    batch_list(i)
#endif
  }
#ifdef LATELIST
  atomic { !requeuing -> batch_list(i) }
#endif
  atomic {
    ans[i] && ans[LS(i)] ->
    if
    :: arc[i] == OK && arc[LS(i)] == OK -> assert(lsaw[i])
    :: else
    fi;
    fin++
  }
#ifdef PROGRESS
progress:
  skip
#endif
}

proctype deleter() {
  atomic { submit(DL, NONE) }
  atomic { ans[DL] -> fin++ }
#ifdef PROGRESS
progress:
  skip
#endif
}

proctype pair() {
  atomic { submit(PN, PP) }
  atomic { ans[PN] && ans[PP] -> fin++ }
#ifdef PROGRESS
progress:
  skip
#endif
}

/* a lock object's first acquire of a key it has not seen: its parent and
 * its node in one transaction, unlisted (acquire.c send_join, lean) */
proctype maker() {
  atomic { !requeuing -> submit(CP, CN) }
  atomic { ans[CP] && ans[CN] -> fin++ }
#ifdef PROGRESS
progress:
  skip
#endif
}

/* another session: each of its actions makes one op fail by its own
 * fault (its node gone, its directory not empty, its path taken; A there
 * already, or refusing the maker's node) */
active proctype outsider() {
  byte f = FAULTS;
end:
  do
  :: atomic { f > 0 && enode -> enode = 0; f--; printf("MSC: outsider deletes e\n") }
  :: atomic { f > 0 && pnode -> pnode = 0; f--; printf("MSC: outsider deletes p\n") }
  :: atomic { f > 0 && adir && !xnode -> xnode = 1; f--; printf("MSC: outsider creates x in A\n") }
  :: atomic { f > 0 && CREATORS > 0 && !taken -> taken = 1; f--; printf("MSC: outsider takes creator 0's path\n") }
  :: atomic { f > 0 && CPAIR && !adir -> adir = 1; zxid++; f--; printf("MSC: outsider makes A\n") }
  :: atomic { f > 0 && CPAIR && !noauth -> noauth = 1; f--; printf("MSC: outsider makes A refuse the maker's node\n") }
  od
}

init {
  atomic {
    byte i;
    do
    :: i < CREATORS -> run creator(i); i++
    :: else -> break
    od;
#if DELETER
    run deleter();
#endif
#if PAIR
    run pair();
#endif
#if CPAIR
    run maker();
#endif
  }
}

/* Nothing can move: every caller has all its answers, every op was
 * applied, failed by its own fault or was told the connection was lost. */
active proctype quiet() {
  byte o;
  timeout ->
  assert(fin == NCALLERS && len(req) == 0 && len(rep) == 0);
  do
  :: o < NOPS ->
     if
     :: (o < CREATORS || (o == DL && DELETER) || ((o == PN || o == PP) && PAIR) ||
         (o >= CP && CPAIR)) ->
        assert(once[o] || ownerr[o] || lost[o])
     :: else
     fi;
     o++
  :: else -> break
  od
}
