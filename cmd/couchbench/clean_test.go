package main

// A run's databases, and arms stopped for the runtime of their views, with the command against
// real Apache CouchDB 3.4.3: the single node of the project's kit (internal/couchdbtest),
// whose python is couchpy under CPython decoding with simplejson.

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/rundbs"
)

// cleanBench has a JavaScript arm, which the kit runs, and a pypy arm, which it does not;
// its writes make databases of their own, and its reads run k6.
const cleanBench = `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: cliclean}
spec:
  couchdb: {provision: {clusterSize: 1}}
  queryServers: [{name: js, language: javascript}, {name: pypy, preset: pypy}]
  dataset: {documents: 200, batchSize: 100}
  workloads:
    indexing: {reducers: [builtin], repetitions: 1}
    writes: {duration: 1s, bulkBatchSizes: [100]}
    reads: {virtualUsers: 1, iterationsPerUser: 5}
`

// A whole run deletes what it made in CouchDB when it ends; --keep and spec.keepDatabases keep
// it, and `clean` removes it by the run's id, from the benchmark's file (the names its runs
// make) or its name (the run's prefix). The pypy arm is stopped, and the run's exit status
// and last words say so, after the js arm's results; it has no reads either.
func TestRunLeavesNoDatabasesOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	k6 := os.Getenv("K6")
	if k6 == "" {
		t.Fatal("K6 is not set: run the tests with `make test`, which builds k6 from its Go module with hack/k6.sh")
	}
	t.Setenv("COUCHDB_USER", srv.User)
	t.Setenv("COUCHDB_PASSWORD", srv.Password)
	c := srv.Client(t, couch.Options{})
	spec := writeFile(t, t.TempDir(), "bench.yaml", cleanBench)
	bench, err := readBench(spec)
	if err != nil {
		t.Fatal(err)
	}
	kept := writeFile(t, t.TempDir(), "bench.yaml", strings.Replace(cleanBench, "  dataset:", "  keepDatabases: true\n  dataset:", 1))
	// left is what the run runID left on the server, named with its prefix.
	left := func(runID string) []string {
		dbs, err := rundbs.RunDatabases(context.Background(), c, "cliclean", runID)
		if err != nil {
			t.Fatal(err)
		}
		return dbs
	}
	run := func(file, runID string, args ...string) (int, string, string) {
		for _, arm := range []string{"js", "pypy"} {
			srv.DeleteLater(t, rundbs.Databases(bench, runID, arm)...)
		}
		var stdout, stderr bytes.Buffer
		code := realMain(append([]string{"run", "-f", file, "--url", srv.URL(), "--run-id", runID, "--k6", k6}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	runID := "cln" + couchdbtest.RandomID()
	code, stdout, stderr := run(spec, runID)
	const stopped = "couchbench run: query server pypy was stopped: it asks for PyPy (preset pypy), but the CouchDB at "
	if code != 1 || !strings.Contains(stdout, "| js (javascript) | builtin") || !strings.Contains(stderr, stopped) {
		t.Fatalf("exit %d; want 1, js's results and the pypy arm stopped\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`\| js \(javascript\) +\| 5 +\|`).MatchString(stdout) || strings.Contains(stdout, "| pypy (python) ") {
		t.Errorf("want the reads of js alone:\n%s", stdout)
	}
	if dbs := left(runID); len(dbs) > 0 {
		t.Errorf("the run left %v", dbs)
	}
	if want := "js: deleted the run's databases " + names.Database("cliclean", runID, "js", "small") + " (--keep keeps them)"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}

	// --keep: what is left is among the names the cleanup knows, and clean -f deletes it.
	runID = "cln" + couchdbtest.RandomID()
	if code, _, stderr := run(spec, runID, "--keep", "-q"); code != 1 || strings.Contains(stderr, "deleted") {
		t.Fatalf("--keep: exit %d, stderr:\n%s", code, stderr)
	}
	dbs := left(runID)
	if len(dbs) == 0 || slices.ContainsFunc(dbs, func(db string) bool { return !slices.Contains(rundbs.Databases(bench, runID, "js"), db) }) {
		t.Fatalf("--keep left %v; want the js arm's databases, every one named by rundbs.Databases %v", dbs, rundbs.Databases(bench, runID, "js"))
	}
	var out, errOut bytes.Buffer
	if code := realMain([]string{"clean", "--benchmark", "cliclean", "--run-id", runID, "--url", srv.URL(), "--dry-run"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "would delete "+dbs[0]+" from "+srv.URL()) || !slices.Equal(left(runID), dbs) {
		t.Errorf("clean --dry-run: exit %d, stdout %q, stderr %q, left %v; want %v listed and kept", code, out.String(), errOut.String(), left(runID), dbs)
	}
	out.Reset()
	if code := realMain([]string{"clean", "-f", spec, "--run-id", runID, "--url", srv.URL()}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "deleted "+dbs[0]+" from "+srv.URL()) || len(left(runID)) > 0 {
		t.Errorf("clean -f: exit %d, stdout %q, stderr %q, left %v", code, out.String(), errOut.String(), left(runID))
	}

	// spec.keepDatabases keeps them too; clean by the benchmark's name deletes them.
	runID = "cln" + couchdbtest.RandomID()
	if code, _, stderr := run(kept, runID, "-q"); code != 1 || len(left(runID)) == 0 {
		t.Fatalf("keepDatabases: exit %d, left %v, stderr:\n%s", code, left(runID), stderr)
	}
	out.Reset()
	if code := realMain([]string{"clean", "--benchmark", "cliclean", "--run-id", runID, "--url", srv.URL()}, &out, &errOut); code != 0 ||
		len(left(runID)) > 0 || !strings.HasPrefix(out.String(), "deleted cb-cliclean-"+runID+"-js-small from ") {
		t.Errorf("clean --benchmark: exit %d, stdout %q, stderr %q, left %v", code, out.String(), errOut.String(), left(runID))
	}
	out.Reset()
	if code := realMain([]string{"clean", "--benchmark", "cliclean", "--run-id", runID, "--url", srv.URL()}, &out, &errOut); code != 0 ||
		out.String() != "the run has no databases there\n" {
		t.Errorf("clean of a clean run: exit %d, stdout %q", code, out.String())
	}
}
