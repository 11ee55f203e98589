package runner

// The probe against the project's kit, real Apache CouchDB 3.4.3 (internal/couchdbtest),
// whose python is couchpy under CPython decoding with simplejson; where its node is away,
// through internal/couchfault's proxy answering as CouchDB does then.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
)

// The probe's database has one copy, unusable while the node holding it is away: CouchDB
// answers 500 "No DB shards could be opened" (the e2e suite met it when a CouchDB pod was
// deleted during the probe). The probe starts over until the node is back, as seeding
// retries its batches.
func TestProbeRidesOutItsNodeBeingAwayOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	p, c := srv.Proxied(t, couch.Options{MaxConns: 4})
	runID := "probe" + couchdbtest.RandomID()
	bulk := "/" + names.ProbeDatabase("interrupt", runID, "js", 0) + "/_bulk_docs"
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 3, Status: http.StatusInternalServerError,
		Error: "internal_server_error", Reason: "No DB shards could be opened."})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	doc, log, err := realRunUntil(ctx, t, srv, interruptBench, Config{Client: c, RunID: runID, Steps: []benchv1.Step{benchv1.StepSeed}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	if rt := doc.Arms[0].Runtime; rt == nil || rt.Language != "javascript" || rt.Engine != "spidermonkey" {
		t.Errorf("runtime %+v, want what the kit's probe view reports: SpiderMonkey", rt)
	}
	if n := p.Requests(http.MethodPost, bulk); n != 4 {
		t.Errorf("%d probe writes, want 3 refused and 1 that worked", n)
	}
}

// existingPresetsBench has two Python presets on an existing CouchDB, where they install
// nothing and only say what the arm expects: couchpy-simplejson (CPython decoding with
// simplejson, which the kit's python is) and pypy (which it is not).
func existingPresetsBench(url, policy string) string {
	return `
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: existing-presets}
spec:
  couchdb:
    existing: {url: "` + url + `", credentialsSecret: {name: s}}
  queryServers:
  - {name: couchpy-sj, preset: couchpy-simplejson}
  - {name: pypy, preset: pypy}
  runtimeMismatch: ` + policy + `
  dataset: {documents: 200, batchSize: 100}
  workloads:
    indexing: {reducers: [builtin], repetitions: 1}
`
}

// On the kit (real Apache CouchDB), a preset on an existing CouchDB is the runtime the arm
// expects: couchpy-simplejson finds it and runs; pypy finds CPython and is stopped by default,
// with a message that names the query server to register and no image (nothing is
// provisioned), or, with runtimeMismatch Flag, is measured and every number flagged.
func TestPresetsOnAnExistingCouchDBAreCheckedOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	byName := func(doc *results.Document) map[string]results.Arm {
		arms := map[string]results.Arm{}
		for _, a := range doc.Arms {
			arms[a.QueryServer] = a
		}
		return arms
	}

	doc, log, err := realRun(t, srv, existingPresetsBench(srv.URL(), "Stop"), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	arms := byName(doc)
	if a := arms["couchpy-sj"]; a.Runtime == nil || a.Runtime.Mismatch != "" || a.Runtime.Asked != "CPython with JSON module simplejson" ||
		len(a.Profiles[0].Indexing) != 1 {
		t.Errorf("couchpy-sj: runtime %+v, indexing %+v; want CPython with simplejson as asked, and its build", a.Runtime, a.Profiles[0].Indexing)
	}
	pypy := arms["pypy"]
	if !pypy.Stopped() || pypy.Profiles[0].Seeding != nil {
		t.Fatalf("pypy: runtime %+v, seeding %+v; want it stopped before it seeds", pypy.Runtime, pypy.Profiles[0].Seeding)
	}
	for _, w := range []string{"asks for PyPy (preset pypy), but the CouchDB at " + srv.URL() + " runs its python views on CPython 3.",
		`COUCHDB_QUERY_SERVER_PYTHON="pypy3 -m couchdb.view"`, "set spec.runtimeMismatch: Flag"} {
		if !strings.Contains(pypy.Runtime.Mismatch, w) {
			t.Errorf("pypy: the message lacks %q:\n%s", w, pypy.Runtime.Mismatch)
		}
	}
	if strings.Contains(pypy.Runtime.Mismatch, benchv1.CouchDBPyPyImage) {
		t.Errorf("pypy: the message names the preset's image, which an existing CouchDB never gets:\n%s", pypy.Runtime.Mismatch)
	}

	doc, log, err = realRun(t, srv, existingPresetsBench(srv.URL(), "Flag"), Config{Arms: []string{"pypy"}})
	if err != nil {
		t.Fatalf("run with Flag failed: %v\n%s", err, log)
	}
	if rt := byName(doc)["pypy"].Runtime; rt == nil || rt.Stopped || rt.Engine != benchv1.PythonCPython || rt.Mismatch == "" {
		t.Fatalf("pypy with Flag: runtime %+v; want CPython, a mismatch, measured anyway", rt)
	}
	s := results.Aggregate(doc).Results[0]
	if len(s.Indexing) != 1 || !slices.Contains(s.Indexing[0].Flags, benchv1.FlagRuntimeMismatch) || s.Stopped != "" {
		t.Errorf("pypy with Flag: results %+v; want its indexing, flagged RuntimeMismatch", s)
	}
}
