package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/history"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/schedule"
)

// The labels that name a benchmark, a schedule and a metric on the gauges.
const (
	labelNamespace = "namespace"
	labelBenchmark = "benchmark"
	labelSchedule  = "schedule"
	labelMetric    = "metric"
)

// Metrics on the manager's metrics endpoint. The gauges are views of status and the stored
// results: each is deleted with its benchmark or schedule. The alert rules
// (config/prometheus/couchbench-rules.yaml, docs/alerts.md) read the benchmark and schedule
// gauges.
var (
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "couchbench_step_duration_seconds",
		Help:    "Wall time of benchmark steps (provision, cluster, seed, index, views, writes, reads, teardown).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s to about 2.3 h
	}, []string{"step"})
	runsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "couchbench_runs_started_total",
		Help: "Benchmark runs started.",
	})
	runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "couchbench_runs_finished_total",
		Help: "Benchmark runs finished, by phase (Succeeded, Failed).",
	}, []string{"phase"})
	resultValue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_result",
		Help: "A headline result of a benchmark (median over repetitions; schedule is the schedule that made the run, if any): metric names it with its unit " +
			"(changes_per_second, docs_per_second, seconds_per_read, requests_per_second, p50_ms, p95_ms, p99_ms, error_rate).",
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "query_server", "profile", "workload", "variant", labelMetric})
	verdict = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_verdict",
		Help: "A benchmark's verdict against its baseline: 1 for the verdict it has (Regressed, Improved, Unchanged, Inconclusive), 0 for the others.",
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "verdict"})
	shiftPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_shift_percent",
		Help: "A persistent shift in a schedule's history: the metric's new level against the old, in percent, from the run where it began; " +
			"verdict is Regressed when the new level is worse, Improved when better.",
	}, []string{labelNamespace, labelSchedule, labelMetric, "run", "verdict"})
	shiftRuns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_shift_runs",
		Help: "How many runs of a schedule's history have the shift's metric since the run where the shift began, counting that run.",
	}, []string{labelNamespace, labelSchedule, labelMetric, "run"})
	benchmarkFailed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_benchmark_failed",
		Help: "1 for a benchmark whose run failed, with the reason of its Stalled condition; absent for the others.",
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "reason"})
	benchmarkStalledSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_benchmark_stalled_since_timestamp_seconds",
		Help: "When an unfinished benchmark became Stalled (it waits for a fix: a missing Secret, a pod that cannot start), with the reason; " +
			"absent while it is not stalled.",
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "reason"})
	benchmarkPodStartTimeout = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_benchmark_pod_start_timeout_seconds",
		Help: "A stalled benchmark's spec.podStartTimeout; absent while it is not stalled.",
	}, []string{labelNamespace, labelBenchmark})
	scheduleLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_schedule_last_success_timestamp_seconds",
		Help: "When a schedule's newest successful run finished; the schedule's creation until a run has succeeded.",
	}, []string{labelNamespace, labelSchedule})
	schedulePeriod = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_schedule_period_seconds",
		Help: "The longest time between consecutive start times of a schedule (its next 1000); absent while it is suspended or its schedule is invalid.",
	}, []string{labelNamespace, labelSchedule})
)

// collectors are the metrics above, registered with the manager's registry.
var collectors = []prometheus.Collector{stepDuration, runsStarted, runsFinished, resultValue, verdict, shiftPercent, shiftRuns,
	benchmarkFailed, benchmarkStalledSince, benchmarkPodStartTimeout, scheduleLastSuccess, schedulePeriod}

func init() {
	metrics.Registry.MustRegister(collectors...)
}

// recordShiftMetrics shows a schedule's shifts (newest first), and only those: the newest
// maxShifts, as status does.
func recordShiftMetrics(s *benchv1.CouchBenchmarkSchedule, shifts []history.Shift) {
	labels := prometheus.Labels{labelNamespace: s.Namespace, labelSchedule: s.Name}
	shiftPercent.DeletePartialMatch(labels)
	shiftRuns.DeletePartialMatch(labels)
	for _, f := range shifts[:min(len(shifts), maxShifts)] {
		shiftPercent.WithLabelValues(s.Namespace, s.Name, f.Metric, f.Run, f.Verdict()).Set(f.ChangePercent)
		shiftRuns.WithLabelValues(s.Namespace, s.Name, f.Metric, f.Run).Set(float64(f.Runs))
	}
}

// recordScheduleMetrics shows when the schedule's runs last succeeded and how far apart its
// start times are: a run is overdue when the first is more than twice the second ago.
func recordScheduleMetrics(s *benchv1.CouchBenchmarkSchedule, runs scheduledRuns, now time.Time) {
	lastSuccess := s.CreationTimestamp.Time
	if len(runs.succeeded) > 0 {
		lastSuccess = runs.succeeded[0].CreationTimestamp.Time
		if t := runs.succeeded[0].Status.CompletionTime; t != nil {
			lastSuccess = t.Time
		}
	}
	scheduleLastSuccess.WithLabelValues(s.Namespace, s.Name).Set(float64(lastSuccess.Unix()))
	c, err := schedule.Parse(s.Spec.Schedule, s.Spec.TimeZone)
	if err != nil || s.Spec.Suspend {
		schedulePeriod.DeleteLabelValues(s.Namespace, s.Name)
		return
	}
	schedulePeriod.WithLabelValues(s.Namespace, s.Name).Set(longestGap(c, now).Seconds())
}

// periodStarts is how many start times longestGap looks at: enough to see a weekday
// schedule's weekend unless it starts more often than every 15 minutes.
const periodStarts = 1000

// longestGap is the longest time between consecutive start times among the next periodStarts
// after now: a weekday schedule's period is its weekend, so that no run is overdue on Sunday.
func longestGap(c cron.Schedule, now time.Time) time.Duration {
	var longest time.Duration
	prev := c.Next(now)
	for range periodStarts {
		next := c.Next(prev)
		if next.IsZero() || prev.IsZero() {
			break // no start time within robfig/cron's 5-year search
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// forgetScheduleMetrics deletes a deleted schedule's gauges.
func forgetScheduleMetrics(namespace, name string) {
	labels := prometheus.Labels{labelNamespace: namespace, labelSchedule: name}
	shiftPercent.DeletePartialMatch(labels)
	shiftRuns.DeletePartialMatch(labels)
	scheduleLastSuccess.DeleteLabelValues(namespace, name)
	schedulePeriod.DeleteLabelValues(namespace, name)
}

// recordStatusMetrics shows whether a benchmark failed, or is stalled and since when: what
// its status says, after every reconcile.
func recordStatusMetrics(bench *benchv1.CouchBenchmark) {
	labels := prometheus.Labels{labelNamespace: bench.Namespace, labelBenchmark: bench.Name}
	benchmarkFailed.DeletePartialMatch(labels)
	benchmarkStalledSince.DeletePartialMatch(labels)
	benchmarkPodStartTimeout.DeletePartialMatch(labels)
	stalled := meta.FindStatusCondition(bench.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue {
		stalled = nil
	}
	scheduleName := bench.Labels[benchv1.LabelSchedule]
	switch phase := bench.Status.Phase; {
	case phase == benchv1.PhaseFailed:
		reason := ""
		if stalled != nil {
			reason = stalled.Reason
		}
		benchmarkFailed.WithLabelValues(bench.Namespace, bench.Name, scheduleName, reason).Set(1)
	case phase != benchv1.PhaseSucceeded && stalled != nil:
		benchmarkStalledSince.WithLabelValues(bench.Namespace, bench.Name, scheduleName, stalled.Reason).Set(float64(stalled.LastTransitionTime.Unix()))
		benchmarkPodStartTimeout.WithLabelValues(bench.Namespace, bench.Name).Set(bench.Spec.PodStartTimeoutDuration().Seconds())
	}
}

// recordResultMetrics makes a benchmark's result gauges its documents' headline metrics.
func recordResultMetrics(bench *benchv1.CouchBenchmark, docs []*results.Document) {
	resultValue.DeletePartialMatch(prometheus.Labels{labelNamespace: bench.Namespace, labelBenchmark: bench.Name})
	for _, m := range results.Metrics(docs...) {
		resultValue.WithLabelValues(bench.Namespace, bench.Name, bench.Labels[benchv1.LabelSchedule],
			m.QueryServer, m.Profile, m.Workload, m.Variant, m.Name).Set(m.Value)
	}
}

// recordVerdictMetric sets the verdict gauges of a benchmark.
func recordVerdictMetric(bench *benchv1.CouchBenchmark, v compare.Verdict) {
	for _, each := range []compare.Verdict{compare.Regressed, compare.Improved, compare.Unchanged, compare.Inconclusive} {
		value := 0.0
		if each == v {
			value = 1
		}
		verdict.WithLabelValues(bench.Namespace, bench.Name, bench.Labels[benchv1.LabelSchedule], string(each)).Set(value)
	}
}

// forgetResultMetrics deletes a deleted benchmark's gauges: its results, verdict and status.
func forgetResultMetrics(namespace, name string) {
	labels := prometheus.Labels{labelNamespace: namespace, labelBenchmark: name}
	for _, g := range []*prometheus.GaugeVec{resultValue, verdict, benchmarkFailed, benchmarkStalledSince, benchmarkPodStartTimeout} {
		g.DeletePartialMatch(labels)
	}
}
