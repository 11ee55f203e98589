package runner

// The probe against internal/couchtest, a test server (not CouchDB) on responses recorded
// from CouchDB 3.4.3, which injects the failures.

import (
	"context"
	"net/http"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/names"
)

// The probe's database has one copy, unusable while the node holding it is away: CouchDB
// answers 500 "No DB shards could be opened" (the e2e suite met it when a CouchDB pod was
// deleted during the probe). The probe starts over until the node is back, as seeding
// retries its batches.
func TestProbeRidesOutItsNodeBeingAway(t *testing.T) {
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	bench, err := benchspec.Parse([]byte(interruptBench))
	if err != nil {
		t.Fatal(err)
	}
	bulk := "/" + names.Database(bench.Name, "", "js", "probe") + "/_bulk_docs"
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 3, Status: http.StatusInternalServerError})
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	doc, err := Run(ctx, Config{Bench: bench, Client: c, Steps: []benchv1.Step{benchv1.StepSeed}})
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if rt := doc.Arms[0].Runtime; rt == nil || rt.Language != "javascript" || rt.Engine != "couchtest" {
		t.Errorf("runtime %+v, want what the probe view reported: couchtest runs no view code", rt)
	}
	if n := srv.Requests(http.MethodPost, bulk); n != 4 {
		t.Errorf("%d probe writes, want 3 refused and 1 that worked", n)
	}
}
