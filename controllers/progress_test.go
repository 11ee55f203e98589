package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/progress"
)

// Talks to envtest's real kube-apiserver; the test plays the kubelet (the pod and its log)
// and the Job controller. While the seed Job's pod runs, status.progress.message is the last
// line its runner logged, read again at the next reconcile (every progress.Interval); the
// results frame is not taken for progress, and a line longer than a progress line is cut.
func TestProgressMessageIsTheRunnersLastLine(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, seed := seedStarted(t, h, ns)
	pod := h.startPod(seed, corev1.PodStatus{Phase: corev1.PodRunning})

	h.logs.write(ns, pod.Name, builders.RunnerContainer, "10:00:00 server http://couchdb:5984: 3.4.3\n10:00:10 js/small: load 1: documents seeded 4000 of 10000 (40%)\n")
	res, got := h.reconcile(bench)
	if m := got.Status.Progress.Message; m != "10:00:10 js/small: load 1: documents seeded 4000 of 10000 (40%)" {
		t.Errorf("progress message %q, want the runner's last line", m)
	}
	if res.RequeueAfter != progressPoll {
		t.Errorf("requeue after %s while the step runs, want %s to read its progress again", res.RequeueAfter, progressPoll)
	}

	// The results frame a runner writes as it ends is not progress: the last line stays.
	h.logs.write(ns, pod.Name, builders.RunnerContainer, "10:00:10 earlier\n-----BEGIN COUCHBENCH RESULTS-----\nAAAA\n-----END COUCHBENCH RESULTS-----\n")
	if _, got = h.reconcile(bench); got.Status.Progress.Message != "10:00:10 js/small: load 1: documents seeded 4000 of 10000 (40%)" {
		t.Errorf("progress message %q after the results frame; want the last progress line kept", got.Status.Progress.Message)
	}

	long := "10:00:20 js/small: " + strings.Repeat("x", 2*maxProgressMessage) + "\n"
	h.logs.write(ns, pod.Name, builders.RunnerContainer, "10:00:10 earlier\n"+long)
	if _, got = h.reconcile(bench); len(got.Status.Progress.Message) != maxProgressMessage+len("...") {
		t.Errorf("a %d-byte line kept as %d bytes, want it cut to %d and marked", len(long), len(got.Status.Progress.Message), maxProgressMessage)
	}
}

// Talks to envtest's real kube-apiserver; the test plays the kubelet (the pod and a log that
// gains a line every progress.Interval, as the runner's does) and controller-runtime (each
// reconcile comes when the one before asked to be requeued, on the harness's clock). While a
// step runs, status is written at most once per progressPoll: every write is a new
// resourceVersion for each watcher of the benchmark, a GitOps tool's among them. The writes
// per minute are logged (docs/gitops.md records them).
func TestProgressIsWrittenAtMostOncePerPoll(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, seed := seedStarted(t, h, ns)
	pod := h.startPod(seed, corev1.PodStatus{Phase: corev1.PodRunning})
	_, got := h.reconcile(bench)
	const span = 10 * time.Minute
	end, version, writes, reconciles := h.clock.Now().Add(span), got.ResourceVersion, 0, 0
	var log strings.Builder
	for next := h.clock.Now(); h.clock.Now().Before(end); {
		for ; !next.After(h.clock.Now()); next = next.Add(progress.Interval) {
			fmt.Fprintf(&log, "%s js/small: load 1: documents seeded %d of 100000\n", next.Format(time.TimeOnly), next.Sub(end.Add(-span))/time.Second*100)
		}
		h.logs.write(ns, pod.Name, builders.RunnerContainer, log.String())
		res, got := h.reconcile(bench)
		reconciles++
		if got.ResourceVersion != version {
			writes, version = writes+1, got.ResourceVersion
		}
		if res.RequeueAfter <= 0 {
			t.Fatalf("no requeue while the step runs: %+v", res)
		}
		h.clock.SetTime(h.clock.Now().Add(res.RequeueAfter))
	}
	t.Logf("a running step over %s: %d reconciles, %d status writes (%.1f a minute), the log a line every %s",
		span, reconciles, writes, float64(writes)/span.Minutes(), progress.Interval)
	if limit := int(span / progressPoll); writes > limit || writes == 0 {
		t.Errorf("%d status writes in %s, want between 1 and %d (one per %s)", writes, span, limit, progressPoll)
	}
}
