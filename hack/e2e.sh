#!/usr/bin/env bash
# make test-e2e: runs test/e2e on a real cluster against real Apache CouchDB. With a Docker
# engine and kind, a kind cluster "couchbench-e2e" (the official couchdb images are pulled;
# the chart repository of the suite runs busybox); without Docker, the single-node cluster of
# ../shared/local-cluster (containerd + runc, every image built here and imported, never
# pulled). The cluster is left running (.ci/run brings the local one down). E2E_RUN=REGEXP
# runs only the matching tests (go test -run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tag=${E2E_IMAGE_TAG:-e2e}
kind=${KIND:-kind}

if docker info >/dev/null 2>&1; then
  name=couchbench-e2e
  "$kind" get clusters 2>/dev/null | grep -qx "$name" || "$kind" create cluster --name "$name" --wait 180s
  mkdir -p bin
  "$kind" get kubeconfig --name "$name" > bin/kind-e2e.kubeconfig
  export KUBECONFIG=$PWD/bin/kind-e2e.kubeconfig
  KIND=$kind hack/images.sh kind "$tag" "$name"
  export E2E_HTTPD_IMAGE=${E2E_HTTPD_IMAGE:-busybox:1.37.0}
else
  lc=${LOCAL_CLUSTER:-../shared/local-cluster}
  if [ ! -x "$lc/up.sh" ]; then
    echo "test-e2e: no Docker engine for kind and no local cluster at $lc" >&2
    exit 1
  fi
  echo "test-e2e: no Docker engine; using the local cluster ($lc)" >&2
  KUBECONFIG=$("$lc/up.sh")
  export KUBECONFIG
  LOCAL_CLUSTER=$lc hack/images.sh local "$tag"
fi

E2E_IMAGE_TAG=$tag go test -tags e2e ./test/e2e/ -count=1 -v -timeout 60m ${E2E_RUN:+-run "$E2E_RUN"}
