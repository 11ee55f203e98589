package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// teardown ends an arm that succeeded: its results are already in status and the results
// ConfigMap, so its CouchDB can go, unless the policy keeps it.
func (r *CouchBenchmarkReconciler) teardown(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	if bench.Spec.Teardown == benchv1.TeardownNever {
		return stepOutcome{done: true}, nil
	}
	return stepOutcome{done: true}, r.removeCouchDB(ctx, bench, qs.Name)
}

// removeCouchDB uninstalls an arm's release, deletes the volumes its StatefulSet claimed
// (Helm leaves them, and a new benchmark of the same name would reuse the old data) and
// its admin Secret; each is a no-op when already gone.
func (r *CouchBenchmarkReconciler) removeCouchDB(ctx context.Context, bench *benchv1.CouchBenchmark, arm string) error {
	release := builders.ReleaseName(bench, arm)
	// Helm uninstalls as the installer too (a release's record is a Secret the namespace's
	// users can change); a benchmark deleted before its first install finds none yet. In a
	// namespace being deleted nothing can be made, and its deletion takes the release's
	// objects with it.
	switch err := r.ensureIdentity(ctx, bench.Namespace, r.installer()); {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
	case err != nil:
		return err
	default:
		if err := r.Releases.Uninstall(ctx, bench.Namespace, release); err != nil {
			return err
		}
	}
	err := r.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(bench.Namespace),
		client.MatchingLabels(builders.CouchDBPodLabels(release)))
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bench.Namespace, Name: builders.AdminSecretName(bench, arm)}}
	return client.IgnoreNotFound(r.Delete(ctx, secret))
}

// cleanupPatience bounds the deletion of a run's databases from an existing CouchDB (a
// CouchDB restarting, a network blip: the clean-up Job's pod is tried again within it), after
// which the run, or the benchmark's deletion, goes on without it and says what is left.
const cleanupPatience = 2 * time.Minute

// cleanupRetries is how often a clean-up Job's pod is tried again: deleting databases twice
// deletes nothing twice.
const cleanupRetries = 3

// cleanup ends the arms of an existing CouchDB: their results are in status and the results
// ConfigMaps, so the databases the run made there go (spec.keepDatabases keeps them, and then
// the plan has no cleanup step). A provisioned CouchDB goes with its release instead.
//
// A Job in the benchmark's namespace deletes them (`couchbench clean`, every database named
// with the run's prefix), with the admin the run's Jobs had: the operator sends CouchDB
// nothing itself (docs/security.md). A clean-up that fails, or whose pod cannot start within
// cleanupPatience, does not fail the run: a Warning event says what is left and how to
// remove it.
func (r *CouchBenchmarkReconciler) cleanup(ctx context.Context, bench *benchv1.CouchBenchmark) (stepOutcome, error) {
	jobs, err := r.observeJobs(ctx, bench, []string{builders.CleanupJobName(bench, false)})
	if err != nil {
		return stepOutcome{}, err
	}
	if jobs.missing() {
		_, _, err := r.createOwned(ctx, bench, r.cleanupJob(bench, false))
		return stepOutcome{}, err
	}
	out, running, err := r.running(ctx, bench, jobs, runnerPods(bench))
	switch o := jobs[0]; {
	case err != nil:
		return stepOutcome{}, err
	case running && out.stalled != nil && r.Clock.Since(bench.Status.Progress.StepStartTime.Time) >= cleanupPatience:
		r.databasesLeft(bench, fmt.Sprintf("Job %s could not start: %s", o.name, out.stalled.message))
		return stepOutcome{done: true}, client.IgnoreNotFound(r.Delete(ctx, o.job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	case running:
		return out, nil
	case o.phase == jobFailed:
		r.databasesLeft(bench, fmt.Sprintf("Job %s failed (%s): %s", o.name, o.detail, wholeLines(o.message)))
	default:
		r.Recorder.Eventf(bench, o.job, corev1.EventTypeNormal, reasonDatabasesDeleted, "CleanUp",
			"Job %s deleted the run's databases from %s (its log names them)", o.name, bench.Spec.CouchDB.Existing.URL)
	}
	return stepOutcome{done: true}, nil
}

// cleanupJob is the Job that deletes the run's databases, given cleanupPatience: the run's
// own (owned by the benchmark), or the one of a benchmark being deleted (finalizing).
func (r *CouchBenchmarkReconciler) cleanupJob(bench *benchv1.CouchBenchmark, finalizing bool) *batchv1.Job {
	job := builders.CleanupJob{Bench: bench, Image: r.RunnerImage, Deadline: cleanupPatience, Finalizing: finalizing}.Job()
	job.Spec.BackoffLimit = ptr.To[int32](cleanupRetries)
	return job
}

// databasesLeft says, with a Warning event, that the run's databases could not be deleted
// (why), and how to remove them.
func (r *CouchBenchmarkReconciler) databasesLeft(bench *benchv1.CouchBenchmark, why string) {
	existing := bench.Spec.CouchDB.Existing
	r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonCleanUpFailed, "CleanUp",
		"the run's databases on %s could not be deleted (%s); remove them with couchbench clean --benchmark %s --run-id %s --url %s",
		existing.URL, why, bench.Name, builders.RunID(bench), existing.URL)
}

// cleanUpAfterFailure stops what a failed run left running: Jobs still going (their load
// would go on hitting CouchDB), under teardown Always every provisioned CouchDB, and the
// databases the run made on an existing CouchDB (unless spec.keepDatabases). The results
// stay. A failure here is reported, not retried: the run's Failed status must be written
// whatever happens, and deleting the benchmark removes its releases and databases anyway.
func (r *CouchBenchmarkReconciler) cleanUpAfterFailure(ctx context.Context, bench *benchv1.CouchBenchmark) {
	if err := r.stopAfterFailure(ctx, bench); err != nil {
		log.FromContext(ctx).Error(err, "cleaning up after a failed run")
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonCleanUpFailed, "CleanUp",
			"cleaning up after the failure: %v; delete the benchmark to remove what is left", err)
	}
}

func (r *CouchBenchmarkReconciler) stopAfterFailure(ctx context.Context, bench *benchv1.CouchBenchmark) error {
	if err := r.stopJobs(ctx, bench); err != nil {
		return err
	}
	switch {
	case bench.Spec.CouchDB.Existing != nil && !bench.Spec.KeepDatabases:
		// Its clean-up Job goes on after the run's end (stopJobs leaves it); the finalizer
		// runs another when the benchmark is deleted.
		_, _, err := r.createOwned(ctx, bench, r.cleanupJob(bench, false))
		return err
	case bench.Spec.CouchDB.Provision == nil || bench.Spec.Teardown != benchv1.TeardownAlways:
		return nil
	}
	for _, qs := range bench.Spec.QueryServers {
		if err := r.removeCouchDB(ctx, bench, qs.Name); err != nil {
			return err
		}
	}
	return nil
}

// stopJobs stops the benchmark's Jobs that are still going, so that their load stops and no
// pod of theirs starts again; a clean-up Job, which loads nothing, goes on. A Job deleted at once could be given a new pod: the Job
// controller, still holding it in its cache, replaced the pods the garbage collector deleted
// (seen in e2e: a second pod that lived a few seconds). So each Job is suspended first, and
// the Job controller deletes its pods and creates none; once it says so (condition
// Suspended, whose status update wakes the benchmark, which comes back here as its run has
// ended), the Job is deleted in the foreground, and the Job controller leaves a Job being
// deleted alone. Its pods are then gone before it is.
func (r *CouchBenchmarkReconciler) stopJobs(ctx context.Context, bench *benchv1.CouchBenchmark) error {
	var jobs batchv1.JobList
	ofBenchmark := client.MatchingLabels{builders.LabelBenchmark: builders.LabelValue(bench.Name)}
	if err := r.List(ctx, &jobs, client.InNamespace(bench.Namespace), ofBenchmark); err != nil {
		return err
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if phase := phaseOf(job); phase == jobSucceeded || phase == jobFailed || !metav1.IsControlledBy(job, bench) || !job.DeletionTimestamp.IsZero() ||
			job.Labels[builders.LabelStep] == string(benchv1.StepCleanup) {
			continue
		}
		if err := r.stopJob(ctx, job); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// stopJob takes job one step towards its end: suspends it, or deletes it once the Job
// controller has suspended it.
func (r *CouchBenchmarkReconciler) stopJob(ctx context.Context, job *batchv1.Job) error {
	if !ptr.Deref(job.Spec.Suspend, false) {
		patch := client.MergeFrom(job.DeepCopy())
		job.Spec.Suspend = ptr.To(true)
		return r.Patch(ctx, job, patch)
	}
	if !suspended(job) {
		return nil
	}
	return r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground))
}

// suspended says whether the Job controller has suspended job (its condition Suspended): its
// pods are being deleted, and it will create none.
func suspended(job *batchv1.Job) bool {
	return slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionTrue
	})
}
