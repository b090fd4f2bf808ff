#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's quick start works as written. Its block (the one after the
# "quick start" marker) runs in a scratch directory laid out as a clone
# (scripts/ and examples/ of this tree, build/demo this build), line for
# line but its first, the build, which this build stands for: eval
# "$(bash scripts/zk-ensemble.sh env)" starts a 3-node ensemble and
# exports ZKLOCK_SERVERS, zklock holds, lists and gives up with -n, the
# README's C program builds with pkg-config against the build tree and
# holds its lock, and stop ends it all. Before the stop, a second env
# must reuse the running ensemble, and an env that cannot start (its
# ports taken) must make the eval fail. Starts its own ensemble (on free
# ports near 24180), so it is not an .itest; stops it whatever happens.
# make runs .sh tests as $(SHELL) script, often dash: switch to bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
src=$(cd "$top_srcdir" && pwd)
b=$(cd "$top_builddir" && pwd)
if ! command -v java >/dev/null || [ ! -f /usr/share/java/zookeeper.jar ]; then
  echo "quickstart: no java or ZooKeeper server here: skipped"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/zklqs.XXXXXX")
cleanup() {
  local d
  d=$(cat "$work/ensdir" 2>/dev/null || true)
  if [ -n "$d" ] && [ -d "$d" ]; then
    ZKL_ENSEMBLE_DIR=$d bash "$src/scripts/zk-ensemble.sh" stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

# The block: from the marker to the end of the code fence.
awk '/^<!-- quick start/ { want = 1; next }
     want && /^```sh$/ { on = 1; next }
     on && /^```$/ { exit }
     on { print }' "$src/README.md" >"$work/block"
first=$(head -n 1 "$work/block")
case $first in "bash scripts/build.sh build/demo "*) ;; *)
  echo "FAIL: the quick start's first line is not the build this test stands in for: $first"
  exit 1
  ;;
esac
grep -q '^eval "$(bash scripts/zk-ensemble.sh env)"' "$work/block" &&
  grep -q '^bash scripts/zk-ensemble.sh stop' "$work/block" ||
  { echo "FAIL: the quick start no longer starts and stops its ensemble with env and stop"; exit 1; }

mkdir -p "$work/clone/build"
ln -s "$src/scripts" "$work/clone/scripts"
ln -s "$src/examples" "$work/clone/examples"
ln -s "$b" "$work/clone/build/demo"

# Free ports: the ensemble's three ranges, 3 nodes each. (zk-ensemble.sh
# holds a lock across starts, so a race with another start fails cleanly.)
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=
for try in $(seq 0 20); do
  c=$((24180 + 10 * try)) q=$((25180 + 10 * try)) e=$((26180 + 10 * try)) ok=1
  for i in 1 2 3; do
    free $((c + i)) && free $((q + i)) && free $((e + i)) || ok=0
  done
  [ "$ok" -eq 0 ] || { base=$c; break; }
done
[ -n "$base" ] || { echo "FAIL: no free ports for an ensemble"; exit 1; }
export ZKL_CLIENT_BASE=$base ZKL_QUORUM_BASE=$q ZKL_ELECTION_BASE=$e
unset ZKL_ENSEMBLE_DIR ZKLOCK_SERVERS PKG_CONFIG_PATH LD_LIBRARY_PATH || true

# The script: the block but its first line, with checks of env before the
# stop and of the state after it. QS: lines are the checks' own.
{
  echo 'trap '\''printf %s "${ZKL_ENSEMBLE_DIR:-}" >"$QS_WORK/ensdir"'\'' EXIT'
  tail -n +2 "$work/block" | while IFS= read -r line; do
    case $line in "bash scripts/zk-ensemble.sh stop"*)
      cat <<'EOF'
printf %s "$ZKL_ENSEMBLE_DIR" >"$QS_WORK/ensdir"
qs_dir=$ZKL_ENSEMBLE_DIR qs_pids=$(cat "$ZKL_ENSEMBLE_DIR/pids")
eval "$(bash scripts/zk-ensemble.sh env)"
[ -n "$qs_dir" ] && [ -n "$qs_pids" ] && [ "$ZKL_ENSEMBLE_DIR" = "$qs_dir" ] &&
  [ "$(cat "$ZKL_ENSEMBLE_DIR/pids")" = "$qs_pids" ] &&
  echo "QS: a second env reused the ensemble"
if ! eval "$(ZKL_ENSEMBLE_DIR= bash scripts/zk-ensemble.sh env 2>/dev/null)"; then
  echo "QS: an env whose ports are taken fails the eval"
fi
[ "$ZKL_ENSEMBLE_DIR" = "$qs_dir" ] || echo "QS: the failed env changed ZKL_ENSEMBLE_DIR"
EOF
      ;;
    esac
    printf '%s\n' "$line"
  done
  echo '[ -z "$qs_dir" ] || [ -e "$qs_dir" ] || echo "QS: stop removed the ensemble and its data"'
} >"$work/run.sh"

rc=0
(cd "$work/clone" && QS_WORK=$work timeout 300 bash "$work/run.sh") >"$work/out" 2>"$work/err" || rc=$?
cat "$work/out"
[ "$rc" -eq 0 ] || bad "the quick start exited $rc; its stderr: $(tail -20 "$work/err")"
want() {
  grep -Eq "$1" "$work/out" && echo "ok $2" || bad "$2: no line matching $1"
}
want '^holding /locks/hello, token [0-9]+$' "zklock ran the command under /locks/hello with a token"
want '^holder host=.* token=[0-9]+ ' "zklock --list showed the holder"
want '^busy: exit 1$' "zklock -n gave up at once with exit 1"
want '^holding /locks/orders, fencing token [0-9]+$' "the README's C program, built against the build tree, held its lock"
want '^QS: a second env reused the ensemble$' "a second env reused the running ensemble"
want '^QS: an env whose ports are taken fails the eval$' "an env that cannot start fails the eval"
want '^QS: stop removed the ensemble and its data$' "stop removed the ensemble and its data"
grep -q '^QS: the failed env changed' "$work/out" && bad "the failed env changed ZKL_ENSEMBLE_DIR"
[ "$fail" -eq 0 ] && echo "quickstart: the README's quick start works as written"
exit "$fail"
