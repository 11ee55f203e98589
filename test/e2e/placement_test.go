//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/latency"
	"github.com/couchbench/couchbench/internal/results"
)

// Placement on the suite's multi-node kind cluster couchbench-e2e (hack/kind/e2e.yaml): one
// control plane, tainted NoSchedule as kind does for a multi-node cluster, and four workers,
// each a Docker container of the node's name. Every test reads where the real scheduler put
// the pods from their spec.nodeName: the CouchDB pods by the Apache chart's labels
// (builders.CouchDBPodLabels: app=couchdb, release=<release>), the runner and k6 pods by the
// labels the operator puts on its Jobs' pods (builders.Labels: the benchmark, and the step;
// step "reads" is k6, any other step a runner; a k6 round's meter, which generates no load, is
// left out: isMeter).

// kindWorkers are the cluster's worker Nodes; each is a Docker container of the same name.
var kindWorkers = []string{"couchbench-e2e-worker", "couchbench-e2e-worker2", "couchbench-e2e-worker3", "couchbench-e2e-worker4"}

const (
	// poolNode is the worker TestLoadGeneratorPoolWithTaintsAndNodeSelector makes a dedicated
	// load-generator pool of, with poolKey=poolValue as both its label and its taint.
	poolNode  = "couchbench-e2e-worker4"
	poolKey   = "couchbench.io/pool"
	poolValue = "loadgen"
	// conditionNodesReady and reasonNodeLost are how the operator reports a node of the run's
	// pods that stopped: NodesReady=False, reason NodeLost, naming the node, with a Warning
	// event of that reason.
	conditionNodesReady = "NodesReady"
	reasonNodeLost      = "NodeLost"
)

// A provisioned CouchDB of three nodes: three real CouchDB pods (couchdb:3.4.3, Apache chart
// 4.6.2, the one built into the operator) on a real multi-node kind cluster, placed by the real
// scheduler, run on three different workers; the run succeeds against them, and the results
// document records each CouchDB pod on the node it really ran on, as status.couchdbNodes does.
//
// The operator asks for one pod per node with a preferred pod anti-affinity among the
// release's pods (the chart's own affinity is {} by default): preferred, so this test checks
// that the real scheduler honours it on a cluster with room.
//
// The suite's operator reads CPU cost (cpuCost.kubernetes): every build's and every write
// round's CPU time is read from the three pods' own cgroups through pods/exec, as the
// namespace's CPU reader, and summed; a build costs every node some. A writes step reading
// three pods once hung here (the CI of 87856ce): a reading now ends, answered or cut, within
// its bound, and this test fails on a step that does not end.
func TestThreeNodeCouchDBOnePodPerNode(t *testing.T) {
	requireWorkers(t)
	b := provisioned("onepernode", nil, 3, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Dataset = benchv1.Dataset{Documents: 2000, Seed: 1, Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}}
	b.Spec.Workloads = benchv1.Workloads{Writes: &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}},
		Indexing: &benchv1.IndexingWorkload{Repetitions: 2}}
	// The CouchDB stays after the run, so that its pods can be read where they ran; deleting
	// the benchmark (start's cleanup) removes it.
	b.Spec.Teardown = benchv1.TeardownNever
	start(t, b)
	got := mustSucceed(t, b, 20*time.Minute)

	pods := couchdbPodsOf(t, b, "js")
	if len(pods) != 3 {
		t.Fatalf("%d CouchDB pods of release %s, want 3", len(pods), builders.ReleaseName(b, "js"))
	}
	requireScheduled(t, pods)
	nodes := nodesOf(pods)
	if len(nodes) != 3 {
		t.Errorf("the three CouchDB pods ran on %d node(s): %s; want one pod per node", len(nodes), describePods(pods))
	}
	for _, n := range nodes {
		if !slices.Contains(kindWorkers, n) {
			t.Errorf("a CouchDB pod ran on %s, not a worker: %s", n, describePods(pods))
		}
	}
	if !slices.Equal(got.Status.CouchDBNodes, nodes) {
		t.Errorf("status.couchdbNodes %v, the pods ran on %v", got.Status.CouchDBNodes, nodes)
	}
	md, docs := report(t, b, "markdown")
	t.Logf("one pod per node, real Apache CouchDB 3.4.3, real scheduler:\n%s", md)
	_, arm := docArm(t, docs, "js")
	provenanceAgrees(t, arm, results.RoleCouchDB, pods)
	builds := arm.Profiles[0].Indexing[0].Runs
	if len(builds) != 2 {
		t.Fatalf("%d builds, want 2", len(builds))
	}
	for i, build := range builds {
		if !(build.CPUSeconds > 0) {
			t.Errorf("build %d: server CPU %v s, want the three pods' CPU time read through pods/exec", i+1, build.CPUSeconds)
		}
	}
	writes := arm.Profiles[0].Writes
	if len(writes) == 0 {
		t.Fatal("no write rounds")
	}
	for i, w := range writes {
		if !(w.CPUSeconds > 0) {
			t.Errorf("write round %d: server CPU %v s, want the three pods' CPU time read through pods/exec", i+1, w.CPUSeconds)
		}
	}
}

// Load generators against real CouchDB pods (couchdb:3.4.3, Apache chart 4.6.2; one per run) on
// a real multi-node kind cluster, placed by the real scheduler, with spec.isolation Preferred:
// three runner pods seed and write, three k6 pods read.
//
// isolated: four workers are room enough, so every load-generator pod runs on a node without
// the arm's CouchDB pod, and each step's three pods are spread over more than one node. The
// operator promises the first (a soft anti-affinity against the arm's CouchDB pods) and sets
// no spread constraints of its own: the spreading is the scheduler's resource scoring (each
// pod requests half a CPU), which this checks holds on four idle workers. No result is flagged
// SharedNode and LoadIsolated is True.
//
// shared: the CouchDB and the load generators pinned to one node by their placement
// (couchdb.provision.nodeSelector, runner.nodeSelector, k6.nodeSelector): isolation cannot
// hold, the run goes on, every step's results are flagged SharedNode, LoadIsolated is False
// naming each step and the node, with a Warning event.
//
// In both, a step's results carry SharedNode exactly when one of its pods really ran on a node
// of the CouchDB's pods, and the results document records every pod on its real node.
func TestLoadGeneratorsKeptOffCouchDBNodes(t *testing.T) {
	requireWorkers(t)
	loadSteps := []benchv1.Step{benchv1.StepSeed, benchv1.StepWrites, benchv1.StepReads}

	t.Run("isolated", func(t *testing.T) {
		b := loadGeneratorsBenchmark("isolated")
		start(t, b)
		got := mustSucceed(t, b, 30*time.Minute)

		couch := couchdbPodsOf(t, b, "js")
		requireScheduled(t, couch)
		couchNodes := nodesOf(couch)
		gens := generatorPodsOf(t, b)
		requireScheduled(t, gens)
		perStep := byStep(gens)
		for _, step := range loadSteps {
			pods := perStep[step]
			if len(pods) < 3 {
				t.Errorf("step %s: %d load-generator pod(s), want 3 (parallelism 3): %s", step, len(pods), describePods(pods))
				continue
			}
			for _, p := range pods {
				if slices.Contains(couchNodes, p.Spec.NodeName) {
					t.Errorf("step %s: pod %s ran on %s beside the CouchDB (on %v), with three workers free of it",
						step, p.Name, p.Spec.NodeName, couchNodes)
				}
			}
			if n := nodesOf(pods); len(n) < 2 {
				t.Errorf("step %s: its %d pods all ran on %v; want them spread over at least 2 nodes", step, len(pods), n)
			}
		}
		shared := sharedSteps(gens, couchNodes)
		sharedNodeFlagsAgree(t, got.Status.Results, "js", loadSteps, shared)
		if c := condition(got, "LoadIsolated"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SeparateNodes" {
			t.Errorf("LoadIsolated %+v, want True with reason SeparateNodes", c)
		}
		md, docs := report(t, b, "markdown")
		t.Logf("load generators kept off CouchDB's node %v:\n%s", couchNodes, md)
		_, arm := docArm(t, docs, "js")
		provenanceAgrees(t, arm, results.RoleCouchDB, couch)
		provenanceAgrees(t, arm, results.RoleRunner, rolePods(gens, results.RoleRunner))
		provenanceAgrees(t, arm, results.RoleK6, rolePods(gens, results.RoleK6))
	})

	t.Run("shared", func(t *testing.T) {
		node := pickWorkers(t, 1)[0]
		b := loadGeneratorsBenchmark("shared")
		// The one node for CouchDB and every load generator. Three generators at once on a
		// node that also runs CouchDB and kube-system's pods: a fifth of a CPU each.
		only := map[string]string{corev1.LabelHostname: node}
		b.Spec.CouchDB.Provision.NodeSelector = only
		b.Spec.Runner.NodeSelector, b.Spec.Runner.Resources = only, guaranteed("200m", "256Mi")
		b.Spec.K6.NodeSelector, b.Spec.K6.Resources = only, guaranteed("200m", "256Mi")
		start(t, b)
		got := mustSucceed(t, b, 30*time.Minute)

		couch := couchdbPodsOf(t, b, "js")
		requireScheduled(t, couch)
		couchNodes := nodesOf(couch)
		if !slices.Equal(couchNodes, []string{node}) {
			t.Errorf("the CouchDB ran on %v, its nodeSelector names %s", couchNodes, node)
		}
		gens := generatorPodsOf(t, b)
		requireScheduled(t, gens)
		for _, p := range gens {
			if p.Spec.NodeName != node {
				t.Errorf("pod %s (step %s) ran on %s, its nodeSelector names %s", p.Name, p.Labels[builders.LabelStep], p.Spec.NodeName, node)
			}
		}
		shared := sharedSteps(gens, couchNodes)
		for _, step := range loadSteps {
			if len(shared[step]) == 0 {
				t.Errorf("step %s: no pod shared the CouchDB's node %s: %s", step, node, describePods(byStep(gens)[step]))
			}
		}
		sharedNodeFlagsAgree(t, got.Status.Results, "js", loadSteps, shared)
		c := condition(got, "LoadIsolated")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "SharedNode" {
			t.Errorf("LoadIsolated %+v, want False with reason SharedNode", c)
		} else {
			for _, step := range loadSteps {
				contains(t, "the LoadIsolated message", c.Message, fmt.Sprintf("query server js: %s on %s", step, node))
			}
			t.Logf("LoadIsolated: %s", c.Message)
		}
		contains(t, "the SharedNode events", strings.Join(eventsOf(t, b, "SharedNode"), "\n"), node)
		warned(t, b, "SharedNode")
		md, docs := report(t, b, "markdown")
		t.Logf("CouchDB and load generators pinned to %s:\n%s", node, md)
		_, arm := docArm(t, docs, "js")
		provenanceAgrees(t, arm, results.RoleCouchDB, couch)
		provenanceAgrees(t, arm, results.RoleRunner, rolePods(gens, results.RoleRunner))
		provenanceAgrees(t, arm, results.RoleK6, rolePods(gens, results.RoleK6))
	})
}

// loadGeneratorsBenchmark is a small benchmark of a one-node CouchDB whose workloads run three
// runner pods (seed, writes) and three k6 pods (reads), with spec.isolation Preferred.
func loadGeneratorsBenchmark(name string) *benchv1.CouchBenchmark {
	b := provisioned(name, nil, 1, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Isolation = benchv1.IsolationPreferred
	b.Spec.Dataset = benchv1.Dataset{Documents: 300, Seed: 1, BatchSize: 100, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{
		Writes: &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100},
			ParallelBulk: &benchv1.ParallelBulkWrites{Clients: 3, BatchSize: 100}},
		Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 3, IterationsPerUser: ptr.To[int32](20)},
	}
	b.Spec.Runner.Parallelism = 3
	b.Spec.K6.Parallelism = 3
	// The CouchDB stays after the run, so that its pod can be read where it ran; deleting the
	// benchmark (start's cleanup) removes it.
	b.Spec.Teardown = benchv1.TeardownNever
	return b
}

// Two arms side by side (spec.armOrder unset: Interleaved, the default), each with real CouchDB
// pods of its own (couchdb:3.4.3, Apache chart 4.6.2; arms spidermonkey and quickjs) on a real
// multi-node kind cluster, placed by the real scheduler.
//
// same nodes: the second arm's CouchDB pods prefer the nodes of the first arm's pods
// (docs/measurement.md, "Arms take turns" and "Placement"); on four idle workers they get them:
// the second arm's node set is the first's, status.couchdbNodes names it, ArmsOnSameNodes is
// True.
//
// other nodes: when it cannot hold. The API has no typed per-arm placement (couchdb.provision's
// nodeSelector is every arm's), but queryServers[].values are the arm's own Helm values, merged
// last, and the chart's nodeSelector is one of them: the first arm is pinned to one worker and
// the second to another. That is deterministic, where cordoning the first arm's node between
// the two arms' scheduling is not (the operator installs both releases in one reconcile, about
// a second apart). The preference cannot win over the second arm's nodeSelector, the run still
// succeeds, and ArmsOnSameNodes is False naming both arms' nodes, with a Warning event.
func TestSecondArmOnFirstArmsNodes(t *testing.T) {
	requireWorkers(t)
	arms := func(name string, size int32) *benchv1.CouchBenchmark {
		b := provisioned(name, nil, size,
			benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey},
			benchv1.QueryServer{Name: "qjs", Preset: benchv1.PresetQuickJS})
		b.Spec.Dataset = benchv1.Dataset{Documents: 100, Seed: 1, Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentTiny}}}
		b.Spec.Workloads = benchv1.Workloads{Writes: &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}}}
		// Both CouchDBs stay after the run, so that their pods can be read where they ran;
		// deleting the benchmark (start's cleanup) removes them.
		b.Spec.Teardown = benchv1.TeardownNever
		return b
	}

	t.Run("same nodes", func(t *testing.T) {
		// Two pods per arm: the second arm must match a set of nodes, not just one.
		b := arms("arms-same", 2)
		start(t, b)
		got := mustSucceed(t, b, 30*time.Minute)
		first, second := couchdbPodsOf(t, b, "js"), couchdbPodsOf(t, b, "qjs")
		requireScheduled(t, append(slices.Clone(first), second...))
		if len(first) != 2 || len(second) != 2 {
			t.Fatalf("CouchDB pods: %s of js, %s of qjs; want 2 each", describePods(first), describePods(second))
		}
		firstNodes, secondNodes := nodesOf(first), nodesOf(second)
		if !slices.Equal(got.Status.CouchDBNodes, firstNodes) {
			t.Errorf("status.couchdbNodes %v, the first arm's pods ran on %v", got.Status.CouchDBNodes, firstNodes)
		}
		if !slices.Equal(secondNodes, firstNodes) {
			t.Errorf("the second arm's CouchDB ran on %v (%s), the first arm's on %v (%s): the second did not get the first arm's nodes",
				secondNodes, describePods(second), firstNodes, describePods(first))
		}
		if c := condition(got, "ArmsOnSameNodes"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SameNodes" {
			t.Errorf("ArmsOnSameNodes %+v, want True with reason SameNodes", c)
		}
		md, docs := report(t, b, "markdown")
		t.Logf("two arms on %v:\n%s", firstNodes, md)
		_, js := docArm(t, docs, "js")
		_, qjs := docArm(t, docs, "qjs")
		provenanceAgrees(t, js, results.RoleCouchDB, first)
		provenanceAgrees(t, qjs, results.RoleCouchDB, second)
	})

	t.Run("other nodes", func(t *testing.T) {
		nodes := pickWorkers(t, 2)
		a, other := nodes[0], nodes[1]
		b := arms("arms-other", 1)
		b.Spec.QueryServers[0].Values = nodeSelectorValues(a)
		b.Spec.QueryServers[1].Values = nodeSelectorValues(other)
		start(t, b)
		got := mustSucceed(t, b, 30*time.Minute)
		first, second := couchdbPodsOf(t, b, "js"), couchdbPodsOf(t, b, "qjs")
		requireScheduled(t, append(slices.Clone(first), second...))
		if n := nodesOf(first); !slices.Equal(n, []string{a}) {
			t.Errorf("the first arm's CouchDB ran on %v, its values' nodeSelector names %s", n, a)
		}
		if n := nodesOf(second); !slices.Equal(n, []string{other}) {
			t.Errorf("the second arm's CouchDB ran on %v, its values' nodeSelector names %s", n, other)
		}
		if !slices.Equal(got.Status.CouchDBNodes, []string{a}) {
			t.Errorf("status.couchdbNodes %v, want the first arm's node %s", got.Status.CouchDBNodes, a)
		}
		c := condition(got, "ArmsOnSameNodes")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "OtherNodes" {
			t.Errorf("ArmsOnSameNodes %+v, want False with reason OtherNodes", c)
		} else {
			contains(t, "the ArmsOnSameNodes message", c.Message, fmt.Sprintf("query server qjs on %s, the first arm on %s", other, a))
			t.Logf("ArmsOnSameNodes: %s", c.Message)
		}
		contains(t, "the OtherNodes events", strings.Join(eventsOf(t, b, "OtherNodes"), "\n"), a, other)
		warned(t, b, "OtherNodes")
		_, docs := report(t, b, "markdown")
		_, js := docArm(t, docs, "js")
		_, qjs := docArm(t, docs, "qjs")
		provenanceAgrees(t, js, results.RoleCouchDB, first)
		provenanceAgrees(t, qjs, results.RoleCouchDB, second)
	})
}

// nodeSelectorValues are Helm values of the Apache chart that pin a release's pods to node.
func nodeSelectorValues(node string) *apiextensionsv1.JSON {
	raw, err := json.Marshal(map[string]any{"nodeSelector": map[string]string{corev1.LabelHostname: node}})
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// A dedicated load-generator pool, as a user of a real cluster sets one up: a worker of a real
// multi-node kind cluster labelled and tainted couchbench.io/pool=loadgen (NoSchedule), and a
// benchmark whose runner and k6 placement select that label and tolerate the taint. The real
// scheduler puts every runner and k6 pod on the pool's node and none of the three real CouchDB
// pods (couchdb:3.4.3, Apache chart 4.6.2), which do not tolerate the taint; the run succeeds,
// isolated.
func TestLoadGeneratorPoolWithTaintsAndNodeSelector(t *testing.T) {
	requireWorkers(t)
	makePool(t, poolNode)
	pool := benchv1.Scheduling{
		NodeSelector: map[string]string{poolKey: poolValue},
		Tolerations: []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: poolValue,
			Effect: corev1.TaintEffectNoSchedule}},
	}
	b := provisioned("pool", nil, 3, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Isolation = benchv1.IsolationPreferred
	b.Spec.Dataset = benchv1.Dataset{Documents: 200, Seed: 1, BatchSize: 100, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{
		Writes: &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}},
		Reads:  &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 2, IterationsPerUser: ptr.To[int32](20)},
	}
	// Two of each at once on the pool's node: half a CPU each (the default) fits its 2 CPUs.
	b.Spec.Runner = benchv1.RunnerSettings{Parallelism: 2, Scheduling: pool}
	b.Spec.K6 = benchv1.K6Settings{Parallelism: 2, Scheduling: pool}
	// The CouchDB stays after the run, so that its pods can be read where they ran.
	b.Spec.Teardown = benchv1.TeardownNever
	start(t, b)
	got := mustSucceed(t, b, 30*time.Minute)

	gens := generatorPodsOf(t, b)
	requireScheduled(t, gens)
	perStep := byStep(gens)
	for step, want := range map[benchv1.Step]int{benchv1.StepSeed: 2, benchv1.StepWrites: 2, benchv1.StepReads: 2} {
		if n := len(perStep[step]); n < want {
			t.Errorf("step %s: %d pod(s), want %d", step, n, want)
		}
	}
	for _, p := range gens {
		if p.Spec.NodeName != poolNode {
			t.Errorf("%s pod %s (step %s) ran on %s, not on the pool's node %s", roleOf(p), p.Name, p.Labels[builders.LabelStep],
				p.Spec.NodeName, poolNode)
		}
	}
	couch := couchdbPodsOf(t, b, "js")
	requireScheduled(t, couch)
	if len(couch) != 3 {
		t.Errorf("%d CouchDB pods, want 3: %s", len(couch), describePods(couch))
	}
	for _, p := range couch {
		if p.Spec.NodeName == poolNode {
			t.Errorf("CouchDB pod %s ran on the pool's node %s, whose taint it does not tolerate", p.Name, poolNode)
		}
	}
	sharedNodeFlagsAgree(t, got.Status.Results, "js", []benchv1.Step{benchv1.StepSeed, benchv1.StepWrites, benchv1.StepReads},
		sharedSteps(gens, nodesOf(couch)))
	if c := condition(got, "LoadIsolated"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("LoadIsolated %+v, want True: the load generators had a pool of their own", c)
	}
	md, _ := report(t, b, "markdown")
	t.Logf("load generators on the pool %s, CouchDB on %v:\n%s", poolNode, nodesOf(couch), md)
}

// makePool labels and taints node poolKey=poolValue (NoSchedule) and removes both when the test
// ends, after the benchmark is gone (cleanups run last-registered first, and start registers
// the benchmark's removal later).
func makePool(t *testing.T, node string) {
	t.Helper()
	taint := corev1.Taint{Key: poolKey, Value: poolValue, Effect: corev1.TaintEffectNoSchedule}
	editNode(t, node, func(n *corev1.Node) {
		n.Labels[poolKey] = poolValue
		n.Spec.Taints = append(slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == poolKey }), taint)
	})
	t.Cleanup(func() {
		editNode(t, node, func(n *corev1.Node) {
			delete(n.Labels, poolKey)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == poolKey })
		})
	})
}

// editNode changes a Node, again on a conflict (the node controllers write Nodes too).
func editNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		change(&n)
		return c.Update(ctx, &n)
	})
	if err != nil {
		t.Errorf("editing node %s: %v", name, err)
	}
}

// A worker stops mid-run: three real CouchDB pods (couchdb:3.4.3, Apache chart 4.6.2) on a real
// multi-node kind cluster, placed by the real scheduler, are building their views (the index
// step) when the Docker container of a worker holding one of them is stopped, as a machine that
// fails. The operator names the node (NodesReady=False, reason NodeLost, and a Warning event),
// the run ends Failed keeping the results measured before (the seeding), and deleting the
// benchmark leaves none of its Jobs, Secrets, StatefulSets, Helm release or pods.
//
// The pods that were on the stopped node can only go once its kubelet confirms it (or someone
// force-deletes them), so the pods are checked twice: those elsewhere while the node is still
// down, and all of them after it is back. The node is started again in the test and, in any
// case, in its cleanup, which waits for it and kube-system to be whole: later tests need every
// node.
func TestWorkerStoppedMidRun(t *testing.T) {
	requireWorkers(t)
	ctx := context.Background()
	b := provisioned("nodestop", nil, 3, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Dataset = benchv1.Dataset{Documents: 20000, Seed: 1, BatchSize: 1000, Concurrency: 2, Shards: 2,
		Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}}
	// Builds enough to stay in the index step for a while after it starts.
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 6}}
	// Kept after the failure: the deletion must remove it.
	b.Spec.Teardown = benchv1.TeardownNever
	start(t, b)
	got := waitForStep(t, b, benchv1.StepIndex)
	waitRunning(t, map[string]string{builders.LabelBenchmark: b.Name, builders.LabelStep: string(benchv1.StepIndex)})
	release := builders.ReleaseName(got, "js")
	couch := couchdbPodsOf(t, b, "js")
	requireScheduled(t, couch)
	node := nodeToStop(t, couch)

	// Registered after start's cleanup, so it runs before it: the benchmark is removed with
	// every node up.
	t.Cleanup(func() { restoreNode(t, node) })
	docker(t, "stop", node)
	stoppedAt := time.Now()
	t.Logf("stopped node %s during %+v; CouchDB pods: %s", node, get(t, b).Status.Progress, describePods(couch))

	// How soon Kubernetes calls the node lost, and the operator after it, depends on the
	// node lifecycle controller's grace period and on how busy the machine is: not asserted,
	// only logged. The run's end is waited for first, and the checks follow the report, so
	// that a failure's reason is the last thing the test prints.
	failed := waitPhase(t, b, 20*time.Minute)
	md, docs := report(t, b, "markdown")
	t.Logf("results of the run a stopped node ended:\n%s", md)
	lost := condition(failed, conditionNodesReady)
	t.Logf("node %s stopped at %s; Kubernetes: %s; the operator named it at %s; the run ended at %s: %s",
		node, stoppedAt.UTC().Format(time.RFC3339), nodeReadiness(t, node), conditionTime(lost),
		failed.Status.CompletionTime, failed.Status.Message)
	if failed.Status.Phase != benchv1.PhaseFailed || !strings.Contains(failed.Status.Message, reasonNodeLost) {
		t.Errorf("phase %s after node %s stopped, want Failed for %s: %s", failed.Status.Phase, node, reasonNodeLost, failed.Status.Message)
	}
	if lost == nil || lost.Status != metav1.ConditionFalse || lost.Reason != reasonNodeLost || !strings.Contains(lost.Message, node) {
		t.Errorf("%s is %+v at the run's end, want False, %s, naming %s", conditionNodesReady, lost, reasonNodeLost, node)
	}
	if err := poll(ctx, time.Minute, func() (bool, string) {
		notes := eventsOf(t, b, reasonNodeLost)
		return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, node) }), fmt.Sprintf("%s events: %q", reasonNodeLost, notes)
	}); err != nil {
		t.Errorf("no %s event names %s: %v", reasonNodeLost, node, err)
	}
	warned(t, b, reasonNodeLost)

	// The seeding, done before the node stopped, is kept: in status and in the document.
	if r := failed.Status.Results; len(r) != 1 || len(r[0].Seeding) != 1 || r[0].Seeding[0].Documents != 20000 {
		t.Errorf("results %+v: the seeding measured before the node stopped must stay", r)
	}
	doc, arm := docArm(t, docs, "js")
	if p := arm.Profiles; len(p) == 0 || p[0].Seeding == nil || p[0].Seeding.Stored != 20000 {
		t.Errorf("the document's seeding %+v: want the 20000 documents stored before the node stopped", arm.Profiles)
	}
	if !slices.ContainsFunc(doc.Steps, func(s results.StepRecord) bool {
		return s.QueryServer == "js" && s.Step == benchv1.StepSeed && s.Error == "" && !s.FinishedAt.IsZero()
	}) {
		t.Errorf("the document's steps %+v lack the seed step, finished without error", doc.Steps)
	}

	if err := c.Delete(ctx, failed); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(b), &benchv1.CouchBenchmark{})
		return apierrors.IsNotFound(err), fmt.Sprintf("benchmark still there with node %s down: %v", node, err)
	}); err != nil {
		t.Error(err)
	}
	ofBenchmark := map[string]string{builders.LabelBenchmark: b.Name}
	gone(t, "Jobs", &batchv1.JobList{}, ofBenchmark)
	gone(t, "Secrets", &corev1.SecretList{}, ofBenchmark)
	gone(t, "StatefulSets", &appsv1.StatefulSetList{}, builders.CouchDBPodLabels(release))
	gone(t, "Helm release records", &corev1.SecretList{}, map[string]string{"owner": "helm", "name": release})
	goneExceptOn(t, node, "CouchDB pods", builders.CouchDBPodLabels(release))
	goneExceptOn(t, node, "pods of the benchmark", ofBenchmark)

	restoreNode(t, node)
	gone(t, "CouchDB pods", &corev1.PodList{}, builders.CouchDBPodLabels(release))
	gone(t, "pods of the benchmark", &corev1.PodList{}, ofBenchmark)
}

// nodeReadiness says what the Node's Ready condition is and since when, as the node lifecycle
// controller last wrote it.
func nodeReadiness(t *testing.T, name string) string {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		return fmt.Sprintf("node %s not read: %v", name, err)
	}
	cond := nodeReadyCondition(&n)
	if cond == nil {
		return "no Ready condition"
	}
	return fmt.Sprintf("Ready %s since %s (%s)", cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339), cond.Message)
}

// conditionTime is when a condition last changed, "never" without one.
func conditionTime(cond *metav1.Condition) string {
	if cond == nil {
		return "never"
	}
	return cond.LastTransitionTime.UTC().Format(time.RFC3339)
}

// nodeToStop is a worker that holds one of the CouchDB pods and none of the manager's (the
// operator must see the node go), preferring one without the suite's existing CouchDB.
func nodeToStop(t *testing.T, couch []corev1.Pod) string {
	t.Helper()
	managers := managerNodes(t)
	existing := nodesOf(podsWith(t, builders.CouchDBPodLabels(existingRelease)))
	var candidates []string
	for _, n := range nodesOf(couch) {
		if !slices.Contains(managers, n) {
			candidates = append(candidates, n)
		}
	}
	slices.SortStableFunc(candidates, func(a, b string) int {
		return boolRank(slices.Contains(existing, a)) - boolRank(slices.Contains(existing, b))
	})
	if len(candidates) == 0 {
		t.Fatalf("every CouchDB node (%v) runs the manager (%v): stopping one would stop the operator that is to see it", nodesOf(couch), managers)
	}
	return candidates[0]
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// docker runs `docker <verb> <node>` on a kind node's container.
func docker(t *testing.T, verb, node string) {
	t.Helper()
	if out, err := exec.Command("docker", verb, node).CombinedOutput(); err != nil {
		t.Fatalf("docker %s %s: %v\n%s", verb, node, err, out)
	}
}

// restoreNode starts a stopped kind node's container and waits until the Node is Ready and every
// kube-system pod runs and is ready again, failing loudly if not: later tests need every node.
// Starting a running container does nothing, so it may be called again.
func restoreNode(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	if out, err := exec.Command("docker", "start", node).CombinedOutput(); err != nil {
		t.Errorf("docker start %s: %v\n%s\nTHE NODE IS STILL DOWN: later tests need it; start it by hand", node, err, out)
		return
	}
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false, err.Error()
		}
		if !nodeReady(&n) {
			return false, fmt.Sprintf("node %s not Ready", node)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("kube-system")); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				return false, fmt.Sprintf("kube-system pod %s on %s: phase %s, ready %t, deleting %t", p.Name, p.Spec.NodeName,
					p.Status.Phase, podReady(&p), p.DeletionTimestamp != nil)
			}
		}
		return true, ""
	}); err != nil {
		t.Errorf("node %s did not come back whole after docker start: %v\nLATER TESTS NEED EVERY NODE", node, err)
	}
}

// goneExceptOn waits until no pod with the labels is left in the namespace but those on node,
// whose kubelet is down and alone can confirm that a pod of it ended.
func goneExceptOn(t *testing.T, node, what string, labels map[string]string) {
	t.Helper()
	if err := poll(context.Background(), 3*time.Minute, func() (bool, string) {
		var left []string
		for _, p := range podsWith(t, labels) {
			if p.Spec.NodeName != node {
				left = append(left, p.Name+" on "+p.Spec.NodeName)
			}
		}
		return len(left) == 0, fmt.Sprintf("%s left off the stopped node %s: %v", what, node, left)
	}); err != nil {
		t.Error(err)
	}
}

// k6 reads shared by three k6 pods on different nodes of a real multi-node kind cluster, placed
// by the real scheduler, against real CouchDB pods (couchdb:3.4.3, Apache chart 4.6.2; one). Each k6
// pod counts its requests in a latency histogram (internal/latency); the results' percentiles
// are read from the three histograms added into one. The checks are those of the project's own
// (internal/latency's TestMergedPercentilesAreWithinTheBound, internal/loadtest's
// TestThresholdsAndParallelRunnersOnRealCouchDB) on this run's data, from the results
// document:
//   - every runner counted each of its requests in its histogram;
//   - each runner's histogram gives its p50, p95 and p99 within latency.K6.ErrorPercent (1%)
//     of k6's own exact percentiles of that pod's requests. Each pod makes 201 requests (one
//     virtual user of 201 iterations), so that k6's percentiles (linear interpolation at
//     p x (n-1)) fall on a request, the same the histogram's nearest rank names;
//   - the results' merged p50, p95 and p99 (status and document) are those of the summed
//     histogram, marked PercentileError 1% and not an upper bound, with every runner listed;
//   - each merged percentile lies between the smallest and the largest of the runners' exact
//     ones, widened by 1%: the true percentile of all requests lies there, and the merged value
//     is within 1% of it.
//
// Not reachable from the e2e: every request's own duration (k6 keeps it to itself), which the
// unit test compares the merged percentile with directly.
func TestK6PercentilesMergedAcrossNodes(t *testing.T) {
	requireWorkers(t)
	const perRunner = 201
	b := provisioned("k6merge", nil, 1, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Isolation = benchv1.IsolationPreferred
	b.Spec.Dataset = benchv1.Dataset{Documents: 300, Seed: 1, BatchSize: 100, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument,
		VirtualUsers: 3, IterationsPerUser: ptr.To[int32](perRunner)}}
	b.Spec.K6.Parallelism = 3
	start(t, b)
	got := mustSucceed(t, b, 20*time.Minute)

	k6 := byStep(generatorPodsOf(t, b))[benchv1.StepReads]
	requireScheduled(t, k6)
	all := podsWith(t, map[string]string{builders.LabelBenchmark: builders.LabelValue(b.Name)})
	if meters := slices.DeleteFunc(all, func(p corev1.Pod) bool { return !isMeter(p) }); len(meters) != 1 {
		t.Errorf("%d meters of the k6 round, want 1: %s", len(meters), describePods(meters))
	}
	if len(k6) != 3 {
		t.Errorf("%d k6 pods, want 3: %s", len(k6), describePods(k6))
	}
	if n := nodesOf(k6); len(n) < 2 {
		t.Errorf("the k6 pods all ran on %v: %s; want them on at least 2 nodes", n, describePods(k6))
	} else {
		t.Logf("k6 pods: %s", describePods(k6))
	}

	_, docs := report(t, b, "markdown")
	_, arm := docArm(t, docs, "js")
	if len(arm.Profiles) == 0 || arm.Profiles[0].Reads == nil {
		t.Fatalf("the document has no reads: %+v", arm.Profiles)
	}
	runners := arm.Profiles[0].Reads.Runners
	if len(runners) != 3 {
		t.Fatalf("%d k6 runners in the document, want 3: %+v", len(runners), runners)
	}
	// The round's meter read the server over the three runners' load, which spread over nodes:
	// it waited at the start barrier and for every runner's end.
	if cpu := arm.Profiles[0].Reads.CPU; len(cpu) != 1 || cpu[0].Error != "" || !(cpu[0].CPUSeconds > 0) {
		t.Errorf("the reads' CPU readings %+v: want the round's", cpu)
	} else {
		t.Logf("the k6 round (%d requests) cost the server %.3f CPU-seconds over %.1f s", 3*perRunner, cpu[0].CPUSeconds, cpu[0].WallSeconds)
	}
	bound := latency.K6.ErrorPercent() / 100
	percentiles := []float64{50, 95, 99}
	exactOf := func(l results.Latencies, p float64) float64 {
		return map[float64]float64{50: l.P50, 95: l.P95, 99: l.P99}[p]
	}
	merged := latency.Histogram{}
	lo, hi := map[float64]float64{}, map[float64]float64{}
	for i, r := range runners {
		if r.Requests != perRunner || r.Histogram.Count() != r.Requests {
			t.Errorf("runner %d (%s): %d requests, %d in its histogram; want %d in both", i, r.Segment, r.Requests, r.Histogram.Count(), perRunner)
		}
		merged.Add(r.Histogram)
		for _, p := range percentiles {
			exact, fromHist := exactOf(r.Milliseconds, p), latency.K6.Percentile(r.Histogram, p)
			if r.Requests == perRunner && !withinRelative(fromHist, exact, bound) {
				t.Errorf("runner %d (%s) p%v: %.4f ms from its histogram, %.4f ms from k6: %.2f%% off, bound %.2f%%",
					i, r.Segment, p, fromHist, exact, 100*math.Abs(fromHist-exact)/exact, 100*bound)
			}
			if i == 0 || exact < lo[p] {
				lo[p] = exact
			}
			if i == 0 || exact > hi[p] {
				hi[p] = exact
			}
		}
		t.Logf("runner %d (%s): %d requests, k6 p50 %.3f p95 %.3f p99 %.3f ms", i, r.Segment, r.Requests,
			r.Milliseconds.P50, r.Milliseconds.P95, r.Milliseconds.P99)
	}

	reads := got.Status.Results[0].Reads
	if reads == nil {
		t.Fatalf("status has no reads: %+v", got.Status.Results)
	}
	if reads.PercentilesUpperBound || reads.PercentileError != fmt.Sprintf("%.0f%%", latency.K6.ErrorPercent()) ||
		len(reads.Runners) != 3 || reads.Requests != 3*perRunner {
		t.Errorf("reads %+v; want the three runners' percentiles merged within 1%%, each runner listed, %d requests", reads, 3*perRunner)
	}
	for _, p := range percentiles {
		want := latency.K6.Percentile(merged, p)
		status := map[float64]string{50: reads.P50, 95: reads.P95, 99: reads.P99}[p]
		d, err := time.ParseDuration(status)
		// Status rounds to 10 µs.
		if ms := float64(d) / float64(time.Millisecond); err != nil || math.Abs(ms-want) > 0.005+1e-9 {
			t.Errorf("status p%v %q (%v), the summed histogram's %.4f ms", p, status, err, want)
		}
		if want < lo[p]*(1-bound)-1e-9 || want > hi[p]*(1+bound)+1e-9 {
			t.Errorf("merged p%v %.4f ms lies outside the runners' exact p%v [%.4f, %.4f] ms widened by %.2f%%",
				p, want, p, lo[p], hi[p], 100*bound)
		}
		t.Logf("merged p%v: %.3f ms (runners' exact %.3f-%.3f ms), status %s", p, want, lo[p], hi[p], status)
	}
}

// withinRelative tells whether got is within bound (a fraction) of want.
func withinRelative(got, want, bound float64) bool {
	return math.Abs(got-want) <= bound*math.Abs(want)+1e-9
}

// requireWorkers fails the test unless the cluster has the four kind workers, Ready and
// schedulable: the placement tests need the multi-node cluster couchbench-e2e.
func requireWorkers(t *testing.T) {
	t.Helper()
	for _, name := range kindWorkers {
		var n corev1.Node
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatalf("node %s: %v: the placement tests need the multi-node kind cluster couchbench-e2e (hack/kind/e2e.yaml)", name, err)
		}
		if !nodeReady(&n) || n.Spec.Unschedulable {
			t.Fatalf("node %s: Ready %t, unschedulable %t: the placement tests need every worker", name, nodeReady(&n), n.Spec.Unschedulable)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	cond := nodeReadyCondition(n)
	return cond != nil && cond.Status == corev1.ConditionTrue
}

// nodeReadyCondition is the Node's Ready condition, nil before the kubelet has posted one.
func nodeReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// managerNodes are the nodes of the manager's pods.
func managerNodes(t *testing.T) []string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(operatorNamespace), operatorPods); err != nil {
		t.Fatal(err)
	}
	return nodesOf(pods.Items)
}

// pickWorkers are n workers, those without a manager pod first (in the kindWorkers order).
func pickWorkers(t *testing.T, n int) []string {
	t.Helper()
	managers := managerNodes(t)
	out := slices.Clone(kindWorkers)
	slices.SortStableFunc(out, func(a, b string) int {
		return boolRank(slices.Contains(managers, a)) - boolRank(slices.Contains(managers, b))
	})
	return out[:n]
}

// podsWith are the namespace's pods with the labels.
func podsWith(t *testing.T, labels map[string]string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// couchdbPodsOf are the pods of an arm's CouchDB: the Apache chart's labels of its release.
func couchdbPodsOf(t *testing.T, b *benchv1.CouchBenchmark, arm string) []corev1.Pod {
	t.Helper()
	return podsWith(t, builders.CouchDBPodLabels(builders.ReleaseName(b, arm)))
}

// generatorPodsOf are the benchmark's runner and k6 pods: the pods of its Jobs, labelled with
// the benchmark and the step, but for the Jobs that measure nothing (cluster setup, clean-up).
func generatorPodsOf(t *testing.T, b *benchv1.CouchBenchmark) []corev1.Pod {
	t.Helper()
	return slices.DeleteFunc(podsWith(t, map[string]string{builders.LabelBenchmark: builders.LabelValue(b.Name)}),
		func(p corev1.Pod) bool {
			step := benchv1.Step(p.Labels[builders.LabelStep])
			return step == "" || step == benchv1.StepCluster || step == benchv1.StepCleanup || isMeter(p)
		})
}

// isMeter says whether a pod is a k6 round's meter of the server's CPU: it generates no load,
// and the results' provenance leaves it out.
func isMeter(p corev1.Pod) bool { return p.Labels[builders.LabelRunner] == builders.MeterRunner }

// roleOf is a load-generator pod's role in the results: k6 for the reads step, else runner.
func roleOf(p corev1.Pod) string {
	if benchv1.Step(p.Labels[builders.LabelStep]) == benchv1.StepReads {
		return results.RoleK6
	}
	return results.RoleRunner
}

func rolePods(pods []corev1.Pod, role string) []corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return roleOf(p) != role })
}

// byStep groups load-generator pods by their step.
func byStep(pods []corev1.Pod) map[benchv1.Step][]corev1.Pod {
	out := map[benchv1.Step][]corev1.Pod{}
	for _, p := range pods {
		step := benchv1.Step(p.Labels[builders.LabelStep])
		out[step] = append(out[step], p)
	}
	return out
}

// requireScheduled fails the test unless every pod has a node.
func requireScheduled(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			t.Fatalf("pod %s was never scheduled (phase %s): %+v", p.Name, p.Status.Phase, p.Status.Conditions)
		}
	}
}

// nodesOf are the distinct nodes of the pods, sorted, as status.couchdbNodes lists them.
func nodesOf(pods []corev1.Pod) []string {
	var nodes []string
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// describePods is "pod on node, ..." for messages.
func describePods(pods []corev1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name + " on " + p.Spec.NodeName
	}
	slices.Sort(out)
	return "[" + strings.Join(out, ", ") + "]"
}

// sharedSteps are, per step, the load-generator pods that ran on one of the CouchDB's nodes.
func sharedSteps(generators []corev1.Pod, couchNodes []string) map[benchv1.Step][]string {
	out := map[benchv1.Step][]string{}
	for _, p := range generators {
		if slices.Contains(couchNodes, p.Spec.NodeName) {
			step := benchv1.Step(p.Labels[builders.LabelStep])
			out[step] = append(out[step], p.Name+" on "+p.Spec.NodeName)
		}
	}
	return out
}

// sharedNodeFlagsAgree checks that the arm's status results of each step are flagged SharedNode
// exactly when one of the step's pods really shared a node with the CouchDB (shared), and that
// no other step is flagged.
func sharedNodeFlagsAgree(t *testing.T, all []benchv1.QueryServerResults, arm string, steps []benchv1.Step,
	shared map[benchv1.Step][]string) {
	t.Helper()
	i := slices.IndexFunc(all, func(q benchv1.QueryServerResults) bool { return q.QueryServer == arm })
	if i < 0 {
		t.Errorf("no status results of %s: %+v", arm, all)
		return
	}
	q := all[i]
	measured, flagged := map[benchv1.Step]bool{}, map[benchv1.Step]bool{}
	mark := func(step benchv1.Step, flags []benchv1.ResultFlag) {
		measured[step] = true
		if slices.Contains(flags, benchv1.FlagSharedNode) {
			flagged[step] = true
		}
	}
	for _, r := range q.Seeding {
		mark(benchv1.StepSeed, r.Flags)
	}
	for _, r := range q.Indexing {
		mark(benchv1.StepIndex, r.Flags)
	}
	for _, r := range q.ViewReads {
		mark(benchv1.StepViews, r.Flags)
	}
	for _, r := range q.Writes {
		mark(benchv1.StepWrites, r.Flags)
	}
	if q.Reads != nil {
		mark(benchv1.StepReads, q.Reads.Flags)
	}
	for _, step := range steps {
		if !measured[step] {
			t.Errorf("%s: no status results for step %s: %+v", arm, step, q)
		}
	}
	for step := range maps.Keys(measured) {
		if want := len(shared[step]) > 0; flagged[step] != want {
			t.Errorf("%s step %s: flagged SharedNode %t, but its pods sharing CouchDB's node were %v", arm, step, flagged[step], shared[step])
		}
	}
}

// docArm is the arm of the results documents, with its document.
func docArm(t *testing.T, docs []*results.Document, name string) (*results.Document, results.Arm) {
	t.Helper()
	for _, d := range docs {
		for _, a := range d.Arms {
			if a.QueryServer == name {
				return d, a
			}
		}
	}
	t.Fatalf("no arm %s in the results documents", name)
	return nil, results.Arm{}
}

// provenanceAgrees checks that the results document records the pods of role exactly, each on
// the node it really ran on.
func provenanceAgrees(t *testing.T, arm results.Arm, role string, pods []corev1.Pod) {
	t.Helper()
	recorded := map[string]string{}
	if arm.Cluster != nil {
		for _, p := range arm.Cluster.Pods {
			if p.Role == role {
				recorded[p.Pod] = p.Node
			}
		}
	}
	ran := map[string]string{}
	for _, p := range pods {
		ran[p.Name] = p.Spec.NodeName
	}
	if !maps.Equal(recorded, ran) {
		t.Errorf("arm %s, %s pods: the results document records %v, the cluster ran %v", arm.QueryServer, role, recorded, ran)
	}
}

// condition is the benchmark's condition of the type; nil when it has none.
func condition(b *benchv1.CouchBenchmark, condType string) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, condType)
}

// warned checks that the benchmark's events of reason are Warnings (eventsOf reads their
// notes, not their type).
func warned(t *testing.T, b *benchv1.CouchBenchmark, reason string) {
	t.Helper()
	uid := get(t, b).UID
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(b.Namespace)); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason {
			seen++
			if e.Type != corev1.EventTypeWarning {
				t.Errorf("event %s %q is of type %s, want Warning", reason, e.Note, e.Type)
			}
		}
	}
	if seen == 0 {
		t.Errorf("no %s event", reason)
	}
}
