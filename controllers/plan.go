package controllers

import (
	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// planStep is one position of a run.
type planStep struct {
	Arm  string
	Step benchv1.Step
}

// buildPlan is the whole run, in order: for each arm, provision and wait for the cluster
// (provisioned CouchDB only), seed (when a workload reads the dataset), the workloads, then
// tear down. A run only ever moves forward through its plan; the spec is immutable, so
// the plan of a benchmark never changes.
func buildPlan(spec *benchv1.CouchBenchmarkSpec) []planStep {
	w := spec.Workloads
	provisioned := spec.CouchDB.Provision != nil
	var plan []planStep
	for _, qs := range spec.QueryServers {
		add := func(step benchv1.Step) { plan = append(plan, planStep{Arm: qs.Name, Step: step}) }
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
		if provisioned {
			add(benchv1.StepTeardown)
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
		if s.Arm == p.QueryServer && s.Step == p.Step {
			return i, true
		}
	}
	return 0, false
}
