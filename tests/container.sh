#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# container.sh BUILD: the containerized ensemble, for real. It starts the
# three containers of docker-compose.yml with scripts/container-ensemble.sh
# (podman; the image made from Debian's packages), checks that they are
# what the file and scripts/zk-ensemble.sh say and that nothing leaves
# loopback, runs the integration tests that leave the nodes alone against
# them (make check-ensemble in BUILD), stops them with `down` and checks
# that no container, network, bridge, build cache, process or port is left.
#
#   bash tests/container.sh build/normal   (as root; scripts/test.sh runs it
#                                           in CI with ZKL_CONTAINERS=1)
#
# Not a `make check` test: it installs packages and runs containers. Exit 77
# (skipped) where it cannot run: not root, or not Debian. Prints each step's
# time, and "container: N passed, N failed" last.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
build=${1:-build/normal}
CE=$top/scripts/container-ensemble.sh
ENS=$top/scripts/zk-ensemble.sh

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "container: needs root and apt-get: skipped"
  exit 77
fi
passed=0 failed=0
ok() { echo "PASS: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1"; failed=$((failed + 1)); }
check() { # check NAME CMD...: PASS if CMD succeeds
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
D=${ZKL_CONTAINER_DIR:-$top/build/containers}
pod() { CONTAINERS_CONF=$D/containers.conf CONTAINERS_STORAGE_CONF=$D/storage.conf podman "$@"; }
links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
setting() { sed -n "s/^$1=//p" "$ENS" | head -n 1; }
# the ports of every node, from the compose file
ports=$(sed -n 's/^ *ZOO_SERVERS: *//p' "$top/docker-compose.yml" | head -n 1 |
  tr ' :;' '\n\n\n' | grep -Ex '[0-9]+' | sort -u)
listening() { # the listening sockets on the compose file's ports
  local p
  for p in $ports; do ss -Htln "sport = :$p" | awk '{print $4}'; done
}

links_before=$(links)
upped=0
finish() {
  [ "$upped" -eq 0 ] || bash "$CE" down >/dev/null 2>&1 || true
}
trap finish EXIT

t0=$SECONDS
if servers=$(bash "$CE" up); then
  upped=1
  ok "container-ensemble.sh up: $servers ($((SECONDS - t0)) s)"
else
  bad "container-ensemble.sh up ($((SECONDS - t0)) s)"
  echo "container: $passed passed, $failed failed"
  exit 1
fi
check "connect string is the compose file's" [ "$servers" = "$(bash "$CE" connect)" ]

# nothing but loopback: every socket of the nodes on 127.0.0.1, no new
# interface (a bridge or veth would carry a private-range address)
bound=$(listening | sort -u)
echo "listening: $(echo "$bound" | tr '\n' ' ')"
# every node's client and election ports; the quorum port is the leader's
# alone, so one of the three
want=$(sed -n 's/^ *ZOO_SERVERS: *//p' "$top/docker-compose.yml" | head -n 1 | tr ' ' '\n' |
  sed -n 's/^server\.[0-9]*=[^:]*:[0-9]*:\([0-9]*\);.*:\([0-9]*\)$/127.0.0.1:\1 127.0.0.1:\2/p' | tr ' ' '\n')
missing=$(echo "$want" | while read -r hp; do echo "$bound" | grep -qx "$hp" || echo "$hp"; done)
check "every node's client and election port listening${missing:+ (not: $(echo $missing))}" [ -z "$missing" ]
check "one quorum port listening (the leader's)" \
  [ "$(echo "$bound" | grep -cvxF -e "$want")" -eq 1 ]
check "every port bound to 127.0.0.1 only" [ -z "$(echo "$bound" | grep -v '^127\.0\.0\.1:')" ]
check "no new network interface" [ "$(links)" = "$links_before" ]
nets=$(pod network ls --format '{{.Name}}' | grep -vx podman || true)
check "no container network created" [ -z "$nets" ]

# the containers: the image of the recipe, Debian 12, Debian's zookeeper
names=$(pod ps --format '{{.Names}} {{.Image}}' | sort)
echo "$names"
check "three containers of zklock-zookeeper:3.8" \
  [ "$(echo "$names" | grep -c ' localhost/zklock-zookeeper:3\.8$')" -eq 3 ]
first=$(echo "$names" | head -n 1 | cut -d' ' -f1)
deb=$(pod exec "$first" cat /etc/debian_version 2>/dev/null || true)
zk=$(pod exec "$first" dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || true)
echo "image: Debian $deb, zookeeper $zk"
check "the image is Debian 12 with Debian's zookeeper" eval '[ "${deb%%.*}" = 12 ] && [ -n "$zk" ]'

# the running servers use scripts/zk-ensemble.sh's settings
conf=$(timeout 3 bash -c 'h=${1%:*}; p=${1##*:}; exec 3<>"/dev/tcp/$h/$p" && printf conf >&3 && cat <&3' _ "${servers%%,*}" 2>/dev/null || true)
for kv in "tickTime=$(setting TICK_TIME)" "initLimit=$(setting INIT_LIMIT)" "syncLimit=$(setting SYNC_LIMIT)" \
  "minSessionTimeout=$(setting MIN_SESSION_TIMEOUT)" "maxSessionTimeout=$(setting MAX_SESSION_TIMEOUT)" \
  "maxClientCnxns=$(setting MAX_CLIENT_CNXNS)"; do
  check "server conf: $kv" eval 'echo "$conf" | grep -qx "$kv"'
done
cmd=$(pod exec "$first" sh -c 'tr "\0" " " </proc/1/cmdline' 2>/dev/null || true)
for want in "-Dznode.container.checkIntervalMs=$(setting CONTAINER_CHECK_MS)" \
  "-Dzookeeper.DigestAuthenticationProvider.superDigest=$(setting SUPER_DIGEST)" "-Xmx256m"; do
  check "server JVM: $want" eval 'case " $cmd " in *" $want "*) true ;; *) false ;; esac'
done
cfg=$(pod exec "$first" cat /data/zoo.cfg 2>/dev/null || true)
check "server zoo.cfg: forceSync=$(setting FORCE_SYNC)" eval 'echo "$cfg" | grep -qx "forceSync=$(setting FORCE_SYNC)"'

# the integration tests that leave the nodes alone
t0=$SECONDS
if bash "$CE" check "$build" >"$top/$build/container-check.out" 2>&1; then
  ok "make check-ensemble against the containers ($((SECONDS - t0)) s)"
else
  bad "make check-ensemble against the containers ($((SECONDS - t0)) s)"
fi
grep -E '^(PASS|FAIL|SKIP|ERROR|XPASS|# (TOTAL|PASS|FAIL|SKIP|ERROR):)' "$top/$build/container-check.out" || tail -40 "$top/$build/container-check.out"
if grep -qE '^# (FAIL|ERROR|SKIP|XPASS): *[1-9]' "$top/$build/container-check.out"; then
  bad "every test of check-ensemble passed"
  for t in "$top/$build"/tests/*.itest.log; do
    grep -q '^:test-result: \(FAIL\|ERROR\)' "${t%.log}.trs" 2>/dev/null || continue
    echo "---- $t"
    tail -60 "$t"
  done
fi

# down: nothing left but the two images TESTING.md says it keeps
t0=$SECONDS
if bash "$CE" down; then ok "container-ensemble.sh down ($((SECONDS - t0)) s)"; else bad "container-ensemble.sh down"; fi
upped=0
check "no container left" [ -z "$(pod ps -aq)" ]
check "no port left listening" [ -z "$(listening)" ]
check "no network interface left" [ "$(links)" = "$links_before" ]
check "no network definition left" [ -z "$(ls "$D/networks" | grep -vx cni.lock || true)" ]
check "no API service left" [ ! -e "$D/service.pid" ]
check "no build cache left (no dangling image)" [ -z "$(pod images -q -f dangling=true)" ]
check "the two kept images" [ "$(pod images --format '{{.Repository}}:{{.Tag}}' | sort | tr '\n' ' ')" = \
  "localhost/debian:bookworm-slim localhost/zklock-zookeeper:3.8 " ]
check "nothing mounted from the state directory" [ -z "$(grep -F " $D/" /proc/mounts || true)" ]

echo "container: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
