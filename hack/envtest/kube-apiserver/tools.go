//go:build tools

// Package tools pins kube-apiserver for envtest. envtest's usual download comes from a
// bucket this project's machines cannot reach, so hack/envtest.sh builds the binary from
// the k8s.io/kubernetes module instead; the replace block in go.mod points every staging
// module at the same release, as the kubernetes repository does for itself.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
