#!/usr/bin/env bash
# Provides the control-plane binaries envtest needs (kube-apiserver, etcd) in a git-ignored
# directory, and prints that directory (for KUBEBUILDER_ASSETS).
#
# setup-envtest downloads prebuilt binaries from a bucket that this project's machines and CI
# cannot reach; the Go module proxy they can reach serves the sources, so we build instead.
# The modules hack/kubernetes and hack/etcd pin the versions (go.sum checked in,
# -mod=readonly); the kind node image is built from the same modules. A binary is kept when it
# already reports the pinned version.
#
# PREBUILT_DIR names binaries built elsewhere: those that report the pinned versions are
# copied rather than built.
#
# Usage: hack/envtest.sh OUTDIR [PREBUILT_DIR]
set -euo pipefail

# shellcheck source=hack/lib/kubernetes.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/kubernetes.sh"
ETCD_VERSION=3.6.8

out=${1:?usage: hack/envtest.sh OUTDIR [PREBUILT_DIR]}
prebuilt=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "envtest: $*" >&2; }

is_kube_apiserver() { "$1" --version 2>/dev/null | grep -qx "Kubernetes $KUBE_VERSION"; }
is_etcd() { "$1" --version 2>/dev/null | grep -q "^etcd Version: $ETCD_VERSION\$"; }

# provide NAME CHECK WHAT MODDIR GO_BUILD_ARG...: keeps OUTDIR/NAME when CHECK accepts it,
# else copies PREBUILT_DIR/NAME when CHECK accepts that, else builds it in MODDIR.
provide() {
  local name=$1 check=$2 what=$3 dir=$4
  shift 4
  if "$check" "$out/$name"; then
    log "$what present"
  elif [[ -n $prebuilt ]] && "$check" "$prebuilt/$name"; then
    cp -f "$prebuilt/$name" "$out/$name"
    log "$what copied from $prebuilt"
  else
    log "building $what"
    "$here/heartbeat.sh" envtest "building $what" \
      env -u GOOS -u GOARCH GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
      go build -C "$dir" -trimpath -buildvcs=false -o "$out/$name" "$@"
  fi
}

provide kube-apiserver is_kube_apiserver "kube-apiserver $KUBE_VERSION" "$here/kubernetes" \
  -ldflags "$KUBE_LDFLAGS" k8s.io/kubernetes/cmd/kube-apiserver
provide etcd is_etcd "etcd $ETCD_VERSION" "$here/etcd" -ldflags "-s -w" .

echo "$out"
