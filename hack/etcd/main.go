// Command etcd is the etcd server of envtest and of the air-gapped kind node image (the version kubeadm v1.36.3 deploys), built from go.etcd.io/etcd/server/v3:
// that module cannot be `go install`ed (its go.mod has replace directives), so this
// main wraps its entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
