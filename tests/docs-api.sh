#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The C API's documentation covers every exported function:
#  - each function the library exports (nm -D of the built library; with
#    none built, debian/libzklock1.symbols) is in zklock(3)'s SYNOPSIS,
#    and has a page of its own, man/<function>.3: its group's page, or a
#    .so link to it, whose NAME line names the function;
#  - the group pages, the links and man/man3.am are what scripts/man3.py
#    makes from include/zklock.h now (needs python3), which also fails
#    when a declared function has no comment above it or no group;
#  - every page renders without groff warnings;
#  - Makefile.am installs them and debian/libzklock-dev.install ships them.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
man=$top_srcdir/man
so=$(ls "$top_builddir"/.libs/libzklock.so.* 2>/dev/null | head -1 || true)
if [ -n "$so" ]; then
  syms=$(nm -D --defined-only "$so" | awk '$3 ~ /^zkl_/ {print $3}' | sort)
  from="nm -D $(basename "$so")"
else
  syms=$(sed -n 's/^ \(zkl_[a-z_0-9]*\)@Base .*/\1/p' \
    "$top_srcdir/debian/libzklock1.symbols" | sort)
  from=debian/libzklock1.symbols
fi
[ -n "$syms" ] || { echo "FAIL: no exported function found ($from)"; exit 1; }
synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$man/zklock.3")
fail=0
n=0
for f in $syms; do
  n=$((n + 1))
  printf '%s\n' "$synopsis" | grep -q "[ *]$f(" ||
    { echo "FAIL: $f is not in zklock(3)'s SYNOPSIS"; fail=1; }
  page=$man/$f.3
  if [ ! -f "$page" ]; then
    echo "FAIL: $f has no page: man/$f.3 (python3 scripts/man3.py makes it)"
    fail=1
    continue
  fi
  target=$(sed -n 's|^\.so man3/\(.*\)$|\1|p' "$page")
  [ -z "$target" ] || page=$man/$target
  if [ ! -f "$page" ]; then
    echo "FAIL: man/$f.3 links to man/$target, which is not there"
    fail=1
  elif ! sed -n '/^\.SH NAME/{n;p;}' "$page" | grep -qE "(^|, )$f(,| )"; then
    echo "FAIL: $(basename "$page")'s NAME line does not name $f"
    fail=1
  fi
done
for page in "$man"/zklock.3 "$man"/zkl_*.3; do
  grep -q '^\.so ' "$page" && continue
  warn=$(groff -man -ww -z "$page" 2>&1 || true)
  [ -z "$warn" ] || { echo "FAIL: $(basename "$page"): $warn"; fail=1; }
done
if command -v python3 >/dev/null 2>&1; then
  python3 "$top_srcdir/scripts/man3.py" --check || fail=1
else
  echo "docs-api: no python3: the pages are not compared with the header"
fi
grep -qx 'include $(srcdir)/man/man3.am' "$top_srcdir/Makefile.am" &&
  grep -q '^dist_man_MANS = .*$(ZKL_MAN3)' "$top_srcdir/Makefile.am" ||
  { echo "FAIL: Makefile.am does not install man/man3.am's pages"; fail=1; }
grep -qx 'usr/share/man/man3/zkl_\*\.3' "$top_srcdir/debian/libzklock-dev.install" ||
  { echo "FAIL: debian/libzklock-dev.install does not ship man/zkl_*.3"; fail=1; }
[ "$fail" -eq 0 ] &&
  echo "docs-api: all $n exported functions ($from) are in zklock(3) and have a page"
exit "$fail"
