#!/usr/bin/env bash
# Builds the e2e suite's Flux images and loads them into a kind cluster:
#   couchbench/flux-source-controller:TAG, couchbench/flux-kustomize-controller:TAG
# from the Go modules hack/flux/go.mod pins (fluxcd/source-controller and
# fluxcd/kustomize-controller v1.9.6), compiled on the host as hack/images.sh compiles the
# project's binaries, each put on the distroless base hack/base-images.sh provides. And the
# git server the suite's Flux reads (couchbench/e2e-git:bookworm: Debian's git and busybox, git
# http-backend as busybox httpd's CGI).
#
# Usage: hack/flux/images.sh TAG KIND_CLUSTER   (KIND: the kind binary, default kind on PATH;
#        KIND_NODES: the nodes to load into, comma-separated, default every node)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

tag=${1:?usage: hack/flux/images.sh TAG KIND_CLUSTER}
cluster=${2:?usage: hack/flux/images.sh TAG KIND_CLUSTER}
kind=${KIND:-kind}

hack/base-images.sh gcr.io/distroless/static-debian12:nonroot debian:bookworm-slim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Built once per set of inputs, as the node image's and envtest's commands are
# (hack/lib/gobuild.sh: bin/go-binaries). go build downloads the modules the two controllers
# need, not every module go.mod lists (some of their tests' are not served by the module proxy
# this project reaches).
# shellcheck source=hack/lib/gobuild.sh
source hack/lib/gobuild.sh
go_binaries hack/flux "-s -w" github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller
images=()
for controller in source-controller kustomize-controller; do
  image=couchbench/flux-$controller:$tag
  mkdir "$work/$controller-image"
  cp "$gobin/$controller" "$work/$controller-image/manager"
  hack/heartbeat.sh flux-images "docker build $image" \
    hack/docker-build.sh -q --label couchbench.build=image -t "$image" -f hack/flux/Dockerfile "$work/$controller-image" >/dev/null
  images+=("$image")
done
git=couchbench/e2e-git:bookworm
docker image inspect "$git" >/dev/null 2>&1 || hack/docker-build.sh -q -t "$git" - >/dev/null <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends git busybox && rm -rf /var/lib/apt/lists/*
DOCKERFILE
docker image prune -f --filter label=couchbench.build >/dev/null
hack/heartbeat.sh flux-images "loading into kind cluster $cluster" "$kind" load docker-image --name "$cluster" ${KIND_NODES:+--nodes "$KIND_NODES"} "${images[@]}" "$git" >&2
