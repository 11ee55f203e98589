package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// finalizerName holds a benchmark that provisions CouchDB until its Helm releases are gone:
// Helm's objects carry no owner reference to the benchmark, so garbage collection alone
// would leave the CouchDB clusters behind.
const finalizerName = "bench.couchbench.io/helm-releases"

// ensureFinalizer adds the finalizer to a benchmark that provisions CouchDB, with a patch
// (the spec is immutable, and a full update would send it back re-encoded).
func (r *CouchBenchmarkReconciler) ensureFinalizer(ctx context.Context, bench *benchv1.CouchBenchmark) (bool, error) {
	if bench.Spec.CouchDB.Provision == nil || controllerutil.ContainsFinalizer(bench, finalizerName) {
		return false, nil
	}
	patch := client.MergeFrom(bench.DeepCopy())
	controllerutil.AddFinalizer(bench, finalizerName)
	return true, r.Patch(ctx, bench, patch)
}

// finalize uninstalls every arm's release, whatever the teardown policy, then lets the
// benchmark go; Jobs, ConfigMaps and Secrets it owns are garbage-collected.
func (r *CouchBenchmarkReconciler) finalize(ctx context.Context, bench *benchv1.CouchBenchmark) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(bench, finalizerName) {
		return ctrl.Result{}, nil
	}
	for _, qs := range bench.Spec.QueryServers {
		if err := r.removeCouchDB(ctx, bench, qs.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	patch := client.MergeFrom(bench.DeepCopy())
	controllerutil.RemoveFinalizer(bench, finalizerName)
	return ctrl.Result{}, r.Patch(ctx, bench, patch)
}
