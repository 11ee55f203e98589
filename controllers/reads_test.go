package controllers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/testenv"
)

// k6Summary is the end-of-test summary real k6 wrote (internal/results/testdata) with the
// spec's threshold judged as passed or not, as runner i of 2 would write it.
func k6Summary(t *testing.T, i int, thresholdPassed bool) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "internal", "results", "testdata", "k6-summary-two-thresholds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var summary map[string]any
	if err := json.Unmarshal(data, &summary); err != nil {
		t.Fatal(err)
	}
	metrics := summary["metrics"].(map[string]any)
	metrics["http_req_duration{couchbench:load}"].(map[string]any)["thresholds"] = map[string]any{
		"max>=0": map[string]any{"ok": true}, "p(95)<1000": map[string]any{"ok": thresholdPassed},
	}
	metrics["http_reqs{couchbench:load}"].(map[string]any)["values"].(map[string]any)["count"] = 200 + i
	out, err := json.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readsBenchmark(namespace string) *benchv1.CouchBenchmark {
	b := existingBenchmark(namespace)
	b.Spec.QueryServers = b.Spec.QueryServers[:1]
	b.Spec.Workloads = benchv1.Workloads{Reads: &benchv1.ReadsWorkload{
		Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 120, IterationsPerUser: ptr.To[int32](400),
		Thresholds: []benchv1.Threshold{{Metric: "http_req_duration", Condition: "p(95)<1000"}},
	}}
	b.Spec.K6 = benchv1.K6Settings{Parallelism: 2} // no image: the operator's default
	return b
}

func TestReadsRunParallelK6JobsAndMergeThem(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	create(t, bench)

	// Seed, then the reads step creates both runners in one reconcile.
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	h.playKubelet(got)
	h.reconcile(bench)
	_, got = h.reconcile(bench)
	if jobs := jobsOf(t, got); jobs["js/reads"] != 2 {
		t.Fatalf("jobs %v, want 2 k6 runners started together", jobs)
	}
	var job batchv1.Job
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.K6JobName(got, "js", 0, 1)}, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if c.Image != h.r.K6Image {
		t.Errorf("k6 image %q, want the operator's default %q for a benchmark that names none", c.Image, h.r.K6Image)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--execution-segment 1/2:1 --execution-segment-sequence 0,1/2,1") {
		t.Errorf("runner 2 args %q", args)
	}
	for _, e := range c.Env {
		if e.Name == "COUCHDB_PASSWORD" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "couchdb-admin") {
			t.Errorf("the password must come from the Secret, not a value: %+v", e)
		}
		if strings.Contains(e.Value, "s3cret") {
			t.Errorf("%s carries the password", e.Name)
		}
	}
	var script corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.K6ConfigMapName(got)}, &script); err != nil ||
		script.Data[k6plan.ScriptName] != k6plan.Script {
		t.Errorf("k6 script ConfigMap: %v", err)
	}

	got = h.drive(bench, 10)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	reads := got.Status.Results[0].Reads
	if reads == nil || reads.Requests != 401 || !reads.PercentilesUpperBound || len(reads.Runners) != 2 || got.Status.ReadP95 != reads.P95 {
		t.Fatalf("reads %+v, readP95 %q", reads, got.Status.ReadP95)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionThresholds); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ThresholdsPassed %+v", c)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[builders.ResultsMarkdownKey], "### Reads (k6)") || !strings.Contains(cm.Data[builders.ResultsMarkdownKey], "(upper bound)") {
		t.Errorf("results.md:\n%s", cm.Data[builders.ResultsMarkdownKey])
	}
}

func TestFailedThresholdIsAConditionNotAFailure(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, i == 0) }
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	create(t, bench)
	got := h.drive(bench, 10)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s: a failed threshold must not fail the run", got.Status.Phase)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, conditionThresholds)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reasonThresholdsFailed || !strings.Contains(c.Message, "p(95)<1000") {
		t.Errorf("ThresholdsPassed %+v", c)
	}
	if tp := got.Status.Results[0].Reads.ThresholdsPassed; tp == nil || *tp {
		t.Errorf("thresholdsPassed %v", tp)
	}
}

// Seed 001's protocol: the whole load again, by Jobs of its own, a pause after the last one
// ended; each repetition is stored as soon as it has ended, and requests/s is the median over
// the repetitions, the elapsed time their sum. The kubelet is the harness's.
func TestReadRepetitionsRunApartAndAddUp(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	bench.Spec.Workloads.Reads.Repetitions = 2
	bench.Spec.Workloads.Reads.Pause = "90s"
	bench.Spec.K6.Image = "registry.example/k6:1.8.1"
	create(t, bench)

	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	h.playKubelet(got) // seed
	h.reconcile(bench)
	_, got = h.reconcile(bench)
	if jobs := jobsOf(t, got); jobs["js/reads"] != 2 {
		t.Fatalf("jobs %v, want the first repetition's 2 runners", jobs)
	}
	h.playKubelet(got)
	res, got := h.reconcile(bench)
	if jobs := jobsOf(t, got); jobs["js/reads"] != 2 || res.RequeueAfter < 80*time.Second || res.RequeueAfter > 90*time.Second {
		t.Fatalf("jobs %v, requeue after %v: want the second repetition held back for the 90 s pause", jobs, res.RequeueAfter)
	}
	if reads := got.Status.Results[0].Reads; reads == nil || reads.Runs != 1 || reads.Requests != 401 {
		t.Fatalf("after the first repetition: reads %+v, want it stored", reads)
	}
	h.clock.SetTime(h.clock.Now().Add(90 * time.Second))
	_, got = h.reconcile(bench)
	if jobs := jobsOf(t, got); jobs["js/reads"] != 4 {
		t.Fatalf("jobs %v, want the second repetition's runners after the pause", jobs)
	}
	var job batchv1.Job
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.K6JobName(got, "js", 1, 0)}, &job); err != nil {
		t.Fatal(err)
	}
	if image := job.Spec.Template.Spec.Containers[0].Image; image != bench.Spec.K6.Image {
		t.Errorf("k6 image %q, want the benchmark's own %q", image, bench.Spec.K6.Image)
	}
	got = h.drive(bench, 10)
	reads := got.Status.Results[0].Reads
	if got.Status.Phase != benchv1.PhaseSucceeded || reads == nil || reads.Runs != 2 || reads.Requests != 802 || reads.Elapsed == "" ||
		len(reads.Runners) != 4 || !strings.HasPrefix(reads.Runners[2].Segment, "#2 ") {
		t.Fatalf("phase %s, reads %+v: want 2 repetitions of 2 runners, 802 requests", got.Status.Phase, reads)
	}
}

// A warm-up round runs first, by Jobs of its own, and is stored apart: the status counts
// the repetitions only, and the results document keeps the warm-up's runners.
func TestReadWarmUpRunsFirstAndIsNotCounted(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	bench.Spec.Workloads.Reads.Repetitions = 2
	bench.Spec.Workloads.Reads.WarmUp = true
	create(t, bench)

	got := h.drive(bench, 20)
	if jobs := jobsOf(t, got); jobs["js/reads"] != 6 {
		t.Errorf("jobs %v, want 3 rounds (a warm-up and 2 repetitions) of 2 runners", jobs)
	}
	reads := got.Status.Results[0].Reads
	if got.Status.Phase != benchv1.PhaseSucceeded || reads == nil || reads.Runs != 2 || reads.Requests != 802 {
		t.Fatalf("phase %s, reads %+v: want 2 counted repetitions, 802 requests", got.Status.Phase, reads)
	}
	doc := storedDocuments(t, got)[0]
	if r := doc.Arms[0].Profiles[0].Reads; len(r.WarmUp) != 2 || len(r.Runners) != 4 || r.Runners[0].Repetition != 0 || r.Runners[3].Repetition != 1 {
		t.Errorf("reads in the document: %d warm-up runners, %d counted (repetitions %d..%d); want 2, and 4 in repetitions 0 and 1",
			len(r.WarmUp), len(r.Runners), r.Runners[0].Repetition, r.Runners[len(r.Runners)-1].Repetition)
	}
}
