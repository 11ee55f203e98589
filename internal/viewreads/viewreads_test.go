package viewreads

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/dataset"
)

// These tests talk to the in-repo fake CouchDB (internal/couchtest), which evaluates the
// views by name: a short read is made by a document that is not there yet.

// shortByOne starts a fake server holding one document fewer than opts.Documents, with the
// views built, and returns a client and a function that stores the missing document.
func shortByOne(t *testing.T, opts Options) (*couch.Client, func()) {
	t.Helper()
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreateDB(ctx, opts.DB, 2, 0); err != nil {
		t.Fatal(err)
	}
	gen := dataset.New(3, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	batch := make([]json.RawMessage, opts.Documents-1)
	for i := range batch {
		batch[i] = gen.JSON(int64(i))
	}
	if _, err := c.BulkDocs(ctx, opts.DB, batch); err != nil {
		t.Fatal(err)
	}
	if err := Build(ctx, c, opts); err != nil {
		t.Fatal(err)
	}
	return c, func() {
		if _, err := c.BulkDocs(ctx, opts.DB, []json.RawMessage{gen.JSON(opts.Documents - 1)}); err != nil {
			t.Error(err)
		}
	}
}

func shortRetries(t *testing.T, limit time.Duration) {
	t.Helper()
	interval, was := couch.RetryInterval, couch.UnreachableLimit
	t.Cleanup(func() { couch.RetryInterval, couch.UnreachableLimit = interval, was })
	couch.RetryInterval, couch.UnreachableLimit = 10*time.Millisecond, limit
}

// On a database with copies, a read short of rows is made again until every row is there;
// only that read is timed.
func TestShortReadOfCopiesIsMadeAgain(t *testing.T) {
	shortRetries(t, time.Minute)
	opts := Options{DB: "db", Documents: 20, Replicas: 3, Language: "javascript"}
	c, refill := shortByOne(t, opts)
	refilled := make(chan time.Time, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		at := time.Now()
		refill()
		refilled <- at
	}()
	read, err := ReadOnce(context.Background(), c, opts, benchv1.ViewEmitDoc)
	if err != nil || read.Rows != opts.Documents {
		t.Fatalf("read %+v, %v; want the %d rows once the copy is refilled", read, err, opts.Documents)
	}
	// The timed read is the one after the refill, not the first short one.
	if at := <-refilled; read.StartedAt.Before(at) {
		t.Errorf("the timed read started at %v, before the copy was refilled at %v", read.StartedAt, at)
	}
}

// A copy that stays short fails the read after couch.UnreachableLimit, saying how often it
// was read; on one copy (n = 1) a short read fails at once, for nothing will fill it.
func TestShortReadFails(t *testing.T) {
	shortRetries(t, 100*time.Millisecond)
	for _, replicas := range []int{3, 1} {
		opts := Options{DB: "db", Documents: 20, Replicas: replicas, Language: "javascript"}
		c, _ := shortByOne(t, opts)
		_, err := ReadOnce(context.Background(), c, opts, benchv1.ViewEmitNull)
		if err == nil || !strings.Contains(err.Error(), "returned 19 rows, want 20") {
			t.Fatalf("n=%d: %v; want the short read told", replicas, err)
		}
		if again := strings.Contains(err.Error(), "times over"); again != (replicas > 1) {
			t.Errorf("n=%d: %v; read again: %v, want %v", replicas, err, again, replicas > 1)
		}
	}
}
