package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// A schedule's health is what Flux's health checks (kstatus) and Argo CD's health check
// (charts/couchbench-operator/files/health/) read from its conditions: Ready while it is
// healthy, Stalled (kstatus Failed, Argo CD Degraded) while a person must look at it. It
// follows the schedule's runs, not the schedule alone: a schedule whose runs fail, or whose
// history shows a metric got worse and stayed so, is not healthy however well it starts runs.
// One run's verdict (the Regressed condition) is not in it: a verdict on two runs is noisier
// than a shift over many, and a health that flips on it would page for noise.

const (
	// reasonRunFailed: the schedule's latest finished run failed.
	reasonRunFailed = "RunFailed"
	// reasonShiftRegressed: a metric's level got worse within the schedule's recent runs.
	reasonShiftRegressed = "ShiftRegressed"
)

// scheduleHealth says what is wrong with a schedule that a person must look at, or nil: its
// latest finished run failed (until a later run succeeds), or its Shifted condition says a
// metric got worse within the last recentRuns runs (until a later shift undoes it or it is
// older than that).
func scheduleHealth(s *benchv1.CouchBenchmarkSchedule, runs scheduledRuns) *notice {
	if latest := runs.latestFinished(); latest != nil && latest.Status.Phase == benchv1.PhaseFailed {
		return &notice{corev1.EventTypeWarning, reasonRunFailed, fmt.Sprintf("run %s failed: %s", latest.Name, howItEnded(latest))}
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, conditionShifted); c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason == string(benchv1.VerdictRegressed) {
		return &notice{corev1.EventTypeWarning, reasonShiftRegressed,
			fmt.Sprintf("a metric got worse within the last %d runs and stayed so: %s", recentRuns, c.Message)}
	}
	return nil
}

// howItEnded is a finished run's own account of its end: status.message, or, for a run of an
// operator that wrote none, its Stalled condition.
func howItEnded(run *benchv1.CouchBenchmark) string {
	if run.Status.Message != "" {
		return run.Status.Message
	}
	if c := meta.FindStatusCondition(run.Status.Conditions, conditionStalled); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "phase " + string(run.Status.Phase)
}
