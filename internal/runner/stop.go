package runner

import (
	"fmt"
	"slices"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/results"
)

// stopper says when a step has run enough rounds. Without spec.sequential, or on a step that
// does not run sequentially (one arm, or a step other than index and views), that is its
// repetitions. With it, rounds go on past them until every arm's ratio to the first arm that
// the step must decide is decided (compare.StepDecided: the same sequences the arms' table
// reads), the step's time limit is reached, or its maxRounds.
type stopper struct {
	spec       *benchv1.CouchBenchmarkSpec
	step       benchv1.Step
	arms       []*armRun
	sequential bool
	started    time.Time
	// rounds are the counted rounds done; stop is why the step stopped, nil until it did.
	rounds int
	stop   *results.SequentialStop
}

// newStopper starts a step's clock as its first round begins: a step's untimed setup (the
// views step's build of the views it reads) is not the rounds' time.
func newStopper(spec *benchv1.CouchBenchmarkSpec, step benchv1.Step, arms []*armRun) *stopper {
	return &stopper{spec: spec, step: step, arms: arms, sequential: compare.RunsSequentially(spec, step, len(arms)), started: time.Now()}
}

// done says, after a round, whether the step stops there; last is its least counted round.
func (s *stopper) done(round, last int) bool {
	s.rounds = max(round, 0)
	if round < last {
		return false
	}
	if !s.sequential {
		return true
	}
	seq := s.spec.Sequential
	doc := &results.Document{Spec: *s.spec}
	for _, a := range s.arms {
		doc.Arms = append(doc.Arms, a.result)
	}
	var why string
	switch {
	case compare.StepDecided([]*results.Document{doc}, s.step):
		why = results.StoppedDecided
	case round >= int(seq.MaxRounds):
		why = results.StoppedMaxRounds
	case time.Since(s.started) >= seq.TimeLimitDuration():
		why = results.StoppedTimeLimit
	default:
		return false
	}
	s.stop = &results.SequentialStop{Rounds: round, Stopped: why}
	return true
}

// record is how the step ended, for its records: also when an error or an interrupt ended it
// after counted rounds, which were still looked at after every round and so are judged by
// their sequences; nil for a step of fixed rounds.
func (s *stopper) record() *results.SequentialStop {
	if s.stop == nil && s.sequential && s.rounds > 0 {
		return &results.SequentialStop{Rounds: s.rounds, Stopped: results.StoppedEarly}
	}
	return s.stop
}

// checkMeters refuses meters that would read the wrong CPU, and a run whose index step would
// stop on a CPU cost it cannot read: a step that stops on it alone would otherwise run to
// its limits every time.
func checkMeters(cfg Config, arms []*armRun) error {
	for _, a := range arms {
		if a.meter != nil && nodesRead(a.meter) != len(a.nodes) {
			return fmt.Errorf("arm %s's CouchDB has %d nodes, and its CPU meter reads %d: its CPU cost would not be "+
				"that server's work alone; measure a cluster's CPU cost with --arm-pods naming each of its pods, "+
				"or --arm-pid on single-node servers", a.qs.Name, len(a.nodes), nodesRead(a.meter))
		}
	}
	seq := cfg.Bench.Spec.Sequential
	if seq == nil || !slices.Contains(seq.StopOn, benchv1.SequentialCPUCost) || !slices.Contains(cfg.Steps, benchv1.StepIndex) {
		return nil
	}
	for _, a := range arms {
		if a.meter == nil {
			return fmt.Errorf("spec.sequential.stopOn names %s, and arm %s's server's CPU time is not read: give every arm "+
				"--arm-pid ARM=PID or --arm-pods ARM=NAMESPACE/POD,... (the operator does when its chart sets cpuCost.kubernetes), "+
				"or stop on changes_per_second",
				benchv1.SequentialCPUCost, a.qs.Name)
		}
	}
	return nil
}
