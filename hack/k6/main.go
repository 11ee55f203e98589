// Command k6 is Grafana k6 built from its Go module, for the tests and images of this
// project: no prebuilt binary can be downloaded on its build machines. The version is
// pinned in go.mod.
package main

import "go.k6.io/k6/cmd"

func main() { cmd.Execute() }
