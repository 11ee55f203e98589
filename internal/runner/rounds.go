package runner

import (
	"context"
	"errors"
	"fmt"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/serverload"
)

// A step is cut into rounds: round 0 is the warm-up, when the workload asks for one, and
// rounds 1 to n its counted repetitions. Every arm of a runner shares one CouchDB, so the arms
// take turns round by round — A's first repetition, B's, A's second, B's — and a drift of
// the server or the machine during the step (caches warming, files growing, a neighbour
// starting) spreads over every arm instead of favouring the arm that ran first.

// stepWork is what a runner step does for an arm.
type stepWork struct {
	asked func(w benchv1.Workloads) bool
	// rounds are the step's first and last round: first is 0 when there is a warm-up.
	rounds func(spec *benchv1.CouchBenchmarkSpec) (first, last int)
	// begin readies an arm before its first round (checks and untimed setup); nil: nothing.
	begin func(a *armRun, ctx context.Context) error
	round func(a *armRun, ctx context.Context, round int) error
	// end completes an arm's results after its last round, or after an error; nil: nothing.
	end func(a *armRun)
	// hold sets the server up for the whole step and returns what undoes it; nil: nothing.
	hold func(ctx context.Context, cfg Config, nodes []string) (undo func() error, err error)
}

var steps = map[benchv1.Step]stepWork{
	benchv1.StepSeed: {
		asked: func(benchv1.Workloads) bool { return true },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(false, spec.Dataset.SeedRepetitions)
		},
		round: (*armRun).seed,
	},
	benchv1.StepIndex: {
		asked: func(w benchv1.Workloads) bool { return w.Indexing != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.Indexing.WarmUp, spec.Workloads.Indexing.Repetitions)
		},
		begin: (*armRun).indexBegin, round: (*armRun).indexRound, end: (*armRun).indexEnd,
		hold: pauseViewCompaction,
	},
	benchv1.StepViews: {
		asked: func(w benchv1.Workloads) bool { return w.ViewReads != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.ViewReads.WarmUp, spec.Workloads.ViewReads.Repetitions)
		},
		begin: (*armRun).viewsBegin, round: (*armRun).viewsRound,
	},
	benchv1.StepWrites: {
		asked: func(w benchv1.Workloads) bool { return w.Writes != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.Writes.WarmUp, spec.Workloads.Writes.Repetitions)
		},
		round: (*armRun).writesRound,
	},
}

// repetitions are the rounds of a workload with that many repetitions (at least one) and
// maybe a warm-up.
func repetitions(warmUp bool, n int32) (first, last int) {
	if warmUp {
		first = 0
	} else {
		first = 1
	}
	return first, int(max(n, 1))
}

// pauseViewCompaction stops CouchDB from compacting views during the builds, unless the spec
// allows it: the setting is the server's, so it is paused once for every arm.
func pauseViewCompaction(ctx context.Context, cfg Config, nodes []string) (func() error, error) {
	if cfg.Bench.Spec.Workloads.Indexing.ViewCompaction == benchv1.ViewCompactionAllowed {
		return func() error { return nil }, nil
	}
	return indexing.PauseViewCompaction(ctx, cfg.Client, nodes)
}

// turn accounts for one arm's share of a step: when it ran and what it cost the runner.
type turn struct {
	arm         *armRun
	first, last cpuuse.Reading
	// others are the other arms' turns while this one's step was under way, left out of its
	// CPU share like waits at barriers.
	others []cpuuse.Pause
	err    error
}

func (t *turn) started() bool { return !t.first.At.IsZero() }

// runStep runs one step for every arm, round by round, and records each arm's step in doc.
func runStep(ctx context.Context, cfg Config, nodes []string, step benchv1.Step, arms []*armRun, doc *results.Document) (err error) {
	work := steps[step]
	if work.hold != nil {
		undo, herr := work.hold(ctx, cfg, nodes)
		defer func() { err = errors.Join(err, undo()) }()
		if herr != nil {
			return herr
		}
	}
	// CouchDB's own view of its load meanwhile, watched by one part only (the others would
	// see the same); the arms share it, as they share the server.
	var watch *serverload.Watcher
	if cfg.Part == 0 {
		watch = serverload.Watch(ctx, cfg.Client, nodes, serverload.Interval)
	}
	turns := make([]*turn, len(arms))
	for i, a := range arms {
		a.pauses = nil
		turns[i] = &turn{arm: a}
	}
	defer func() {
		var load []serverload.Node
		if watch != nil {
			load = watch.Stop()
		}
		for _, t := range turns {
			if !t.started() {
				continue
			}
			if work.end != nil {
				work.end(t.arm)
			}
			doc.Steps = append(doc.Steps, t.record(step, load))
		}
	}()

	// take gives arm i its turn.
	take := func(i int, do func(a *armRun) error) error {
		t := turns[i]
		from := cpuuse.Read()
		if !t.started() {
			t.first = from
		}
		t.err = do(t.arm)
		t.last = cpuuse.Read()
		for j, other := range turns {
			if j != i && other.started() {
				other.others = append(other.others, cpuuse.Pause{From: from, To: t.last})
			}
		}
		if t.err != nil {
			return fmt.Errorf("query server %s: %w", t.arm.qs.Name, t.err)
		}
		return nil
	}
	for i := range arms {
		if work.begin == nil {
			break
		}
		if err := take(i, func(a *armRun) error { return work.begin(a, ctx) }); err != nil {
			return err
		}
	}
	first, last := work.rounds(&cfg.Bench.Spec)
	for round := first; round <= last; round++ {
		for i := range arms {
			if err := take(i, func(a *armRun) error { return work.round(a, ctx, round) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// record is the arm's step: from its first turn to the end of its last, its CPU share over its
// own turns only.
func (t *turn) record(step benchv1.Step, load []serverload.Node) results.StepRecord {
	var pauses []cpuuse.Pause
	for _, p := range append(t.others, t.arm.pauses...) {
		if !p.From.At.Before(t.first.At) && !p.To.At.After(t.last.At) {
			pauses = append(pauses, p)
		}
	}
	use := cpuuse.Between(t.first, t.last, pauses...)
	rec := results.StepRecord{
		QueryServer: t.arm.qs.Name, Step: step, StartedAt: t.first.At.UTC(), FinishedAt: t.last.At.UTC(),
		LoadGenerator: &use, CouchDBLoad: load,
	}
	if t.err != nil {
		rec.Error = t.err.Error()
	}
	return rec
}
