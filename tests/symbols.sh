#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Only the zkl_ prefix may leave the shared library (internal code is zkl__
# and hidden), and every function the header declares must be exported.
set -eu
: "${top_builddir:=.}" "${top_srcdir:=.}"
so=$(ls "$top_builddir"/.libs/libzklock.so.* 2>/dev/null | head -1)
[ -n "$so" ] || { echo "no shared library built: skipping"; exit 77; }
syms=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
bad=$(printf '%s\n' "$syms" | grep -v '^zkl_[a-z]' || true)
if [ -n "$bad" ]; then
  echo "FAIL: symbols outside the zkl_ prefix:"; echo "$bad"; exit 1
fi
internal=$(printf '%s\n' "$syms" | grep '^zkl__' || true)
[ -z "$internal" ] || { echo "FAIL: internal symbols exported: $internal"; exit 1; }
declared=$(sed -n 's/^ZKL_EXTERN[^(]*[ *]\(zkl_[a-z_]*\)(.*/\1/p' \
  "$top_srcdir/include/zklock.h" | sort -u)
missing=$(printf '%s\n' "$declared" | while read -r f; do
  printf '%s\n' "$syms" | grep -qx "$f" || echo "$f"; done)
[ -z "$missing" ] || { echo "FAIL: declared but not exported: $missing"; exit 1; }
# The Debian symbols file lists exactly what the library exports: a symbol
# added to the header must be added there too (with the version that adds
# it), and one removed means a new SONAME (Makefile.am, -version-info).
listed=$(sed -n 's/^ \(zkl_[a-z_0-9]*\)@Base .*/\1/p' \
  "$top_srcdir/debian/libzklock1.symbols" | sort)
if [ "$listed" != "$syms" ]; then
  echo "FAIL: debian/libzklock1.symbols differs from the exported symbols:"
  t=${TMPDIR:-/tmp}/zkl-symbols.$$
  printf '%s\n' "$listed" >"$t"
  printf '%s\n' "$syms" | diff "$t" - || true
  rm -f "$t"
  exit 1
fi
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
head -1 "$top_srcdir/debian/libzklock1.symbols" | grep -q "^$soname libzklock1 " ||
  { echo "FAIL: SONAME $soname is not debian/libzklock1.symbols' first line"; exit 1; }
echo "symbols: $(printf '%s\n' "$syms" | wc -l) exported, all zkl_, all declared ones present, all in debian/libzklock1.symbols"
