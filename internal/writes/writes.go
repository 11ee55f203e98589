// Package writes measures insert modes for a fixed time (seed 003): sequential _bulk_docs
// at several batch sizes, parallel _bulk_docs writers, single documents with batch=ok,
// and one serial single-document writer. Every mode writes into a fresh database of its
// own, so that one mode's data does not slow the next.
package writes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/progress"
	"github.com/couchbench/couchbench/internal/retry"
)

// batchOKSettle is how long a batch=ok mode waits after its last write before counting what
// landed: CouchDB answers batch=ok 202 before the document is on disk, and writes the
// batch within about a second.
const batchOKSettle = 1500 * time.Millisecond

// Options describe the writes of one arm.
type Options struct {
	// ProfileDB is the profile's database; each mode writes into one named after it
	// (names.WriteDatabase).
	ProfileDB string
	Shards    int
	Replicas  int
	Duration  time.Duration
	Generator *dataset.Generator
	// Part and Parts: this runner is part Part of Parts runners that share the writes
	// (Parts 0 or 1: alone). Each runs its share of every mode's clients (a mode of one
	// client is part 0's alone) with ids of its own, from a common start; part 0 makes each
	// mode's database, waits for the others to finish, and counts what landed.
	Part, Parts int
	// Barrier lets the parts start and end each mode together; nil when alone.
	Barrier func(ctx context.Context, db, name string, wait bool) error
	// Progress, when set, is told what this part wrote so far every ProgressInterval
	// (progress.Interval when 0) while a mode writes.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// Began and Ended, when set, bracket the mode's writing, for the server's CPU time over it:
	// from just before the first write to the count of what landed, after batch=ok's settle
	// (only part 0 counts: the other parts return before Ended).
	Began, Ended func()
}

// Progress is what a mode wrote so far: Acknowledged documents (201 and 202) and Errors in
// the Elapsed time of its Duration.
type Progress struct {
	Acknowledged, Errors int64
	Elapsed              time.Duration
}

// Round runs mode m once for the duration, writing a new database that is deleted after it.
// Round 0 is the warm-up; round r counts as repetition r-1.
func Round(ctx context.Context, c *couch.Client, m benchv1.WriteMode, opts Options, round int) (measured.Write, error) {
	name, which := strconv.Itoa(round-1), fmt.Sprintf("repetition %d", round)
	if round == 0 {
		name, which = "warm-up", "warm-up"
	}
	res, err := runMode(ctx, c, m, name, opts)
	if err != nil {
		return res, fmt.Errorf("writes %s, %s: %w", m.Name, which, err)
	}
	res.Repetition = max(round-1, 0)
	return res, nil
}

// runMode writes for the duration in mode m; a part that shares the writes returns its own
// share, and part 0 what landed of all of them (Stored).
func runMode(ctx context.Context, c *couch.Client, m benchv1.WriteMode, round string, opts Options) (measured.Write, error) {
	db := names.WriteDatabase(opts.ProfileDB, m.Name)
	parts := max(opts.Parts, 1)
	if opts.Part == 0 {
		if err := c.RecreateDB(ctx, db, opts.Shards, opts.Replicas); err != nil {
			return measured.Write{}, err
		}
	}
	barrier := fmt.Sprintf("writes-%s-%s", m.Name, round)
	if parts > 1 {
		if err := opts.Barrier(ctx, db, barrier, true); err != nil {
			return measured.Write{}, err
		}
	}
	res := measured.Write{Mode: m.Name}
	// The first parts take the clients that do not divide evenly: a mode of one client is
	// part 0's.
	clients := m.Clients / parts
	if opts.Part < m.Clients%parts {
		clients++
	}
	ids := &documents{part: int64(opts.Part), parts: int64(parts)}
	var created, accepted, failed atomic.Int64
	var firstErr error
	var once sync.Once
	if opts.Began != nil {
		opts.Began()
	}
	deadline := time.Now().Add(opts.Duration)
	start := time.Now()
	stopProgress := func() {}
	if opts.Progress != nil {
		stopProgress = progress.Every(opts.ProgressInterval, func() {
			opts.Progress(Progress{Acknowledged: created.Load() + accepted.Load(), Errors: failed.Load(), Elapsed: time.Since(start)})
		})
	}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				var w written
				if m.BatchSize > 0 {
					w = writeBulk(ctx, c, db, opts.Generator, ids, m.BatchSize)
				} else {
					w = writeOne(ctx, c, db, opts.Generator, ids, m.BatchOK)
				}
				created.Add(w.created)
				accepted.Add(w.accepted)
				failed.Add(w.failed)
				if w.err != nil && ctx.Err() == nil {
					once.Do(func() { firstErr = w.err })
				}
			}
		})
	}
	wg.Wait()
	stopProgress()
	res.StartedAt, res.FinishedAt = start, time.Now()
	res.Elapsed = res.FinishedAt.Sub(start)
	res.Created, res.Accepted, res.Errors = created.Load(), accepted.Load(), failed.Load()
	if parts > 1 {
		res.Clients = clients
		// Part 0 counts what landed once every part has written; the others go on.
		if err := opts.Barrier(ctx, db, barrier+"-done", opts.Part == 0); err != nil {
			return res, err
		}
		if opts.Part != 0 {
			return res, ctx.Err()
		}
	}
	if m.BatchOK {
		// Counted after an interrupt too, from what has landed by then.
		_ = retry.Sleep(ctx, batchOKSettle)
	}
	if opts.Ended != nil {
		opts.Ended()
	}
	if info, err := c.DBInfo(ctx, db); err == nil {
		res.Stored = info.DocCount
	}
	if _, err := c.DeleteDB(context.WithoutCancel(ctx), db); err != nil && firstErr == nil {
		firstErr = err
	}
	if res.Created+res.Accepted == 0 && firstErr != nil {
		return res, firstErr
	}
	return res, ctx.Err()
}

// written is what one request did; failed counts documents not acknowledged.
type written struct {
	created, accepted, failed int64
	err                       error
}

// documents hands out the dataset's documents to a part's clients: part p of n writes
// documents p, p+n, p+2n, ..., so that parts never write the same id.
type documents struct {
	taken       atomic.Int64
	part, parts int64
}

// take reserves count documents and returns the first; the k-th is index(first+k).
func (d *documents) take(count int64) int64 { return d.taken.Add(count) - count }

func (d *documents) index(k int64) int64 { return k*d.parts + d.part }

func writeBulk(ctx context.Context, c *couch.Client, db string, gen *dataset.Generator, ids *documents, size int) written {
	first := ids.take(int64(size))
	docs := make([]json.RawMessage, size)
	for i := range docs {
		docs[i] = gen.JSON(ids.index(first + int64(i)))
	}
	results, err := c.BulkDocs(ctx, db, docs)
	if err != nil {
		return written{failed: int64(size), err: err}
	}
	var w written
	for _, r := range results {
		if r.Error == "" {
			w.created++
		} else {
			w.failed++
		}
	}
	return w
}

func writeOne(ctx context.Context, c *couch.Client, db string, gen *dataset.Generator, ids *documents, batchOK bool) written {
	status, err := c.PostDoc(ctx, db, gen.JSON(ids.index(ids.take(1))), batchOK)
	switch {
	case err != nil:
		return written{failed: 1, err: err}
	case status == http.StatusAccepted:
		return written{accepted: 1}
	default:
		return written{created: 1}
	}
}
