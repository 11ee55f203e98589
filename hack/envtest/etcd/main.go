// Command etcd is the etcd server for envtest, built from go.etcd.io/etcd/server/v3:
// that module cannot be `go install`ed (its go.mod has replace directives), so this
// main wraps its entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
