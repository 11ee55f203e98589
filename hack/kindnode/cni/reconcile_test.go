package main

import (
	"bytes"
	"errors"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeIP records `ip` command lines and fails the ones listed in fail.
type fakeIP struct {
	calls []string
	fail  map[string]error
}

func (f *fakeIP) Run(args ...string) error {
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	return f.fail[line]
}

// takeCalls returns the commands run since the last call.
func (f *fakeIP) takeCalls() []string {
	calls := f.calls
	f.calls = nil
	return calls
}

type reconcileFixture struct {
	r    *reconciler
	ip   *fakeIP
	logs *bytes.Buffer
	path string
}

func newFixture(t *testing.T) *reconcileFixture {
	t.Helper()
	ip := &fakeIP{fail: map[string]error{}}
	logs := &bytes.Buffer{}
	path := filepath.Join(t.TempDir(), conflistName)
	return &reconcileFixture{
		r:    newReconciler("cp", path, 1500, ip, log.New(logs, "", 0)),
		ip:   ip,
		logs: logs,
		path: path,
	}
}

// pass reconciles and returns the commands it ran and the lines it logged.
func (f *reconcileFixture) pass(t *testing.T, nodes ...corev1.Node) (calls, logged []string) {
	t.Helper()
	if err := f.r.reconcile(nodes); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return f.ip.takeCalls(), f.takeLogs()
}

func (f *reconcileFixture) takeLogs() []string {
	text := strings.TrimSpace(f.logs.String())
	f.logs.Reset()
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

func checkLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

var (
	cp = testNode("cp", "10.244.0.0/24", internalIP("172.18.0.2"))
	w1 = testNode("w1", "10.244.1.0/24", internalIP("172.18.0.3"))
	w2 = testNode("w2", "10.244.2.0/24", internalIP("172.18.0.4"))
)

func TestReconcileSteadyState(t *testing.T) {
	f := newFixture(t)

	calls, logged := f.pass(t, cp, w1, w2)
	checkLines(t, "first pass commands", calls, []string{
		"route replace 10.244.1.0/24 via 172.18.0.3",
		"route replace 10.244.2.0/24 via 172.18.0.4",
	})
	checkLines(t, "first pass log", logged, []string{
		"wrote " + f.path + " for pod CIDR 10.244.0.0/24",
		"added route 10.244.1.0/24 via 172.18.0.3",
		"added route 10.244.2.0/24 via 172.18.0.4",
	})
	content, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	checkConflist(t, content, "10.244.0.0/24", 1500)

	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(f.path, old, old); err != nil {
		t.Fatal(err)
	}
	calls, logged = f.pass(t, w2, cp, w1) // a resync: same nodes, another order
	checkLines(t, "second pass commands", calls, nil)
	checkLines(t, "second pass log", logged, nil)
	if info, err := os.Stat(f.path); err != nil || !info.ModTime().Equal(old) {
		t.Errorf("second pass rewrote the unchanged CNI config: mtime %v, err %v", info.ModTime(), err)
	}
}

func TestReconcileNodeChanges(t *testing.T) {
	f := newFixture(t)
	f.pass(t, cp, w1, w2)

	w1moved := testNode("w1", "10.244.1.0/24", internalIP("172.18.0.9"))
	calls, logged := f.pass(t, cp, w1moved, w2)
	checkLines(t, "gateway change commands", calls, []string{"route replace 10.244.1.0/24 via 172.18.0.9"})
	checkLines(t, "gateway change log", logged, []string{"changed route 10.244.1.0/24 via 172.18.0.9 (was via 172.18.0.3)"})

	w2renumbered := testNode("w2", "10.244.7.0/24", internalIP("172.18.0.4"))
	calls, logged = f.pass(t, cp, w1moved, w2renumbered)
	checkLines(t, "CIDR change commands", calls, []string{"route del 10.244.2.0/24", "route replace 10.244.7.0/24 via 172.18.0.4"})
	checkLines(t, "CIDR change log", logged, []string{"removed route 10.244.2.0/24 via 172.18.0.4", "added route 10.244.7.0/24 via 172.18.0.4"})

	calls, logged = f.pass(t, cp, w2renumbered)
	checkLines(t, "node gone commands", calls, []string{"route del 10.244.1.0/24"})
	checkLines(t, "node gone log", logged, []string{"removed route 10.244.1.0/24 via 172.18.0.9"})

	// A node losing its pod CIDR is a node this can no longer route to.
	calls, _ = f.pass(t, cp, testNode("w2", "", internalIP("172.18.0.4")))
	checkLines(t, "CIDR gone commands", calls, []string{"route del 10.244.7.0/24"})
}

func TestReconcileOwnCIDRChange(t *testing.T) {
	f := newFixture(t)
	f.pass(t, cp)
	calls, logged := f.pass(t, testNode("cp", "10.244.9.0/24", internalIP("172.18.0.2")))
	checkLines(t, "commands", calls, nil)
	checkLines(t, "log", logged, []string{"wrote " + f.path + " for pod CIDR 10.244.9.0/24"})
	content, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	checkConflist(t, content, "10.244.9.0/24", 1500)
}

func TestReconcileWaitsForOwnPodCIDR(t *testing.T) {
	f := newFixture(t)
	calls, logged := f.pass(t, testNode("cp", "", internalIP("172.18.0.2")), w1)
	checkLines(t, "commands", calls, []string{"route replace 10.244.1.0/24 via 172.18.0.3"})
	checkLines(t, "log", logged, []string{"added route 10.244.1.0/24 via 172.18.0.3"})
	if _, err := os.Stat(f.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CNI config exists before the node has a pod CIDR (stat err %v)", err)
	}
	_, logged = f.pass(t, cp, w1)
	checkLines(t, "log once the CIDR is set", logged, []string{"wrote " + f.path + " for pod CIDR 10.244.0.0/24"})
}

func TestReconcileIPv6NotedOnce(t *testing.T) {
	f := newFixture(t)
	nodes := []corev1.Node{
		testNode("cp", "fd00:10:244::/64", internalIP("fc00::2")),
		testNode("w6", "fd00:10:244:1::/64", internalIP("fc00::3")),
	}
	calls, logged := f.pass(t, nodes...)
	checkLines(t, "commands", calls, nil)
	if len(logged) != 2 || !strings.HasPrefix(logged[0], "node cp (this node): no CNI config") || !strings.HasPrefix(logged[1], "node w6: no route") {
		t.Errorf("first pass log = %q, want one line about this node's config and one about w6's route", logged)
	}
	if _, err := os.Stat(f.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CNI config written for an IPv6-only node (stat err %v)", err)
	}
	_, logged = f.pass(t, nodes...)
	checkLines(t, "second pass log", logged, nil)
}

func TestReconcileRetriesFailedReplace(t *testing.T) {
	f := newFixture(t)
	replaceW1 := "route replace 10.244.1.0/24 via 172.18.0.3"
	f.ip.fail[replaceW1] = errors.New("ip " + replaceW1 + ": exit status 2: RTNETLINK answers: Network is unreachable")

	err := f.r.reconcile([]corev1.Node{cp, w1, w2})
	if err == nil || !strings.Contains(err.Error(), "Network is unreachable") {
		t.Fatalf("reconcile err = %v, want the failed command's error", err)
	}
	checkLines(t, "failing pass commands", f.ip.takeCalls(), []string{replaceW1, "route replace 10.244.2.0/24 via 172.18.0.4"})
	logged := f.takeLogs()
	if slices.Contains(logged, "added route 10.244.1.0/24 via 172.18.0.3") {
		t.Errorf("a failed route was logged as added: %q", logged)
	}

	delete(f.ip.fail, replaceW1)
	calls, logged := f.pass(t, cp, w1, w2)
	checkLines(t, "retry commands", calls, []string{replaceW1})
	checkLines(t, "retry log", logged, []string{"added route 10.244.1.0/24 via 172.18.0.3"})
}

func TestReconcileDelete(t *testing.T) {
	f := newFixture(t)
	f.pass(t, cp, w1, w2)
	delW1, delW2 := "route del 10.244.1.0/24", "route del 10.244.2.0/24"
	f.ip.fail[delW1] = errors.New("ip " + delW1 + ": exit status 2: RTNETLINK answers: No such process")
	f.ip.fail[delW2] = errors.New("ip " + delW2 + ": exit status 2: RTNETLINK answers: Operation not permitted")

	if err := f.r.reconcile([]corev1.Node{cp}); err == nil || !strings.Contains(err.Error(), "Operation not permitted") {
		t.Fatalf("reconcile err = %v, want the failed delete's error", err)
	}
	checkLines(t, "failing pass commands", f.ip.takeCalls(), []string{delW1, delW2})
	checkLines(t, "failing pass log", f.takeLogs(), []string{"removed route 10.244.1.0/24 via 172.18.0.3"})

	// The route already gone is forgotten; the one that failed otherwise is tried again.
	delete(f.ip.fail, delW2)
	calls, logged := f.pass(t, cp)
	checkLines(t, "retry commands", calls, []string{delW2})
	checkLines(t, "retry log", logged, []string{"removed route 10.244.2.0/24 via 172.18.0.4"})
}

func TestReconcileConfigWriteError(t *testing.T) {
	f := newFixture(t)
	// A regular file where the config directory should be makes every write fail.
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.r.conflistPath = filepath.Join(blocker, conflistName)

	err := f.r.reconcile([]corev1.Node{cp, w1})
	if err == nil || !strings.Contains(err.Error(), "writing the CNI config") {
		t.Fatalf("reconcile err = %v, want a CNI config write error", err)
	}
	// Routes do not wait for the config.
	checkLines(t, "commands", f.ip.takeCalls(), []string{"route replace 10.244.1.0/24 via 172.18.0.3"})
}
