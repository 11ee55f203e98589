package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	"github.com/couchbench/couchbench/internal/rundbs"
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
	if err := r.Releases.Uninstall(ctx, bench.Namespace, release); err != nil {
		return err
	}
	err := r.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(bench.Namespace),
		client.MatchingLabels(builders.CouchDBPodLabels(release)))
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bench.Namespace, Name: builders.AdminSecretName(bench, arm)}}
	return client.IgnoreNotFound(r.Delete(ctx, secret))
}

// cleanupPatience is how long deleting a run's databases from an existing CouchDB is retried
// (a CouchDB restarting, a network blip) before the run, or the benchmark's deletion, goes on
// without it and says what is left.
const cleanupPatience = 2 * time.Minute

// cleanup ends the arms of an existing CouchDB: their results are in status and the results
// ConfigMaps, so the databases the run made there go (spec.keepDatabases keeps them, and then
// the plan has no cleanup step). A provisioned CouchDB goes with its release instead.
//
// The operator deletes them itself, with the admin it reads for the run's Jobs, rather than
// in a runner Job: a few DELETE requests measure nothing and need no pod, a pod that cannot
// be scheduled would leave them there, and a benchmark's deletion (the finalizer), where no
// Job could be waited for, does the same.
func (r *CouchBenchmarkReconciler) cleanup(ctx context.Context, bench *benchv1.CouchBenchmark, arms []string) (stepOutcome, error) {
	if err := r.deleteDatabases(ctx, bench, arms); err != nil {
		return stepOutcome{}, r.databasesLeft(bench, bench.Status.Progress.StepStartTime.Time, err)
	}
	return stepOutcome{done: true}, nil
}

// deleteDatabases deletes the databases the run made for arms on their existing CouchDB
// (rundbs.Databases: the same names the runner gave them), with an event naming those it
// found.
func (r *CouchBenchmarkReconciler) deleteDatabases(ctx context.Context, bench *benchv1.CouchBenchmark, arms []string) error {
	// Arms of an existing CouchDB share its URL and admin.
	c, err := r.couchClient(ctx, bench, queryServer(bench, arms[0]))
	if err != nil {
		return err
	}
	var deleted []string
	var errs []error
	for _, arm := range arms {
		d, err := rundbs.DeleteDatabases(ctx, c, rundbs.Databases(bench, builders.RunID(bench), arm))
		deleted, errs = append(deleted, d...), append(errs, err)
	}
	if len(deleted) > 0 {
		r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonDatabasesDeleted, "CleanUp", "deleted the run's databases from %s: %s",
			c.URL(), strings.Join(deleted, ", "))
	}
	return errors.Join(errs...)
}

// databasesLeft decides about the run's databases that could not be deleted, err why, after
// trying since since: within cleanupPatience, err, and the reconcile is retried; after it, or
// when the credentials Secret is gone (nothing can log in any more), a Warning event that
// says what is left and how to remove it, and nil: the run, or the benchmark's deletion,
// goes on without.
func (r *CouchBenchmarkReconciler) databasesLeft(bench *benchv1.CouchBenchmark, since time.Time, err error) error {
	if r.Clock.Since(since) < cleanupPatience && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the run's databases: %w", err)
	}
	existing := bench.Spec.CouchDB.Existing
	r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonCleanUpFailed, "CleanUp",
		"the run's databases on %s could not be deleted (%v); remove them with couchbench clean --benchmark %s --run-id %s --url %s",
		existing.URL, err, bench.Name, builders.RunID(bench), existing.URL)
	return nil
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
		return r.deleteDatabases(ctx, bench, armNames(bench))
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
// pod of theirs starts again. A Job deleted at once could be given a new pod: the Job
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
		if phase := phaseOf(job); phase == jobSucceeded || phase == jobFailed || !metav1.IsControlledBy(job, bench) || !job.DeletionTimestamp.IsZero() {
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

// armNames are the names of every arm of the benchmark, in the spec's order.
func armNames(bench *benchv1.CouchBenchmark) []string {
	names := make([]string, len(bench.Spec.QueryServers))
	for i, qs := range bench.Spec.QueryServers {
		names[i] = qs.Name
	}
	return names
}
