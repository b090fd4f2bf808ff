#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh [SECONDS [TARGET...]]: build every libFuzzer target in fuzz/
# (or only the TARGETs named, e.g. nodedata for fuzz/fuzz_nodedata.c) with
# clang (-fsanitize=fuzzer,address,undefined) into build/fuzz and run each
# for SECONDS (default 20) from its seed corpus in fuzz/corpus/<target>. New
# inputs go to a scratch directory; a crash is kept in build/fuzz/ for
# replay (./build/fuzz/<target> <crash file>). Prints
# "fuzz: N passed, N failed".
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
secs=${1:-20}
[ $# -gt 0 ] && shift
out=$top/build/fuzz
mkdir -p "$out"
cd "$top"
CC=${FUZZ_CC:-$(command -v clang || command -v clang-14 || true)}
if [ -z "$CC" ]; then
  echo "fuzz: clang is needed (Debian: clang libclang-rt-14-dev)"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
# config.h is only needed for PACKAGE_VERSION
printf '#define PACKAGE_VERSION "fuzz"\n' >"$out/config.h"
# every source of the library, as Makefile.am lists them (a stale copy of
# the list broke this build once)
LIB=$(awk '/^libzklock_la_SOURCES/ { on = 1 } on { print; if (!/\\$/) exit }' Makefile.am |
  grep -o 'lib/[a-z_/]*\.c' | tr '\n' ' ')
FLAGS="-g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DTHREADED -Iinclude -Ilib -I$out -I$top/build/normal/include"
[ -f include/zklock_version.h ] || [ -f build/normal/include/zklock_version.h ] ||
  sed -e 's/@ZKL_VERSION_MAJOR@/0/;s/@ZKL_VERSION_MINOR@/0/;s/@ZKL_VERSION_PATCH@/0/;s/@PACKAGE_VERSION@/fuzz/' \
    include/zklock_version.h.in >"$out/zklock_version.h"
pass=0 fail=0
targets=""
for t in "$@"; do targets="$targets fuzz/fuzz_$t.c"; done
for src in ${targets:-fuzz/fuzz_*.c}; do
  t=$(basename "$src" .c)
  corpus=fuzz/corpus/${t#fuzz_}
  extra=""
  # the tools' shared sources, as Makefile.am's CLI_SOURCES lists them
  case $t in *_cli | fuzz_json) extra=$(awk '/^CLI_SOURCES/ { on = 1 } on { print; if (!/\\$/) exit }' Makefile.am |
    grep -o 'tools/[a-z_]*\.c' | tr '\n' ' ') ;; esac
  # shellcheck disable=SC2086 # word lists on purpose
  if ! $CC $FLAGS -o "$out/$t" "$src" $LIB $extra -lzookeeper_mt -lpthread -lm 2>"$out/$t.build.log"; then
    echo "FAIL: $t (build)"; tail -20 "$out/$t.build.log"; fail=$((fail + 1)); continue
  fi
  scratch=$(mktemp -d)
  if (cd "$out" && ./"$t" -max_total_time="$secs" -rss_limit_mb=1024 -print_final_stats=0 \
        "$scratch" "$top/$corpus") >"$out/$t.log" 2>&1; then
    rate=$(grep -o 'exec/s: [0-9]*' "$out/$t.log" | tail -1 || true)
    echo "PASS: $t (${secs}s${rate:+, $rate})"
    pass=$((pass + 1))
  else
    echo "FAIL: $t (see $out/$t.log; crash input kept in $out)"
    grep -E 'ERROR|SUMMARY|crash-' "$out/$t.log" | head -10
    fail=$((fail + 1))
  fi
  # the --json listings of every input kept, read again by Python's own
  # reader (the target's reader is ours)
  if [ "$t" = fuzz_json ]; then
    lines=$out/json.lines
    rm -f "$lines"
    if (cd "$out" && ZKL_FUZZ_JSON_OUT=$lines ./"$t" -runs=0 "$scratch" "$top/$corpus") \
        >"$out/$t.replay.log" 2>&1 && [ -s "$lines" ] &&
      python3 -m json.tool --json-lines <"$lines" >/dev/null 2>"$out/$t.jsontool.log"; then
      echo "PASS: $t output through python3 -m json.tool ($(wc -l <"$lines") listings)"
      pass=$((pass + 1))
    else
      echo "FAIL: $t output through python3 -m json.tool (see $out/$t.jsontool.log)"
      head -5 "$out/$t.jsontool.log" 2>/dev/null || true
      fail=$((fail + 1))
    fi
  fi
  rm -rf "$scratch"
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
