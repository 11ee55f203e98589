package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/history"
)

// conditionShifted is True while a metric's level has shifted within the last recentRuns
// runs of the schedule's history.
const (
	conditionShifted = "Shifted"
	reasonNoShift    = "NoShift"
	reasonShift      = "ShiftDetected"
	reasonShiftEnded = "ShiftEnded"
	// reasonShiftAccepted: spec.acceptedShifts newly names a run of the history.
	reasonShiftAccepted = "ShiftAccepted"
	recentRuns          = 10
	// maxShifts bounds the shifts status lists, maxDetections its judged metrics'
	// detectable shifts.
	maxShifts     = 20
	maxDetections = 20
)

// observeShifts finds the shifts in the schedule's history and shows them: in status (the
// list, and the runs where they began), the Shifted condition, the metrics, and one event for
// each shift the history has not announced before. Only judged shifts: in runs with a
// reference arm, a shift in an arm's own numbers is the machine's as much as the arm's, and
// stays on the history's page. Status also says what the history can find: the false-alarm
// budget and each judged metric's noise and detectable shift.
func (r *CouchBenchmarkScheduleReconciler) observeShifts(ctx context.Context, s *benchv1.CouchBenchmarkSchedule, now time.Time) error {
	owner := metav1.NewControllerRef(s, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))
	// A history the schedule cannot use says so in Shifted; the schedule goes on starting
	// runs, which succeed without it. One it cannot read says nothing of shifts, so none are
	// shown (nor alerted on); one it cannot write still shows what it holds.
	h, cm, err := readHistory(ctx, r.APIReader, s.Namespace, *owner)
	var unusable *unusableHistoryError
	if errors.As(err, &unusable) {
		s.Status.Shifts, s.Status.Detection = nil, nil
		recordShiftMetrics(s, nil)
		r.historyUnusable(s, now, unusable)
		return nil
	}
	if err != nil {
		return err
	}
	err = r.announceShifts(ctx, s, &h, cm)
	notWritten := errors.As(err, &unusable)
	if err != nil && !notWritten {
		return err
	}
	found := history.Judged(h.Shifts())
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
	st.Detection = detectionStatus(h)

	if notWritten {
		r.historyUnusable(s, now, unusable)
		return nil
	}
	recent := recentShifts(h, found)
	if len(recent) == 0 {
		setCondition(&st.Conditions, s.Generation, now, conditionShifted, metav1.ConditionFalse, reasonNoShift,
			fmt.Sprintf("no metric shifted within the last %d runs of %d in the history", recentRuns, len(h.Runs))+acceptedNote(h, s.Spec.AcceptedShifts))
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
	setCondition(&st.Conditions, s.Generation, now, conditionShifted, metav1.ConditionTrue, string(reason),
		firstLines(lines, 3)+acceptedNote(h, s.Spec.AcceptedShifts))
	return nil
}

// acceptedNote says which runs spec.acceptedShifts accepts as a new level, and which of its
// names the history does not hold (mistyped, or older than its oldest run), which accept
// nothing; empty when it names none.
func acceptedNote(h history.History, accepted []string) string {
	held, missing := heldRuns(h, accepted)
	var note string
	if len(held) > 0 {
		note += "; levels accepted from runs " + strings.Join(held, ", ") + " (spec.acceptedShifts)"
	}
	if len(missing) > 0 {
		note += "; spec.acceptedShifts names runs the history does not hold, which accept nothing: " + strings.Join(missing, ", ")
	}
	return note
}

// heldRuns splits names into the runs the history holds and those it does not, in order.
func heldRuns(h history.History, names []string) (held, missing []string) {
	for _, name := range names {
		if slices.ContainsFunc(h.Runs, func(r history.Run) bool { return r.Name == name }) {
			held = append(held, name)
		} else {
			missing = append(missing, name)
		}
	}
	return held, missing
}

// historyUnusable sets Shifted to Unknown with what is wrong with the history and what to
// do, and tells it in a Warning event when the condition did not say it already.
func (r *CouchBenchmarkScheduleReconciler) historyUnusable(s *benchv1.CouchBenchmarkSchedule, now time.Time, unusable *unusableHistoryError) {
	said := meta.FindStatusCondition(s.Status.Conditions, conditionShifted)
	if said == nil || said.Reason != unusable.reason || said.Message != unusable.Error() {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, unusable.reason, "History", "%s", unusable.Error())
	}
	setCondition(&s.Status.Conditions, s.Generation, now, conditionShifted, metav1.ConditionUnknown, unusable.reason, unusable.Error())
}

// announceShifts takes the schedule's look at the runs its history's earlier looks did not
// see (history.Judge), records what it found in the history, and then sends one event for each
// judged shift found now, or dip that ended, and one for each run that spec.acceptedShifts
// newly accepts: a reconcile that fails to record it sends nothing, and the next one looks
// again.
func (r *CouchBenchmarkScheduleReconciler) announceShifts(ctx context.Context, s *benchv1.CouchBenchmarkSchedule,
	h *history.History, cm *corev1.ConfigMap) error {
	if cm == nil {
		return nil
	}
	before, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var acceptedBefore []string
	if h.Looks != nil {
		acceptedBefore = h.Looks.Accepted
	}
	fresh := history.Judged(h.Judge(s.Spec.AcceptedShifts))
	data, err := json.Marshal(h)
	if err != nil || bytes.Equal(before, data) {
		return err
	}
	cm.Data[builders.HistoryKey] = string(data)
	if err := r.Update(ctx, cm); err != nil {
		return historyRequestError(reasonHistoryNotWritten, "recording the looks at", cm.Namespace, cm.Name, err)
	}
	for _, f := range fresh {
		kind, reason := corev1.EventTypeNormal, reasonShift
		if f.Worse {
			kind = corev1.EventTypeWarning
		}
		if f.Until != "" {
			kind, reason = corev1.EventTypeNormal, reasonShiftEnded
		}
		r.Recorder.Eventf(s, nil, kind, reason, "History", "%s: %s", f.Verdict(), f)
	}
	held, _ := heldRuns(*h, s.Spec.AcceptedShifts)
	for _, name := range held {
		if !slices.Contains(acceptedBefore, name) {
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, reasonShiftAccepted, "History",
				"spec.acceptedShifts accepts the level from run %s: every metric is judged against the runs from it on", name)
		}
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
	return benchv1.Shift{Metric: f.Metric, Run: f.Run, Runs: int32(f.Runs), FoundAt: f.FoundAt, Until: f.Until,
		Change: fmt.Sprintf("%+.1f%%", f.ChangePercent), NominalPValue: fmt.Sprintf("%.1e", f.NominalP),
		Level: fmt.Sprintf("%.1e", f.Level), Verdict: v, Follows: f.Follows}
}

// detectionStatus is the history's budget and, for its first maxDetections judged metrics,
// their noise and detectable shift; nil for an empty history.
func detectionStatus(h history.History) *benchv1.Detection {
	judged := h.Detections()
	if len(judged) == 0 {
		return nil
	}
	d := &benchv1.Detection{FalseAlarmsPerRun: history.Budget(len(judged))}
	for _, j := range judged[:min(len(judged), maxDetections)] {
		d.Metrics = append(d.Metrics, benchv1.DetectableShift{Metric: j.Metric, Runs: int32(j.Runs),
			Noise: fmt.Sprintf("%.1f%%", j.NoisePercent), DetectableShift: j.Shift()})
	}
	return d
}

// firstLines joins the first n lines and says how many were left out.
func firstLines(lines []string, n int) string {
	if len(lines) <= n {
		return strings.Join(lines, "; ")
	}
	return strings.Join(lines[:n], "; ") + fmt.Sprintf("; and %d more", len(lines)-n)
}
