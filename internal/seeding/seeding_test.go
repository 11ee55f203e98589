package seeding

// Seeding against internal/couchtest, a test server (not CouchDB) built on responses
// recorded from CouchDB 3.4.3, with injected faults.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/measured"
)

var fast = Backoff{Attempts: 4, Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}

func setup(t *testing.T, password string, opts ...couchtest.Option) (*couchtest.Server, *couch.Client) {
	t.Helper()
	srv := couchtest.New(t, append([]couchtest.Option{couchtest.WithAdmin("admin", "pw")}, opts...)...)
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: password}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	if password == "pw" {
		if _, err := c.CreateDB(context.Background(), "db", 2, 1); err != nil {
			t.Fatal(err)
		}
	}
	return srv, c
}

func load(t *testing.T, c *couch.Client, n int64) (measured.Seeding, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	return Load(ctx, c, gen, Options{DB: "db", Documents: n, BatchSize: 100, Concurrency: 3, Retry: fast})
}

func TestLoadStoresEveryDocumentOnce(t *testing.T) {
	srv, c := setup(t, "pw")
	var stored atomic.Int64
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	res, err := Load(context.Background(), c, gen, Options{DB: "db", Documents: 1050, BatchSize: 100, Concurrency: 3, Retry: fast,
		Stored: &stored})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Load() != 1050 {
		t.Errorf("the progress counter ended at %d, want 1050", stored.Load())
	}
	if res.Stored != 1050 || res.Created != 1050 || res.Retries != 0 || res.Failed != 0 || res.Bytes == 0 {
		t.Errorf("result %+v", res)
	}
	if srv.DocCount("db") != 1050 {
		t.Errorf("server holds %d documents", srv.DocCount("db"))
	}
	if got := srv.Requests(http.MethodPost, "/db/_bulk_docs"); got != 11 {
		t.Errorf("%d _bulk_docs requests, want 11 batches of at most 100", got)
	}
}

// A connection dropped after the server wrote the batch: the retry meets conflicts, which
// count as already there; nothing is written twice, nothing is lost.
func TestDroppedConnectionAfterWriteIsNotDuplicated(t *testing.T) {
	srv, c := setup(t, "pw")
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 2, Drop: true, AfterWrite: true})
	res, err := load(t, c, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retries != 2 || res.AlreadyPresent != 200 || res.Created != 800 || res.Stored != 1000 {
		t.Errorf("result %+v; want 2 retries meeting 200 conflicts", res)
	}
	if srv.DocCount("db") != 1000 {
		t.Errorf("server holds %d documents, want 1000", srv.DocCount("db"))
	}
}

func TestServerErrorBurstIsRetried(t *testing.T) {
	srv, c := setup(t, "pw")
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 3, Status: http.StatusServiceUnavailable})
	res, err := load(t, c, 500)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retries != 3 || res.Created != 500 || srv.DocCount("db") != 500 {
		t.Errorf("result %+v, server %d documents", res, srv.DocCount("db"))
	}
}

func TestSlowAnswersStillComplete(t *testing.T) {
	srv, c := setup(t, "pw")
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 2, Delay: 300 * time.Millisecond})
	res, err := load(t, c, 400)
	if err != nil || res.Stored != 400 || res.Elapsed < 300*time.Millisecond {
		t.Errorf("result %+v, %v", res, err)
	}
}

func TestPersistentFailureGivesUpAndKeepsWhatWasDone(t *testing.T) {
	srv, c := setup(t, "pw")
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 1000, Status: http.StatusInternalServerError})
	res, err := load(t, c, 300)
	if err == nil || !strings.Contains(err.Error(), "gave up after 4 attempts") || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("error %v; want one that says it gave up and why", err)
	}
	if res.Retries < 3 {
		t.Errorf("result %+v", res)
	}
}

func TestWrongPasswordFailsAtOnce(t *testing.T) {
	srv, c := setup(t, "wrong")
	_, err := load(t, c, 300)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Name or password is incorrect.") {
		t.Fatalf("error %v; want the 401 with CouchDB's reason", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Error("the error repeats the password")
	}
	// 3 workers each tried their first batch once: no retries of a 401.
	if got := srv.Requests(http.MethodPost, "/db/_bulk_docs"); got > 3 {
		t.Errorf("%d _bulk_docs requests for a wrong password, want no retries", got)
	}
}

func TestTooLargeDocumentIsNotRetried(t *testing.T) {
	srv, c := setup(t, "pw", couchtest.WithMaxDocumentSize(50))
	_, err := load(t, c, 100)
	if err == nil || !strings.Contains(err.Error(), "413") || !strings.Contains(err.Error(), "document_too_large") {
		t.Fatalf("error %v; want CouchDB's 413 document_too_large", err)
	}
	if got := srv.Requests(http.MethodPost, "/db/_bulk_docs"); got != 1 {
		t.Errorf("%d requests; a 413 must not be retried", got)
	}
}

func TestInterruptKeepsTheCount(t *testing.T) {
	srv, c := setup(t, "pw")
	srv.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 1000, Delay: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	res, err := Load(ctx, c, gen, Options{DB: "db", Documents: 5000, BatchSize: 100, Concurrency: 2, Retry: fast})
	if err == nil {
		t.Fatal("an interrupted load reported success")
	}
	if res.Stored == 0 || res.Stored >= 5000 || res.Stored%100 != 0 {
		t.Errorf("stored %d before the interrupt; want some whole batches", res.Stored)
	}
	if int64(srv.DocCount("db")) < res.Stored {
		t.Errorf("server holds %d, the result claims %d", srv.DocCount("db"), res.Stored)
	}
}

// Batches are cut at BatchSize documents or MaxBatchBytes bytes, whichever comes first, in
// order and without gaps; a document larger than the bound goes alone.
func TestBatchesAreBoundedInBytes(t *testing.T) {
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentLarge, TargetBytes: ptr.To[int64](20000)})
	const docs, maxBytes = 300, 100000
	cutter := newCutter(gen, Options{Documents: docs, BatchSize: 50, MaxBatchBytes: maxBytes})
	var next int64
	var alone, batches int
	var b batch
	for cutter.cut(&b) {
		batches++
		request := int64(len(b.buf) + len(b.docs) - 1)
		switch {
		case b.lo != next || b.hi <= b.lo || int64(len(b.docs)) != b.hi-b.lo || len(b.docs) > 50:
			t.Fatalf("batch %d-%d of %d documents after %d", b.lo, b.hi, len(b.docs), next)
		case len(b.docs) == 1 && request > maxBytes:
			alone++
		case request > maxBytes:
			t.Errorf("batch %d-%d: %d bytes, above %d", b.lo, b.hi, request, maxBytes)
		}
		for k, d := range b.docs {
			if !bytes.Equal(d, gen.JSON(b.lo+int64(k))) {
				t.Fatalf("batch %d-%d: its document %d is not document %d", b.lo, b.hi, k, b.lo+int64(k))
			}
		}
		next = b.hi
	}
	if next != docs || batches < docs*20000/maxBytes {
		t.Errorf("%d documents in %d batches, want all %d in at least %d", next, batches, docs, docs*20000/maxBytes)
	}
	t.Logf("%d documents of about 20 kB: %d batches, %d documents larger than the bound alone", docs, batches, alone)

	_, c := setup(t, "pw")
	res, err := Load(context.Background(), c, gen, Options{DB: "db", Documents: docs, BatchSize: 50, MaxBatchBytes: maxBytes,
		Concurrency: 3, Retry: fast})
	if err != nil || res.Stored != docs {
		t.Errorf("load: %+v, %v; want all %d stored", res, err, docs)
	}
}

// Three loaders share a dataset, each its own slice: together they store every document once,
// and measured.JoinSeedings counts them over the first start to the last end.
func TestSlicesLoadedApartJoinExactly(t *testing.T) {
	srv, c := setup(t, "pw")
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	const documents, parts = 1000, 3
	var loads []measured.Seeding
	for part := range parts {
		from, count := dataset.Slice(documents, part, parts)
		r, err := Load(context.Background(), c, gen, Options{DB: "db", From: from, Documents: count, BatchSize: 64, Concurrency: 2, Retry: fast})
		if err != nil {
			t.Fatal(err)
		}
		loads = append(loads, r)
	}
	if n := srv.DocCount("db"); n != documents {
		t.Fatalf("the database holds %d documents, want %d", n, documents)
	}
	for i := range int64(documents) {
		if err := c.GetDoc(context.Background(), "db", dataset.ID(i), &struct{}{}); err != nil {
			t.Fatalf("document %s: %v", dataset.ID(i), err)
		}
	}
	total := measured.JoinSeedings(loads)
	if total.Stored != documents || total.Created != documents || len(total.Parts) != parts {
		t.Fatalf("joined %+v: want %d stored and created, %d parts", total, documents, parts)
	}
	// The loads ran one after the other: the joined time spans all three, from the first
	// start to the last end, and the second and third started that much later.
	if want := loads[2].FinishedAt.Sub(loads[0].StartedAt); total.Elapsed != want {
		t.Errorf("elapsed %s, want first start to last end %s", total.Elapsed, want)
	}
	if want := loads[2].StartedAt.Sub(loads[0].StartedAt); total.StartSpread != want || want <= 0 {
		t.Errorf("start spread %s, want %s", total.StartSpread, want)
	}
	if total.Elapsed < loads[0].Elapsed+loads[1].Elapsed+loads[2].Elapsed {
		t.Errorf("elapsed %s is shorter than the loads one after the other", total.Elapsed)
	}
}
