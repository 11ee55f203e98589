#!/usr/bin/env bash
# make demo: a kind cluster "couchbench" with the operator (installed with its Helm chart)
# and config/samples/bench.yaml, then the results table from its ConfigMap.
# Needs Docker, kind and helm (the Makefile builds pinned kind and helm into bin/); no
# kubectl: hack/demo applies the sample and prints the results.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

kind=${KIND:-kind}
helm=${HELM:-helm}
name=couchbench
tag=dev

docker info >/dev/null 2>&1 || { echo "demo: needs a running Docker engine (for kind)" >&2; exit 1; }
"$kind" get clusters 2>/dev/null | grep -qx "$name" || "$kind" create cluster --name "$name" --wait 180s
"$kind" export kubeconfig --name "$name"

echo "demo: building and loading images" >&2
KIND=$kind hack/images.sh kind "$tag" "$name"

echo "demo: installing the operator" >&2
"$helm" upgrade --install couchbench charts/couchbench-operator --namespace couchbench-system --create-namespace \
  --set image.repository=couchbench/manager --set image.tag="$tag" --set k6.image=couchbench/k6:"$tag" --wait --timeout 5m

echo "demo: running config/samples/bench.yaml (the operator's built-in chart and the k6 image loaded above; the node pulls couchdb:3.4.3 from Docker Hub)" >&2
go run ./hack/demo config/samples/bench.yaml
