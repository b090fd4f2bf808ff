#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The man pages render without warnings, and every long option the tools
# accept (as listed by --help) is documented in the tool's man page.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
fail=0
for page in zklock.1 zkelect.1 zklock.3; do
  warn=$(groff -man -ww -z "$top_srcdir/man/$page" 2>&1 || true)
  if [ -n "$warn" ]; then echo "FAIL: $page: $warn"; fail=1; fi
done
for tool in zklock zkelect; do
  opts=$("$top_builddir/tools/$tool" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  for o in $opts; do
    esc=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
    grep -q -- "$esc" "$top_srcdir/man/$tool.1" ||
      { echo "FAIL: $tool $o is not in man/$tool.1"; fail=1; }
  done
done
[ "$fail" -eq 0 ] && echo "docs: man pages render cleanly and document every option"
exit "$fail"
