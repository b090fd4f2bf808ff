#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file names its licence (scripts/spdx.sh check), and the
# script itself works: on a scratch tree it reports a file without the
# line and one of an unknown kind (not a binary), adds the line in each
# kind's syntax (after a #! line), and a second add changes nothing.
set -eu
: "${top_srcdir:=.}"
fail=0
if ! bash "$top_srcdir/scripts/spdx.sh" check; then
  echo "FAIL: files above lack the licence line: run 'bash scripts/spdx.sh add'"
  fail=1
fi

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/scripts" "$t/lib" "$t/man"
cp "$top_srcdir/scripts/spdx.sh" "$t/scripts/"
printf '/* SPDX-License-Identifier: Apache-2.0 */\nint a;\n' >"$t/lib/has.c"
printf 'int b;\n' >"$t/lib/lacks.c"
printf '#!/bin/sh\necho hi\n' >"$t/scripts/run.sh"
printf '.TH X 1\n' >"$t/man/x.1"
printf '.so man1/x.1\n' >"$t/man/y.1"
printf 'text\n' >"$t/README.md"
printf 'ELF\0\1\2\n' >"$t/lib/a.out" # a program built in the tree: no syntax
out=$(bash "$t/scripts/spdx.sh" check 2>&1) && fail=1
for f in lib/lacks.c scripts/run.sh man/x.1; do
  echo "$out" | grep -q "no licence line: $f\$" || { echo "FAIL: check missed $f: $out"; fail=1; }
done
for f in lib/has.c man/y.1 README.md lib/a.out; do
  echo "$out" | grep -q "$f" && { echo "FAIL: check named $f: $out"; fail=1; }
done
printf 'x\n' >"$t/lib/odd.xyz"
out=$(bash "$t/scripts/spdx.sh" check 2>&1) && fail=1
echo "$out" | grep -q 'lib/odd.xyz: no comment syntax known' ||
  { echo "FAIL: an unknown kind of file went unreported: $out"; fail=1; }
rm "$t/lib/odd.xyz"
bash "$t/scripts/spdx.sh" add >/dev/null || { echo "FAIL: add"; fail=1; }
[ "$(head -n 1 "$t/lib/lacks.c")" = "/* SPDX-License-Identifier: Apache-2.0 */" ] &&
  [ "$(sed -n 2p "$t/lib/lacks.c")" = "int b;" ] &&
  [ "$(head -n 1 "$t/scripts/run.sh")" = "#!/bin/sh" ] &&
  [ "$(sed -n 2p "$t/scripts/run.sh")" = "# SPDX-License-Identifier: Apache-2.0" ] &&
  [ "$(head -n 1 "$t/man/x.1")" = '.\" SPDX-License-Identifier: Apache-2.0' ] &&
  [ "$(cat "$t/man/y.1")" = ".so man1/x.1" ] ||
  { echo "FAIL: add put the lines in the wrong places"; head -n 3 "$t"/lib/*.c "$t"/scripts/run.sh "$t"/man/*; fail=1; }
sum=$(cat "$t"/lib/* "$t"/scripts/* "$t"/man/* | cksum)
bash "$t/scripts/spdx.sh" add >/dev/null && bash "$t/scripts/spdx.sh" check >/dev/null ||
  { echo "FAIL: check after add"; fail=1; }
[ "$sum" = "$(cat "$t"/lib/* "$t"/scripts/* "$t"/man/* | cksum)" ] ||
  { echo "FAIL: a second add changed files"; fail=1; }
[ "$fail" -eq 0 ] && echo "spdx: every source file has its licence line; the script reports, adds once, and places the line right"
exit "$fail"
