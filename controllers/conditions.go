package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types, in the kstatus style: Ready is the summary a user or a GitOps tool
// waits on (true once the benchmark finished with results); Reconciling is true while the
// run is under way; Stalled is true when the operator cannot go on without a change from
// the user (a missing Secret, a failed run).
const (
	conditionReady       = "Ready"
	conditionReconciling = "Reconciling"
	conditionStalled     = "Stalled"
	// conditionRegressed and conditionImproved give the verdict against the baseline: True,
	// False, or Unknown (inconclusive, not comparable, no baseline), with the reason.
	conditionRegressed = "Regressed"
	conditionImproved  = "Improved"
	// conditionLoadIsolated says whether the load generators kept off the CouchDB nodes.
	conditionLoadIsolated = "LoadIsolated"
	// conditionSameNodes says whether every arm's CouchDB ran on the first arm's nodes.
	conditionSameNodes = "ArmsOnSameNodes"
	// conditionRuntimeAsAsked says whether every arm's views ran on what its preset, engine or
	// command asks for.
	conditionRuntimeAsAsked = "RuntimeAsAsked"
	// conditionDecided says whether the steps that added rounds until decided
	// (spec.sequential) decided every arm's ratio before they stopped.
	conditionDecided = "Decided"
	// conditionNodesReady says whether every node that holds a pod of the running benchmark is
	// ready (nodes.go); it appears when one is first lost, and keeps what the run saw last once
	// it has ended.
	conditionNodesReady = "NodesReady"
	// conditionHistoryRecorded says whether a scheduled run that succeeded is in its schedule's
	// history (history.go); False says what is wrong with the history, which held nothing up.
	conditionHistoryRecorded = "HistoryRecorded"
)

// Condition and event reasons.
const (
	reasonCredentialsNotFound   = "CredentialsNotFound"
	reasonCredentialsIncomplete = "CredentialsIncomplete"
	reasonChartNotFound         = "ChartNotFound"
	reasonPreflightPassed       = "PreflightPassed"
	reasonStepStarted           = "StepStarted"
	reasonStepDone              = "StepDone"
	reasonRunning               = "Running"
	reasonSucceeded             = "Succeeded"
	reasonTimeout               = "Timeout"
	reasonChartFailed           = "ChartFailed"
	reasonChartRefused          = "ChartRefused"
	reasonChartNotAllowed       = "ChartNotAllowed"
	reasonClusterNotReady       = "ClusterNotReady"
	reasonImagePullFailed       = "ImagePullFailed"
	reasonPodNotStarting        = "PodNotStarting"
	reasonUnschedulable         = "Unschedulable"
	reasonReconcileError        = "ReconcileError"
	reasonRetrying              = "Retrying"
	reasonStepFailed            = "StepFailed"
	reasonThresholdsFailed      = "ThresholdsFailed"
	reasonUnknownStep           = "UnknownStep"
	reasonNameCollision         = "NameCollision"
	reasonCleanUpFailed         = "CleanUpFailed"
	reasonThresholdsMet         = "ThresholdsMet"
	reasonSeparateNodes         = "SeparateNodes"
	reasonSharedNode            = "SharedNode"
	reasonSameNodes             = "SameNodes"
	reasonOtherNodes            = "OtherNodes"
	reasonPartStopped           = "PartStopped"
	reasonNoBaseline            = "NoBaseline"
	reasonBaselineNotFound      = "BaselineNotFound"
	reasonNotComparable         = "NotComparable"
	reasonBaselineNotFinished   = "BaselineNotFinished"
	reasonInvalidSchedule       = "InvalidSchedule"
	reasonScheduled             = "Scheduled"
	reasonSuspended             = "Suspended"
	reasonMissedSchedule        = "MissedSchedule"
	reasonSkippedSchedule       = "SkippedSchedule"
	reasonReplaced              = "Replaced"
	reasonAsAsked               = "AsAsked"
	reasonRuntimeMismatch       = "RuntimeMismatch"
	reasonDecided               = "Decided"
	reasonUndecided             = "Undecided"
	reasonCPUCostNotMeasured    = "CPUCostNotMeasured"
	reasonDatabasesDeleted      = "DatabasesDeleted"
	reasonNodeLost              = "NodeLost"
	reasonNodesReady            = "NodesReady"
	reasonHistoryRecorded       = "Recorded"
	reasonHistoryNotOwned       = "HistoryNotOwned"
	reasonHistoryUnusable       = "HistoryUnusable"
	reasonHistoryTooLarge       = "HistoryTooLarge"
	reasonHistoryNotWritten     = "HistoryNotWritten"
)

// markStalled records that the run cannot start until the user fixes what message says.
func markStalled(conds *[]metav1.Condition, generation int64, now time.Time, reason, message string) {
	setCondition(conds, generation, now, conditionStalled, metav1.ConditionTrue, reason, message)
	setCondition(conds, generation, now, conditionReady, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(conds, conditionReconciling)
}

// markProgressing records the step under way.
func markProgressing(conds *[]metav1.Condition, generation int64, now time.Time, step planStep) {
	message := step.String()
	meta.RemoveStatusCondition(conds, conditionStalled)
	setCondition(conds, generation, now, conditionReconciling, metav1.ConditionTrue, reasonRunning, message)
	setCondition(conds, generation, now, conditionReady, metav1.ConditionFalse, reasonRunning, message)
}

// markRetrying records that the step under way failed in a way that may pass and is being
// tried again.
func markRetrying(conds *[]metav1.Condition, generation int64, now time.Time, reason, message string) {
	meta.RemoveStatusCondition(conds, conditionStalled)
	setCondition(conds, generation, now, conditionReconciling, metav1.ConditionTrue, reason, message)
	setCondition(conds, generation, now, conditionReady, metav1.ConditionFalse, reason, message)
}

func markSucceeded(conds *[]metav1.Condition, generation int64, now time.Time) {
	meta.RemoveStatusCondition(conds, conditionReconciling)
	meta.RemoveStatusCondition(conds, conditionStalled)
	setCondition(conds, generation, now, conditionReady, metav1.ConditionTrue, reasonSucceeded,
		"the benchmark finished; results are in status and the results ConfigMap")
}

// markFailed: a failed run is final (the spec cannot change), so it is Stalled with the
// reason and message that say what went wrong.
func markFailed(conds *[]metav1.Condition, generation int64, now time.Time, reason, message string) {
	meta.RemoveStatusCondition(conds, conditionReconciling)
	setCondition(conds, generation, now, conditionStalled, metav1.ConditionTrue, reason, message)
	setCondition(conds, generation, now, conditionReady, metav1.ConditionFalse, reason, message)
}

func isStalled(conds *[]metav1.Condition) bool {
	return meta.IsStatusConditionTrue(*conds, conditionStalled)
}

// setCondition sets a condition; meta.SetStatusCondition keeps LastTransitionTime when the
// status does not change, so a reconcile that observes nothing new writes nothing.
func setCondition(conds *[]metav1.Condition, generation int64, now time.Time,
	condType string, value metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               condType,
		Status:             value,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}
