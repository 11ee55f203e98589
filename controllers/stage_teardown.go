package controllers

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// removeCouchDB uninstalls an arm's release and deletes its admin Secret; both are no-ops
// when already gone.
func (r *CouchBenchmarkReconciler) removeCouchDB(ctx context.Context, bench *benchv1.CouchBenchmark, arm string) error {
	if err := r.Releases.Uninstall(ctx, bench.Namespace, builders.ReleaseName(bench, arm)); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bench.Namespace, Name: builders.AdminSecretName(bench, arm)}}
	return client.IgnoreNotFound(r.Delete(ctx, secret))
}

// cleanUpAfterFailure stops what a failed run left running: Jobs still going (their load
// would go on hitting CouchDB) and, under teardown Always, every provisioned CouchDB. The
// results stay.
func (r *CouchBenchmarkReconciler) cleanUpAfterFailure(ctx context.Context, bench *benchv1.CouchBenchmark) error {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(bench.Namespace), client.MatchingLabels{builders.LabelBenchmark: bench.Name}); err != nil {
		return err
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if finished, _ := jobState(job); finished || !metav1.IsControlledBy(job, bench) {
			continue
		}
		if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if bench.Spec.CouchDB.Provision == nil || bench.Spec.Teardown != benchv1.TeardownAlways {
		return nil
	}
	for _, qs := range bench.Spec.QueryServers {
		if err := r.removeCouchDB(ctx, bench, qs.Name); err != nil {
			return err
		}
	}
	return nil
}

func keyOf(obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
