package controllers

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/history"
)

// These tests call the recording functions on objects built in memory and read the manager's
// registry: no server (the package's envtest starts, unused by them).

const metricsNamespace = "metrics-test"

// A benchmark's status gauges follow its conditions: stalled (since when, and its
// podStartTimeout), running again (none), failed (the reason), deleted (none).
func TestMetricsOfABenchmarkStatus(t *testing.T) {
	stalledAt := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	bench := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: metricsNamespace, Name: "run",
		Labels: map[string]string{benchv1.LabelSchedule: "nightly"}}}
	bench.Spec.PodStartTimeout = "5m"
	bench.Status.Phase = benchv1.PhasePending
	markStalled(&bench.Status.Conditions, 1, stalledAt, reasonCredentialsNotFound, "no Secret")
	recordStatusMetrics(bench)
	families := gather(t)
	if v := gaugeValue(families, "couchbench_benchmark_stalled_since_timestamp_seconds", map[string]string{
		"namespace": metricsNamespace, "benchmark": "run", "schedule": "nightly", "reason": reasonCredentialsNotFound}); v != float64(stalledAt.Unix()) {
		t.Errorf("stalled since %v, want %d", v, stalledAt.Unix())
	}
	if v := gaugeValue(families, "couchbench_benchmark_pod_start_timeout_seconds", map[string]string{"namespace": metricsNamespace, "benchmark": "run"}); v != 300 {
		t.Errorf("pod start timeout %v, want 300", v)
	}

	bench.Status.Phase = benchv1.PhaseRunning
	markProgressing(&bench.Status.Conditions, 1, stalledAt.Add(time.Minute), planStep{Step: benchv1.StepSeed})
	recordStatusMetrics(bench)
	if n := seriesOf(t, metricsNamespace, "run"); len(n) != 0 {
		t.Errorf("a running benchmark has status series %v", n)
	}

	bench.Status.Phase = benchv1.PhaseFailed
	markFailed(&bench.Status.Conditions, 1, stalledAt.Add(time.Hour), reasonImagePullFailed, "cannot pull")
	recordStatusMetrics(bench)
	if n := seriesOf(t, metricsNamespace, "run"); !slices.Equal(n, []string{"couchbench_benchmark_failed"}) {
		t.Errorf("a failed benchmark has status series %v, want couchbench_benchmark_failed only", n)
	}
	if v := gaugeValue(gather(t), "couchbench_benchmark_failed", map[string]string{"benchmark": "run", "reason": reasonImagePullFailed}); v != 1 {
		t.Errorf("failed %v, want 1 with reason %s", v, reasonImagePullFailed)
	}

	forgetResultMetrics(metricsNamespace, "run")
	if n := seriesOf(t, metricsNamespace, "run"); len(n) != 0 {
		t.Errorf("a deleted benchmark has status series %v", n)
	}
}

// seriesOf names the benchmark status families that have a series of the benchmark.
func seriesOf(t *testing.T, namespace, benchmark string) []string {
	t.Helper()
	var out []string
	for _, name := range []string{"couchbench_benchmark_failed", "couchbench_benchmark_stalled_since_timestamp_seconds", "couchbench_benchmark_pod_start_timeout_seconds"} {
		if gaugeValue(gather(t), name, map[string]string{"namespace": namespace, "benchmark": benchmark}) != -1 {
			out = append(out, name)
		}
	}
	return out
}

// A schedule's period is its longest gap between start times (a weekday schedule's weekend),
// absent while suspended or invalid; its last success is its newest successful run's end, or
// its creation before any. Deleted, its gauges go, its shifts' too.
func TestMetricsOfASchedule(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) // a Wednesday
	labels := map[string]string{"namespace": metricsNamespace, "schedule": "nightly"}
	for _, tc := range []struct {
		cron    string
		suspend bool
		period  float64
	}{
		{"0 2 * * *", false, 86400},
		{"0 2 * * 1-5", false, 3 * 86400},
		{"@hourly", false, 3600},
		{"0 2 * * *", true, -1},
		{"0 25 * * *", false, -1},
	} {
		s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: metricsNamespace, Name: "nightly",
			CreationTimestamp: metav1.NewTime(created)}}
		s.Spec.Schedule, s.Spec.Suspend = tc.cron, tc.suspend
		recordScheduleMetrics(s, scheduledRuns{}, now)
		families := gather(t)
		if v := gaugeValue(families, "couchbench_schedule_period_seconds", labels); v != tc.period {
			t.Errorf("%q suspended %v: period %v, want %v", tc.cron, tc.suspend, v, tc.period)
		}
		if v := gaugeValue(families, "couchbench_schedule_last_success_timestamp_seconds", labels); v != float64(created.Unix()) {
			t.Errorf("no success yet: last success %v, want the creation %d", v, created.Unix())
		}
	}

	s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: metricsNamespace, Name: "nightly"}}
	s.Spec.Schedule = "0 2 * * *"
	finished := time.Date(2026, 11, 25, 3, 10, 0, 0, time.UTC)
	newest := benchv1.CouchBenchmark{}
	newest.Status.Phase, newest.Status.CompletionTime = benchv1.PhaseSucceeded, &metav1.Time{Time: finished}
	older := benchv1.CouchBenchmark{}
	older.Status.Phase, older.Status.CompletionTime = benchv1.PhaseSucceeded, &metav1.Time{Time: finished.Add(-24 * time.Hour)}
	recordScheduleMetrics(s, scheduledRuns{succeeded: []*benchv1.CouchBenchmark{&newest, &older}}, now)
	if v := gaugeValue(gather(t), "couchbench_schedule_last_success_timestamp_seconds", labels); v != float64(finished.Unix()) {
		t.Errorf("last success %v, want the newest run's end %d", v, finished.Unix())
	}

	recordShiftMetrics(s, []history.Shift{{Metric: "js/a", Run: "nightly-1", Runs: 3, ChangePercent: -15, Worse: true}})
	forgetScheduleMetrics(metricsNamespace, "nightly")
	families := gather(t)
	for _, name := range []string{"couchbench_schedule_period_seconds", "couchbench_schedule_last_success_timestamp_seconds", "couchbench_shift_percent", "couchbench_shift_runs"} {
		if v := gaugeValue(families, name, labels); v != -1 {
			t.Errorf("the deleted schedule's %s is still there (%v)", name, v)
		}
	}
}

// Shifts carry their verdict and how many runs show them; at most maxShifts of a schedule
// are shown, the newest.
func TestMetricsOfShifts(t *testing.T) {
	s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: metricsNamespace, Name: "shifty"}}
	var shifts []history.Shift
	for i := range maxShifts + 5 {
		shifts = append(shifts, history.Shift{Metric: "js/a", Run: "run-" + string(rune('a'+i)), Runs: i + 1, ChangePercent: 10, Worse: i%2 == 0})
	}
	recordShiftMetrics(s, shifts)
	defer forgetScheduleMetrics(metricsNamespace, "shifty")
	families := gather(t)
	if v := gaugeValue(families, "couchbench_shift_percent", map[string]string{"schedule": "shifty", "run": "run-a", "verdict": "Regressed"}); v != 10 {
		t.Errorf("the newest shift, worse: %v, want 10 with verdict Regressed", v)
	}
	if v := gaugeValue(families, "couchbench_shift_percent", map[string]string{"schedule": "shifty", "run": "run-b", "verdict": "Improved"}); v != 10 {
		t.Errorf("the second shift, better: %v, want 10 with verdict Improved", v)
	}
	if v := gaugeValue(families, "couchbench_shift_runs", map[string]string{"schedule": "shifty", "run": "run-c"}); v != 3 {
		t.Errorf("runs of the third shift %v, want 3", v)
	}
	if n := seriesCount(families, "couchbench_shift_percent", "shifty"); n != maxShifts {
		t.Errorf("%d shift series, want %d", n, maxShifts)
	}
}

func seriesCount(families []*dto.MetricFamily, name, schedule string) int {
	n := 0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == labelSchedule && l.GetValue() == schedule {
					n++
				}
			}
		}
	}
	return n
}

// Every couchbench metric the alert rules query is one the manager registers: a rename
// fails here, not silently in Prometheus.
func TestMetricsTheAlertRulesUse(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "config", "prometheus", "couchbench-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	descs := make(chan *prometheus.Desc, 100)
	for _, c := range collectors {
		c.Describe(descs)
	}
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		registered[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	used := regexp.MustCompile(`couchbench_[a-z_]+`).FindAllString(string(rules), -1)
	if len(used) == 0 {
		t.Fatal("the rules query no couchbench metric")
	}
	for _, name := range used {
		if !registered[name] {
			t.Errorf("the alert rules query %s, which the manager does not export", name)
		}
	}
}
