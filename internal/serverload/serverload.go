// Package serverload records CouchDB's own view of its load while a step runs: every node's
// /_node/{node}/_system, sampled in the background. A step measured while a node's schedulers
// were queued up, or while internal replication refilled a copy, is not a clean measurement,
// and the samples say so where the timings alone cannot.
package serverload

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/measured"
)

// Interval is how often each node is asked: often enough to catch a burst of seconds, rarely
// enough to cost the server nothing measurable (one small answer per node and second).
const Interval = time.Second

// Watcher samples the nodes until Stop.
type Watcher struct {
	c      *couch.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	nodes  []*nodeState
}

type nodeState struct {
	measured.NodeLoad
	first, last     couch.System
	firstAt, lastAt time.Time
}

// Watch starts sampling every interval, at once first. Each node is sampled on its own, so
// that a node slow to answer (one that is away makes CouchDB wait for it) delays no other.
func Watch(ctx context.Context, c *couch.Client, nodes []string, interval time.Duration) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{c: c, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, name := range nodes {
		n := &nodeState{NodeLoad: measured.NodeLoad{Node: name}}
		w.nodes = append(w.nodes, n)
		// Sliding: a node slow to answer is asked interval after its answer, not at once again.
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				s, err := c.System(ctx, name)
				if ctx.Err() != nil {
					return
				}
				w.mu.Lock()
				n.add(s, err, time.Now())
				w.mu.Unlock()
			}, interval)
		})
	}
	go func() {
		wg.Wait()
		close(w.done)
	}()
	return w
}

func (n *nodeState) add(s couch.System, err error, at time.Time) {
	if err != nil {
		n.FailedSamples++
		return
	}
	if n.Samples == 0 {
		n.first, n.firstAt = s, at
	}
	n.Samples++
	n.last, n.lastAt = s, at
	n.MaxRunQueue = max(n.MaxRunQueue, s.RunQueue)
	n.MaxDirtyRunQueue = max(n.MaxDirtyRunQueue, s.DirtyRunQueue)
	n.MaxProcesses = max(n.MaxProcesses, s.ProcessCount)
	n.MaxOSProcesses = max(n.MaxOSProcesses, s.OSProcCount)
	n.MaxMemoryBytes = max(n.MaxMemoryBytes, s.MemoryBytes())
	n.MaxInternalReplications = max(n.MaxInternalReplications, s.InternalReplicationJobs)
	if secs := n.lastAt.Sub(n.firstAt).Seconds(); secs > 0 && n.last.Reductions >= n.first.Reductions {
		n.ReductionsPerSecond = float64(n.last.Reductions-n.first.Reductions) / secs
	} else {
		n.ReductionsPerSecond = 0
	}
}

// Stop ends sampling with a last sample of every node, so that even a step shorter than the
// interval has its start and end, and returns each node's load; nodes that never answered
// are left out.
func (w *Watcher) Stop() []measured.NodeLoad {
	w.cancel()
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range w.nodes {
		wg.Go(func() {
			s, err := w.c.System(ctx, n.Node)
			w.mu.Lock()
			n.add(s, err, time.Now())
			w.mu.Unlock()
		})
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []measured.NodeLoad
	for _, n := range w.nodes {
		if n.Samples > 0 {
			out = append(out, n.NodeLoad)
		}
	}
	return out
}
