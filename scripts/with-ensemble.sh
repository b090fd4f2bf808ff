#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# with-ensemble.sh CMD [ARGS...]: run CMD against a throw-away ZooKeeper
# ensemble (used by `make check`).
#
# If ZKL_TEST_SERVERS is already set, CMD just runs against those servers
# (e.g. the docker-compose ensemble).  Otherwise a loopback ensemble of
# ZKL_TEST_NODES nodes (default 3) is started with zk-ensemble.sh, CMD runs
# with ZKL_TEST_SERVERS and ZKL_ENSEMBLE_DIR exported (so tests can kill and
# restart nodes), and the ensemble is stopped however CMD or we end.
#
# Exit status: CMD's; 130/143/129 if we were interrupted by SIGINT/TERM/HUP;
# 1 if the ensemble could not be started.  ZKL_KEEP_DIR=1 keeps the state
# directory (server logs) after the run.
# Makefiles run us as $(SHELL) script, i.e. often dash: switch to bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

prog=${0##*/}
if [ "$#" -eq 0 ]; then
  echo "usage: $prog CMD [ARGS...]" >&2
  exit 2
fi

if [ -n "${ZKL_TEST_SERVERS:-}" ]; then
  exec "$@"
fi

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
ens=$here/zk-ensemble.sh
nodes=${ZKL_TEST_NODES:-3}
# An inherited dir belongs to someone else's ensemble: always start afresh.
unset ZKL_ENSEMBLE_DIR
ens_dir=
child=
startout=

# PIDs of CMD and all its descendants, so a signal aimed at us alone still
# reaches e.g. the test binary under make under CMD.  Found by parent PID,
# never by name.
# shellcheck disable=SC2317 # only called from the EXIT trap
tree_of() {
  ps -e -o pid=,ppid= 2>/dev/null | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      want[root] = 1; print root
      do {
        more = 0
        for (p in parent)
          if (!(p in want) && (parent[p] in want)) { want[p] = 1; print p; more = 1 }
      } while (more)
    }'
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  local rc=$? pids
  # A second Ctrl-C must not cut the cleanup short; the stop below
  # inherits these ignored signals too.
  trap '' INT TERM HUP
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    pids=$(tree_of "$child")
    # shellcheck disable=SC2086 # one PID per word
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$child" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$child" 2>/dev/null; then
      echo "$prog: pid $child ignored SIGTERM for 10s; sending SIGKILL" >&2
      kill -KILL "$child" 2>/dev/null || true
    fi
    wait "$child" 2>/dev/null || true
  fi
  if [ -n "$ens_dir" ] && [ -d "$ens_dir" ]; then
    ZKL_ENSEMBLE_DIR=$ens_dir bash "$ens" stop >&2 || true
  fi
  [ -z "$startout" ] || rm -f -- "$startout"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Children run in the background and we `wait`: bash runs a trap only once
# the foreground command returns, but `wait` is interrupted at once.
run_child() {
  local rc=0
  "$@" <&0 &
  child=$!
  wait "$child" || rc=$?
  child=
  return "$rc"
}

startout=$(mktemp /tmp/zklock-with.XXXXXX)
# Port clash (exit 3) with default ports, e.g. another `make check` on the
# same machine: move all three port ranges up by 10 and try again.
shift_ports=1
if [ -n "${ZKL_CLIENT_BASE:-}${ZKL_QUORUM_BASE:-}${ZKL_ELECTION_BASE:-}" ]; then
  shift_ports=0
fi
attempt=0
while :; do
  rc=0
  if [ "$shift_ports" -eq 1 ]; then
    export ZKL_CLIENT_BASE=$((22180 + 10 * attempt))
    export ZKL_QUORUM_BASE=$((32180 + 10 * attempt))
    export ZKL_ELECTION_BASE=$((33180 + 10 * attempt))
  fi
  run_child bash "$ens" start "$nodes" >"$startout" || rc=$?
  [ "$rc" -eq 0 ] && break
  attempt=$((attempt + 1))
  if [ "$rc" -ne 3 ] || [ "$shift_ports" -eq 0 ] || [ "$attempt" -ge 10 ]; then
    echo "$prog: could not start a ZooKeeper ensemble" >&2
    exit 1
  fi
  echo "$prog: retrying on ports $((22180 + 10 * attempt + 1))..." >&2
done

# last line of start's stdout is ZKL_ENSEMBLE_DIR=<dir>, shell-quoted
ZKL_ENSEMBLE_DIR=$(sed -n 's/^ZKL_ENSEMBLE_DIR=//p' "$startout" | tail -n 1)
eval "ZKL_ENSEMBLE_DIR=$ZKL_ENSEMBLE_DIR"
ens_dir=$ZKL_ENSEMBLE_DIR
export ZKL_ENSEMBLE_DIR
ZKL_TEST_SERVERS=$(bash "$ens" connect)
export ZKL_TEST_SERVERS
echo "$prog: ZKL_TEST_SERVERS=$ZKL_TEST_SERVERS ZKL_ENSEMBLE_DIR=$ZKL_ENSEMBLE_DIR" >&2

# Background jobs of a script start with SIGINT/SIGQUIT ignored; restore
# them so Ctrl-C still reaches CMD (and make -j's jobs) directly.
rc=0
run_child env --default-signal=INT,QUIT "$@" || rc=$?
exit "$rc"
