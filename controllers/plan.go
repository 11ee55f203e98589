package controllers

import (
	"slices"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// planStep is one position of a run: a step of one arm, or of every arm of a benchmark whose
// arms go through the steps together, taking turns within the step or, in duet, not.
type planStep struct {
	Arms []string
	Step benchv1.Step
	// Duet: the arms take each unit of this step at the same moment (spec.armOrder Duet, a
	// runner step), not in turns.
	Duet bool
}

// queryServers is how status names the step's arms: "js", or "js,erlang" when they take turns.
func (s planStep) queryServers() string { return strings.Join(s.Arms, ",") }

// arms names the step's arms for people: "query server js", or "query servers js, py" and,
// for a step that measures, how they meet its units: "(taking turns)" or "(in duet)".
func (s planStep) arms() string {
	switch {
	case len(s.Arms) == 1:
		return "query server " + s.Arms[0]
	case s.Duet:
		return "query servers " + strings.Join(s.Arms, ", ") + " (in duet)"
	case s.measuring():
		return "query servers " + strings.Join(s.Arms, ", ") + " (taking turns)"
	default:
		return "query servers " + strings.Join(s.Arms, ", ")
	}
}

// String says what the step does, for conditions and events.
func (s planStep) String() string { return s.arms() + ": " + string(s.Step) }

// measuring tells whether the step measures: the runner's steps and the reads.
func (s planStep) measuring() bool { return s.Step.IsRunnerStep() || s.Step == benchv1.StepReads }

// measuringArms are the arms of a measuring step that still measure: an arm stopped before
// its first step (the seed step's runner found its views run on another runtime than it asks
// for; status.results, derived from the stored results after every step, say so) measures
// nothing more.
func measuringArms(bench *benchv1.CouchBenchmark, s planStep) []string {
	return slices.DeleteFunc(slices.Clone(s.Arms), func(arm string) bool {
		return slices.ContainsFunc(bench.Status.Results, func(q benchv1.QueryServerResults) bool { return q.QueryServer == arm && q.Stopped != "" })
	})
}

// buildPlan is the whole run, in order. With spec.armOrder Interleaved the arms go through
// the steps together: every arm's CouchDB provisioned and its cluster formed (provisioned
// CouchDB only), seeded (when a workload reads the dataset), the workloads, each step one set
// of Jobs for all of them in which they take turns round by round in a random order, then
// one teardown (provisioned CouchDB) or cleanup of the run's databases (an existing CouchDB,
// unless spec.keepDatabases). With Sequential, each arm goes through the whole plan before
// the next one.
// A run only ever moves forward through its plan; the spec is immutable, so the plan of a
// benchmark never changes.
func buildPlan(spec *benchv1.CouchBenchmarkSpec) []planStep {
	w := spec.Workloads
	provisioned := spec.CouchDB.Provision != nil
	var groups [][]string
	for _, qs := range spec.QueryServers {
		if spec.ArmOrder == benchv1.ArmsSequential || len(groups) == 0 {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], qs.Name)
	}
	var plan []planStep
	for _, arms := range groups {
		// k6's reads take turns in duet too; only the runner's steps run at the same moment.
		duet := spec.ArmOrder == benchv1.ArmsDuet && len(arms) > 1
		add := func(step benchv1.Step) {
			plan = append(plan, planStep{Arms: arms, Step: step, Duet: duet && step.IsRunnerStep()})
		}
		if provisioned {
			add(benchv1.StepProvision)
			add(benchv1.StepCluster)
		}
		if w.Indexing != nil || w.ViewReads != nil || w.Reads != nil {
			add(benchv1.StepSeed)
		}
		if w.Indexing != nil {
			add(benchv1.StepIndex)
		}
		if w.ViewReads != nil {
			add(benchv1.StepViews)
		}
		if w.Writes != nil {
			add(benchv1.StepWrites)
		}
		if w.Reads != nil {
			add(benchv1.StepReads)
		}
		switch {
		case provisioned:
			add(benchv1.StepTeardown)
		case !spec.KeepDatabases:
			add(benchv1.StepCleanup)
		}
	}
	return plan
}

// position is the index in plan of the step recorded in status (0 before the first); ok is
// false when status names a step the plan does not have.
func position(plan []planStep, p *benchv1.Progress) (int, bool) {
	if p == nil {
		return 0, true
	}
	for i, s := range plan {
		if s.queryServers() == p.QueryServer && s.Step == p.Step {
			return i, true
		}
	}
	return 0, false
}
