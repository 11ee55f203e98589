package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/history"
)

// conditionShifted is True while a metric's level has shifted within the last recentRuns
// runs of the schedule's history.
const (
	conditionShifted = "Shifted"
	reasonNoShift    = "NoShift"
	reasonShift      = "ShiftDetected"
	recentRuns       = 10
	// maxShifts bounds the shifts status lists.
	maxShifts = 20
)

// observeShifts finds the shifts in the schedule's history and shows them: in status (the
// list, and the runs where they began), the Shifted condition, the metrics, and one event for
// each shift the history has not announced before. Only judged shifts: in runs with a
// reference arm, a shift in an arm's own numbers is the machine's as much as the arm's, and
// stays on the history's page.
func (r *CouchBenchmarkScheduleReconciler) observeShifts(ctx context.Context, s *benchv1.CouchBenchmarkSchedule, now time.Time) error {
	owner := metav1.NewControllerRef(s, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))
	h, cm, err := readHistory(ctx, r.APIReader, s.Namespace, *owner)
	if err != nil {
		return err
	}
	found := history.Judged(h.Shifts(changepoint.Options{}))
	if err := r.announceShifts(ctx, s, h, cm, found); err != nil {
		return err
	}
	st := &s.Status
	st.Shifts = nil
	began := map[string][]string{}
	for _, f := range found {
		shift := shiftStatus(f)
		if len(st.Shifts) < maxShifts {
			st.Shifts = append(st.Shifts, shift)
		}
		began[f.Run] = append(began[f.Run], fmt.Sprintf("%s %s", f.Metric, shift.Change))
	}
	for i := range st.History {
		st.History[i].Shift = strings.Join(began[st.History[i].Name], "; ")
	}
	recordShiftMetrics(s, found)

	recent := recentShifts(h, found)
	if len(recent) == 0 {
		setCondition(&st.Conditions, s.Generation, now, conditionShifted, metav1.ConditionFalse, reasonNoShift,
			fmt.Sprintf("no metric shifted within the last %d runs of %d in the history", recentRuns, len(h.Runs)))
		return nil
	}
	reason := benchv1.VerdictImproved
	var lines []string
	for _, f := range recent {
		if f.Worse {
			reason = benchv1.VerdictRegressed
		}
		lines = append(lines, f.String())
	}
	setCondition(&st.Conditions, s.Generation, now, conditionShifted, metav1.ConditionTrue, string(reason), firstLines(lines, 3))
	return nil
}

// announceShifts sends one event for each shift the history has not announced, after the
// history records it: a reconcile that fails to record it sends nothing, and the next one
// tries again.
func (r *CouchBenchmarkScheduleReconciler) announceShifts(ctx context.Context, s *benchv1.CouchBenchmarkSchedule,
	h history.History, cm *corev1.ConfigMap, found []history.Shift) error {
	var fresh []history.Shift
	for _, f := range found {
		if h.Announce(f) {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	cm.Data[builders.HistoryKey] = string(data)
	if err := r.Update(ctx, cm); err != nil {
		return fmt.Errorf("recording the announced shifts in the history: %w", err)
	}
	for _, f := range fresh {
		kind := corev1.EventTypeNormal
		if f.Worse {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(s, nil, kind, reasonShift, "History", "%s: %s", f.Verdict(), f)
	}
	return nil
}

// recentShifts are the shifts that began within the history's last recentRuns runs, worse
// ones first.
func recentShifts(h history.History, shifts []history.Shift) []history.Shift {
	since := map[string]bool{}
	for _, r := range h.Runs[max(0, len(h.Runs)-recentRuns):] {
		since[r.Name] = true
	}
	var out []history.Shift
	for _, f := range shifts {
		if since[f.Run] {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b history.Shift) int {
		switch {
		case a.Worse == b.Worse:
			return 0
		case a.Worse:
			return -1
		}
		return 1
	})
	return out
}

func shiftStatus(f history.Shift) benchv1.Shift {
	v := benchv1.VerdictImproved
	if f.Worse {
		v = benchv1.VerdictRegressed
	}
	return benchv1.Shift{Metric: f.Metric, Run: f.Run, Runs: int32(f.Runs), Change: fmt.Sprintf("%+.1f%%", f.ChangePercent),
		Confidence: fmt.Sprintf("%.2f%%", f.Confidence), Verdict: v}
}

// firstLines joins the first n lines and says how many were left out.
func firstLines(lines []string, n int) string {
	if len(lines) <= n {
		return strings.Join(lines, "; ")
	}
	return strings.Join(lines[:n], "; ") + fmt.Sprintf("; and %d more", len(lines)-n)
}
