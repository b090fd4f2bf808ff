#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh: the licence line of every source file.
#
#   bash scripts/spdx.sh check   list the source files with no
#                                "SPDX-License-Identifier: Apache-2.0" line
#                                in their first 5 lines; exit 1 if any
#   bash scripts/spdx.sh add     add the line to each of them, in the
#                                comment syntax of the file's kind; a file
#                                that has it is left alone, so running it
#                                again (after a merge) changes nothing else
#
# The files: in a git checkout, those git knows or would add (tracked, and
# untracked but not ignored); elsewhere (a release tarball, as under make
# distcheck) every file under the tree but the build system's products.
# Each file is of a kind below, or exempt by name (documents, data, Debian
# metadata: debian/copyright covers those). A file of no known kind is an
# error in both modes, so that a new kind of source cannot slip by: give
# it a kind or an exemption here. A third-party file under another licence
# would be exempted here too, by name.
#
# Binary files are skipped: they have no comment syntax.
#
# Where the line goes: the first line; after a "#!" line; in a man page,
# after a '\" preprocessor line. A man page that is only a ".so" link is
# exempt: man-db and dh_installman read such a page's first line.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
LINE='SPDX-License-Identifier: Apache-2.0'

# kind PATH: c (/* */), slash (//), hash (#), dnl (m4), roff (.\"),
# exempt, or unknown
kind() {
  case $1 in
    *.md | NEWS | LICENSE | NOTICE | .gitignore | .dockerignore) echo exempt ;;
    bench/results/* | fuzz/corpus/*) echo exempt ;;
    *.pyc | */__pycache__/* | *.class) echo exempt ;; # compiled by tests
    debian/rules) echo hash ;;
    debian/*) echo exempt ;;
    man/*.[1-9])
      if [ "$(grep -cv '^[[:space:]]*$' "$top/$1")" -le 1 ] && grep -q '^\.so ' "$top/$1"; then
        echo exempt
      else
        echo roff
      fi
      ;;
    *.c | *.h | *.h.in | *.pml) echo c ;;
    *.java) echo slash ;;
    configure.ac) echo dnl ;;
    *.sh | *.itest | *.py | *.yml | *.supp | *.pc.in | *.service | *.am) echo hash ;;
    */Dockerfile | */crontab | .ci/run) echo hash ;;
    *) echo unknown ;;
  esac
}

comment() {
  case $1 in
    c) echo "/* $LINE */" ;;
    slash) echo "// $LINE" ;;
    hash) echo "# $LINE" ;;
    dnl) echo "dnl $LINE" ;;
    roff) echo ".\\\" $LINE" ;;
  esac
}

files() {
  if [ -e "$top/.git" ] && command -v git >/dev/null; then
    git -C "$top" ls-files --cached --others --exclude-standard
  else
    # A tarball's build-system products, and out-of-tree build directories.
    (cd "$top" && find . -type f \
      ! -path './build*' ! -path './_build/*' ! -path './_inst/*' \
      ! -path './autom4te.cache/*' ! -path './m4/*' ! -path './build-aux/*' \
      ! -name configure ! -name Makefile.in ! -name aclocal.m4 \
      ! -name config.h.in ! -name '*~' ! -name '*.tar.*' |
      sed 's|^\./||')
  fi | LC_ALL=C sort
}

has_line() { head -n 5 -- "$top/$1" | grep -qF "$LINE"; }

# add_to PATH KIND: insert the comment, keeping the file's inode and mode
add_to() {
  local f=$top/$1 c tmp first
  c=$(comment "$2")
  tmp=$(mktemp)
  first=$(head -n 1 -- "$f")
  case $2,$first in
    hash,'#!'* | roff,"'\\\""*)
      { printf '%s\n%s\n' "$first" "$c"; tail -n +2 -- "$f"; } >"$tmp"
      ;;
    *) { printf '%s\n' "$c"; cat -- "$f"; } >"$tmp" ;;
  esac
  cat -- "$tmp" >"$f"
  rm -f -- "$tmp"
}

mode=${1:-}
case $mode in check | add) ;; *)
  sed -n '3,11s/^# \{0,1\}//p' "$0" >&2
  exit 2
  ;;
esac
missing=0 unknown=0 added=0
while IFS= read -r f; do
  [ -f "$top/$f" ] && [ ! -L "$top/$f" ] || continue
  # a binary (a program built in the tree, say) has no comment syntax
  [ ! -s "$top/$f" ] || grep -Iq . "$top/$f" || continue
  k=$(kind "$f")
  case $k in
    exempt) continue ;;
    unknown)
      echo "spdx: $f: no comment syntax known for this kind of file (scripts/spdx.sh)" >&2
      unknown=$((unknown + 1))
      continue
      ;;
  esac
  has_line "$f" && continue
  if [ "$mode" = add ]; then
    add_to "$f" "$k"
    echo "spdx: added to $f"
    added=$((added + 1))
  else
    echo "spdx: no licence line: $f"
    missing=$((missing + 1))
  fi
done < <(files)
if [ "$mode" = add ]; then
  echo "spdx: added the line to $added file(s)"
else
  [ "$missing" -gt 0 ] || [ "$unknown" -gt 0 ] || echo "spdx: every source file has its licence line"
fi
[ "$missing" -eq 0 ] && [ "$unknown" -eq 0 ]
