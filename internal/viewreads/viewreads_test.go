package viewreads

// Full view reads on real Apache CouchDB 3.4.3 from the project's kit (internal/couchdbtest):
// the 3-node cluster for a database with copies, the single node for one without. A short
// read, which a copy that lags behind gives (seen in the e2e suite), is not something the kit
// gives on demand: internal/couchfault's proxy makes one from CouchDB's own answer by taking
// its last row out.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/retry"
)

// readPause is how long the tests' reads wait before reading again.
const readPause = 200 * time.Millisecond

// seeded makes a database of this test on srv holding opts.Documents documents, builds the
// views, and returns a client through a proxy whose outage schedule reads again every
// readPause for up to limit; opts.DB and opts.Replicas are set.
func seeded(t *testing.T, srv *couchdbtest.Server, opts *Options, limit time.Duration) (*couchfault.Proxy, *couch.Client) {
	t.Helper()
	opts.DB, opts.Replicas = srv.NewDB(t, ""), srv.Replicas()
	p, c := srv.Proxied(t, couch.Options{Waits: couch.Waits{Outage: retry.Every(readPause, limit)}})
	ctx := context.Background()
	gen := dataset.New(3, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	batch := make([]json.RawMessage, opts.Documents)
	for i := range batch {
		batch[i] = gen.JSON(int64(i))
	}
	if _, err := c.BulkDocs(ctx, opts.DB, batch); err != nil {
		t.Fatal(err)
	}
	// A copy still behind would make a short read of its own.
	srv.WaitForEveryCopy(t, opts.DB, opts.Documents)
	if err := Build(ctx, c, *opts); err != nil {
		t.Fatal(err)
	}
	return p, c
}

// shortReads makes the next times reads of the views one row short.
func shortReads(p *couchfault.Proxy, db string, times int) {
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/" + db + "/" + names.ViewReadsDesignDoc + "/_view/", Times: times, DropRows: 1})
}

// On a database with copies, a read short of rows is made again until every row is there;
// only that read is timed.
func TestShortReadOfCopiesIsMadeAgainOnRealCouchDB(t *testing.T) {
	opts := Options{Documents: 20, Language: "javascript"}
	p, c := seeded(t, couchdbtest.Cluster(t), &opts, time.Minute)
	shortReads(p, opts.DB, 2)
	views := "/" + opts.DB + "/" + names.ViewReadsDesignDoc + "/_view/"
	built := p.Requests(http.MethodGet, views)
	called := time.Now()
	read, err := ReadOnce(context.Background(), c, opts, benchv1.ViewEmitDoc)
	if err != nil || read.Rows != opts.Documents {
		t.Fatalf("read %+v, %v; want the %d rows once the copy is complete", read, err, opts.Documents)
	}
	// The timed read is the third, which cannot start before two pauses have passed.
	if started := read.StartedAt.Sub(called); started < 2*readPause {
		t.Errorf("the timed read started %v after the call, before two short reads and their pauses (%v)", started, 2*readPause)
	}
	if n := p.Requests(http.MethodGet, views) - built; n != 3 {
		t.Errorf("%d reads, want 2 short and 1 full", n)
	}
}

// A copy that stays short fails the read after the client's outage limit, saying how often
// it was read; on one copy (n = 1) a short read fails at once, for nothing will fill it.
func TestShortReadFailsOnRealCouchDB(t *testing.T) {
	for _, srv := range []*couchdbtest.Server{couchdbtest.Cluster(t), couchdbtest.Single(t)} {
		opts := Options{Documents: 20, Language: "javascript"}
		p, c := seeded(t, srv, &opts, time.Second)
		shortReads(p, opts.DB, 1<<20)
		_, err := ReadOnce(context.Background(), c, opts, benchv1.ViewEmitNull)
		if err == nil || !strings.Contains(err.Error(), "returned 19 rows, want 20") {
			t.Fatalf("n=%d: %v; want the short read told", opts.Replicas, err)
		}
		if again := strings.Contains(err.Error(), "times over"); again != (opts.Replicas > 1) {
			t.Errorf("n=%d: %v; read again: %v, want %v", opts.Replicas, err, again, opts.Replicas > 1)
		}
	}
}
