#!/usr/bin/env bash
# Builds the images a cluster needs to run couchbench and loads them into it:
#   couchbench/manager:TAG   the operator and the couchbench runner
#   couchbench/k6:TAG        k6 from its Go module, with a shell
# and the CouchDB images of the presets, under their own tags:
#   couchbench/couchdb-python:3.4.3, couchbench/couchdb-pypy:3.4.3   the Python presets
#   couchdb:3.4.3, couchdb:3.5.1   the official images (kind: pulled, else built from the kit)
#
# Usage: hack/images.sh kind|local TAG [KIND_CLUSTER]
# Both targets compile the Go binaries on the host (CGO off, -trimpath), where Go's build cache
# is the one `make test` fills: a new commit relinks, an unchanged module builds nothing.
#   kind   docker build (images/*/Dockerfile: the Go images from the binaries, the Python
#          presets on the base images hack/base-images.sh provides) and
#          `$KIND load docker-image` into every node, or the nodes KIND_NODES names
#          (comma-separated; KIND: the kind binary, default kind on PATH); the nodes pull
#          nothing
#   local  no Docker: the binaries are packed onto the Debian base of ../shared/local-cluster
#          with its image-from-dir.sh and imported into its containerd (nothing is pulled);
#          the CouchDB images are built from the kit's release tarballs by
#          hack/couchdb-images.sh (cached in bin/images) and imported
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=${1:?usage: hack/images.sh kind|local TAG [KIND_CLUSTER]}
tag=${2:?usage: hack/images.sh kind|local TAG [KIND_CLUSTER]}
case "$target" in
kind | local) ;;
*)
  echo "hack/images.sh: target must be kind or local, not $target" >&2
  exit 2
  ;;
esac

# The build's provenance, recorded in every result (internal/version).
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse HEAD 2>/dev/null || true)
ldflags="-s -w -X github.com/couchbench/couchbench/internal/version.Version=$version -X github.com/couchbench/couchbench/internal/version.Commit=$commit"

# The images' files, one directory each (the Docker build context, or image-from-dir's tree):
#   manager/   manager, couchbench, the built-in Apache CouchDB chart's licence and origin
#   k6/        usr/bin/k6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/manager/licenses/apache-couchdb-helm-chart" "$work/k6/usr/bin"
for cmd in manager couchbench; do
  hack/heartbeat.sh images "go build $cmd" \
    env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/manager/$cmd" "./cmd/$cmd"
done
cp internal/helmrelease/builtin/LICENSE internal/helmrelease/builtin/README.md "$work/manager/licenses/apache-couchdb-helm-chart/"
cp "$(hack/k6.sh bin)" "$work/k6/usr/bin/k6"

case "$target" in
kind)
  kind=${KIND:-kind}
  cluster=${3:-couchbench}
  # The base images the Dockerfiles name: pulled, or built here where no registry answers.
  hack/base-images.sh
  # Docker's classic builder keeps each build stage as an untagged image, the cache of the
  # next build, and every rebuild leaves the last one (and the image it retags) dangling:
  # gigabytes per commit, enough to fill a disk over a day's CI runs. So each stage is tagged
  # (<image>-<stage>:<tag>) and, once all are built, the dangling images these builds made
  # (label couchbench.build, set in the stages and on the images) are pruned. What a build
  # under another TAG made stays tagged: `docker rmi` it when that tag is done with.
  # images/dockerfiles_test.go holds the Dockerfiles to the stage form the sed below reads.
  build() { # image dockerfile context
    local image=$1 dockerfile=$2 context=$3 stage
    for stage in $(sed -n 's/^FROM .* AS \([a-z0-9_-]*\)$/\1/p' "$dockerfile"); do
      hack/heartbeat.sh images "docker build $image, stage $stage" \
        hack/docker-build.sh -q --target "$stage" -t "${image%:*}-$stage:${image##*:}" -f "$dockerfile" "$context" >/dev/null
    done
    hack/heartbeat.sh images "docker build $image" \
      hack/docker-build.sh -q --label couchbench.build=image -t "$image" -f "$dockerfile" "$context" >/dev/null
    echo "images: built $image" >&2
  }
  build "couchbench/manager:$tag" images/manager/Dockerfile "$work/manager"
  build "couchbench/k6:$tag" images/k6/Dockerfile "$work/k6"
  # The official CouchDB images, pulled; where they cannot be, built from the kit's release
  # tarballs (hack/couchdb-images.sh, the images the local cluster runs) and loaded.
  for img in couchdb:3.4.3 couchdb:3.5.1; do
    docker image inspect "$img" >/dev/null 2>&1 || docker pull -q "$img" >/dev/null 2>&1 || {
      # mkimage, ../shared/local-cluster's image assembler, built from its module each time
      # (Go's build cache makes that a link), so it follows that module.
      go build -C "${LOCAL_CLUSTER:-../shared/local-cluster}/go/mkimage" -mod=readonly -trimpath -o "$PWD/bin/mkimage" .
      docker load -q -i "$(MKIMAGE=$PWD/bin/mkimage hack/couchdb-images.sh build "$img")" >&2
    }
  done
  for img in couchdb-python couchdb-pypy; do
    build "couchbench/$img:3.4.3" "images/$img/Dockerfile" .
  done
  docker image prune -f --filter label=couchbench.build >/dev/null
  # One call: kind saves the images once and imports them into every node.
  hack/heartbeat.sh images "loading into kind cluster $cluster" "$kind" load docker-image --name "$cluster" ${KIND_NODES:+--nodes "$KIND_NODES"} \
    "couchbench/manager:$tag" "couchbench/k6:$tag" couchdb:3.4.3 couchdb:3.5.1 \
    couchbench/couchdb-python:3.4.3 couchbench/couchdb-pypy:3.4.3 >&2
  ;;
local)
  lc=${LOCAL_CLUSTER:-../shared/local-cluster}
  "$lc/image-from-dir.sh" "couchbench/manager:$tag" "$work/manager" /manager >&2
  "$lc/image-from-dir.sh" "couchbench/k6:$tag" "$work/k6" k6 >&2
  hack/couchdb-images.sh load >&2
  ;;
esac
