#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# chaos.sh: fault-injection runs of zklock (tests/chaos.py) on a fresh local
# ensemble: mutual exclusion, fencing and liveness while ZooKeeper nodes are
# killed, restarted and partitioned, holders are paused past their session,
# connections are cut, links slowed and a rogue session plants, rewrites and
# deletes lock nodes. Installs what it needs (as root) and builds
# tests/chaos_client and tests/chaos_rogue if the build directory lacks them.
#
#   scripts/chaos.sh                     one 2-minute round, random seed
#   scripts/chaos.sh --minutes 60        the soak: 5-minute rounds for an hour
#   scripts/chaos.sh --seed 7 ...        replay a schedule
#   scripts/chaos.sh --build DIR ...     use (or make) the build in DIR
#   scripts/chaos.sh --acl creator --faults hostile ...   the rogue against
#                                        zklock's creator ACL: only ZNOAUTH
# Other options go to tests/chaos.py (see its --help). Each round prints one
# "chaos: seed=... result=PASS|FAIL" line; exit 1 if any round failed.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
build=$top/build/normal
minutes=
args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --build) build=$(realpath -m "$2"); shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -eu/{/SPDX-License-Identifier/d;s/^# \{0,1\}//p;}' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$minutes" in '' | *[!0-9]*) [ -z "$minutes" ] || { echo "chaos.sh: --minutes takes a number" >&2; exit 2; } ;; esac

if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v python3 >/dev/null; then
  bash "$top/scripts/install-deps.sh" --test
fi
[ -f "$build/Makefile" ] || bash "$top/scripts/build.sh" "$build"
make -C "$build" -s tests/chaos_client tests/chaos_rogue tests/locker >/dev/null

if [ -n "$minutes" ]; then
  args=(--duration 300 --until $((minutes * 60)) "${args[@]}")
fi
exec python3 "$top/tests/chaos.py" --builddir "$build" --srcdir "$top" "${args[@]}"
