package controllers

// Stopping the Jobs of a failed run. These tests talk to envtest's kube-apiserver (and, for
// the run's databases, to existingCouchDB, a stub), which runs neither the Job controller nor
// the garbage collector: the test writes the Suspended condition the Job controller would,
// and a Job deleted in the foreground stays there, marked for deletion with the
// foregroundDeletion finalizer, as it would in a cluster until its pods are gone.

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// A failed run's running Job is suspended, and deleted only once the Job controller has
// suspended it (so that no sync of the Job controller, from a cache that still holds the Job
// as it was, can start a pod for it), then in the foreground.
func TestFailedRunSuspendsItsJobBeforeDeletingIt(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, got, seed := timedOut(t, h, ns)
	if got.Status.Phase != benchv1.PhaseFailed {
		t.Fatalf("phase %s after the timeout; want Failed", got.Status.Phase)
	}
	name := seed.Name
	seed = job(t, ns, name)
	if !ptr.Deref(seed.Spec.Suspend, false) || seed.DeletionTimestamp != nil {
		t.Fatalf("after the failure the Job has suspend %v and deletion timestamp %v; want it suspended, not deleted",
			ptr.Deref(seed.Spec.Suspend, false), seed.DeletionTimestamp)
	}
	h.reconcile(bench)
	if seed = job(t, ns, name); seed.DeletionTimestamp != nil {
		t.Fatalf("the Job was deleted before the Job controller had suspended it")
	}

	seed.Status.Conditions = append(seed.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue,
		Reason: "JobSuspended", Message: "Job suspended", LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	if err := env.Client.Status().Update(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	h.reconcile(bench)
	seed = job(t, ns, name)
	if seed.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(seed, metav1.FinalizerDeleteDependents) {
		t.Errorf("once suspended, the Job has deletion timestamp %v and finalizers %v; want it deleted in the foreground (finalizer %s)",
			seed.DeletionTimestamp, seed.Finalizers, metav1.FinalizerDeleteDependents)
	}
}
