package runner

// An interrupted run keeps what it measured, and says it was interrupted. Both tests talk to
// real Apache CouchDB 3.4.3 (the kit's single node). In the seeding test the interrupt must
// land while batches are in flight, which internal/couchfault's proxy makes certain by
// holding _bulk_docs requests (CouchDB answers them in a time no test can rely on). In the
// build test the interrupt lands once the build's indexer task shows, and a build of that
// many documents is still under way then.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/names"
)

var interruptBench = jsBench("interrupt", `
  dataset:
    documents: 1500
    batchSize: 200
    concurrency: 3
  workloads:
    indexing: {}
`)

func TestInterruptedRunKeepsWhatWasMeasuredOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	p, c := srv.Proxied(t, couch.Options{MaxConns: 4})
	runID := "int" + couchdbtest.RandomID()
	// The first 3 batches (one per worker) pass at once; every later one is held until its
	// client gives up, so the interrupt always finds 600 documents stored and batches in
	// flight, however slow the machine.
	bulk := "/" + names.Database("interrupt", runID, "js", "small") + "/_bulk_docs"
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 3})
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 1000, Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupt (as SIGTERM does through signal.NotifyContext) once each worker has sent
		// its second batch: a worker sends the next batch only after it has counted the
		// answer to the last, so the 3 answered batches are counted, and the rest are held.
		for ctx.Err() == nil {
			if p.Requests(http.MethodPost, bulk) >= 6 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	doc, log, err := realRunUntil(ctx, t, srv, interruptBench, Config{Client: c, RunID: runID})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled\n%s", err, log)
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

// testInterrupt is the cause a test interrupts a run with, as cmd/couchbench's signals are:
// a context.Canceled that says why.
type testInterrupt struct{}

func (testInterrupt) Error() string { return "interrupted by the test" }
func (testInterrupt) Unwrap() error { return context.Canceled }

// buildBench's build takes long enough that an interrupt lands while its copies build.
var buildBench = jsBench("interrupt", `
  dataset:
    documents: 20000
    batchSize: 1000
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 1
`)

// Ctrl-C during a build is reported as the interrupt it is, not as a node that stopped or
// restarted (the build's nodes could not be read with an ended context), keeps the seeding,
// and puts the compaction settings back.
func TestInterruptDuringABuildIsReportedAsOneOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	runID := "int" + couchdbtest.RandomID()
	db := names.Database("interrupt", runID, "js", "small")
	before := viewCompactionSettings(t, srv)
	observer := srv.Client(t, couch.Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	interrupted := make(chan bool, 1)
	go func() {
		for ctx.Err() == nil {
			if couchdbtest.IndexerRunning(observer, db) {
				cancel(testInterrupt{})
				interrupted <- true
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		interrupted <- false
	}()
	doc, log, err := realRunUntil(ctx, t, srv, buildBench, Config{RunID: runID})
	cancel(nil)
	if !<-interrupted {
		t.Fatalf("the build's indexer task never showed, so nothing was interrupted: %v\n%s", err, log)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, testInterrupt{}) || errors.Is(err, indexing.ErrNodeInterrupted) {
		t.Fatalf("error %v: want the interrupt, and not ErrNodeInterrupted", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "interrupted by the test; ") || !strings.Contains(msg, "the build was cut short") ||
		strings.Contains(msg, "restarted") || strings.Contains(msg, "how long it had been up") {
		t.Errorf("error %q: want the interrupt first, the build it cut short, and no node blamed", msg)
	}
	if !doc.Interrupted || doc.Error != msg {
		t.Errorf("document interrupted=%v error=%q: want interrupted, with the run's error", doc.Interrupted, doc.Error)
	}
	p := doc.Arms[0].Profiles[0]
	if p.Seeding == nil || p.Seeding.Stored != 20000 {
		t.Errorf("seeding %+v: the document must keep the seeding", p.Seeding)
	}
	if len(p.Indexing) != 1 || len(p.Indexing[0].Runs) != 0 {
		t.Errorf("indexing %+v: want the series, and no run from the build that was cut short", p.Indexing)
	}
	if after := viewCompactionSettings(t, srv); after != before {
		t.Errorf("compaction settings %v after the interrupt, %v before: the runner must restore them", after, before)
	}
	t.Logf("%v\n%s", err, log)
}

// The index step's wait for the dataset rides out requests that end without an answer, as
// those sent to a node that stopped do until Kubernetes calls it lost (its Service still
// routes to it): the wait looks again, and the step goes on once CouchDB answers.
func TestDatasetWaitRidesOutUnansweredRequestsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	p, c := srv.Proxied(t, couch.Options{MaxConns: 4})
	runID := "wait" + couchdbtest.RandomID()
	if _, log, err := realRun(t, srv, interruptBench, Config{Client: c, RunID: runID, Steps: []benchv1.Step{benchv1.StepSeed}}); err != nil {
		t.Fatalf("seed step: %v\n%s", err, log)
	}
	db := "/" + names.Database("interrupt", runID, "js", "small")
	// Go's transport asks a GET again once when a reused connection drops it: six drops leave
	// the wait at least three looks without an answer.
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: db, Times: 6, Drop: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	doc, log, err := realRunUntil(ctx, t, srv, interruptBench, Config{Client: c, RunID: runID, Steps: []benchv1.Step{benchv1.StepIndex}})
	if err != nil {
		t.Fatalf("index step after unanswered looks at the dataset: %v\n%s", err, log)
	}
	if p.Requests(http.MethodGet, db) < 7 {
		t.Errorf("%d requests to the database; want the six dropped and those after", p.Requests(http.MethodGet, db))
	}
	if len(doc.Arms) != 1 || len(doc.Arms[0].Profiles) != 1 || len(doc.Arms[0].Profiles[0].Indexing) == 0 {
		t.Errorf("arms %+v: want the index step's results", doc.Arms)
	}
}
