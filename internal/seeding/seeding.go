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
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
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
	// (Concurrency+1) x MaxBatchBytes. A document larger than that goes alone.
	MaxBatchBytes int64
	Concurrency   int
	Retry         Backoff
}

// Backoff is the retry schedule for transient failures: Attempts tries in all, waiting
// Initial, then twice as long each time, at most Max.
type Backoff struct {
	Attempts int
	Initial  time.Duration
	Max      time.Duration
}

// DefaultBackoff rides out a node restart or a short overload: 12 tries, waiting 0.2 s
// doubling to 10 s, about 62 s in all. A restart of the node the client talks to takes
// longer than the 16 s the schedule used to allow (8 tries, at most 5 s apart): on real
// Apache CouchDB 3.4.3, a node kept down for 15 s (about a CouchDB pod's restart in
// Kubernetes) and then started (3-4 s) made a batch give up with "connection refused"
// (internal/runner's TestNodeStoppedMidSeedOnRealCouchDB).
var DefaultBackoff = Backoff{Attempts: 12, Initial: 200 * time.Millisecond, Max: 10 * time.Second}

// Do calls f until it succeeds, fails with an error that is not transient, or has been tried
// Attempts times, and returns how many times it was retried and f's last error.
func (b Backoff) Do(ctx context.Context, f func() error) (retries int64, err error) {
	wait := b.Initial
	for attempt := 1; ; attempt++ {
		err = f()
		if err == nil || !couch.Transient(err) || attempt >= b.Attempts {
			return retries, err
		}
		retries++
		select {
		case <-ctx.Done():
			return retries, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, b.Max)
	}
}

// Result is what a load did. Stored counts documents known to be in the database at the
// end: Created by this load plus AlreadyPresent (conflicts: written by an earlier attempt
// whose answer was lost, or before the load).
type Result struct {
	Stored         int64         `json:"stored"`
	Created        int64         `json:"created"`
	AlreadyPresent int64         `json:"alreadyPresent"`
	Failed         int64         `json:"failed"`
	FailedSamples  []string      `json:"failedSamples,omitempty"`
	Retries        int64         `json:"retries"`
	Bytes          int64         `json:"bytes"`
	Elapsed        time.Duration `json:"elapsedNs"`
	// StartedAt and FinishedAt bound the load, by the loader's clock.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Parts are the loads of the runners that shared the seeding, by part (Join); empty
	// when one runner loaded everything.
	Parts []Result `json:"parts,omitempty"`
	// StartSpread is how far apart the parts started (last start - first start): the
	// barrier's precision, already inside Elapsed.
	StartSpread time.Duration `json:"startSpreadNs,omitempty"`
}

// DocsPerSecond is documents stored per second of the load.
func (r Result) DocsPerSecond() float64 { return perSecond(float64(r.Stored), r.Elapsed) }

// MBPerSecond is megabytes (10^6) of document JSON stored per second.
func (r Result) MBPerSecond() float64 { return perSecond(float64(r.Bytes)/1e6, r.Elapsed) }

func perSecond(v float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return v / d.Seconds()
}

const maxFailedSamples = 5

// Load writes documents From..From+Documents-1 of gen. On a failure that retries cannot fix, or
// when ctx ends, it returns what was done so far with the error.
func Load(ctx context.Context, c *couch.Client, gen *dataset.Generator, opts Options) (Result, error) {
	if opts.BatchSize < 1 || opts.Concurrency < 1 {
		return Result{}, fmt.Errorf("seeding: batch size %d and concurrency %d must be positive", opts.BatchSize, opts.Concurrency)
	}
	var (
		mu    sync.Mutex
		total Result
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()

	batches := make(chan batch)
	go cut(ctx, gen, opts, batches)
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			for b := range batches {
				r, err := loadBatch(ctx, c, gen, opts, b)
				mu.Lock()
				total.add(r)
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

// Join is the seeding that parts loaded together, exactly: every document they stored over
// the time from the first part's start to the last part's end (so a part that started late or
// ran slow counts against the rate), with each part kept. Parts are in part order.
func Join(parts []Result) Result {
	var total Result
	var lastStart time.Time
	for i, p := range parts {
		total.add(p)
		if i == 0 || p.StartedAt.Before(total.StartedAt) {
			total.StartedAt = p.StartedAt
		}
		if p.StartedAt.After(lastStart) {
			lastStart = p.StartedAt
		}
		if p.FinishedAt.After(total.FinishedAt) {
			total.FinishedAt = p.FinishedAt
		}
	}
	total.Elapsed, total.StartSpread = total.FinishedAt.Sub(total.StartedAt), lastStart.Sub(total.StartedAt)
	total.Parts = parts
	return total
}

func (r *Result) add(o Result) {
	r.Stored += o.Stored
	r.Created += o.Created
	r.AlreadyPresent += o.AlreadyPresent
	r.Failed += o.Failed
	r.Retries += o.Retries
	r.Bytes += o.Bytes
	for _, s := range o.FailedSamples {
		if len(r.FailedSamples) < maxFailedSamples {
			r.FailedSamples = append(r.FailedSamples, s)
		}
	}
}

// batch is documents lo..hi-1, generated.
type batch struct {
	lo, hi int64
	docs   []json.RawMessage
	bytes  int64
}

// cut generates the documents in order and sends them in batches of at most BatchSize
// documents and MaxBatchBytes bytes; it closes out when done or when ctx ends. Unbuffered,
// out holds no batch that a worker has not taken.
func cut(ctx context.Context, gen *dataset.Generator, opts Options, out chan<- batch) {
	defer close(out)
	b := batch{lo: opts.From, hi: opts.From}
	send := func() bool {
		select {
		case out <- b:
			b = batch{lo: b.hi, hi: b.hi}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := opts.From; i < opts.From+opts.Documents; i++ {
		d := gen.JSON(i)
		// The request's size: the documents and a comma between each two.
		request := b.bytes + int64(len(b.docs)) + int64(len(d))
		if len(b.docs) > 0 && (len(b.docs) >= opts.BatchSize || (opts.MaxBatchBytes > 0 && request > opts.MaxBatchBytes)) {
			if !send() {
				return
			}
		}
		b.docs, b.bytes, b.hi = append(b.docs, d), b.bytes+int64(len(d)), i+1
	}
	if len(b.docs) > 0 {
		send()
	}
}

// loadBatch writes a batch, retrying transient failures.
func loadBatch(ctx context.Context, c *couch.Client, gen *dataset.Generator, opts Options, b batch) (Result, error) {
	lo, hi, docs, bytes := b.lo, b.hi, b.docs, b.bytes
	var r Result
	var results []couch.BulkResult
	retries, err := opts.Retry.Do(ctx, func() (err error) {
		results, err = c.BulkDocs(ctx, opts.DB, docs)
		return err
	})
	r.Retries = retries
	switch {
	case ctx.Err() != nil:
		return r, ctx.Err()
	case couch.Transient(err):
		return r, fmt.Errorf("documents %s-%s: gave up after %d attempts: %w", gen.ID(lo), gen.ID(hi-1), retries+1, err)
	case err != nil:
		return r, fmt.Errorf("documents %s-%s: %w", gen.ID(lo), gen.ID(hi-1), err)
	}
	r.count(results, docs)
	r.Bytes = bytes
	return r, nil
}

// count classifies per-document results.
func (r *Result) count(results []couch.BulkResult, docs []json.RawMessage) {
	for _, res := range results {
		switch res.Error {
		case "":
			r.Created++
		case "conflict":
			r.AlreadyPresent++
		default:
			r.Failed++
			if len(r.FailedSamples) < maxFailedSamples {
				r.FailedSamples = append(r.FailedSamples, fmt.Sprintf("%s: %s: %s", res.ID, res.Error, res.Reason))
			}
		}
	}
	// CouchDB answers one result per document; a short answer would hide documents.
	if missing := int64(len(docs) - len(results)); missing > 0 {
		r.Failed += missing
		if len(r.FailedSamples) < maxFailedSamples {
			r.FailedSamples = append(r.FailedSamples, fmt.Sprintf("%d documents without a result in the _bulk_docs answer", missing))
		}
	}
	r.Stored = r.Created + r.AlreadyPresent
}

// ErrIncomplete is returned (wrapped) when documents failed to store.
var ErrIncomplete = errors.New("not every document was stored")

// Check turns failed documents into an error that says how many and gives examples.
func (r Result) Check() error {
	if r.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d failed, for example %v", ErrIncomplete, r.Failed, r.FailedSamples)
}
