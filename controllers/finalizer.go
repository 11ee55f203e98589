package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Finalizers hold a benchmark until what it made outside Kubernetes' reach is gone: nothing
// there carries an owner reference to it, so garbage collection alone would leave it behind.
const (
	// finalizerName holds a benchmark that provisions CouchDB until its Helm releases, whose
	// objects Helm owns, are uninstalled.
	finalizerName = "bench.couchbench.io/helm-releases"
	// databasesFinalizer holds a benchmark of an existing CouchDB until the databases its run
	// made there are deleted (unless spec.keepDatabases): the run's cleanup step deletes them,
	// but a benchmark deleted before it, or a cleanup that gave up, would leave them.
	databasesFinalizer = "bench.couchbench.io/databases"
)

// finalizerOf is the finalizer the benchmark needs; "" for none.
func finalizerOf(bench *benchv1.CouchBenchmark) string {
	switch {
	case bench.Spec.CouchDB.Provision != nil:
		return finalizerName
	case !bench.Spec.KeepDatabases:
		return databasesFinalizer
	}
	return ""
}

// ensureFinalizer adds the benchmark's finalizer, with a patch (the spec is immutable, and a
// full update would send it back re-encoded).
func (r *CouchBenchmarkReconciler) ensureFinalizer(ctx context.Context, bench *benchv1.CouchBenchmark) (bool, error) {
	f := finalizerOf(bench)
	if f == "" || controllerutil.ContainsFinalizer(bench, f) {
		return false, nil
	}
	patch := client.MergeFrom(bench.DeepCopy())
	controllerutil.AddFinalizer(bench, f)
	return true, r.Patch(ctx, bench, patch)
}

// finalize removes what the benchmark made outside Kubernetes' reach, whatever the teardown
// policy: every arm's release, or the run's databases on an existing CouchDB (finalCleanup);
// then lets the benchmark go. Jobs, ConfigMaps and Secrets it owns are garbage-collected.
func (r *CouchBenchmarkReconciler) finalize(ctx context.Context, bench *benchv1.CouchBenchmark) (ctrl.Result, error) {
	switch {
	case controllerutil.ContainsFinalizer(bench, finalizerName):
		for _, qs := range bench.Spec.QueryServers {
			if err := r.removeCouchDB(ctx, bench, qs.Name); err != nil {
				return ctrl.Result{}, err
			}
		}
	case controllerutil.ContainsFinalizer(bench, databasesFinalizer):
		if done, err := r.finalCleanup(ctx, bench); err != nil || !done {
			return ctrl.Result{RequeueAfter: finalizePoll}, err
		}
	default:
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(bench.DeepCopy())
	controllerutil.RemoveFinalizer(bench, finalizerName)
	controllerutil.RemoveFinalizer(bench, databasesFinalizer)
	return ctrl.Result{}, r.Patch(ctx, bench, patch)
}

// finalizePoll is how often the clean-up Job of a benchmark being deleted is looked at: it is
// owned by nothing, so its end wakes nobody.
const finalizePoll = 5 * time.Second

// finalCleanup deletes the run's databases on an existing CouchDB as the benchmark goes: a
// clean-up Job of its own (owned by nothing: the garbage collector takes what a benchmark
// being deleted owns), deleted once it has ended. Given up on, with a Warning event, when it
// fails, when it has not ended within cleanupPatience of the deletion, or when the credentials
// Secret is gone (nothing can log in any more). done says the benchmark may go.
func (r *CouchBenchmarkReconciler) finalCleanup(ctx context.Context, bench *benchv1.CouchBenchmark) (done bool, err error) {
	secret := bench.Spec.CouchDB.Existing.CredentialsSecret.Name
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: bench.Namespace, Name: secret}, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		r.databasesLeft(bench, fmt.Sprintf("the credentials Secret %s is gone", secret))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	want := r.cleanupJob(bench, true)
	var job batchv1.Job
	err = r.Get(ctx, client.ObjectKeyFromObject(want), &job)
	late := r.Clock.Since(bench.DeletionTimestamp.Time) >= cleanupPatience
	switch {
	case apierrors.IsNotFound(err) && late:
		r.databasesLeft(bench, fmt.Sprintf("no clean-up within %s of the deletion", cleanupPatience))
		return true, nil
	case apierrors.IsNotFound(err):
		return false, client.IgnoreNotFound(r.Create(ctx, want))
	case err != nil:
		return false, err
	}
	switch phase := phaseOf(&job); {
	case phase == jobFailed:
		r.databasesLeft(bench, fmt.Sprintf("Job %s failed", job.Name))
	case phase == jobRunning && late:
		r.databasesLeft(bench, fmt.Sprintf("Job %s did not end within %s", job.Name, cleanupPatience))
	case phase == jobRunning:
		return false, nil
	}
	return true, client.IgnoreNotFound(r.Delete(ctx, &job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}
