#!/usr/bin/env bash
# Runs a command (`make test`: go test ./...; `make bench`: the seeding benchmarks) with real
# Apache CouchDB. It starts instances of the project's CouchDB kit (../shared/apache-couchdb:
# a relocatable Apache CouchDB 3.4.3 and its couchdb.sh) on loopback, tells the command where
# they are through the environment (internal/couchdbtest reads it), runs the command and
# stops the instances again, also when the command fails or the run is interrupted.
#
#   single node     http://127.0.0.1:15984           bin/couchdb/single   Erlang name cbsingle1
#   3-node cluster  http://127.0.0.1:25984..25986    bin/couchdb/cluster  Erlang names cbcluster1..3
#   fault cluster   http://127.0.0.1:22984..22986    bin/couchdb/own/cbfault-22984  Erlang names cbfault1..3
#                   (COUCHDB_FAULT_PORT moves it). internal/runner's fault tests stop and
#                   restart its nodes; they start it themselves when it is not running
#                   (couchdbtest.Own) and stop it at their end. Any other instance under
#                   bin/couchdb/own is stopped here too.
#
# Every port (HTTP and Erlang distribution, P+1000) lies below Linux's ephemeral range
# (32768-60999), so no outgoing connection of another program can hold a port a stopped node
# must bind again. The fault cluster starts first, so that its ports are bound early.
#
# Data stays in bin/couchdb between runs (a later start is faster); every test makes its
# own databases and deletes them. `rm -rf bin/couchdb` gives clean instances.
#
# Environment: COUCHDB_KIT (the kit's directory, required), COUCHDB_TEST_ADMIN (USER:PASS of
# the instances, default admin:couchbench-test; a directory keeps the admin it was created
# with, so after changing it remove bin/couchdb). COUCHDB_SINGLE_PORT (15984),
# COUCHDB_CLUSTER_PORT (25984) and COUCHDB_NAME_PREFIX (cb) move the shared instances, so that
# two checkouts can run their tests side by side on one host (Erlang node names are unique per
# host). Everything else (KUBEBUILDER_ASSETS, K6, ...) passes through to the command.
#
# Usage: hack/with-couchdb.sh [--no-cluster] COMMAND [ARG...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

cluster=1
if [[ ${1:-} == --no-cluster ]]; then
  cluster=0
  shift
fi
(($# > 0)) || {
  echo "usage: hack/with-couchdb.sh [--no-cluster] COMMAND [ARG...]" >&2
  exit 2
}
kit=${COUCHDB_KIT:?set COUCHDB_KIT to the Apache CouchDB kit directory (../shared/apache-couchdb)}
admin=${COUCHDB_TEST_ADMIN:-admin:couchbench-test}
fault_port=${COUCHDB_FAULT_PORT:-22984}
single_port=${COUCHDB_SINGLE_PORT:-15984}
cluster_port=${COUCHDB_CLUSTER_PORT:-25984}
prefix=${COUCHDB_NAME_PREFIX:-cb}
state=$root/bin/couchdb

t0=$(date +%s)
log() { echo "couchdb: $*"; }
since() { echo "$(($(date +%s) - $1))s"; }

[[ -x $kit/couchdb.sh ]] || {
  echo "couchdb: error: $kit/couchdb.sh not found: COUCHDB_KIT must name the Apache CouchDB kit (../shared/apache-couchdb)" >&2
  exit 1
}
kit=$(cd "$kit" && pwd)
couchdb() { "$kit/couchdb.sh" "$@"; }

# shellcheck disable=SC2317 # run by the EXIT trap
stop_all() {
  local rc=$? t d dirs=()
  t=$(date +%s)
  for d in "$state/single" "$state/cluster" "$state"/own/*; do
    [[ -f $d/kit.conf ]] && dirs+=("$d")
  done
  if ((${#dirs[@]} > 0)); then
    log "stopping CouchDB (${dirs[*]#"$root"/})…"
    for d in "${dirs[@]}"; do
      couchdb stop --dir "$d" 2>&1 | sed 's/^/  /' || true
    done
    log "stopped in $(since "$t")"
  fi
  log "done in $(since "$t0") in all, exit code $rc"
  exit "$rc"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start() { # what dir nodes port name
  local what=$1 dir=$2 nodes=$3 port=$4 name=$5 t
  t=$(date +%s)
  log "starting Apache CouchDB 3.4.3, $what on 127.0.0.1:$port (${dir#"$root"/}; the first start unpacks the release, about a minute)…"
  couchdb start --dir "$dir" --nodes "$nodes" --port "$port" --name "$name" --admin "$admin" 2>&1 | sed "s/^/  [$name] /"
  log "$what up on 127.0.0.1:$port in $(since "$t")"
}

mkdir -p "$state/own"
# The single node starts first, alone: on a fresh machine its start installs the kit's Debian
# packages, and starts side by side would race for apt's lock (seen: the cluster's start
# failed with "Could not get lock /var/lib/dpkg/lock-frontend"). The clusters then start side
# by side, each printing its own progress.
t=$(date +%s)
start "1 node" "$state/single" 1 "$single_port" "${prefix}single" || {
  echo "couchdb: error: CouchDB did not start (output above)" >&2
  exit 1
}
pids=()
fault_pid=""
if ((cluster)); then
  start "3 nodes" "$state/cluster" 3 "$cluster_port" "${prefix}cluster" &
  pids+=($!)
  start "3 nodes for the fault tests" "$state/own/cbfault-$fault_port" 3 "$fault_port" cbfault &
  fault_pid=$!
fi
failed=0
for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" || failed=1; done
if ((failed)); then
  echo "couchdb: error: CouchDB did not start (output above)" >&2
  exit 1
fi
# The fault tests start their cluster themselves when it is not up, and fail saying why
# when it cannot start: the other tests need not wait for it.
if [[ -n $fault_pid ]] && ! wait "$fault_pid"; then
  log "warning: the fault tests' cluster did not start (output above); they will try again and fail if it cannot start"
fi
log "CouchDB ready in $(since "$t")"
eval "$(couchdb env --dir "$state/single")"
export COUCHBENCH_TEST_COUCHDB_URL=$COUCHDB_URL
export COUCHBENCH_TEST_COUCHDB_DIR=$state/single
export COUCHBENCH_TEST_COUCHDB_USER=$COUCHDB_USER
export COUCHBENCH_TEST_COUCHDB_PASSWORD=$COUCHDB_PASSWORD
if ((cluster)); then
  eval "$(couchdb env --dir "$state/cluster")"
  export COUCHBENCH_TEST_COUCHDB_CLUSTER_URLS=$COUCHDB_URLS
  export COUCHBENCH_TEST_COUCHDB_CLUSTER_DIR=$state/cluster
fi
export COUCHBENCH_TEST_COUCHDB_FAULT_PORT=$fault_port
export COUCHBENCH_TEST_COUCHDB_KIT=$kit
export COUCHBENCH_TEST_COUCHDB_OWN_DIR=$state/own
# The kit's own variable names are not passed on: nothing should reach a server by accident.
unset COUCHDB_URL COUCHDB_URLS COUCHDB_USER COUCHDB_PASSWORD COUCHDB_DIR COUCHDB_VERSION

# go test prints a package's result only once the package has finished, and the
# real-CouchDB suites take minutes: say that it is still going.
log "running: $*"
"$root/hack/heartbeat.sh" couchdb "running ${1##*/}" "$@"
