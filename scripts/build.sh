#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh DIR [CONFIGURE ARGS...]: configure and build zklock out of tree
# in DIR (relative to the source tree), generating ./configure if needed.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
dir=$1
shift
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
  autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
if [ -f config.status ]; then
  echo "build.sh: the source tree itself is configured; run 'make distclean' in it first" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
  "$top/configure" -q "$@"
fi
make -j"$(nproc 2>/dev/null || echo 2)" -s >/dev/null
