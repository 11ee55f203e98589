package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/history"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

const (
	cardinalityBenchmarks = 100
	cardinalitySchedules  = 5
)

// What the operator's benchmarks and schedules cost Prometheus in series, and that deleting
// them gives every series back. Each benchmark's results are the documents the reconciler
// stored for one run of every workload on two query servers (driven against envtest's real
// kube-apiserver, the harness playing kubelet, no CouchDB); the benchmarks are recorded as the
// reconciler records a run that succeeded and was judged, the schedules as the schedule
// reconciler records one with a successful run and as many shifts as it shows, and all are
// forgotten as the reconcilers do when their objects are gone.
func BenchmarkMetricsCardinality(b *testing.B) {
	docs := everyWorkloadDocuments(b)
	baseline := len(seriesWith(gatherAll(b), nil))
	now := time.Now()
	b.ResetTimer()
	var perBenchmark, perSchedule float64
	for range b.N {
		var schedules []*benchv1.CouchBenchmarkSchedule
		for i := range cardinalitySchedules {
			s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "cardinality", Name: fmt.Sprintf("nightly-%d", i)}}
			s.Spec.Schedule = "0 2 * * *"
			run := &benchv1.CouchBenchmark{}
			run.Status.Phase, run.Status.CompletionTime = benchv1.PhaseSucceeded, &metav1.Time{Time: now}
			recordScheduleMetrics(s, scheduledRuns{succeeded: []*benchv1.CouchBenchmark{run}}, now)
			recordShiftMetrics(s, shiftsOf(maxShifts))
			schedules = append(schedules, s)
		}
		var benches []*benchv1.CouchBenchmark
		for i := range cardinalityBenchmarks {
			bench := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "cardinality", Name: fmt.Sprintf("bench-%03d", i),
				Labels: map[string]string{benchv1.LabelSchedule: schedules[i%len(schedules)].Name}}}
			bench.Status.Phase = benchv1.PhaseSucceeded
			recordStatusMetrics(bench)
			recordVerdictMetric(bench, compare.Regressed)
			recordResultMetrics(bench, docs)
			benches = append(benches, bench)
		}

		families := gatherAll(b)
		nb, ns := 0, 0
		for _, bench := range benches {
			nb += len(seriesWith(families, map[string]string{labelNamespace: bench.Namespace, labelBenchmark: bench.Name}))
		}
		for _, s := range schedules {
			for _, l := range seriesWith(families, map[string]string{labelNamespace: s.Namespace, labelSchedule: s.Name}) {
				if l[labelBenchmark] == "" {
					ns++
				}
			}
		}
		perBenchmark, perSchedule = float64(nb)/cardinalityBenchmarks, float64(ns)/cardinalitySchedules

		for _, bench := range benches {
			forgetResultMetrics(bench.Namespace, bench.Name)
		}
		for _, s := range schedules {
			forgetScheduleMetrics(s.Namespace, s.Name)
		}
		if n := len(seriesWith(gatherAll(b), nil)); n != baseline {
			b.Fatalf("%d series after deleting every benchmark and schedule, %d before they were made", n, baseline)
		}
	}
	b.ReportMetric(perBenchmark, "series/benchmark")
	b.ReportMetric(perSchedule, "series/schedule")
}

// everyWorkloadDocuments are the documents the reconciler stores for a run of every workload.
func everyWorkloadDocuments(b *testing.B) []*results.Document {
	b.Helper()
	summary, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(b), "internal", "results", "testdata", "k6-summary-two-thresholds.json"))
	if err != nil {
		b.Fatal(err)
	}
	ns := env.Namespace(b)
	h := &harness{t: b, clock: clocktesting.NewFakePassiveClock(start), recorder: events.NewFakeRecorder(1000), document: okDocument,
		logs: &podLogs{}, logger: ctrl.Log, operator: env.Client,
		k6Summary: func(string, int) []byte { return summary }}
	h.r = h.reconciler(nil)
	create(b, credentials(ns))
	bench := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "every-workload"}, Spec: everyWorkload()}
	create(b, bench)
	got := h.drive(bench, 80)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		b.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	docs, err := h.r.storedDocuments(context.Background(), got)
	if err != nil || len(docs) != len(got.Spec.QueryServers) {
		b.Fatalf("%d stored documents (%v), want one per query server", len(docs), err)
	}
	return docs
}

func shiftsOf(n int) []history.Shift {
	var out []history.Shift
	for i := range n {
		out = append(out, history.Shift{Metric: "js/small/indexing/builtin/changes_per_second", Run: fmt.Sprintf("nightly-%02d", i),
			Runs: i + 1, ChangePercent: -15, Worse: true})
	}
	return out
}

func gatherAll(b *testing.B) []*dto.MetricFamily {
	b.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	return families
}

// seriesWith are the label sets that include labels: for the gauges, which are all that a
// benchmark or schedule has, the series Prometheus stores.
func seriesWith(families []*dto.MetricFamily, labels map[string]string) []map[string]string {
	var out []map[string]string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if have := labelSet(m); includes(have, labels) {
				out = append(out, have)
			}
		}
	}
	return out
}
