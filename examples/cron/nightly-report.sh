#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nightly-report.sh: the job of the crontab beside it, which runs it under
# zklock: on one machine at a time. Install it as
# /usr/local/bin/nightly-report.sh (mode 755).
set -eu
# Under zklock, ZKLOCK_TOKEN is set. Started by hand without it, the job
# would not be alone: refuse.
if [ -z "${ZKLOCK_TOKEN:-}" ]; then
  echo "nightly-report.sh: run it under the lock: zklock -n -E 0 nightly-report $0" >&2
  exit 64
fi
echo "$(date '+%F %T') nightly-report starts on $(hostname), token $ZKLOCK_TOKEN"
# The work. Whatever it writes should carry $ZKLOCK_TOKEN, for a store
# that refuses a token lower than the last it saw: a run that lost the
# lock midway (zklock then SIGTERMs it and exits 75) cannot overwrite a
# later run's results.
sleep "${NIGHTLY_REPORT_SECONDS:-60}" # stands for the real work
echo "$(date '+%F %T') nightly-report done"
