#!/usr/bin/env bash
# Provides the kind node image for Kubernetes v1.36.3 and prints its name.
#
# With a registry in reach, that is kind's own image: `docker pull kindest/node:v1.36.3`.
# Without one (an air-gapped machine, or this project's machines, which reach only package
# registries), it is built here from local parts, once, as couchbench/kind-node:v1.36.3:
#   - kind v0.33.0's node files (the sigs.k8s.io/kind module's images/base/files);
#   - Debian's systemd, containerd, runc and CNI plugins;
#   - kubeadm, kubelet, kubectl, the control plane and kube-proxy (k8s.io/kubernetes v1.36.3),
#     etcd 3.6.8 and CoreDNS 1.14.2 (the versions kubeadm v1.36.3 deploys), crictl and flannel
#     (the pod network, hack/kindnode/default-cni.yaml), built from their Go modules
#     (hack/kubernetes, hack/etcd, hack/coredns, hack/crictl, hack/flannel);
#   - the pause container of hack/kindnode.
# See hack/kindnode/Dockerfile for what differs from kindest/node. An image already present
# is kept (delete it to rebuild); binaries are cached in bin/go-binaries, keyed by the inputs.
#
# Usage: hack/kind-node-image.sh     (KIND_NODE_IMAGE=NAME skips all of this and prints NAME)
# Needs a Docker engine (DOCKER_HOST), Go, and root when debian:bookworm-slim has to be built
# (hack/base-images.sh).
set -euo pipefail
self=$(realpath "${BASH_SOURCE[0]}")
cd "$(dirname "$self")/.."

if [ -n "${KIND_NODE_IMAGE:-}" ]; then echo "$KIND_NODE_IMAGE"; exit 0; fi

# shellcheck source=hack/lib/kubernetes.sh
source hack/lib/kubernetes.sh
# shellcheck source=hack/lib/gobuild.sh
source hack/lib/gobuild.sh
# module_version MODDIR MODULE: the version of MODULE that MODDIR's go.mod requires.
module_version() { awk -v m="$2" '{for (i = 1; i < NF; i++) if ($i == m) {print $(i + 1); exit}}' "$1/go.mod"; }
# kind's node files come from the module of the kind binary that will run the image (the
# Makefile's pin).
kind_version=$("${KIND:-kind}" version | awk '{print $2}')
[[ $kind_version == v* ]] || { echo "kind-node-image: no kind binary (KIND=${KIND:-kind})" >&2; exit 1; }
upstream=kindest/node:$KUBE_VERSION
image=couchbench/kind-node:$KUBE_VERSION
base=debian:bookworm-slim

log() { echo "kind-node-image: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); start one, e.g. export DOCKER_HOST=\$(../shared/docker/up.sh)"
# Everything the built image is made of, so that a change to any of it builds it again.
inputs=$({ cat "$self" hack/lib/{kubernetes,gobuild}.sh hack/kindnode/Dockerfile hack/kindnode/*.yaml hack/kindnode/*/*.go \
  hack/{kubernetes,etcd,coredns,crictl,flannel}/*.go hack/{kubernetes,etcd,coredns,crictl,flannel}/go.{mod,sum} go.mod go.sum
  echo "$kind_version $(go env GOVERSION)"; } | sha256sum | cut -c1-16)
if [ "$(docker image inspect -f '{{index .Config.Labels "couchbench.inputs"}}' "$image" 2>/dev/null)" = "$inputs" ]; then
  log "$image present"
  echo "$image"
  exit 0
fi
if docker image inspect "$upstream" >/dev/null 2>&1; then
  log "$upstream present"
  echo "$upstream"
  exit 0
fi
if docker pull -q "$upstream" >/dev/null 2>&1; then
  log "pulled $upstream"
  echo "$upstream"
  exit 0
fi
log "$upstream cannot be pulled: building $image from local parts"
start=$SECONDS

hack/base-images.sh "$base"

# Binaries, each built once per set of inputs (hack/lib/gobuild.sh: envtest's kube-apiserver
# and etcd are these).
go_binaries hack/kubernetes "$KUBE_LDFLAGS" \
  k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
kube=$gobin
go_binaries hack/etcd "$ETCD_LDFLAGS" .
etcd=$gobin
go_binaries hack/coredns "-s -w" .
coredns=$gobin
crictl_version=$(module_version hack/crictl sigs.k8s.io/cri-tools)
go_binaries hack/crictl "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" sigs.k8s.io/cri-tools/cmd/crictl
crictl=$gobin
flannel_version=$(module_version hack/flannel github.com/flannel-io/flannel)
# With cgo and static, as flannel's own build makes it for amd64 (its UDP backend is C).
go_binaries --cgo hack/flannel "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$flannel_version -extldflags -static" \
  github.com/flannel-io/flannel
flannel=$gobin
# The pause container is this repository's own.
go_binaries . "-s -w" ./hack/kindnode/pause
pause=$gobin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ctx=$work/context
mkdir -p "$ctx/bin" "$ctx/images" "$ctx/manifests"

# The versions kubeadm deploys are the tags the node must hold.
images=$("$kube/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
tag_of() { grep "/$1:" <<<"$images" | head -1; }

# image NAME DOCKERFILE FILE...: builds a docker image from the given files and saves it as a
# tarball for the node to import.
image() {
  local name=$1 dockerfile=$2 dir
  shift 2
  dir=$(mktemp -d "$work/image.XXXXXX")
  cp "$@" "$dir/"
  echo "$dockerfile" >"$dir/Dockerfile"
  hack/docker-build.sh -q -t "$name" "$dir" >/dev/null 2>"$dir/build.log" || { cat "$dir/build.log" >&2; die "building $name failed"; }
  docker save -o "$ctx/images/$(basename "$dir").tar" "$name"
  log "image $name"
}
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "$(tag_of "$c")" "FROM $base
COPY $c /usr/local/bin/$c
LABEL couchbench.offline=true" "$kube/$c"
done
# kube-proxy programs iptables (or nftables) and conntrack on the node, flannel iptables (its
# masquerade and forward rules): one layer, which Docker's cache builds once for both.
netfilter="FROM $base
RUN apt-get update -q && apt-get install -y -q --no-install-recommends iptables nftables conntrack \
 && rm -rf /var/lib/apt/lists/*"
image "$(tag_of kube-proxy)" "$netfilter
COPY kube-proxy /usr/local/bin/kube-proxy
LABEL couchbench.offline=true" "$kube/kube-proxy"
image "$(tag_of etcd)" "FROM $base
COPY etcd /usr/local/bin/etcd
LABEL couchbench.offline=true" "$etcd/etcd"
image "$(tag_of coredns)" "FROM $base
COPY coredns /coredns
ENTRYPOINT [\"/coredns\"]
LABEL couchbench.offline=true" "$coredns/coredns"
# kind's node files: the module's images/base/files.
GOFLAGS=-mod=readonly go mod download "sigs.k8s.io/kind@$kind_version"
kindfiles=$(go env GOMODCACHE)/sigs.k8s.io/kind@$kind_version/images/base/files
# containerd's sandbox image, as kind's containerd config names it.
sandbox=$(sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' "$kindfiles/etc/containerd/config.toml")
[ -n "$sandbox" ] || die "no sandbox_image in kind's containerd config"
image "$sandbox" "FROM scratch
COPY pause /pause
ENTRYPOINT [\"/pause\"]
LABEL couchbench.offline=true" "$pause/pause"
flannel_image=$(sed -n 's/^ *image: *//p' hack/kindnode/default-cni.yaml | head -1)
[ "$flannel_image" = "docker.io/couchbench/flannel:$flannel_version" ] ||
  die "hack/kindnode/default-cni.yaml runs $flannel_image, not flannel $flannel_version (hack/flannel/go.mod)"
image "$flannel_image" "$netfilter
COPY flannel /opt/bin/flanneld
LABEL couchbench.offline=true" "$flannel/flannel"

cp -r "$kindfiles" "$ctx/kind"
chmod -R u+w "$ctx/kind"
rm -rf "$ctx/kind/LICENSES"
cp "$kube"/{kubeadm,kubelet,kubectl} "$crictl/crictl" "$ctx/bin/"
cp hack/kindnode/default-cni.yaml hack/kindnode/default-storage.yaml "$ctx/manifests/"
cp hack/kindnode/Dockerfile "$ctx/"
hack/heartbeat.sh kind-node-image "building $image" \
  hack/docker-build.sh -q --build-arg KUBERNETES_VERSION="$KUBE_VERSION" --label couchbench.inputs="$inputs" -t "$image" "$ctx" >/dev/null
# The node image this build replaced, some 3 GB, is left dangling by Docker: pruned, by the
# label only node images carry.
docker image prune -f --filter label=couchbench.inputs >/dev/null
log "built $image in $((SECONDS - start))s"
echo "$image"
