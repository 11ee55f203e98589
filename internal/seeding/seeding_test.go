package seeding

// Seeding against real Apache CouchDB 3.4.3, the kit's single node that `make test` starts
// (internal/couchdbtest), through internal/couchfault's proxy, which injects the faults: 5xx
// bursts, connections cut before and after CouchDB took a batch, answers held back. The
// conflicts a batch sent again meets, the 401 and the 413 are CouchDB's own.

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
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/retry"
)

var fast = retry.Doubling(10*time.Millisecond, 50*time.Millisecond, 4)

// setup is a database of this test on the single node, the proxy in front of the node and
// a client through it: of the node's admin, or with wrongPassword (when not empty) of a user
// of this test (couchdbtest.NewUser), since CouchDB locks out a user after 5 failed logins
// and a locked-out admin would fail every test after this one.
func setup(t *testing.T, wrongPassword string) (*couchfault.Proxy, *couch.Client, string) {
	t.Helper()
	srv := couchdbtest.Single(t)
	db := srv.NewDB(t, "")
	p, c := srv.Proxied(t, couch.Options{MaxConns: 4})
	if wrongPassword == "" {
		return p, c, db
	}
	name, _ := srv.NewUser(t)
	c, err := couch.New(p.URL, couch.Credentials{Username: name, Password: wrongPassword}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	return p, c, db
}

func load(t *testing.T, c *couch.Client, db string, n int64) (measured.Seeding, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	return Load(ctx, c, gen, Options{DB: db, Documents: n, BatchSize: 100, Concurrency: 3, Retry: fast})
}

// docCount is what CouchDB holds in db.
func docCount(t *testing.T, c *couch.Client, db string) int64 {
	t.Helper()
	info, err := c.DBInfo(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return info.DocCount
}

func TestLoadStoresEveryDocumentOnce(t *testing.T) {
	p, c, db := setup(t, "")
	var stored atomic.Int64
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	res, err := Load(context.Background(), c, gen, Options{DB: db, Documents: 1050, BatchSize: 100, Concurrency: 3, Retry: fast,
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
	if n := docCount(t, c, db); n != 1050 {
		t.Errorf("CouchDB holds %d documents", n)
	}
	if got := p.Requests(http.MethodPost, "/"+db+"/_bulk_docs"); got != 11 {
		t.Errorf("%d _bulk_docs requests, want 11 batches of at most 100", got)
	}
}

// A connection dropped after the server wrote the batch: the retry meets conflicts, which
// count as already there; nothing is written twice, nothing is lost.
func TestDroppedConnectionAfterWriteIsNotDuplicated(t *testing.T) {
	p, c, db := setup(t, "")
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Times: 2, Drop: true, AfterWrite: true})
	res, err := load(t, c, db, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retries != 2 || res.AlreadyPresent != 200 || res.Created != 800 || res.Stored != 1000 {
		t.Errorf("result %+v; want 2 retries meeting 200 conflicts", res)
	}
	if n := docCount(t, c, db); n != 1000 {
		t.Errorf("CouchDB holds %d documents, want 1000", n)
	}
}

func TestServerErrorBurstIsRetried(t *testing.T) {
	p, c, db := setup(t, "")
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Times: 3, Status: http.StatusServiceUnavailable})
	res, err := load(t, c, db, 500)
	if err != nil {
		t.Fatal(err)
	}
	if n := docCount(t, c, db); res.Retries != 3 || res.Created != 500 || n != 500 {
		t.Errorf("result %+v, CouchDB %d documents", res, n)
	}
}

func TestSlowAnswersStillComplete(t *testing.T) {
	p, c, db := setup(t, "")
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Times: 2, Delay: 300 * time.Millisecond})
	res, err := load(t, c, db, 400)
	if err != nil || res.Stored != 400 || res.Elapsed < 300*time.Millisecond {
		t.Errorf("result %+v, %v", res, err)
	}
}

func TestPersistentFailureGivesUpAndKeepsWhatWasDone(t *testing.T) {
	p, c, db := setup(t, "")
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Times: 1000, Status: http.StatusInternalServerError})
	res, err := load(t, c, db, 300)
	if err == nil || !strings.Contains(err.Error(), "gave up after 4 attempts") || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("error %v; want one that says it gave up and why", err)
	}
	if res.Retries < 3 {
		t.Errorf("result %+v", res)
	}
}

func TestWrongPasswordFailsAtOnce(t *testing.T) {
	wrong := "not-" + couchdbtest.RandomID()
	p, c, db := setup(t, wrong)
	_, err := load(t, c, db, 300)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Name or password is incorrect.") {
		t.Fatalf("error %v; want the 401 with CouchDB's reason", err)
	}
	if strings.Contains(err.Error(), wrong) {
		t.Error("the error repeats the password")
	}
	// 3 workers each tried their first batch once: no retries of a 401.
	if got := p.Requests(http.MethodPost, "/"+db+"/_bulk_docs"); got > 3 {
		t.Errorf("%d _bulk_docs requests for a wrong password, want no retries", got)
	}
}

func TestTooLargeDocumentIsNotRetried(t *testing.T) {
	p, c, db := setup(t, "")
	couchdbtest.Single(t).SetConfig(t, "couchdb", "max_document_size", "50")
	_, err := load(t, c, db, 100)
	if err == nil || !strings.Contains(err.Error(), "413") || !strings.Contains(err.Error(), "document_too_large") {
		t.Fatalf("error %v; want CouchDB's 413 document_too_large", err)
	}
	if got := p.Requests(http.MethodPost, "/"+db+"/_bulk_docs"); got != 1 {
		t.Errorf("%d requests; a 413 must not be retried", got)
	}
}

// An interrupt while batches are in flight: the load ends with what CouchDB had taken, in
// whole batches. The proxy lets the first 2 batches through and holds the rest, so the
// interrupt finds batches in flight however slow the machine.
func TestInterruptKeepsTheCount(t *testing.T) {
	p, c, db := setup(t, "")
	bulk := "/" + db + "/_bulk_docs"
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 2})
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Times: 1000, Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Each of the 2 workers has sent its second batch once 4 have come: the first 2 were
		// answered and counted.
		for ctx.Err() == nil && p.Requests(http.MethodPost, bulk) < 4 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	res, err := Load(ctx, c, gen, Options{DB: db, Documents: 5000, BatchSize: 100, Concurrency: 2, Retry: fast})
	if err == nil {
		t.Fatal("an interrupted load reported success")
	}
	if res.Stored != 200 {
		t.Errorf("stored %d before the interrupt; want the 2 batches CouchDB answered", res.Stored)
	}
	if n := docCount(t, c, db); n != res.Stored {
		t.Errorf("CouchDB holds %d, the result claims %d", n, res.Stored)
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

	_, c, db := setup(t, "")
	res, err := Load(context.Background(), c, gen, Options{DB: db, Documents: docs, BatchSize: 50, MaxBatchBytes: maxBytes,
		Concurrency: 3, Retry: fast})
	if err != nil || res.Stored != docs {
		t.Errorf("load: %+v, %v; want all %d stored", res, err, docs)
	}
}

// Three loaders share a dataset, each its own slice: together they store every document once,
// and measured.JoinSeedings counts them over the first start to the last end.
func TestSlicesLoadedApartJoinExactly(t *testing.T) {
	_, c, db := setup(t, "")
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	const documents, parts = 1000, 3
	var loads []measured.Seeding
	for part := range parts {
		from, count := dataset.Slice(documents, part, parts)
		r, err := Load(context.Background(), c, gen, Options{DB: db, From: from, Documents: count, BatchSize: 64, Concurrency: 2, Retry: fast})
		if err != nil {
			t.Fatal(err)
		}
		loads = append(loads, r)
	}
	if n := docCount(t, c, db); n != documents {
		t.Fatalf("the database holds %d documents, want %d", n, documents)
	}
	for i := range int64(documents) {
		if err := c.GetDoc(context.Background(), db, dataset.ID(i), &struct{}{}); err != nil {
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
