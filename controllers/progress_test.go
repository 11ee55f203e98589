package controllers

import (
	"strings"
	"testing"

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
	if res.RequeueAfter != progress.Interval {
		t.Errorf("requeue after %s while the step runs, want %s to read its progress again", res.RequeueAfter, progress.Interval)
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
