#!/usr/bin/env bash
# Builds the e2e suite's Flux images and loads them into a kind cluster:
#   couchbench/flux-source-controller:TAG, couchbench/flux-kustomize-controller:TAG
# from the Go modules hack/flux/go.mod pins (fluxcd/source-controller and
# fluxcd/kustomize-controller v1.9.6), as hack/images.sh builds the project's images: on the base
# images hack/base-images.sh provides, the build stage tagged as the next build's cache (an
# unchanged hack/flux builds nothing) and what a rebuild replaces pruned. The two images share
# that stage, which compiles both controllers. And the git server the suite's Flux reads
# (couchbench/e2e-git:bookworm: Debian's git and busybox, git http-backend as busybox httpd's
# CGI). Prints how long each build took.
#
# Usage: hack/flux/images.sh TAG KIND_CLUSTER   (KIND: the kind binary, default kind on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

tag=${1:?usage: hack/flux/images.sh TAG KIND_CLUSTER}
cluster=${2:?usage: hack/flux/images.sh TAG KIND_CLUSTER}
kind=${KIND:-kind}

hack/base-images.sh
images=()
for controller in source-controller kustomize-controller; do
  image=couchbench/flux-$controller:$tag
  start=$SECONDS
  hack/heartbeat.sh flux-images "docker build $image, stage build" \
    docker build -q --target build -t "couchbench/flux-build:$tag" -f hack/flux/Dockerfile hack/flux >/dev/null
  hack/heartbeat.sh flux-images "docker build $image" \
    docker build -q --label couchbench.build=image --build-arg "CONTROLLER=$controller" -t "$image" -f hack/flux/Dockerfile hack/flux >/dev/null
  echo "flux-images: built $image in $((SECONDS - start)) s" >&2
  images+=("$image")
done
git=couchbench/e2e-git:bookworm
docker image inspect "$git" >/dev/null 2>&1 || docker build -q -t "$git" - >/dev/null <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends git busybox && rm -rf /var/lib/apt/lists/*
DOCKERFILE
docker image prune -f --filter label=couchbench.build >/dev/null
hack/heartbeat.sh flux-images "loading into kind cluster $cluster" "$kind" load docker-image --name "$cluster" "${images[@]}" "$git" >&2
