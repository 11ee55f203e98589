package controllers

// The schedule controller against a real kube-apiserver (envtest), with a fake clock: the
// tests step through a schedule's start times without sleeping, and play the runs' ends by
// writing their status (the CouchBenchmark controller is not running here).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/history"
)

type scheduleHarness struct {
	t        *testing.T
	r        *CouchBenchmarkScheduleReconciler
	clock    *clocktesting.FakePassiveClock
	recorder *events.FakeRecorder
	schedule *benchv1.CouchBenchmarkSchedule
	// minute is the start of the minute the schedule was created in (by the API server's
	// clock): tests count from it, so that "+65s" is always just after the next start time.
	minute time.Time
}

// newSchedule creates a schedule from spec in a new namespace, with a fake clock set to its
// creation time.
func newSchedule(t *testing.T, spec benchv1.CouchBenchmarkScheduleSpec) *scheduleHarness {
	t.Helper()
	ns := env.Namespace(t)
	if spec.Template.Spec.QueryServers == nil {
		spec.Template.Spec = existingBenchmark(ns).Spec
	}
	s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: spec}
	create(t, s)
	h := &scheduleHarness{t: t, schedule: s, minute: s.CreationTimestamp.Truncate(time.Minute), recorder: events.NewFakeRecorder(100)}
	h.clock = clocktesting.NewFakePassiveClock(s.CreationTimestamp.Time)
	h.r = h.reconciler()
	return h
}

func (h *scheduleHarness) reconciler() *CouchBenchmarkScheduleReconciler {
	operator, err := client.New(env.OperatorConfig(h.t), client.Options{Scheme: env.Scheme})
	if err != nil {
		h.t.Fatal(err)
	}
	return &CouchBenchmarkScheduleReconciler{Client: operator, APIReader: operator, Recorder: h.recorder, Clock: h.clock}
}

// createHistory stores hist as the schedule's history ConfigMap.
func (h *scheduleHarness) createHistory(hist history.History) {
	h.t.Helper()
	data, err := json.Marshal(hist)
	if err != nil {
		h.t.Fatal(err)
	}
	create(h.t, builders.HistoryConfigMap(h.schedule.Namespace, h.schedule.Name, data, nil))
}

// writeHistory stores hist in the history ConfigMap cm, as the schedule's runs would have.
func writeHistory(t *testing.T, cm *corev1.ConfigMap, hist history.History) {
	t.Helper()
	data, err := json.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[builders.HistoryKey] = string(data)
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// at reconciles with the clock at the creation's minute plus d, and returns the schedule.
func (h *scheduleHarness) at(d time.Duration) (ctrl.Result, *benchv1.CouchBenchmarkSchedule) {
	h.t.Helper()
	h.clock.SetTime(h.minute.Add(d))
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(h.schedule)})
	if err != nil {
		h.t.Fatalf("Reconcile at +%s: %v", d, err)
	}
	var got benchv1.CouchBenchmarkSchedule
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h.schedule), &got); err != nil {
		h.t.Fatal(err)
	}
	return res, &got
}

// runs are the schedule's runs, by name.
func (h *scheduleHarness) runs() map[string]*benchv1.CouchBenchmark {
	h.t.Helper()
	var list benchv1.CouchBenchmarkList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(h.schedule.Namespace),
		client.MatchingLabels{benchv1.LabelSchedule: h.schedule.Name}); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*benchv1.CouchBenchmark{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// finish plays the end of a run, as the CouchBenchmark controller would write it.
func (h *scheduleHarness) finish(name string, phase benchv1.Phase, verdict benchv1.Verdict) {
	h.t.Helper()
	run := h.runs()[name]
	if run == nil {
		h.t.Fatalf("no run %s", name)
	}
	run.Status.Phase = phase
	run.Status.BestChangesPerSecond = ptr.To[int64](10000)
	if verdict != "" {
		run.Status.Comparison = &benchv1.ComparisonSummary{Baseline: "b", Verdict: verdict, Summary: "1 regressed, 3 unchanged: indexing -12%"}
	}
	if err := env.Client.Status().Update(context.Background(), run); err != nil {
		h.t.Fatal(err)
	}
}

// slotName is the run of the minute m minutes after the creation's minute.
func (h *scheduleHarness) slotName(m int) string {
	return builders.ScheduledRunName(h.schedule, h.minute.Add(time.Duration(m)*time.Minute))
}

func everyMinute() benchv1.CouchBenchmarkScheduleSpec {
	return benchv1.CouchBenchmarkScheduleSpec{Schedule: "* * * * *", Baseline: benchv1.ScheduleBaseline{Policy: benchv1.BaselinePreviousSuccessful}}
}

func TestScheduleRunsEachStartTimeOnceWithThePreviousRunAsBaseline(t *testing.T) {
	h := newSchedule(t, everyMinute())

	res, got := h.at(10 * time.Second)
	if len(h.runs()) != 0 || got.Status.NextScheduleTime == nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Fatalf("before the first start time: %d runs, next %v, requeue %s", len(h.runs()), got.Status.NextScheduleTime, res.RequeueAfter)
	}
	first := h.slotName(1)
	h.at(65 * time.Second)
	h.at(70 * time.Second) // the same start time again: no second run
	runs := h.runs()
	run := runs[first]
	if len(runs) != 1 || run == nil || run.Spec.Baseline != nil || !metav1.IsControlledBy(run, h.schedule) ||
		run.Annotations[benchv1.AnnotationScheduledAt] != h.minute.Add(time.Minute).UTC().Format(time.RFC3339) {
		t.Fatalf("runs %v; want one, %s, owned, annotated, without a baseline (no run has succeeded yet)", keys(runs), first)
	}

	// A restarted manager (a new reconciler) finds the run instead of making another.
	h.r = h.reconciler()
	h.at(75 * time.Second)
	if len(h.runs()) != 1 {
		t.Fatalf("runs after a restart %v", keys(h.runs()))
	}

	h.finish(first, benchv1.PhaseSucceeded, "")
	_, got = h.at(2*time.Minute + 5*time.Second)
	second := h.runs()[h.slotName(2)]
	if second == nil || second.Spec.Baseline == nil || second.Spec.Baseline.Benchmark != first || second.Spec.Baseline.TolerancePercent != 5 {
		t.Fatalf("second run %+v; want the first as its baseline", second)
	}
	if got.Status.LastSuccessfulRun != first || len(got.Status.Active) != 1 || got.Status.Active[0] != second.Name || len(got.Status.History) != 2 {
		t.Errorf("status %+v", got.Status)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}
}

// Forbid (the default): a start time that comes while a run is under way waits for it; only
// the latest missed start time runs then.
func TestForbidWaitsForTheRunningRun(t *testing.T) {
	spec := everyMinute()
	spec.ConcurrencyPolicy = benchv1.ConcurrencyForbid
	h := newSchedule(t, spec)
	h.at(65 * time.Second)
	h.at(3*time.Minute + 5*time.Second)
	if runs := h.runs(); len(runs) != 1 {
		t.Fatalf("runs %v: a second run started while the first ran", keys(runs))
	}
	// The wait is told once, in an event and in Ready, however often the run's status
	// changes wake the schedule meanwhile.
	_, got := h.at(3*time.Minute + 7*time.Second)
	if evs := drainRecorder(h.recorder); strings.Count(evs, reasonSkippedSchedule) != 1 {
		t.Errorf("events %s; want one %s", evs, reasonSkippedSchedule)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionReady); c == nil || c.Reason != reasonSkippedSchedule ||
		!strings.Contains(c.Message, h.slotName(1)+" is still running") {
		t.Errorf("Ready %+v; want the wait", c)
	}
	h.finish(h.slotName(1), benchv1.PhaseFailed, "")
	h.at(3*time.Minute + 10*time.Second)
	runs := h.runs()
	if len(runs) != 2 || runs[h.slotName(3)] == nil {
		t.Fatalf("runs %v; want the latest missed start time (minute 3), not minute 2", keys(runs))
	}
	// No successful run: the new run has no baseline.
	if runs[h.slotName(3)].Spec.Baseline != nil {
		t.Errorf("baseline %+v after a failed run", runs[h.slotName(3)].Spec.Baseline)
	}
}

// A start time that could not start within startingDeadlineSeconds is skipped, and said
// so once: a Warning event and Ready's reason, not one event per reconcile until the next
// start time.
func TestAMissedStartTimeIsToldOnce(t *testing.T) {
	spec := everyMinute()
	spec.StartingDeadlineSeconds = ptr.To[int64](10)
	h := newSchedule(t, spec)
	h.at(65 * time.Second)
	h.at(2*time.Minute + 5*time.Second) // minute 2 waits for minute 1's run
	for _, at := range []time.Duration{20 * time.Second, 30 * time.Second, 40 * time.Second} {
		h.at(2*time.Minute + at)
	}
	_, got := h.at(2*time.Minute + 50*time.Second)
	evs := drainRecorder(h.recorder)
	if strings.Count(evs, reasonMissedSchedule) != 1 || strings.Count(evs, reasonSkippedSchedule) != 1 {
		t.Errorf("events %s; want one wait, then one miss", evs)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, conditionReady)
	if c == nil || c.Reason != reasonMissedSchedule || !strings.Contains(c.Message, "not started within startingDeadlineSeconds (10s): skipped") {
		t.Errorf("Ready %+v; want the skipped start time", c)
	}
	if len(h.runs()) != 1 {
		t.Errorf("runs %v; want minute 1's only", keys(h.runs()))
	}

	// The next start time, with the run over, runs, and Ready says what comes next.
	h.finish(h.slotName(1), benchv1.PhaseSucceeded, "")
	_, got = h.at(3*time.Minute + 2*time.Second)
	if h.runs()[h.slotName(3)] == nil {
		t.Fatalf("runs %v; want minute 3's", keys(h.runs()))
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionReady); c == nil || c.Reason != reasonScheduled {
		t.Errorf("Ready %+v after a run started", c)
	}
}

func TestReplaceDeletesTheRunningRun(t *testing.T) {
	spec := everyMinute()
	spec.ConcurrencyPolicy = benchv1.ConcurrencyReplace
	h := newSchedule(t, spec)
	h.at(65 * time.Second)
	h.at(2*time.Minute + 5*time.Second)
	runs := h.runs()
	if len(runs) != 1 || runs[h.slotName(2)] == nil {
		t.Fatalf("runs %v; want the first replaced by the second", keys(runs))
	}
}

// The history keeps successfulRunsHistoryLimit successful runs and failedRunsHistoryLimit
// failed ones; never the latest successful (the next baseline) nor a run's baseline.
func TestHistoryLimitsPruneOldRuns(t *testing.T) {
	spec := everyMinute()
	spec.SuccessfulRunsHistoryLimit = 2
	spec.FailedRunsHistoryLimit = ptr.To[int32](0)
	h := newSchedule(t, spec)
	for m := 1; m <= 4; m++ {
		h.at(time.Duration(m)*time.Minute + 5*time.Second)
		phase := benchv1.PhaseSucceeded
		if m == 3 {
			phase = benchv1.PhaseFailed
		}
		h.finish(h.slotName(m), phase, benchv1.VerdictUnchanged)
	}
	_, got := h.at(4*time.Minute + 10*time.Second)
	runs := h.runs()
	if len(runs) != 2 || runs[h.slotName(2)] == nil || runs[h.slotName(4)] == nil {
		t.Fatalf("runs %v; want the two newest successful ones (minutes 2 and 4)", keys(runs))
	}
	if got.Status.LastVerdict != benchv1.VerdictUnchanged || len(got.Status.History) != 2 || got.Status.History[0].Name != h.slotName(4) {
		t.Errorf("status %+v", got.Status)
	}
}

func TestScheduleVerdictIsACondition(t *testing.T) {
	h := newSchedule(t, everyMinute())
	h.at(65 * time.Second)
	h.finish(h.slotName(1), benchv1.PhaseSucceeded, benchv1.VerdictRegressed)
	_, got := h.at(70 * time.Second)
	c := meta.FindStatusCondition(got.Status.Conditions, conditionRegressed)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "indexing -12%") || got.Status.LastVerdict != benchv1.VerdictRegressed {
		t.Errorf("Regressed %+v, last verdict %q", c, got.Status.LastVerdict)
	}
	if got.Status.History[0].Verdict != benchv1.VerdictRegressed || got.Status.History[0].BestChangesPerSecond == nil {
		t.Errorf("history %+v", got.Status.History)
	}
}

func TestSuspendedAndInvalidSchedulesStartNothing(t *testing.T) {
	spec := everyMinute()
	spec.Suspend = true
	h := newSchedule(t, spec)
	_, got := h.at(5 * time.Minute)
	if len(h.runs()) != 0 || got.Status.NextScheduleTime != nil {
		t.Errorf("suspended: %d runs, next %v", len(h.runs()), got.Status.NextScheduleTime)
	}

	for _, bad := range []struct{ schedule, tz, want string }{
		{"61 * * * *", "", "five fields"},
		{"@daily", "Mars/Olympus", "IANA"},
	} {
		spec := everyMinute()
		spec.Schedule, spec.TimeZone = bad.schedule, bad.tz
		h := newSchedule(t, spec)
		_, got := h.at(5 * time.Minute)
		c := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
		if len(h.runs()) != 0 || c == nil || c.Reason != reasonInvalidSchedule || !strings.Contains(c.Message, bad.want) ||
			!strings.Contains(c.Message, "spec.schedule") {
			t.Errorf("%q %q: Stalled %+v", bad.schedule, bad.tz, c)
		}
	}
}

func TestImmediateRunsOnceAtCreation(t *testing.T) {
	spec := everyMinute()
	spec.Schedule = "0 2 * * *"
	spec.Immediate = true
	h := newSchedule(t, spec)
	h.at(time.Second)
	h.at(2 * time.Second)
	runs := h.runs()
	if len(runs) != 1 {
		t.Fatalf("runs %v; want one immediate run", keys(runs))
	}
	for _, run := range runs {
		if run.Labels[benchv1.LabelImmediate] != "true" {
			t.Errorf("labels %v", run.Labels)
		}
	}
}

// An immediate run whose name is someone else's CouchBenchmark is skipped, and told once
// however often the schedule is reconciled: Ready keeps saying it.
func TestImmediateRunOfAForeignNameIsToldOnce(t *testing.T) {
	spec := everyMinute()
	spec.Schedule = "0 2 * * *"
	spec.Immediate = true
	h := newSchedule(t, spec)
	foreign := existingBenchmark(h.schedule.Namespace)
	foreign.Name = builders.ScheduledRunName(h.schedule, h.schedule.CreationTimestamp.Truncate(time.Minute))
	create(t, foreign)
	var got *benchv1.CouchBenchmarkSchedule
	for i := range 3 {
		_, got = h.at(time.Duration(i+1) * time.Second)
	}
	if runs := h.runs(); len(runs) != 0 {
		t.Errorf("runs %v: the foreign benchmark was adopted", keys(runs))
	}
	if evs := drainRecorder(h.recorder); strings.Count(evs, reasonNameCollision) != 1 {
		t.Errorf("want one %s event over three reconciles, got:\n%s", reasonNameCollision, evs)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionReady); c == nil || c.Reason != reasonNameCollision {
		t.Errorf("Ready %+v, want reason %s", c, reasonNameCollision)
	}
}

// A CouchBenchmark of the start time's name that is not the schedule's is never adopted.
func TestForeignRunOfTheSameNameIsSkipped(t *testing.T) {
	h := newSchedule(t, everyMinute())
	foreign := existingBenchmark(h.schedule.Namespace)
	foreign.Name = h.slotName(1)
	create(t, foreign)
	h.at(65 * time.Second)
	got := h.runs()
	if len(got) != 0 {
		t.Errorf("runs %v: the foreign benchmark was adopted or labelled", keys(got))
	}
	if evs := drainRecorder(h.recorder); !strings.Contains(evs, reasonNameCollision) {
		t.Errorf("events %s", evs)
	}
	var still benchv1.CouchBenchmark
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(foreign), &still); err != nil || metav1.GetControllerOf(&still) != nil {
		t.Errorf("the foreign benchmark changed: %v", err)
	}
}

// A template whose spec is not a valid CouchBenchmark, or that sets its own baseline, is
// refused at admission.
func TestScheduleTemplateIsValidatedAtAdmission(t *testing.T) {
	ns := env.Namespace(t)
	spec := everyMinute()
	spec.Template.Spec = existingBenchmark(ns).Spec
	spec.Template.Spec.Baseline = &benchv1.Baseline{Benchmark: "x"}
	err := env.Client.Create(context.Background(), &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}, Spec: spec})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "template.spec.baseline is set by the schedule") {
		t.Errorf("a template with a baseline: %v", err)
	}
	spec.Template.Spec.Baseline = nil
	spec.Template.Spec.QueryServers = []benchv1.QueryServer{{Name: "erl", Language: "erlang"}}
	err = env.Client.Create(context.Background(), &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: spec})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.spec.allowErlangViews") {
		t.Errorf("a template that is not a valid CouchBenchmark: %v", err)
	}
	spec = everyMinute()
	spec.Template.Spec = existingBenchmark(ns).Spec
	spec.Baseline = benchv1.ScheduleBaseline{Policy: benchv1.BaselinePinned}
	err = env.Client.Create(context.Background(), &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: spec})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "baseline.benchmark names the pinned run") {
		t.Errorf("a pinned baseline without a benchmark: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func drainRecorder(r *events.FakeRecorder) string {
	var b strings.Builder
	for len(r.Events) > 0 {
		b.WriteString(<-r.Events + "\n")
	}
	return b.String()
}

// A shift in the schedule's history (the ConfigMap its runs add to; written here as they
// would) shows in status, named by its first run and the look that found it, in the Shifted
// condition, and as one event: the history records what its looks found and which runs they
// saw, so no later reconcile, and no later run, tells it again. A history written before it
// kept its looks tells none of the shifts it had announced.
func TestShiftsInTheHistoryAreShownOnce(t *testing.T) {
	h := newSchedule(t, everyMinute())
	const key = "js/small/indexing/builtin/changes_per_second"
	runOf := func(i int) history.Run {
		level := 10000.0
		if i >= 8 {
			level = 8500
		}
		return history.Run{Name: fmt.Sprintf("nightly-%02d", i), ScheduledAt: h.minute.Add(-time.Duration(20-i) * time.Hour),
			Values: map[string]float64{key: level * (1 + 0.01*float64(i%3-1))}}
	}
	var hist history.History
	for i := range 12 {
		hist.Add(runOf(i), map[string]string{key: "higher"})
	}
	h.createHistory(hist)

	_, got := h.at(10 * time.Second)
	if len(got.Status.Shifts) != 1 {
		t.Fatalf("shifts %+v, want one", got.Status.Shifts)
	}
	s := got.Status.Shifts[0]
	change, err := strconv.ParseFloat(strings.TrimSuffix(s.Change, "%"), 64)
	if s.Metric != key || s.Run != "nightly-08" || s.Runs != 4 || s.FoundAt != "nightly-10" || s.Verdict != benchv1.VerdictRegressed ||
		err != nil || change > -13 || change < -17 {
		t.Errorf("shift %+v, want %s down about 15%% from nightly-08, 4 runs, found at nightly-10, Regressed", s, key)
	}
	// Its nominal p-value and the level it was held against, as the history found them (one
	// judged metric: the whole budget).
	found := hist.Shifts()
	if len(found) != 1 || s.NominalPValue != fmt.Sprintf("%.1e", found[0].NominalP) || s.Level != fmt.Sprintf("%.1e", found[0].Level) ||
		found[0].NominalP > found[0].Level {
		t.Errorf("shift p = %s at %s, want the history's %+v", s.NominalPValue, s.Level, found)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, conditionShifted)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(benchv1.VerdictRegressed) || !strings.Contains(c.Message, "nightly-08") {
		t.Errorf("Shifted %+v, want True, Regressed, naming nightly-08", c)
	}
	recorded, cm, err := readHistory(context.Background(), env.Client, h.schedule.Namespace, *scheduleRef(h.schedule))
	if err != nil || recorded.Looks == nil || len(recorded.Looks.Found) != 1 || recorded.Looks.Found[0].ID() != key+"@nightly-10" ||
		!recorded.Looks.Through.Equal(runOf(11).ScheduledAt) {
		t.Fatalf("the history's looks %+v (%v), want the shift found at nightly-10, through nightly-11", recorded.Looks, err)
	}
	h.at(20 * time.Second)
	// Three more runs at the new level, as the schedule's runs add them.
	for i := 12; i < 15; i++ {
		recorded.Add(runOf(i), nil)
	}
	writeHistory(t, cm, recorded)
	if _, got := h.at(30 * time.Second); len(got.Status.Shifts) != 1 || got.Status.Shifts[0].Runs != 7 {
		t.Errorf("shifts %+v, want the one shift, 7 runs now", got.Status.Shifts)
	}
	if evs := drainScheduleEvents(h); strings.Count(evs, "ShiftDetected") != 1 || !strings.Contains(evs, "Warning ShiftDetected") {
		t.Errorf("want one ShiftDetected Warning over three reconciles and three more runs, got:\n%s", evs)
	}

	// A history its schedule judged before histories kept their looks: what it announced is
	// not told again.
	legacy := newSchedule(t, everyMinute())
	old := history.History{Runs: hist.Runs, Better: hist.Better, Announced: []string{key + "@nightly-08"}}
	legacy.createHistory(old)
	if _, got := legacy.at(10 * time.Second); len(got.Status.Shifts) != 1 {
		t.Errorf("shifts %+v, want the one shift", got.Status.Shifts)
	}
	if evs := drainScheduleEvents(legacy); strings.Contains(evs, "ShiftDetected") {
		t.Errorf("a shift the history had announced was told again:\n%s", evs)
	}
}

// A schedule whose history (the ConfigMap its runs add to; written here as they would) has
// enough runs says in status what it can find: the budget over its judged metrics, and each
// one's noise and detectable shift; a metric of two runs says it has too few.
func TestScheduleStatusSaysWhatItsHistoryCanFind(t *testing.T) {
	h := newSchedule(t, everyMinute())
	const steady, young = "js/small/indexing/builtin/changes_per_second", "js/small/seeding/bulk/docs_per_second"
	var hist history.History
	for i := range 20 {
		values := map[string]float64{steady: 10000 * (1 + 0.01*float64(i%3-1))}
		if i >= 18 {
			values[young] = 5000
		}
		hist.Add(history.Run{Name: fmt.Sprintf("nightly-%02d", i), ScheduledAt: h.minute.Add(-time.Duration(20-i) * time.Hour), Values: values},
			map[string]string{steady: "higher", young: "higher"})
	}
	h.createHistory(hist)

	_, got := h.at(10 * time.Second)
	d := got.Status.Detection
	if d == nil || d.FalseAlarmsPerRun != "1 in 1000 runs over 2 judged metrics" || len(d.Metrics) != 2 {
		t.Fatalf("detection %+v, want the budget over 2 judged metrics and both", d)
	}
	want := hist.Detections()
	for i, m := range d.Metrics {
		noise, err := strconv.ParseFloat(strings.TrimSuffix(m.Noise, "%"), 64)
		if m.Metric != want[i].Metric || m.Runs != int32(want[i].Runs) || err != nil || math.Abs(noise-want[i].NoisePercent) > 0.05 ||
			m.DetectableShift != want[i].Shift() {
			t.Errorf("detection of %s: %+v, want %+v", want[i].Metric, m, want[i])
		}
	}
	if s := d.Metrics[0]; s.Metric != steady || s.Runs != 20 || !strings.HasSuffix(s.DetectableShift, "%") {
		t.Errorf("%+v: want 20 runs of %s and a detectable shift", s, steady)
	}
	if s := d.Metrics[1]; s.Metric != young || s.DetectableShift != "too few runs" {
		t.Errorf("%+v: want %s, too few runs", s, young)
	}
}

func drainScheduleEvents(h *scheduleHarness) string {
	var b strings.Builder
	for len(h.recorder.Events) > 0 {
		b.WriteString(<-h.recorder.Events + "\n")
	}
	return b.String()
}

// A scheduled run that succeeds adds its numbers to its schedule's history, once, however
// often its last step is reconciled; a run made by hand adds nothing.
func TestScheduledRunsAddToTheirSchedulesHistory(t *testing.T) {
	sh := newSchedule(t, everyMinute())
	ns := sh.schedule.Namespace
	h := newHarness(t)
	create(t, credentials(ns))
	for i, name := range []string{"nightly-1", "nightly-2"} {
		bench := existingBenchmark(ns)
		bench.Name = name
		bench.Annotations = map[string]string{benchv1.AnnotationScheduledAt: sh.minute.Add(time.Duration(i) * time.Minute).UTC().Format(time.RFC3339)}
		bench.Labels = map[string]string{benchv1.LabelSchedule: sh.schedule.Name}
		bench.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sh.schedule, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))}
		create(t, bench)
		if got := h.drive(bench, 40); got.Status.Phase != benchv1.PhaseSucceeded {
			t.Fatalf("%s: phase %s, conditions %+v", name, got.Status.Phase, got.Status.Conditions)
		}
		h.reconcile(bench) // a finished run is reconciled again: nothing more is added
	}
	byHand := existingBenchmark(ns)
	byHand.Name = "by-hand"
	create(t, byHand)
	h.drive(byHand, 40)

	owner := metav1.NewControllerRef(sh.schedule, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))
	hist, cm, err := readHistory(context.Background(), env.Client, ns, *owner)
	if err != nil || cm == nil {
		t.Fatalf("the schedule's history: %v", err)
	}
	if len(hist.Runs) != 2 || hist.Runs[0].Name != "nightly-1" || hist.Runs[1].Name != "nightly-2" {
		t.Fatalf("history runs %+v, want nightly-1 and nightly-2 in order", hist.Runs)
	}
	if v := hist.Runs[1].Values["js/small/indexing/builtin/changes_per_second"]; v <= 0 {
		t.Errorf("nightly-2's values %v lack js's indexing rate", hist.Runs[1].Values)
	}
	if len(cm.OwnerReferences) != 0 {
		t.Errorf("history ConfigMap owners %v, want none: the history outlives its schedule by default", cm.OwnerReferences)
	}
	// Its page draws every metric's trend over both runs.
	page := cm.Data[builders.HistoryHTMLKey]
	if !strings.Contains(page, "<h1>couchbench: history of "+sh.schedule.Name+"</h1>") ||
		strings.Count(page, "<svg") != len(hist.Keys()) || !strings.Contains(page, "2 runs,") {
		t.Errorf("history page: %d charts for %d metrics:\n%.600s", strings.Count(page, "<svg"), len(hist.Keys()), page)
	}
}

// kstatusOf is what Flux's health checks read of the stored schedule: kstatus' own
// status.Compute.
func kstatusOf(t *testing.T, s *benchv1.CouchBenchmarkSchedule) *status.Result {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A schedule is unhealthy from the moment its latest finished run failed, naming it and why,
// told once as an event, while the next run goes on, and healthy again once a run succeeds:
// as Flux reads it (kstatus on the object the API server stored).
func TestScheduleHealthFollowsItsRuns(t *testing.T) {
	h := newSchedule(t, everyMinute())
	h.at(65 * time.Second)
	first := h.runs()[h.slotName(1)]
	first.Status.Message = "failed in step writes of query server js (40% of the run done): Timeout: the run did not finish within spec.timeout (1m)"
	if err := env.Client.Status().Update(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	h.finish(h.slotName(1), benchv1.PhaseFailed, "")
	for _, at := range []time.Duration{70 * time.Second, 75 * time.Second, 2*time.Minute + 5*time.Second} {
		_, got := h.at(at)
		stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
		if stalled == nil || stalled.Reason != reasonRunFailed || !strings.Contains(stalled.Message, "run "+h.slotName(1)+" failed: failed in step writes") ||
			meta.IsStatusConditionTrue(got.Status.Conditions, conditionReady) {
			t.Fatalf("at +%s: Stalled %+v, Ready %+v; want RunFailed naming %s and why", at, stalled, meta.FindStatusCondition(got.Status.Conditions, conditionReady), h.slotName(1))
		}
		if res := kstatusOf(t, got); res.Status != status.FailedStatus || !strings.Contains(res.Message, h.slotName(1)) {
			t.Errorf("at +%s: kstatus %s %q, want Failed naming the run", at, res.Status, res.Message)
		}
	}
	if h.runs()[h.slotName(2)] == nil {
		t.Fatalf("runs %v: the schedule stopped making runs after a failure", keys(h.runs()))
	}
	if evs := drainRecorder(h.recorder); strings.Count(evs, "Warning "+reasonRunFailed) != 1 {
		t.Errorf("events %s; want one %s", evs, reasonRunFailed)
	}
	h.finish(h.slotName(2), benchv1.PhaseSucceeded, "")
	_, got := h.at(2*time.Minute + 10*time.Second)
	if !meta.IsStatusConditionTrue(got.Status.Conditions, conditionReady) || meta.FindStatusCondition(got.Status.Conditions, conditionStalled) != nil {
		t.Errorf("conditions %+v after a run succeeded; want Ready and no Stalled", got.Status.Conditions)
	}
	if res := kstatusOf(t, got); res.Status != status.CurrentStatus {
		t.Errorf("kstatus %s %q after a run succeeded, want Current", res.Status, res.Message)
	}
}

// A run records what it was made from: the schedule's generation, the template's fields that
// changed since the run before, and the revision the schedule's annotation names; the
// schedule's status lists them per run.
func TestRunsRecordTheTemplateChangesTheyFollow(t *testing.T) {
	h := newSchedule(t, everyMinute())
	h.at(65 * time.Second)
	first := h.runs()[h.slotName(1)]
	if first.Annotations[benchv1.AnnotationScheduleGeneration] != "1" || first.Annotations[benchv1.AnnotationTemplateChanges] != "" {
		t.Errorf("the first run's annotations %v; want generation 1 and no changes", first.Annotations)
	}
	h.finish(h.slotName(1), benchv1.PhaseSucceeded, "")

	var s benchv1.CouchBenchmarkSchedule
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h.schedule), &s); err != nil {
		t.Fatal(err)
	}
	s.Annotations = map[string]string{benchv1.AnnotationRevision: "main@sha1:0c6fe0d"}
	s.Spec.Template.Spec.Dataset.Documents = 2000
	s.Spec.Template.Spec.Workloads.Writes.Duration = "20s"
	if err := env.Client.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	_, got := h.at(2*time.Minute + 5*time.Second)
	second := h.runs()[h.slotName(2)]
	const changes = "spec.dataset.documents, spec.workloads.writes.duration"
	if second == nil || second.Annotations[benchv1.AnnotationScheduleGeneration] != "2" || second.Annotations[benchv1.AnnotationTemplateChanges] != changes ||
		second.Annotations[benchv1.AnnotationRevision] != "main@sha1:0c6fe0d" {
		t.Fatalf("the second run: %+v; want generation 2, the changes %q and the revision", second, changes)
	}
	if h := got.Status.History[0]; h.ScheduleGeneration != 2 || h.TemplateChanges != changes || h.Revision != "main@sha1:0c6fe0d" {
		t.Errorf("status.history[0] %+v; want the second run's generation, changes and revision", h)
	}
}

// The history outlives its schedule unless historyRetentionPolicy says Delete, and a schedule
// made again with the same name continues it: against envtest's kube-apiserver, which runs no
// garbage collector, so the test reads the owner references that the collector acts on.
func TestHistoryIsKeptAsTheScheduleSays(t *testing.T) {
	h := newSchedule(t, everyMinute())
	ns := h.schedule.Namespace
	const key = "js/small/indexing/builtin/changes_per_second"
	var hist history.History
	hist.Add(history.Run{Name: "nightly-00", ScheduledAt: h.minute.Add(-time.Hour), Values: map[string]float64{key: 10000}}, map[string]string{key: "higher"})
	data, err := json.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	// As an operator that had the schedule own its history left it.
	old := builders.HistoryConfigMap(ns, h.schedule.Name, data, nil)
	old.OwnerReferences = []metav1.OwnerReference{*scheduleRef(h.schedule)}
	create(t, old)
	owners := func() []metav1.OwnerReference { return historyConfigMap(t, ns, h.schedule.Name).OwnerReferences }

	h.at(10 * time.Second)
	if o := owners(); len(o) != 0 {
		t.Errorf("owners %v under Retain (the default); want none", o)
	}
	setPolicy := func(p benchv1.RetentionPolicy) {
		var s benchv1.CouchBenchmarkSchedule
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h.schedule), &s); err != nil {
			t.Fatal(err)
		}
		s.Spec.HistoryRetentionPolicy.WhenDeleted = p
		if err := env.Client.Update(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	setPolicy(benchv1.RetentionDelete)
	h.at(20 * time.Second)
	if o := owners(); len(o) != 1 || o[0].UID != h.schedule.UID {
		t.Errorf("owners %v under Delete; want the schedule", o)
	}
	setPolicy(benchv1.RetentionRetain)
	h.at(30 * time.Second)
	if o := owners(); len(o) != 0 {
		t.Errorf("owners %v back under Retain; want none", o)
	}

	// Deleted and made again under the same name (what Git does when a schedule is moved):
	// a new object, the same history.
	if err := env.Client.Delete(context.Background(), h.schedule); err != nil {
		t.Fatal(err)
	}
	again := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.schedule.Name}, Spec: h.schedule.Spec}
	again.Spec.HistoryRetentionPolicy = benchv1.HistoryRetentionPolicy{}
	create(t, again)
	if again.UID == h.schedule.UID {
		t.Fatal("the schedule made again has the old one's uid")
	}
	h.schedule = again
	_, got := h.at(40 * time.Second)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionShifted); c == nil || c.Reason != reasonNoShift || !strings.Contains(c.Message, "of 1 in the history") {
		t.Errorf("Shifted %+v; want the history of 1 run read as the schedule's own", c)
	}
	if evs := drainRecorder(h.recorder); strings.Contains(evs, reasonHistoryNotOwned) {
		t.Errorf("events %s; the history was taken for someone else's", evs)
	}
}
