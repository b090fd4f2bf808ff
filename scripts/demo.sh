#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh: the whole main job on a fresh Debian machine, as root: install
# what is missing, build zklock, start a local 3-node ZooKeeper ensemble,
# and show (1) processes taking turns on one lock through the C library,
# (2) zklock(1) serialising shell commands with fencing tokens, (3) readers
# and a writer of a read-write lock, (4) a semaphore of two leases, and
# (5) a zkelect(1) fail-over when the leader is killed.
#   sudo bash scripts/demo.sh
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
cd "$top"

echo "== installing dependencies (Debian packages)"
bash scripts/install-deps.sh
echo "== building zklock in build/demo"
bash scripts/build.sh build/demo
echo "== starting a local 3-node ZooKeeper ensemble"

# Runs inside with-ensemble.sh, which exports ZKL_TEST_SERVERS and stops the
# ensemble afterwards, whatever happens.
demo() {
  local b=build/demo out pids="" i rc=0 leader lpid
  export ZKLOCK_SERVERS=$ZKL_TEST_SERVERS
  out=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT
  echo "ensemble: $ZKL_TEST_SERVERS"

  echo
  echo "-- 1. three processes, one lock (/locks/demo), through the C library"
  for i in 1 2 3; do
    $b/examples/zklock-demo "$ZKL_TEST_SERVERS" demo "$i" 2 | tee -a "$out/lib" &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || rc=1; done
  grep -o 'HOLDS the lock, token [0-9]*' "$out/lib" | awk '{print $5}' >"$out/t1"

  echo
  echo "-- 2. zklock: four shell commands serialised on /locks/report"
  pids=""
  for i in 1 2 3 4; do
    $b/tools/zklock report sh -c 'echo "$(date +%T.%3N)  job '"$i"' runs   (ZKLOCK_TOKEN=$ZKLOCK_TOKEN)"
      echo "$ZKLOCK_TOKEN" >>"$1"; sleep 0.4' _ "$out/t2" &
    pids="$pids $!"
  done
  sleep 0.3
  echo "$(date +%T.%3N)  zklock --list report:"
  $b/tools/zklock --list report | sed 's/^/            /' || true
  for p in $pids; do wait "$p" || rc=1; done

  echo
  echo "-- 3. zklock --shared: readers of /locks/catalog together, a writer alone"
  pids=""
  for i in r1 r2 w r3 r4; do
    case $i in w) mode= ;; *) mode=--shared ;; esac
    $b/tools/zklock $mode catalog sh -c 'echo "$(date +%T.%3N)  '"$i"' in  ($ZKLOCK_MODE, token $ZKLOCK_TOKEN)"
      echo "in '"$i"'" >>"$1"; sleep 0.4; echo "out '"$i"'" >>"$1"
      echo "$(date +%T.%3N)  '"$i"' out"' _ "$out/t3" &
    pids="$pids $!"
    sleep 0.1 # arrival order: r1 r2, then the writer, then r3 r4
  done
  for p in $pids; do wait "$p" || rc=1; done

  echo
  echo "-- 4. zklock --permits 2: five jobs, at most two at a time (/locks/encoders)"
  pids=""
  for i in 1 2 3 4 5; do
    $b/tools/zklock --permits 2 encoders sh -c 'echo "$(date +%T.%3N)  job '"$i"' starts (lease $ZKLOCK_TOKEN)"
      echo in >>"$1"; sleep 0.4; echo out >>"$1"' _ "$out/t4" &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || rc=1; done

  echo
  echo "-- 5. zkelect: three candidates for /election/scheduler; the leader is killed"
  for id in alpha beta gamma; do
    $b/tools/zkelect -t 4000 -i "$id" scheduler sh -c \
      'echo "$(date +%T.%3N)  $ZKELECT_ID is the leader (term token $ZKELECT_TOKEN)"; exec sleep 60' &
    eval "pid_$id=$!"
    sleep 0.3
  done
  sleep 1
  leader=$($b/tools/zkelect --leader scheduler)
  eval "lpid=\$pid_$leader"
  echo "$(date +%T.%3N)  killing the leader '$leader' with SIGKILL (session timeout 4 s)"
  disown "$lpid" 2>/dev/null || true # no "Killed" job notice
  kill -KILL "$lpid"
  for _ in $(seq 1 100); do
    [ "$($b/tools/zkelect --leader scheduler 2>/dev/null)" != "$leader" ] && break
    sleep 0.1
  done
  sleep 0.5
  echo "$(date +%T.%3N)  new leader: $($b/tools/zkelect --leader scheduler)"

  echo
  # the writer ran alone, readers ran together, all five ran
  if [ "$rc" -eq 0 ] && sort -n -c "$out/t1" && sort -n -c "$out/t2" &&
     [ "$(wc -l <"$out/t1")" -eq 6 ] && [ "$(wc -l <"$out/t2")" -eq 4 ] &&
     awk '$1 == "in" && $2 == "w" { if (r) bad = 1; w = 1 }
          $1 == "in" && $2 != "w" { if (w) bad = 1; if (++r > 1) shared = 1 }
          $1 == "out" { if ($2 == "w") w = 0; else r--; n++ }
          END { exit !(n == 5 && shared && !bad) }' "$out/t3" &&
     awk '/in/ { if (++k > peak) peak = k } /out/ { k--; n++ }
          END { exit !(n == 5 && peak == 2) }' "$out/t4"; then
    echo "demo: OK: one holder at a time, fencing tokens increasing in both lock demos, readers together and the writer alone, two leases at a time, one new leader after the kill"
  else
    echo "demo: FAILED (see above)"
    rc=1
  fi
  return $rc
}
export -f demo
exec bash scripts/with-ensemble.sh bash -c demo
