#!/usr/bin/env bash
# test.sh: install, build and run every test on a fresh Debian machine (as
# root). In each build, the integration tests that leave the nodes alone
# (make check-ensemble) share one real 3-node ZooKeeper ensemble on
# loopback (scripts/with-ensemble.sh); the rest (make check-apart) run
# each .itest on an ensemble of its own.
#
#   sudo bash scripts/test.sh          # -Werror build + ASan/UBSan build
#   ZKL_TSAN=1 ... also a ThreadSanitizer build
#   ZKL_DISTCHECK=1 ... also `make distcheck` (checking the tests that need no ensemble)
#   ZKL_DEBIAN=1 ... also build, lint, install, use and purge the Debian
#                    packages (tests/debian.sh; installs on this machine)
#   ZKL_CONTAINERS=1 ... the normal build's integration tests that leave the
#                    nodes alone run against the containerized ensemble of
#                    docker-compose.yml instead (tests/container.sh: podman,
#                    images made from Debian's packages, checked and removed)
#   ZKL_FAST=1 ... only the -Werror build, no fault injection
#   ZKL_VALGRIND=1 ... also the C tests under valgrind memcheck
#   ZKL_FUZZ=SECONDS ... also every libFuzzer target for SECONDS each
#   ZKL_CHAOS=SECONDS ... the fault-injection rounds (scripts/chaos.sh,
#                         seed 1, on the ASan build: mutexes, read-write
#                         locks, semaphores, asynchronous mutexes, nested
#                         lockers beside multi-locks, and all of them with
#                         zklock(1) users (mixed), a sixth of SECONDS each,
#                         then the checker's self-test for each and a
#                         30 s round of the hostile co-tenant against
#                         ZKL_ACL_CREATOR; default 120; 0 = skip them)
# In CI (CI=true) a skipped test counts as a failure: an integration test
# that could not reach its ensemble proved nothing.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
cd "$top"
bash scripts/install-deps.sh --test

passed=0 failed=0 skipped=0
# run_suite NAME CONFIGURE-ARGS...: build in build/NAME and run make check.
# The integration tests that leave the nodes alone (make check-ensemble)
# share one loopback ensemble; then the rest (make check-apart) run, whose
# .itest files start ensembles of their own. One after the other: an
# instrumented client beside other tests' JVMs starting and stopping got
# slow enough once to take another path than the one a test counts.
run_suite() {
  local name=$1 b=build/$1
  shift
  echo "== $name: configure $* (at ${SECONDS}s)"
  bash scripts/build.sh "$b" --enable-werror "$@"
  echo "== $name: make check-ensemble on one ensemble, then make check-apart"
  shared_ensemble "$b"
  if (cd "$b" && make check-apart >check.out 2>&1); then :; fi
  count_check "$name-shared" "$b/ensemble.out"
  count_check "$name" "$b/check.out"
}
# shared_ensemble BUILD: make check-ensemble on a loopback ensemble of its own
shared_ensemble() {
  (cd "$1" && bash "$top/scripts/with-ensemble.sh" \
    make check-ensemble TEST_SUITE_LOG=ensemble-suite.log >ensemble.out 2>&1) || true
}
# count_check NAME LOG: add the results of the make check in LOG; show the
# logs of the tests that failed.
count_check() {
  local name=$1 log=$2 p f s
  grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):' "$log" || true
  p=$(sed -n 's/^# PASS: *//p' "$log" | tail -1)
  f=$(sed -n 's/^# \(FAIL\|ERROR\|XPASS\): *//p' "$log" | awk '{s += $1} END {print s + 0}')
  s=$(sed -n 's/^# SKIP: *//p' "$log" | tail -1)
  if [ -z "$p" ]; then
    echo "!! $name: make check did not run the suite; its output:"
    tail -40 "$log"
    f=$((f + 1))
  fi
  if [ "$f" -gt 0 ]; then
    for t in "${log%/*}"/tests/*.log; do
      grep -q '^:test-result: \(FAIL\|ERROR\)' "${t%.log}.trs" 2>/dev/null || continue
      echo "---- $t"
      tail -60 "$t"
    done
  fi
  passed=$((passed + ${p:-0})) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
}

# The normal suite in up to three parts side by side: the spin model
# (nothing but CPU, so niced: it takes what the others leave idle), the
# tests that need no ensemble or start their own, and with ZKL_CONTAINERS=1
# tests/container.sh. The integration tests wait on the ensemble far more
# than they compute: the model overlaps them for about 5 minutes off CI.
run_normal() {
  local b=build/normal fg model="" ctr_pid="" model_pid="" prep_pid="" shared_pid=""
  if [ -n "${ZKL_CONTAINERS:-}" ]; then
    # packages and the image (2-3 minutes, mostly downloads) while we compile
    echo "== normal: building the container image, beside the build (at ${SECONDS}s)"
    mkdir -p build
    bash scripts/container-ensemble.sh build >build/container-build.out 2>&1 &
    prep_pid=$!
  fi
  echo "== normal: configure --enable-werror (at ${SECONDS}s)"
  bash scripts/build.sh $b --enable-werror
  # every check program, before parts that share the tree run at once
  (cd $b && make -s check TESTS= >/dev/null 2>&1)
  fg=$(make -s -C $b list-apart)
  if [ -n "${ZKL_CONTAINERS:-}" ]; then
    # a failed build shows here; container.sh's up tries again and fails
    wait "$prep_pid" || tail -20 build/container-build.out || true
    echo "== normal: the containerized ensemble and the tests that leave its nodes alone, beside the rest (at ${SECONDS}s)"
    bash tests/container.sh $b >build/container.out 2>&1 &
    ctr_pid=$!
  else
    echo "== normal: make check-ensemble on one ensemble, beside the rest"
    shared_ensemble $b &
    shared_pid=$!
  fi
  case " $fg " in *" tests/model.sh "*)
    model=tests/model.sh
    fg=$(echo " $fg " | sed 's| tests/model.sh | |')
    (cd $b && nice -n 10 make check TESTS=$model TEST_SUITE_LOG=model-suite.log >model.out 2>&1) &
    model_pid=$!
    ;;
  esac
  echo "== normal: make check TESTS=\"$fg\"${model:+; $model beside it, niced}"
  if (cd $b && make check TESTS="$fg" >check.out 2>&1); then :; fi
  count_check normal $b/check.out
  if [ -n "$model_pid" ]; then
    wait "$model_pid" || true
    echo "== normal: the model done (at ${SECONDS}s)"
    count_check normal-model $b/model.out
  fi
  if [ -n "$shared_pid" ]; then
    wait "$shared_pid" || true
    count_check normal-shared $b/ensemble.out
  fi
  if [ -n "$ctr_pid" ]; then
    wait "$ctr_pid" || true
    echo "== normal: the containerized ensemble done (at ${SECONDS}s)"
    grep -E '^(PASS|FAIL|SKIP|ERROR|container:)' build/container.out || tail -40 build/container.out
    count_line container build/container.out
  fi
}
# count_line LABEL LOG: add a script's "LABEL: N passed, N failed" line.
count_line() {
  local line p f
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$2" | tail -1)
  p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
  f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
  [ -n "$p" ] || { p=0; f=1; echo "!! $1 printed no summary"; }
  passed=$((passed + p)) failed=$((failed + f))
}
run_normal
# test_async's 10,000 pending acquires: the plain build reports the figures;
# 2,000 take the sanitizers through the same paths in a fifth of the time
if [ -z "${ZKL_FAST:-}" ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ZKL_TEST_ASYNC_PER_NAME=20 run_suite asan --enable-asan
fi
if [ -n "${ZKL_TSAN:-}" ]; then
  TSAN_OPTIONS=halt_on_error=1 ZKL_TEST_ASYNC_PER_NAME=20 run_suite tsan --enable-tsan
fi
if [ -n "${ZKL_VALGRIND:-}" ]; then
  echo "== valgrind memcheck (at ${SECONDS}s)"
  bash scripts/valgrind.sh build/normal >build/valgrind.out 2>&1 || true
  grep -E '^(PASS|FAIL|valgrind:)' build/valgrind.out || tail -40 build/valgrind.out
  count_line valgrind build/valgrind.out
fi
[ -z "${ZKL_FAST:-}" ] || : "${ZKL_CHAOS:=0}"
if [ "${ZKL_CHAOS:=120}" != 0 ]; then
  echo "== fault injection: ${ZKL_CHAOS}s, seed 1 (at ${SECONDS}s)"
  cb=build/asan
  [ -d "$cb" ] || cb=build/normal
  netns=()
  # in CI a missing partition fault must fail the run, not shrink it
  [ "${CI:-}" != true ] || netns=(--netns yes)
  # run: every fault, the hostile co-tenant included, one round each of
  # mutexes, read-write locks, semaphores, asynchronous mutex clients,
  # nested lockers beside multi-locks, and everyone at once (mixed: the
  # library's users and zklock(1)'s on the same locks) sharing the time;
  # self-test:
  # the checker must catch clients that skip the lock, for each of them;
  # acl: the co-tenant against clients with credentials and
  # ZKL_ACL_CREATOR, for 30 s
  for mode in run self-test acl; do
    extra=(--rounds 6 --recipe mutex,rw,sem,async,multi,mixed --duration $(((ZKL_CHAOS + 5) / 6)))
    [ "$mode" != self-test ] || extra=(--unlocked --duration 4 --faults cut --rounds 3 --recipe mutex,rw,sem)
    [ "$mode" != acl ] || extra=(--acl creator --faults hostile --duration 30)
    if ASAN_OPTIONS=detect_leaks=1 bash scripts/chaos.sh --build "$cb" --seed 1 \
      "${netns[@]}" "${extra[@]}" >"build/chaos-$mode.out" 2>&1; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      tail -40 "build/chaos-$mode.out"
    fi
    grep -E '^chaos: (seed|checker)' "build/chaos-$mode.out" || true
  done
fi
# The fuzzers and distcheck need no ensemble and one core each at most
# (distcheck's make runs one job), so on a 2-core machine they share the
# time: about a minute off CI.
fuzz_pid=
if [ -n "${ZKL_FUZZ:-}" ]; then
  echo "== fuzzing, ${ZKL_FUZZ}s per target, beside what follows (at ${SECONDS}s)"
  bash scripts/fuzz.sh "$ZKL_FUZZ" >build/fuzz.out 2>&1 &
  fuzz_pid=$!
fi
# The package test too: one job, like distcheck, and no test before it
# needs the machine quiet.
deb_pid=
if [ -n "${ZKL_DEBIAN:-}" ]; then
  echo "== Debian packages: build, lintian, install, use, purge; beside what follows (at ${SECONDS}s)"
  DEB_BUILD_OPTIONS=parallel=1 bash tests/debian.sh >build/debian.out 2>&1 &
  deb_pid=$!
fi
if [ -n "${ZKL_DISTCHECK:-}" ]; then
  echo "== make distcheck (at ${SECONDS}s)"
  # The tarball builds, installs and passes the tests that need no
  # ensemble and no model checker: the suites above ran every test on
  # this very tree.
  if (cd build/normal && make distcheck TESTS="tests/unit tests/symbols.sh tests/version.sh tests/docs.sh" \
    >distcheck.out 2>&1); then
    passed=$((passed + 1))
    grep -E 'archives ready for distribution' -A2 build/normal/distcheck.out || true
  else
    tail -40 build/normal/distcheck.out
    failed=$((failed + 1))
  fi
fi
if [ -n "$deb_pid" ]; then
  wait "$deb_pid" || true
  echo "== Debian packages done (at ${SECONDS}s)"
  grep -E '^(PASS|FAIL|debian:)' build/debian.out || tail -40 build/debian.out
  count_line debian build/debian.out
fi
if [ -n "$fuzz_pid" ]; then
  wait "$fuzz_pid" || true
  echo "== fuzzing done (at ${SECONDS}s)"
  grep -E '^(PASS|FAIL|fuzz:)' build/fuzz.out || tail -40 build/fuzz.out
  count_line fuzz build/fuzz.out
fi
if [ "${CI:-}" = true ] && [ "$skipped" -gt 0 ]; then
  echo "!! $skipped test(s) skipped: in CI that is a failure"
  failed=$((failed + skipped))
fi
echo "tests: $passed passed, $failed failed (${SECONDS}s)"
[ "$failed" -eq 0 ]
