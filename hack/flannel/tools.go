//go:build tools

// Package tools pins flannel, the pod network of the air-gapped kind node image
// (hack/kind-node-image.sh, hack/kindnode/default-cni.yaml): its flanneld is the module's
// main package, built from the Go module proxy as the node's other binaries are.
package tools

import _ "github.com/flannel-io/flannel"
