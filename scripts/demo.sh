#!/usr/bin/env bash
# demo.sh: the whole main job on a fresh Debian machine, as root:
# install what is missing, build zklock, start a local 3-node ZooKeeper
# ensemble, and watch WORKERS processes take turns on one lock.
#   sudo bash scripts/demo.sh [WORKERS] [ROUNDS]
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
workers=${1:-3}
rounds=${2:-3}
cd "$top"

echo "== installing dependencies (Debian packages)"
bash scripts/install-deps.sh
echo "== building zklock in build/demo"
bash scripts/build.sh build/demo
echo "== starting a local 3-node ZooKeeper ensemble and $workers workers"

# Runs inside with-ensemble.sh, which exports ZKL_TEST_SERVERS and stops the
# ensemble afterwards, whatever happens.
run_workers() {
  local out pids="" i rc=0
  out=$(mktemp)
  echo "ensemble: $ZKL_TEST_SERVERS"
  echo "lock: /locks/demo ($workers processes x $rounds rounds; each holds it 0.4 s)"
  echo
  for i in $(seq 1 "$workers"); do
    build/demo/examples/zklock-demo "$ZKL_TEST_SERVERS" demo "$i" "$rounds" | tee -a "$out" &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || rc=1; done
  echo
  # The fencing tokens, in the order the lock was held, must increase.
  grep -o 'HOLDS the lock, token [0-9]*' "$out" | awk '{print $5}' >"$out.tok"
  if [ "$rc" -eq 0 ] && sort -n -c "$out.tok" 2>/dev/null &&
     [ "$(sort -u "$out.tok" | wc -l)" -eq "$((workers * rounds))" ]; then
    echo "demo: $((workers * rounds)) critical sections, one holder at a time, fencing tokens increasing: $(tr '\n' ' ' <"$out.tok")"
  else
    echo "demo: FAILED (see above)"
    rc=1
  fi
  rm -f "$out" "$out.tok"
  return $rc
}
export -f run_workers
export workers rounds
exec bash scripts/with-ensemble.sh bash -c run_workers
