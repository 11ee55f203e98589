//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// A chart repository that answers 503 Service Unavailable twice, then serves the chart: the
// provision step retries (a Warning event Retrying quoting the 503) and the run succeeds.
func TestChartRepositoryUnavailableTwiceIsRetried(t *testing.T) {
	t.Parallel()
	b := provisioned("flaky-chart", flakyRepository(t, 2), 1, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Dataset = benchv1.Dataset{Documents: 500, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1}}
	start(t, b)
	if got := waitPhase(t, b, 20*time.Minute); got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s: %+v\n%s", got.Status.Phase, got.Status.Conditions, whoAnswered(t))
	}
	retries := eventsOf(t, b, "Retrying")
	contains(t, "the Retrying events", strings.Join(retries, "\n"), "503 Service Unavailable", "step provision")
	t.Logf("retried: %q", retries)
	if failed := eventsOf(t, b, "ChartFailed"); len(failed) > 0 {
		t.Errorf("ChartFailed events for a repository that came back: %q", failed)
	}
}
