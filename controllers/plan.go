package controllers

import (
	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// stepKind is one stage of one arm.
type stepKind string

const (
	stepProvision stepKind = "provision"
	stepCluster   stepKind = "cluster"
	stepSeed      stepKind = "seed"
	stepIndex     stepKind = "index"
	stepViews     stepKind = "views"
	stepWrites    stepKind = "writes"
	stepReads     stepKind = "reads"
	stepTeardown  stepKind = "teardown"
)

// runnerSteps are the steps a runner Job carries out; the kind is the runner's subcommand.
var runnerSteps = map[stepKind]bool{stepSeed: true, stepIndex: true, stepViews: true, stepWrites: true}

// planStep is one position of a run.
type planStep struct {
	Arm  string
	Kind stepKind
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
		add := func(k stepKind) { plan = append(plan, planStep{Arm: qs.Name, Kind: k}) }
		if provisioned {
			add(stepProvision)
			add(stepCluster)
		}
		if w.Indexing != nil || w.ViewReads != nil || w.Reads != nil {
			add(stepSeed)
		}
		if w.Indexing != nil {
			add(stepIndex)
		}
		if w.ViewReads != nil {
			add(stepViews)
		}
		if w.Writes != nil {
			add(stepWrites)
		}
		if w.Reads != nil {
			add(stepReads)
		}
		if provisioned {
			add(stepTeardown)
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
		if s.Arm == p.QueryServer && string(s.Kind) == p.Step {
			return i, true
		}
	}
	return 0, false
}
