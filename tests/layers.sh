#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lib/'s layers hold (scripts/callgraph.sh on the built objects): no file
# names a function of a layer above its own, no circle of calls between
# files, no function over 60 lines and no file over 800. ARCHITECTURE.md
# says why each rule is there.
set -eu
: "${top_builddir:=.}" "${top_srcdir:=.}"
command -v nm >/dev/null 2>&1 || { echo "no nm: skipping"; exit 77; }
out=$(bash "$top_srcdir/scripts/callgraph.sh" "$top_builddir") && rc=0 || rc=$?
if [ "$rc" -ne 0 ]; then
  printf '%s\n' "$out" | sed -n '/^== arrows up/,$p'
  echo "FAIL: lib/'s layers do not hold (scripts/callgraph.sh exit $rc)"
  exit 1
fi
printf '%s\n' "$out" | sed -n '/^== arrows up/,$p'
