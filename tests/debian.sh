#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# debian.sh: build the Debian packages from this tree, check them with
# lintian, install them, check that the examples are installed and build
# every example against the installed pkg-config file, run one example
# and the zklock tool against a real ensemble, then remove the packages
# and check that nothing is left.
#
#   bash tests/debian.sh          (as root, on Debian; scripts/test.sh runs it
#                                  in CI with ZKL_DEBIAN=1)
#
# It installs packages on this machine, so it is not a `make check` test,
# and it refuses to run where any zklock package is installed already: it
# removes what it installed and nothing else. Exit 77 (skipped) where it
# cannot run: not root, no dpkg-buildpackage. Prints "debian: N passed, N
# failed" last.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
PKGS="libzklock1 libzklock-dev zklock-tools"

if [ "$(id -u)" -ne 0 ] || ! command -v dpkg-buildpackage >/dev/null ||
  ! command -v lintian >/dev/null; then
  echo "debian: needs root, dpkg-buildpackage and lintian: skipped"
  exit 77
fi
installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $PKGS 2>/dev/null |
  awk '$1 != "un" {print $2}'; }
if [ -n "$(installed)" ]; then
  echo "debian: zklock packages already installed ($(installed | tr '\n' ' ')): not touching them"
  echo "debian: 0 passed, 1 failed"
  exit 1
fi

work=$(mktemp -d /tmp/zklock-deb.XXXXXX)
ens_dir=
cleanup() {
  dpkg --purge $PKGS >/dev/null 2>&1 || true
  if [ -n "$ens_dir" ]; then
    ZKL_ENSEMBLE_DIR=$ens_dir bash "$top/scripts/zk-ensemble.sh" stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
ok() { echo "PASS: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1"; failed=$((failed + 1)); }

# A copy of the tree without build products: dpkg-buildpackage writes its
# packages next to the tree it builds.
version=$(sed -n 's/^AC_INIT(\[zklock\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")
src=$work/zklock-$version
mkdir "$src"
tar -C "$top" --exclude=./build --exclude=./.git --exclude=./autom4te.cache \
  -cf - . | tar -C "$src" -xf -
if (cd "$src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
  ok "dpkg-buildpackage -us -uc -b"
else
  tail -40 "$work/build.log"
  bad "dpkg-buildpackage -us -uc -b"
fi
debs=()
for p in $PKGS; do
  f=$(ls "$work/${p}_${version}_"*.deb 2>/dev/null | head -1)
  [ -n "$f" ] && debs+=("$f") || bad "no package $p"
done
[ "${#debs[@]}" -eq 3 ] || { echo "debian: $passed passed, $((failed + 1)) failed"; exit 1; }

# lintian prints errors as "E: ..."; warnings are shown, errors fail
if lintian --fail-on error "$work"/zklock_"${version}"_*.changes >"$work/lintian.log" 2>&1; then
  ok "lintian: no errors ($(grep -c '^[WI]:' "$work/lintian.log") warnings or notes)"
else
  bad "lintian"
fi
grep -E '^[EW]:' "$work/lintian.log" || true

if apt-get install -y --no-install-recommends "${debs[@]}" >"$work/install.log" 2>&1; then
  ok "install ${PKGS}"
else
  tail -20 "$work/install.log"
  bad "install"
fi

# The examples, installed with libzklock-dev (debian/libzklock-dev.examples).
exdir=/usr/share/doc/libzklock-dev/examples
missing=
for f in "$top"/examples/*.c examples/README.md examples/cron/crontab \
  examples/cron/nightly-report.sh examples/systemd/scheduler.service; do
  f=${f#"$top"/}
  [ -f "$exdir/${f#examples/}" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "the examples are installed in $exdir" || bad "not in $exdir:$missing"

# Every example, compiled as a user of the installed packages would.
n=0
for ex in "$top"/examples/*.c; do
  b=$work/$(basename "$ex" .c)
  # shellcheck disable=SC2046 # pkg-config's flags are separate words
  if cc -Wall -Werror -o "$b" "$ex" $(pkg-config --cflags --libs zklock) 2>"$work/cc.log"; then
    n=$((n + 1))
  else
    cat "$work/cc.log"
    bad "compile $(basename "$ex") against the installed pkg-config file"
  fi
done
[ "$n" -eq 0 ] || ok "$n examples compiled with pkg-config --cflags --libs zklock"
so=$(ldd "$work/readme_example" 2>/dev/null | awk '$1 == "libzklock.so.1" {print $3}')
if [ -n "$so" ] && dpkg -S "$(readlink -f "$so")" 2>/dev/null | grep -q '^libzklock1'; then
  ok "readme_example runs with libzklock1's $(readlink -f "$so")"
else
  bad "readme_example does not link libzklock1's library (${so:-none})"
fi

# A real ensemble: the one named, or one of our own.
servers=${ZKL_TEST_SERVERS:-}
if [ -z "$servers" ]; then
  bash "$top/scripts/zk-ensemble.sh" start >"$work/ens.out" 2>&1 || cat "$work/ens.out"
  ens_dir=$(sed -n 's/.*ZKL_ENSEMBLE_DIR=\([^ ]*\).*/\1/p' "$work/ens.out" | tail -1)
  servers=$(sed -n 's/^connect: //p' "$work/ens.out" | tail -1)
fi
if out=$(timeout 60 "$work/readme_example" "$servers" 2>&1) &&
  echo "$out" | grep -q 'fencing token'; then
  ok "readme_example holds and releases /locks/orders"
else
  echo "$out"
  bad "readme_example"
fi
root=/zklock-deb-$$
if out=$(timeout 60 /usr/bin/zklock -s "$servers" -r "$root" -w 30 pkg sh -c 'echo "token=$ZKLOCK_TOKEN"' 2>&1) &&
  echo "$out" | grep -q '^token=[0-9]'; then
  ok "/usr/bin/zklock runs a command under the lock"
else
  echo "$out"
  bad "/usr/bin/zklock"
fi
/usr/bin/zklock -s "$servers" --sweep "$root" >/dev/null 2>&1 || true
man -w zklock >/dev/null 2>&1 && man -w 3 zklock >/dev/null 2>&1 && man -w zkelect >/dev/null 2>&1 &&
  ok "man pages zklock(1), zkelect(1), zklock(3) installed" || bad "man pages"
# a function's name finds its group's page, through the .so link
case $(man -w zkl_mutex_unlock 2>/dev/null) in
  */man3/zkl_mutex_lock.3*) ok "man zkl_mutex_unlock finds zkl_mutex_lock(3)" ;;
  *) bad "man -w zkl_mutex_unlock: $(man -w zkl_mutex_unlock 2>&1)" ;;
esac

dpkg --purge $PKGS >"$work/purge.log" 2>&1 || cat "$work/purge.log"
left=$(installed)
files=$(ls /usr/include/zklock*.h /usr/lib/*/libzklock* /usr/lib/*/pkgconfig/zklock.pc \
  /usr/bin/zklock /usr/bin/zkelect 2>/dev/null || true)
if [ -z "$left" ] && [ -z "$files" ]; then
  ok "purged: no package and no file left"
else
  bad "left after purge: $left $files"
fi
echo "debian: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
