package controllers

import (
	"context"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/loadtest"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
)

// runReads runs an arm's read load: spec.k6.parallelism k6 Jobs, created together, each
// running its execution segment of the load, against the first document profile's
// database. When all have finished, their k6 summaries become the arm's reads in its
// results document, like every other step's results.
func (r *CouchBenchmarkReconciler) runReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	n := int(bench.Spec.K6.Parallelism)
	jobNames := make([]string, n)
	for i := range n {
		jobNames[i] = builders.K6JobName(bench, qs.Name, i)
	}
	jobs, err := r.observeJobs(ctx, bench, jobNames)
	switch {
	case err != nil:
		return stepOutcome{}, err
	case jobs.missing():
		return r.startReads(ctx, bench, qs, n)
	case jobs.foreign() != nil:
		return notOurs(jobs.foreign().owner, jobs.foreign().job), nil
	case jobs.recheck():
		return stepOutcome{requeueAfter: recheckAfter}, nil
	case !jobs.finished():
		return stepOutcome{}, nil
	}

	cfg, err := r.readsConfig(bench, qs)
	if err != nil {
		return stepOutcome{}, err
	}
	segments, _ := loadtest.Segments(n)
	reads := &results.Reads{Scenario: cfg.Scenario}
	record := results.StepRecord{QueryServer: qs.Name, Step: benchv1.StepReads}
	for i, job := range jobs {
		if job.phase == jobFailed {
			return failed(reasonStepFailed, "query server %s, reads: k6 runner %d of %d failed: %s", qs.Name, i+1, n, job.detail), nil
		}
		_, data, problem, err := r.payload(ctx, job, builders.K6Container)
		if err != nil {
			return stepOutcome{}, err
		}
		if problem != "" {
			return failed(reasonStepFailed, "query server %s, reads: k6 runner %d of %d: %s", qs.Name, i+1, n, problem), nil
		}
		runner, err := results.ParseK6Summary(data, loadtest.SegmentName(segments[i]), cfg.UserThresholds)
		if err != nil {
			return failed(reasonStepFailed, "query server %s, reads: k6 runner %d of %d: %v", qs.Name, i+1, n, err), nil
		}
		reads.Runners = append(reads.Runners, runner)
		record.StartedAt, record.FinishedAt = spanOf(record.StartedAt, record.FinishedAt, job)
	}
	profile := bench.Spec.Dataset.Profiles[0]
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion, Benchmark: bench.Name, SpecHash: benchspec.Hash(bench.Spec), Spec: bench.Spec,
		RunID: builders.RunID(bench), Seed: bench.Spec.Dataset.Seed, StartedAt: record.StartedAt, FinishedAt: record.FinishedAt,
		Arms: []results.Arm{{QueryServer: qs.Name, Cluster: r.provenance(ctx, bench, qs.Name, benchv1.StepReads, results.RoleK6, jobs),
			Profiles: []results.Profile{{Profile: dataset.ProfileName(profile), DB: cfg.DB, Reads: reads}}}},
		Steps: []results.StepRecord{record},
	}
	if err := r.storeStepDocument(ctx, bench, qs.Name, doc); err != nil {
		return stepOutcome{}, err
	}
	return stepOutcome{done: true}, nil
}

// spanOf widens [from, to] to the Job's run.
func spanOf(from, to time.Time, o observedJob) (time.Time, time.Time) {
	if s := o.job.Status.StartTime; s != nil && (from.IsZero() || s.Time.Before(from)) {
		from = s.Time
	}
	if c := o.job.Status.CompletionTime; c != nil && c.After(to) {
		to = c.Time
	}
	return from, to
}

// readsConfig is the k6 script's configuration for an arm: what its Jobs run and what their
// summaries are read against.
func (r *CouchBenchmarkReconciler) readsConfig(bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (loadtest.Config, error) {
	url, _ := r.target(bench, qs)
	db := names.Database(bench.Name, builders.RunID(bench), qs.Name, dataset.ProfileName(bench.Spec.Dataset.Profiles[0]))
	return loadtest.NewConfig(&bench.Spec, qs, url, db)
}

// startReads creates the script's ConfigMap (once) and every runner's Job that does not
// exist yet, in one pass, so that the runners start together.
func (r *CouchBenchmarkReconciler) startReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer, n int) (stepOutcome, error) {
	if out, ok, err := r.createOwned(ctx, bench, builders.K6ConfigMap(bench, loadtest.ScriptName, loadtest.Script)); !ok {
		return out, err
	}
	cfg, err := r.readsConfig(bench, qs)
	if err != nil {
		return stepOutcome{}, err
	}
	config, err := cfg.JSON()
	if err != nil {
		return stepOutcome{}, err
	}
	_, creds := r.target(bench, qs)
	segments, sequence := loadtest.Segments(n)
	for i := range n {
		job := builders.K6Job{
			Bench: bench, Arm: qs.Name, Index: i, Runners: n, Segment: segments[i], Sequence: sequence,
			Script: loadtest.ScriptName, Config: config, Credentials: creds, Deadline: r.jobDeadline(bench),
		}.Job()
		if out, ok, err := r.createOwned(ctx, bench, job); !ok {
			return out, err
		}
	}
	return stepOutcome{}, nil
}
