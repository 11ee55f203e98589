package runner

// The index step's pause of view compaction (its hold) while a CouchDB node goes away,
// against internal/couchtest (a test server, not CouchDB) answering one node's config
// requests with CouchDB's 500 badrpc, injected there.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
)

// The fake's node2 answers badrpc once, and the step's hold still pauses it; then it answers
// badrpc for longer than couch.UnreachableLimit, and the hold fails with the node-lost error
// naming it.
func TestViewCompactionPauseRidesThroughANodeGoingAway(t *testing.T) {
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12"}
	fake := couchtest.New(t, couchtest.WithAdmin("admin", "pw"), couchtest.WithNodes(nodes...))
	c, err := couch.New(fake.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bench, err := benchspec.Parse([]byte(jsBench("pause", "\n  workloads:\n    indexing: {}\n")))
	if err != nil {
		t.Fatal(err)
	}
	srv := &server{client: c, Provenance: results.Provenance{Nodes: nodes}}
	hold := steps[benchv1.StepIndex].hold
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node2 := "/_node/" + nodes[1] + "/_config/"

	fake.Fail(couchtest.Fault{Method: http.MethodPut, PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc"})
	undo, err := hold(ctx, &bench.Spec, srv)
	if err != nil {
		t.Fatalf("node2 answered badrpc once: %v; want the pause to ride through", err)
	}
	if v, ok := fake.Config(nodes[1], "smoosh.ratio_views", "max_size"); !ok || v != "1" {
		t.Errorf("node2 [smoosh.ratio_views] max_size = %q, %v; want the pause", v, ok)
	}
	if err := undo(); err != nil {
		t.Fatalf("undoing the pause: %v", err)
	}

	defer func(limit time.Duration) { couch.UnreachableLimit = limit }(couch.UnreachableLimit)
	couch.UnreachableLimit = 100 * time.Millisecond
	fake.Fail(couchtest.Fault{Method: http.MethodPut, PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	undo, err = hold(ctx, &bench.Spec, srv)
	if ctx.Err() != nil || !errors.Is(err, indexing.ErrNodeInterrupted) || !strings.Contains(err.Error(), nodes[1]) {
		t.Fatalf("node2 answering badrpc for longer than couch.UnreachableLimit: %v (context %v); want ErrNodeInterrupted naming it", err, ctx.Err())
	}
	if err := undo(); err != nil {
		t.Errorf("undoing the pause of node1: %v", err)
	}
}
