#!/usr/bin/env bash
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

# Flatten the compose file into tab-separated records:
#   service <name> | <svc> image <ref> | <svc> port <spec> | <svc> env <K=V>
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
        next
      }
      if (key == "ports" && body ~ /^-/) {
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

check_file() {
  local f=$1 svc services n id want_servers="" first="" servers entry num host rest
  local p hostport image owner doc want
  local -A svc_of_id=() port_owner=()
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
    if printf '%s\n' "$image" | grep -Eqx '(docker\.io/(library/)?)?zookeeper:3\.8(\.[0-9]+)?'; then
      ok
    else
      fail "$svc: image is '${image:-<none>}', want zookeeper:3.8 or zookeeper:3.8.x"
    fi

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

    # one published port per node, loopback only, into the client port
    p=$(printf '%s\n' "$records" | awk -F'\t' -v s="$svc" '$1 == s && $2 == "port" { print $3 }')
    if [ "$(printf '%s\n' "$p" | grep -c .)" -ne 1 ]; then
      fail "$svc: want exactly one published port, found: $(printf '%s\n' "$p" | words)"
    elif ! printf '%s\n' "$p" | grep -Eqx '127\.0\.0\.1:[0-9]+:2181(/tcp)?'; then
      fail "$svc: port '$p' must be 127.0.0.1:HOSTPORT:2181 (loopback, container port 2181)"
    else
      hostport=$(printf '%s\n' "$p" | cut -d: -f2)
      if [ -n "${port_owner[$hostport]:-}" ]; then
        fail "$svc: host port $hostport is published by ${port_owner[$hostport]} too"
      else
        ok
        port_owner[$hostport]=$svc
      fi
    fi
  done

  # ZOO_SERVERS: the same three entries everywhere, server.N on the service
  # whose ZOO_MY_ID is N, standard quorum/election/client ports.
  for svc in $services; do
    servers=$(env_of "$svc" ZOO_SERVERS | tr ' ' '\n' | grep . | sort || true)
    if [ -z "$servers" ]; then
      fail "$svc: ZOO_SERVERS is not set"
      continue
    fi
    if [ -z "$want_servers" ]; then
      want_servers=$servers
      first=$svc
      if [ "$(printf '%s\n' "$servers" | grep -c .)" -eq 3 ] &&
        [ "$(printf '%s\n' "$servers" | sed -n 's/^server\.\([0-9]*\)=.*/\1/p' | sort -u | tr -d '\n')" = 123 ]; then
        ok
      else
        fail "$svc: ZOO_SERVERS must list server.1, server.2 and server.3 once each: $(printf '%s\n' "$servers" | words)"
      fi
      for entry in $servers; do
        num=$(printf '%s\n' "$entry" | sed -n 's/^server\.\([0-9]*\)=.*/\1/p')
        host=$(printf '%s\n' "$entry" | sed -n 's/^server\.[0-9]*=\([^:]*\):.*/\1/p')
        rest=${entry#*=}
        rest=${rest#*:}
        if ! printf '%s\n' "$rest" | grep -Eqx '2888:3888(:participant)?;([^;:]*:)?2181'; then
          fail "$entry: want quorum:election ports 2888:3888 and client port 2181 (…:2888:3888;2181)"
          continue
        fi
        case "$num" in
          1 | 2 | 3)
            owner=${svc_of_id[$num]:-}
            if [ -n "$owner" ] && [ "$host" = "$owner" ]; then
              ok
            else
              fail "$entry: server.$num must name the service with ZOO_MY_ID $num (${owner:-none})"
            fi
            ;;
          *) fail "$entry: server id must be 1..3" ;;
        esac
      done
    elif [ "$servers" = "$want_servers" ]; then
      ok
    else
      fail "$svc: ZOO_SERVERS differs from $first's: $(printf '%s\n' "$servers" | words)"
    fi
  done

  # tests authenticate as the loopback ensemble's super user to clean up
  want_super=$(sed -n 's/^SUPER_DIGEST=//p' "$root/scripts/zk-ensemble.sh")
  for svc in $services; do
    case " $(env_of "$svc" JVMFLAGS) " in
      *" -Dzookeeper.DigestAuthenticationProvider.superDigest=$want_super "*) ok ;;
      *) fail "$svc: JVMFLAGS must set the superDigest of scripts/zk-ensemble.sh ($want_super)" ;;
    esac
  done

  # the connect string documented at the top must match the published ports
  doc=$(sed -n 's/^#.*[Cc]onnect string: *//p' "$f" | head -n 1)
  want=$(printf '%s\n' "${!port_owner[@]}" | sort -n | sed 's/^/127.0.0.1:/' | paste -sd, -)
  if [ -n "$doc" ] && [ "$doc" = "$want" ]; then
    ok
  else
    fail "header comment 'connect string: ${doc:-<missing>}' does not match published ports ($want)"
  fi
}

# self_test_one NAME FILTER...: a copy of $file passed through FILTER must
# be rejected by a normal run.
self_test_one() {
  local name=$1 copy out
  shift
  copy=$tmp/$name.yml
  "$@" <"$file" >"$copy"
  if cmp -s "$file" "$copy"; then
    fail "self-test '$name': mutation did not change $file; update the self-test"
    return
  fi
  if out=$(COMPOSE_FILE=$copy bash "$here/$prog" --no-self-test 2>&1); then
    fail "self-test '$name': mutated copy was accepted"
  else
    ok
    echo "self-test: $name -> rejected ($(printf '%s\n' "$out" | grep -m1 '^FAIL' || true))"
  fi
}

self_test() {
  local out
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/compose-check.XXXXXX")
  # shellcheck disable=SC2064 # $tmp is fixed now
  trap "rm -rf '$tmp'" EXIT
  # the pristine copy must pass, or the rejections below prove nothing
  cp "$file" "$tmp/orig.yml"
  if out=$(COMPOSE_FILE=$tmp/orig.yml bash "$here/$prog" --no-self-test 2>&1); then
    ok
  else
    fail "self-test: unmodified copy is rejected:"
    printf '%s\n' "$out"
  fi
  self_test_one duplicate-id sed 's/ZOO_MY_ID: *3/ZOO_MY_ID: 2/'
  # only the second service's list changes
  self_test_one mismatched-servers awk '/ZOO_SERVERS/ && ++n == 2 { sub(/server\.3=zoo3:2888/, "server.3=zoo3:2889") } { print }'
  # all lists still agree, but server.1 names a host that is not id 1
  self_test_one wrong-host sed 's/server\.1=zoo1/server.1=zoo2/g'
  self_test_one wrong-super-user sed '0,/superDigest=super:/s/superDigest=super:/superDigest=root:/'
  self_test_one public-port sed 's/"127\.0\.0\.1:2183:2181"/"2183:2181"/'
  self_test_one wrong-image sed '0,/zookeeper:3\.8/s/zookeeper:3\.8/zookeeper:3.7/'
  # shellcheck disable=SC2016 # $a is sed's append command
  self_test_one fourth-service sed '$a\
  zoo4:\
    image: zookeeper:3.8'
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
