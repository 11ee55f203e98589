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
// does not run sequentially, that is its repetitions. With it, rounds go on past them until
// every arm's ratio to the first arm that it stops on is decided (compare.StepDecided: the
// same sequences the arms' table reads), the step's time limit is reached, or its maxRounds.
type stopper struct {
	spec    *benchv1.CouchBenchmarkSpec
	step    benchv1.Step
	arms    []*armRun
	started time.Time
	// stop is why the step stopped; nil until it did, and for a step of fixed rounds.
	stop *results.SequentialStop
}

func newStopper(spec *benchv1.CouchBenchmarkSpec, step benchv1.Step, arms []*armRun) *stopper {
	return &stopper{spec: spec, step: step, arms: arms, started: time.Now()}
}

// done says, after a round, whether the step stops there; last is its least counted round.
func (s *stopper) done(round, last int) bool {
	if round < last {
		return false
	}
	if !compare.RunsSequentially(s.spec, s.step) {
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

// checkMeters refuses a run whose index step would stop on a CPU cost it cannot read: a
// step that stops on it alone would otherwise run to its limits every time.
func checkMeters(cfg Config, arms []*armRun) error {
	seq := cfg.Bench.Spec.Sequential
	if seq == nil || !slices.Contains(seq.StopOn, benchv1.SequentialCPUCost) || !slices.Contains(cfg.Steps, benchv1.StepIndex) {
		return nil
	}
	for _, a := range arms {
		if a.meter == nil {
			return fmt.Errorf("spec.sequential.stopOn names %s, and arm %s's server's CPU time is not read: give every arm "+
				"couchbench run --arm-pid ARM=PID (the operator does not read it yet), or stop on changes_per_second",
				benchv1.SequentialCPUCost, a.qs.Name)
		}
	}
	return nil
}
