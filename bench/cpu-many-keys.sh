#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cpu-many-keys.sh: issue 35's per-key figures, CPU per cycle included, for
# one or more builds of zklock-bench side by side on one ensemble.
#
#   bash bench/cpu-many-keys.sh [-r REPS] [-o OUT.jsonl] [NAME=ZKLOCK-BENCH ...]
#   e.g. bash bench/cpu-many-keys.sh -r 3 before=/path/old/zklock-bench after=build/bench/bench/zklock-bench
#
# On the ensemble of ../shared/bench/zk-ensemble.sh in $ZKB_DIR (started,
# and stopped at the end, if none runs there), connected to the leader,
# every server measured (--servers): many-keys -T 64, the queue lock with
# its blocking unlock (zq, -M 16000) and the flat lock with
# --async-release (zf, -M 20000). Each build first warms the servers up
# (20,000 flat and 10,000 queue cycles, unrecorded), then REPS (default 3)
# repetitions of both specs for every build, the order reversed every
# other repetition. Each run's line goes to OUT (default
# /tmp/zkb-results/cpu-many-keys-<time>.jsonl) with its command, the load
# average, how busy the machine was (cores, /proc/stat over the run) and
# how much of that was not ours (the busy cores less the run's own CPU
# over its span: a noise gauge). Last, a table of medians per build and
# spec, over all runs and over the 3 with the least foreign CPU.
# Default build: build/bench/bench/zklock-bench (compare.sh builds it).
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
peers=$(CDPATH='' cd -- "$top/../shared/bench" 2>/dev/null && pwd) ||
  { echo "cpu-many-keys.sh: ../shared/bench not found" >&2; exit 1; }
reps=3 out=
while [ $# -gt 0 ]; do
  case $1 in
    -r) reps=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -*) echo "usage: $0 [-r REPS] [-o OUT.jsonl] [NAME=ZKLOCK-BENCH ...]" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- "zklock=$top/build/bench/bench/zklock-bench"
for b in "$@"; do
  [ -x "${b#*=}" ] || { echo "cpu-many-keys.sh: ${b#*=} is not an executable" >&2; exit 2; }
done
mkdir -p /tmp/zkb-results
: "${out:=/tmp/zkb-results/cpu-many-keys-$(date +%Y%m%d-%H%M%S).jsonl}"

export ZKB_DIR=${ZKB_DIR:-/tmp/zkb-cpu}
started=0
cleanup() { if [ "$started" = 1 ]; then "$peers/zk-ensemble.sh" stop >&2 || true; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! "$peers/zk-ensemble.sh" status >/dev/null 2>&1; then
  "$peers/zk-ensemble.sh" start 3 >&2
  started=1
fi
servers=$("$peers/zk-ensemble.sh" connect)
leader=127.0.0.1:$((${ZKB_CLIENT_BASE:-21810} + $("$peers/zk-ensemble.sh" leader)))
echo "ensemble $servers, leader $leader; lines to $out" >&2

busy() { awk '/^cpu /{ print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat; }
specs=("zq|-M 16000" "zf|-M 20000 --flat --async-release")
for b in "$@"; do
  "${b#*=}" --connect "$leader" --servers "$servers" -w many-keys -T 64 -M 20000 --flat --async-release >/dev/null
  "${b#*=}" --connect "$leader" --servers "$servers" -w many-keys -T 64 -M 10000 >/dev/null
done
for rep in $(seq 1 "$reps"); do
  runs=()
  for b in "$@"; do for s in "${specs[@]}"; do runs+=("$b|$s"); done; done
  if [ $((rep % 2)) = 0 ]; then
    for ((i = ${#runs[@]} - 1; i >= 0; i--)); do printf '%s\n' "${runs[$i]}"; done
  else
    printf '%s\n' "${runs[@]}"
  fi >"$out.order"
  while IFS='|' read -r b spec flags; do
    cmd="${b#*=} --connect $leader --servers $servers -w many-keys -T 64 $flags"
    read -r b0 t0 < <(busy)
    la=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2086 # flags are several words
    line=$("${b#*=}" --connect "$leader" --servers "$servers" -w many-keys -T 64 $flags \
      --label "${b%%=*},$spec,rep=$rep")
    read -r b1 t1 < <(busy)
    /usr/bin/python3 - "$line" "$b0" "$t0" "$b1" "$t1" "$la" "$cmd" "${b%%=*}" "$spec" <<'PY' | tee -a "$out" | cut -c1-150
import json, os, sys
line, b0, t0, b1, t1, la, cmd, name, spec = sys.argv[1:]
r = json.loads(line)
busy = (int(b1) - int(b0)) / max(1, int(t1) - int(t0)) * os.cpu_count()
ours = (r.get("total_cpu_us_per_cycle") or 0) * r["ops"] / r["secs"] / 1e6
print(json.dumps({"name": name, "spec": spec, "loadavg": float(la),
                  "machine_busy_cores": round(busy, 2), "foreign_cores_est": round(busy - ours, 2),
                  "cmd": cmd, "out": r}))
PY
  done <"$out.order"
  rm -f "$out.order"
done

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = [("ops/s", "ops_per_s"), ("client", "client_cpu_us_per_cycle"), ("leader", "leader_cpu_us_per_cycle"),
        ("followers", "followers_cpu_us_per_cycle"), ("total", "total_cpu_us_per_cycle"),
        ("ctxsw", "ctxsw_per_cycle"), ("ops/txn", "ops_per_txn"), ("txn/cycle", "txn_per_cycle"),
        ("req/cycle", "requests_per_cycle")]
print("medians, CPU in microseconds per cycle (each column its own median)")
print(" | ".join(["build", "spec", "runs"] + [k for k, _ in keys] + ["load", "foreign cores"]))
for name in dict.fromkeys(r["name"] for r in rows):
    for spec in ("zq", "zf"):
        rs = [r for r in rows if r["name"] == name and r["spec"] == spec]
        if not rs:
            continue
        quiet = sorted(rs, key=lambda r: r["foreign_cores_est"])[:3]
        for what, sel in (("all %d" % len(rs), rs), ("3 quietest", quiet)):
            def med(k):
                xs = [r["out"].get(k) for r in sel]
                xs = [x for x in xs if isinstance(x, (int, float))]
                m = statistics.median(xs) if xs else None
                return "-" if m is None else "%.1f" % m if m >= 10 else "%.3f" % m
            print(" | ".join([name, spec, what] + [med(k) for _, k in keys] +
                             ["%.1f" % statistics.median(r["loadavg"] for r in sel),
                              "%.2f" % statistics.median(r["foreign_cores_est"] for r in sel)]))
bad = [r for r in rows if not r["out"].get("counter_ok") or r["out"].get("left_behind")]
print("every run counter_ok, 0 left behind" if not bad else "FAILED: %d runs with a wrong counter or nodes left" % len(bad))
PY
