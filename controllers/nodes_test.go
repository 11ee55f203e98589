package controllers

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

// lostAt is when the tests' nodes stop answering.
var lostAt = time.Date(2026, 11, 22, 12, 0, 1, 0, time.UTC)

// testNode is a Node as the tests give it: Ready as given, with the node lifecycle
// controller's unreachable taint when Unknown.
func testNode(name string, ready corev1.ConditionStatus, reason, message string) corev1.Node {
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(lostAt), LastHeartbeatTime: metav1.NewTime(lostAt.Add(-time.Minute))}}
	if ready == corev1.ConditionUnknown {
		node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	}
	return node
}

// Pure: no server.
func TestNodeTrouble(t *testing.T) {
	tainted := testNode("w", corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
	tainted.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
	cordoned := testNode("w", corev1.ConditionTrue, "KubeletReady", "")
	cordoned.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want string
	}{
		{"ready", testNode("w", corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"), ""},
		{"no Ready condition yet", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, ""},
		{"cordoned", cordoned, ""},
		{"kubelet gone", testNode("w", corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."),
			"stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.)"},
		{"not ready", testNode("w", corev1.ConditionFalse, "KubeletNotReady", "container runtime is down"),
			"is not ready (Ready False since 2026-11-22T12:00:01Z: container runtime is down)"},
		{"not ready, no message", testNode("w", corev1.ConditionFalse, "KubeletNotReady", ""),
			"is not ready (Ready False since 2026-11-22T12:00:01Z: KubeletNotReady)"},
		{"tainted while still Ready", tainted, "is tainted node.kubernetes.io/not-ready:NoExecute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeTrouble(&tc.node); got != tc.want {
				t.Errorf("nodeTrouble = %q, want %q", got, tc.want)
			}
			// The manager's cache keeps of a Node only what nodeTrouble reads.
			full := tc.node.DeepCopy()
			full.Status.Images = []corev1.ContainerImage{{Names: []string{"couchdb:3.4.3"}, SizeBytes: 1 << 28}}
			full.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
			kept, err := keepNodeReadiness(full)
			if err != nil {
				t.Fatal(err)
			}
			node := kept.(*corev1.Node)
			if got := nodeTrouble(node); got != tc.want {
				t.Errorf("nodeTrouble of the cached Node = %q, want %q", got, tc.want)
			}
			if node.Name != "w" || len(node.Status.Images) > 0 || len(node.Status.Allocatable) > 0 || len(node.Status.Conditions) > 1 ||
				(len(node.Status.Conditions) == 1 && !node.Status.Conditions[0].LastHeartbeatTime.IsZero()) {
				t.Errorf("the cache keeps %+v", node)
			}
		})
	}
}

// Pure: no server.
func TestLostNodes(t *testing.T) {
	couch := func(node, name, arm string) placedPod {
		return placedPod{node: node, name: name, kind: kindCouchDB, arm: arm}
	}
	runner := placedPod{node: "w2", name: "prov-seed-pod", kind: kindRunner}
	k6 := placedPod{node: "w3", name: "prov-k6-js-0-0-pod", kind: kindK6, arm: "js"}
	ready := func(name string) corev1.Node { return testNode(name, corev1.ConditionTrue, "KubeletReady", "") }
	gone := testNode("w2", corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.")
	threeNodes := []placedPod{couch("w1", "prov-js-couchdb-0", "js"), couch("w2", "prov-js-couchdb-1", "js"), couch("w3", "prov-js-couchdb-2", "js")}
	for _, tc := range []struct {
		name  string
		pods  []placedPod
		nodes []corev1.Node
		// want is the NodesReady message; couchDBOf the arms whose CouchDB a lost node holds.
		want      string
		couchDBOf []string
	}{
		{name: "every node ready", pods: append(threeNodes, runner), nodes: []corev1.Node{ready("w1"), ready("w2"), ready("w3")}},
		{name: "a lost node holds nothing of the benchmark", pods: threeNodes[:1], nodes: []corev1.Node{ready("w1"), gone}},
		{name: "a CouchDB node stops answering", pods: threeNodes, nodes: []corev1.Node{ready("w1"), gone, ready("w3")},
			want: "node w2 stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.); " +
				"it holds CouchDB pod prov-js-couchdb-1 of query server js",
			couchDBOf: []string{"js"}},
		{name: "a runner's node stops answering", pods: []placedPod{runner}, nodes: []corev1.Node{gone},
			want: "node w2 stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.); " +
				"it holds runner pod prov-seed-pod"},
		{name: "a deleted node", pods: []placedPod{k6}, nodes: []corev1.Node{ready("w1")},
			want: "node w3 no longer exists; it holds k6 pod prov-k6-js-0-0-pod of query server js"},
		{name: "several pods on several lost nodes, CouchDB's first",
			pods: []placedPod{k6, runner, couch("w2", "prov-py-couchdb-0", "py"), couch("w2", "prov-js-couchdb-1", "js"),
				couch("w2", "prov-js-couchdb-0", "js"), couch("w1", "prov-js-couchdb-2", "js")},
			nodes: []corev1.Node{ready("w1"), gone},
			want: "node w2 stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.); " +
				"it holds CouchDB pods prov-js-couchdb-0, prov-js-couchdb-1 of query server js and CouchDB pod prov-py-couchdb-0 of query server py " +
				"and runner pod prov-seed-pod; " +
				"node w3 no longer exists; it holds k6 pod prov-k6-js-0-0-pod of query server js",
			couchDBOf: []string{"js", "py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost := lostNodes(tc.pods, tc.nodes)
			described := make([]string, len(lost))
			for i, n := range lost {
				described[i] = n.String()
			}
			if got := strings.Join(described, "; "); got != tc.want {
				t.Errorf("lost nodes:\n%s\nwant:\n%s", got, tc.want)
			}
			for _, arm := range []string{"js", "py"} {
				want := strings.Contains(strings.Join(tc.couchDBOf, ","), arm)
				if got := holdsCouchDBOf(lost, []string{arm}); got != want {
					t.Errorf("holdsCouchDBOf(%s) = %v, want %v", arm, got, want)
				}
			}
		})
	}
}

// Pure: no server.
func TestPlacedPods(t *testing.T) {
	prov := provisionedBenchmark("ns")
	prov.Spec.QueryServers = append(prov.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	existing := existingBenchmark("ns")
	seed := builders.RunnerJob{Bench: prov, Servers: []builders.ArmServer{{Arm: "js"}, {Arm: "py"}}, Step: benchv1.StepSeed}.Job()
	k6 := builders.K6Job{Bench: prov, Arm: "py", Runners: 1}.Job()
	pod := func(labels map[string]string, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		name  string
		bench *benchv1.CouchBenchmark
		pod   *corev1.Pod
		want  placedPod
		ok    bool
	}{
		{"a runner pod of arms taking turns", prov, pod(podLabels(seed), "w1", corev1.PodRunning),
			placedPod{node: "w1", name: "p", kind: kindRunner}, true},
		{"a k6 pod", prov, pod(podLabels(k6), "w1", corev1.PodPending), placedPod{node: "w1", name: "p", kind: kindK6, arm: "py"}, true},
		{"a CouchDB pod of the second arm", prov, pod(builders.CouchDBPodLabels(builders.ReleaseName(prov, "py")), "w2", corev1.PodRunning),
			placedPod{node: "w2", name: "p", kind: kindCouchDB, arm: "py"}, true},
		{"a pod not scheduled yet", prov, pod(podLabels(seed), "", corev1.PodPending), placedPod{}, false},
		{"a pod that ended", prov, pod(podLabels(seed), "w1", corev1.PodSucceeded), placedPod{}, false},
		{"another benchmark's", existing, pod(podLabels(seed), "w1", corev1.PodRunning), placedPod{}, false},
		{"a CouchDB of the same release name where the benchmark provisions none", existing,
			pod(builders.CouchDBPodLabels(builders.ReleaseName(existing, "js")), "w1", corev1.PodRunning), placedPod{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := placed(tc.bench, tc.pod); got != tc.want || ok != tc.ok {
				t.Errorf("placed = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// readyNode creates a Node whose kubelet says it is Ready, named after the test's namespace
// (Nodes are cluster-wide), and deletes it when the test ends.
func readyNode(t *testing.T, ns, name string) string {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}}
	create(t, n)
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), n); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting Node %s: %v", n.Name, err)
		}
	})
	setNode(t, n.Name, corev1.ConditionTrue, lostAt.Add(-time.Hour))
	return n.Name
}

// setNode plays the kubelet (Ready True) or the node lifecycle controller once the kubelet has
// stopped posting status (Ready Unknown, and the unreachable taint), from at.
func setNode(t *testing.T, name string, ready corev1.ConditionStatus, at time.Time) {
	t.Helper()
	ctx := context.Background()
	var n corev1.Node
	if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	lost := testNode(name, ready, "KubeletReady", "kubelet is posting ready status")
	if ready == corev1.ConditionUnknown {
		lost = testNode(name, ready, "NodeStatusUnknown", "Kubelet stopped posting node status.")
	}
	// As the node lifecycle controller does: the Ready condition first, then the taint.
	n.Status.Conditions = lost.Status.Conditions
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
	if err := env.Client.Status().Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = lost.Spec.Taints
	if err := env.Client.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
}

// Talks to envtest's real kube-apiserver (no kubelet, no controllers: the test plays the
// kubelet, the StatefulSet controller and the node lifecycle controller); CouchDB's answers
// come from couchDBStub. A provisioned 3-node CouchDB whose pods run on three nodes is
// indexing when the node of its second pod stops answering: the next reconcile fails the run
// with NodeLost naming that node and pod, keeps the seeding measured before, stops the index
// Job, and tells of the lost node once however often it reconciles.
func TestLostCouchDBNodeFailsTheRunKeepingItsResults(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	h.document = func(arm string, step benchv1.Step) *results.Document {
		if step == benchv1.StepIndex {
			return nil // the build is under way
		}
		return okDocument(arm, step)
	}
	bench := provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)
	nodes := []string{readyNode(t, ns, "w1"), readyNode(t, ns, "w2"), readyNode(t, ns, "w3")}

	got := bench
	for i := 0; jobsOf(t, got)["js/index"] == 0; i++ {
		if i == 30 {
			t.Fatalf("no index Job after 30 reconciles: progress %+v, conditions %+v", got.Status.Progress, got.Status.Conditions)
		}
		_, got = h.reconcile(bench)
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	release := builders.ReleaseName(got, "js")
	var couchPods []string
	for _, pod := range couchDBPodsOn(t, ns, release, nodes) {
		pod.Status.Phase = corev1.PodRunning
		if err := env.Client.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		couchPods = append(couchPods, pod.Name)
	}
	if _, got = h.reconcile(bench); got.Status.Phase != benchv1.PhaseRunning || meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady) != nil {
		t.Fatalf("phase %s, conditions %+v; want Running and no NodesReady while every node is ready", got.Status.Phase, got.Status.Conditions)
	}
	drainEvents(h)

	setNode(t, nodes[1], corev1.ConditionUnknown, lostAt)
	_, got = h.reconcile(bench)

	lost := "node " + nodes[1] + " stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.); " +
		"it holds CouchDB pod " + couchPods[1] + " of query server js"
	nodesReady := meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady)
	if nodesReady == nil || nodesReady.Status != metav1.ConditionFalse || nodesReady.Reason != reasonNodeLost || nodesReady.Message != lost {
		t.Errorf("NodesReady %+v; want False, NodeLost:\n%s", nodesReady, lost)
	}
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonNodeLost ||
		!strings.HasPrefix(stalled.Message, "query server js: index: "+lost+"; ") {
		t.Fatalf("phase %s, Stalled %+v; want Failed, NodeLost naming the step, the node and the pod", got.Status.Phase, stalled)
	}
	if r := got.Status.Results; len(r) != 1 || len(r[0].Seeding) != 1 {
		t.Errorf("results %+v; the seeding measured before must stay", r)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[builders.ResultsMarkdownKey], "### Seeding") {
		t.Errorf("the results ConfigMap lost the seeding:\n%s", cm.Data[builders.ResultsMarkdownKey])
	}
	if jobs := jobsOf(t, got); jobs["js/index"] != 0 {
		t.Errorf("jobs after the failure: %v; want the index Job stopped", jobs)
	}
	for range 3 {
		h.clock.SetTime(h.clock.Now().Add(10 * time.Second))
		h.reconcile(bench)
	}
	evs := drainEvents(h)
	if strings.Count(evs, "Warning NodeLost node ") != 1 || !strings.Contains(evs, "Warning NodeLost "+lost+"\n") ||
		strings.Count(evs, "Warning RunFailed failed in step index of query server js") != 1 ||
		!strings.Contains(evs, "NodeLost: query server js: index: ") {
		t.Errorf("want one NodeLost event for the node and one RunFailed event for the failure, naming it, got:\n%s", evs)
	}
	for _, other := range []string{nodes[0], nodes[2]} {
		if strings.Contains(evs, other) {
			t.Errorf("the events name %s, which is ready:\n%s", other, evs)
		}
	}
}

// runnerOnNode starts an existing-CouchDB benchmark whose seed Job's pod runs on a node of
// its own, returning the node and the pod.
func runnerOnNode(t *testing.T, h *harness, ns string) (bench *benchv1.CouchBenchmark, nodeName string, pod *corev1.Pod) {
	t.Helper()
	create(t, credentials(ns))
	bench = existingBenchmark(ns)
	create(t, bench)
	h.node = readyNode(t, ns, "load")
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	seed := job(t, ns, builders.JobName(got, []string{"js", "py"}, benchv1.StepSeed))
	pod = h.startPod(seed, corev1.PodStatus{Phase: corev1.PodRunning})
	if _, got = h.reconcile(bench); got.Status.Phase != benchv1.PhaseRunning || meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady) != nil {
		t.Fatalf("phase %s, conditions %+v; want Running and no NodesReady while every node is ready", got.Status.Phase, got.Status.Conditions)
	}
	drainEvents(h)
	return bench, h.node, pod
}

// Talks to envtest's real kube-apiserver (no kubelet, no controllers: the test plays the
// kubelet, the Job controller and the node lifecycle controller). A node that holds only a
// runner pod stops answering: NodesReady turns False naming it and the pod, with one Warning
// event however often the benchmark reconciles, and the run goes on (the Job controller and
// the step decide what the pod's loss means). The node comes back: NodesReady turns True,
// with one Normal event.
func TestLostLoadGeneratorNodeIsToldOnceAndRecovers(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, nodeName, pod := runnerOnNode(t, h, ns)

	setNode(t, nodeName, corev1.ConditionUnknown, lostAt)
	_, got := h.reconcile(bench)
	lost := "node " + nodeName + " stopped answering (Ready Unknown since 2026-11-22T12:00:01Z: Kubelet stopped posting node status.); " +
		"it holds runner pod " + pod.Name
	nodesReady := meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady)
	if nodesReady == nil || nodesReady.Status != metav1.ConditionFalse || nodesReady.Reason != reasonNodeLost || nodesReady.Message != lost {
		t.Fatalf("NodesReady %+v; want False, NodeLost:\n%s", nodesReady, lost)
	}
	if got.Status.Phase != benchv1.PhaseRunning || isStalled(&got.Status.Conditions) {
		t.Errorf("phase %s, conditions %+v; a lost load generator's node ends nothing by itself", got.Status.Phase, got.Status.Conditions)
	}
	for range 3 {
		h.clock.SetTime(h.clock.Now().Add(10 * time.Second))
		if _, again := h.reconcile(bench); again.ResourceVersion != got.ResourceVersion {
			t.Error("a reconcile that saw the same lost node wrote the benchmark again")
		}
	}
	if evs := drainEvents(h); strings.Count(evs, "Warning NodeLost") != 1 || !strings.Contains(evs, "Warning NodeLost "+lost+"\n") {
		t.Errorf("want one NodeLost event naming the node and the pod, got:\n%s", evs)
	}

	setNode(t, nodeName, corev1.ConditionTrue, lostAt.Add(time.Minute))
	_, got = h.reconcile(bench)
	nodesReady = meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady)
	if nodesReady == nil || nodesReady.Status != metav1.ConditionTrue || nodesReady.Reason != reasonNodesReady {
		t.Errorf("NodesReady %+v; want True, NodesReady once the node is back", nodesReady)
	}
	h.reconcile(bench)
	if evs := drainEvents(h); strings.Count(evs, "Normal NodesReady") != 1 || !strings.Contains(evs, lost) {
		t.Errorf("want one NodesReady event recalling the lost node, got:\n%s", evs)
	}
	if got.Status.Phase != benchv1.PhaseRunning {
		t.Errorf("phase %s", got.Status.Phase)
	}
}

// Talks to envtest's real kube-apiserver (no kubelet, no controllers: the test plays the
// kubelet, the Job controller and the node lifecycle controller, and deletes the Node as a
// cloud provider does once the machine is gone). A lost node that is then deleted stays lost:
// its pods are still bound to it.
func TestDeletedNodeCountsAsLost(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, nodeName, pod := runnerOnNode(t, h, ns)
	setNode(t, nodeName, corev1.ConditionUnknown, lostAt)
	h.reconcile(bench)

	if err := env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}); err != nil {
		t.Fatal(err)
	}
	_, got := h.reconcile(bench)
	want := "node " + nodeName + " no longer exists; it holds runner pod " + pod.Name
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady); c == nil || c.Status != metav1.ConditionFalse || c.Message != want {
		t.Errorf("NodesReady %+v; want False:\n%s", c, want)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Warning NodeLost "+want+"\n") {
		t.Errorf("no event for the deleted node:\n%s", evs)
	}

	// The pod's Job ends (the Job controller gave up on it) and the pod with it: nothing of
	// the benchmark is on a lost node any more.
	pod.Status.Phase = corev1.PodFailed
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	_, got = h.reconcile(bench)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("NodesReady %+v; want True once no pod is on the lost node", c)
	}
}

// Talks to envtest's real kube-apiserver through a controller-runtime manager as cmd/manager
// runs it (informers, the Node watch, the production cache with its Node transform), acting as
// the operator's service account with the generated RBAC; the test plays the kubelet, the Job
// controller, the StatefulSet controller and the node lifecycle controller. While the index
// Job's pod runs nothing polls the benchmark (the Job's watch says when it ends), so only the
// Node watch can tell it that a CouchDB node stopped answering: without the watch the run
// never fails (waitFor gives up after 3 minutes); with it, it fails with NodeLost. How soon is
// logged, a figure, not a check.
func TestManagerSeesALostNodeAtOnce(t *testing.T) {
	ns := env.Namespace(t)
	cfg := env.OperatorConfig(t)
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	h := runOperator(t, cfg, testenv.InstallerClusterRole, ManagerSettings{MetricsAddress: "0", HealthProbeAddress: "0"})
	h.only = func(job *batchv1.Job) bool { return job.Labels[builders.LabelStep] != string(benchv1.StepIndex) }
	nodes := []string{readyNode(t, ns, "w1"), readyNode(t, ns, "w2"), readyNode(t, ns, "w3")}
	bench := provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)

	ctx := context.Background()
	var got benchv1.CouchBenchmark
	waitFor(t, "the index Job", func() bool {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &got); err != nil {
			t.Fatal(err)
		}
		h.playKubelet(&got)
		return jobsOf(t, &got)["js/index"] == 1
	})
	release := builders.ReleaseName(&got, "js")
	couchDBPodsOn(t, ns, release, nodes)
	h.node = nodes[0]
	h.startPod(job(t, ns, builders.JobName(&got, []string{"js"}, benchv1.StepIndex)), corev1.PodStatus{Phase: corev1.PodRunning})

	setNode(t, nodes[1], corev1.ConditionUnknown, time.Now())
	lost := time.Now()
	waitFor(t, "the run to fail", func() bool {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &got); err != nil {
			t.Fatal(err)
		}
		return got.Status.Phase == benchv1.PhaseFailed
	})
	seen := time.Since(lost)
	t.Logf("the run failed %s after its CouchDB node was lost", seen)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	nodesReady := meta.FindStatusCondition(got.Status.Conditions, conditionNodesReady)
	if stalled == nil || stalled.Reason != reasonNodeLost || nodesReady == nil || nodesReady.Status != metav1.ConditionFalse ||
		!strings.HasPrefix(nodesReady.Message, "node "+nodes[1]+" stopped answering") {
		t.Errorf("Stalled %+v, NodesReady %+v; want NodeLost naming %s", stalled, nodesReady, nodes[1])
	}
	refused.none(t)
}

// couchDBPodsOn creates the release's CouchDB pods, pod i on nodes[i], as the StatefulSet
// controller and the scheduler would (envtest has neither).
func couchDBPodsOn(t *testing.T, ns, release string, nodes []string) []*corev1.Pod {
	t.Helper()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: builders.StatefulSetName(release) + "-" + strconv.Itoa(i),
				Labels: builders.CouchDBPodLabels(release)},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "couchdb", Image: "couchdb:3.4.3"}}},
		}
		create(t, pods[i])
	}
	return pods
}
