#!/usr/bin/env bash
# make demo: a kind cluster "couchbench" with the operator (installed with its Helm chart)
# and config/samples/bench.yaml, then the results table from its ConfigMap.
# Needs Docker, kind and helm (the Makefile builds pinned kind and helm into bin/); no
# kubectl: hack/demo applies the sample and prints the results. Nothing is pulled that a
# machine without a registry cannot have: the node image and the base images are pulled where
# a registry answers and built here where none does (hack/kind-node-image.sh,
# hack/base-images.sh), and every image the benchmark runs is loaded into the node.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. hack/lib/kind.sh

kind=${KIND:-kind}
helm=${HELM:-helm}
name=couchbench
tag=dev
start=$SECONDS

# step WHAT HINT COMMAND...: runs one step of the demo; a failure names the step and what to do.
step() {
  local what=$1 hint=$2 t=$SECONDS
  shift 2
  echo "demo: $what" >&2
  if ! "$@"; then
    echo "demo: FAILED at \"$what\" after $((SECONDS - t))s. $hint" >&2
    exit 1
  fi
  echo "demo: $what took $((SECONDS - t))s" >&2
}

docker info >/dev/null 2>&1 || {
  echo "demo: FAILED at \"Docker engine\": no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}). Start Docker, or on this project's machines: export DOCKER_HOST=\$(../shared/docker/up.sh)" >&2
  exit 1
}

node_image() { node=$(hack/kind-node-image.sh); }
step "kind node image" "Its log is above; KIND_NODE_IMAGE=NAME uses an image you have instead." node_image

# A kept cluster of another node image is made again.
create() {
  if "$kind" get clusters 2>/dev/null | grep -qx "$name" &&
    [ "$(docker inspect -f '{{.Config.Image}}' "$name-control-plane" 2>/dev/null)" != "$node" ]; then
    "$kind" delete cluster --name "$name" || return
  fi
  if ! "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
    "$kind" create cluster --name "$name" --image "$node" --config hack/kind/demo.yaml --wait 180s || return
  fi
  "$kind" export kubeconfig --name "$name"
}
step "kind cluster $name ($node)" "kind's output is above; \`make demo-clean\` deletes a half-made cluster before you try again." create

step "operator and CouchDB images" "docker build's output is above; \`docker images\` shows what is present." \
  env KIND="$kind" hack/images.sh kind "$tag" "$name"

step "API server ready" "What it said is above; \`make demo-clean\` and running again makes the cluster afresh." \
  kind_api_ready "$name"

step "operator chart" "\`kubectl -n couchbench-system get pods\` and \`kubectl -n couchbench-system describe pods\` say why the manager is not ready." \
  "$helm" upgrade --install couchbench charts/couchbench-operator --namespace couchbench-system --create-namespace --take-ownership \
  --set image.repository=couchbench/manager --set image.tag="$tag" --set k6.image=couchbench/k6:"$tag" --wait --timeout 5m

step "benchmark config/samples/bench.yaml" "\`kubectl describe couchbenchmark quickstart\` shows its conditions and events." \
  go run ./hack/demo config/samples/bench.yaml
echo "demo: done in $((SECONDS - start))s" >&2
