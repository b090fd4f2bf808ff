#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The file-level call graph of lib/, and the sizes that issue 24 bounds.
#
#   scripts/callgraph.sh [BUILD_DIR]        (default build/normal)
#
# An arrow a.c -> b.c means a.c names a function or variable that b.c
# defines: a call, or an address taken (a watcher passed along counts). It
# is read from the built objects with nm, so it sees what the compiler saw,
# macros included. Then it looks for circles. It also lists functions of
# lib/ over 60 lines (from the line that opens the body's signature to the
# closing brace at column 0) and .c files over 800 lines, and checks that
# no arrow goes up a layer (lib/base < zk < engine < recipes).
#
# Exits 0 when there is no circle and nothing is over size, 1 otherwise.
# Needs a configured, built tree: bash scripts/build.sh build/normal.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
build=${1:-$top/build/normal}
[ -d "$build/lib" ] || { echo "no $build/lib: build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The layers of lib/, bottom first (internal.h includes their headers in
# this order): a file may name what its own layer or a lower one defines.
declare -A layer_of=([base]=1 [zk]=2 [engine]=3 [recipes]=4)

# One object per source file of the internal library (every file of lib/).
find "$build/lib" -name 'libzklock_internal_la-*.o' ! -path '*/.libs/*' | sort >"$tmp/objs"
[ -s "$tmp/objs" ] || { echo "no objects in $build/lib" >&2; exit 2; }
while read -r o; do
  f=$(basename "$o" .o)
  f=${f#libzklock_internal_la-}.c
  # The object of lib/X/f.c is in lib/X/ of the build: one left elsewhere
  # by a file since moved or removed is not lib/ now.
  rel=${o#"$build"/}
  src=$top/$(dirname "$rel")/$f
  [ -f "$src" ] || continue
  # its layer: the folder under lib/, numbered from the bottom
  d=$(basename "$(dirname "$src")")
  echo "$f ${layer_of[$d]:-0} $d" >>"$tmp/layers"
  nm "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ {print $3, f}' >>"$tmp/defs"
  nm "$o" | awk -v f="$f" '$1 == "U" {print $2, f}' >>"$tmp/uses"
done <"$tmp/objs"

# uses: symbol user; defs: symbol definer -> user definer, once per symbol.
awk 'NR == FNR {def[$1] = $2; next}
     ($1 in def) && def[$1] != $2 {n[$2 " " def[$1]]++}
     END {for (e in n) print e, n[e]}' "$tmp/defs" "$tmp/uses" |
  sort >"$tmp/edges"
echo "== $(wc -l <"$tmp/edges") arrows between files (caller callee symbols)"
cat "$tmp/edges"

status=0
# Upward arrows: a lower layer naming a higher one.
echo "== arrows up a layer (should be none)"
if ! awk 'NR == FNR {layer[$1] = $2; dir[$1] = $3; next}
  layer[$1] < layer[$2] {print "  " dir[$1] "/" $1 " -> " dir[$2] "/" $2; bad = 1}
  END {if (!bad) print "none"; exit bad}' "$tmp/layers" "$tmp/edges"; then
  status=1
fi

# Circles: the strongly connected components of more than one file, from
# the transitive closure (a few dozen files: Floyd-Warshall is plenty).
echo "== circles (files that reach each other through calls)"
if ! awk '{f[$1]; f[$2]; r[$1, $2] = 1}
  END {
    for (k in f) for (i in f) if (r[i, k]) for (j in f) if (r[k, j]) r[i, j] = 1
    for (i in f) {
      if (done[i]) continue
      c = i; n = 1
      for (j in f) if (j != i && r[i, j] && r[j, i]) {c = c " " j; n++; done[j] = 1}
      if (n > 1) {print "  " n " files: " c; bad = 1}
    }
    if (!bad) print "none"
    exit bad
  }' "$tmp/edges"; then
  status=1
fi

echo "== functions over 60 lines"
for f in $(find "$top/lib" -name '*.c' | sort); do
  awk -v f="${f#"$top"/}" '
    /^[a-z].*[a-zA-Z0-9_]+\(/ && !/;$/ {start = NR; name = $0}
    /^}/ && start {if (NR - start + 1 > 60) print "  " f ":" start ": " NR - start + 1 " lines: " name; start = 0}' "$f"
done >"$tmp/long"
if [ -s "$tmp/long" ]; then cat "$tmp/long"; status=1; else echo "none"; fi

echo "== .c files over 800 lines"
# The licence line is not counted: the bound is on code, and
# scripts/spdx.sh adds that line to every file, after the fact.
for f in $(find "$top/lib" -name '*.c' | sort); do
  echo "$(grep -cv 'SPDX-License-Identifier:' "$f") ${f#"$top"/}"
done | awk '$1 > 800 {print "  " $2 ": " $1; bad = 1} END {if (!bad) print "none"; exit bad}' ||
  status=1
exit $status
