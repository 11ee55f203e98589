package controllers

import (
	"context"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// requestTimeout bounds the operator's own requests to CouchDB.
const requestTimeout = 10 * time.Second

// runStep runs one runner step as a Job and stores the results document it hands over. The
// Job's name is fixed per step, so creating it again after a manager restart finds the one
// that exists: never a second Job. Jobs are watched, so a finished one wakes its benchmark.
func (r *CouchBenchmarkReconciler) runStep(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer, step benchv1.Step) (stepOutcome, error) {
	jobs, err := r.observeJobs(ctx, bench, []string{builders.JobName(bench, qs.Name, step)})
	switch {
	case err != nil:
		return stepOutcome{}, err
	case jobs.missing():
		return r.startStep(ctx, bench, qs, step)
	}
	if out, running := jobs.running(); running {
		return out, nil
	}
	job := jobs[0]
	handoff, data, problem, err := r.payload(ctx, job, builders.RunnerContainer)
	if err != nil {
		return stepOutcome{}, err
	}
	if problem != "" {
		return failed(reasonStepFailed, "query server %s, step %s: %s", qs.Name, step, problem), nil
	}
	doc, err := results.Decode(data)
	if err != nil {
		return failed(reasonStepFailed, "query server %s, step %s: Job %s: %v", qs.Name, step, job.name, err), nil
	}
	withProvenance(doc, qs.Name, r.provenance(ctx, bench, qs.Name, step, results.RoleRunner, jobs))
	// What the step measured is kept whether it then failed or not.
	if err := r.storeStepDocument(ctx, bench, qs.Name, doc); err != nil {
		return stepOutcome{}, err
	}
	switch {
	case handoff.Error != "":
		return failed(reasonStepFailed, "query server %s, step %s: %s", qs.Name, step, handoff.Error), nil
	case job.phase == jobFailed:
		return failed(reasonStepFailed, "query server %s, step %s: Job %s failed: %s", qs.Name, step, job.name, job.detail), nil
	}
	return stepOutcome{done: true}, nil
}

// startStep creates the spec ConfigMap (once) and the step's Job.
func (r *CouchBenchmarkReconciler) startStep(ctx context.Context, bench *benchv1.CouchBenchmark,
	qs benchv1.QueryServer, step benchv1.Step) (stepOutcome, error) {
	spec, err := builders.SpecConfigMap(bench)
	if err != nil {
		return stepOutcome{}, err
	}
	if out, ok, err := r.createOwned(ctx, bench, spec); !ok {
		return out, err
	}
	url, creds := r.target(bench, qs)
	job := builders.RunnerJob{
		Bench: bench, Arm: qs.Name, Step: step, Image: r.RunnerImage, URL: url, Credentials: creds, Deadline: r.jobDeadline(bench),
	}.Job()
	out, _, err := r.createOwned(ctx, bench, job)
	return out, err
}
