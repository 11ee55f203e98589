#!/usr/bin/env bash
# make test-e2e: runs test/e2e against real Apache CouchDB on a real multi-node kind cluster
# "couchbench-e2e" (hack/kind/e2e.yaml: a control plane and four workers), made from the node
# image hack/kind-node-image.sh provides, with every image the suite runs loaded into the nodes
# by hack/images.sh (nothing is pulled: the suite runs the same on a machine without a
# registry). No Docker engine is a failure, never a skip. The cluster is kept for the next
# run (a kept cluster is made again when its node count or node image differ);
# `make test-e2e-clean` deletes it.
#
# Usage: hack/e2e.sh           makes or reuses the cluster, then runs the suite
#                              (E2E_RUN=REGEXP runs only the matching tests: go test -run)
#        hack/e2e.sh cluster   only makes or reuses the cluster, with every image loaded
#                              (make e2e-cluster), and says how to reach it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. hack/lib/kind.sh

tag=${E2E_IMAGE_TAG:-e2e}
kind=${KIND:-kind}
name=couchbench-e2e
config=hack/kind/e2e.yaml

docker info >/dev/null 2>&1 || {
  echo "test-e2e: no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); the e2e suite runs on kind. Start Docker, or on this project's machines: export DOCKER_HOST=\$(../shared/docker/up.sh)" >&2
  exit 1
}
node=$(hack/kind-node-image.sh)
want=$(grep -c '^  - role:' "$config")
if "$kind" get clusters 2>/dev/null | grep -qx "$name" &&
  { [ "$("$kind" get nodes --name "$name" | wc -l)" != "$want" ] ||
    [ "$(docker inspect -f '{{.Config.Image}}' "$name-control-plane" 2>/dev/null)" != "$node" ]; }; then
  echo "test-e2e: the kept cluster $name is not $want nodes of $node ($config): making it again" >&2
  "$kind" delete cluster --name "$name"
fi
"$kind" get clusters 2>/dev/null | grep -qx "$name" ||
  hack/heartbeat.sh test-e2e "creating kind cluster $name" \
    "$kind" create cluster --name "$name" --image "$node" --config "$config" --wait 300s
mkdir -p bin
"$kind" get kubeconfig --name "$name" >bin/kind-e2e.kubeconfig
export KUBECONFIG=$PWD/bin/kind-e2e.kubeconfig
# What the suite runs goes to the workers: the control plane keeps its NoSchedule taint, and
# only Prometheus and Alertmanager tolerate it (test/e2e/alerts_test.go); an image loaded into
# a node that never runs it is minutes of copying for nothing.
workers=$("$kind" get nodes --name "$name" | grep -v -- '-control-plane$' | paste -sd, -)
export KIND_NODES=$workers
KIND=$kind hack/images.sh kind "$tag" "$name"
KIND=$kind hack/flux/images.sh "$tag" "$name"

# The suite's HTTP server (a chart repository; a volume's preparation) runs busybox, as
# Debian packages it.
httpd=couchbench/e2e-httpd:bookworm
docker image inspect "$httpd" >/dev/null 2>&1 || hack/docker-build.sh -q -t "$httpd" - >/dev/null <<'EOF'
FROM debian:bookworm-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends busybox && rm -rf /var/lib/apt/lists/*
EOF
# The Prometheus and Alertmanager that the alert tests read (test/e2e/alerts_test.go): Debian's
# packages, as bookworm's mirror has them (promtool, for make test, is pinned in the Makefile).
monitoring=couchbench/e2e-prometheus:bookworm
docker image inspect "$monitoring" >/dev/null 2>&1 || hack/docker-build.sh -q -t "$monitoring" - >/dev/null <<'EOF'
FROM debian:bookworm-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends prometheus prometheus-alertmanager && rm -rf /var/lib/apt/lists/*
EOF
"$kind" load docker-image --name "$name" --nodes "$workers" "$httpd" >&2
"$kind" load docker-image --name "$name" --nodes "$name-control-plane" "$monitoring" >&2
export E2E_HTTPD_IMAGE=$httpd E2E_MONITORING_IMAGE=$monitoring
kind_api_ready "$name"
if [ "${1:-}" = cluster ]; then
  echo "e2e-cluster: $name is ready, every image the suite runs loaded; export KUBECONFIG=$KUBECONFIG" >&2
  exit 0
fi

# -parallel: the tests that call t.Parallel, most of whose time is waiting for pods, Jobs and
# cron minutes, run four at a time (go test's default is GOMAXPROCS, 2 here).
E2E_IMAGE_TAG=$tag go test -tags e2e ./test/e2e/ -count=1 -v -timeout 75m -parallel "${E2E_PARALLEL:-4}" ${E2E_RUN:+-run "$E2E_RUN"}
