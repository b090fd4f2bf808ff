#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One version: configure.ac's AC_INIT names it, and the newest entry of
# debian/changelog (a native package: no Debian revision) and the newest
# heading of NEWS must say the same.
set -eu
: "${top_srcdir:=.}"
v=$(sed -n 's/^AC_INIT(\[zklock\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
[ -n "$v" ] || { echo "FAIL: no version in configure.ac's AC_INIT"; exit 1; }
deb=$(sed -n '1s/^zklock (\([^)]*\)).*/\1/p' "$top_srcdir/debian/changelog")
news=$(grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+' "$top_srcdir/NEWS" | cut -d' ' -f1)
fail=0
[ "$deb" = "$v" ] || { echo "FAIL: debian/changelog says $deb, configure.ac $v"; fail=1; }
[ "$news" = "$v" ] || { echo "FAIL: NEWS's newest heading says '$news', configure.ac $v"; fail=1; }
[ "$fail" -eq 0 ] && echo "version: $v in configure.ac, debian/changelog and NEWS"
exit "$fail"
