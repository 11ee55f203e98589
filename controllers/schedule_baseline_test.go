package controllers

// No server: baselineFor reads only the schedule and its runs.

import (
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// A commit that changes the template's workloads starts a new series: the next run's baseline
// is the latest successful run of the same workloads, or none, never one it cannot be compared
// with (it would wait for it as NotComparable, as the e2e with a real Flux found).
func TestScheduledRunsBaselineIsTheLatestComparableRun(t *testing.T) {
	withDuration := func(name, duration string) *benchv1.CouchBenchmark {
		b := existingBenchmark("ns")
		b.Name, b.Spec.Workloads.Writes.Duration = name, duration
		return b
	}
	s := &benchv1.CouchBenchmarkSchedule{}
	s.Spec.Template.Spec = withDuration("", "90s").Spec
	r := &CouchBenchmarkScheduleReconciler{}
	for _, tc := range []struct {
		succeeded []*benchv1.CouchBenchmark
		want      string
	}{
		{[]*benchv1.CouchBenchmark{withDuration("newest", "3s"), withDuration("older", "90s")}, "older"},
		{[]*benchv1.CouchBenchmark{withDuration("newest", "90s"), withDuration("older", "90s")}, "newest"},
		{[]*benchv1.CouchBenchmark{withDuration("newest", "3s")}, ""},
		{nil, ""},
	} {
		if got := r.baselineFor(s, scheduledRuns{succeeded: tc.succeeded}); got != tc.want {
			t.Errorf("runs %v: baseline %q, want %q", runNames(tc.succeeded), got, tc.want)
		}
	}
	s.Spec.Baseline = benchv1.ScheduleBaseline{Policy: benchv1.BaselinePinned, Benchmark: "pinned"}
	if got := r.baselineFor(s, scheduledRuns{succeeded: []*benchv1.CouchBenchmark{withDuration("newest", "3s")}}); got != "pinned" {
		t.Errorf("a pinned baseline: %q, want the one the schedule names", got)
	}
}

func runNames(runs []*benchv1.CouchBenchmark) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Name
	}
	return out
}
