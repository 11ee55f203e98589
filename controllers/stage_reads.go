package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/loadtest"
	"github.com/couchbench/couchbench/internal/runner"
)

// conditionThresholds reports the k6 thresholds of the spec: False with the failed ones.
// A failed threshold is a result, not a failed run.
const conditionThresholds = "ThresholdsPassed"

// runReads runs an arm's read load: spec.k6.parallelism k6 Jobs, created together, each
// running its execution segment of the load, against the first document profile's
// database. When all have finished their summaries are merged into status.
func (r *CouchBenchmarkReconciler) runReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	n := int(bench.Spec.K6.Parallelism)
	jobs := make([]*batchv1.Job, n)
	missing := false
	for i := range n {
		var job batchv1.Job
		err := r.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: builders.K6JobName(bench, qs.Name, i)}, &job)
		switch {
		case apierrors.IsNotFound(err):
			missing = true
		case err != nil:
			return stepOutcome{}, err
		default:
			if owner, err := r.ownerOf(ctx, bench, &job); err != nil || owner != ours {
				return notOurs(owner, &job), err
			}
			jobs[i] = &job
		}
	}
	if missing {
		return r.startReads(ctx, bench, qs, n)
	}

	var runners []loadtest.RunnerSummary
	for i, job := range jobs {
		finished, jobFailed := jobState(job)
		if !finished {
			return stepOutcome{}, nil
		}
		message, detail, err := r.terminationMessage(ctx, job)
		if err != nil {
			return stepOutcome{}, err
		}
		if detail == detailNotTerminated {
			return stepOutcome{requeueAfter: 2 * time.Second}, nil
		}
		if jobFailed {
			return failed(reasonStepFailed, "query server %s, reads: k6 runner %d of %d failed: %s", qs.Name, i+1, n, detail), nil
		}
		s, err := loadtest.ParseSummary([]byte(message))
		if err != nil {
			return failed(reasonStepFailed, "query server %s, reads: k6 runner %d of %d: %s: %v", qs.Name, i+1, n, detail, err), nil
		}
		runners = append(runners, s)
	}
	merged := loadtest.Merge(runners)
	armResults(&bench.Status, qs.Name).Reads = &merged
	bench.Status.ReadP95 = worstP95(bench.Status.Results)
	r.recordThresholds(bench, qs.Name, runners)
	return stepOutcome{done: true}, nil
}

// startReads creates the script's ConfigMap (once) and every runner's Job that does not
// exist yet, in one pass, so that the runners start together.
func (r *CouchBenchmarkReconciler) startReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer, n int) (stepOutcome, error) {
	if out, ok, err := r.createOwned(ctx, bench, builders.K6ConfigMap(bench)); !ok {
		return out, err
	}
	url, creds := r.target(bench, qs)
	db := runner.DatabaseName(bench.Name, builders.RunID(bench), qs.Name, dataset.ProfileName(bench.Spec.Dataset.Profiles[0]))
	cfg, err := loadtest.NewConfig(&bench.Spec, qs, url, db)
	if err != nil {
		return stepOutcome{}, err
	}
	config, err := cfg.JSON()
	if err != nil {
		return stepOutcome{}, err
	}
	segments, sequence := loadtest.Segments(n)
	deadline := bench.Status.StartTime.Add(bench.Spec.TimeoutDuration()).Sub(r.Clock.Now())
	for i := range n {
		job := builders.K6Job{
			Bench: bench, Arm: qs.Name, Index: i, Runners: n, Segment: segments[i], Sequence: sequence,
			Config: config, Credentials: creds, Deadline: deadline,
		}.Job()
		if out, ok, err := r.createOwned(ctx, bench, job); !ok {
			return out, err
		}
	}
	return stepOutcome{}, nil
}

// recordThresholds sets the ThresholdsPassed condition from every arm's reads so far.
func (r *CouchBenchmarkReconciler) recordThresholds(bench *benchv1.CouchBenchmark, arm string, runners []loadtest.RunnerSummary) {
	st := &bench.Status
	failedNow := loadtest.FailedThresholds(runners)
	prev := meta.FindStatusCondition(st.Conditions, conditionThresholds)
	if len(failedNow) > 0 {
		message := fmt.Sprintf("query server %s: %s", arm, strings.Join(failedNow, "; "))
		if prev != nil && prev.Status == metav1.ConditionFalse && !strings.Contains(prev.Message, message) {
			message = prev.Message + "; " + message
		}
		setCondition(st, bench.Generation, r.Clock.Now(), conditionThresholds, metav1.ConditionFalse, reasonThresholdsFailed, message)
		r.Recorder.Eventf(bench, nil, "Warning", reasonThresholdsFailed, "Reads", "%s", message)
		return
	}
	if merged := armResults(st, arm).Reads; merged.ThresholdsPassed != nil && (prev == nil || prev.Status == metav1.ConditionTrue) {
		setCondition(st, bench.Generation, r.Clock.Now(), conditionThresholds, metav1.ConditionTrue, reasonThresholdsMet, "every k6 threshold passed")
	}
}

// worstP95 is the highest read p95 over the arms, for the printer column.
func worstP95(rs []benchv1.QueryServerResults) string {
	var worst time.Duration
	out := ""
	for _, q := range rs {
		if q.Reads == nil {
			continue
		}
		if d, err := time.ParseDuration(q.Reads.P95); err == nil && d >= worst {
			worst, out = d, q.Reads.P95
		}
	}
	return out
}
