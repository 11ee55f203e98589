#!/usr/bin/env bash
# Builds the images a cluster needs to run couchbench and loads them into it:
#   couchbench/manager:TAG         the operator and the couchbench runner
#   couchbench/k6:TAG              k6 from its Go module, with a shell
#   couchbench/pouchdb-server:TAG  pouchdb-server (the e2e tests' CouchDB-compatible server)
# and, for local, the CouchDB images under their own tags (hack/couchdb-images.sh):
#   couchdb:3.4.3, couchdb:3.5.1   Apache CouchDB as the official image has it
#   couchbench/couchdb-python:3.4.3, couchbench/couchdb-pypy:3.4.3   the Python presets' images
#
# Usage: hack/images.sh kind|local TAG [KIND_CLUSTER]
#   kind   docker build (images/*/Dockerfile) and `kind load docker-image`
#   local  no Docker: the Go binaries and the npm install are packed onto the Debian base
#          of ../shared/local-cluster with its image-from-dir.sh and imported into its
#          containerd (nothing is pulled); the CouchDB images are built from the kit's
#          release tarballs (cached in bin/images) and imported
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=${1:?usage: hack/images.sh kind|local TAG [KIND_CLUSTER]}
tag=${2:?usage: hack/images.sh kind|local TAG [KIND_CLUSTER]}
images=(manager k6 pouchdb-server)

case "$target" in
kind)
  cluster=${3:-couchbench}
  for img in "${images[@]}"; do
    docker build -q -t "couchbench/$img:$tag" -f "images/$img/Dockerfile" .
    kind load docker-image --name "$cluster" "couchbench/$img:$tag"
  done
  ;;
local)
  lc=${LOCAL_CLUSTER:-../shared/local-cluster}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/manager" "$work/k6/usr/bin" "$work/pouchdb/opt/pouchdb" "$work/pouchdb/usr/local/bin"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/manager/manager" ./cmd/manager
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/manager/couchbench" ./cmd/couchbench
  cp "$(hack/k6.sh bin)" "$work/k6/usr/bin/k6"
  pouchdb=$(hack/pouchdb.sh bin/pouchdb)
  cp -a "$(dirname "$(dirname "$(dirname "$pouchdb")")")/node_modules" "$work/pouchdb/opt/pouchdb/"
  cp "$(command -v node)" "$work/pouchdb/usr/local/bin/node"
  cp images/pouchdb-server/entrypoint.sh "$work/pouchdb/entrypoint.sh"
  "$lc/image-from-dir.sh" "couchbench/manager:$tag" "$work/manager" /manager >&2
  "$lc/image-from-dir.sh" "couchbench/k6:$tag" "$work/k6" k6 >&2
  "$lc/image-from-dir.sh" "couchbench/pouchdb-server:$tag" "$work/pouchdb" /entrypoint.sh >&2
  hack/couchdb-images.sh load >&2
  ;;
*)
  echo "hack/images.sh: target must be kind or local, not $target" >&2
  exit 2
  ;;
esac
