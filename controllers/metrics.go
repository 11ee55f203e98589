package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
		Help: "Last measured median indexing rate: documents / time to a fully built view.",
	}, []string{"namespace", "benchmark", "query_server", "profile", "reducer"})
)

func init() {
	metrics.Registry.MustRegister(stepDuration, runsStarted, runsFinished, indexRate)
}
