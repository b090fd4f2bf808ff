#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# container-ensemble.sh: the three-node ensemble of docker-compose.yml, in
# containers built from Debian's packages (scripts/container/Dockerfile),
# on host networking bound to 127.0.0.1.
#
# Usage:
#   container-ensemble.sh up             install what is missing, build the
#                                        image, start the nodes, wait for a
#                                        quorum, print the connect string
#   container-ensemble.sh build          only install what is missing and
#                                        build the image (up does it too)
#   container-ensemble.sh connect        print the connect string
#   container-ensemble.sh status         each node's mode; 0 only with a quorum
#   container-ensemble.sh check [BUILD]  the integration tests that leave the
#                                        nodes alone (make check-ensemble),
#                                        against the containers; BUILD is
#                                        build/normal unless given, and is
#                                        configured and built if need be
#   container-ensemble.sh down [--purge] stop and remove the containers and
#                                        what up started; --purge: the
#                                        images and the state directory too
#
# Engines. podman, by default: what it keeps lives in the state directory
# ZKL_CONTAINER_DIR (build/containers): its containers.conf and
# storage.conf, the image store, the API socket (only its run-time lock and
# event files go to /run/libpod, a tmpfs, as always). The machine's own
# podman configuration and images are never read or touched. podman-compose 1.0.3
# puts every container on a bridge network of its own even when the file
# says host, so the compose file runs under docker-compose, talking to a
# podman API service that up starts and down stops. With no registry
# (as on the machines here), the debian:bookworm-slim base is made with
# debootstrap from the machine's own Debian mirror.
# ZKL_CONTAINER_ENGINE=docker uses a running Docker engine instead, with
# `docker compose` (or docker-compose) and the registry's base image.
#
# What down keeps: with podman, the two images (about 1 GB, in the state
# directory) so that the next up starts in seconds; --purge removes them.
# No container, network, bridge or build cache is left either way: the
# image is built without intermediate layers, and no network is created
# (the compose file's default network is the host's).
#
# Environment:
#   ZKL_CONTAINER_DIR     (build/containers) podman's state directory
#   ZKL_CONTAINER_ENGINE  (podman) or docker
#   ZKL_DEBIAN_MIRROR     mirror for debootstrap (default: this machine's)
#   ZKL_START_TIMEOUT     (120) seconds to wait for a quorum
# Root is needed to install packages and to run podman here.
set -eu

prog=${0##*/}
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
COMPOSE_FILE=$top/docker-compose.yml
PROJECT=zklock
IMAGE=zklock-zookeeper:3.8
BASE=debian:bookworm-slim
RECIPE=scripts/container/Dockerfile
ENGINE=${ZKL_CONTAINER_ENGINE:-podman}
START_TIMEOUT=${ZKL_START_TIMEOUT:-120}
D=

die() {
  echo "$prog: $*" >&2
  exit 1
}

usage() {
  sed -n '/^# Usage:/,/^#$/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

# The client addresses of the nodes, in id order, from the file itself.
connect_string() {
  sed -n 's/^ *ZOO_SERVERS: *//p' "$COMPOSE_FILE" | head -n 1 | tr ' ' '\n' |
    sed -n 's/^server\.\([0-9]*\)=.*;\(.*\)$/\1 \2/p' | sort -n | cut -d' ' -f2 |
    paste -sd, -
}

# Four-letter word to HOST:PORT; the reply, or nothing.
fourlw() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout -k 1 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf %s "$3" >&3 && cat <&3' \
    _ "${1%:*}" "${1##*:}" "$2" 2>/dev/null || true
}

# Each node's mode; 0 when all answer and exactly one leads.
show_status() {
  local hp mode leaders=0 rc=0
  for hp in $(connect_string | tr ',' ' '); do
    mode=$(fourlw "$hp" srvr | sed -n 's/^Mode: //p')
    echo "$hp ${mode:-<not serving>}"
    case "$mode" in
      leader) leaders=$((leaders + 1)) ;;
      follower) ;;
      *) rc=1 ;;
    esac
  done
  [ "$leaders" -eq 1 ] || rc=1
  return "$rc"
}

# install PACKAGE...: those not installed yet, as scripts/install-deps.sh does
install() {
  local p st missing=""
  for p in "$@"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || missing="$missing $p"
  done
  [ -n "$missing" ] || return 0
  [ "$(id -u)" -eq 0 ] || die "missing packages:$missing (run as root)"
  echo "$prog: installing:$missing" >&2
  apt-get update -qq
  # shellcheck disable=SC2086 # a list of packages
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# ---- podman ------------------------------------------------------------------
# podman and docker-compose see only the state directory's configuration.
podman_env() {
  D=${ZKL_CONTAINER_DIR:-$top/build/containers}
  mkdir -p "$D"
  D=$(CDPATH='' cd -- "$D" && pwd)
  # runc: crun refuses this machine's hybrid cgroups; no default ulimits:
  # setting them fails with EPERM here; netns host: no build step or
  # container ever gets a bridge address; networks: any network definition
  # would be written here, not under /etc.
  cat >"$D/containers.conf" <<EOF
# written by scripts/container-ensemble.sh
[containers]
default_ulimits = []
netns = "host"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"

[network]
network_config_dir = "$D/networks"
EOF
  cat >"$D/storage.conf" <<EOF
# written by scripts/container-ensemble.sh
[storage]
driver = "overlay"
graphroot = "$D/storage"
runroot = "$D/run"
EOF
  mkdir -p "$D/networks"
  export CONTAINERS_CONF=$D/containers.conf CONTAINERS_STORAGE_CONF=$D/storage.conf
  export DOCKER_HOST=unix://$D/podman.sock
}

# the pid of our API service, if it still runs (checked against its
# command line, so that a reused pid is never signalled)
service_pid() {
  local pid
  [ -s "$D/service.pid" ] || return 1
  pid=$(cat "$D/service.pid")
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "unix://$D/podman.sock" || return 1
  echo "$pid"
}

start_service() {
  service_pid >/dev/null && return 0
  rm -f "$D/podman.sock"
  setsid podman system service --time=0 "unix://$D/podman.sock" \
    </dev/null >>"$D/service.log" 2>&1 &
  echo $! >"$D/service.pid"
  for _ in $(seq 1 100); do
    [ -S "$D/podman.sock" ] && return 0
    sleep 0.1
  done
  die "the podman API service did not start (see $D/service.log)"
}

stop_service() {
  local pid
  pid=$(service_pid) || { rm -f "$D/service.pid" "$D/podman.sock"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$D/service.pid" "$D/podman.sock"
}

# this machine's Debian mirror, from its apt sources
host_mirror() {
  local m
  m=$(sed -n 's/^URIs: *\([^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  [ -n "$m" ] || m=$(sed -n 's/^deb  *\(\[[^]]*\]  *\)\{0,1\}\([^ ]*\/debian\)\/* .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}

# The base: the registry's if it answers, else the same made by debootstrap.
make_base() {
  local root=$D/rootfs mirror
  podman image exists "$BASE" && return 0
  if podman pull -q "docker.io/library/$BASE" >/dev/null 2>&1; then return 0; fi
  mirror=${ZKL_DEBIAN_MIRROR:-$(host_mirror)}
  echo "$prog: no registry: making $BASE with debootstrap from $mirror" >&2
  rm -rf -- "$root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$D/debootstrap.log" 2>&1 ||
    { tail -n 20 "$D/debootstrap.log" >&2; die "debootstrap failed"; }
  # apt in the image reads what this machine reads, security updates too
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
    rm -f "$root/etc/apt/sources.list"
  fi
  # what the registry's slim image leaves out: package caches and lists
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - "$BASE" >/dev/null
  rm -rf -- "$root"
}

# Build the image unless one from the same recipe and script is there.
build_image() {
  local sum have apt_opts=""
  sum=$(cat "$top/$RECIPE" "$top/scripts/zk-ensemble.sh" | sha256sum | cut -c1-16)
  have=$(podman image inspect -f '{{index .Labels "org.zklock.recipe"}}' "$IMAGE" 2>/dev/null || true)
  if [ "$have" = "$sum" ]; then return 0; fi
  make_base
  # A mirror that serves a snapshot has Release files past their
  # Valid-Until: where this machine's apt is told so, the image's is too.
  if apt-config dump 2>/dev/null | grep -qx 'Acquire::Check-Valid-Until "false";'; then
    apt_opts="-o Acquire::Check-Valid-Until=false"
  fi
  echo "$prog: building $IMAGE" >&2
  # --layers=false: no intermediate images are kept, only the result
  podman build -q --pull=never --layers=false --label "org.zklock.recipe=$sum" \
    --build-arg "APT_OPTS=$apt_opts" -f "$top/$RECIPE" -t "$IMAGE" "$top" >"$D/build.log" 2>&1 ||
    { tail -n 30 "$D/build.log" >&2; die "podman build failed"; }
  podman image prune -f >/dev/null 2>&1 || true
}

# Docker's own `docker compose` where there is one; else docker-compose
# (with podman, through DOCKER_HOST, the API service's socket)
compose() {
  if [ "$ENGINE" = docker ] && docker compose version >/dev/null 2>&1; then
    docker compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@"
  else
    docker-compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@"
  fi
}

cmd_build() {
  case "$ENGINE" in
    podman)
      install podman runc debootstrap docker-compose
      podman_env
      build_image
      ;;
    docker)
      docker info >/dev/null 2>&1 || die "ZKL_CONTAINER_ENGINE=docker, but no Docker engine answers"
      docker compose version >/dev/null 2>&1 || install docker-compose
      compose build
      ;;
    *) die "ZKL_CONTAINER_ENGINE must be podman or docker, not '$ENGINE'" ;;
  esac
}

cmd_up() {
  local deadline hp
  cmd_build
  [ "$ENGINE" != podman ] || start_service
  # up twice: the ensemble it started is there already
  if [ "$ENGINE" = podman ] && [ -n "$(podman ps -q --filter "label=com.docker.compose.project=$PROJECT")" ] &&
    show_status >/dev/null; then
    echo "$prog: already up" >&2
    connect_string
    return 0
  fi
  # a node of another ensemble on our ports would answer for ours
  for hp in $(connect_string | tr ',' ' '); do
    if (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null; then
      die "$hp is already in use: another ensemble runs there ('$prog down' stops ours)"
    fi
  done
  compose up -d --no-build
  deadline=$((SECONDS + START_TIMEOUT))
  until show_status >/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_status >&2 || true
      compose logs --tail 20 >&2 || true
      die "no quorum within ${START_TIMEOUT}s"
    fi
    sleep 0.5
  done
  show_status >&2
  connect_string
}

cmd_down() {
  local purge=${1:-} ids
  case "$purge" in '' | --purge) ;; *) usage ;; esac
  if [ "$ENGINE" = docker ]; then
    if [ -n "$purge" ]; then compose down --rmi all; else compose down; fi
    return 0
  fi
  podman_env
  # the project's containers, found by the label compose gave them
  ids=$(podman ps -aq --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null || true)
  # shellcheck disable=SC2086 # a list of ids
  [ -z "$ids" ] || podman rm -f -t 10 $ids >/dev/null
  stop_service
  if [ -n "$purge" ]; then
    podman rmi -a -f >/dev/null 2>&1 || true
    podman system reset -f >/dev/null 2>&1 || true
    rm -rf -- "$D"
    echo "$prog: removed the containers, the images and $D" >&2
  else
    echo "$prog: removed the containers; the images stay in $D ('down --purge' removes them)" >&2
  fi
}

cmd_check() {
  local build=${1:-build/normal} servers
  servers=$(connect_string)
  show_status >/dev/null || die "no quorum at $servers: run '$prog up' first"
  cd "$top"
  if [ ! -f "$build/Makefile" ]; then
    bash scripts/install-deps.sh --test
    bash scripts/build.sh "$build" --enable-werror
  fi
  # a suite log of its own: a make check may run in BUILD at the same time.
  # ZKL_TEST_OWN_SETTINGS: the nodes have zk-ensemble.sh's settings (the
  # super user, containers reaped every second), which compose-check holds
  # docker-compose.yml to, so the tests that rely on them run in full.
  ZKL_TEST_SERVERS=$servers ZKL_TEST_OWN_SETTINGS=1 \
    make -C "$build" check-ensemble TEST_SUITE_LOG=ensemble-suite.log
}

cmd=${1:-}
[ "$#" -eq 0 ] || shift
case "$cmd" in
  up) cmd_up ;;
  build) cmd_build ;;
  down) cmd_down "$@" ;;
  connect) connect_string ;;
  status) show_status ;;
  check) cmd_check "$@" ;;
  *) usage ;;
esac
