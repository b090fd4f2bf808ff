#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ARCHITECTURE.md's step graph is today's (scripts/steps.py --check), and
# the check can fail: on a scratch copy of the tree, a step that hands on
# one more step makes the table stale, --write brings it up to date, and
# a static of one file is never taken for another file's of that name.
set -eu
: "${top_srcdir:=.}"
fail=0
if ! python3 "$top_srcdir/scripts/steps.py" --root "$top_srcdir" --check "$top_srcdir/ARCHITECTURE.md"; then
  echo "FAIL: run 'python3 scripts/steps.py --write ARCHITECTURE.md'"
  fail=1
fi

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/lib/engine" "$t/lib/recipes"
cat >"$t/lib/engine/a.c" <<'C'
static void step_two(zkl__acq_t *a);
static void step_one(zkl__acq_t *a) { a->run->next = step_two; }
static void step_two(zkl__acq_t *a) { zkl__finish(a, 0); }
void zkl__finish(zkl__acq_t *a, int rc) { (void)a; (void)rc; }
C
cat >"$t/lib/engine/b.c" <<'C'
static void step_two(zkl__acq_t *a) { a->run->back(a, 0); }
static void step_three(zkl__acq_t *a) { a->run->next = step_two; /* step_one */ }
C
printf '# x\n<!-- steps:begin -->\n<!-- steps:end -->\nend\n' >"$t/doc.md"
st() { python3 "$top_srcdir/scripts/steps.py" --root "$t" "$@"; }
st --write "$t/doc.md"
st --check "$t/doc.md" || { echo "FAIL: --check after --write"; fail=1; }
grep -q '^| `engine/a.c` | `step_one` | `step_two` | - |$' "$t/doc.md" ||
  { echo "FAIL: a.c's step_one"; cat "$t/doc.md"; fail=1; }
grep -q '^| `engine/b.c` | `step_two` | - | `->back` |$' "$t/doc.md" ||
  { echo "FAIL: b.c's step_two"; cat "$t/doc.md"; fail=1; }
# b.c's step_three hands on b.c's step_two; the comment names nothing
grep -q '^| `engine/b.c` | `step_three` | `step_two` | - |$' "$t/doc.md" ||
  { echo "FAIL: b.c's step_three"; cat "$t/doc.md"; fail=1; }
tail -n 1 "$t/doc.md" | grep -qx end || { echo "FAIL: text after the table lost"; fail=1; }
# the control: one more transition, and the table is stale
sed -i 's/zkl__finish(a, 0);/zkl__finish(a, 0); a->run->next = step_one;/' "$t/lib/engine/a.c"
if st --check "$t/doc.md" 2>/dev/null; then
  echo "FAIL: --check passed a stale table"
  fail=1
fi
st --write "$t/doc.md" && st --check "$t/doc.md" || { echo "FAIL: --write did not bring it up to date"; fail=1; }
[ "$fail" = 0 ] && echo "steps: ARCHITECTURE.md's step graph is today's"
exit "$fail"
