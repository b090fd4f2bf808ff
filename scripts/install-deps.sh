#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install-deps.sh [--test]: install what building and running zklock needs
# on Debian 12; with --test, also what its tests need: valgrind, clang for
# the fuzzers, spin for the model, the peers the interoperability tests
# run against (kazoo, Apache Curator with a JDK to compile against), and
# debhelper and lintian for the package test (tests/debian.sh).
#
# Idempotent and quiet when everything is already installed, so CI and
# developers can run it unconditionally.  Needs root only when something is
# actually missing.
set -eu

PACKAGES="build-essential autoconf automake libtool pkg-config
libzookeeper-mt-dev zookeeper default-jre-headless procps iproute2
python3 groff-base util-linux"
TEST_PACKAGES="valgrind clang libclang-rt-14-dev spin
python3-kazoo default-jdk-headless libcurator-recipes-java debhelper lintian"
case ${1:-} in
--test) PACKAGES="$PACKAGES $TEST_PACKAGES" ;;
'') ;;
*) echo "usage: install-deps.sh [--test]" >&2; exit 64 ;;
esac

missing=""
for p in $PACKAGES; do
  # "install ok installed" is the only state in which the files are usable;
  # half-configured or removed-but-config-kept packages count as missing.
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing="${missing:+$missing }$p"
done

[ -n "$missing" ] || exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: missing packages: $missing" >&2
  echo "run as root:  apt-get update && apt-get install -y --no-install-recommends $missing" >&2
  exit 1
fi

echo "install-deps.sh: installing: $missing" >&2
# A fresh container has empty package lists, so update before installing;
# skipped entirely above when nothing is missing to keep reruns offline.
apt-get update
# shellcheck disable=SC2086 # $missing is a space-separated package list
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
