//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
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
	t.Parallel()
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
	// The failure pages (the suite's Prometheus and Alertmanager, alerts_test.go) until the
	// benchmark is deleted.
	failed := map[string]string{"namespace": namespace, "benchmark": b.Name, "reason": "ImagePullFailed"}
	alert := waitForAlert(t, "CouchbenchBenchmarkFailed", failed, 2*time.Minute)
	contains(t, "the alert's summary", alert.Annotations["summary"], b.Name, "ImagePullFailed")
	if err := removeBenchmark(b); err != nil {
		t.Fatal(err)
	}
	waitForResolved(t, "CouchbenchBenchmarkFailed", failed, 2*time.Minute)
	// Nothing of the benchmark is left in Prometheus: its series ended with it.
	waitForNoSeries(t, fmt.Sprintf(`{namespace=%q, benchmark=%q}`, namespace, b.Name), time.Minute)
	nextRunStarts(t, "after-stuck-k6")
}

func TestUnschedulableRunnerFailsTheRunAndFreesTheNode(t *testing.T) {
	t.Parallel()
	b := stuckBenchmark("stuck-runner", benchv1.Workloads{
		Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1}})
	b.Spec.Runner.Resources = guaranteed("64", "128Mi")
	stuckRun(t, b, benchv1.StepSeed, "Unschedulable", "runner pod", "Insufficient cpu", "cpu 64", "spec.runner.resources")
	nextRunStarts(t, "after-stuck-runner")
}

// stuckRun starts b, whose pods of step cannot start, and waits for the report (Stalled with
// reason, naming wants, while the run waits; a Warning event naming the pod), then for the
// failure after spec.podStartTimeout with the step's Jobs and pods removed, no Job of the run
// having had more than its one pod (stopping a Job must not make the Job controller start
// another). It returns the failed benchmark.
func stuckRun(t *testing.T, b *benchv1.CouchBenchmark, step benchv1.Step, reason string, wants ...string) *benchv1.CouchBenchmark {
	t.Helper()
	ctx := context.Background()
	ofStep := map[string]string{builders.LabelBenchmark: b.Name, builders.LabelStep: string(step)}
	podsOfJobs := watchPodsPerJob(t, b.Name)
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
	var stepJobs batchv1.JobList
	if err := c.List(ctx, &stepJobs, client.InNamespace(namespace), client.MatchingLabels(ofStep)); err != nil || len(stepJobs.Items) == 0 {
		t.Fatalf("%d Jobs of step %s (%v)", len(stepJobs.Items), step, err)
	}
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

	perJob := podsOfJobs(got.CreationTimestamp)
	t.Logf("pods each Job of the run had: %v", perJob)
	for _, job := range stepJobs.Items {
		if n := perJob[jobKey(job.Name, job.UID)]; n != 1 {
			t.Errorf("Job %s of the stuck step had %d pods; want 1", job.Name, n)
		}
	}
	for job, n := range perJob {
		if n != 1 {
			t.Errorf("Job %s had %d pods; want 1: stopping it started another", job, n)
		}
	}
	return got
}

// watchPodsPerJob watches, from now on, the pods of the benchmark named benchmark, and counts
// the pods each Job ever had, whatever became of them: one the Job controller created and the
// garbage collector deleted a moment later counts. Its function ends the watch and returns the
// counts, by jobKey, of the pods created since since (a pod of an earlier benchmark of that
// name is older); it fails the test if the watch ended before. The API server ends watch
// streams when it likes (one said "http2: response body closed" mid-run): client-go's
// RetryWatcher watches again from the last version seen, so that no pod is missed.
func watchPodsPerJob(t *testing.T, benchmark string) func(since metav1.Time) map[string]int {
	t.Helper()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	pods := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(namespace)
	selector := builders.LabelBenchmark + "=" + builders.LabelValue(benchmark)
	list, err := pods.List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := toolswatch.NewRetryWatcherWithContext(context.Background(), list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	type seenPod struct {
		job     string
		created metav1.Time
	}
	seen := map[types.UID]seenPod{}
	var stopping atomic.Bool
	var ended error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Bookmark {
				continue
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Error || !ok {
				ended = fmt.Errorf("the pod watch said %s: %v", ev.Type, ev.Object)
				return
			}
			if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "Job" {
				seen[pod.UID] = seenPod{job: jobKey(owner.Name, owner.UID), created: pod.CreationTimestamp}
			}
		}
		if !stopping.Load() {
			ended = errors.New("the pod watch ended before the run did")
		}
	}()
	return func(since metav1.Time) map[string]int {
		t.Helper()
		stopping.Store(true)
		w.Stop()
		<-done
		if ended != nil {
			t.Fatal(ended)
		}
		perJob := map[string]int{}
		for _, p := range seen {
			if !p.created.Before(&since) {
				perJob[p.job]++
			}
		}
		return perJob
	}
}

// jobKey names a Job and its uid: a Job deleted and created again under the same name is
// another.
func jobKey(name string, uid types.UID) string {
	return fmt.Sprintf("%s (%s)", name, uid)
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
