package indexing

// Pausing view compaction while a node stops, against internal/couchtest (a test server, not
// CouchDB) answering the config requests to one node with errors injected there: CouchDB's
// 500 badrpc for a request it forwards to a node going away, or an ordinary 500.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
)

// quickOutages makes askThroughOutage ask again at once and give up after limit.
func quickOutages(t *testing.T, limit time.Duration) {
	t.Helper()
	interval, unreachable := couch.RetryInterval, couch.UnreachableLimit
	t.Cleanup(func() { couch.RetryInterval, couch.UnreachableLimit = interval, unreachable })
	couch.RetryInterval, couch.UnreachableLimit = 10*time.Millisecond, limit
}

// A node that answers 500 badrpc a few times, to the pause and to the restore, and then
// answers again: both go on with it.
func TestPauseViewCompactionRidesThroughANodeGoingAway(t *testing.T) {
	quickOutages(t, time.Minute)
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12"}
	srv, c, _ := seeded(t, couchtest.WithNodes(nodes...))
	ctx := context.Background()
	node2 := "/_node/" + nodes[1] + "/_config/"
	srv.Fail(couchtest.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 3})
	restore, err := PauseViewCompaction(ctx, c, nodes)
	if err != nil {
		t.Fatalf("a node that answered badrpc 3 times: %v; want the pause to ride through", err)
	}
	// Both channels' max_size read and set, and the requests that failed.
	if n := srv.Requests("", node2); n != 3+4 {
		t.Errorf("%d config requests to node2, want 7", n)
	}
	for _, section := range viewCompactionChannels {
		if v, ok := srv.Config(nodes[1], section, "max_size"); !ok || v != pausedMaxSize {
			t.Errorf("node2 [%s] max_size = %q, %v during the pause", section, v, ok)
		}
	}
	srv.Fail(couchtest.Fault{Method: http.MethodDelete, PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 2})
	if err := restore(); err != nil {
		t.Fatalf("a node that answered badrpc twice: %v; want the restore to ride through", err)
	}
	for _, section := range viewCompactionChannels {
		if v, ok := srv.Config(nodes[1], section, "max_size"); ok {
			t.Errorf("node2 [%s] max_size = %q after restore; want unset", section, v)
		}
	}
}

// A node that answers badrpc for longer than couch.UnreachableLimit is a node lost: the
// pause fails with ErrNodeInterrupted naming it. An ordinary 500 fails it at once, as the
// error it is.
func TestPauseViewCompactionGivesUpANodeThatStaysDown(t *testing.T) {
	quickOutages(t, 100*time.Millisecond)
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12"}
	srv, c, _ := seeded(t, couchtest.WithNodes(nodes...))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node2 := "/_node/" + nodes[1] + "/_config/"
	srv.Fail(couchtest.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	restore, err := PauseViewCompaction(ctx, c, nodes)
	if ctx.Err() != nil || !errors.Is(err, ErrNodeInterrupted) || !strings.Contains(err.Error(), "node "+nodes[1]+" did not answer") {
		t.Fatalf("a node that stays down: %v (context %v); want ErrNodeInterrupted naming %s", err, ctx.Err(), nodes[1])
	}
	if n := srv.Requests("", node2); n < 2 {
		t.Errorf("node2 was asked %d times, want it asked again", n)
	}
	if err := restore(); err != nil {
		t.Errorf("restoring node1 only: %v", err)
	}

	srv2, c2, _ := seeded(t, couchtest.WithNodes(nodes...))
	srv2.Fail(couchtest.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Times: 1 << 20})
	_, err = PauseViewCompaction(ctx, c2, nodes)
	if err == nil || errors.Is(err, ErrNodeInterrupted) || couch.StatusOf(err) != http.StatusInternalServerError {
		t.Fatalf("an ordinary 500: %v; want it, not ErrNodeInterrupted", err)
	}
	if n := srv2.Requests("", node2); n != 1 {
		t.Errorf("node2 was asked %d times after an ordinary 500, want once", n)
	}
}

// An interrupted run's restore, with node1 down past its whole budget: node2 is restored all
// the same, and the error names node1.
func TestRestoreOfOneNodeDownLeavesTheOthersRestored(t *testing.T) {
	quickOutages(t, time.Minute)
	defer func(d time.Duration) { restoreTimeout = d }(restoreTimeout)
	restoreTimeout = 300 * time.Millisecond
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12"}
	srv, c, _ := seeded(t, couchtest.WithNodes(nodes...))
	ctx, cancel := context.WithCancel(context.Background())
	restore, err := PauseViewCompaction(ctx, c, nodes)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	srv.Fail(couchtest.Fault{PathPrefix: "/_node/" + nodes[0] + "/_config/", Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	if err := restore(); err == nil || !strings.Contains(err.Error(), nodes[0]) || strings.Contains(err.Error(), nodes[1]) {
		t.Errorf("restore with node1 down: %v; want an error naming node1 only", err)
	}
	for _, section := range viewCompactionChannels {
		if v, ok := srv.Config(nodes[1], section, "max_size"); ok {
			t.Errorf("node2 [%s] max_size = %q after the restore; want it restored (unset)", section, v)
		}
	}
}
