package loadtest

import (
	"context"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/results"
)

// A failed k6 runner ends the reads with an error that quotes k6, and the runs before it are
// kept in the document. Arm a's database is seeded; arm b's does not exist, so b's view
// scenario aborts in setup (its design document cannot be installed: 404). On real Apache
// CouchDB 3.4.3, the kit's single node. (cmd/couchbench's tests run Local through
// `couchbench run`: turns, repetitions, warm-up, thresholds.)
func TestLocalKeepsTheRunsBeforeAFailedRunnerOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	k6, err := FindK6(k6Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	spec := readsSpec(benchv1.ScenarioViewByKey)
	spec.QueryServers = []benchv1.QueryServer{{Name: "a", Language: "javascript"}, {Name: "b", Language: "javascript"}}
	spec.K6.Parallelism = 2
	missing := "cb-missing-" + couchdbtest.RandomID()
	// Run r1's one round has a go first, then b (internal/turns).
	doc := &results.Document{Benchmark: "local", RunID: "r1", Arms: []results.Arm{
		{QueryServer: "a", Profiles: []results.Profile{{Profile: "small", DB: db}}},
		{QueryServer: "b", Profiles: []results.Profile{{Profile: "small", DB: missing}}},
	}}
	local := Local{K6: k6, Bench: &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: *spec},
		Target: func(string) (string, couch.Credentials) { return srv.URL(), srv.Credentials() }, Log: io.Discard}
	err = local.Run(context.Background(), doc)
	if err == nil || !strings.Contains(err.Error(), "query server b, reads, repetition 1 of 1: k6 runner ") ||
		!strings.Contains(err.Error(), "installing _design/cb-viewreads: HTTP 404") {
		t.Fatalf("error %v: want b's runner failing, quoting k6", err)
	}
	if doc.Error != err.Error() || doc.Interrupted {
		t.Errorf("document error %q, interrupted %v", doc.Error, doc.Interrupted)
	}
	a, b := doc.Arms[0].Profiles[0].Reads, doc.Arms[1].Profiles[0].Reads
	if a == nil || len(a.Runners) != 2 || a.Runners[0].Requests+a.Runners[1].Requests != 30 || b != nil {
		t.Errorf("reads of a %+v, of b %+v: want a's run (30 requests by 2 runners) kept, none of b", a, b)
	}
	steps := map[string]string{}
	for _, rec := range doc.Steps {
		steps[rec.QueryServer] = rec.Error
	}
	if _, ran := steps["a"]; !ran || steps["a"] != "" || !strings.Contains(steps["b"], "HTTP 404") || len(steps) != 2 {
		t.Errorf("step records %q: want a's without an error, b's with it", steps)
	}
}
