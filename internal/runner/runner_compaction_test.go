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

// The fake's node2 answers badrpc for longer than couch.UnreachableLimit: the step's hold
// fails with the node-lost error naming it, which the runner reports as a node lost, and its
// undo restores the node that answered. (Riding through a shorter outage is
// internal/indexing's test.)
func TestViewCompactionPauseGivesUpOnANodeGone(t *testing.T) {
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

	defer func(interval, limit time.Duration) {
		couch.RetryInterval, couch.UnreachableLimit = interval, limit
	}(couch.RetryInterval, couch.UnreachableLimit)
	couch.RetryInterval, couch.UnreachableLimit = 10*time.Millisecond, 100*time.Millisecond
	fake.Fail(couchtest.Fault{Method: http.MethodPut, PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	undo, err := hold(ctx, &bench.Spec, srv)
	if ctx.Err() != nil || !errors.Is(err, indexing.ErrNodeInterrupted) || !strings.Contains(err.Error(), nodes[1]) {
		t.Fatalf("node2 answering badrpc for longer than couch.UnreachableLimit: %v (context %v); want ErrNodeInterrupted naming it", err, ctx.Err())
	}
	if err := undo(); err != nil {
		t.Errorf("undoing the pause of node1: %v", err)
	}
	if _, ok := fake.Config(nodes[0], "smoosh.ratio_views", "max_size"); ok {
		t.Errorf("node1's pause left after undo")
	}
}
