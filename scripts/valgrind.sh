#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# valgrind.sh BUILD_DIR: the unit test and the C integration tests under
# valgrind memcheck (no invalid access, no definite or indirect leak), on
# one ensemble (scripts/with-ensemble.sh starts it unless ZKL_TEST_SERVERS
# is set). Prints "valgrind: N passed, N failed".
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
b=$(CDPATH='' cd -- "$1" && pwd)
make -C "$b" -s tests/unit tests/test_mutex tests/test_rwlock tests/test_semaphore tests/test_dispatch tests/test_async tests/test_election tests/test_guard tests/test_revoke tests/test_multilock tests/test_hostile tests/test_faults >/dev/null
run() {
  local t pass=0 fail=0 log
  # 500 asynchronous acquisitions pending instead of 10,000: the same
  # paths, in a time valgrind can afford
  export ZKL_TEST_ASYNC_PER_NAME=5
  for t in tests/unit tests/test_mutex tests/test_rwlock tests/test_semaphore tests/test_dispatch tests/test_async tests/test_election tests/test_guard tests/test_revoke tests/test_multilock tests/test_hostile tests/test_faults; do
    log=$b/$t.valgrind.log
    if (cd "$b" && ./libtool --mode=execute valgrind -q --error-exitcode=99 \
          --leak-check=full --errors-for-leak-kinds=definite,indirect \
          --show-leak-kinds=definite,indirect "./$t") >"$log" 2>&1; then
      pass=$((pass + 1)); echo "PASS: valgrind $t"
    else
      fail=$((fail + 1)); echo "FAIL: valgrind $t"; tail -40 "$log"
    fi
  done
  echo "valgrind: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
export -f run
export b
exec bash "$top/scripts/with-ensemble.sh" bash -c run
