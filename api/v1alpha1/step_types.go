package v1alpha1

import (
	"fmt"
	"strings"
)

// Step is one stage of one arm of a run. The operator's plan, the status, the runner's
// subcommands, the Jobs' names and labels, and the results all use these values.
// +kubebuilder:validation:Enum=provision;cluster;seed;index;views;writes;reads;teardown;cleanup
type Step string

const (
	// StepProvision installs the arm's CouchDB with the Helm chart.
	StepProvision Step = "provision"
	// StepCluster waits until that CouchDB is a formed cluster.
	StepCluster Step = "cluster"
	// StepSeed loads the dataset.
	StepSeed Step = "seed"
	// StepIndex times view builds (seed 000).
	StepIndex Step = "index"
	// StepViews times full view reads (seed 002).
	StepViews Step = "views"
	// StepWrites times the insert modes (seed 003).
	StepWrites Step = "writes"
	// StepReads is k6 read load (seed 001).
	StepReads Step = "reads"
	// StepTeardown uninstalls the arm's CouchDB.
	StepTeardown Step = "teardown"
	// StepCleanup deletes the databases the run made on an existing CouchDB.
	StepCleanup Step = "cleanup"
)

// Steps are every step, in the order a run takes them (teardown for a provisioned CouchDB,
// cleanup for an existing one).
var Steps = []Step{StepProvision, StepCluster, StepSeed, StepIndex, StepViews, StepWrites, StepReads, StepTeardown, StepCleanup}

// RunnerSteps are the steps the couchbench runner carries out (one Job each in the operator;
// its subcommands of the same names), in order.
var RunnerSteps = []Step{StepSeed, StepIndex, StepViews, StepWrites}

// Shareable tells whether runner pods share a step when spec.runner.parallelism asks for
// several: the seed and writes steps generate load; the index and views steps time
// CouchDB's own work, which one client starts.
func Shareable(s Step) bool { return s == StepSeed || s == StepWrites }

// IsRunnerStep tells whether the runner carries the step out.
func (s Step) IsRunnerStep() bool {
	for _, r := range RunnerSteps {
		if s == r {
			return true
		}
	}
	return false
}

// ParseRunnerStep reads a runner step's name, with an error that lists the valid ones.
func ParseRunnerStep(name string) (Step, error) {
	if s := Step(name); s.IsRunnerStep() {
		return s, nil
	}
	valid := make([]string, len(RunnerSteps))
	for i, s := range RunnerSteps {
		valid[i] = string(s)
	}
	return "", fmt.Errorf("unknown step %q: the runner's steps are %s", name, strings.Join(valid, ", "))
}
