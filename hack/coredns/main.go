// Command coredns is CoreDNS built from its Go module, at the version kubeadm v1.36.3 deploys,
// for the air-gapped kind node image (hack/kind-node-image.sh). As upstream's own main does,
// it compiles in every in-tree plugin; the Corefile kubeadm writes decides which run.
package main

import (
	_ "github.com/coredns/coredns/core/plugin"
	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
