#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare.sh: zklock beside the peers (Apache Curator, kazoo, and the
# seeds' single-instance Redis lock, which needs no ensemble) in one run, on
# one freshly started 3-node ensemble, plus the ensemble's write ceiling.
#
#   bash bench/compare.sh [-r REPS] [-i IMPLS] [-f] [-L] [-- BENCH FLAGS...]
#   e.g. bash bench/compare.sh -r 3 -- -C 8 -T 16
#   bash bench/compare.sh -r 3 -- -w many-locks,many-keys -T 64   # per-key
#   bash bench/compare.sh -f -r 3     # the lock family: read-heavy and
#        semaphore (default flags -w read-heavy,semaphore -C 9 -M 2000), with
#        Curator's and kazoo's read-write locks and semaphores driven by
#        bench/peers/ (impls curator-family, kazoo-family; their lines say
#        "curator" and "kazoo")
#   bash bench/compare.sh -L -r 3 -- -w many-keys -T 64 -M 20000
#        -L: every implementation (and the ceiling and rtt runs) connects to
#        the leader only, found with the 4lw srvr of each server; without
#        it each client picks a server of the list at random
#
# Every implementation runs under bench/cpu-per-cycle.py, which adds to each
# line the CPU per cycle of the client and of each server over the line's
# timed span, and the servers the client was connected to; a table of them
# ("*" marks the leader) follows run-peers.sh's. The servers measured are
# the whole ensemble whatever -L says ($ZKB_SERVERS, and $ZKB_SERVER_PIDS
# from $ZKB_DIR/pids), so zklock-bench measures them too.
#
# Needs ../shared/bench (the peers' harness) beside the project. Installs the
# peers' Debian packages if missing (root), builds zklock-bench in
# build/bench (-O2, no sanitizer), and writes every JSON line to
# /tmp/zkb-results/ (run-peers.sh prints the file and a table of ratios).
# Last come the write ceiling and the round trips of a write and a read
# (zklock-bench -w rtt), which bound the ratios any recipe can reach.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
peers=$(CDPATH='' cd -- "$top/../shared/bench" 2>/dev/null && pwd) ||
  { echo "compare.sh: ../shared/bench not found" >&2; exit 1; }
reps=3 impls= family=0 leader_only=0
while [ $# -gt 0 ]; do
  case $1 in
    -r) reps=$2; shift 2 ;;
    -i) impls=$2; shift 2 ;;
    -f) family=1; shift ;;
    -L) leader_only=1; shift ;;
    --) shift; break ;;
    *) echo "usage: $0 [-r REPS] [-i IMPLS] [-f] [-L] [-- BENCH FLAGS]" >&2; exit 2 ;;
  esac
done

need=""
for p in zookeeper libzookeeper-mt-dev libcurator-recipes-java python3-kazoo default-jdk-headless redis-server libhiredis-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need="$need $p"
done
if [ -n "$need" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
bash "$top/scripts/install-deps.sh"
bash "$top/scripts/build.sh" build/bench
make -C "$top/build/bench" -s bench/zklock-bench >/dev/null
ceiling=$top/build/bench/zk_write_ceiling
cc -O2 -DTHREADED -o "$ceiling" "$peers/ceiling/zk_write_ceiling.c" -lzookeeper_mt -lpthread

export ZKB_DIR=${ZKB_DIR:-/tmp/zkb-compare}
started=0
cleanup() { [ "$started" = 1 ] && "$peers/zk-ensemble.sh" stop >&2 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! "$peers/zk-ensemble.sh" status >/dev/null 2>&1; then
  "$peers/zk-ensemble.sh" start 3 >&2
  started=1
fi
connect=$("$peers/zk-ensemble.sh" connect)

# leader_of LIST: the server of LIST whose srvr says Mode: leader (or
# standalone, a one-node ensemble)
leader_of() {
  local hp mode
  for hp in ${1//,/ }; do
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's
    mode=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf srvr >&3 && cat <&3' \
      _ "${hp%:*}" "${hp##*:}" 2>/dev/null | sed -n 's/^Mode: //p') || true
    case $mode in leader|standalone) echo "$hp"; return 0 ;; esac
  done
  return 1
}
run_connect=$connect
if [ "$leader_only" = 1 ]; then
  run_connect=$(leader_of "$connect") || { echo "compare.sh: no leader among $connect" >&2; exit 1; }
  export ZKB_CONNECT=$run_connect   # run-peers.sh passes it to every bench as given
fi
echo "ensemble $connect; leader $(leader_of "$connect" || echo '<none>'); the benches connect to $run_connect" >&2
# The servers' CPU is measured on the whole ensemble, leader or not; their
# PIDs are those zk-ensemble.sh recorded ("<id> <pid> <port>" lines).
export ZKB_SERVERS=$connect
unset ZKB_SERVER_PIDS
pids=
for hp in ${connect//,/ }; do
  pid=$(awk -v p="${hp##*:}" '$3 == p { print $2 }' "$ZKB_DIR/pids" 2>/dev/null) || pid=
  [ -n "$pid" ] || { pids=; break; }
  pids=$pids${pids:+,}$pid
done
[ -z "$pids" ] || export ZKB_SERVER_PIDS=$pids

# the caller's own (an older build to compare with, a variant) come after
export ZKB_EXTRA_IMPLS="zklock=$top/build/bench/bench/zklock-bench${ZKB_EXTRA_IMPLS:+;$ZKB_EXTRA_IMPLS}"
if [ "$family" = 1 ]; then
  # shellcheck source=/dev/null
  . "$peers/curator/classpath.sh"
  "$peers/curator/build.sh" >&2
  mkdir -p "$top/build/bench/peers"
  javac -nowarn -d "$top/build/bench/peers" -cp "$peers/curator/classes:$CURATOR_CP" \
    "$top/bench/peers/CuratorFamily.java"
  ZKB_EXTRA_IMPLS="$ZKB_EXTRA_IMPLS;curator-family=java -Xmx512m -cp $top/build/bench/peers:$peers/curator/classes:$CURATOR_CP CuratorFamily"
  ZKB_EXTRA_IMPLS="$ZKB_EXTRA_IMPLS;kazoo-family=/usr/bin/python3 $top/bench/peers/kazoo_family.py"
  export ZKB_WARMUP_FLAGS="-w read-heavy,semaphore -C 9 -M 300"
  [ $# -gt 0 ] || set -- -w read-heavy,semaphore -C 9 -M 2000
  : "${impls:=curator-family,kazoo-family,zklock}"
fi

# Every implementation under cpu-per-cycle.py: the extra ones keep their
# names; run-peers.sh's own curator, kazoo and redis become curator-cpu...
# with the same commands (their lines still say "curator"...).
wrap="/usr/bin/python3 $top/bench/cpu-per-cycle.py --"
IFS=';' read -r -a entries <<<"$ZKB_EXTRA_IMPLS"
ZKB_EXTRA_IMPLS="curator-cpu=$wrap $peers/curator/run.sh"
ZKB_EXTRA_IMPLS="$ZKB_EXTRA_IMPLS;kazoo-cpu=$wrap /usr/bin/python3 $peers/kazoo/kazoo_bench.py"
ZKB_EXTRA_IMPLS="$ZKB_EXTRA_IMPLS;redis-cpu=$wrap $peers/redis/run.sh"
for e in "${entries[@]}"; do
  [ -n "$e" ] && ZKB_EXTRA_IMPLS="$ZKB_EXTRA_IMPLS;${e%%=*}=$wrap ${e#*=}"
done
list=
IFS=',' read -r -a names <<<"${impls:-curator,kazoo,redis,zklock}"
for n in "${names[@]}"; do
  case $n in curator|kazoo|redis) n=$n-cpu ;; esac
  list=$list${list:+,}$n
done
mkdir -p /tmp/zkb-results
out=/tmp/zkb-results/compare-$(date +%Y%m%d-%H%M%S)-$$.jsonl
rc=0
"$peers/run-peers.sh" -n 3 -r "$reps" -i "$list" -o "$out" -- "$@" || rc=$?
echo
/usr/bin/python3 "$top/bench/cpu-per-cycle.py" --table "$out"
echo
echo "write ceiling of the same ensemble (pipelined create+delete pairs, 3 runs, through $run_connect):"
for i in 1 2 3; do "$ceiling" --connect "$run_connect" -M 3000 -W 64 --label "ceiling,run=$i"; done
echo
echo "round trips of the same ensemble (sequential writes and reads, 3 runs, through $run_connect):"
for i in 1 2 3; do "$top/build/bench/bench/zklock-bench" --connect "$run_connect" -w rtt -N 2000 --label "rtt,run=$i"; done
exit "$rc"
