#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# model.sh: check the spin models of the queue protocol (model/zklock.pml),
# the multi-lock's giving way (model/multilock.pml), the read-write
# lock's downgrade mark (model/rwmark.pml), the counting semaphore
# (model/semaphore.pml), revocation (model/revoke.pml), group commit
# (model/groupcommit.pml), the flat lock (model/flat.pml; under lost
# answers, expiry and deferred deletes, model/flatfaults.pml) and a lock's
# plain parent (model/leanparent.pml; its whole life, model/parentlife.pml).
#
#   bash scripts/model.sh           the bounded checks (make check runs these)
#   bash scripts/model.sh --deep    those and larger bounds, for humans
#   options: -j N       checks run at once (default: the number of CPUs)
#            --keep DIR keep every run, with its pan output and trail, in DIR
#            --only RE  only the checks whose name matches RE (grep -E)
#            --list     list the checks and exit
#
# Each check compiles the model with its own bounds (-D...), runs pan and
# prints one line. A "none" check must find no counterexample; a mutant (a
# guard removed, or the code before a fix) must find one, of a kind named;
# so must a "finding-*" check: a defect of today's code, open (model/README.md).
# A "redundant-*" check removes a guard the model shows is not needed
# (defence in depth). The last line is "model: N passed, N failed"; the exit
# status is 0 only when nothing failed. See model/README.md.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
deep=0 jobs='' keep='' only='' list=0
while [ $# -gt 0 ]; do
  case $1 in
  --deep) deep=1 ;;
  -j) jobs=$2; shift ;;
  -j*) jobs=${1#-j} ;;
  --keep) keep=$2; shift ;;
  --only) only=$2; shift ;;
  --list) list=1 ;;
  -h | --help) sed -n '2,/--list/{/SPDX-License-Identifier/d;s/^# \{0,1\}//p;}' "$0"; exit 0 ;;
  *) echo "model.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
: "${jobs:=$(nproc 2>/dev/null || echo 2)}"
cc=${MODEL_CC:-cc}

# What a counterexample must show: a kind, and what pan prints for it.
kind_re() {
  case $1 in
  excl) echo 'assertion violated.*(incs\[j\]|peer_holds|holders\[|lholders|held\[\(1-c\)\])' ;; # two holders (semaphore: more than N, or two N)
  first) echo 'assertion violated.*nfirst' ;;        # a hold begun on a node that was never first
  unlock) echo 'assertion violated.*judged' ;;       # unlock said OK for a node not ours
  orphan) echo 'assertion violated.*(salive\[nown|!\(left\))' ;; # a node left behind
  stuck) echo 'assertion violated \(+fin==' ;;        # nothing can move, someone not done
  foreign) echo 'assertion violated \(+(nown\[t\]|kby==c|nz==)' ;; # a delete of a node not ours (flatfaults: not the one meant)
  fencing) echo 'assertion violated \(hdel\[tok\[i\]\]' ;; # flatfaults: a hold's token not its node's czxid, or not above the last
  cycle) echo 'acceptance cycle' ;;                  # an acquisition that never ends
  nonprogress) echo 'non-progress cycle' ;;          # nobody ever holds again (livelock)
  partial) echo 'assertion violated allmine' ;;      # a multi-lock held with a member's node gone
  commit) echo 'assertion violated \(wshared' ;;     # an exclusive write committed beside a reader
  told) echo 'assertion violated.*ovl' ;;            # a hold beside a reader ended OK
  overwrite) echo 'assertion violated \(+dirN==0' ;;  # a semaphore directory's max=N overwritten
  rule) echo 'assertion violated ruled' ;;            # a semaphore: a member of another N than the directory's admitted, or one of its N refused
  fenced) echo 'assertion violated \( *!\(forced\)' ;; # a revoked holder's guarded write committed
  revline) echo 'assertion violated \(+ndata&asked' ;; # a revoker's line gone from the holder's data
  token) echo 'assertion violated \(+(ncrA|ctok|tok\[c\]>lasttok)' ;; # two creates in one directory in one transaction; a token not the node's czxid; flat: a token not above the last
  twice) echo 'assertion violated +!\(once\[' ;;     # an op applied twice
  once) echo 'assertion violated.*ownerr\[' ;;       # an op failed for another op's fault, or never applied
  pair) echo 'assertion violated pairok' ;;          # a parent deleted without its node's delete before it
  parent) echo 'assertion violated pwith' ;;         # a lock's parent made without its node
  listing) echo 'assertion violated lsaw' ;;         # a listing that does not see its create
  answer) echo 'assertion violated \(+ans\[' ;;      # a call answered twice
  freed) echo 'assertion violated bok' ;;            # an op's transaction used once freed (C: use after free)
  pforeign) echo 'assertion violated pdelok' ;;      # a lock parent deleted that was neither made by us nor marked
  porphan) echo 'assertion violated +!\(pleft\)' ;;  # an empty marked parent left when every object is gone
  ptoken) echo 'assertion violated \(token>last_token\)' ;; # a holder's token not above the last one
  *) echo "model.sh: unknown kind $1" >&2; echo '^$never' ;;
  esac
}
# shows KINDS FILE: pan's output shows one of KINDS (a+b: a or b)
shows() {
  local k
  for k in $(printf '%s\n' "$1" | tr + ' '); do
    grep -qE "$(kind_re "$k")" "$2" && return 0
  done
  return 1
}

SAFE="-m20000 -w23"
LIVE="-m20000 -w23 -a -f"
# non-progress cycles (cc -DNP), no fairness: every process is bounded but
# for a multi-lock's giving way and enqueueing again
NPROG="-m20000 -w20 -l"
ML=multilock.pml
RW=rwmark.pml
SEM=semaphore.pml
RV=revoke.pml
GC=groupcommit.pml
LP=leanparent.pml
PL=parentlife.pml
FL=flat.pml
FF=flatfaults.pml
# a copy of a name matters only while a create's reply is lost: RDURING
COPY="-DROGUE=1 -DRCOPY=1 -DRPLANT=0 -DRDELETE=0 -DRREPLACE=0 -DRDURING"

# name | expect (none, or the kinds of counterexample) | -D bounds | pan | cc
# | model file in model/ (zklock.pml if empty)
checks="
safety-unlock-replace|none|-DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
safety-faults|none|-DCONN=1 -DGIVEUP=1|$SAFE|-DSAFETY
safety-expiry|none|-DCONN=1 -DEXPIRE=1 -DGIVEUP=0|$SAFE|-DSAFETY
safety-hostile|none|-DCONN=0 -DGIVEUP=0 -DROGUE=2|$SAFE|-DSAFETY
safety-three|none|-DN=3 -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
safety-nomem|none|-DNOMEM=1 -DCONN=0 -DGIVEUP=0|$SAFE|-DSAFETY
safety-copy-giveup|none|-DCONN=1 -DGIVEUP=1 $COPY|$SAFE|-DSAFETY
liveness-planted|none|-DLIVE -DCONN=0 -DGIVEUP=1 -DROGUE=1 -DRDELETE=0 -DRREPLACE=0|$LIVE|-DNFAIR=3
safety-curator-peer|none|-DPEER -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
safety-readers|none|-DN=3 -DREADERS=2 -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
safety-readers-peer|none|-DPEER -DREADERS=1 -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
mutant-rw-nearest|excl|-DBUG_RW_NEAREST_ONLY -DN=3 -DREADERS=1 -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
mutant-no-lowers|excl|-DPEER -DBUG_NO_LOWERS -DCONN=0 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-no-sole|excl|-DBUG_NO_SOLE -DN=3 -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
safety-stale-server|none|-DSTALE_SERVER -DCONN=1 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-no-epoch|excl|-DBUG_NO_EPOCH -DSTALE_SERVER -DCONN=1 -DGIVEUP=0|$SAFE|-DSAFETY
safety-delete-disconnected|none|-DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRREPLACE=0 -DRDURING|$SAFE|-DSAFETY
mutant-no-epoch-delete|first|-DBUG_NO_EPOCH -DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRREPLACE=0 -DRDURING|$SAFE|-DSAFETY
mutant-no-owner|excl+foreign+first|-DBUG_NO_OWNER -DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0 -DRDURING|$SAFE|-DSAFETY
mutant-wait-planted|cycle|-DBUG_WAIT_PLANTED -DLIVE -DCONN=0 -DGIVEUP=1 -DROGUE=1 -DRDELETE=0 -DRREPLACE=0|$LIVE|-DNFAIR=3
mutant-f2-listing|orphan|-DBUG_F2_LISTING -DCONN=1 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-f1-unlock|unlock|-DBUG_F1 -DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
mutant-f3-nomem|stuck|-DBUG_F3 -DNOMEM=1 -DCONN=0 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-f4-copy|stuck|-DBUG_F4 -DCONN=1 -DGIVEUP=0 $COPY|$SAFE|-DSAFETY
mutant-f4-deferred|foreign|-DBUG_F4_PDEL -DCONN=1 -DGIVEUP=1 $COPY|$SAFE|-DSAFETY
lean0-faults|none|-DLEAN0 -DCONN=1 -DGIVEUP=1|$SAFE|-DSAFETY
lean0-hostile|none|-DLEAN0 -DCONN=0 -DGIVEUP=0 -DROGUE=2|$SAFE|-DSAFETY
lean0-curator-peer|none|-DLEAN0 -DPEER -DCONN=0 -DGIVEUP=1|$SAFE|-DSAFETY
mutant-lean0-any|excl|-DLEAN0 -DBUG_LEAN_ANY -DCONN=0 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-lean0-peer|excl|-DLEAN0 -DBUG_LEAN_ANY -DPEER -DCONN=0 -DGIVEUP=0|$SAFE|-DSAFETY
mutant-lean0-guard-any-version|foreign+unlock|-DLEAN0 -DBUG_GUARD_ANY_VERSION -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
lean0-mark-hostile|none|-DLEAN0 -DMARK=1 -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
mutant-mark-blind|foreign+unlock|-DLEAN0 -DMARK=1 -DBUG_MARK_BLIND -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
mutant-lean-unlock|unlock|-DBUG_LEAN_UNLOCK -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
mutant-no-own-read|first|-DBUG_NO_OWN_READ -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0|$SAFE|-DSAFETY
safety-hostile-relist|none|-DNO_HANDOFF -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
mutant-no-own-read-relist|first|-DBUG_NO_OWN_READ -DNO_HANDOFF -DCONN=0 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY
ml-nested|none|-DMULTIS=1 -DNESTED=2 -DMCYCLES=2 -DNCYCLES=2 -DGIVEUP=1 -DROGUE=1|$SAFE|-DSAFETY|$ML
ml-two-sets|none|-DMULTIS=2 -DNESTED=2 -DMCYCLES=2 -DNCYCLES=2 -DGIVEUP=1|$SAFE|-DSAFETY|$ML
ml-progress|none|-DMULTIS=2 -DNESTED=2 -DMCYCLES=2 -DNCYCLES=2 -DGIVEUP=1|$NPROG|-DNP|$ML
mutant-ml-no-yield|stuck|-DBUG_NO_YIELD -DMULTIS=1 -DNESTED=1|$SAFE|-DSAFETY|$ML
mutant-ml-no-still-held|partial+excl|-DBUG_NO_STILL_HELD -DMULTIS=1 -DNESTED=1 -DROGUE=1|$SAFE|-DSAFETY|$ML
mutant-ml-yield-any|nonprogress|-DBUG_YIELD_ANY -DMULTIS=2 -DNESTED=1|$NPROG|-DNP|$ML
rw-mark|none|-DDOWNGRADE -DGW=3 -DROGUE=1|$SAFE|-DSAFETY|$RW
mutant-rw-ignore-change|commit|-DBUG_IGNORE_CHANGE -DGW=2 -DROGUE=1|$SAFE|-DSAFETY|$RW
mutant-rw-check-any|commit|-DBUG_CHECK_ANY -DGW=2 -DROGUE=1|$SAFE|-DSAFETY|$RW
rw-mark-junk|none|-DDOWNGRADE -DJUNK -DGW=3 -DROGUE=2|$SAFE|-DSAFETY|$RW
rw-liveness|none|-DLIVE -DDOWNGRADE -DJUNK -DSTAY=1 -DGW=2 -DROGUE=2|$LIVE|-DNFAIR=3|$RW
mutant-rw-no-reread|cycle|-DBUG_NO_REREAD -DLIVE -DDOWNGRADE -DJUNK -DSTAY=1 -DGW=1 -DROGUE=1|$LIVE|-DNFAIR=3|$RW
mutant-rw-keep-node|cycle|-DBUG_KEEP_NODE -DLIVE -DDOWNGRADE -DJUNK -DSTAY=1 -DGW=1 -DROGUE=1|$LIVE|-DNFAIR=3|$RW
mutant-rw-no-rewatch|cycle|-DBUG_NO_REWATCH -DLIVE -DDOWNGRADE -DJUNK -DSTAY=1 -DGW=1 -DROGUE=1|$LIVE|-DNFAIR=3|$RW
semaphore-safety|none|-DM=3 -DCYCLES=2 -DGIVEUP=1 -DEXPIRE=1 -DLOSTMARK=1|$SAFE|-DSAFETY|$SEM
semaphore-agree|none|-DM=3 -DL2=3 -DROGUE=1 -DREAP=1|$SAFE|-DSAFETY|$SEM
semaphore-liveness|none|-DLIVE -DM=4 -DSTAY=1 -DLOSTMARK=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-no-name-n|excl|-DBUG_NO_NAME_N -DM=3 -DL2=3 -DROGUE=1|$SAFE|-DSAFETY|$SEM
mutant-semaphore-handoff-any|excl|-DBUG_HANDOFF_ANY -DM=3 -DL0=1 -DL1=1 -DL2=1 -DGIVEUP=1|$SAFE|-DSAFETY|$SEM
mutant-semaphore-watch-nearest|cycle|-DBUG_WATCH_NEAREST -DLIVE -DM=3 -DSTAY=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-no-relay|cycle|-DBUG_NO_RELAY -DBUG_NO_POLL -DLIVE -DM=4 -DSTAY=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-relay-waited|cycle|-DBUG_RELAY_WAITED -DBUG_NO_POLL -DLIVE -DM=4 -DSTAY=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-no-poll|cycle|-DBUG_NO_POLL -DLIVE -DM=4 -DSTAY=1 -DLOSTMARK=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-no-delete|orphan|-DBUG_NO_DELETE -DM=2|$SAFE|-DSAFETY|$SEM
mutant-semaphore-keep-refused|orphan|-DBUG_KEEP_REFUSED -DM=2 -DL1=3|$SAFE|-DSAFETY|$SEM
semaphore-list-lost|none|-DLISTLOST=1 -DM=2 -DL1=3 -DCYCLES=2 -DREAP=1|$SAFE|-DSAFETY|$SEM
mutant-semaphore-unread-dir|overwrite+rule|-DBUG_UNREAD_DIR -DLISTLOST=1 -DM=2 -DL1=3 -DCYCLES=2 -DREAP=1|$SAFE|-DSAFETY|$SEM
semaphore-race|none|-DM=4 -DL1=3 -DL3=3 -DGIVEUP=1 -DLOSTMARK=1|$SAFE|-DSAFETY|$SEM
semaphore-race-bare|none|-DBARE -DM=3 -DL1=3 -DCYCLES=2 -DLISTLOST=1|$SAFE|-DSAFETY|$SEM
semaphore-race-liveness|none|-DLIVE -DM=4 -DL1=3 -DSTAY=1 -DLOSTMARK=1|$LIVE|-DNFAIR=3|$SEM
mutant-semaphore-refuse-lease|rule|-DBUG_REFUSE_LEASE -DM=2 -DL1=3|$SAFE|-DSAFETY|$SEM
mutant-semaphore-support|rule|-DBUG_SUPPORT -DM=3 -DL1=3 -DL2=3|$SAFE|-DSAFETY|$SEM
mutant-semaphore-stale-dir|rule|-DBUG_STALE_DIR -DLISTLOST=1 -DM=2 -DL1=3 -DCYCLES=2 -DREAP=1|$SAFE|-DSAFETY|$SEM
mutant-semaphore-poll-no-others|cycle|-DBUG_POLL_NO_OTHERS -DLIVE -DM=4 -DL1=3 -DSTAY=1 -DLOSTMARK=1|$LIVE|-DNFAIR=3|$SEM
revoke-relay|none|-DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=1|$SAFE|-DSAFETY|$RV
revoke-paused|none|-DGW=3 -DGC=2 -DREVOKERS=2 -DOWNW=0|$SAFE|-DSAFETY|$RV
revoke-downgrade|none|-DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=2|$SAFE|-DSAFETY|$RV
mutant-revoke-downgrade-fresh|revline|-DBUG_DOWNGRADE_FRESH -DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=2|$SAFE|-DSAFETY|$RV
mutant-revoke-no-check|fenced|-DBUG_NO_CHECK -DGW=1 -DGC=1 -DREVOKERS=1 -DOWNW=0|$SAFE|-DSAFETY|$RV
mutant-revoke-set-any|revline|-DBUG_REVOKE_ANY -DGW=1 -DGC=1 -DREVOKERS=2 -DOWNW=0|$SAFE|-DSAFETY|$RV
mutant-revoke-own-any|revline|-DBUG_OWN_ANY -DGW=1 -DGC=1 -DREVOKERS=1 -DOWNW=1|$SAFE|-DSAFETY|$RV
revoke-liveness-forced|none|-DLIVE -DGRACE=1 -DSTAY=1 -DGW=2 -DGC=1 -DREVOKERS=1 -DOWNW=2|$LIVE|-DNFAIR=3|$RV
revoke-liveness-coop|none|-DLIVE -DGRACE=0 -DSTAY=1 -DCOOP=1 -DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=2|$LIVE|-DNFAIR=3|$RV
revoke-liveness-waited|none|-DWAITED -DLIVE -DGRACE=0 -DSTAY=1 -DCOOP=1 -DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=2|$LIVE|-DNFAIR=3|$RV
mutant-revoke-event-gone|cycle|-DBUG_EVENT_GONE -DLIVE -DGRACE=1 -DSTAY=1 -DGW=1 -DGC=1 -DREVOKERS=1 -DOWNW=2|$LIVE|-DNFAIR=3|$RV
mutant-revoke-no-reread|cycle|-DBUG_NO_REREAD -DLIVE -DGRACE=0 -DSTAY=1 -DCOOP=1 -DGW=1 -DGC=1 -DREVOKERS=1 -DOWNW=2|$LIVE|-DNFAIR=3|$RV
mutant-revoke-f9-waited|cycle|-DBUG_F9 -DWAITED -DLIVE -DGRACE=0 -DSTAY=1 -DCOOP=1 -DGW=1 -DGC=1 -DREVOKERS=1 -DOWNW=0|$LIVE|-DNFAIR=3|$RV
gc-safety|none|-DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
gc-lost|none|-DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1 -DCONN=1|$SAFE|-DSAFETY|$GC
gc-progress|none|-DPROGRESS -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$NPROG|-DNP|$GC
mutant-gc-share-dir|token|-DBUG_SHARE_DIR -DCREATORS=2 -DDELETER=1 -DPAIR=0 -DFAULTS=0|$SAFE|-DSAFETY|$GC
mutant-gc-no-requeue|once|-DBUG_NO_REQUEUE -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-no-dep|pair|-DBUG_NO_DEP -DCREATORS=0 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-pair-both|once|-DBUG_PAIR_BOTH -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=0|$SAFE|-DSAFETY|$GC
mutant-gc-no-redo|listing+answer|-DBUG_NO_REDO -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-single-redo|freed+answer|-DBUG_SINGLE_REDO -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-resend-lost|twice|-DBUG_RESEND_LOST -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=0 -DCONN=1|$SAFE|-DSAFETY|$GC
mutant-gc-resend-blamed|nonprogress|-DBUG_RESEND_BLAMED -DPROGRESS -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$NPROG|-DNP|$GC
gc-late-listing|none|-DLATELIST -DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-f7-late-listing|listing+answer+freed|-DBUG_F7 -DLATELIST -DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
gc-refused|none|-DREFUSE=1 -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=0|$SAFE|-DSAFETY|$GC
mutant-gc-f8-refused|freed|-DBUG_F8 -DREFUSE=1 -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=0|$SAFE|-DSAFETY|$GC
gc-create-pair|none|-DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$SAFE|-DSAFETY|$GC
gc-create-pair-lost|none|-DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=0 -DFAULTS=1 -DCONN=1|$SAFE|-DSAFETY|$GC
gc-create-pair-progress|none|-DPROGRESS -DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=0 -DFAULTS=1|$NPROG|-DNP|$GC
mutant-gc-probe-stale|token|-DBUG_PROBE_STALE -DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=0 -DFAULTS=1|$SAFE|-DSAFETY|$GC
mutant-gc-parent-alone|parent|-DBUG_PARENT_ALONE -DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=0 -DFAULTS=1|$SAFE|-DSAFETY|$GC
lean-parent|none|-DROGUE=1|$SAFE|-DSAFETY|$LP
lean-parent-crash|none|-DROGUE=1 -DCRASH=1|$SAFE|-DSAFETY|$LP
lean-parent-cycles|none|-DROGUE=1 -DCYC=3|$SAFE|-DSAFETY|$LP
limit-lean-replant|pforeign|-DROGUE=2|$SAFE|-DSAFETY|$LP
mutant-lean-any-version|pforeign|-DBUG_ANY_VERSION -DROGUE=1|$SAFE|-DSAFETY|$LP
mutant-lean-no-mark|pforeign|-DBUG_TIDY_NO_MARK -DROGUE=1|$SAFE|-DSAFETY|$LP
mutant-lean-no-close-tidy|porphan|-DBUG_NO_CLOSE_TIDY -DROGUE=1|$SAFE|-DSAFETY|$LP
mutant-lean-probe-stale|ptoken|-DBUG_PROBE_STALE -DROGUE=0|$SAFE|-DSAFETY|$LP
parent-life|none|-DN=2 -DCYCLES=2 -DGIVEUP=1 -DROGUE=1|$SAFE|-DSAFETY|$PL
parent-life-three|none|-DN=3 -DCYCLES=1 -DGIVEUP=1 -DROGUE=1 -DREAP=1|$SAFE|-DSAFETY|$PL
mutant-parent-tidy-no-mark|pforeign|-DBUG_TIDY_NO_MARK -DGIVEUP=0 -DRREWRITE=0 -DRDELETE=0|$SAFE|-DSAFETY|$PL
mutant-parent-no-close-tidy|porphan|-DBUG_NO_CLOSE_TIDY -DGIVEUP=0 -DROGUE=0|$SAFE|-DSAFETY|$PL
mutant-parent-f10-any-version|pforeign|-DBUG_F10 -DRPLANT=0 -DRDELETE=0|$SAFE|-DSAFETY|$PL
mutant-parent-f11-mkdir-unseen|pforeign|-DBUG_F11 -DCYCLES=2 -DGIVEUP=0 -DRREWRITE=0 -DRDELETE=0|$SAFE|-DSAFETY|$PL
mutant-parent-f12-unlisted|porphan|-DBUG_F12 -DROGUE=0|$SAFE|-DSAFETY|$PL
flat-safety|none|-DCYCLES=3 -DROGUE=2 -DLOSTREPLY=2|$SAFE|-DSAFETY|$FL
flat-shared|none|-DSHARED -DCYCLES=3 -DROGUE=2 -DLOSTREPLY=2|$SAFE|-DSAFETY|$FL
flat-liveness|none|-DLIVE -DCYCLES=3 -DLOSTREPLY=2|$LIVE|-DNFAIR=3|$FL
flat-liveness-rogue|none|-DLIVE -DSHARED -DROGUE=2 -DLOSTREPLY=2|$LIVE|-DNFAIR=3|$FL
redundant-flat-guid|none|-DBUG_ADOPT_OWNER -DCYCLES=3 -DROGUE=2 -DLOSTREPLY=2|$SAFE|-DSAFETY|$FL
mutant-flat-blind-unlock|foreign+unlock|-DBUG_BLIND_UNLOCK -DROGUE=1|$SAFE|-DSAFETY|$FL
mutant-flat-guard-any-acl|foreign+unlock|-DBUG_GUARD_ANY_ACL -DROGUE=1|$SAFE|-DSAFETY|$FL
mutant-flat-guard-any-version|foreign+unlock|-DBUG_GUARD_ANY_VERSION -DROGUE=1|$SAFE|-DSAFETY|$FL
mutant-flat-no-claim|foreign+unlock+excl|-DBUG_NO_CLAIM -DSHARED -DROGUE=1|$SAFE|-DSAFETY|$FL
redundant-flat-adopt-owner-shared|none|-DBUG_ADOPT_OWNER -DSHARED -DLOSTREPLY=1|$SAFE|-DSAFETY|$FL
mutant-flat-adopt-any|excl|-DBUG_ADOPT_ANY -DLOSTREPLY=1|$SAFE|-DSAFETY|$FL
mutant-flat-token-later|token+excl|-DBUG_TOKEN_LATER -DROGUE=1|$SAFE|-DSAFETY|$FL
mutant-flat-no-watch-wait|cycle|-DBUG_NO_WATCH_WAIT -DLIVE|$LIVE|-DNFAIR=3|$FL
flatf-safety|none|-DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=1 -DROGUE=1|$SAFE|-DSAFETY|$FF
flatf-hostile|none|-DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=1 -DROGUE=2|$SAFE|-DSAFETY|$FF
flatf-expiry|none|-DN=2 -DCYCLES=2 -DCONN=1 -DEXPIRE=1 -DGIVEUP=1 -DROGUE=1|$SAFE|-DSAFETY|$FF
flatf-shared|none|-DSHARED -DN=3 -DCONN=1 -DGIVEUP=1 -DROGUE=2|$SAFE|-DSAFETY|$FF
flatf-liveness|none|-DLIVE -DN=2 -DCYCLES=2 -DCONN=1 -DEXPIRE=1 -DGIVEUP=0 -DROGUE=0|$LIVE|-DNFAIR=3|$FF
flatf-progress|none|-DPROGRESS -DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=1 -DROGUE=1|$NPROG|-DNP|$FF
mutant-flatf-guard-any-acl|foreign+unlock|-DBUG_GUARD_ANY_ACL -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=1|$SAFE|-DSAFETY|$FF
mutant-flatf-guard-any-version|foreign+unlock|-DBUG_GUARD_ANY_VERSION -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=1|$SAFE|-DSAFETY|$FF
mutant-flatf-no-claim|foreign+unlock+excl|-DBUG_NO_CLAIM -DSHARED -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=1|$SAFE|-DSAFETY|$FF
mutant-flatf-adopt-any|fencing+excl|-DBUG_ADOPT_ANY -DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=0 -DROGUE=0|$SAFE|-DSAFETY|$FF
redundant-flatf-adopt-any-shared|none|-DBUG_ADOPT_ANY -DSHARED -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=0|$SAFE|-DSAFETY|$FF
redundant-flatf-token-other|none|-DBUG_TOKEN_OTHER -DSHARED -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=1|$SAFE|-DSAFETY|$FF
mutant-flatf-pdel-owner|foreign|-DBUG_PDEL_OWNER -DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=0 -DROGUE=0|$SAFE|-DSAFETY|$FF
mutant-flatf-retry-any|nonprogress|-DBUG_RETRY_ANY -DPROGRESS -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=0|$NPROG|-DNP|$FF
mutant-flatf-no-watch|cycle|-DBUG_NO_WATCH -DLIVE -DN=2 -DCONN=0 -DGIVEUP=0 -DROGUE=0|$LIVE|-DNFAIR=3|$FF
"
# Larger bounds: each check a few minutes and a few GB at most. deep-expiry
# stores states hash-compacted (-DHC4: a state is missed only on a 64-bit
# hash collision), the others exactly.
DSAFE="-m50000 -w26"
DLIVE="-m50000 -w26 -a -f"
DC="-DSAFETY -DMEMLIM=6000"
deep_checks="
redundant-epoch|none|-DBUG_NO_EPOCH -DCONN=1 -DGIVEUP=1|$DSAFE|$DC
deep-curator-peer|none|-DPEER -DCONN=1 -DGIVEUP=1|$DSAFE|$DC
deep-copy|none|-DCONN=1 -DGIVEUP=1 -DEXPIRE=1 -DROGUE=1 -DRCOPY=1 -DRPLANT=0 -DRDELETE=0 -DRREPLACE=0|$DSAFE|$DC
deep-cycles|none|-DCYCLES=2 -DCONN=1 -DGIVEUP=1|$DSAFE|$DC
deep-three|none|-DN=3 -DCONN=0 -DGIVEUP=2|$DSAFE|$DC
deep-three-hostile|none|-DN=3 -DROGUE=1 -DCONN=0 -DGIVEUP=0|$DSAFE|$DC
deep-hostile|none|-DROGUE=2 -DCONN=1 -DGIVEUP=0 -DRDURING|$DSAFE|$DC
deep-hostile-any|none|-DROGUE=1 -DCONN=1 -DGIVEUP=1|$DSAFE|$DC
deep-lean0-readers|none|-DLEAN0 -DN=3 -DREADERS=2 -DCONN=0 -DGIVEUP=1|$DSAFE|$DC
deep-lean0-hostile|none|-DLEAN0 -DROGUE=2 -DCONN=1 -DGIVEUP=1 -DRDURING|$DSAFE|$DC
deep-lean0-guard-replace|none|-DLEAN0 -DCONN=1 -DGIVEUP=0 -DROGUE=1 -DRPLANT=0 -DRDELETE=0|$DSAFE|$DC
deep-expiry|none|-DCONN=2 -DEXPIRE=1 -DGIVEUP=0|$DSAFE|$DC -DHC4
deep-liveness|none|-DLIVE -DCONN=1 -DGIVEUP=1 -DROGUE=1 -DRDELETE=0 -DRREPLACE=0|$DLIVE|-DNFAIR=3 -DMEMLIM=6000
deep-liveness-expiry|none|-DLIVE -DCONN=1 -DEXPIRE=1 -DGIVEUP=0|$DLIVE|-DNFAIR=3 -DMEMLIM=6000
redundant-owner-recover|none|-DBUG_NO_OWNER_RECOVER -DROGUE=1 -DCONN=1 -DGIVEUP=1|$DSAFE|$DC
deep-ml-three-sets|none|-DMULTIS=3 -DNESTED=1 -DMCYCLES=2 -DNCYCLES=2 -DGIVEUP=1 -DROGUE=1|$DSAFE|$DC|$ML
deep-ml-progress|none|-DMULTIS=2 -DNESTED=2 -DMCYCLES=2 -DNCYCLES=3 -DGIVEUP=1 -DROGUE=1|$DSAFE -l|-DNP -DMEMLIM=6000|$ML
deep-semaphore-four|none|-DM=4 -DGIVEUP=2 -DEXPIRE=1 -DLOSTMARK=1|$DSAFE|$DC|$SEM
deep-semaphore-cycles|none|-DM=4 -DCYCLES=2 -DLOSTMARK=1|$DSAFE|$DC|$SEM
deep-semaphore-agree|none|-DM=3 -DL1=1 -DL2=3 -DCYCLES=2 -DROGUE=1 -DREAP=1|$DSAFE|$DC|$SEM
deep-semaphore-liveness|none|-DLIVE -DM=4 -DSTAY=1 -DLOSTMARK=1 -DGIVEUP=1 -DEXPIRE=1|$DLIVE|-DNFAIR=3 -DMEMLIM=6000|$SEM
redundant-semaphore-no-dir|none|-DBUG_NO_DIR -DM=4 -DL2=3 -DL3=1 -DGIVEUP=1 -DEXPIRE=1|$DSAFE|$DC|$SEM
deep-revoke-relay|none|-DGW=3 -DGC=2 -DREVOKERS=2 -DOWNW=1|$DSAFE|$DC|$RV
deep-revoke-downgrade|none|-DGW=3 -DGC=2 -DREVOKERS=2 -DOWNW=2|$DSAFE|$DC|$RV
deep-revoke-waited|none|-DWAITED -DGW=3 -DGC=2 -DREVOKERS=2 -DOWNW=2|$DSAFE|$DC|$RV
deep-revoke-liveness-forced|none|-DLIVE -DGRACE=1 -DSTAY=1 -DGW=1 -DGC=1 -DREVOKERS=2 -DOWNW=2|$DLIVE|-DNFAIR=3 -DMEMLIM=6000|$RV
deep-revoke-liveness-waited|none|-DWAITED -DLIVE -DGRACE=1 -DSTAY=1 -DCOOP=1 -DGW=2 -DGC=1 -DREVOKERS=2 -DOWNW=2|$DLIVE|-DNFAIR=3 -DMEMLIM=6000|$RV
deep-rw-liveness|none|-DLIVE -DDOWNGRADE -DJUNK -DSTAY=1 -DGW=4 -DROGUE=4|$DLIVE|-DNFAIR=3 -DMEMLIM=6000|$RW
deep-lean-parent|none|-DROGUE=1 -DCYC=4 -DCRASH=1|$DSAFE|$DC|$LP
deep-parent-life|none|-DN=3 -DCYCLES=1 -DGIVEUP=2 -DROGUE=2 -DREAP=1|$DSAFE|$DC|$PL
deep-parent-life-cycles|none|-DN=2 -DCYCLES=3 -DGIVEUP=2 -DROGUE=2 -DREAP=1|$DSAFE|$DC|$PL
deep-flatf-three|none|-DN=3 -DCYCLES=2 -DCONN=1 -DGIVEUP=1 -DROGUE=1|$DSAFE|$DC|$FF
deep-flatf-faults|none|-DN=2 -DCYCLES=2 -DCONN=2 -DEXPIRE=1 -DGIVEUP=1 -DROGUE=1|$DSAFE|$DC|$FF
deep-flatf-shared|none|-DSHARED -DN=3 -DCONN=1 -DEXPIRE=1 -DGIVEUP=1 -DROGUE=2|$DSAFE|$DC|$FF
deep-flatf-liveness|none|-DLIVE -DN=3 -DCYCLES=2 -DCONN=1 -DEXPIRE=1 -DGIVEUP=0 -DROGUE=0|$DLIVE|-DNFAIR=3 -DMEMLIM=6000|$FF
redundant-flatf-blind-retry|none|-DBUG_BLIND_RETRY -DSHARED -DN=3 -DCONN=2 -DGIVEUP=1 -DROGUE=2|$DSAFE|$DC|$FF
redundant-flatf-learn-alone|none|-DBUG_TOKEN_OTHER -DN=2 -DCYCLES=2 -DCONN=1 -DGIVEUP=1 -DROGUE=2|$DSAFE|$DC|$FF
deep-gc-lost-creators|none|-DCREATORS=2 -DDELETER=1 -DPAIR=0 -DFAULTS=2 -DCONN=1|$DSAFE|$DC|$GC
deep-gc-lost|none|-DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1 -DCONN=1|$DSAFE|$DC|$GC
deep-gc-faults|none|-DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=2 -DCONN=1|$DSAFE|$DC|$GC
deep-gc-progress|none|-DPROGRESS -DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1 -DCONN=1|$DSAFE -l|-DNP -DMEMLIM=6000|$GC
deep-gc-create-pair|none|-DCPAIR=1 -DCREATORS=2 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$DSAFE|$DC|$GC
deep-gc-create-pair-lost|none|-DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1 -DCONN=1|$DSAFE|$DC|$GC
deep-gc-create-pair-progress|none|-DPROGRESS -DCPAIR=1 -DCREATORS=1 -DDELETER=1 -DPAIR=1 -DFAULTS=1|$DSAFE -l|-DNP -DMEMLIM=6000|$GC
"
[ "$deep" = 0 ] || checks="$checks$deep_checks"

if [ "$list" = 1 ]; then
  printf '%s\n' "$checks" | awk -F'|' 'NF { printf "%-30s expect %-8s %s%s\n", $1, $2, $3, ($6 == "" ? "" : " (" $6 ")") }'
  exit 0
fi
for tool in spin "$cc"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "model.sh: $tool not found" >&2; exit 2; }
done

if [ -n "$keep" ]; then
  mkdir -p "$keep"
  work=$(CDPATH='' cd -- "$keep" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/zklock-model.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

# run_check N NAME EXPECT DEFINES PANOPTS CCOPTS FILE: writes
# $work/NAME/result, one line beginning with PASS or FAIL.
run_check() {
  local name=$2 expect=$3 defs=$4 popts=$5 ccopts=$6 pml=${7:-zklock.pml} d t t0 t1 out kind states rc tool where store
  d=$work/$name
  rm -rf "$d"
  mkdir -p "$d"
  cp "$top/model/$pml" "$d/$pml"
  t0=$(date +%s.%N)
  rc=0
  (
    cd "$d"
    # shellcheck disable=SC2086 # the bounds are words
    spin $defs -a "$pml" >spin.out 2>&1 || exit 3
    # shellcheck disable=SC2086
    case $ccopts in *-DHC*) store='' ;; *) store=-DCOLLAPSE ;; esac
    # shellcheck disable=SC2086
    "$cc" -O0 -w $ccopts $store -DVECTORSZ=2048 -o pan pan.c >cc.out 2>&1 || exit 4
    # shellcheck disable=SC2086
    ./pan -n $popts >pan.out 2>&1 || true
    if [ -f "$pml.trail" ]; then
      # shellcheck disable=SC2086
      spin $defs -t "$pml" 2>&1 | sed -n 's/^ *MSC: //p' >trail.txt || true
    fi
  ) || rc=$?
  if [ "$rc" != 0 ]; then
    if [ "$rc" = 3 ]; then tool=spin; else tool=$cc; fi
    echo "FAIL $name: $tool failed: $(cat "$d"/*.out | tail -n 3 | tr '\n' ' ')" >"$d/result"
    return
  fi
  if [ -n "$keep" ]; then where="trail: $d/trail.txt"; else where="trail below"; fi
  t1=$(date +%s.%N)
  t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  out=$d/pan.out
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$out" | head -1)
  if ! grep -q 'State-vector' "$out"; then
    echo "FAIL $name: pan did not finish: $(tail -3 "$out" | tr '\n' ' ')" >"$d/result"
  elif grep -q 'errors: 0' "$out"; then
    if grep -q 'max search depth too small\|Search not completed\|out of memory' "$out"; then
      echo "FAIL $name: search incomplete ($(grep -m1 'depth too small\|not completed\|out of memory' "$out"))" >"$d/result"
    elif [ "$expect" = none ]; then
      echo "PASS $name: no counterexample (${states:-?} states, ${t}s)" >"$d/result"
    else
      echo "FAIL $name: no counterexample, but this variant must fail (${states:-?} states, ${t}s)" >"$d/result"
    fi
  else
    kind=$(grep -m1 -E 'assertion violated|acceptance cycle|non-progress cycle|invalid end state' "$out" | sed 's/^pan:[0-9]*: *//' | cut -c1-90)
    if [ "$expect" = none ]; then
      echo "FAIL $name: counterexample: $kind ($where)" >"$d/result"
    elif shows "$expect" "$out"; then
      echo "PASS $name: counterexample as it must be, ${t}s: $(tr '\n' ';' <"$d/trail.txt" | sed 's/;$//' | cut -c1-160)" >"$d/result"
    else
      echo "FAIL $name: counterexample of another kind: $kind ($where)" >"$d/result"
    fi
  fi
}

names=() running=0 i=0 next=0 passed=0 failed=0
flush() {
  local r
  while [ "$next" -lt "${#names[@]}" ] && [ -f "$work/${names[$next]}/result" ]; do
    r=$(cat "$work/${names[$next]}/result")
    echo "$r"
    case $r in
    PASS*) passed=$((passed + 1)) ;;
    *)
      failed=$((failed + 1))
      [ ! -f "$work/${names[$next]}/pan.out" ] || sed 's/^/    /' "$work/${names[$next]}/pan.out" | grep -E 'error|violated|cycle|stored|reached' | head -8
      [ ! -s "$work/${names[$next]}/trail.txt" ] || sed 's/^/    trail: /' "$work/${names[$next]}/trail.txt"
      ;;
    esac
    next=$((next + 1))
  done
}
start=$(date +%s)
while IFS='|' read -r name expect defs popts ccopts pml; do
  [ -n "$name" ] || continue
  if [ -n "$only" ] && ! printf '%s\n' "$name" | grep -qE "$only"; then continue; fi
  names+=("$name")
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
    flush
  fi
  run_check "$i" "$name" "$expect" "$defs" "$popts" "$ccopts" "$pml" &
  running=$((running + 1))
  i=$((i + 1))
done <<EOF
$checks
EOF
wait || true
flush
echo "model: $passed passed, $failed failed ($(($(date +%s) - start))s, $jobs at once)"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
