package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/testenv"
)

// scaleBenchmarks is how many CouchBenchmarks the manager gets at once.
const scaleBenchmarks = 100

// The operator at scale: the manager binary (cmd/manager, built as the image builds it) runs
// as its own process with the operator's own RBAC and gets 100 CouchBenchmarks at once,
// against an existing CouchDB, every workload. The benchmark plays kubelet and the Job
// controller, finishing Jobs as soon as it sees them: their pods run on a Node whose kubelet
// is the benchmark's (kubelet_bench_test.go), so the manager reads their results through the
// API server's pods/log as in a cluster. Every benchmark must reach Succeeded with exactly one
// Job per step, every result read that way. Reported: the time from a benchmark's creation to
// its first Job and to its end; reconcile latency (controller-runtime's histogram, scraped
// from the manager's metrics endpoint); and the manager process's own memory: peak RSS as the
// kernel keeps it (VmHWM in /proc/<pid>/status) and as sampled every 100 ms (VmRSS), the
// peak of its anonymous part (RssAnon, sampled: RSS without the binary's file pages), its RSS
// once started with no benchmark (VmRSS, the floor), and the peak Go heap in use
// (go_memstats_heap_inuse_bytes, scraped once per pass of the harness).
// A Job's appearance is seen by a watch; the harness finishes Jobs in passes over every
// benchmark, so the time to Succeeded includes those passes. No CouchDB is involved.
func BenchmarkHundredBenchmarksOnOneManager(b *testing.B) {
	manager := buildManager(b)
	for range b.N {
		runAtScale(b, manager)
	}
}

func runAtScale(b *testing.B, managerBinary string) {
	ns := env.Namespace(b)
	h := &harness{t: b, document: okDocument, clock: clocktesting.NewFakePassiveClock(time.Now()), logs: &podLogs{}}
	kubelet := startFakeKubelet(b, ns, h.logs)
	h.node = kubelet.node
	manager := startManager(b, managerBinary, testenv.Kubeconfig(b, env.OperatorConfig(b)), "--leader-elect=false")
	manager.waitForWorkers(b)
	// The floor: the manager started, its caches synced, no benchmark yet.
	idleRSS, err := manager.status("VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	create(b, credentials(ns))
	before := reconcileHistogram(b, manager.scrape(b))
	jobsSeen := watchFirstJobs(b, ns)

	created := map[string]time.Time{}
	var names []string
	for i := range scaleBenchmarks {
		bench := existingBenchmark(ns)
		bench.Name = fmt.Sprintf("scale-%03d", i)
		create(b, bench)
		created[bench.Name] = time.Now()
		names = append(names, bench.Name)
	}

	var peakHeap float64
	finished := map[string]time.Duration{}
	deadline := time.Now().Add(10 * time.Minute)
	for len(finished) < scaleBenchmarks {
		manager.checkRunning(b)
		if n := kubelet.missing.Load(); n > 0 {
			b.Fatalf("the API server asked the fake kubelet for %d logs the harness never wrote", n)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d benchmarks finished in 10 minutes; the manager's log ends:\n%s", len(finished), scaleBenchmarks, manager.logTail())
		}
		var list benchv1.CouchBenchmarkList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
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
		peakHeap = max(peakHeap, heapInUse(b, manager.scrape(b)))
		time.Sleep(100 * time.Millisecond)
	}
	var jobCount int64
	for _, name := range names {
		bench := &benchv1.CouchBenchmark{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bench); err != nil {
			b.Fatal(err)
		}
		for step, n := range jobsOf(b, bench) {
			if n != 1 {
				b.Errorf("%s: %d Jobs for %s, want 1", name, n, step)
			}
			jobCount += int64(n)
		}
	}
	served := kubelet.served.Load()
	if served < jobCount {
		b.Errorf("the API server read %d logs from the fake kubelet for %d Jobs: the manager got results another way", served, jobCount)
	}
	b.Logf("the manager read %d logs of %d Jobs through pods/log", served, jobCount)
	latencies := reconcileHistogram(b, manager.scrape(b))
	// Both peaks before SIGTERM: the run's, not the shutdown's.
	peakRSS, err := manager.status("VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	sampledRSS, sampledAnon := manager.sampledRSS.Load(), manager.sampledAnon.Load()
	manager.stop(b)
	firstJob := map[string]time.Duration{}
	for name, at := range jobsSeen() {
		firstJob[name] = at.Sub(created[name])
	}
	if len(firstJob) != scaleBenchmarks {
		b.Errorf("the watch saw the first Job of %d benchmarks, want %d", len(firstJob), scaleBenchmarks)
	}
	b.ReportMetric(percentile(firstJob, 50).Seconds(), "s-to-first-job-p50")
	b.ReportMetric(percentile(firstJob, 99).Seconds(), "s-to-first-job-p99")
	b.ReportMetric(percentile(finished, 50).Seconds(), "s-to-succeeded-p50")
	b.ReportMetric(percentile(finished, 99).Seconds(), "s-to-succeeded-p99")
	b.ReportMetric(latencies.quantile(before, 0.50)*1000, "ms-reconcile-p50")
	b.ReportMetric(latencies.quantile(before, 0.99)*1000, "ms-reconcile-p99")
	b.ReportMetric(float64(latencies.count-before.count), "reconciles")
	b.ReportMetric(float64(peakRSS)/(1<<20), "MiB-manager-VmHWM")
	b.ReportMetric(float64(sampledRSS)/(1<<20), "MiB-manager-peak-RSS-sampled")
	b.ReportMetric(float64(sampledAnon)/(1<<20), "MiB-manager-peak-RssAnon-sampled")
	b.ReportMetric(float64(idleRSS)/(1<<20), "MiB-manager-idle-RSS")
	b.ReportMetric(peakHeap/(1<<20), "MiB-manager-peak-heap")
}

// watchFirstJobs notes when the first Job of each benchmark in namespace appears, from a
// watch, and returns what it noted so far: the harness's passes take seconds with 100
// benchmarks, and seeing Jobs in them would count that too.
func watchFirstJobs(b *testing.B, namespace string) func() map[string]time.Time {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.BatchV1().Jobs(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	first := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added {
				continue
			}
			mu.Lock()
			if name := job.Labels[builders.LabelBenchmark]; first[name].IsZero() {
				first[name] = time.Now()
			}
			mu.Unlock()
		}
	}()
	b.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() map[string]time.Time {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(first)
	}
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

// histogram is controller-runtime's reconcile_time_seconds of the CouchBenchmark controller,
// cumulative.
type histogram struct {
	count   uint64
	buckets map[float64]uint64
}

func reconcileHistogram(b *testing.B, families map[string]*dto.MetricFamily) histogram {
	b.Helper()
	h := histogram{buckets: map[float64]uint64{}}
	for _, m := range families["controller_runtime_reconcile_time_seconds"].GetMetric() {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == "controller" && l.GetValue() == "couchbenchmark"
		}) {
			continue
		}
		h.count += m.GetHistogram().GetSampleCount()
		for _, bucket := range m.GetHistogram().GetBucket() {
			h.buckets[bucket.GetUpperBound()] += bucket.GetCumulativeCount()
		}
	}
	return h
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
