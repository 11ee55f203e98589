package controllers

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// cleanUpAfterFailure stops what a failed run left running: Jobs still going (their load
// would go on hitting CouchDB) and, under teardown Always, every provisioned CouchDB. The
// results stay. A failure here is reported, not retried: the run's Failed status must be
// written whatever happens, and deleting the benchmark removes its releases anyway.
func (r *CouchBenchmarkReconciler) cleanUpAfterFailure(ctx context.Context, bench *benchv1.CouchBenchmark) {
	if err := r.stopAfterFailure(ctx, bench); err != nil {
		log.FromContext(ctx).Error(err, "cleaning up after a failed run")
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonCleanUpFailed, "CleanUp",
			"cleaning up after the failure: %v; delete the benchmark to remove what is left", err)
	}
}

func (r *CouchBenchmarkReconciler) stopAfterFailure(ctx context.Context, bench *benchv1.CouchBenchmark) error {
	var jobs batchv1.JobList
	ofBenchmark := client.MatchingLabels{builders.LabelBenchmark: builders.LabelValue(bench.Name)}
	if err := r.List(ctx, &jobs, client.InNamespace(bench.Namespace), ofBenchmark); err != nil {
		return err
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if phase := phaseOf(job); phase == jobSucceeded || phase == jobFailed || !metav1.IsControlledBy(job, bench) {
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
