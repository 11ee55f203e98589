#!/usr/bin/env bash
# Runs a command and, every 30 s until it ends, says that it still runs: builds of
# kube-apiserver, k6 and the linters, go vet on a cold cache and go test (which prints a
# package only once it has finished) are silent for minutes otherwise, and a silent step
# looks hung to a person and to CI alike. Then it says how long the command took, which is
# also how the phases of a cold run are timed. Its lines go to stderr, because callers
# capture stdout (the Makefile's $(shell hack/envtest.sh ...)). The exit status is the
# command's.
#
# Usage: hack/heartbeat.sh WHAT DOING COMMAND [ARG...]
#   prints "WHAT: still DOING (30s)", "(60s)", ... and at the end "WHAT: DOING took 95s"
#   (or "WHAT: DOING failed after 95s (exit status 2)")
set -euo pipefail

(($# > 2)) || {
  echo "usage: hack/heartbeat.sh WHAT DOING COMMAND [ARG...]" >&2
  exit 2
}
what=$1 doing=$2
shift 2
t0=$(date +%s)

beat() {
  local sleeper=""
  # The sleep is killed with the loop, so that it cannot hold the caller's pipe open. INT
  # too: this subshell dies of a Ctrl-C, which would leave the sleep behind.
  trap 'kill "$sleeper" 2>/dev/null; exit 0' INT TERM
  while :; do
    sleep 30 &
    sleeper=$!
    wait "$sleeper"
    echo "$what: still $doing ($(($(date +%s) - t0))s)" >&2
  done
}
beat &
beater=$!
trap 'kill "$beater" 2>/dev/null || true' EXIT

rc=0
"$@" || rc=$?
if ((rc == 0)); then
  echo "$what: $doing took $(($(date +%s) - t0))s" >&2
else
  echo "$what: $doing failed after $(($(date +%s) - t0))s (exit status $rc)" >&2
fi
exit "$rc"
