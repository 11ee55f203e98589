package runner

import (
	"fmt"
	"os"
	"testing"

	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// TestMain stops the Apache CouchDB cluster the fault tests start for themselves
// (runner_faults_test.go), also when tests failed. hack/with-couchdb.sh stops it as well, in case
// this binary dies first (a test timeout's panic skips TestMain's end).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := couchdbtest.StopOwn(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// jsBench is a benchmark called name with one JavaScript arm against an existing CouchDB
// (the tests hand the runner a client of their own); spec is the rest of its spec, from a
// newline, indented by two.
func jsBench(name, spec string) string {
	return `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: ` + name + `}
spec:
  couchdb:
    existing: {url: "http://unused:5984", credentialsSecret: {name: s}}
  queryServers:
  - {name: js, language: javascript}` + spec
}
