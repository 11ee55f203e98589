package clustersetup

// These tests talk to real Apache CouchDB 3.4.3: the kit's 3-node cluster that
// hack/with-couchdb.sh starts (internal/couchdbtest); they fail without it. Its cluster is
// set up already, so they send no finish_cluster to the shared instance.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// A formed cluster of 3 is one at once: finish_cluster, once the cluster is set up, is not
// sent again, and the membership lists every node.
func TestWaitForAFormedCluster(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	c := srv.Client(t, couch.Options{})
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Wait(ctx, c, len(srv.Nodes), &log); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if want := "3 of 3 nodes joined"; !strings.Contains(log.String(), want) {
		t.Errorf("log %q does not say %q", log.String(), want)
	}
}

// A cluster with fewer nodes than asked for is not one: Wait asks again until its context
// ends and says how many joined.
func TestWaitForNodesThatNeverJoin(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	c := srv.Client(t, couch.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*Poll)
	defer cancel()
	var log strings.Builder
	err := Wait(ctx, c, 4, &log)
	if err == nil || !strings.Contains(err.Error(), "3 of 4 nodes joined") {
		t.Fatalf("Wait for 4 nodes on a cluster of 3 = %v; want it to say 3 of 4 joined", err)
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("log has %d lines for one state that did not change:\n%s", n, log.String())
	}
}
