package runner

// An interrupted run keeps what it measured. Served by internal/couchtest, a test server
// (not CouchDB) on responses recorded from CouchDB 3.4.3: the interrupt must land while
// batches are in flight, which injected delays on _bulk_docs make certain (a real server
// would answer them in a time no test can rely on).

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
)

var interruptBench = jsBench("interrupt", `
  dataset:
    documents: 1500
    batchSize: 200
    concurrency: 3
  workloads:
    indexing: {}
`)

func TestInterruptedRunKeepsWhatWasMeasured(t *testing.T) {
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	// The first 3 batches (one per worker) are answered at once; every later one is held
	// until its client gives up, so the interrupt always finds 600 documents stored and
	// batches in flight, however slow the machine.
	const bulk = "/cb-interrupt-js-small/_bulk_docs"
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 3})
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 1000, Delay: time.Hour})
	bench, err := benchspec.Parse([]byte(interruptBench))
	if err != nil {
		t.Fatal(err)
	}
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupt (as SIGTERM does through signal.NotifyContext) once each worker has sent
		// its second batch: a worker sends the next batch only after it has counted the
		// answer to the last, so the 3 answered batches are counted, and the rest are held.
		for ctx.Err() == nil {
			if srv.Requests(http.MethodPost, bulk) >= 6 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	doc, err := Run(ctx, Config{Bench: bench, Client: c, Steps: benchv1.RunnerSteps})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !doc.Interrupted || doc.Error == "" || doc.FinishedAt.IsZero() {
		t.Errorf("document interrupted=%v error=%q finished=%v", doc.Interrupted, doc.Error, doc.FinishedAt)
	}
	if len(doc.Arms) != 1 || len(doc.Arms[0].Profiles) != 1 {
		t.Fatalf("arms %+v: want the interrupted profile recorded", doc.Arms)
	}
	seed := doc.Arms[0].Profiles[0].Seeding
	if seed == nil || seed.Stored != 600 || seed.Failed != 0 {
		t.Fatalf("seeding %+v; want the 600 documents stored before the interrupt", seed)
	}
}
