#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# README.md shows each tool's command line as the tool itself gives it:
# the lines between "<!-- begin TOOL --help -->" and "<!-- end TOOL
# --help -->" (code fence lines aside) must be TOOL --help's output, whole,
# or its synopsis alone (the usage lines, up to the first empty line).
#
#   tests/docs-readme.sh           check (make check)
#   tests/docs-readme.sh --update  rewrite each block from the built tool,
#                                  keeping its form (whole or synopsis)
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
readme=$top_srcdir/README.md
update=no
[ "${1:-}" = --update ] && update=yes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for tool in zklock zkelect; do
  begin="<!-- begin $tool --help -->"
  end="<!-- end $tool --help -->"
  if [ "$(grep -cxF "$begin" "$readme")" -ne 1 ] ||
    [ "$(grep -cxF "$end" "$readme")" -ne 1 ]; then
    echo "FAIL: README.md needs one '$begin' line and one '$end' line"
    fail=1
    continue
  fi
  "$top_builddir/tools/$tool" --help >"$tmp/help"
  awk 'NF == 0 { exit } { print }' "$tmp/help" >"$tmp/synopsis"
  awk -v b="$begin" -v e="$end" '$0 == b { on = 1; next } $0 == e { on = 0 }
    on && !/^```/' "$readme" >"$tmp/block"
  if cmp -s "$tmp/block" "$tmp/help"; then
    form=help
  elif cmp -s "$tmp/block" "$tmp/synopsis"; then
    form=synopsis
  elif [ "$update" = yes ]; then
    form=synopsis
    [ "$(wc -l <"$tmp/block")" -gt "$(wc -l <"$tmp/synopsis")" ] && form=help
  else
    echo "FAIL: README.md's $tool block is not '$tool --help' (whole or its synopsis):"
    diff "$tmp/block" "$tmp/synopsis" || true
    fail=1
    continue
  fi
  if [ "$update" = yes ]; then
    # the fence lines stay where they are; only the text between changes
    awk -v b="$begin" -v e="$end" -v f="$tmp/$form" '
      $0 == b { print; on = 1; next }
      on && /^```/ && !fenced { print; fenced = 1
        while ((getline l < f) > 0) print l; next }
      on && $0 == e { if (!fenced) while ((getline l < f) > 0) print l
        on = 0; fenced = 0 }
      on && /^```/ { print; next }
      on { next }
      { print }' "$readme" >"$tmp/readme"
    cat "$tmp/readme" >"$readme"
    echo "docs-readme: README.md's $tool block rewritten ($form)"
  fi
done
[ "$fail" -eq 0 ] && [ "$update" = no ] &&
  echo "docs-readme: README.md shows zklock --help and zkelect --help as the tools print them"
exit "$fail"
