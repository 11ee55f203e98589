package controllers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

// indexingRuns is an index step's document with five builds per reducer at about rate
// changes/s (±1%): enough repetitions for a verdict.
func indexingRuns(rate float64) func(arm string, step benchv1.Step) *results.Document {
	return func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		if step != benchv1.StepIndex {
			return d
		}
		var runs []measured.IndexBuild
		for i, f := range []float64{1, 1.01, 0.99, 1.005, 0.995} {
			r := rate * f
			runs = append(runs, measured.IndexBuild{DesignDoc: "_design/cb-idx-" + string(rune('a'+i)), Documents: 1000, DocsPerSecond: r,
				Built: time.Duration(1000 / r * float64(time.Second))})
		}
		d.Arms[0].Profiles[0].Indexing[0].Runs = runs
		return d
	}
}

func withBaseline(bench *benchv1.CouchBenchmark, name, baseline string) *benchv1.CouchBenchmark {
	bench.Name = name
	bench.Spec.QueryServers = bench.Spec.QueryServers[:1]
	bench.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}}
	if baseline != "" {
		bench.Spec.Baseline = &benchv1.Baseline{Benchmark: baseline}
	}
	return bench
}

// A run 20% slower than its baseline, with five tight repetitions a side, on a machine whose
// runs are taken to differ no more than their repetitions (betweenRunsPercent 0), is
// Regressed: in status, the conditions, an event, the stored results, the metrics; deleting
// it deletes its gauges. With the default assumption that runs differ by 30% from run to run,
// the same 20% is Inconclusive. The dashboard the chart ships only uses metrics the endpoint
// has.
func TestRegressionAgainstTheBaseline(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	create(t, credentials(ns))
	base := withBaseline(existingBenchmark(ns), "base", "")
	create(t, base)
	h.document = indexingRuns(10000)
	if got := h.drive(base, 20); got.Status.Phase != benchv1.PhaseSucceeded || got.Status.Comparison != nil {
		t.Fatalf("baseline: phase %s, comparison %+v", got.Status.Phase, got.Status.Comparison)
	}

	assumed := withBaseline(existingBenchmark(ns), "assumed", "base")
	create(t, assumed)
	h.document = indexingRuns(8000)
	if got := h.drive(assumed, 20); got.Status.Comparison == nil || got.Status.Comparison.Verdict != benchv1.VerdictInconclusive {
		t.Errorf("20%% slower, runs assumed to differ by 30%%: comparison %+v, want Inconclusive", got.Status.Comparison)
	}

	current := withBaseline(existingBenchmark(ns), "current", "base")
	current.Spec.Baseline.BetweenRunsPercent = ptr.To[int32](0)
	create(t, current)
	got := h.drive(current, 20)
	c := got.Status.Comparison
	if got.Status.Phase != benchv1.PhaseSucceeded || c == nil || c.Verdict != benchv1.VerdictRegressed || c.Regressed != 1 ||
		len(c.Changes) != 1 || !strings.HasPrefix(c.Changes[0].DeltaPercent, "-20") || c.Baseline != "base" {
		t.Fatalf("phase %s, comparison %+v", got.Status.Phase, c)
	}
	if r := meta.FindStatusCondition(got.Status.Conditions, conditionRegressed); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Regressed %+v", r)
	}
	if i := meta.FindStatusCondition(got.Status.Conditions, conditionImproved); i == nil || i.Status != metav1.ConditionFalse {
		t.Errorf("Improved %+v", i)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Warning Regressed") {
		t.Errorf("events:\n%s", evs)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal([]byte(cm.Data[builders.ComparisonKey]), &stored); err != nil || stored["verdict"] != "Regressed" {
		t.Errorf("comparison.json %v: %v", stored, err)
	}
	if !strings.Contains(cm.Data[builders.ResultsMarkdownKey], "Regressed") || !strings.Contains(cm.Data[builders.ResultsHTMLKey], "<svg") {
		t.Errorf("results.md / report.html lack the verdict or the charts")
	}

	families := gather(t)
	if v := gaugeValue(families, "couchbench_verdict", map[string]string{"benchmark": "current", "verdict": "Regressed"}); v != 1 {
		t.Errorf("couchbench_verdict Regressed = %v", v)
	}
	if v := gaugeValue(families, "couchbench_result", map[string]string{"benchmark": "current", "workload": "indexing",
		"metric": "changes_per_second", "query_server": "js"}); v < 7900 || v > 8100 {
		t.Errorf("couchbench_result indexing = %v", v)
	}
	checkDashboardMetrics(t, families)

	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	// The finalizer's clean-up Job deletes the run's databases; once it ends, the benchmark goes.
	_, deleting := h.reconcile(current)
	if deleting == nil {
		t.Fatal("the benchmark went before its databases")
	}
	h.playKubelet(deleting)
	if _, gone := h.reconcile(current); gone != nil {
		t.Fatalf("the benchmark is still there after its clean-up: finalizers %v", gone.Finalizers)
	}
	h.reconcile(current) // the deletion's watch event: the benchmark is not found, and its gauges go
	if v := gaugeValue(gather(t), "couchbench_verdict", map[string]string{"benchmark": "current"}); v != -1 {
		t.Errorf("the deleted benchmark's verdict gauge is still there (%v)", v)
	}
}

// A baseline that does not exist, or that ran another dataset, holds the run before it
// starts, saying what to fix.
func TestBaselineIsCheckedBeforeTheRun(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	create(t, credentials(ns))
	current := withBaseline(existingBenchmark(ns), "current", "base")
	create(t, current)
	h.reconcile(current) // the finalizer that deletes the run's databases
	_, got := h.reconcile(current)
	s := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if s == nil || s.Reason != reasonBaselineNotFound || !strings.Contains(s.Message, "spec.baseline.benchmark") || got.Status.StartTime != nil {
		t.Fatalf("Stalled %+v, start %v", s, got.Status.StartTime)
	}
	base := withBaseline(existingBenchmark(ns), "base", "")
	base.Spec.Dataset.Documents = 5000
	create(t, base)
	_, got = h.reconcile(current)
	s = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if s == nil || s.Reason != reasonNotComparable || !strings.Contains(s.Message, "spec.dataset.documents: 5000 vs 100000") {
		t.Fatalf("Stalled %+v", s)
	}
}

func gather(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// gaugeValue is the value of the first series of the family with the labels, -1 if none.
func gaugeValue(families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if includes(labelSet(m), labels) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// labelSet is a series' labels.
func labelSet(m *dto.Metric) map[string]string {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	return have
}

// includes says whether have holds every label of want with its value.
func includes(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// checkDashboardMetrics: every couchbench metric the chart's Grafana dashboard queries is one
// the manager's endpoint has.
func checkDashboardMetrics(t *testing.T, families []*dto.MetricFamily) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "charts", "couchbench-operator", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
		have[f.GetName()+"_bucket"] = true
	}
	used := regexp.MustCompile(`couchbench_[a-z_]+`).FindAllString(string(data), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard queries no couchbench metric")
	}
	for _, name := range used {
		if !have[name] {
			t.Errorf("the dashboard queries %s, which the manager does not export", name)
		}
	}
}
