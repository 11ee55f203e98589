package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// A node that holds a running benchmark's pods can stop: its kubelet goes away (a machine
// powered off, `docker stop` of a kind node). Kubernetes shows that only on the Node: after
// its node-monitor-grace-period the node lifecycle controller sets its Ready condition Unknown
// ("Kubelet stopped posting node status."), taints it node.kubernetes.io/unreachable:NoExecute
// and marks its pods not ready; it evicts them only after their tolerationSeconds, and a pod
// whose kubelet is gone then stays Terminating. Nothing else the operator watches changes (a runner Job still counts its pod
// active), so the operator watches Nodes, and a benchmark looks where its pods are whenever
// a node is not ready:
//
//   - its NodesReady condition turns False (reason NodeLost), naming each lost node and what
//     of the benchmark it holds, with one Warning event per lost node; it turns True again
//     (reason NodesReady, with a Normal event) once no pod of the benchmark is on a lost node;
//   - a lost node that holds a CouchDB pod of an arm the step under way measures ends the run
//     (Failed, reason NodeLost). The step's numbers would describe a cluster that lost a
//     member midway, not one run: as a CouchDB node stopped or restarted during an index
//     build (indexing.ErrNodeInterrupted), the run is to be repeated, not resumed. The results
//     of the steps before stay, as for any failed run;
//   - a lost node that holds only load generators (runner or k6 pods), or the CouchDB of an
//     arm that measures nothing now, ends nothing here: an evicted load generator fails its
//     Job (the Jobs do not retry), and the step's own handling of a failed Job decides.
//
// The pods are read (past the cache) only while the cache shows a node not ready, or while
// the benchmark's NodesReady is False: a healthy cluster costs no read. A node deleted while
// it was still Ready is therefore not seen unless the benchmark is looking already; a node
// stops (and turns not ready) before it is deleted, unless an administrator deletes a
// working one.

// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// placedPod is a pod of the benchmark on a node, still running there (or about to).
type placedPod struct {
	node, name string
	// kind is kindCouchDB, kindRunner or kindK6.
	kind string
	// arm is the pod's query server; "" for a runner pod of arms that take turns.
	arm string
}

// lostNode is a node that holds pods of the benchmark and cannot be counted on: why, and
// what it holds.
type lostNode struct {
	name, why string
	pods      []placedPod
}

// String is how the NodesReady condition and the node's event name a lost node: "node w2
// stopped answering (Ready Unknown since 2026-11-22T10:00:01Z: Kubelet stopped posting node
// status.); it holds CouchDB pod prov-js-couchdb-1 of query server js".
func (n lostNode) String() string {
	// The pods come sorted by kind and arm (lostNodes): those of a kind and arm are said together.
	var groups []string
	for i := 0; i < len(n.pods); {
		first := n.pods[i]
		var names []string
		for ; i < len(n.pods) && n.pods[i].kind == first.kind && n.pods[i].arm == first.arm; i++ {
			names = append(names, n.pods[i].name)
		}
		g := first.kind + " pod " + names[0]
		if len(names) > 1 {
			g = first.kind + " pods " + strings.Join(names, ", ")
		}
		if first.arm != "" {
			g += " of query server " + first.arm
		}
		groups = append(groups, g)
	}
	return fmt.Sprintf("node %s %s; it holds %s", n.name, n.why, strings.Join(groups, " and "))
}

// lostTaints are the taints the node lifecycle controller puts on a node it has lost touch
// with (unreachable) or that says it is not ready.
var lostTaints = map[string]bool{corev1.TaintNodeUnreachable: true, corev1.TaintNodeNotReady: true}

// nodeTrouble says why a node cannot be counted on: its Ready condition Unknown (the kubelet
// stopped answering) or False, or a taint of lostTaints; "" when it can. A node without a
// Ready condition has said nothing yet, and counts as fine.
func nodeTrouble(node *corev1.Node) string {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		state := fmt.Sprintf("Ready %s since %s", c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339))
		if detail := cmp.Or(c.Message, c.Reason); detail != "" {
			state += ": " + detail
		}
		if c.Status == corev1.ConditionUnknown {
			return "stopped answering (" + state + ")"
		}
		return "is not ready (" + state + ")"
	}
	for _, t := range node.Spec.Taints {
		if lostTaints[t.Key] {
			return fmt.Sprintf("is tainted %s:%s", t.Key, t.Effect)
		}
	}
	return ""
}

// keepNodeReadiness is the manager's cache transform for Nodes: it keeps what nodeTrouble
// reads (the Ready condition without its heartbeat, the taints of lostTaints) and the name.
// A whole Node is kilobytes (status.images lists every image on it), for every node of the
// cluster. A kubelet's routine status update still reaches the cache (a new resource
// version); nodeTroubleChanged keeps it from waking any benchmark.
func keepNodeReadiness(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion}}
	for _, t := range node.Spec.Taints {
		if lostTaints[t.Key] {
			kept.Spec.Taints = append(kept.Spec.Taints, t)
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			c.LastHeartbeatTime = metav1.Time{}
			kept.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	return kept, nil
}

// lostNodes are the nodes, by name, that hold pods and are lost: nodeTrouble says so, or the
// node is not among nodes any more.
func lostNodes(pods []placedPod, nodes []corev1.Node) []lostNode {
	held := map[string][]placedPod{}
	for _, p := range pods {
		held[p.node] = append(held[p.node], p)
	}
	var lost []lostNode
	for name, on := range held {
		why := "no longer exists"
		if i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == name }); i >= 0 {
			why = nodeTrouble(&nodes[i])
		}
		if why == "" {
			continue
		}
		slices.SortFunc(on, func(a, b placedPod) int {
			return cmp.Or(cmp.Compare(kindOrder(a.kind), kindOrder(b.kind)), cmp.Compare(a.arm, b.arm), cmp.Compare(a.name, b.name))
		})
		lost = append(lost, lostNode{name: name, why: why, pods: on})
	}
	slices.SortFunc(lost, func(a, b lostNode) int { return cmp.Compare(a.name, b.name) })
	return lost
}

// kindOrder puts CouchDB's pods first in messages: theirs is the loss that ends a run.
func kindOrder(kind string) int { return slices.Index([]string{kindCouchDB, kindRunner, kindK6}, kind) }

// holdsCouchDBOf tells whether a lost node holds a CouchDB pod of one of arms.
func holdsCouchDBOf(lost []lostNode, arms []string) bool {
	return slices.ContainsFunc(lost, func(n lostNode) bool {
		return slices.ContainsFunc(n.pods, func(p placedPod) bool { return p.kind == kindCouchDB && slices.Contains(arms, p.arm) })
	})
}

// placed is the pod as a pod of the benchmark on a node: a runner or k6 pod of its Jobs, or a
// CouchDB pod of one of its provisioned arms. ok is false for a pod that is none of these, is
// on no node yet, or has ended (it holds nothing any more).
func placed(bench *benchv1.CouchBenchmark, pod *corev1.Pod) (p placedPod, ok bool) {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return placedPod{}, false
	}
	p = placedPod{node: pod.Spec.NodeName, name: pod.Name}
	if labels.SelectorFromSet(builders.Labels(bench, "", "")).Matches(labels.Set(pod.Labels)) {
		p.kind, p.arm = kindRunner, pod.Labels[builders.LabelQueryServer]
		// A k6 round's meter runs the runner's image.
		if runner, ok := pod.Labels[builders.LabelRunner]; ok && runner != builders.MeterRunner {
			p.kind = kindK6
		}
		return p, true
	}
	if bench.Spec.CouchDB.Provision == nil {
		return placedPod{}, false
	}
	for _, qs := range bench.Spec.QueryServers {
		if labels.SelectorFromSet(builders.CouchDBPodLabels(builders.ReleaseName(bench, qs.Name))).Matches(labels.Set(pod.Labels)) {
			p.kind, p.arm = kindCouchDB, qs.Name
			return p, true
		}
	}
	return placedPod{}, false
}

// placedPods are the benchmark's pods on nodes: its Jobs' (by the labels builders.Labels puts
// on every one) and its provisioned arms' CouchDB's, read past the cache.
func (r *CouchBenchmarkReconciler) placedPods(ctx context.Context, bench *benchv1.CouchBenchmark) ([]placedPod, error) {
	selectors := []map[string]string{builders.Labels(bench, "", "")}
	if bench.Spec.CouchDB.Provision != nil {
		for _, qs := range bench.Spec.QueryServers {
			selectors = append(selectors, builders.CouchDBPodLabels(builders.ReleaseName(bench, qs.Name)))
		}
	}
	var out []placedPod
	for _, selector := range selectors {
		var pods corev1.PodList
		if err := r.APIReader.List(ctx, &pods, client.InNamespace(bench.Namespace), client.MatchingLabels(selector)); err != nil {
			return nil, err
		}
		for i := range pods.Items {
			if p, ok := placed(bench, &pods.Items[i]); ok {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// checkNodes records in the NodesReady condition whether a node that holds the benchmark's
// pods is lost, and returns the failure that ends the run when one holds the CouchDB of an arm
// that step measures; nil otherwise.
func (r *CouchBenchmarkReconciler) checkNodes(ctx context.Context, bench *benchv1.CouchBenchmark, step planStep) (*stepFailure, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	troubled := slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return nodeTrouble(&n) != "" })
	if !troubled && !meta.IsStatusConditionFalse(bench.Status.Conditions, conditionNodesReady) {
		return nil, nil
	}
	pods, err := r.placedPods(ctx, bench)
	if err != nil {
		return nil, err
	}
	lost := lostNodes(pods, nodes.Items)
	said := r.recordNodes(bench, lost)
	if !step.measuring() || !holdsCouchDBOf(lost, measuringArms(bench, step)) {
		return nil, nil
	}
	// What ended since the last reconcile is not stored either: the node may have stopped a
	// grace period before Kubernetes said so, and a Job that ended then ended beside it.
	return &stepFailure{reason: reasonNodeLost, message: fmt.Sprintf(
		"%s: %s; CouchDB lost a node mid-step, so the step's numbers would not describe one run: run the benchmark again", step, said)}, nil
}

// recordNodes sets the NodesReady condition from the lost nodes: False naming each, with a
// Warning event for a node whose description the condition did not hold yet (a node newly
// lost, or told of differently: deleted now, holding other pods); True again, with a Normal event, once none is left. A benchmark that
// never lost a node has no NodesReady condition. It returns the False message, "" when no node
// is lost.
func (r *CouchBenchmarkReconciler) recordNodes(bench *benchv1.CouchBenchmark, lost []lostNode) string {
	st := &bench.Status
	said := ""
	if c := meta.FindStatusCondition(st.Conditions, conditionNodesReady); c != nil && c.Status == metav1.ConditionFalse {
		said = c.Message
	}
	if len(lost) == 0 {
		if said != "" {
			r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonNodesReady, "Nodes",
				"no pod of this benchmark is on a lost node any more (it was: %s)", said)
			setCondition(&st.Conditions, bench.Generation, r.Clock.Now(), conditionNodesReady, metav1.ConditionTrue, reasonNodesReady,
				"every node that holds a pod of this benchmark is ready")
		}
		return ""
	}
	described := make([]string, len(lost))
	for i, n := range lost {
		described[i] = n.String()
		// Whole descriptions only: "pod a" is not told by "pod a-2".
		if !strings.Contains(nodesSep+said+nodesSep, nodesSep+described[i]+nodesSep) {
			r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonNodeLost, "Nodes", "%s", described[i])
		}
	}
	message := strings.Join(described, nodesSep)
	setCondition(&st.Conditions, bench.Generation, r.Clock.Now(), conditionNodesReady, metav1.ConditionFalse, reasonNodeLost, message)
	return message
}

// nodesSep joins the lost nodes' descriptions in the NodesReady message.
const nodesSep = "; "

// nodeTroubleChanged lets through a node's creation and deletion, and an update that changes
// what nodeTrouble says of it: not the kubelet's routine status updates.
var nodeTroubleChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return nodeTrouble(e.ObjectOld.(*corev1.Node)) != nodeTrouble(e.ObjectNew.(*corev1.Node))
}}

// benchmarksOnNode are the running benchmarks a change of the node may concern: those whose
// NodesReady is False (they may recover) and, while the node is in trouble, those with a pod
// on it, found with one pod List per namespace that has running benchmarks, of the pods on
// that node only. Should that List fail, every running benchmark of the namespace looks for
// itself rather than miss a lost node.
func (r *CouchBenchmarkReconciler) benchmarksOnNode(ctx context.Context, obj client.Object) []reconcile.Request {
	var list benchv1.CouchBenchmarkList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing the benchmarks a node holds pods of", "node", obj.GetName())
		return nil
	}
	var requests []reconcile.Request
	looking := map[string][]*benchv1.CouchBenchmark{}
	for i := range list.Items {
		b := &list.Items[i]
		switch {
		case b.Status.Phase != benchv1.PhaseRunning:
		case meta.IsStatusConditionFalse(b.Status.Conditions, conditionNodesReady):
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		default:
			looking[b.Namespace] = append(looking[b.Namespace], b)
		}
	}
	if nodeTrouble(obj.(*corev1.Node)) == "" {
		return requests
	}
	for namespace, benches := range looking {
		var pods corev1.PodList
		err := r.APIReader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingFields{"spec.nodeName": obj.GetName()})
		if err != nil {
			log.FromContext(ctx).Error(err, "listing the pods on a node", "node", obj.GetName(), "namespace", namespace)
		}
		for _, b := range benches {
			if err != nil || slices.ContainsFunc(pods.Items, func(pod corev1.Pod) bool { _, ok := placed(b, &pod); return ok }) {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			}
		}
	}
	return requests
}
