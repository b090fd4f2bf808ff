#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compose-check.sh: keep docker-compose.yml a consistent 3-node ensemble.
#
# Usage: compose-check.sh [--self-test | --no-self-test]
#   (default)       check the file, then run the self-test
#   --self-test     only the self-test: mutated copies must all be rejected
#   --no-self-test  only check the file
# COMPOSE_FILE=path checks another file (default: the repo's docker-compose.yml).
#
# An automake test (exit 0 pass, 1 fail).  Docker is not needed, nor a YAML
# module: awk reads the small YAML subset compose files use (block maps,
# "- item" lists, quoted or plain scalars, |/> block scalars).
# Makefiles run us as $(SHELL) script, i.e. often dash: switch to bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

prog=${0##*/}
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)

# automake sets srcdir to the directory of the Makefile.am listing the test:
# the top-level one or tests/.
if [ -n "${srcdir:-}" ] && [ -f "$srcdir/docker-compose.yml" ]; then
  root=$srcdir
elif [ -n "${srcdir:-}" ] && [ -f "$srcdir/../docker-compose.yml" ]; then
  root=$srcdir/..
else
  root=$here/..
fi
file=${COMPOSE_FILE:-$root/docker-compose.yml}
# the loopback ensemble's script, whose settings the file must repeat
# (ZKL_ENSEMBLE_SCRIPT=path checks against another copy: the self-test)
script=${ZKL_ENSEMBLE_SCRIPT:-$root/scripts/zk-ensemble.sh}
# the image recipe every service builds from, relative to the file
DOCKERFILE=scripts/container/Dockerfile

# Flatten the compose file into tab-separated records:
#   service <name> | <svc> image <ref> | <svc> port <spec> | <svc> env <K=V>
#   | <svc> ports <inline value> | <svc> network <mode> | <svc> build <K=V>
parse() {
  awk '
    function indent(s) { match(s, /^ */); return RLENGTH }
    function trim(v) { sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v); return v }
    function unquote(v) {
      v = trim(v)
      if (v ~ /^".*"$/ || v ~ /^\047.*\047$/) v = substr(v, 2, length(v) - 2)
      return v
    }
    # drop a " # comment" that is not inside quotes
    function uncomment(s,   i, c, q) {
      q = ""
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (q != "") { if (c == q) q = ""; continue }
        if (c == "\"" || c == "\047") { q = c; continue }
        if (c == "#" && (i == 1 || substr(s, i - 1, 1) ~ /[ \t]/)) return substr(s, 1, i - 1)
      }
      return s
    }
    function flush_block() {
      if (bkey != "") print svc "\tenv\t" bkey "=" trim(bval)
      bkey = ""; bval = ""
    }
    {
      line = uncomment($0)
      if (line ~ /^[ \t]*$/) next
      if (line ~ /\t/) { print "error\ttab in indentation at line " NR; next }
      ind = indent(line)
      body = substr(line, ind + 1)
      # continuation of a |/> block scalar
      if (bkey != "" && ind > bind) { bval = bval " " trim(body); next }
      flush_block()
      if (ind == 0) { insvc = (body ~ /^services:[ \t]*$/); sind = -1; next }
      if (!insvc) next
      if (sind < 0) sind = ind
      if (ind < sind) { print "error\tbad indentation at line " NR; next }
      if (ind == sind) {
        svc = body; sub(/:[ \t]*$/, "", svc)
        print "service\t" svc
        kind = -1; key = ""
        next
      }
      if (kind < 0) kind = ind
      if (ind == kind) {
        key = body; val = ""
        if (match(body, /:([ \t]|$)/)) {
          key = substr(body, 1, RSTART - 1); val = unquote(substr(body, RSTART + 1))
        }
        if (key == "image") print svc "\timage\t" val
        if (key == "network_mode") print svc "\tnetwork\t" val
        if (key == "ports") print svc "\tports\t" val
        next
      }
      if (key == "build" && match(body, /:([ \t]|$)/)) {
        print svc "\tbuild\t" substr(body, 1, RSTART - 1) "=" unquote(substr(body, RSTART + 1))
      } else if (key == "ports" && body ~ /^-/) {
        print svc "\tport\t" unquote(substr(body, 2))
      } else if (key == "environment") {
        if (body ~ /^-/) {
          print svc "\tenv\t" unquote(substr(body, 2))
        } else if (match(body, /:([ \t]|$)/)) {
          k = substr(body, 1, RSTART - 1); v = unquote(substr(body, RSTART + 1))
          if (v ~ /^[|>][-+]?$/) { bkey = k; bind = ind; bval = "" }
          else print svc "\tenv\t" k "=" v
        }
      }
    }
    END { flush_block() }
  ' "$1"
}

passed=0
failed=0
records=
tmp=
# flatten lines to one space-separated line, for messages
words() { tr '\n' ' ' | sed 's/ *$//'; }
ok() { passed=$((passed + 1)); }
fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}

# env_of SVC KEY: value of KEY in SVC's environment ("" if unset)
env_of() {
  printf '%s\n' "$records" | awk -F'\t' -v s="$1" -v k="$2" \
    '$1 == s && $2 == "env" && index($3, k "=") == 1 { print substr($3, length(k) + 2); exit }'
}

# setting NAME: a setting of the ensemble script ("NAME=value" at the start
# of a line there), as the loopback ensemble uses it
setting() {
  sed -n "s/^$1=//p" "$script" | head -n 1
}

# same_words A B: A and B hold the same words, in any order
same_words() {
  [ "$(printf '%s\n' $1 | sort | words)" = "$(printf '%s\n' $2 | sort | words)" ]
}

# check_dockerfile PATH: the image is Debian's zookeeper on Debian 12 and
# runs the ensemble script's run-node, so that its zoo.cfg and JVM flags
# are the loopback ensemble's
check_dockerfile() {
  local d=$1
  if [ ! -r "$d" ]; then
    fail "cannot read the image recipe $d"
    return
  fi
  if grep -Eq '^FROM[[:space:]]+debian:bookworm-slim[[:space:]]*$' "$d"; then ok; else
    fail "$d: want FROM debian:bookworm-slim"; fi
  # RUN lines continued with a backslash, read as one line each
  if sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ta' -e '}' "$d" |
    grep -E '^RUN .*apt-get .*install ' | grep -Ew 'zookeeper' | grep -Eqw 'default-jre-headless'; then ok; else
    fail "$d: want Debian's zookeeper and default-jre-headless installed"; fi
  if grep -Eq '^COPY[[:space:]]+scripts/zk-ensemble\.sh[[:space:]]' "$d" &&
    grep -Eq '^ENTRYPOINT.*zk-ensemble\.sh.*run-node' "$d"; then ok; else
    fail "$d: want scripts/zk-ensemble.sh copied in and 'run-node' as the entry point"; fi
}

check_file() {
  local f=$1 svc services n id servers want_servers="" first="" entry num
  local image doc want v k extra flags dockerfile="" ports
  local -A svc_of_id=() port_owner=() client_of=()
  if [ ! -r "$f" ]; then
    fail "cannot read $f"
    return
  fi
  records=$(parse "$f")
  while IFS=$'\t' read -r a b; do
    [ "$a" = error ] && fail "$f: $b"
  done <<<"$records"

  services=$(printf '%s\n' "$records" | awk -F'\t' '$1 == "service" { print $2 }')
  n=$(printf '%s\n' "$services" | grep -c . || true)
  if [ "$n" -eq 3 ]; then ok; else fail "expected exactly 3 services, found $n: $(printf '%s\n' "$services" | words)"; fi

  for svc in $services; do
    image=$(printf '%s\n' "$records" | awk -F'\t' -v s="$svc" '$1 == s && $2 == "image" { print $3 }')
    if printf '%s\n' "$image" | grep -Eqx '(localhost/)?zklock-zookeeper:3\.8'; then ok; else
      fail "$svc: image is '${image:-<none>}', want zklock-zookeeper:3.8 (built from $DOCKERFILE)"; fi
    v=$(printf '%s\n' "$records" | awk -F'\t' -v s="$svc" '$1 == s && $2 == "build" { print $3 }' | sort | words)
    if [ "$v" = "context=. dockerfile=$DOCKERFILE" ]; then
      ok
      dockerfile=$(dirname -- "$f")/$DOCKERFILE
    else
      fail "$svc: build is '${v:-<none>}', want context . and dockerfile $DOCKERFILE"
    fi

    # host networking and nothing published: a bridge would put the
    # traffic on a private-range address, not on loopback
    v=$(printf '%s\n' "$records" | awk -F'\t' -v s="$svc" '$1 == s && $2 == "network" { print $3 }')
    ports=$(printf '%s\n' "$records" | awk -F'\t' -v s="$svc" '$1 == s && ($2 == "port" || $2 == "ports") { print $3 }' | words)
    if [ "$v" = host ] && [ -z "$ports" ]; then ok; else
      fail "$svc: want network_mode host and no ports (network_mode '${v:-<none>}', ports '${ports:-<none>}')"; fi

    id=$(env_of "$svc" ZOO_MY_ID)
    case "$id" in
      1 | 2 | 3)
        if [ -n "${svc_of_id[$id]:-}" ]; then
          fail "$svc: ZOO_MY_ID $id is also used by ${svc_of_id[$id]}"
        else
          ok
          svc_of_id[$id]=$svc
        fi
        ;;
      *) fail "$svc: ZOO_MY_ID is '${id:-<unset>}', want a distinct 1, 2 or 3" ;;
    esac

    # the settings: the ensemble script's, not merely consistent ones
    for k in TICK_TIME INIT_LIMIT SYNC_LIMIT MAX_CLIENT_CNXNS; do
      v=$(env_of "$svc" "ZOO_$k")
      want=$(setting "$k")
      if [ -n "$want" ] && [ "$v" = "$want" ]; then ok; else
        fail "$svc: ZOO_$k is '${v:-<unset>}', but scripts/zk-ensemble.sh has $k=${want:-<unset>}"; fi
    done
    extra=$(env_of "$svc" ZOO_CFG_EXTRA)
    want="minSessionTimeout=$(setting MIN_SESSION_TIMEOUT) maxSessionTimeout=$(setting MAX_SESSION_TIMEOUT) forceSync=$(setting FORCE_SYNC)"
    if same_words "$extra" "$want"; then ok; else
      fail "$svc: ZOO_CFG_EXTRA is '$extra', want '$want' (scripts/zk-ensemble.sh)"; fi
    # tests authenticate as the super user to clean up, and look for
    # empty containers going within seconds
    flags=" $(env_of "$svc" JVMFLAGS) "
    for want in "-Dzookeeper.DigestAuthenticationProvider.superDigest=$(setting SUPER_DIGEST)" \
      "-Dznode.container.checkIntervalMs=$(setting CONTAINER_CHECK_MS)"; do
      case "$flags" in
        *" $want "*) ok ;;
        *) fail "$svc: JVMFLAGS must hold $want, as scripts/zk-ensemble.sh has it" ;;
      esac
    done
  done
  [ -z "$dockerfile" ] || check_dockerfile "$dockerfile"

  # ZOO_SERVERS: the same three entries everywhere, every address loopback,
  # every port distinct (the three nodes share one network)
  for svc in $services; do
    servers=$(env_of "$svc" ZOO_SERVERS | tr ' ' '\n' | grep . | sort || true)
    if [ -z "$servers" ]; then
      fail "$svc: ZOO_SERVERS is not set"
      continue
    fi
    if [ -n "$want_servers" ]; then
      if [ "$servers" = "$want_servers" ]; then ok; else
        fail "$svc: ZOO_SERVERS differs from $first's: $(printf '%s\n' "$servers" | words)"; fi
      continue
    fi
    want_servers=$servers
    first=$svc
    if [ "$(printf '%s\n' "$servers" | sed -n 's/^server\.\([0-9]*\)=.*/\1/p' | sort | tr -d '\n')" = 123 ]; then ok; else
      fail "$svc: ZOO_SERVERS must list server.1, server.2 and server.3 once each: $(printf '%s\n' "$servers" | words)"; fi
    for entry in $servers; do
      if ! printf '%s\n' "$entry" |
        grep -Eqx 'server\.[1-3]=127\.0\.0\.1:[0-9]+:[0-9]+;127\.0\.0\.1:[0-9]+'; then
        fail "$entry: want server.N=127.0.0.1:QUORUM:ELECTION;127.0.0.1:CLIENT (loopback only)"
        continue
      fi
      num=${entry#server.}
      num=${num%%=*}
      client_of[$num]=${entry##*:}
      for v in $(printf '%s\n' "${entry#*=}" | tr ':;' '  ' | sed 's/127\.0\.0\.1//g'); do
        if [ -n "${port_owner[$v]:-}" ]; then
          fail "$entry: port $v is server.${port_owner[$v]}'s too"
        else
          port_owner[$v]=$num
        fi
      done
      ok
    done
  done

  # the default network is the host's: no compose tool makes a bridge
  v=$(awk '/^networks:/ { n = 1; next } /^[^ #]/ { n = 0 } n' "$f" | sed 's/ #.*//' | tr -s ' \n' '  ')
  case "$v" in
    *" default: "*) if printf '%s\n' "$v" | grep -q ' external: true' && printf '%s\n' "$v" | grep -q ' name: host\b'; then
      ok; else fail "networks: default must be external, named host (it is:$v)"; fi ;;
    *) fail "want a top-level 'networks: default: {external: true, name: host}'" ;;
  esac

  # the connect string documented at the top must be the client ports
  doc=$(sed -n 's/^#.*[Cc]onnect string: *//p' "$f" | head -n 1)
  want=$(for num in 1 2 3; do [ -z "${client_of[$num]:-}" ] || echo "127.0.0.1:${client_of[$num]}"; done | paste -sd, -)
  if [ -n "$doc" ] && [ "$doc" = "$want" ]; then
    ok
  else
    fail "header comment 'connect string: ${doc:-<missing>}' does not match the client ports ($want)"
  fi
}

# self_test_one NAME WHAT FILTER...: a copy of the checked files in which
# WHAT (compose, script or dockerfile) went through FILTER must be
# rejected by a normal run.
self_test_one() {
  local name=$1 what=$2 dir src dst out
  shift 2
  dir=$tmp/$name
  mkdir -p "$dir/${DOCKERFILE%/*}"
  cp "$file" "$dir/docker-compose.yml"
  cp "$script" "$dir/zk-ensemble.sh"
  cp "$(dirname -- "$file")/$DOCKERFILE" "$dir/$DOCKERFILE"
  case $what in
    compose) src=$file dst=$dir/docker-compose.yml ;;
    script) src=$script dst=$dir/zk-ensemble.sh ;;
    dockerfile) src=$(dirname -- "$file")/$DOCKERFILE dst=$dir/$DOCKERFILE ;;
  esac
  "$@" <"$src" >"$dst"
  if [ "$name" = pristine ]; then
    if out=$(COMPOSE_FILE=$dir/docker-compose.yml ZKL_ENSEMBLE_SCRIPT=$dir/zk-ensemble.sh \
      bash "$here/$prog" --no-self-test 2>&1); then
      ok
    else
      fail "self-test: the unmodified copy is rejected:"
      printf '%s\n' "$out"
    fi
    return
  fi
  if cmp -s "$src" "$dst"; then
    fail "self-test '$name': the mutation did not change $src; update the self-test"
    return
  fi
  if out=$(COMPOSE_FILE=$dir/docker-compose.yml ZKL_ENSEMBLE_SCRIPT=$dir/zk-ensemble.sh \
    bash "$here/$prog" --no-self-test 2>&1); then
    fail "self-test '$name': the mutated copy was accepted"
  else
    ok
    echo "self-test: $name -> rejected ($(printf '%s\n' "$out" | grep -m1 '^FAIL' || true))"
  fi
}

self_test() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/compose-check.XXXXXX")
  # shellcheck disable=SC2064 # $tmp is fixed now
  trap "rm -rf '$tmp'" EXIT
  # the pristine copy must pass, or the rejections below prove nothing
  self_test_one pristine compose cat
  self_test_one duplicate-id compose sed 's/ZOO_MY_ID: *3/ZOO_MY_ID: 2/'
  # only the second service's list changes
  self_test_one mismatched-servers compose awk '/ZOO_SERVERS/ && ++n == 2 { sub(/server\.3=127\.0\.0\.1:2890/, "server.3=127.0.0.1:2891") } { print }'
  # all lists agree, but two nodes would bind one port
  self_test_one port-clash compose sed 's/server\.2=127\.0\.0\.1:2889/server.2=127.0.0.1:2888/g'
  self_test_one public-address compose sed 's/;127\.0\.0\.1:2183/;0.0.0.0:2183/g'
  self_test_one bridge-network compose sed '0,/network_mode: host/s//network_mode: bridge/'
  self_test_one published-port compose sed '0,/network_mode: host/s//network_mode: host\n    ports:\n      - "127.0.0.1:2181:2181"/'
  self_test_one bridge-default compose sed '/^networks:/,$d'
  self_test_one wrong-image compose sed '0,/image: zklock-zookeeper:3\.8/s//image: zookeeper:3.8/'
  self_test_one other-recipe compose sed '0,/dockerfile: scripts\/container\/Dockerfile/s//dockerfile: Dockerfile/'
  self_test_one wrong-super-user compose sed '0,/superDigest=super:/s//superDigest=root:/'
  self_test_one slow-reaping compose sed '0,/checkIntervalMs=1000/s//checkIntervalMs=60000/'
  self_test_one other-tick compose awk '/ZOO_TICK_TIME/ && ++n == 3 { sub(/1000/, "2000") } { print }'
  self_test_one synced-disk compose sed '0,/forceSync=no/s//forceSync=yes/'
  self_test_one connect-string compose sed 's/^# Connect string: .*/# Connect string: 127.0.0.1:2181,127.0.0.1:2182/'
  # a service more, at the end of services:
  self_test_one fourth-service compose sed '/^networks:/i\
  zoo4:\
    image: zklock-zookeeper:3.8\
'
  # the script changes and the compose file does not
  self_test_one script-tick script sed 's/^TICK_TIME=.*/TICK_TIME=2000/'
  self_test_one script-session script sed 's/^MAX_SESSION_TIMEOUT=.*/MAX_SESSION_TIMEOUT=40000/'
  self_test_one script-reaping script sed 's/^CONTAINER_CHECK_MS=.*/CONTAINER_CHECK_MS=60000/'
  self_test_one script-super-user script sed 's/^SUPER_DIGEST=super:.*/SUPER_DIGEST=super:AAAA/'
  # the image stops running the script's own node
  self_test_one recipe-entrypoint dockerfile sed 's/run-node/start/'
  self_test_one recipe-base dockerfile sed 's/^FROM debian:bookworm-slim/FROM zookeeper:3.8/'
}

mode=all
case "${1:-}" in
  '') ;;
  --self-test) mode=self ;;
  --no-self-test) mode=check ;;
  *)
    echo "usage: $prog [--self-test | --no-self-test]" >&2
    exit 2
    ;;
esac

if [ "$mode" != self ]; then
  check_file "$file"
  if [ "$failed" -ne 0 ]; then
    echo "$prog: $file: $failed check(s) failed, $passed passed"
    exit 1
  fi
  echo "compose-check: $passed checks passed"
fi
if [ "$mode" != check ]; then
  passed=0
  self_test
  if [ "$failed" -ne 0 ]; then
    echo "$prog: self-test: $failed check(s) failed"
    exit 1
  fi
  echo "compose-check: self-test: $passed checks passed"
fi
exit 0
