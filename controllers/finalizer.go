package controllers

import (
	"context"

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
// policy: every arm's release, or the run's databases on an existing CouchDB (given up on,
// with a Warning event, after cleanupPatience or when its credentials are gone); then lets
// the benchmark go. Jobs, ConfigMaps and Secrets it owns are garbage-collected.
func (r *CouchBenchmarkReconciler) finalize(ctx context.Context, bench *benchv1.CouchBenchmark) (ctrl.Result, error) {
	switch {
	case controllerutil.ContainsFinalizer(bench, finalizerName):
		for _, qs := range bench.Spec.QueryServers {
			if err := r.removeCouchDB(ctx, bench, qs.Name); err != nil {
				return ctrl.Result{}, err
			}
		}
	case controllerutil.ContainsFinalizer(bench, databasesFinalizer):
		if err := r.deleteDatabases(ctx, bench, armNames(bench)); err != nil {
			if err := r.databasesLeft(bench, bench.DeletionTimestamp.Time, err); err != nil {
				return ctrl.Result{}, err
			}
		}
	default:
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(bench.DeepCopy())
	controllerutil.RemoveFinalizer(bench, finalizerName)
	controllerutil.RemoveFinalizer(bench, databasesFinalizer)
	return ctrl.Result{}, r.Patch(ctx, bench, patch)
}
