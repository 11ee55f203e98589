package indexing

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/couchbench/couchbench/internal/couch"
)

// poller polls /_active_tasks in the background, every interval, and keeps every sample:
// the progress curve of a build.
type poller struct {
	c      *couch.Client
	mu     sync.Mutex
	origin time.Time
	sample []Sample
	cancel context.CancelFunc
	done   chan struct{}
}

// startPolling takes a first sample at once, before the build is triggered, so that a task
// already running shows.
func startPolling(ctx context.Context, c *couch.Client, interval time.Duration) *poller {
	loop, cancel := context.WithCancel(ctx)
	p := &poller{c: c, origin: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		// Not sliding: a poll is sent every interval, however long the last took to answer.
		wait.NonSlidingUntilWithContext(loop, func(ctx context.Context) { p.take(ctx) }, interval)
	}()
	return p
}

// take polls once and keeps the sample, dated when it was sent: what it shows was true by
// then at the latest. A poll cut short by ctx is not kept.
func (p *poller) take(ctx context.Context) {
	sent := time.Now()
	tasks, err := p.c.ActiveTasks(ctx)
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sample = append(p.sample, Sample{At: sent.Sub(p.origin), Tasks: tasks, Err: err})
}

// setOrigin makes sample times relative to the build's start.
func (p *poller) setOrigin(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.sample {
		p.sample[i].At -= t.Sub(p.origin)
	}
	p.origin = t
}

// stop ends polling once the build is over, takes a last sample, so that the curve ends
// after the build, and returns the samples.
func (p *poller) stop(ctx context.Context) []Sample {
	p.cancel()
	<-p.done
	p.take(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sample
}
