package controllers

// Arms whose views run on another runtime than they ask for, as the seed step's runner hands
// over what it found (the harness plays the runner; internal/runner tests the probe on real
// CouchDB). The tests talk to envtest's API server and to the existing CouchDB of
// onOwnCouchDB (the kit's real single node), whose databases the run deletes at its end.

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// mismatchedDocument is okDocument, with the py arm's views found running on CPython with
// simplejson when it asks for PyPy, stopped or not: what the runner's seed step hands over
// then.
func mismatchedDocument(stopped bool) func(arm string, step benchv1.Step) *results.Document {
	return func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		if step == benchv1.StepSeed {
			rt := &results.Runtime{Language: "python", Engine: "CPython", Version: "3.11.2", JSONModule: "simplejson", Asked: "PyPy"}
			if arm == "py" {
				rt.Mismatch, rt.Stopped = "asks for PyPy (preset pypy), but the CouchDB at X runs its python views on CPython 3.11.2", stopped
			}
			if stopped && arm == "py" {
				d.Arms[0].Profiles[0].Seeding = nil
			}
			d.Arms[0].Runtime = rt
		}
		return d
	}
}

// An arm whose views run on another runtime than it asks for is stopped after the seed
// step's runner found it: no Job of any later step runs it, the other arm goes on, and the
// run ends Failed saying why, with the other arm's results.
func TestArmOnTheWrongRuntimeIsStopped(t *testing.T) {
	h := newHarness(t)
	h.document = mismatchedDocument(true)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	bench, c, run, _ := onOwnCouchDB(t, func(b *benchv1.CouchBenchmark) {
		b.Spec.Workloads.Reads = &benchv1.ReadsWorkload{VirtualUsers: 2, IterationsPerUser: ptr.To[int32](10)}
	})

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseFailed {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	// The seed Job ran both arms; every later step ran js alone, in Jobs labelled with it.
	want := map[string]int{"/seed": 1, "js/index": 1, "js/views": 1, "js/writes": 1, "js/reads": 1}
	if jobs := jobsOf(t, got); len(jobs) != len(want) || jobs["/seed"] != 1 || jobs["js/index"] != 1 || jobs["js/reads"] != 1 {
		t.Errorf("jobs %v, want %v", jobs, want)
	}
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonRuntimeMismatch ||
		!strings.HasPrefix(stalled.Message, "query server py was stopped: it asks for PyPy (preset pypy)") ||
		!strings.Contains(stalled.Message, "the other arms' results are in status and ConfigMap "+got.Status.ResultsConfigMap) {
		t.Errorf("Stalled %+v; want RuntimeMismatch naming the stopped arm and where the others' results are", stalled)
	}
	asAsked := meta.FindStatusCondition(got.Status.Conditions, conditionRuntimeAsAsked)
	if asAsked == nil || asAsked.Status != metav1.ConditionFalse || asAsked.Reason != reasonRuntimeMismatch ||
		!strings.HasPrefix(asAsked.Message, "query server py stopped: it asks for PyPy (preset pypy)") {
		t.Errorf("RuntimeAsAsked %+v", asAsked)
	}
	js, py := got.Status.Results[0], got.Status.Results[1]
	if py.Stopped == "" || len(py.Seeding)+len(py.Indexing)+len(py.Writes) > 0 || py.Reads != nil {
		t.Errorf("py's results %+v; want Stopped and nothing measured", py)
	}
	if js.Stopped != "" || len(js.Indexing) != 1 || js.Reads == nil || slices.Contains(js.Indexing[0].Flags, benchv1.FlagRuntimeMismatch) {
		t.Errorf("js's results %+v; want every workload, unflagged", js)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Warning RuntimeMismatch query server py stopped: it asks for PyPy") {
		t.Errorf("no RuntimeMismatch event:\n%s", evs)
	}
	// The run cleaned up before it ended: every arm's databases, the stopped one's included.
	if left := present(t, c, run); len(left) > 0 {
		t.Errorf("the run's databases %v are still there", left)
	}
}

// spec.runtimeMismatch Flag: the arm is measured anyway, and every number of it is flagged.
func TestArmOnTheWrongRuntimeIsFlagged(t *testing.T) {
	h := newHarness(t)
	h.document = mismatchedDocument(false)
	bench, _, _, _ := onOwnCouchDB(t, func(b *benchv1.CouchBenchmark) { b.Spec.RuntimeMismatch = benchv1.RuntimeMismatchFlag })

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	js, py := got.Status.Results[0], got.Status.Results[1]
	spreads := func(q benchv1.QueryServerResults) []benchv1.Spread {
		var out []benchv1.Spread
		for _, s := range q.Seeding {
			out = append(out, s.Spread)
		}
		for _, ix := range q.Indexing {
			out = append(out, ix.Spread)
		}
		for _, v := range q.ViewReads {
			out = append(out, v.Spread)
		}
		for _, w := range q.Writes {
			out = append(out, w.Spread)
		}
		return out
	}
	if s := spreads(py); len(s) != 4 || slices.ContainsFunc(s, func(s benchv1.Spread) bool { return !slices.Contains(s.Flags, benchv1.FlagRuntimeMismatch) }) {
		t.Errorf("py's results %+v; want all four flagged RuntimeMismatch", s)
	}
	if s := spreads(js); len(s) != 4 || slices.ContainsFunc(s, func(s benchv1.Spread) bool { return slices.Contains(s.Flags, benchv1.FlagRuntimeMismatch) }) {
		t.Errorf("js's results %+v; want none flagged", s)
	}
	asAsked := meta.FindStatusCondition(got.Status.Conditions, conditionRuntimeAsAsked)
	if asAsked == nil || asAsked.Status != metav1.ConditionFalse ||
		!strings.HasPrefix(asAsked.Message, "query server py measured anyway, every number flagged RuntimeMismatch: it asks for PyPy") {
		t.Errorf("RuntimeAsAsked %+v", asAsked)
	}
	md := readResults(t, got)
	if !strings.Contains(md, "RuntimeMismatch") || !strings.Contains(md, "CPython 3.11.2, JSON simplejson; asked for PyPy: measured anyway (RuntimeMismatch)") {
		t.Errorf("results.md lacks the flag or the provenance:\n%s", md)
	}
}

// readResults is the benchmark's results.md.
func readResults(t *testing.T, bench *benchv1.CouchBenchmark) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: bench.Namespace, Name: bench.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[builders.ResultsMarkdownKey]
}
