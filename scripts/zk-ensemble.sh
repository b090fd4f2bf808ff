#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# zk-ensemble.sh: run a real N-node ZooKeeper ensemble on 127.0.0.1 for tests.
#
# Usage:
#   zk-ensemble.sh env [N]          print the exports of ZKL_ENSEMBLE_DIR and
#                                   ZKLOCK_SERVERS, for eval; starts N nodes
#                                   first (default 3) unless an ensemble
#                                   runs in $ZKL_ENSEMBLE_DIR already:
#                                     eval "$(bash scripts/zk-ensemble.sh env)"
#   zk-ensemble.sh start [N]        start N nodes (default 3; 1 = standalone)
#   zk-ensemble.sh stop             stop every recorded node
#   zk-ensemble.sh status           per-node mode; exit 0 only if healthy
#   zk-ensemble.sh connect          print the connect string
#   zk-ensemble.sh leader           print the leader's id (exit 1 if none)
#   zk-ensemble.sh stop-node ID     SIGTERM one node and wait for it to exit
#   zk-ensemble.sh kill-node ID     SIGKILL one node
#   zk-ensemble.sh restart-node ID  start a stopped node again on its old data
#   zk-ensemble.sh wait-leader [S]  wait up to S s for exactly one live leader
#   zk-ensemble.sh mntr ID          print one node's mntr output
#   zk-ensemble.sh partition ID     cut node ID off the network (netns only)
#   zk-ensemble.sh heal ID          undo partition
#   zk-ensemble.sh host ID          print node ID's address
#   zk-ensemble.sh run-node         run one node in the foreground, set up
#                                   from ZOO_* variables (the container
#                                   image's entry point; see below)
#
# State lives in $ZKL_ENSEMBLE_DIR, made with mktemp by start or env when
# it is not set (and then removed by stop).  The last line start prints on
# stdout is "ZKL_ENSEMBLE_DIR=<dir>" so callers can eval it; env prints
# two export lines instead; everything else they print goes to stderr.
# Every other subcommand needs ZKL_ENSEMBLE_DIR set.
#
# Environment:
#   ZKL_CLIENT_BASE   (22180)  client port of node i is base+i
#   ZKL_QUORUM_BASE   (32180)  quorum port of node i is base+i
#   ZKL_ELECTION_BASE (33180)  election port of node i is base+i
#   ZKL_START_TIMEOUT (60)     seconds to wait for a serving ensemble
#   ZKL_KEEP_DIR      (0)      1: stop keeps a mktemp-created state dir
#   ZKL_NETNS         (0)      1: start runs each node in a network namespace
#                              of its own, bridged to this one, so that a
#                              node can be partitioned (needs root and ip)
#
# Exit status: 0 ok, 1 failure, 2 usage error, 3 a port is already in use
# (so wrappers can retry on other ports).  Starts are serialized with
# flock on $TMPDIR/zklock-ens.lock so parallel starts cannot race for ports.
#
# Only PIDs recorded by this script are ever signalled, and only after
# /proc confirms they still run this ensemble's zoo.cfg: other people's
# ZooKeeper JVMs on the same machine are never touched.
#
# Every node knows a super user, so that tests can remove trees whose ACLs
# shut out everyone else: a session that calls
#   zoo_add_auth(zh, "digest", "super:zklock-test-super", ...)
# bypasses all ACLs. The password is public and for test ensembles only.
#
# run-node is what scripts/container/Dockerfile runs, so that a container
# node and a loopback node get their zoo.cfg and JVM from this one file.
# It reads the variables of the official zookeeper image: ZOO_MY_ID and
# ZOO_SERVERS ("server.N=HOST:QUORUM:ELECTION;[ADDR:]CLIENTPORT ..."), then
# ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS,
# ZOO_CFG_EXTRA (zoo.cfg lines, space-separated) and JVMFLAGS, each on top
# of the settings below; ZOO_DATA_DIR (/data) starts empty every time.
# tests/compose-check.sh checks that docker-compose.yml sets the same values.
# Makefiles run us as $(SHELL) script, i.e. often dash: switch to bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

CLIENT_BASE=${ZKL_CLIENT_BASE:-22180}
QUORUM_BASE=${ZKL_QUORUM_BASE:-32180}
ELECTION_BASE=${ZKL_ELECTION_BASE:-33180}
START_TIMEOUT=${ZKL_START_TIMEOUT:-60}
STOP_TIMEOUT=10
MARKER=.created-by-zk-ensemble
LOCKFILE=${TMPDIR:-/tmp}/zklock-ens.lock

J=/usr/share/java
# The Debian zookeeper package ships no launcher usable outside its system
# service, so build the server classpath from the jars it depends on.
SERVER_CP=$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar:$J/netty-buffer.jar:$J/netty-codec.jar:$J/netty-common.jar:$J/netty-handler.jar:$J/netty-resolver.jar:$J/netty-transport.jar:$J/netty-transport-native-epoll.jar:$J/netty-transport-native-unix-common.jar:$J/metrics-core.jar:$J/snappy-java.jar:$J/commons-io.jar:$J/commons-cli.jar

# The super user of the header comment. ZooKeeper wants the digest, not the
# password: base64(sha1("super:zklock-test-super")), computed once with
#   python3 -c 'import base64, hashlib; print(base64.b64encode(
#     hashlib.sha1(b"super:zklock-test-super").digest()).decode())'
SUPER_DIGEST=super:VBgGM0yVI2N64eWfTnvWeUWwxKw=

# The ensemble's settings, one per line: tests/compose-check.sh reads them
# here. Short ticks and sessions keep expiry tests quick; forceSync=no
# because a test ensemble's data is thrown away after every run.
TICK_TIME=1000
INIT_LIMIT=10
SYNC_LIMIT=5
MIN_SESSION_TIMEOUT=2000
MAX_SESSION_TIMEOUT=60000
MAX_CLIENT_CNXNS=0
FORCE_SYNC=no
CONTAINER_CHECK_MS=1000

# Small heap and serial GC: 3 JVMs must fit comfortably on a 2-core CI box.
# C1-only JIT and no perf data cut JVM start-up time and /tmp litter.
# Empty container nodes are reaped every second instead of every minute, so
# that tests can see zklock's lock directories are containers.
JVM_OPTS=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData
  -Dznode.container.checkIntervalMs=$CONTAINER_CHECK_MS
  -Dzookeeper.DigestAuthenticationProvider.superDigest="$SUPER_DIGEST"
  -Djava.net.preferIPv4Stack=true
  -Dzookeeper.jmx.log4j.disable=true
  -Dorg.slf4j.simpleLogger.defaultLogLevel=info
  -Dorg.slf4j.simpleLogger.showDateTime=true
  -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS)

prog=${0##*/}
DIR=
PIDFILE=
CONNFILE=
IDS=()
PIDS=()
PORTS=()

die() {
  echo "$prog: $*" >&2
  exit 1
}

usage() {
  sed -n '/^# Usage:/,/^#$/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

set_dir() {
  [ -n "$1" ] || die "empty state directory name"
  # Absolute path: it is matched against /proc/PID/cmdline later.
  DIR=$(CDPATH='' cd -- "$1" && pwd) || die "cannot use state directory $1"
  PIDFILE=$DIR/pids
  CONNFILE=$DIR/connect
}

need_dir() {
  [ -n "${ZKL_ENSEMBLE_DIR:-}" ] ||
    die "ZKL_ENSEMBLE_DIR is not set (eval \"\$(bash $0 env)\" starts an ensemble and sets it)"
  [ -d "$ZKL_ENSEMBLE_DIR" ] || die "ZKL_ENSEMBLE_DIR=$ZKL_ENSEMBLE_DIR is not a directory"
  set_dir "$ZKL_ENSEMBLE_DIR"
}

# Read the pid records into arrays so loops below never share stdin with
# the pids file.
load() {
  local id pid port
  IDS=()
  PIDS=()
  PORTS=()
  [ -s "$PIDFILE" ] || return 1
  while read -r id pid port; do
    [ -n "$id" ] || continue
    IDS+=("$id")
    PIDS+=("$pid")
    PORTS+=("$port")
  done <"$PIDFILE"
  [ "${#IDS[@]}" -gt 0 ]
}

# index of node ID in the arrays, on stdout
idx_of() {
  local k
  for k in "${!IDS[@]}"; do
    if [ "${IDS[$k]}" = "$1" ]; then
      echo "$k"
      return 0
    fi
  done
  die "no node $1 recorded in $DIR"
}

# A recorded PID counts as ours only while it still runs this node's config:
# guards against PID reuse and ignores zombies (their cmdline is empty).
is_alive() {
  local id=$1 pid=$2
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -e "$DIR/n$id/zoo.cfg"
}

# ---- network namespaces (ZKL_NETNS=1) ---------------------------------------
# Node i lives in namespace <tag>n<i> at <net>.<i>, wired by a veth pair whose
# host end <tag>h<i> sits on bridge <tag>b (address <net>.254). Taking the
# host end down partitions the node from the other nodes and from every
# client at once, with no packet rejected: a real partition, not a reset.
# The tag and subnet derive from the client port base, so ensembles on
# different bases do not collide. $DIR/netns holds "<tag> <net>".
NET_TAG=
NET_PFX=
load_net() {
  NET_TAG=
  NET_PFX=
  [ -s "$DIR/netns" ] || return 1
  read -r NET_TAG NET_PFX <"$DIR/netns"
}

# address of node $1
host_of() {
  if load_net; then echo "$NET_PFX.$1"; else echo 127.0.0.1; fi
}

net_setup() {
  local n=$1 i ns
  command -v ip >/dev/null || die "ZKL_NETNS=1 needs ip (iproute2)"
  NET_TAG=zkl$CLIENT_BASE
  NET_PFX=10.$((CLIENT_BASE / 256 % 256)).$((CLIENT_BASE % 256))
  if ip link show "${NET_TAG}b" >/dev/null 2>&1; then
    echo "$prog: bridge ${NET_TAG}b exists: another ensemble uses base $CLIENT_BASE" >&2
    exit 3
  fi
  echo "$NET_TAG $NET_PFX" >"$DIR/netns"
  ip link add "${NET_TAG}b" type bridge || die "cannot create bridge ${NET_TAG}b (root needed)"
  ip addr add "$NET_PFX.254/24" dev "${NET_TAG}b"
  ip link set "${NET_TAG}b" up
  for i in $(seq 1 "$n"); do
    ns=${NET_TAG}n$i
    ip netns add "$ns" || die "cannot create network namespace $ns"
    ip link add "${NET_TAG}h$i" type veth peer name eth0 netns "$ns"
    ip link set "${NET_TAG}h$i" master "${NET_TAG}b" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET_PFX.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

net_teardown() {
  local ns
  load_net || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    case "$ns" in "${NET_TAG}n"[0-9]) ip netns del "$ns" 2>/dev/null || true ;; esac
  done
  ip link del "${NET_TAG}b" 2>/dev/null || true
  rm -f "$DIR/netns"
}

# Four-letter word to HOST:PORT; prints the reply, nothing on failure.
# bash /dev/tcp avoids depending on nc; timeout -k because a caller may run
# us with SIGTERM ignored (with-ensemble.sh's cleanup does).
fourlw() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout -k 1 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf %s "$3" >&3 && cat <&3' \
    _ "$1" "$2" "$3" 2>/dev/null || true
}

# mode of the node at index $1 of the arrays
mode_of() {
  fourlw "$(host_of "${IDS[$1]}")" "${PORTS[$1]}" srvr | sed -n 's/^Mode: //p'
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# the three ports of a node, read back from its zoo.cfg so that later
# subcommands do not depend on the ZKL_*_BASE of the caller's environment
node_ports() {
  local cfg=$DIR/n$1/zoo.cfg
  sed -n 's/^clientPort=//p' "$cfg"
  sed -n "s/^server\\.$1=[^:]*:\\([0-9]*\\):\\([0-9]*\\).*/\\1 \\2/p" "$cfg"
}

# Launch node I detached; sets LAUNCHED_PID.  setsid puts the JVM in its own
# session so a Ctrl-C aimed at the caller (make, a test) does not reach it:
# only stop / stop-node / kill-node end a server.  fd 9 (the start lock)
# must not leak into the JVM, or the lock would live as long as the server.
launch_node() {
  local i=$1 node=$DIR/n$1
  rm -f "$node/pid"
  printf '=== %s zk-ensemble.sh: starting node %s\n' "$(date '+%F %T')" "$i" >>"$node/server.log"
  local netns=()
  if load_net; then netns=(ip netns exec "${NET_TAG}n$i"); fi
  # shellcheck disable=SC2016 # $$ and $1 belong to the inner bash
  "${netns[@]}" setsid bash -c 'echo $$ >"$1/pid"; shift; exec "$@"' _ "$node" \
    java "${JVM_OPTS[@]}" -cp "$SERVER_CP" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$node/zoo.cfg" \
    </dev/null >>"$node/server.log" 2>&1 9<&- &
  for _ in $(seq 1 100); do
    [ -s "$node/pid" ] && break
    sleep 0.05
  done
  [ -s "$node/pid" ] || die "node $i did not start (no pid file in $node)"
  LAUNCHED_PID=$(cat "$node/pid")
}

show_logs() {
  local f
  for f in "$DIR"/n*/server.log; do
    [ -f "$f" ] || continue
    echo "----- last lines of $f -----"
    tail -n 25 "$f"
  done
}

# Ready: every recorded node alive and serving, exactly one leader.
ensemble_ready() {
  local k mode leaders=0
  load || return 1
  for k in "${!IDS[@]}"; do
    is_alive "${IDS[$k]}" "${PIDS[$k]}" || return 1
    mode=$(mode_of "$k")
    case "$mode" in
      leader | standalone) leaders=$((leaders + 1)) ;;
      follower | observer) ;;
      *) return 1 ;;
    esac
  done
  [ "$leaders" -eq 1 ]
}

cmd_status() {
  need_dir
  show_status
}

show_status() {
  local k mode rc=0 leaders=0 lid=""
  load || {
    echo "no ensemble recorded in $DIR"
    return 1
  }
  for k in "${!IDS[@]}"; do
    if ! is_alive "${IDS[$k]}" "${PIDS[$k]}"; then
      echo "node ${IDS[$k]} pid ${PIDS[$k]} port ${PORTS[$k]} DOWN"
      rc=1
      continue
    fi
    mode=$(mode_of "$k")
    echo "node ${IDS[$k]} pid ${PIDS[$k]} port ${PORTS[$k]} mode ${mode:-<not serving>}"
    case "$mode" in
      leader | standalone)
        leaders=$((leaders + 1))
        lid=${IDS[$k]}
        ;;
      follower | observer) ;;
      *) rc=1 ;;
    esac
  done
  [ "$leaders" -eq 1 ] || rc=1
  echo "leader: ${lid:-none}"
  echo "connect: $(cat "$CONNFILE" 2>/dev/null)"
  return "$rc"
}

# Stop all recorded nodes; used by stop and by a failed/interrupted start.
do_stop() {
  local k alive
  if load; then
    for k in "${!IDS[@]}"; do
      if is_alive "${IDS[$k]}" "${PIDS[$k]}"; then
        echo "stopping node ${IDS[$k]} (pid ${PIDS[$k]})"
        kill -TERM "${PIDS[$k]}" 2>/dev/null || true
      fi
    done
    for _ in $(seq 1 $((STOP_TIMEOUT * 10))); do
      alive=0
      for k in "${!IDS[@]}"; do
        if is_alive "${IDS[$k]}" "${PIDS[$k]}"; then alive=1; fi
      done
      [ "$alive" -eq 1 ] || break
      sleep 0.1
    done
    for k in "${!IDS[@]}"; do
      if is_alive "${IDS[$k]}" "${PIDS[$k]}"; then
        echo "node ${IDS[$k]} (pid ${PIDS[$k]}) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
        kill -KILL "${PIDS[$k]}" 2>/dev/null || true
      fi
    done
  else
    echo "no running ensemble recorded in $DIR"
  fi
  rm -f "$PIDFILE" "$CONNFILE" "$DIR"/n*/pid
  net_teardown
  if [ -f "$DIR/$MARKER" ] && [ "${ZKL_KEEP_DIR:-0}" != 1 ]; then
    rm -rf -- "$DIR"
    echo "removed $DIR"
  fi
}

cmd_stop() {
  need_dir
  do_stop
}

# EXIT trap during start: unless start got to the end, leave nothing
# running behind, whatever made it exit (error, set -e, signal).
STARTED=0
LAUNCHING=
start_exit() {
  local rc=$?
  [ "$STARTED" -eq 0 ] || return 0
  trap '' INT TERM HUP
  # a node launched but not yet recorded must not escape the stop below
  if [ -n "$LAUNCHING" ]; then
    for _ in $(seq 1 40); do
      [ -s "$DIR/n$LAUNCHING/pid" ] && break
      sleep 0.05
    done
    if [ -s "$DIR/n$LAUNCHING/pid" ]; then
      echo "$LAUNCHING $(cat "$DIR/n$LAUNCHING/pid") 0" >>"$PIDFILE"
    fi
  fi
  [ -z "$PIDFILE" ] || do_stop >&2 || true
  exit "$rc"
}

fail_start() {
  echo "$prog: $*" >&2
  show_logs >&2
  # lost a race for a port after all: let wrappers retry elsewhere
  if cat "$DIR"/n*/server.log 2>/dev/null | grep -q 'Address already in use'; then
    exit 3
  fi
  exit 1
}

# The settings every node's zoo.cfg starts with.
cfg_common() {
  cat <<EOF
tickTime=$TICK_TIME
initLimit=$INIT_LIMIT
syncLimit=$SYNC_LIMIT
minSessionTimeout=$MIN_SESSION_TIMEOUT
maxSessionTimeout=$MAX_SESSION_TIMEOUT
maxClientCnxns=$MAX_CLIENT_CNXNS
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=$FORCE_SYNC
EOF
}

write_cfg() {
  local i=$1 n=$2 node=$DIR/n$1 j
  {
    echo "# generated by zk-ensemble.sh; node $i of $n"
    cfg_common
    echo "dataDir=$node/data"
    echo "clientPort=$((CLIENT_BASE + i))"
    echo "clientPortAddress=$(host_of "$i")"
  } >"$node/zoo.cfg"
  # no server.N lines for N=1: QuorumPeerMain then runs a standalone server
  if [ "$n" -gt 1 ]; then
    for j in $(seq 1 "$n"); do
      echo "server.$j=$(host_of "$j"):$((QUORUM_BASE + j)):$((ELECTION_BASE + j))" >>"$node/zoo.cfg"
    done
  fi
}

# run-node: one node in the foreground (the container's first process
# becomes java). Each ZOO_SERVERS entry's ";[ADDR:]PORT" is that node's
# client side: ours becomes clientPort(Address), and it is dropped from the
# server lines so that they read as write_cfg's do.
cmd_run_node() {
  local id=${ZOO_MY_ID:-} dir=${ZOO_DATA_DIR:-/data} entry num client="" lines="" extra
  case "$id" in '' | *[!0-9]*) die "run-node: ZOO_MY_ID must be a number, not '$id'" ;; esac
  TICK_TIME=${ZOO_TICK_TIME:-$TICK_TIME}
  INIT_LIMIT=${ZOO_INIT_LIMIT:-$INIT_LIMIT}
  SYNC_LIMIT=${ZOO_SYNC_LIMIT:-$SYNC_LIMIT}
  MAX_CLIENT_CNXNS=${ZOO_MAX_CLIENT_CNXNS:-$MAX_CLIENT_CNXNS}
  for entry in ${ZOO_SERVERS:-}; do
    num=$(printf '%s\n' "$entry" | sed -n 's/^server\.\([0-9][0-9]*\)=[^;]*\(;.*\)\{0,1\}$/\1/p')
    [ -n "$num" ] || die "run-node: bad ZOO_SERVERS entry '$entry'"
    lines="$lines${entry%%;*}"$'\n'
    if [ "$num" = "$id" ] && [ "$entry" != "${entry#*;}" ]; then client=${entry#*;}; fi
  done
  [ -n "$client" ] || die "run-node: ZOO_SERVERS has no 'server.$id=...;[ADDR:]PORT' entry"
  rm -rf -- "${dir:?}/data"
  mkdir -p "$dir/data"
  echo "$id" >"$dir/data/myid"
  {
    echo "# generated by zk-ensemble.sh run-node; node $id"
    cfg_common
    echo "dataDir=$dir/data"
    echo "clientPort=${client##*:}"
    if [ "$client" != "${client##*:}" ]; then echo "clientPortAddress=${client%:*}"; fi
    printf '%s' "$lines"
    for extra in ${ZOO_CFG_EXTRA:-}; do echo "$extra"; done
  } >"$dir/zoo.cfg"
  echo "$prog: node $id, $dir/zoo.cfg:" >&2
  cat "$dir/zoo.cfg" >&2
  # JVMFLAGS last: the JVM takes the last of repeated -D settings
  # shellcheck disable=SC2086 # JVMFLAGS is a list of flags
  exec java "${JVM_OPTS[@]}" ${JVMFLAGS:-} -cp "$SERVER_CP" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}

# cmd_start N [quiet]: quiet leaves out the ZKL_ENSEMBLE_DIR= line (env
# prints exports of its own)
cmd_start() {
  local n=${1:-3} i k d port conn="" deadline
  case "$n" in '' | *[!0-9]*) usage ;; esac
  if [ "$n" -lt 1 ] || [ "$n" -gt 9 ]; then
    echo "$prog: N must be 1..9" >&2
    exit 2
  fi
  command -v java >/dev/null || die "java not found; run scripts/install-deps.sh"
  [ -f "$J/zookeeper.jar" ] || die "$J/zookeeper.jar not found; run scripts/install-deps.sh"
  for port in "$CLIENT_BASE" "$QUORUM_BASE" "$ELECTION_BASE" "$START_TIMEOUT"; do
    case "$port" in '' | *[!0-9]*) die "ZKL_*_BASE and ZKL_START_TIMEOUT must be numbers" ;; esac
  done

  if [ -n "${ZKL_ENSEMBLE_DIR:-}" ] && [ -d "$ZKL_ENSEMBLE_DIR" ]; then
    set_dir "$ZKL_ENSEMBLE_DIR"
    if load; then
      for k in "${!IDS[@]}"; do
        if is_alive "${IDS[$k]}" "${PIDS[$k]}"; then
          die "an ensemble is already running in $DIR (node ${IDS[$k]}, pid ${PIDS[$k]}); stop it first"
        fi
      done
    fi
  fi

  # Parallel starts (make -j, several users) would all see the same ports
  # free and then fight over them: hold a machine-wide lock from the check
  # until our servers have bound their ports.  Best effort without flock.
  if command -v flock >/dev/null; then
    [ -e "$LOCKFILE" ] || { : >>"$LOCKFILE" && chmod a+rw "$LOCKFILE"; } 2>/dev/null || true
    if exec 9<"$LOCKFILE"; then
      flock -w 120 9 || echo "$prog: could not take $LOCKFILE; starting anyway" >&2
    fi
  fi

  # Check ports before creating anything, so a clash leaves no litter.
  # (Nodes in namespaces of their own cannot clash with anything here.)
  for i in $(seq 1 "$n"); do
    [ "${ZKL_NETNS:-0}" != 1 ] || break
    for port in $((CLIENT_BASE + i)) $((QUORUM_BASE + i)) $((ELECTION_BASE + i)); do
      if [ "$n" -eq 1 ] && [ "$port" -ne $((CLIENT_BASE + i)) ]; then continue; fi
      if port_in_use "$port"; then
        echo "$prog: port $port on 127.0.0.1 is already in use (set ZKL_CLIENT_BASE/ZKL_QUORUM_BASE/ZKL_ELECTION_BASE)" >&2
        exit 3
      fi
    done
  done

  if [ -n "${ZKL_ENSEMBLE_DIR:-}" ]; then
    mkdir -p -- "$ZKL_ENSEMBLE_DIR"
    set_dir "$ZKL_ENSEMBLE_DIR"
  else
    d=$(mktemp -d /tmp/zklock-ens.XXXXXX) || die "mktemp failed"
    set_dir "$d"
    # lets stop tell a directory it may delete from one the user chose
    : >"$DIR/$MARKER"
  fi
  rm -f "$PIDFILE" "$CONNFILE"

  trap start_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP

  rm -f "$DIR/netns"
  [ "${ZKL_NETNS:-0}" != 1 ] || net_setup "$n"
  for i in $(seq 1 "$n"); do
    # fresh data every start: tests must not inherit an old run's znodes
    rm -rf -- "$DIR/n$i"
    mkdir -p "$DIR/n$i/data"
    echo "$i" >"$DIR/n$i/data/myid"
    write_cfg "$i" "$n"
    LAUNCHING=$i
    launch_node "$i"
    # record at once, so an interrupt from here on can stop this node
    echo "$i $LAUNCHED_PID $((CLIENT_BASE + i))" >>"$PIDFILE"
    LAUNCHING=
    conn="${conn:+$conn,}$(host_of "$i"):$((CLIENT_BASE + i))"
  done
  echo "$conn" >"$CONNFILE"
  echo "started $n node(s) in $DIR; waiting for a leader (up to ${START_TIMEOUT}s)" >&2

  deadline=$((SECONDS + START_TIMEOUT))
  until ensemble_ready; do
    for k in "${!IDS[@]}"; do
      # Looked at twice: while bash execs java the process's cmdline can
      # read empty for an instant (a CI run failed on a node that was fine
      # and had not logged a line yet).
      if ! is_alive "${IDS[$k]}" "${PIDS[$k]}" &&
        { sleep 0.5; ! is_alive "${IDS[$k]}" "${PIDS[$k]}"; }; then
        fail_start "node ${IDS[$k]} (pid ${PIDS[$k]}) exited during start-up"
      fi
    done
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_status >&2 || true
      fail_start "ensemble did not elect a leader within ${START_TIMEOUT}s"
    fi
    sleep 0.25
  done
  STARTED=1
  trap - INT TERM HUP EXIT
  exec 9<&-
  show_status >&2
  [ "${2:-}" = quiet ] || printf 'ZKL_ENSEMBLE_DIR=%q\n' "$DIR"
}

# The exports a shell needs to use (and later stop) the ensemble of
# $ZKL_ENSEMBLE_DIR, started first unless one of its nodes runs: so a
# second eval in the same shell reuses the ensemble.
cmd_env() {
  local n=${1:-3} k running=0
  if [ -n "${ZKL_ENSEMBLE_DIR:-}" ] && [ -d "$ZKL_ENSEMBLE_DIR" ]; then
    set_dir "$ZKL_ENSEMBLE_DIR"
    if load; then
      for k in "${!IDS[@]}"; do
        if is_alive "${IDS[$k]}" "${PIDS[$k]}"; then running=1; fi
      done
    fi
  fi
  if [ "$running" -eq 0 ]; then
    cmd_start "$n" quiet
    echo "$prog: stop it with: bash $0 stop" >&2
  fi
  [ -s "$CONNFILE" ] || die "no connect string recorded in $DIR"
  printf 'export ZKL_ENSEMBLE_DIR=%q\n' "$DIR"
  printf 'export ZKLOCK_SERVERS=%q\n' "$(cat "$CONNFILE")"
}

need_id() {
  [ -n "${1:-}" ] || usage
  need_dir
  load || die "no ensemble recorded in $DIR"
  K=$(idx_of "$1")
}

# wait until node K is gone; 0 if it went within $2 seconds
wait_gone() {
  local k=$1
  for _ in $(seq 1 $(($2 * 10))); do
    is_alive "${IDS[$k]}" "${PIDS[$k]}" || return 0
    sleep 0.1
  done
  ! is_alive "${IDS[$k]}" "${PIDS[$k]}"
}

cmd_stop_node() {
  need_id "${1:-}"
  if ! is_alive "${IDS[$K]}" "${PIDS[$K]}"; then
    echo "node $1 is not running"
    return 0
  fi
  kill -TERM "${PIDS[$K]}" 2>/dev/null || true
  if ! wait_gone "$K" "$STOP_TIMEOUT"; then
    echo "node $1 (pid ${PIDS[$K]}) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL" >&2
    kill -KILL "${PIDS[$K]}" 2>/dev/null || true
    wait_gone "$K" 5 || die "node $1 (pid ${PIDS[$K]}) did not exit"
  fi
  echo "stopped node $1 (pid ${PIDS[$K]})"
}

cmd_kill_node() {
  need_id "${1:-}"
  if ! is_alive "${IDS[$K]}" "${PIDS[$K]}"; then
    echo "node $1 is not running"
    return 0
  fi
  kill -KILL "${PIDS[$K]}" 2>/dev/null || true
  # callers restart the node next: its ports must be free by then
  wait_gone "$K" 5 || die "node $1 (pid ${PIDS[$K]}) survived SIGKILL"
  echo "killed node $1 (pid ${PIDS[$K]})"
}

cmd_restart_node() {
  local id=${1:-} port mode deadline
  need_id "$id"
  if is_alive "$id" "${PIDS[$K]}"; then
    die "node $id is still running (pid ${PIDS[$K]}); stop-node or kill-node it first"
  fi
  for port in $(node_ports "$id"); do
    load_net && break
    if port_in_use "$port"; then
      echo "$prog: port $port on 127.0.0.1 is in use; cannot restart node $id" >&2
      exit 3
    fi
  done
  launch_node "$id"
  awk -v id="$id" -v pid="$LAUNCHED_PID" '$1 == id { $2 = pid } { print }' \
    "$PIDFILE" >"$PIDFILE.new"
  mv -f "$PIDFILE.new" "$PIDFILE"
  load
  deadline=$((SECONDS + START_TIMEOUT))
  while :; do
    is_alive "$id" "$LAUNCHED_PID" || {
      tail -n 25 "$DIR/n$id/server.log" >&2
      die "node $id (pid $LAUNCHED_PID) exited after restart"
    }
    mode=$(mode_of "$K")
    [ -z "$mode" ] || break
    [ "$SECONDS" -lt "$deadline" ] || {
      tail -n 25 "$DIR/n$id/server.log" >&2
      die "node $id (pid $LAUNCHED_PID) not serving ${START_TIMEOUT}s after restart"
    }
    sleep 0.25
  done
  echo "restarted node $id (pid $LAUNCHED_PID), mode $mode"
}

# Print the id of the single live leader; 1 if there is none (or several).
find_leader() {
  local k mode found="" count=0
  load || return 1
  for k in "${!IDS[@]}"; do
    is_alive "${IDS[$k]}" "${PIDS[$k]}" || continue
    mode=$(mode_of "$k")
    case "$mode" in
      leader | standalone)
        found=${IDS[$k]}
        count=$((count + 1))
        ;;
    esac
  done
  [ "$count" -eq 1 ] || return 1
  echo "$found"
}

cmd_leader() {
  need_dir
  find_leader || {
    echo "$prog: no leader" >&2
    return 1
  }
}

cmd_wait_leader() {
  local secs=${1:-$START_TIMEOUT} deadline
  case "$secs" in '' | *[!0-9]*) usage ;; esac
  need_dir
  deadline=$((SECONDS + secs))
  until find_leader; do
    [ "$SECONDS" -lt "$deadline" ] || {
      echo "$prog: no single leader after ${secs}s" >&2
      show_status >&2 || true
      return 1
    }
    sleep 0.25
  done
}

cmd_mntr() {
  local out
  need_id "${1:-}"
  out=$(fourlw "$(host_of "$1")" "${PORTS[$K]}" mntr)
  [ -n "$out" ] || die "node $1 (port ${PORTS[$K]}) did not answer mntr"
  printf '%s\n' "$out"
}

cmd=${1:-}
[ "$#" -eq 0 ] || shift
case "$cmd" in
  start) cmd_start "${1:-3}" ;;
  env)
    # a failed start prints no export: "false" makes the caller's eval fail
    (cmd_env "$@") || {
      rc=$?
      echo false
      exit "$rc"
    }
    ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  connect)
    need_dir
    [ -s "$CONNFILE" ] || die "no ensemble recorded in $DIR"
    cat "$CONNFILE"
    ;;
  leader) cmd_leader ;;
  stop-node) cmd_stop_node "$@" ;;
  kill-node) cmd_kill_node "$@" ;;
  restart-node) cmd_restart_node "$@" ;;
  wait-leader) cmd_wait_leader "$@" ;;
  mntr) cmd_mntr "$@" ;;
  partition | heal)
    need_id "${1:-}"
    load_net || die "partition needs an ensemble started with ZKL_NETNS=1"
    if [ "$cmd" = partition ]; then ip link set "${NET_TAG}h$1" down; else ip link set "${NET_TAG}h$1" up; fi
    echo "$cmd: node $1"
    ;;
  host)
    need_id "${1:-}"
    host_of "$1"
    ;;
  run-node) cmd_run_node ;;
  *) usage ;;
esac
