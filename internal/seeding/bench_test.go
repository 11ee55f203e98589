package seeding

// Seeding rate against the seed article's loader (one POST per document from a pool of 50
// workers), on the same server: real Apache CouchDB 3.4.3, the single node of the project's
// kit that `make bench` starts (internal/couchdbtest). The ratio says what _bulk_docs
// batching buys; the absolute rates are this machine's. `make bench` runs these.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/dataset"
)

const benchDocs = 5000

func benchClient(b *testing.B, conns int) (*couchdbtest.Server, *couch.Client) {
	b.Helper()
	srv := couchdbtest.Single(b)
	return srv, srv.Client(b, couch.Options{MaxConns: conns})
}

// freshDB is a new database (q=2, deleted when the benchmark ends).
func freshDB(b *testing.B, srv *couchdbtest.Server, i int) string {
	b.Helper()
	return srv.NewDB(b, fmt.Sprintf("%s-%d", b.Name(), i))
}

// BenchmarkSeedBulk is couchbench's seeding: _bulk_docs of 1000, 4 in flight.
func BenchmarkSeedBulk(b *testing.B) { seedBulk(b, benchv1.IDsSequential) }

// BenchmarkSeedBulkRandomIDs is the same with dataset.ids Random (seed 003: random ids make
// writes seek).
func BenchmarkSeedBulkRandomIDs(b *testing.B) { seedBulk(b, benchv1.IDsRandom) }

func seedBulk(b *testing.B, ids benchv1.DocumentIDs) {
	srv, c := benchClient(b, 8)
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	gen.IDs = ids
	var elapsed time.Duration
	for i := range b.N {
		db := freshDB(b, srv, i)
		res, err := Load(context.Background(), c, gen, Options{DB: db, Documents: benchDocs, BatchSize: 1000, Concurrency: 4, Retry: DefaultRetry})
		if err != nil || res.Stored != benchDocs {
			b.Fatalf("%+v %v", res, err)
		}
		elapsed += res.Elapsed
	}
	b.ReportMetric(float64(benchDocs*b.N)/elapsed.Seconds(), "docs/s")
}

// BenchmarkSeedNaive is the seed article's loader: one POST per document, 50 workers.
func BenchmarkSeedNaive(b *testing.B) {
	srv, c := benchClient(b, 50)
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	var elapsed time.Duration
	for i := range b.N {
		db := freshDB(b, srv, i)
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
