package runner

// An interrupted run keeps what it measured. Served by internal/couchtest, a test server
// (not CouchDB) on responses recorded from CouchDB 3.4.3, slowed down by injected delays.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/results"
)

func TestInterruptedRunKeepsWhatWasMeasured(t *testing.T) {
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/cb-pouch-js-small/_bulk_docs", Times: 1000, Delay: 300 * time.Millisecond})
	bench, err := benchspec.Parse([]byte(pouchBench))
	if err != nil {
		t.Fatal(err)
	}
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(450*time.Millisecond, cancel) // as SIGTERM does through signal.NotifyContext
	doc, err := Run(ctx, Config{Bench: bench, Client: c, Steps: AllSteps})
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
	if seed == nil || seed.Stored == 0 || seed.Stored >= 1500 {
		t.Fatalf("seeding %+v; want the batches stored before the interrupt", seed)
	}
	var s results.Summary
	if err := json.Unmarshal(doc.Summary("run").Marshal(), &s); err != nil || !s.Interrupted || s.Error == "" {
		t.Errorf("summary %+v (%v): want interrupted with the error", s, err)
	}
}
