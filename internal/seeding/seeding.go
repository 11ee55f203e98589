// Package seeding loads a generated dataset into a CouchDB database with _bulk_docs.
//
// Documents have fixed ids, which is what makes retries safe: when a request fails without
// an answer (or with a 5xx) its documents may or may not have been written, and sending
// the same batch again either writes them or meets a per-document conflict, which means
// "already there". Nothing is ever written twice, and nothing is silently skipped.
package seeding

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/retry"
)

// Options say what to load and how.
type Options struct {
	DB string
	// From is the first document to load, and Documents how many: a runner that shares the
	// seeding with others loads its own slice (dataset.Slice).
	From      int64
	Documents int64
	BatchSize int
	// MaxBatchBytes bounds a request's documents in bytes (0: no bound), so that large
	// documents make smaller batches and the loader's memory stays near
	// Concurrency x MaxBatchBytes (docs/measurement.md). A document larger than that goes
	// alone.
	MaxBatchBytes int64
	Concurrency   int
	// Retry asks a batch again after a transient failure (couch.Transient).
	Retry retry.Policy
	// Stored, when set, counts the documents stored so far (created or already there) as
	// the batches are answered: a progress line reads it while the load runs.
	Stored *atomic.Int64
}

// DefaultRetry rides out a node restart or a short overload: 12 tries, waiting 0.2 s
// doubling to 10 s, about 62 s in all. A restart of the node the client talks to takes
// longer than the 16 s the schedule used to allow (8 tries, at most 5 s apart): on real
// Apache CouchDB 3.4.3, a node kept down for 15 s (about a CouchDB pod's restart in
// Kubernetes) and then started (3-4 s) made a batch give up with "connection refused"
// (internal/runner's TestNodeStoppedMidSeedOnRealCouchDB).
var DefaultRetry = retry.Doubling(200*time.Millisecond, 10*time.Second, 12)

// Load writes documents From..From+Documents-1 of gen. On a failure that retries cannot fix, or
// when ctx ends, it returns what was done so far with the error.
//
// Each worker generates the batch it sends next into a buffer of its own, reused from batch to
// batch: the documents exist only while their request is being made, and the load's memory is
// Concurrency batches of at most MaxBatchBytes, whatever the number or size of documents.
func Load(ctx context.Context, c *couch.Client, gen *dataset.Generator, opts Options) (measured.Seeding, error) {
	if opts.BatchSize < 1 || opts.Concurrency < 1 {
		return measured.Seeding{}, fmt.Errorf("seeding: batch size %d and concurrency %d must be positive", opts.BatchSize, opts.Concurrency)
	}
	var (
		mu    sync.Mutex
		total measured.Seeding
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()

	docs := newCutter(gen, opts)
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			var b batch
			for ctx.Err() == nil && docs.cut(&b) {
				r, err := loadBatch(ctx, c, gen, opts, &b)
				if opts.Stored != nil {
					opts.Stored.Add(r.Stored)
				}
				mu.Lock()
				total.Add(r)
				if err != nil && first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total.StartedAt, total.FinishedAt = start, time.Now()
	total.Elapsed = total.FinishedAt.Sub(start)
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return total, first
}

// batch is documents lo..hi-1, generated: their JSON back to back in buf, and docs the
// documents, slices of buf. A worker keeps one and cuts every batch it sends into it.
type batch struct {
	lo, hi int64
	buf    []byte
	docs   []json.RawMessage
	// ends are where the documents end in buf.
	ends []int
}

// add appends document i. The buffer grows by doubling up to bound (when there is one), so
// that it ends the size of the largest batch, after few copies.
func (b *batch) add(i int64, doc []byte, bound int64) {
	if need := len(b.buf) + len(doc); need > cap(b.buf) {
		size := 2 * cap(b.buf)
		if bound > 0 {
			size = min(size, int(bound))
		}
		grown := make([]byte, len(b.buf), max(need, size))
		copy(grown, b.buf)
		b.buf = grown
	}
	if len(b.ends) == 0 {
		b.lo = i
	}
	b.buf = append(b.buf, doc...)
	b.ends, b.hi = append(b.ends, len(b.buf)), i+1
}

// cutter hands out the documents in order, in batches of at most BatchSize documents and
// MaxBatchBytes bytes (a document larger than that goes alone). The workers take turns at it,
// each generating its next batch into its own.
type cutter struct {
	gen  *dataset.Generator
	opts Options

	mu sync.Mutex
	// next is the next document to hand out; doc is its JSON when pending: generated for a
	// batch it did not fit, it opens the next one.
	next    int64
	doc     []byte
	pending bool
}

func newCutter(gen *dataset.Generator, opts Options) *cutter {
	return &cutter{gen: gen, opts: opts, next: opts.From}
}

// cut generates the next batch into b, reusing b's memory; false when every document has
// been handed out.
func (c *cutter) cut(b *batch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.buf, b.docs, b.ends = b.buf[:0], b.docs[:0], b.ends[:0]
	for end := c.opts.From + c.opts.Documents; c.next < end && len(b.ends) < c.opts.BatchSize; c.next++ {
		if !c.pending {
			c.doc, c.pending = c.gen.AppendJSON(c.doc[:0], c.next), true
		}
		// The request's size: the documents and a comma between each two.
		request := int64(len(b.buf) + len(b.ends) + len(c.doc))
		if len(b.ends) > 0 && c.opts.MaxBatchBytes > 0 && request > c.opts.MaxBatchBytes {
			break
		}
		b.add(c.next, c.doc, c.opts.MaxBatchBytes)
		c.pending = false
	}
	start := 0
	for _, end := range b.ends {
		b.docs = append(b.docs, b.buf[start:end])
		start = end
	}
	return len(b.docs) > 0
}

// loadBatch writes a batch, retrying transient failures.
func loadBatch(ctx context.Context, c *couch.Client, gen *dataset.Generator, opts Options, b *batch) (measured.Seeding, error) {
	var r measured.Seeding
	var results []couch.BulkResult
	tries, _, err := opts.Retry.Do(ctx, couch.Transient, func() (err error) {
		results, err = c.BulkDocs(ctx, opts.DB, b.docs)
		return err
	})
	r.Retries = int64(tries - 1)
	switch {
	case ctx.Err() != nil:
		return r, ctx.Err()
	case couch.Transient(err):
		return r, fmt.Errorf("documents %s-%s: gave up after %d attempts: %w", gen.ID(b.lo), gen.ID(b.hi-1), tries, err)
	case err != nil:
		return r, fmt.Errorf("documents %s-%s: %w", gen.ID(b.lo), gen.ID(b.hi-1), err)
	}
	count(&r, results, b.docs)
	r.Bytes = int64(len(b.buf))
	return r, nil
}

// count classifies per-document results.
func count(r *measured.Seeding, results []couch.BulkResult, docs []json.RawMessage) {
	for _, res := range results {
		switch res.Error {
		case "":
			r.Created++
		case "conflict":
			r.AlreadyPresent++
		default:
			r.Fail(1, fmt.Sprintf("%s: %s: %s", res.ID, res.Error, res.Reason))
		}
	}
	// CouchDB answers one result per document; a short answer would hide documents.
	if missing := int64(len(docs) - len(results)); missing > 0 {
		r.Fail(missing, fmt.Sprintf("%d documents without a result in the _bulk_docs answer", missing))
	}
	r.Stored = r.Created + r.AlreadyPresent
}
