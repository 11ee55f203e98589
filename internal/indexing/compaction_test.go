package indexing

// Pausing view compaction on real Apache CouchDB 3.4.3 from the kit (internal/couchdbtest:
// the 3-node cluster, and the single node), through internal/couchfault's proxy where a
// node goes away: it answers one node's config requests with CouchDB's 500 badrpc, which
// CouchDB gives for a request it forwards to a node going away, or with an ordinary 500.
// Every test puts each node's settings back as they were, whatever the code under test did.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/retry"
)

// compactionSettings is each node's max_size of each view compaction channel ("" unset).
type compactionSettings map[[2]string]string

func readCompaction(t *testing.T, c *couch.Client, nodes []string) compactionSettings {
	t.Helper()
	out := compactionSettings{}
	for _, node := range nodes {
		for _, section := range viewCompactionChannels {
			v, _, err := c.Config(context.Background(), node, section, "max_size")
			if err != nil {
				t.Fatal(err)
			}
			out[[2]string{node, section}] = v
		}
	}
	return out
}

// paused is srv with a proxy in front of node 1, a client through it with waits w, and the
// compaction settings as they were, which the test's cleanup puts back.
func paused(t *testing.T, srv *couchdbtest.Server, w couch.Waits) (*couchfault.Proxy, *couch.Client, compactionSettings) {
	t.Helper()
	for _, section := range viewCompactionChannels {
		srv.KeepConfig(t, section, "max_size")
	}
	before := readCompaction(t, srv.Client(t, couch.Options{}), srv.Nodes)
	p, c := srv.Proxied(t, couch.Options{Waits: w})
	return p, c, before
}

// quickOutages are waits that ask again at once and give up after limit.
func quickOutages(limit time.Duration) couch.Waits {
	return couch.Waits{Outage: retry.Every(10*time.Millisecond, limit)}
}

// configOf is the path of a node's configuration requests.
func configOf(node string) string { return "/_node/" + node + "/_config/" }

func TestPauseViewCompactionRestoresEveryNodeOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	_, c, _ := paused(t, srv, couch.Waits{})
	ctx := context.Background()
	// One node has a value set before the pause; it must come back, the others be as before.
	if err := c.SetConfig(ctx, srv.Nodes[1], "smoosh.ratio_views", "max_size", "5000000"); err != nil {
		t.Fatal(err)
	}
	before, files := readCompaction(t, c, srv.Nodes), srv.LocalIni(t)
	restore, err := PauseViewCompaction(ctx, c, srv.Nodes, DefaultWaits)
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range readCompaction(t, c, srv.Nodes) {
		if v != pausedMaxSize {
			t.Errorf("%s [%s] max_size = %q during the pause, want %q", key[0], key[1], v, pausedMaxSize)
		}
	}
	unwritten(t, "during the pause", files, srv.LocalIni(t))
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	for key, v := range readCompaction(t, c, srv.Nodes) {
		if v != before[key] {
			t.Errorf("%s [%s] max_size = %q after restore, %q before", key[0], key[1], v, before[key])
		}
	}
	unwritten(t, "after the restore", files, srv.LocalIni(t))
}

// unwritten fails the test if a node's local.ini changed: the pause and its restore live in
// the nodes' memory, as CouchDB rewrites an ini file in place and a node stopped during that
// write would not start again.
func unwritten(t *testing.T, when string, before, now []string) {
	t.Helper()
	for i := range before {
		if now[i] != before[i] {
			t.Errorf("%s node %d's local.ini changed:\n%s\nwas:\n%s", when, i+1, now[i], before[i])
		}
	}
}

// Two runs pausing compaction on one server: the second must not save the first's pause as
// the server's setting, or compaction would stay paused after both.
func TestOverlappingPausesRestoreTheServerSettingOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	_, c, before := paused(t, srv, couch.Waits{})
	ctx := context.Background()
	restoreFirst, err := PauseViewCompaction(ctx, c, srv.Nodes, DefaultWaits)
	if err != nil {
		t.Fatal(err)
	}
	restoreSecond, err := PauseViewCompaction(ctx, c, srv.Nodes, DefaultWaits)
	if err != nil {
		t.Fatal(err)
	}
	if err := restoreFirst(); err != nil {
		t.Fatal(err)
	}
	if err := restoreSecond(); err != nil {
		t.Fatal(err)
	}
	for key, v := range readCompaction(t, c, srv.Nodes) {
		if v != before[key] {
			t.Errorf("[%s] max_size = %q after both runs restored, %q before", key[1], v, before[key])
		}
	}
}

// A node that answers 500 badrpc a few times, to the pause and to the restore, and then
// answers again: both go on with it.
func TestPauseViewCompactionRidesThroughANodeGoingAwayOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	p, c, before := paused(t, srv, quickOutages(time.Minute))
	ctx := context.Background()
	node2 := configOf(srv.Nodes[1])
	p.Fail(couchfault.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 3})
	restore, err := PauseViewCompaction(ctx, c, srv.Nodes, DefaultWaits)
	if err != nil {
		t.Fatalf("a node that answered badrpc 3 times: %v; want the pause to ride through", err)
	}
	// Both channels' max_size read and set, and the requests that failed.
	if n := p.Requests("", node2); n != 3+4 {
		t.Errorf("%d config requests to node2, want 7", n)
	}
	for key, v := range readCompaction(t, c, srv.Nodes) {
		if v != pausedMaxSize {
			t.Errorf("%s [%s] max_size = %q during the pause, want %q", key[0], key[1], v, pausedMaxSize)
		}
	}
	restoring := http.MethodDelete
	if before[[2]string{srv.Nodes[1], viewCompactionChannels[0]}] != "" {
		restoring = http.MethodPut
	}
	p.Fail(couchfault.Fault{Method: restoring, PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 2})
	if err := restore(); err != nil {
		t.Fatalf("a node that answered badrpc twice: %v; want the restore to ride through", err)
	}
	for key, v := range readCompaction(t, c, srv.Nodes) {
		if v != before[key] {
			t.Errorf("%s [%s] max_size = %q after restore, %q before", key[0], key[1], v, before[key])
		}
	}
}

// A node that answers badrpc for longer than the client's outage limit is a node lost: the
// pause fails with ErrNodeInterrupted naming it, and its restore puts back the node paused
// before. An ordinary 500 fails the pause at once, as the error it is.
func TestPauseViewCompactionGivesUpANodeThatStaysDownOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	p, c, before := paused(t, srv, quickOutages(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	node2 := configOf(srv.Nodes[1])
	p.Fail(couchfault.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	restore, err := PauseViewCompaction(ctx, c, srv.Nodes, DefaultWaits)
	if ctx.Err() != nil || !errors.Is(err, ErrNodeInterrupted) || !strings.Contains(err.Error(), "node "+srv.Nodes[1]+" did not answer") {
		t.Fatalf("a node that stays down: %v (context %v); want ErrNodeInterrupted naming %s", err, ctx.Err(), srv.Nodes[1])
	}
	if n := p.Requests("", node2); n < 2 {
		t.Errorf("node2 was asked %d times, want it asked again", n)
	}
	if err := restore(); err != nil {
		t.Errorf("restoring node1 only: %v", err)
	}
	for _, section := range viewCompactionChannels {
		key := [2]string{srv.Nodes[0], section}
		if v := readCompaction(t, srv.Client(t, couch.Options{}), srv.Nodes)[key]; v != before[key] {
			t.Errorf("node1 [%s] max_size = %q after its restore, %q before", section, v, before[key])
		}
	}

	p2, c2, _ := paused(t, srv, quickOutages(100*time.Millisecond))
	p2.Fail(couchfault.Fault{PathPrefix: node2, Status: http.StatusInternalServerError, Times: 1 << 20})
	restore, err = PauseViewCompaction(ctx, c2, srv.Nodes, DefaultWaits)
	if err == nil || errors.Is(err, ErrNodeInterrupted) || couch.StatusOf(err) != http.StatusInternalServerError {
		t.Fatalf("an ordinary 500: %v; want it, not ErrNodeInterrupted", err)
	}
	if n := p2.Requests("", node2); n != 1 {
		t.Errorf("node2 was asked %d times after an ordinary 500, want once", n)
	}
	if err := restore(); err != nil {
		t.Errorf("restoring node1 only: %v", err)
	}
}

// An interrupted run's restore, with node1 down past its whole budget: the other nodes are
// restored all the same, and the error names node1.
func TestRestoreOfOneNodeDownLeavesTheOthersRestoredOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	p, c, before := paused(t, srv, quickOutages(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	// Long enough for a busy machine's CouchDB to write the others' settings, short enough
	// that node1's outage uses it up.
	restore, err := PauseViewCompaction(ctx, c, srv.Nodes, Waits{Restore: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	p.Fail(couchfault.Fault{PathPrefix: configOf(srv.Nodes[0]), Status: http.StatusInternalServerError, Error: "badrpc", Times: 1 << 20})
	if err := restore(); err == nil || !strings.Contains(err.Error(), srv.Nodes[0]) || strings.Contains(err.Error(), srv.Nodes[1]) {
		t.Errorf("restore with node1 down: %v; want an error naming node1 only", err)
	}
	for key, v := range readCompaction(t, srv.Client(t, couch.Options{}), srv.Nodes[1:]) {
		if v != before[key] {
			t.Errorf("%s [%s] max_size = %q after the restore, %q before", key[0], key[1], v, before[key])
		}
	}
}
