//go:build tools

// Package tools pins crictl for the air-gapped kind node image (hack/kind-node-image.sh):
// `kind load docker-image` asks the node's crictl whether an image is already there.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
