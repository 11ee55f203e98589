package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Condition types, in the kstatus style: Ready is the summary a user or a GitOps tool
// waits on; Reconciling is true while the operator works toward the goal; Stalled is true
// when it cannot make progress without a change from the user.
const (
	conditionReady       = "Ready"
	conditionReconciling = "Reconciling"
	conditionStalled     = "Stalled"
)

// Condition reasons.
const (
	reasonCredentialsNotFound   = "CredentialsNotFound"
	reasonCredentialsIncomplete = "CredentialsIncomplete"
	reasonPreflightPassed       = "PreflightPassed"
)

// markStalled records that the run cannot start until the user fixes what message says.
func markStalled(status *benchv1.CouchBenchmarkStatus, generation int64, now time.Time, reason, message string) {
	setCondition(status, generation, now, conditionStalled, metav1.ConditionTrue, reason, message)
	setCondition(status, generation, now, conditionReady, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(&status.Conditions, conditionReconciling)
}

// markWaiting records that the checks passed and the run has not finished.
func markWaiting(status *benchv1.CouchBenchmarkStatus, generation int64, now time.Time) {
	meta.RemoveStatusCondition(&status.Conditions, conditionStalled)
	setCondition(status, generation, now, conditionReady, metav1.ConditionFalse, reasonPreflightPassed,
		"preflight checks passed; the benchmark has not run")
}

func isStalled(status *benchv1.CouchBenchmarkStatus) bool {
	return meta.IsStatusConditionTrue(status.Conditions, conditionStalled)
}

// setCondition sets a condition; meta.SetStatusCondition keeps LastTransitionTime when the
// status does not change, so a reconcile that observes nothing new writes nothing.
func setCondition(status *benchv1.CouchBenchmarkStatus, generation int64, now time.Time,
	condType string, value metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             value,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}
