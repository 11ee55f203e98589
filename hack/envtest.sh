#!/usr/bin/env bash
# Builds the control-plane binaries envtest needs (kube-apiserver, etcd) from Go modules into
# a git-ignored directory, and prints that directory (for KUBEBUILDER_ASSETS).
#
# setup-envtest downloads prebuilt binaries from a bucket that this project's machines and CI
# cannot reach; the Go module proxy they can reach serves the sources, so we build instead.
# The modules under hack/envtest/ pin the versions (go.sum checked in, -mod=readonly). A
# build is skipped when the binaries already report the pinned versions.
#
# Usage: hack/envtest.sh OUTDIR
set -euo pipefail

KUBE_VERSION=v1.36.3
ETCD_VERSION=3.6.16

out=${1:?usage: hack/envtest.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "envtest: $*" >&2; }

go_build() { # moddir args...
  local dir=$1; shift
  (cd "$dir" && env -u GOOS -u GOARCH GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
    go build -trimpath -buildvcs=false "$@")
}

if "$out/kube-apiserver" --version 2>/dev/null | grep -qx "Kubernetes $KUBE_VERSION"; then
  log "kube-apiserver $KUBE_VERSION present"
else
  log "building kube-apiserver $KUBE_VERSION (a few minutes on a cold Go cache)"
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  go_build "$here/envtest/kube-apiserver" -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
fi

if "$out/etcd" --version 2>/dev/null | grep -q "^etcd Version: $ETCD_VERSION\$"; then
  log "etcd $ETCD_VERSION present"
else
  log "building etcd $ETCD_VERSION"
  go_build "$here/envtest/etcd" -ldflags "-s -w" -o "$out/etcd" .
fi

echo "$out"
