// Package readscpu reads what an arm's CouchDB spends on one round of the k6 read load. The
// k6 runners are not the runner: they hold no meter, and the script's own time is not the
// server's. So a meter takes part in the round as one more part of its start barrier (the
// last; the runners wait for it, as for each other), takes its first reading as the barrier
// lets the parts go, and its second once every runner has arrived at the round's end
// barrier, which the script's teardown does when its load has ended (internal/barrier's
// MeteredSpec). The reading spans the load, the barrier's poll interval either side of it.
// A round's barriers are its own: they live in the arm's read database, which the run's
// seeding made, and their names carry the round.
package readscpu

import (
	"context"
	"fmt"
	"time"

	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/results"
)

// Round is one round of an arm's read load, as its meter takes part in it.
type Round struct {
	Client *couch.Client
	// DB is the read database, which holds the barriers' local documents.
	DB string
	// Barrier names the round's start barrier (the runners' COUCHBENCH_BARRIER).
	Barrier string
	Runners int
	// Start bounds the wait for the runners at the start barrier (0: barrier's default);
	// End the wait for their ends, which must outlast the load.
	Start, End time.Duration
}

// EndPoll is how often the meter looks for the runners' ends. Its polls, and the server's
// time after the load until the next one, fall within the reading: a poll every half second
// is two requests a second beside the load, and at most half a second of an idle server.
const EndPoll = 500 * time.Millisecond

// Measure takes the meter's part in the round and returns what the server spent from the
// load's start to its end.
func (r Round) Measure(ctx context.Context, m cpucost.Meter) (cpucost.Spent, error) {
	b := r.barrier()
	b.Timeout = r.Start
	if _, err := b.Wait(ctx, r.Barrier); err != nil {
		return cpucost.Spent{}, fmt.Errorf("waiting for the k6 runners at the start: %w", err)
	}
	from, err := m.Read()
	if err != nil {
		return cpucost.Spent{}, fmt.Errorf("reading the server's CPU time as the load began: %w", err)
	}
	if err := r.waitEnds(ctx, b); err != nil {
		return cpucost.Spent{}, err
	}
	to, err := m.Read()
	if err != nil {
		return cpucost.Spent{}, fmt.Errorf("reading the server's CPU time as the load ended: %w", err)
	}
	return cpucost.Between(from, to), nil
}

// Reading is what a round's results keep of a measurement: the CPU time and its span, or
// why there is none.
func Reading(spent cpucost.Spent, err error) results.ReadsCPU {
	if err != nil {
		return results.ReadsCPU{Error: err.Error()}
	}
	return results.ReadsCPU{CPUSeconds: spent.CPU.Seconds(), WallSeconds: spent.Wall.Seconds()}
}

// Skip takes the meter's part in the round without reading, for a meter that cannot read:
// the runners, which wait for it at the start, go on.
func (r Round) Skip(ctx context.Context) error {
	b := r.barrier()
	b.Timeout = r.Start
	return b.Arrive(ctx, r.Barrier)
}

// barrier is the meter's part of the round's barriers: the last.
func (r Round) barrier() barrier.Barrier {
	return barrier.Barrier{Client: r.Client, DB: r.DB, Part: r.Runners, Parts: r.Runners + 1}
}

// waitEnds waits at the end barrier for every runner, at most End. Whoever sees the runners
// gone (the operator their Jobs, couchbench run its k6 processes) ends a wait for ends that
// none of them will mark (a teardown that could not write).
func (r Round) waitEnds(ctx context.Context, b barrier.Barrier) error {
	b.Timeout, b.Poll = r.End, EndPoll
	if _, err := b.Wait(ctx, barrier.EndOf(r.Barrier)); err != nil {
		return fmt.Errorf("waiting for the k6 runners' ends: %w", err)
	}
	return nil
}
