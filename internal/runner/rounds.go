package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/serverload"
	"github.com/couchbench/couchbench/internal/turns"
)

// A step is cut into rounds: round 0 is the warm-up, when the workload asks for one, and
// rounds 1 to n its counted repetitions; a round is cut into units, one measurement each (a
// build of one reducer on one profile, a read of one view). The arms of a runner take turns
// unit by unit, in a fresh random order every round (internal/turns: A B, then B A, ...): a
// drift of the server or the machine during the step (caches warming, files growing, a
// neighbour starting) spreads over every arm instead of favouring one, and each unit's
// turns, back to back, make a pair (or a set) whose ratio the drift largely cancels from. Arms that share
// a CouchDB take turns on it; arms with CouchDBs of their own take turns too, so that only
// one of them is busy at a time.
//
// In duet (spec.armOrder Duet) the arms, each on a CouchDB of its own, take each unit at the
// same moment instead: a neighbour that comes for a few seconds then meets both arms' units,
// where taking turns it lands on one. The runner's own CPU is then spent on every arm at
// once and cannot be cut into turns: each arm's record carries the step's whole share.

// stepWork is what a runner step does for an arm.
type stepWork struct {
	asked func(w benchv1.Workloads) bool
	// rounds are the step's first and last round: first is 0 when there is a warm-up.
	rounds func(spec *benchv1.CouchBenchmarkSpec) (first, last int)
	// begin readies an arm before its first round (checks and untimed setup); nil: nothing.
	begin func(a *armRun, ctx context.Context) error
	// units are how many measurements an arm takes in a round (a build per profile and
	// reducer, say), and round takes one of them: the arms take their turns unit by unit,
	// so that the measurements paired across arms are taken back to back.
	units func(a *armRun) int
	round func(a *armRun, ctx context.Context, round, unit int) error
	// end completes an arm's results after its last round, or after an error; nil: nothing.
	end func(a *armRun)
	// hold sets a server up for the whole step and returns what undoes it; nil: nothing.
	hold func(ctx context.Context, spec *benchv1.CouchBenchmarkSpec, srv *server) (undo func() error, err error)
}

var steps = map[benchv1.Step]stepWork{
	benchv1.StepSeed: {
		asked: func(benchv1.Workloads) bool { return true },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(false, spec.Dataset.SeedRepetitions)
		},
		units: (*armRun).seedUnits, round: (*armRun).seed,
	},
	benchv1.StepIndex: {
		asked: func(w benchv1.Workloads) bool { return w.Indexing != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.Indexing.WarmUp, spec.Workloads.Indexing.Repetitions)
		},
		begin: (*armRun).indexBegin, units: (*armRun).indexUnits, round: (*armRun).indexRound, end: (*armRun).indexEnd,
		hold: pauseViewCompaction,
	},
	benchv1.StepViews: {
		asked: func(w benchv1.Workloads) bool { return w.ViewReads != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.ViewReads.WarmUp, spec.Workloads.ViewReads.Repetitions)
		},
		begin: (*armRun).viewsBegin, units: (*armRun).viewUnits, round: (*armRun).viewsRound,
	},
	benchv1.StepWrites: {
		asked: func(w benchv1.Workloads) bool { return w.Writes != nil },
		rounds: func(spec *benchv1.CouchBenchmarkSpec) (int, int) {
			return repetitions(spec.Workloads.Writes.WarmUp, spec.Workloads.Writes.Repetitions)
		},
		units: (*armRun).writeUnits, round: (*armRun).writesRound,
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

// roundName names a round in progress lines: "warm-up" for round 0, else "run 2 of 5" (word
// "run"), counting the n measured rounds only, or "run 7" when rounds go on until decided
// (n 0).
func roundName(word string, round int, n int32) string {
	switch {
	case round == 0:
		return "warm-up"
	case n == 0:
		return fmt.Sprintf("%s %d", word, round)
	}
	return fmt.Sprintf("%s %d of %d", word, round, n)
}

// countedRounds is the n of a step's roundName: its repetitions, or 0 when it adds rounds
// until decided.
func (a *armRun) countedRounds(repetitions int32) int32 {
	if a.untilDecided {
		return 0
	}
	return max(repetitions, 1)
}

// pauseViewCompaction stops CouchDB from compacting views during the builds, unless the spec
// allows it: the setting is the server's, so it is paused once for every arm on it.
func pauseViewCompaction(ctx context.Context, spec *benchv1.CouchBenchmarkSpec, srv *server) (func() error, error) {
	if spec.Workloads.Indexing.ViewCompaction == benchv1.ViewCompactionAllowed {
		return func() error { return nil }, nil
	}
	return indexing.PauseViewCompaction(ctx, srv.client, srv.Nodes, indexing.DefaultWaits)
}

// runStep runs one step for every arm, round by round, and records each arm's step in doc.
func runStep(ctx context.Context, cfg Config, step benchv1.Step, arms []*armRun, doc *results.Document) (err error) {
	work := steps[step]
	var servers []*server
	for _, a := range arms {
		if !slices.Contains(servers, a.server) {
			servers = append(servers, a.server)
		}
	}
	for _, srv := range servers {
		if work.hold == nil {
			break
		}
		undo, herr := work.hold(ctx, &cfg.Bench.Spec, srv)
		defer func() { err = errors.Join(err, undo()) }()
		if herr != nil {
			return herr
		}
	}
	// CouchDB's own view of its load meanwhile, watched by one part only (the others would
	// see the same); the arms on one server share it, as they share the server.
	watches := map[*server]*serverload.Watcher{}
	if cfg.Part == 0 {
		for _, srv := range servers {
			watches[srv] = serverload.Watch(ctx, srv.client, srv.Nodes, serverload.Interval)
		}
	}
	armNames := make([]string, len(arms))
	for i, a := range arms {
		a.pauses = nil
		armNames[i] = a.qs.Name
	}
	taking := newTakers(arms, cfg.Bench.Spec.ArmOrder == benchv1.ArmsDuet && len(arms) > 1)
	var stopping *stopper
	var orders [][]string
	defer func() {
		load := map[*server][]measured.NodeLoad{}
		for srv, w := range watches {
			load[srv] = w.Stop()
		}
		for _, t := range taking.taken {
			if !t.started() {
				continue
			}
			if work.end != nil {
				work.end(t.arm)
			}
			rec := t.record(step, load[t.arm.server])
			switch {
			case taking.duet:
				rec.Duet = true
			case len(arms) > 1:
				rec.Rounds = orders
			}
			if stopping != nil {
				rec.Sequential = stopping.record()
			}
			doc.Steps = append(doc.Steps, rec)
		}
	}()

	if work.begin != nil {
		if err := taking.each(armNames, func(a *armRun) error { return work.begin(a, ctx) }); err != nil {
			return err
		}
	}
	first, last := work.rounds(&cfg.Bench.Spec)
	stopping = newStopper(&cfg.Bench.Spec, step, arms)
	for _, a := range arms {
		a.untilDecided = stopping.sequential
	}
	for round := first; ; round++ {
		order := armNames
		if !taking.duet {
			order = turnsOrder(cfg, doc, step, round, armNames)
			orders = append(orders, order)
		}
		for unit := range work.units(arms[0]) {
			if err := taking.each(order, func(a *armRun) error { return work.round(a, ctx, round, unit) }); err != nil {
				return err
			}
		}
		if stopping.done(round, last) {
			return nil
		}
	}
}

// turnsOrder is the arms' order in a round: drawn from the run id, or from when a run by hand
// without one started.
func turnsOrder(cfg Config, doc *results.Document, step benchv1.Step, round int, arms []string) []string {
	return turns.Order(turns.Key(cfg.RunID, doc.StartedAt), string(step), round, arms)
}
