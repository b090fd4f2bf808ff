#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The spin model of the queue protocol (model/zklock.pml): the bounded
# checks of scripts/model.sh. The protocol must hold, and each variant with
# a guard removed, and each known defect, must yield its counterexample.
# Without spin the test is skipped, except in CI, where that is a failure.
set -eu
: "${top_srcdir:=.}"
if ! command -v spin >/dev/null 2>&1; then
  if [ -n "${CI:-}" ]; then
    echo "FAIL: spin is not installed (scripts/install-deps.sh --test installs it)"
    exit 1
  fi
  echo "spin is not installed: skipping"
  exit 77
fi
exec bash "$top_srcdir/scripts/model.sh"
