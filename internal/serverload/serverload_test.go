package serverload

// Against real Apache CouchDB 3.4.3: the 3-node cluster of the project's kit, which
// `make test` starts (internal/couchdbtest); the test fails without it.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// Every node of the cluster reports its load while documents are written; a node that is
// not in the cluster never answers and is left out.
func TestWatchRecordsEveryNodesLoadOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	c := srv.Client(t, couch.Options{MaxConns: 4})
	ctx := context.Background()
	db := "cb-serverload-" + couchdbtest.RandomID()
	srv.DeleteLater(t, db)
	if _, err := c.CreateDB(ctx, db, 2, 3); err != nil {
		t.Fatal(err)
	}
	w := Watch(ctx, c, append([]string{"nobody@nowhere"}, srv.Nodes...), 200*time.Millisecond)
	for i := range 20 {
		docs := make([]json.RawMessage, 100)
		for j := range docs {
			docs[j] = json.RawMessage(fmt.Sprintf(`{"_id":"%04d-%03d","n":%d}`, i, j, j))
		}
		if _, err := c.BulkDocs(ctx, db, docs); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	loads := w.Stop()
	if len(loads) != len(srv.Nodes) {
		t.Fatalf("%d nodes reported, want the cluster's %d (not the stranger): %+v", len(loads), len(srv.Nodes), loads)
	}
	for i, n := range loads {
		if n.Node != srv.Nodes[i] || n.Samples < 2 || n.MaxProcesses == 0 || n.MaxMemoryBytes == 0 || n.ReductionsPerSecond <= 0 {
			t.Errorf("node %s: %+v, want at least 2 samples, processes, memory and a positive reduction rate", srv.Nodes[i], n)
		}
	}
	t.Logf("load while writing 2,000 documents: %+v", loads)
}
