package controllers

import (
	"context"
	"fmt"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// runStep runs one runner step of its arms (one, or several that take turns in the same Jobs)
// as its Jobs (one, or spec.runner.parallelism for the seed and writes steps) and stores the
// results document they hand over, the parts' documents joined into one.
// The Jobs' names are fixed per step, so creating them again after a manager restart finds the
// ones that exist: never a second set. Jobs are watched, so a finished one wakes its
// benchmark. What the parts measured is stored even when one of them failed.
func (r *CouchBenchmarkReconciler) runStep(ctx context.Context, bench *benchv1.CouchBenchmark, step planStep) (stepOutcome, error) {
	jobs, err := r.observeJobs(ctx, bench, builders.JobNames(bench, step.Arms, step.Step))
	switch {
	case err != nil:
		return stepOutcome{}, err
	case jobs.missing():
		return r.startStep(ctx, bench, step, jobs)
	}
	if out, running, err := r.running(ctx, bench, jobs, runnerPods(bench)); running || err != nil {
		return out, err
	}
	var (
		parts    []*results.Document
		problems []string
	)
	for _, job := range jobs {
		handoff, data, problem, err := r.payload(ctx, job, builders.RunnerContainer)
		if err != nil {
			return stepOutcome{}, err
		}
		if problem == "" {
			if doc, err := results.Decode(data); err != nil {
				problem = fmt.Sprintf("Job %s: %v", job.name, err)
			} else {
				parts = append(parts, doc)
			}
		}
		switch {
		case problem != "":
			problems = append(problems, problem)
		case handoff.Error != "":
			problems = append(problems, handoff.Error)
		case job.phase == jobFailed:
			problems = append(problems, fmt.Sprintf("Job %s failed: %s", job.name, job.detail))
		}
	}
	if len(parts) > 0 {
		doc := results.JoinParts(parts)
		// Arms provisioned side by side each have their CouchDB's pods; arms that share an
		// existing CouchDB share one provenance, read once.
		var shared *results.Cluster
		for _, arm := range step.Arms {
			cluster := shared
			if cluster == nil {
				cluster = r.provenance(ctx, bench, arm, step.Step, results.RoleRunner, jobs)
			}
			if bench.Spec.CouchDB.Provision == nil {
				shared = cluster
			}
			withProvenance(doc, arm, cluster)
		}
		if err := r.storeStepDocument(ctx, bench, doc); err != nil {
			return stepOutcome{}, err
		}
	}
	if len(problems) > 0 {
		return failed(reasonStepFailed, "%s, step %s: %s", step.arms(), step.Step, strings.Join(problems, "; ")), nil
	}
	return stepOutcome{done: true}, nil
}

// startStep creates the spec ConfigMap (once) and every Job of the step that does not exist
// yet, in one pass, so that parts that share the step start together.
func (r *CouchBenchmarkReconciler) startStep(ctx context.Context, bench *benchv1.CouchBenchmark, step planStep, jobs jobSet) (stepOutcome, error) {
	spec, err := builders.SpecConfigMap(bench)
	if err != nil {
		return stepOutcome{}, err
	}
	if out, ok, err := r.createOwned(ctx, bench, spec); !ok {
		return out, err
	}
	servers := make([]builders.ArmServer, len(step.Arms))
	for i, arm := range step.Arms {
		url, creds := r.target(bench, queryServer(bench, arm))
		servers[i] = builders.ArmServer{Arm: arm, URL: url, Credentials: creds}
	}
	// Only the steps whose units carry a CPU cost get the right to read it.
	if readsCPUIn(step.Step, len(jobs)) && r.readsCPU(&bench.Spec) {
		if err := r.ensureIdentity(ctx, bench.Namespace, r.cpuReader()); err != nil {
			return stepOutcome{}, err
		}
		for i := range servers {
			servers[i].Pods = builders.CouchDBPodNames(bench, servers[i].Arm)
		}
	}
	for part, o := range jobs {
		if o.phase != jobMissing {
			continue
		}
		job := builders.RunnerJob{
			Bench: bench, Servers: servers, Step: step.Step, Image: r.RunnerImage, Deadline: r.jobDeadline(bench), Part: part,
		}.Job()
		if out, ok, err := r.createOwned(ctx, bench, job); !ok {
			return out, err
		}
	}
	return stepOutcome{}, nil
}

// readsCPUIn says whether a step's units carry the server's CPU cost: the loads, builds, view
// reads and writes, when one runner does the step (parts' units overlap, so no one part's
// reading is the cost of its own). k6's reads are read by a meter of their own (runReads).
func readsCPUIn(step benchv1.Step, parts int) bool {
	switch step {
	case benchv1.StepSeed, benchv1.StepIndex, benchv1.StepViews, benchv1.StepWrites:
		return parts == 1
	}
	return false
}
