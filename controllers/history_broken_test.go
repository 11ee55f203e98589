package controllers

// A schedule's history that cannot be used, or that has grown to the API server's size limit,
// against a real kube-apiserver (envtest) and couchDBStub as the existing CouchDB (not CouchDB):
// the run's measurements are complete, so it succeeds whatever the history holds.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/history"
)

// apiServerDataLimit is what the API server allows a ConfigMap's data, all values together.
const apiServerDataLimit = 1 << 20

// scheduledRun is a run of the schedule, as the schedule makes it, scheduled at at.
func scheduledRun(bench *benchv1.CouchBenchmark, schedule *benchv1.CouchBenchmarkSchedule, at time.Time) *benchv1.CouchBenchmark {
	bench.Annotations = map[string]string{benchv1.AnnotationScheduledAt: at.UTC().Format(time.RFC3339)}
	bench.Labels = map[string]string{benchv1.LabelSchedule: schedule.Name}
	bench.OwnerReferences = []metav1.OwnerReference{*scheduleRef(schedule)}
	return bench
}

func scheduleRef(s *benchv1.CouchBenchmarkSchedule) *metav1.OwnerReference {
	return metav1.NewControllerRef(s, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))
}

func historyConfigMap(t *testing.T, namespace, schedule string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: builders.HistoryConfigMapName(schedule)}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

func dataBytes(cm *corev1.ConfigMap) int {
	n := 0
	for _, v := range cm.Data {
		n += len(v)
	}
	return n
}

// A history that is not the schedule's, or holds JSON that does not parse, neither fails nor
// holds up a scheduled run against envtest's kube-apiserver: the run is judged without it
// (the assumed spread between runs, which its summary says), leaves it as it was, and
// succeeds with HistoryRecorded=False and one Warning event that say what is wrong and what to
// do, however often it is reconciled after.
func TestABrokenHistoryHoldsNoRunUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history func(s *benchv1.CouchBenchmarkSchedule) *corev1.ConfigMap
		reason  string
		says    []string
	}{{
		name: "not the schedule's",
		history: func(s *benchv1.CouchBenchmarkSchedule) *corev1.ConfigMap {
			cm := builders.HistoryConfigMap(s.Namespace, s.Name, []byte(`{"runs":[]}`), nil)
			cm.Labels = nil // someone's own ConfigMap of the history's name
			return cm
		},
		reason: reasonHistoryNotOwned,
		says:   []string{"is not schedule nightly's history (it lacks the label", "delete it"},
	}, {
		name: "bad JSON",
		history: func(s *benchv1.CouchBenchmarkSchedule) *corev1.ConfigMap {
			return builders.HistoryConfigMap(s.Namespace, s.Name, []byte(`{"runs":[{"name":"nightly-0",}]}`), nil)
		},
		reason: reasonHistoryUnusable,
		says:   []string{"bad JSON at offset 30", "delete it, and the schedule's next successful run starts a new history"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			sh := newSchedule(t, everyMinute())
			ns := sh.schedule.Namespace
			h := newHarness(t)
			create(t, credentials(ns))
			base := withBaseline(existingBenchmark(ns), "base", "")
			create(t, base)
			h.document = indexingRuns(10000)
			if got := h.drive(base, 20); got.Status.Phase != benchv1.PhaseSucceeded {
				t.Fatalf("baseline: phase %s", got.Status.Phase)
			}
			broken := tc.history(sh.schedule)
			create(t, broken)
			drainEvents(h)

			run := scheduledRun(withBaseline(existingBenchmark(ns), "nightly-1", "base"), sh.schedule, sh.minute)
			create(t, run)
			got := h.drive(run, 20)
			if got.Status.Phase != benchv1.PhaseSucceeded {
				t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
			}
			c := meta.FindStatusCondition(got.Status.Conditions, conditionHistoryRecorded)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
				t.Fatalf("HistoryRecorded %+v, want False, %s", c, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(c.Message, s) {
					t.Errorf("HistoryRecorded's message %q does not say %q", c.Message, s)
				}
			}
			if s := got.Status.Comparison; s == nil || !strings.Contains(s.Summary, "judged without the schedule's history") ||
				!strings.Contains(s.Summary, "differ by 30%") {
				t.Errorf("comparison %+v: its summary does not say it was judged without the history, at the assumed 30%%", s)
			}
			h.reconcile(run) // the finished run, reconciled again
			if evs := drainEvents(h); strings.Count(evs, "Warning "+tc.reason) != 1 || !strings.Contains(evs, c.Message) {
				t.Errorf("want one %s event with the condition's message, got:\n%s", tc.reason, evs)
			}
			if after := historyConfigMap(t, ns, sh.schedule.Name); after.Data[builders.HistoryKey] != broken.Data[builders.HistoryKey] ||
				len(after.OwnerReferences) != len(broken.OwnerReferences) {
				t.Errorf("the broken history was changed: %+v", after)
			}
		})
	}
}

// A history that has grown to the API server's limit of a ConfigMap's data, as an operator
// without a size budget would leave it, against envtest's kube-apiserver: a run adds to it,
// succeeds, and the stored history is within builders.MaxHistoryBytes, with the newest run and
// without the oldest, which made room for it. Fewer runs than history.MaxRuns are kept: size,
// not the count, dropped them.
func TestAHistoryAtTheSizeLimitDropsItsOldestRuns(t *testing.T) {
	sh := newSchedule(t, everyMinute())
	ns := sh.schedule.Namespace
	h := newHarness(t)
	create(t, credentials(ns))

	// Many runs of many metrics, as near the API server's limit as another run allows.
	var full history.History
	var data []byte
	for i := 0; ; i++ {
		run := history.Run{Name: fmt.Sprintf("nightly-%03d", i), ScheduledAt: sh.minute.Add(-time.Duration(200-i) * time.Hour),
			Values: map[string]float64{}}
		for m := range 250 {
			run.Values[fmt.Sprintf("js/small/indexing/reducer-%03d/changes_per_second", m)] = 10000 + float64(i)/7 + float64(m)/3
		}
		full.Add(run, map[string]string{})
		more, err := json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		if len(more) > apiServerDataLimit {
			full.Runs = full.Runs[:len(full.Runs)-1]
			break
		}
		data = more
	}
	if len(data) <= builders.MaxHistoryBytes || len(full.Runs) >= history.MaxRuns {
		t.Fatalf("the history built takes %d bytes in %d runs, want more than %d in fewer than %d", len(data), len(full.Runs),
			builders.MaxHistoryBytes, history.MaxRuns)
	}
	create(t, builders.HistoryConfigMap(ns, sh.schedule.Name, data, nil))

	run := scheduledRun(existingBenchmark(ns), sh.schedule, sh.minute)
	run.Name = "nightly-new"
	create(t, run)
	got := h.drive(run, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	cm := historyConfigMap(t, ns, sh.schedule.Name)
	if n := dataBytes(cm); n > builders.MaxHistoryBytes {
		t.Errorf("the stored history's data takes %d bytes, more than %d", n, builders.MaxHistoryBytes)
	}
	stored, _, err := readHistory(context.Background(), env.Client, ns, *scheduleRef(sh.schedule))
	if err != nil {
		t.Fatal(err)
	}
	runs := stored.Runs
	if len(runs) == 0 || runs[len(runs)-1].Name != "nightly-new" || len(runs[len(runs)-1].Values) == 0 {
		t.Fatalf("the stored history does not end with the new run")
	}
	dropped := len(full.Runs) + 1 - len(runs)
	if dropped < 1 || runs[0].Name != full.Runs[dropped].Name {
		t.Errorf("the stored history keeps %d runs of %d from %s, want the oldest dropped and the rest in order",
			len(runs), len(full.Runs)+1, runs[0].Name)
	}
	t.Logf("a history of %d runs in %d bytes, with the new run: %d runs in %d bytes of data", len(full.Runs), len(data), len(runs), dataBytes(cm))
	c := meta.FindStatusCondition(got.Status.Conditions, conditionHistoryRecorded)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, fmt.Sprintf("the oldest %d were dropped", dropped)) {
		t.Errorf("HistoryRecorded %+v, want True, saying %d runs were dropped", c, dropped)
	}

	// The limit is the API server's: one byte more of data is refused.
	over := cm.DeepCopy()
	over.Data = map[string]string{builders.HistoryKey: strings.Repeat("x", apiServerDataLimit+1)}
	if err := env.Client.Update(context.Background(), over, client.DryRunAll); !apierrors.IsInvalid(err) {
		t.Errorf("a ConfigMap with %d bytes of data: %v, want refused as invalid", apiServerDataLimit+1, err)
	}
}

// A schedule whose history holds JSON that does not parse, against envtest's kube-apiserver
// with a fake clock: it keeps starting its runs (they succeed without the history), and its
// Shifted condition is Unknown and says what to do, told in one Warning event however often
// it is reconciled.
func TestABrokenHistoryHoldsNoScheduleUp(t *testing.T) {
	h := newSchedule(t, everyMinute())
	cm := builders.HistoryConfigMap(h.schedule.Namespace, h.schedule.Name, []byte(`{"runs":[`), nil)
	create(t, cm)
	var got *benchv1.CouchBenchmarkSchedule
	for i := range 3 {
		_, got = h.at(time.Duration(i)*time.Minute + 5*time.Second)
	}
	if runs := h.runs(); len(runs) == 0 {
		t.Errorf("no run started: the broken history held the schedule up")
	}
	c := meta.FindStatusCondition(got.Status.Conditions, conditionShifted)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != reasonHistoryUnusable || !strings.Contains(c.Message, "delete it") {
		t.Errorf("Shifted %+v; want Unknown, %s, saying to delete it", c, reasonHistoryUnusable)
	}
	if evs := drainRecorder(h.recorder); strings.Count(evs, reasonHistoryUnusable) != 1 {
		t.Errorf("want one %s event over three reconciles, got:\n%s", reasonHistoryUnusable, evs)
	}
}

// A history that shifted and then became unreadable, against envtest's kube-apiserver with a
// fake clock: the schedule no longer shows (nor alerts on) the shift it can no longer read.
func TestAnUnreadableHistoryShowsNoShift(t *testing.T) {
	h := newSchedule(t, everyMinute())
	const key = "js/small/indexing/builtin/changes_per_second"
	var hist history.History
	for i := range 12 {
		level := 10000.0
		if i >= 8 {
			level = 8500
		}
		hist.Add(history.Run{Name: fmt.Sprintf("nightly-%02d", i), ScheduledAt: h.minute.Add(-time.Duration(12-i) * time.Hour),
			Values: map[string]float64{key: level * (1 + 0.01*float64(i%3-1))}}, map[string]string{key: "higher"})
	}
	h.createHistory(hist)
	if _, got := h.at(5 * time.Second); len(got.Status.Shifts) != 1 || got.Status.Detection == nil {
		t.Fatalf("shifts %+v, detection %+v: want the shift and what the history can find", got.Status.Shifts, got.Status.Detection)
	}
	cm := historyConfigMap(t, h.schedule.Namespace, h.schedule.Name)
	cm.Data[builders.HistoryKey] = `{"runs":[`
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	_, got := h.at(10 * time.Second)
	if len(got.Status.Shifts) != 0 || got.Status.Detection != nil {
		t.Errorf("shifts %+v, detection %+v after the history became unreadable, want none", got.Status.Shifts, got.Status.Detection)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionShifted); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("Shifted %+v, want Unknown", c)
	}
}
