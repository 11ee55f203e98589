//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// Pods that cannot start: a k6 image no node has or can pull, and a runner that asks for more
// CPU than the node has. Each is reported (Stalled, with the reason) while the run waits, the
// run fails spec.podStartTimeout (1m here) after the report with its Jobs and their pods
// removed, and the next benchmark starts at once on the freed node. Both benchmark the existing
// CouchDB, which needs no provisioning.

// stuckBenchmark is a small benchmark of the existing CouchDB that gives up on a stuck pod
// after a minute.
func stuckBenchmark(name string, workloads benchv1.Workloads) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB:         existingTarget(),
			QueryServers:    []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
			Dataset:         benchv1.Dataset{Documents: 500, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2},
			Workloads:       workloads,
			PodStartTimeout: "1m",
			Timeout:         "30m",
		},
	}
}

func TestUnpullableK6ImageFailsTheRunAndFreesTheNode(t *testing.T) {
	// No node has this image, and none can pull it (the local cluster pulls nothing; on kind
	// the tag does not exist).
	const image = "couchbench/k6:not-loaded-e2e"
	b := stuckBenchmark("stuck-k6", benchv1.Workloads{
		Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 2, IterationsPerUser: ptr.To[int32](10)}})
	b.Spec.K6.Image = image
	got := stuckRun(t, b, benchv1.StepReads, "ImagePullFailed", "k6 pod", image, "spec.k6.image")
	if r := got.Status.Results; len(r) != 1 || len(r[0].Seeding) != 1 {
		t.Errorf("results %+v; the seeding measured before the reads must stay", r)
	}
	nextRunStarts(t, "after-stuck-k6")
}

func TestUnschedulableRunnerFailsTheRunAndFreesTheNode(t *testing.T) {
	b := stuckBenchmark("stuck-runner", benchv1.Workloads{
		Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1}})
	b.Spec.Runner.Resources = guaranteed("64", "128Mi")
	stuckRun(t, b, benchv1.StepSeed, "Unschedulable", "runner pod", "Insufficient cpu", "cpu 64", "spec.runner.resources")
	nextRunStarts(t, "after-stuck-runner")
}

// stuckRun starts b, whose pods of step cannot start, and waits for the report (Stalled with
// reason, naming wants, while the run waits; a Warning event naming the pod), then for the
// failure after spec.podStartTimeout with the step's Jobs and pods removed. It returns the
// failed benchmark.
func stuckRun(t *testing.T, b *benchv1.CouchBenchmark, step benchv1.Step, reason string, wants ...string) *benchv1.CouchBenchmark {
	t.Helper()
	ctx := context.Background()
	ofStep := map[string]string{builders.LabelBenchmark: b.Name, builders.LabelStep: string(step)}
	start(t, b)
	var stalled *metav1.Condition
	if err := poll(ctx, 10*time.Minute, func() (bool, string) {
		got := get(t, b)
		if got.Status.Phase == benchv1.PhaseFailed {
			t.Fatalf("the run failed before it reported the stuck pod: %+v", got.Status.Conditions)
		}
		stalled = meta.FindStatusCondition(got.Status.Conditions, "Stalled")
		return stalled != nil && stalled.Status == metav1.ConditionTrue, fmt.Sprintf("phase %s progress %+v conditions %+v",
			got.Status.Phase, got.Status.Progress, got.Status.Conditions)
	}); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(ofStep)); err != nil || len(pods.Items) == 0 {
		t.Fatalf("%d pods of step %s (%v)", len(pods.Items), step, err)
	}
	pod := pods.Items[0]
	// How soon, as this test saw it (it polls every 2 s): logged, not a check of speed.
	t.Logf("Stalled %s %s after pod %s was created: %s", stalled.Reason, time.Since(pod.CreationTimestamp.Time).Round(time.Second), pod.Name, stalled.Message)
	if stalled.Reason != reason {
		t.Errorf("Stalled reason %s, want %s", stalled.Reason, reason)
	}
	contains(t, "the Stalled message", stalled.Message, append(wants, pod.Name, "spec.podStartTimeout (1m)")...)
	contains(t, "the Warning events", strings.Join(eventsOf(t, b, reason), "\n"), pod.Name)

	got := waitPhase(t, b, 10*time.Minute)
	failed := meta.FindStatusCondition(got.Status.Conditions, "Stalled")
	if got.Status.Phase != benchv1.PhaseFailed || failed == nil || failed.Reason != reason ||
		!strings.Contains(failed.Message, "did not start within spec.podStartTimeout (1m)") {
		t.Fatalf("phase %s, Stalled %+v; want Failed %s after spec.podStartTimeout", got.Status.Phase, failed, reason)
	}
	gone(t, "Jobs of step "+string(step), &batchv1.JobList{}, ofStep)
	gone(t, "pods of step "+string(step), &corev1.PodList{}, ofStep)
	return got
}

// nextRunStarts runs a small benchmark right after one that failed on a stuck pod: no pod of
// it is stuck (the other's no longer hold the node), and it succeeds.
func nextRunStarts(t *testing.T, name string) {
	t.Helper()
	b := stuckBenchmark(name, benchv1.Workloads{Writes: &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}}})
	b.Spec.Dataset.Profiles = []benchv1.DocumentProfile{{Type: benchv1.DocumentTiny}}
	start(t, b)
	mustSucceed(t, b, 10*time.Minute)
	for _, reason := range []string{"Unschedulable", "ImagePullFailed", "PodNotStarting"} {
		if notes := eventsOf(t, b, reason); len(notes) > 0 {
			t.Errorf("the next benchmark was held back: %q", notes)
		}
	}
}
