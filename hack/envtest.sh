#!/usr/bin/env bash
# Provides the control-plane binaries envtest needs (kube-apiserver, etcd) in a git-ignored
# directory, and prints that directory (for KUBEBUILDER_ASSETS). Skipped when they are there.
#
# As in kubebuilder projects, setup-envtest (SETUP_ENVTEST, pinned in the Makefile) first
# downloads the prebuilt binaries of the newest release of the pinned Kubernetes minor into
# OUTDIR/setup-envtest, and they are linked into OUTDIR. Its index and downloads are on
# GitHub, which this project's machines and CI cannot reach (only the Go module proxy), so
# there it fails, at once or after SETUP_ENVTEST_TIMEOUT seconds (120 by default), and the
# binaries are built from the sources the proxy serves instead: the modules hack/kubernetes
# and hack/etcd pin the versions (go.sum checked in, -mod=readonly). They are built where the
# kind node image's are (hack/lib/gobuild.sh), so that whichever of the two comes first builds
# them for both, and linked into OUTDIR. A binary in OUTDIR is kept when it already reports the
# pinned version. One line on stderr says which of the two ways provided the binaries.
#
# PREBUILT_DIR names binaries built elsewhere: those that report the pinned versions are
# copied rather than built.
#
# Usage: [SETUP_ENVTEST=PATH] hack/envtest.sh OUTDIR [PREBUILT_DIR]
set -euo pipefail

# shellcheck source=hack/lib/kubernetes.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/kubernetes.sh"
# shellcheck source=hack/lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/gobuild.sh"

out=${1:?usage: hack/envtest.sh OUTDIR [PREBUILT_DIR]}
prebuilt=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "envtest: $*" >&2; }

# reports BINARY PATTERN: BINARY --version prints a line that PATTERN matches whole.
reports() { "$1" --version 2>/dev/null | grep -qx "$2"; }
is_kube_apiserver() { reports "$1" "Kubernetes $KUBE_VERSION"; }
is_etcd() { reports "$1" "etcd Version: $ETCD_VERSION"; }

# from_setup_envtest: links the binaries setup-envtest has or downloads for the pinned
# Kubernetes minor into OUTDIR; when it cannot, sets reason and fails.
from_setup_envtest() {
  local minor=${KUBE_VERSION#v} timeout=${SETUP_ENVTEST_TIMEOUT:-120} t0=$SECONDS
  minor=${minor%.*}
  if [[ ! -x ${SETUP_ENVTEST:-} ]]; then
    reason="no setup-envtest at '${SETUP_ENVTEST:-}' (make setup-envtest builds it)"
    return 1
  fi
  local dir errors rc=0
  errors=$(mktemp)
  # What its store has first (-i: no network), so that a release it downloaded once is used
  # again offline; else its index.
  dir=$("$SETUP_ENVTEST" use -i "$minor.x" --bin-dir "$out/setup-envtest" -p path 2>/dev/null) ||
    dir=$(timeout "$timeout" "$SETUP_ENVTEST" use "$minor.x" --bin-dir "$out/setup-envtest" -p path \
      2>"$errors") || rc=$?
  reason=$(tail -n 1 "$errors")
  rm -f "$errors"
  if ((rc == 124)); then
    reason="no answer within ${timeout}s"
  fi
  ((rc == 0)) || return 1
  # dir is the store's entry, as .../1.36.0-linux-amd64.
  local version=${dir##*/}
  version=${version%%-*}
  if ! reports "$dir/kube-apiserver" "Kubernetes v$version" || ! reports "$dir/etcd" "etcd Version: .*"; then
    reason="the binaries in $dir do not run (a download cut short? remove that directory)"
    return 1
  fi
  if [[ $dir/kube-apiserver -ef $out/kube-apiserver && $dir/etcd -ef $out/etcd ]]; then
    log "kube-apiserver and etcd from setup-envtest (Kubernetes $version) present in $out"
  else
    # Hard links: whatever replaces them later (go build -o, cp --remove-destination) unlinks
    # first, so the store keeps its copies.
    if ! ln -f "$dir/kube-apiserver" "$dir/etcd" "$out/"; then
      reason="could not link $dir's binaries into $out"
      return 1
    fi
    log "kube-apiserver and etcd from setup-envtest (Kubernetes $version; setup-envtest took $((SECONDS - t0))s) in $out"
  fi
}

# provide NAME CHECK WHAT MODDIR LDFLAGS PACKAGE: keeps OUTDIR/NAME when CHECK accepts it,
# else copies PREBUILT_DIR/NAME when CHECK accepts that, else links the build of PACKAGE in
# MODDIR (hack/lib/gobuild.sh, built there when missing).
provide() {
  local name=$1 check=$2 what=$3
  shift 3
  if "$check" "$out/$name"; then
    log "$what present"
  elif [[ -n $prebuilt ]] && "$check" "$prebuilt/$name"; then
    cp -f --remove-destination "$prebuilt/$name" "$out/$name"
    log "$what copied from $prebuilt"
  else
    go_binaries "$@"
    ln -f "$gobin/$name" "$out/$name"
    log "$what from $gobin"
  fi
}

reason=
if is_kube_apiserver "$out/kube-apiserver" && is_etcd "$out/etcd"; then
  log "kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION present in $out"
elif ! from_setup_envtest; then
  log "setup-envtest could not provide them ($reason); kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION from Go modules"
  provide kube-apiserver is_kube_apiserver "kube-apiserver $KUBE_VERSION" "$here/kubernetes" "$KUBE_LDFLAGS" \
    k8s.io/kubernetes/cmd/kube-apiserver
  provide etcd is_etcd "etcd $ETCD_VERSION" "$here/etcd" "$ETCD_LDFLAGS" .
fi

echo "$out"
