//go:build tools

// Package tools pins the Kubernetes commands this project builds from the k8s.io/kubernetes
// module, because the places they are usually downloaded from (setup-envtest's bucket, the
// release bucket, registry.k8s.io) are out of reach of this project's machines: envtest's
// kube-apiserver (hack/envtest.sh) and the binaries and control-plane images of the
// air-gapped kind node image (hack/kind-node-image.sh). The replace block in go.mod points
// every staging module at the same release, as the kubernetes repository does for itself.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
