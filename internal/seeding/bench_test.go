package seeding

// Seeding rate against the seed article's loader (one POST per document from a pool of 50
// workers), on the same server: pouchdb-server, a CouchDB-compatible server from npm. The
// ratio says what _bulk_docs batching buys on that server; the absolute rates are
// pouchdb-server's, not CouchDB's. `make bench` runs these.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/pouchdbtest"
)

const benchDocs = 5000

func benchClient(b *testing.B, conns int) *couch.Client {
	b.Helper()
	url := pouchdbtest.Start(b)
	c, err := couch.New(url, couch.Credentials{Username: pouchdbtest.AdminUser, Password: pouchdbtest.AdminPassword}, couch.Options{MaxConns: conns})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func freshDB(b *testing.B, c *couch.Client, i int) string {
	b.Helper()
	db := fmt.Sprintf("bench%d", i)
	if _, err := c.CreateDB(context.Background(), db, 1, 1); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkSeedBulk is couchbench's seeding: _bulk_docs of 1000, 4 in flight.
func BenchmarkSeedBulk(b *testing.B) {
	c := benchClient(b, 8)
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	var elapsed time.Duration
	for i := range b.N {
		db := freshDB(b, c, i)
		res, err := Load(context.Background(), c, gen, Options{DB: db, Documents: benchDocs, BatchSize: 1000, Concurrency: 4, Retry: DefaultBackoff})
		if err != nil || res.Stored != benchDocs {
			b.Fatalf("%+v %v", res, err)
		}
		elapsed += res.Elapsed
	}
	b.ReportMetric(float64(benchDocs*b.N)/elapsed.Seconds(), "docs/s")
}

// BenchmarkSeedNaive is the seed article's loader: one POST per document, 50 workers.
func BenchmarkSeedNaive(b *testing.B) {
	c := benchClient(b, 50)
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	var elapsed time.Duration
	for i := range b.N {
		db := freshDB(b, c, i)
		var next, failed atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				for d := next.Add(1) - 1; d < benchDocs; d = next.Add(1) - 1 {
					if _, err := c.PostDoc(context.Background(), db, gen.JSON(d), false); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		if failed.Load() > 0 {
			b.Fatalf("%d documents failed", failed.Load())
		}
	}
	b.ReportMetric(float64(benchDocs*b.N)/elapsed.Seconds(), "docs/s")
}
