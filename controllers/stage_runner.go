package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// requestTimeout bounds the operator's own requests to CouchDB.
const requestTimeout = 10 * time.Second

// runStep runs one runner step as a Job and reads its result. The Job's name is fixed per
// step, so creating it again after a manager restart finds the one that exists: never a
// second Job. Jobs are watched, so a finished one wakes its benchmark.
func (r *CouchBenchmarkReconciler) runStep(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer, kind benchv1.Step) (stepOutcome, error) {
	var job batchv1.Job
	name := builders.JobName(bench, qs.Name, kind)
	err := r.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: name}, &job)
	if apierrors.IsNotFound(err) {
		return r.startStep(ctx, bench, qs, kind)
	}
	if err != nil {
		return stepOutcome{}, err
	}
	if owner, err := r.ownerOf(ctx, bench, &job); err != nil || owner != ours {
		return notOurs(owner, &job), err
	}
	finished, jobFailed := jobState(&job)
	if !finished {
		return stepOutcome{}, nil
	}
	summary, detail, err := r.readSummary(ctx, &job)
	if err != nil {
		return stepOutcome{}, err
	}
	if detail == detailNotTerminated {
		// The Job says finished before the pod status shows the container's end: look again.
		return stepOutcome{requeueAfter: 2 * time.Second}, nil
	}
	if summary != nil {
		mergeSummary(bench, qs.Name, kind, summary)
		if summary.Truncated {
			r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonSummaryTruncated, string(kind),
				"query server %s, step %s: the runner's summary outgrew the 4 KB termination message and left details out; "+
					"the Job's log has the full results", qs.Name, kind)
		}
	}
	switch {
	case summary != nil && summary.Error != "":
		return failed(reasonStepFailed, "query server %s, step %s: %s", qs.Name, kind, summary.Error), nil
	case jobFailed:
		return failed(reasonStepFailed, "query server %s, step %s: Job %s failed: %s", qs.Name, kind, name, detail), nil
	case summary == nil:
		return failed(reasonStepFailed, "query server %s, step %s: Job %s left no summary: %s", qs.Name, kind, name, detail), nil
	}
	return stepOutcome{done: true}, nil
}

// startStep creates the spec ConfigMap (once) and the step's Job.
func (r *CouchBenchmarkReconciler) startStep(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer, kind benchv1.Step) (stepOutcome, error) {
	spec, err := builders.SpecConfigMap(bench)
	if err != nil {
		return stepOutcome{}, err
	}
	if out, ok, err := r.createOwned(ctx, bench, spec); !ok {
		return out, err
	}
	url, creds := r.target(bench, qs)
	deadline := bench.Status.StartTime.Add(bench.Spec.TimeoutDuration()).Sub(r.Clock.Now())
	job := builders.RunnerJob{
		Bench: bench, Arm: qs.Name, Step: kind, Image: r.RunnerImage, URL: url, Credentials: creds, Deadline: deadline,
	}.Job()
	out, _, err := r.createOwned(ctx, bench, job)
	return out, err
}

// jobState tells whether a Job has finished, and whether it failed.
func jobState(job *batchv1.Job) (finished, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		// SuccessCriteriaMet and FailureTarget come while the pod may still be ending:
		// only Complete and Failed are final.
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// readSummary reads the runner's summary from its Job's termination message. Without one
// it says why, for the failure message.
func (r *CouchBenchmarkReconciler) readSummary(ctx context.Context, job *batchv1.Job) (*results.Summary, string, error) {
	message, detail, err := r.terminationMessage(ctx, job)
	if err != nil || message == "" {
		return nil, detail, err
	}
	var s results.Summary
	if err := json.Unmarshal([]byte(message), &s); err != nil {
		return nil, fmt.Sprintf("%s; its termination message is not a runner summary: %v", detail, err), nil
	}
	if s.SchemaVersion != results.SchemaVersion {
		return nil, fmt.Sprintf("%s; summary version %d, this operator reads %d", detail, s.SchemaVersion, results.SchemaVersion), nil
	}
	return &s, detail, nil
}

// terminationMessage is the termination message of the Job's (newest) pod, and how its
// container ended. Reading it from the pod status needs no log access.
func (r *CouchBenchmarkReconciler) terminationMessage(ctx context.Context, job *batchv1.Job) (message, detail string, err error) {
	// Read past the cache: the pod's final status may not have reached it yet.
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", "", err
	}
	if len(pods.Items) == 0 {
		return "", "no pod found", nil
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[j].CreationTimestamp.Before(&pods.Items[i].CreationTimestamp)
	})
	for _, cs := range pods.Items[0].Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return t.Message, fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason), nil
		}
	}
	return "", detailNotTerminated, nil
}

// detailNotTerminated: the pod status does not show the container's end yet.
const detailNotTerminated = "the container has not terminated"
