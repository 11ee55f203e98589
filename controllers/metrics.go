package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/history"
	"github.com/couchbench/couchbench/internal/results"
)

// The labels that name a benchmark on its result and verdict gauges.
const (
	labelNamespace = "namespace"
	labelBenchmark = "benchmark"
	labelSchedule  = "schedule"
)

// Metrics on the manager's metrics endpoint. The result and verdict gauges are views of the
// stored results, like status; they are deleted with their benchmark.
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
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "query_server", "profile", "workload", "variant", "metric"})
	verdict = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_verdict",
		Help: "A benchmark's verdict against its baseline: 1 for the verdict it has (Regressed, Improved, Unchanged, Inconclusive), 0 for the others.",
	}, []string{labelNamespace, labelBenchmark, labelSchedule, "verdict"})
	shiftPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_shift_percent",
		Help: "A persistent shift in a schedule's history: the metric's new level against the old, in percent, from the run where it began.",
	}, []string{labelNamespace, labelSchedule, "metric", "run"})
)

// recordShiftMetrics shows a schedule's shifts, and only those.
func recordShiftMetrics(s *benchv1.CouchBenchmarkSchedule, shifts []history.Shift) {
	shiftPercent.DeletePartialMatch(prometheus.Labels{labelNamespace: s.Namespace, labelSchedule: s.Name})
	for _, f := range shifts {
		shiftPercent.WithLabelValues(s.Namespace, s.Name, f.Metric, f.Run).Set(f.ChangePercent)
	}
}

func init() {
	metrics.Registry.MustRegister(stepDuration, runsStarted, runsFinished, resultValue, verdict, shiftPercent)
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

// forgetResultMetrics deletes a deleted benchmark's gauges.
func forgetResultMetrics(namespace, name string) {
	labels := prometheus.Labels{labelNamespace: namespace, labelBenchmark: name}
	resultValue.DeletePartialMatch(labels)
	verdict.DeletePartialMatch(labels)
}
