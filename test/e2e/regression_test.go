//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/history"
)

// An every-minute schedule against the existing CouchDB fires at least twice; the second
// run is compared with the first, and the schedule's status keeps both with their numbers.
func TestEveryMinuteScheduleComparesEachRunWithThePrevious(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &benchv1.CouchBenchmarkSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "every-minute"},
		Spec: benchv1.CouchBenchmarkScheduleSpec{
			Schedule: "* * * * *", ConcurrencyPolicy: benchv1.ConcurrencyForbid, SuccessfulRunsHistoryLimit: 3,
			Baseline: benchv1.ScheduleBaseline{Policy: benchv1.BaselinePreviousSuccessful, TolerancePercent: 5},
			Template: benchv1.BenchmarkTemplate{Spec: benchv1.CouchBenchmarkSpec{
				CouchDB:      existingTarget(),
				QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
				Dataset:      benchv1.Dataset{Documents: 3000, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2},
				Workloads: benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin},
					Repetitions: 3}},
				Timeout: "20m",
			}},
		},
	}
	createSchedule(t, s)

	var got benchv1.CouchBenchmarkSchedule
	if err := poll(ctx, 8*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), &got); err != nil {
			return false, err.Error()
		}
		succeeded := 0
		for _, h := range got.Status.History {
			if h.Phase == benchv1.PhaseFailed {
				t.Fatalf("run %s failed: %+v", h.Name, got.Status)
			}
			if h.Phase == benchv1.PhaseSucceeded {
				succeeded++
			}
		}
		return succeeded >= 2, fmt.Sprintf("history %+v", got.Status.History)
	}); err != nil {
		t.Fatal(err)
	}
	newest, previous := got.Status.History[0], got.Status.History[1]
	if newest.Phase != benchv1.PhaseSucceeded {
		newest, previous = got.Status.History[1], got.Status.History[2]
	}
	var run benchv1.CouchBenchmark
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: newest.Name}, &run); err != nil {
		t.Fatal(err)
	}
	cmp := run.Status.Comparison
	if run.Spec.Baseline == nil || run.Spec.Baseline.Benchmark != previous.Name || cmp == nil || cmp.Verdict == "" || newest.Verdict != cmp.Verdict {
		t.Fatalf("run %s: baseline %+v, comparison %+v, history entry %+v", run.Name, run.Spec.Baseline, cmp, newest)
	}
	if r := meta.FindStatusCondition(run.Status.Conditions, "Regressed"); r == nil {
		t.Errorf("run %s has no Regressed condition: %+v", run.Name, run.Status.Conditions)
	}
	if got.Status.LastSuccessfulRun == "" || got.Status.NextScheduleTime == nil {
		t.Errorf("schedule status %+v", got.Status)
	}
	// The successful runs are in the schedule's history, which the schedule looks for shifts in.
	var hist corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.HistoryConfigMapName(s.Name)}, &hist); err != nil {
		t.Fatalf("the schedule's history: %v", err)
	}
	var h history.History
	if err := json.Unmarshal([]byte(hist.Data[builders.HistoryKey]), &h); err != nil || len(h.Runs) < 2 {
		t.Errorf("history %+v (%v): want the successful runs", h, err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "Shifted"); c == nil {
		t.Errorf("no Shifted condition: %+v", got.Status.Conditions)
	}
	t.Logf("run %s against %s: %s (%s)", run.Name, previous.Name, cmp.Verdict, cmp.Summary)
	for _, h := range got.Status.History {
		t.Logf("history: %s %s best %v c/s, verdict %q", h.Name, h.Phase, deref(h.BestChangesPerSecond), h.Verdict)
	}
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}
