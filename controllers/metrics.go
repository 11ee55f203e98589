package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
)

// Metrics on the manager's metrics endpoint.
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
	indexRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "couchbench_index_changes_per_second",
		Help: "Median indexing rate of a benchmark's arm: documents / time to a fully built view.",
	}, []string{"namespace", "benchmark", "query_server", "profile", "reducer"})
)

func init() {
	metrics.Registry.MustRegister(stepDuration, runsStarted, runsFinished, indexRate)
}

// recordResultMetrics makes the result gauges of a benchmark the ones of its aggregate.
func recordResultMetrics(bench *benchv1.CouchBenchmark, s results.Summary) {
	forgetResultMetrics(bench.Namespace, bench.Name)
	for _, q := range s.Results {
		for _, ix := range q.Indexing {
			indexRate.WithLabelValues(bench.Namespace, bench.Name, q.QueryServer, ix.Profile, string(ix.Reducer)).Set(float64(ix.ChangesPerSecond))
		}
	}
}

// forgetResultMetrics deletes a benchmark's result gauges (it was deleted, or its results
// changed).
func forgetResultMetrics(namespace, name string) {
	indexRate.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "benchmark": name})
}
