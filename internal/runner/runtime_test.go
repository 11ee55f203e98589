package runner

// Arms that ask for a runtime the server does not run their views on, against the single
// node of the project's kit: real Apache CouchDB 3.4.3 (internal/couchdbtest), whose python
// is couchpy under CPython 3.11 decoding with simplejson and whose javascript is
// SpiderMonkey unless its js_engine says quickjs.

import (
	"context"
	"slices"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/results"
)

// presetsBench runs the seed-000 presets by hand against a CouchDB that was not made for them,
// as `couchbench run -f config/samples/seed000-indexing-query-servers.yaml --url ...` does.
const presetsBench = `
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: presets}
spec:
  couchdb: {provision: {clusterSize: 1}}
  queryServers:
  - {name: couchjs, preset: spidermonkey}
  - {name: pypy, preset: pypy}
  - {name: couchpy, preset: couchpy}
  - {name: couchpy-sj, preset: couchpy-simplejson}
  dataset: {documents: 200, batchSize: 100}
  workloads:
    indexing: {reducers: [builtin], repetitions: 1}
`

// The pypy arm (CPython ran) and the couchpy arm (it asks for json; simplejson ran) are
// stopped before they seed, each with what it asked for, what ran and how to register the
// right query server; the arms that got what they ask for run, and the run goes on without
// an error (`couchbench run` turns the stopped arms into its exit status).
func TestArmsOnTheWrongRuntimeAreStoppedOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	doc, log, err := realRun(t, srv, presetsBench, Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	arms := map[string]results.Arm{}
	for _, a := range doc.Arms {
		arms[a.QueryServer] = a
	}
	for arm, want := range map[string][]string{
		"pypy": {"asks for PyPy (preset pypy), but the CouchDB at " + srv.URL() + " runs its python views on CPython 3.",
			"with JSON module simplejson: to run PyPy, register it for language python on that CouchDB: " +
				`COUCHDB_QUERY_SERVER_PYTHON="pypy3 -m couchdb.view" in CouchDB's environment`,
			"the arm's image, couchbench/couchdb-pypy:3.4.3", "set spec.runtimeMismatch: Flag"},
		"couchpy": {`asks for CPython with JSON module json (preset couchpy, command "/usr/local/bin/couchpy --json-module=json")`,
			"runs its python views on CPython 3.", "with JSON module simplejson",
			`COUCHDB_QUERY_SERVER_PYTHON="/usr/local/bin/couchpy --json-module=json"`},
	} {
		a := arms[arm]
		if !a.Stopped() {
			t.Errorf("%s: runtime %+v, want it stopped", arm, a.Runtime)
			continue
		}
		for _, w := range want {
			if !strings.Contains(a.Runtime.Mismatch, w) {
				t.Errorf("%s: the message lacks %q:\n%s", arm, w, a.Runtime.Mismatch)
			}
		}
		if a.Profiles[0].Seeding != nil {
			t.Errorf("%s: seeded %+v after it was stopped", arm, a.Profiles[0].Seeding)
		}
		if _, err := srv.Client(t, couch.Options{}).DBInfo(context.Background(), a.Profiles[0].DB); couch.StatusOf(err) != 404 {
			t.Errorf("%s: database %s: %v; want none", arm, a.Profiles[0].DB, err)
		}
	}
	for _, arm := range []string{"couchjs", "couchpy-sj"} {
		a := arms[arm]
		if a.Runtime == nil || a.Runtime.Mismatch != "" || a.Runtime.Asked == "" || len(a.Profiles[0].Indexing) != 1 {
			t.Errorf("%s: runtime %+v, indexing %+v; want what it asked for, and its build", arm, a.Runtime, a.Profiles[0].Indexing)
		}
	}
	var stepsOf []string
	for _, rec := range doc.Steps {
		stepsOf = append(stepsOf, rec.QueryServer)
	}
	if slices.Contains(stepsOf, "pypy") || slices.Contains(stepsOf, "couchpy") {
		t.Errorf("step records of %v: the stopped arms took turns", stepsOf)
	}
	if !strings.Contains(log, "pypy: stopped, it measures nothing: it asks for PyPy (preset pypy)") {
		t.Errorf("the log does not say the arm was stopped:\n%s", log)
	}
}

// spec.runtimeMismatch Flag measures the arm anyway and flags every number of it; the
// JavaScript engine counts as the Python implementation does (the kit's node switched to
// QuickJS for the test).
func TestArmOnTheWrongRuntimeIsFlaggedOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	defer srv.SetConfig(t, "couchdb", "js_engine", "quickjs")()
	bench := strings.Replace(presetsBench, "  dataset:", "  runtimeMismatch: Flag\n  dataset:", 1)
	doc, log, err := realRun(t, srv, bench, Config{Arms: []string{"couchjs"}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	a := doc.Arms[0]
	if rt := a.Runtime; rt == nil || rt.Stopped || rt.Engine != "quickjs" ||
		!strings.Contains(rt.Mismatch, "asks for spidermonkey (preset spidermonkey), but the CouchDB at "+srv.URL()+
			" runs its javascript views on quickjs: to run spidermonkey, set js_engine = spidermonkey in the [couchdb] section") {
		t.Fatalf("runtime %+v; want quickjs, measured anyway", rt)
	}
	s := results.Aggregate(doc).Results[0]
	if len(s.Seeding) != 1 || len(s.Indexing) != 1 || !slices.Contains(s.Seeding[0].Flags, benchv1.FlagRuntimeMismatch) ||
		!slices.Contains(s.Indexing[0].Flags, benchv1.FlagRuntimeMismatch) || s.Stopped != "" {
		t.Errorf("results %+v; want seeding and indexing, both flagged RuntimeMismatch", s)
	}
}
