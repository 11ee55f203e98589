// Package serverload records CouchDB's own view of its load while a step runs: every node's
// /_node/{node}/_system, sampled in the background. A step measured while a node's schedulers
// were queued up, or while internal replication refilled a copy, is not a clean measurement,
// and the samples say so where the timings alone cannot.
package serverload

import (
	"context"
	"sync"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
)

// Interval is how often each node is asked: often enough to catch a burst of seconds, rarely
// enough to cost the server nothing measurable (one small answer per node and second).
const Interval = time.Second

// Node is one node's load over a step: the highest values seen, and the VM's work rate.
type Node struct {
	Node    string `json:"node"`
	Samples int    `json:"samples"`
	// FailedSamples counts polls without an answer (a node that was away).
	FailedSamples           int   `json:"failedSamples,omitempty"`
	MaxRunQueue             int   `json:"maxRunQueue"`
	MaxDirtyRunQueue        int   `json:"maxDirtyRunQueue"`
	MaxProcesses            int   `json:"maxProcesses"`
	MaxOSProcesses          int   `json:"maxOsProcesses"`
	MaxMemoryBytes          int64 `json:"maxMemoryBytes"`
	MaxInternalReplications int   `json:"maxInternalReplicationJobs"`
	// ReductionsPerSecond is the Erlang VM's work over the step, from the first answer to the
	// last (0 with fewer than two, or across a restart that reset the counter).
	ReductionsPerSecond float64 `json:"reductionsPerSecond"`
}

// Watcher samples the nodes until Stop.
type Watcher struct {
	c      *couch.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	nodes  []*nodeState
}

type nodeState struct {
	Node
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
		n := &nodeState{Node: Node{Node: name}}
		w.nodes = append(w.nodes, n)
		wg.Go(func() {
			for {
				s, err := c.System(ctx, name)
				if ctx.Err() != nil {
					return
				}
				w.mu.Lock()
				n.add(s, err, time.Now())
				w.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(interval):
				}
			}
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
func (w *Watcher) Stop() []Node {
	w.cancel()
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range w.nodes {
		wg.Go(func() {
			s, err := w.c.System(ctx, n.Node.Node)
			w.mu.Lock()
			n.add(s, err, time.Now())
			w.mu.Unlock()
		})
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Node
	for _, n := range w.nodes {
		if n.Samples > 0 {
			out = append(out, n.Node)
		}
	}
	return out
}
