package indexing

import (
	"context"
	"sync"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
)

// poller polls /_active_tasks in the background and keeps every sample: every
// MinPollInterval at first, then every twentieth of the time since the origin, up to the
// given interval.
type poller struct {
	mu      sync.Mutex
	samples []Sample
	origin  time.Time
	// notify receives a value after each sample, for waitQuiet.
	notify chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// startPolling takes a first sample at once, then one per poll interval. The first sample
// comes before the build is triggered, so that a task already running shows.
func startPolling(ctx context.Context, c *couch.Client, interval time.Duration) *poller {
	ctx, cancel := context.WithCancel(ctx)
	p := &poller{origin: time.Now(), notify: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			sent := time.Now()
			tasks, err := c.ActiveTasks(ctx)
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			// The sample is dated when it was sent: what it shows was true by then at the
			// latest, which keeps BuildEnd an upper bound.
			at := sent.Sub(p.origin)
			p.samples = append(p.samples, Sample{At: at, Tasks: tasks, Err: err})
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(sent.Add(pollInterval(at, interval)))):
			}
		}
	}()
	return p
}

// setOrigin makes sample times relative to the build's trigger.
func (p *poller) setOrigin(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.samples {
		p.samples[i].At -= t.Sub(p.origin)
	}
	p.origin = t
}

// stop ends polling and returns the samples.
func (p *poller) stop() []Sample {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.samples
}

// waitQuiet waits until the last `quiet` successful samples taken from `since` on show no
// build task of the design document, then stops polling and returns all samples. It also
// returns when ctx ends.
func (p *poller) waitQuiet(ctx context.Context, db, ddocID string, quiet int, since time.Duration) []Sample {
	seen := 0
	for {
		p.mu.Lock()
		n := len(p.samples)
		if n > seen {
			seen = n
			if quietTail(p.samples, db, ddocID, quiet, since) {
				p.mu.Unlock()
				return p.stop()
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return p.stop()
		case <-p.done:
			return p.stop()
		case <-p.notify:
		}
	}
}

// quietTail reports whether the last `quiet` successful samples, all taken from `since`
// on, show no indexer task of the design document on the database.
func quietTail(samples []Sample, db, ddocID string, quiet int, since time.Duration) bool {
	count := 0
	for i := len(samples) - 1; i >= 0 && count < quiet; i-- {
		s := samples[i]
		if s.At < since {
			return false
		}
		if s.Err != nil {
			continue
		}
		for _, t := range s.Tasks {
			if t.Type == taskIndexer && t.DesignDocument == ddocID && isShardOf(t.Database, db) {
				return false
			}
		}
		count++
	}
	return count == quiet
}

// pollInterval is the wait after a poll taken `elapsed` after the origin: a twentieth of
// it, so that the end of a build is bracketed to within about 5% of its length, between
// MinPollInterval (or longest, if shorter) and longest.
func pollInterval(elapsed, longest time.Duration) time.Duration {
	return min(max(elapsed/20, min(MinPollInterval, longest)), longest)
}
