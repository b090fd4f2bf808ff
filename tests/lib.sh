# SPDX-License-Identifier: Apache-2.0
# tests/lib.sh: shared helpers of the shell integration tests (sourced).
# Needs ZKL_TEST_SERVERS; the fault tests also need ZKL_ENSEMBLE_DIR, which
# scripts/with-ensemble.sh exports when it started the ensemble itself.
set -eu

: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
LOCKER=$top_builddir/tests/locker
ENSEMBLE="bash $top_srcdir/scripts/zk-ensemble.sh"

if [ -z "${ZKL_TEST_SERVERS:-}" ]; then
  echo "ZKL_TEST_SERVERS is not set: skipping" >&2
  exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkltest.XXXXXX")
ROOT="/zkltest-sh-$$"
PIDS=""
fail=0

# Kill only what this test started, and its scratch directory.
cleanup_test() {
  local p
  for p in $PIDS; do
    kill -CONT "$p" 2>/dev/null || true
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup_test EXIT

ok() { echo "ok $*"; }
bad() { echo "FAIL $*"; fail=1; }

# wait_line FILE REGEX SECONDS: wait until FILE has a line matching REGEX.
wait_line() {
  local f=$1 re=$2 end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do
    grep -Eq "$re" "$f" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# wait_after FILE REGEX1 REGEX2 SECONDS: wait for a REGEX2 line after a
# REGEX1 line.
wait_after() {
  local f=$1 end=$((SECONDS + $4))
  while [ $SECONDS -lt $end ]; do
    awk -v a="$2" -v b="$3" '$0 ~ a { s = 1; next } s && $0 ~ b { f = 1 }
      END { exit !f }' "$f" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# token_of FILE: the token of the HELD line.
token_of() { sed -n 's/^HELD token=\([0-9]*\).*/\1/p' "$1" | head -1; }

# start_bg VAR CMD...: start CMD in the background, record its PID.
start_bg() {
  local var=$1
  shift
  "$@" &
  PIDS="$PIDS $!"
  eval "$var=$!"
}

# Tokens in file order must strictly increase (first column).
tokens_increase() {
  awk 'NR > 1 && $1 <= prev { bad = 1 } { prev = $1 } END { exit bad }' "$1"
}

finish() {
  if [ "$fail" -ne 0 ]; then
    echo "FAILED"
    exit 1
  fi
  echo "PASSED"
  exit 0
}
