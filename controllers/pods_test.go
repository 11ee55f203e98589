package controllers

// Pods that cannot start: runner and k6 pods, as CouchDB's. These tests talk to envtest's API
// server; nothing runs pods there, so the tests play the scheduler, the kubelet and the Job
// controller by writing the pods' and Jobs' status as they would (a pod the scheduler found no
// node for, a container waiting for its image); the existing CouchDB is never called.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// podReads is the reconciler's APIReader, keeping the label selector of every pod List it
// is asked for.
type podReads struct {
	client.Reader
	selectors []string
}

func (p *podReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PodList); ok {
		p.selectors = append(p.selectors, (&client.ListOptions{}).ApplyOptions(opts).LabelSelector.String())
	}
	return p.Reader.List(ctx, list, opts...)
}

// keepPodReads makes h's reconciler keep the selectors of its pod Lists.
func keepPodReads(h *harness) *podReads {
	reads := &podReads{Reader: h.operator}
	h.r.APIReader = reads
	return reads
}

func job(t *testing.T, namespace, name string) *batchv1.Job {
	t.Helper()
	var j batchv1.Job
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

// A runner pod no node has room for is reported at the first look at the step's pods (a
// Stalled condition and one Warning event naming the pod, what it requests and what to
// change); the run waits, and goes on once the pod runs. Only the pods of a Job whose pod
// does not run are read, in one List, and they are looked at again within a minute; a running
// pod is left to the watch.
func TestUnschedulableRunnerPodIsReportedUntilItRuns(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	reads := keepPodReads(h)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	cpus := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	bench.Spec.Runner.Resources = corev1.ResourceRequirements{Requests: cpus, Limits: cpus}
	create(t, bench)
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	seed := job(t, ns, builders.JobName(got, []string{"js", "py"}, benchv1.StepSeed))

	pod := h.startPod(seed, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient cpu."}}})
	res, got := h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseRunning || stalled == nil || stalled.Reason != reasonUnschedulable {
		t.Fatalf("phase %s, Stalled %+v; want Running and Stalled Unschedulable", got.Status.Phase, stalled)
	}
	for _, want := range []string{"runner pod " + pod.Name, "Insufficient cpu", "it requests cpu 64, memory 512Mi", "spec.runner.resources",
		"spec.podStartTimeout (5m)"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("Stalled message lacks %q:\n%s", want, stalled.Message)
		}
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("RequeueAfter %s; a pod that cannot start must be looked at again within a minute", res.RequeueAfter)
	}
	if len(reads.selectors) != 1 || reads.selectors[0] != batchv1.JobNameLabel+" in ("+seed.Name+")" {
		t.Errorf("pod Lists %q; want one, of the seed Job's pods", reads.selectors)
	}
	if evs := drainEvents(h); strings.Count(evs, "Warning Unschedulable") != 1 || !strings.Contains(evs, pod.Name) {
		t.Errorf("want one Unschedulable event naming the pod, got:\n%s", evs)
	}
	h.clock.SetTime(h.clock.Now().Add(time.Minute))
	if _, again := h.reconcile(bench); again.ResourceVersion != got.ResourceVersion {
		t.Error("a reconcile that saw the same stall wrote the benchmark again")
	}

	// Resources are freed: the pod is scheduled and runs. The watch will say when its Job ends;
	// meanwhile its progress line is read every progressPoll, from that Job's pods only.
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h.countPod(seed, true)
	lists := len(reads.selectors)
	res, got = h.reconcile(bench)
	if isStalled(&got.Status.Conditions) || !meta.IsStatusConditionTrue(got.Status.Conditions, conditionReconciling) {
		t.Errorf("conditions %+v; want Reconciling and no Stalled once the pod runs", got.Status.Conditions)
	}
	if res.RequeueAfter != progressPoll || len(reads.selectors) != lists+1 || reads.selectors[lists] != batchv1.JobNameLabel+"="+seed.Name {
		t.Errorf("RequeueAfter %s, pod Lists %q; a Job whose pod runs is looked at for its progress only, every %s",
			res.RequeueAfter, reads.selectors[lists:], progressPoll)
	}
}

// A k6 image the node cannot pull is reported at once, naming the pod, the image and where a
// benchmark names another; the run fails spec.podStartTimeout after the report, keeping what
// it measured before, and removes the read Jobs so that their pods stop holding the node.
func TestUnpullableK6ImageFailsTheRunKeepingItsResults(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	reads := keepPodReads(h)
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	create(t, bench)
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	h.playKubelet(got) // the seed ends
	h.reconcile(bench)
	_, got = h.reconcile(bench)
	runners := []*batchv1.Job{job(t, ns, builders.K6JobName(got, "js", 0, 0)), job(t, ns, builders.K6JobName(got, "js", 0, 1))}

	pull := h.startPod(runners[0], corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: builders.K6Container, Image: h.r.K6Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: `failed to pull and unpack image "docker.io/couchbench/k6:test": not found`}},
	}}})
	h.startPod(runners[1], corev1.PodStatus{Phase: corev1.PodRunning})
	reads.selectors = nil
	_, got = h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseRunning || stalled == nil || stalled.Reason != reasonImagePullFailed {
		t.Fatalf("phase %s, Stalled %+v; want Running and Stalled ImagePullFailed", got.Status.Phase, stalled)
	}
	for _, want := range []string{"k6 pod " + pull.Name, "image " + h.r.K6Image, "not found", "spec.k6.image", "k6.image"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("Stalled message lacks %q:\n%s", want, stalled.Message)
		}
	}
	if len(reads.selectors) != 1 || reads.selectors[0] != batchv1.JobNameLabel+" in ("+runners[0].Name+")" {
		t.Errorf("pod Lists %q; want one, of the pods of the runner whose pod does not run", reads.selectors)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Warning ImagePullFailed") || !strings.Contains(evs, pull.Name) {
		t.Errorf("no ImagePullFailed event naming the pod:\n%s", evs)
	}

	// The kubelet backs off; the pod is still stuck, since the first report.
	pull.Status.ContainerStatuses[0].State.Waiting.Reason = "ImagePullBackOff"
	if err := env.Client.Status().Update(context.Background(), pull); err != nil {
		t.Fatal(err)
	}
	h.clock.SetTime(h.clock.Now().Add(4 * time.Minute))
	if _, got = h.reconcile(bench); got.Status.Phase != benchv1.PhaseRunning {
		t.Fatalf("phase %s four minutes after the report; want Running until spec.podStartTimeout (5m)", got.Status.Phase)
	}
	h.clock.SetTime(h.clock.Now().Add(time.Minute))
	_, got = h.reconcile(bench)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonImagePullFailed ||
		!strings.Contains(stalled.Message, "did not start within spec.podStartTimeout (5m)") {
		t.Fatalf("phase %s, Stalled %+v; want Failed ImagePullFailed after spec.podStartTimeout", got.Status.Phase, stalled)
	}
	if r := got.Status.Results; len(r) != 1 || len(r[0].Seeding) != 1 {
		t.Errorf("results %+v; the seeding measured before must stay", r)
	}
	for _, runner := range runners {
		if !stopped(job(t, ns, runner.Name)) {
			t.Errorf("k6 Job %s after the failure: not stopped", runner.Name)
		}
	}
}

// A runner or k6 container the kernel killed for memory is said to be, with its limit and the
// field that raises it; any other end keeps its exit code and reason. No server: the pod is
// as the kubelet reports one.
func TestContainerKilledForMemorySaysWhatToRaise(t *testing.T) {
	pod := func(container string, limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: container, Resources: corev1.ResourceRequirements{Limits: limits}}}}}
	}
	ended := func(container, reason string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: container, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}
	}
	limit := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	for _, tc := range []struct {
		pod    *corev1.Pod
		status corev1.ContainerStatus
		want   string
	}{
		{pod(builders.RunnerContainer, limit), ended(builders.RunnerContainer, "OOMKilled", 137),
			"the runner was killed for memory (OOMKilled at its limit 512Mi); raise spec.runner.resources.limits.memory"},
		{pod(builders.K6Container, limit), ended(builders.K6Container, "OOMKilled", 137),
			"the k6 runner was killed for memory (OOMKilled at its limit 512Mi); raise spec.k6.resources.limits.memory"},
		{pod(builders.RunnerContainer, nil), ended(builders.RunnerContainer, "OOMKilled", 137),
			"the runner was killed for memory (OOMKilled without a memory limit: its node ran short); set " +
				"spec.runner.resources.requests.memory to what it needs, so that it is placed on a node that has it"},
		{pod(builders.RunnerContainer, limit), ended(builders.RunnerContainer, "Error", 1), "container runner exited with code 1 (Error)"},
	} {
		if got := containerEnd(tc.pod, tc.status); got != tc.want {
			t.Errorf("container %s ended %s:\n got %s\nwant %s", tc.status.Name, tc.status.State.Terminated.Reason, got, tc.want)
		}
	}
}

// The end of a log that the kubelet kept (its last 2048 bytes) is quoted in whole lines: the
// first line, cut mid-word, goes. A shorter tail is whole and kept. No server.
func TestLogTailIsQuotedInWholeLines(t *testing.T) {
	var log strings.Builder
	for i := range 100 {
		fmt.Fprintf(&log, "12:00:%02d js/large: load 1: documents seeded %d of 10000\n", i%60, i*100)
	}
	tail := log.String()[log.Len()-kubeletLogTailBytes:]
	got := wholeLines(tail)
	if !strings.HasPrefix(got, "12:00:") || !strings.HasSuffix(got, "documents seeded 9900 of 10000") || !strings.Contains(tail, got) {
		t.Errorf("quoted %q; want the whole lines of the tail, from a line's start to the last line", got)
	}
	if len(tail)-len(got) > 80 {
		t.Errorf("quoted %d of the tail's %d bytes; want all but its first, cut line", len(got), len(tail))
	}
	short := "couchbench seed: credentials: open /etc/couchbench/credentials/username: no such file or directory\n"
	if got := wholeLines(short); got != strings.TrimSpace(short) {
		t.Errorf("a short tail quoted as %q; want it whole", got)
	}
	// One line longer than the kubelet keeps (a panic's, say): part of it, not nothing.
	oneLine := strings.Repeat("x", kubeletLogTailBytes)
	if got := wholeLines(oneLine); got != oneLine {
		t.Errorf("a tail that is one cut line quoted as %d bytes; want it kept", len(got))
	}
}

// A runner the kernel killed for memory fails the run saying so, with its limit and the field
// that raises it, and quotes the end of its log in whole lines. envtest's API server; the test
// plays the kubelet (a container OOMKilled at 137, its termination message the last 2048 bytes
// of its log, cut mid-word) and the Job controller.
func TestRunnerKilledForMemoryFailsTheRunSayingSo(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, seed := seedStarted(t, h, ns)
	var log strings.Builder
	for i := range 60 {
		fmt.Fprintf(&log, "12:00:%02d js/large: load 1: documents seeded %d of 100000 (%d%%)\n", i, i*500, i/2)
	}
	tail := log.String()[log.Len()-kubeletLogTailBytes:]
	h.startPod(seed, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: builders.RunnerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "OOMKilled", ExitCode: 137, Message: tail}},
	}}})
	now := metav1.NewTime(h.clock.Now())
	seed = job(t, ns, seed.Name)
	seed.Status.Active, seed.Status.Ready, seed.Status.Failed = 0, ptr.To[int32](0), 1
	seed.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
	}
	if err := env.Client.Status().Update(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	got := h.drive(bench, 5)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil {
		t.Fatalf("phase %s, Stalled %+v; want the run failed", got.Status.Phase, stalled)
	}
	want := "the runner was killed for memory (OOMKilled at its limit 512Mi); raise spec.runner.resources.limits.memory): 12:00:"
	if !strings.Contains(stalled.Message, want) || !strings.HasSuffix(stalled.Message, "documents seeded 29500 of 100000 (29%)") {
		t.Errorf("Stalled message:\n%s\nwant %q, then the log's whole lines", stalled.Message, want)
	}
}
