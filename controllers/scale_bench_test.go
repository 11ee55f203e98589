package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// scaleBenchmarks is how many CouchBenchmarks the manager gets at once.
const scaleBenchmarks = 100

// The operator at scale: one manager (informers, watches, the operator's own RBAC) gets 100
// CouchBenchmarks at once, against an existing CouchDB, every workload; the benchmark plays
// kubelet and the Job controller, finishing Jobs as soon as it sees them. Every benchmark must
// reach Succeeded with exactly one Job per step. Reported: the time from a benchmark's
// creation to its first Job and to its end, reconcile latency (controller-runtime's
// histogram), and the process's peak RSS and Go heap — the process is the manager and this
// harness together, so the RSS is an upper bound of the manager's. The harness polls, so the
// times include up to one pass of it over every benchmark. No CouchDB is involved.
func BenchmarkHundredBenchmarksOnOneManager(b *testing.B) {
	for range b.N {
		runAtScale(b)
	}
}

func runAtScale(b *testing.B) {
	ns := env.Namespace(b)
	cfg := env.OperatorConfig(b)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		b.Fatal(err)
	}
	h := &harness{t: b, document: okDocument, clock: clocktesting.NewFakePassiveClock(time.Now()), logs: &podLogs{}}
	r := &CouchBenchmarkReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("couchbench"),
		Clock: clock.RealClock{}, Logs: h.logs, RunnerImage: "couchbench/manager:test",
	}
	if err := r.SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
	}()
	create(b, credentials(ns))
	before := reconcileHistogram(b)

	created := map[string]time.Time{}
	var names []string
	for i := range scaleBenchmarks {
		bench := existingBenchmark(ns)
		bench.Name = fmt.Sprintf("scale-%03d", i)
		create(b, bench)
		created[bench.Name] = time.Now()
		names = append(names, bench.Name)
	}

	var peakRSS, peakHeap uint64
	firstJob, finished := map[string]time.Duration{}, map[string]time.Duration{}
	deadline := time.Now().Add(10 * time.Minute)
	for len(finished) < scaleBenchmarks {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d benchmarks finished in 10 minutes", len(finished), scaleBenchmarks)
		}
		var list benchv1.CouchBenchmarkList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		for _, j := range jobs.Items {
			name := j.Labels[builders.LabelBenchmark]
			if _, seen := firstJob[name]; !seen {
				firstJob[name] = time.Since(created[name])
			}
		}
		for i := range list.Items {
			bench := &list.Items[i]
			switch bench.Status.Phase {
			case benchv1.PhaseFailed:
				b.Fatalf("%s failed: %+v", bench.Name, bench.Status.Conditions)
			case benchv1.PhaseSucceeded:
				if _, ok := finished[bench.Name]; !ok {
					finished[bench.Name] = time.Since(created[bench.Name])
				}
			default:
				h.playKubelet(bench)
			}
		}
		peakRSS, peakHeap = max(peakRSS, rss()), max(peakHeap, heapInUse())
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range names {
		bench := &benchv1.CouchBenchmark{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bench); err != nil {
			b.Fatal(err)
		}
		for step, n := range jobsOf(b, bench) {
			if n != 1 {
				b.Errorf("%s: %d Jobs for %s, want 1", name, n, step)
			}
		}
	}
	latencies := reconcileHistogram(b)
	b.ReportMetric(percentile(firstJob, 50).Seconds(), "s-to-first-job-p50")
	b.ReportMetric(percentile(firstJob, 99).Seconds(), "s-to-first-job-p99")
	b.ReportMetric(percentile(finished, 50).Seconds(), "s-to-succeeded-p50")
	b.ReportMetric(percentile(finished, 99).Seconds(), "s-to-succeeded-p99")
	b.ReportMetric(latencies.quantile(before, 0.50)*1000, "ms-reconcile-p50")
	b.ReportMetric(latencies.quantile(before, 0.99)*1000, "ms-reconcile-p99")
	b.ReportMetric(float64(latencies.count-before.count), "reconciles")
	b.ReportMetric(float64(peakRSS)/(1<<20), "MiB-peak-RSS")
	b.ReportMetric(float64(peakHeap)/(1<<20), "MiB-peak-heap")
}

// percentile of the durations, nearest rank.
func percentile(d map[string]time.Duration, p int) time.Duration {
	all := make([]time.Duration, 0, len(d))
	for _, v := range d {
		all = append(all, v)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) == 0 {
		return 0
	}
	return all[min(len(all)-1, (len(all)*p+99)/100-1)]
}

// histogram is controller-runtime's reconcile_time_seconds of this controller, cumulative.
type histogram struct {
	count   uint64
	buckets map[float64]uint64
}

func reconcileHistogram(b *testing.B) histogram {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	h := histogram{buckets: map[float64]uint64{}}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "controller", "couchbenchmark") {
				continue
			}
			h.count += m.GetHistogram().GetSampleCount()
			for _, bucket := range m.GetHistogram().GetBucket() {
				h.buckets[bucket.GetUpperBound()] += bucket.GetCumulativeCount()
			}
		}
	}
	return h
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// quantile is the upper bound of the bucket that holds quantile q of the reconciles since
// before: the histogram's resolution.
func (h histogram) quantile(before histogram, q float64) float64 {
	bounds := make([]float64, 0, len(h.buckets))
	for bound := range h.buckets {
		bounds = append(bounds, bound)
	}
	sort.Float64s(bounds)
	total := float64(h.count - before.count)
	for _, bound := range bounds {
		if float64(h.buckets[bound]-before.buckets[bound]) >= q*total {
			return bound
		}
	}
	return bounds[len(bounds)-1]
}

// rss is this process's resident set size (VmRSS).
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseUint(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
