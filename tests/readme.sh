#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The C example in README.md must be examples/readme_example.c verbatim
# (that file is compiled by make check and run by tests/mutex.itest).
set -eu
: "${top_srcdir:=.}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk '/^<!-- readme_example.c/ { want = 1; next }
     want && /^```c$/ { on = 1; next }
     on && /^```$/ { exit }
     on { print }' "$top_srcdir/README.md" >"$tmp"
if [ ! -s "$tmp" ]; then
  echo "FAIL: no readme_example block in README.md"; exit 1
fi
if ! diff -u "$top_srcdir/examples/readme_example.c" "$tmp"; then
  echo "FAIL: README.md's example differs from examples/readme_example.c"; exit 1
fi
echo "readme: example block matches examples/readme_example.c"
