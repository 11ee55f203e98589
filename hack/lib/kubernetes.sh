# Sourced by the scripts that build Kubernetes commands from the k8s.io/kubernetes module
# (hack/kubernetes) and etcd from its own (hack/etcd): envtest's kube-apiserver and etcd
# (hack/envtest.sh) and the kind node image's binaries (hack/kind-node-image.sh), which are
# one build (hack/lib/gobuild.sh) with these flags. They must report the same version, as a
# release build does: the version packages are stamped with it, since a module build knows no
# git tag.
KUBE_VERSION=v1.36.3
kube_minor=${KUBE_VERSION#v1.}
kube_minor=${kube_minor%%.*}
KUBE_LDFLAGS="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  KUBE_LDFLAGS="$KUBE_LDFLAGS -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$kube_minor -X $p.gitTreeState=clean"
done
unset p kube_minor
ETCD_VERSION=3.6.8
ETCD_LDFLAGS="-s -w"
