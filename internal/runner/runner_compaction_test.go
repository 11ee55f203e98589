package runner

// The index step's pause of view compaction (its hold) while a CouchDB node goes away, on
// real Apache CouchDB 3.4.3 (the kit's 3-node cluster, internal/couchdbtest) through
// internal/couchfault's proxy, which answers one node's config requests with CouchDB's 500
// badrpc, as CouchDB answers a request it forwards to a node going away.

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
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/retry"
)

// Node 2 answers badrpc for longer than the client's outage limit: the step's hold fails
// with the node-lost error naming it, which the runner reports as a node lost, and its undo
// restores the node that answered. (Riding through a shorter outage is internal/indexing's
// test.)
func TestViewCompactionPauseGivesUpOnANodeGoneOnRealCouchDB(t *testing.T) {
	cluster := couchdbtest.Cluster(t)
	for _, section := range []string{"smoosh.ratio_views", "smoosh.slack_views"} {
		cluster.KeepConfig(t, section, "max_size")
	}
	before := viewCompactionSettings(t, cluster)
	p, c := cluster.Proxied(t, couch.Options{Waits: couch.Waits{Outage: retry.Every(10*time.Millisecond, 100*time.Millisecond)}})
	bench, err := benchspec.Parse([]byte(jsBench("pause", "\n  workloads:\n    indexing: {}\n")))
	if err != nil {
		t.Fatal(err)
	}
	srv := &server{client: c, Provenance: results.Provenance{Nodes: cluster.Nodes}}
	hold := steps[benchv1.StepIndex].hold
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	node2 := cluster.Nodes[1]
	p.Fail(couchfault.Fault{Method: http.MethodPut, PathPrefix: "/_node/" + node2 + "/_config/", Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	undo, err := hold(ctx, &bench.Spec, srv)
	if ctx.Err() != nil || !errors.Is(err, indexing.ErrNodeInterrupted) || !strings.Contains(err.Error(), node2) {
		t.Fatalf("node2 answering badrpc for longer than the outage limit: %v (context %v); want ErrNodeInterrupted naming it", err, ctx.Err())
	}
	if err := undo(); err != nil {
		t.Errorf("undoing the pause of node1: %v", err)
	}
	if after := viewCompactionSettings(t, cluster); after != before {
		t.Errorf("node1's compaction settings %v after undo, %v before", after, before)
	}
}
