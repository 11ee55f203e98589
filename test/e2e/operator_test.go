//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/controllers"
)

const (
	// operatorDeployment is the manager's Deployment as the suite installs the chart, and
	// operatorServiceAccount the identity it runs as (the chart names both after the release).
	operatorDeployment     = "couchbench-couchbench"
	operatorServiceAccount = "system:serviceaccount:" + operatorNamespace + ":couchbench-couchbench"
)

// operatorPods are the manager's pods.
var operatorPods = client.MatchingLabels{"app.kubernetes.io/name": "couchbench-operator"}

// Two replicas of the operator, as the chart runs them with leader election (its default):
// the leader's pod is deleted, and the other replica takes the Lease the leader gave back on
// its way out. The Lease's events reach the API server (the chart's RBAC grants them in the
// manager's namespace) and no manager logs a refusal. The takeover time is logged, a figure
// and not a check: docs/benchmarks.md measures it.
func TestLeaderTakeover(t *testing.T) {
	ctx := context.Background()
	scaleOperator(t, 2)
	t.Cleanup(func() { scaleOperator(t, 1) })

	var leaderPod string
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		leaderPod = podOf(leaseHolder(t))
		return leaderPod != "", "no manager holds the Lease"
	}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := c.Delete(ctx, podObject(leaderPod)); err != nil {
		t.Fatal(err)
	}
	var successor string
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		successor = podOf(leaseHolder(t))
		return successor != "" && successor != leaderPod, fmt.Sprintf("the Lease names %q", successor)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("manager pod %s deleted; %s held the Lease %.1f s later (polled every 2 s)", leaderPod, successor, time.Since(deleted).Seconds())

	// The manager's event broadcaster sends the event after it has taken the Lease, in the
	// background: it is looked for until it comes, or for a minute.
	if err := poll(ctx, time.Minute, func() (bool, string) {
		var evs corev1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(operatorNamespace)); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Lease" && strings.HasPrefix(e.Message, successor+"_") && strings.HasSuffix(e.Message, "became leader")
		}), "no event of the Lease says " + successor + " became leader"
	}); err != nil {
		t.Errorf("%v: the manager may not record events in %s", err, operatorNamespace)
	}
	noRefusals(t)
}

// scaleOperator sets the manager Deployment's replicas and waits until that many are
// available and no other pod is left.
func scaleOperator(t *testing.T, replicas int32) {
	t.Helper()
	ctx := context.Background()
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, &d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := c.Patch(ctx, &d, patch); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 5*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(&d), &d); err != nil {
			return false, err.Error()
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), operatorPods); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == replicas && len(pods.Items) == int(replicas),
			fmt.Sprintf("%d of %d manager replicas available, %d pods", d.Status.AvailableReplicas, replicas, len(pods.Items))
	}); err != nil {
		t.Fatal(err)
	}
}

// leaseHolder is the holder of the manager's Lease: "<pod>_<uuid>", or empty.
func leaseHolder(t *testing.T) string {
	t.Helper()
	var lease coordinationv1.Lease
	err := c.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: controllers.LeaderElectionID}, &lease)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// podOf is the pod of a Lease holder: controller-runtime names a candidate <hostname>_<uuid>,
// and a pod's hostname is its name.
func podOf(holder string) string {
	pod, _, _ := strings.Cut(holder, "_")
	return pod
}

func podObject(name string) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = operatorNamespace, name
	return pod
}

// noRefusals fails the test if a running manager pod logged a refusal of the API server: its
// RBAC lacks what it asked for.
func noRefusals(t *testing.T) {
	t.Helper()
	for pod, log := range managerLogs(t) {
		for line := range strings.Lines(log) {
			if strings.Contains(line, "forbidden") {
				t.Errorf("manager pod %s was refused: %s", pod, line)
			}
		}
	}
}

// managerLogs are the logs of the manager pods that run, by pod.
func managerLogs(t *testing.T) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(operatorNamespace), operatorPods); err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		logs[pod.Name] = podLog(t, operatorNamespace, pod.Name, "manager")
	}
	return logs
}

// scopedNamespace is the one namespace the namespaced install watches.
const scopedNamespace = "couchbench-e2e-scoped"

// The namespaced install: the operator reinstalled with the chart's watchNamespaces, its
// rules bound by Roles in that namespace only. A benchmark there runs end to end (the
// built-in chart, Jobs, results, teardown); one in the suite's namespace is left alone; the
// manager's service account reads a Secret of its namespace and is refused the existing
// CouchDB's admin Secret in the suite's namespace, and the cluster's list of Secrets. The
// cluster-wide install is put back afterwards.
func TestNamespacedInstall(t *testing.T) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scopedNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	reinstall := func(watchNamespaces ...string) {
		t.Helper()
		if err := installOperator(ctx, watchNamespaces...); err != nil {
			t.Fatal(err)
		}
		if err := waitAvailable(ctx, operatorNamespace, operatorDeployment); err != nil {
			t.Fatal(err)
		}
	}
	reinstall(scopedNamespace)
	t.Cleanup(func() { reinstall() })

	// Made before the run, removed (by start's cleanup) before the cluster-wide install is back.
	unwatched := provisioned("unwatched", nil, 1, benchv1.QueryServer{Name: "js", Language: "javascript"})
	unwatched.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Repetitions: 1}}
	start(t, unwatched)
	b := provisioned("scoped", nil, 1, benchv1.QueryServer{Name: "js", Language: "javascript"})
	b.Namespace = scopedNamespace
	b.Spec.Dataset = benchv1.Dataset{Documents: 1000, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1}}
	start(t, b)
	got := mustSucceed(t, b, 20*time.Minute)
	if len(got.Status.Results) != 1 || len(got.Status.Results[0].Indexing) != 1 {
		t.Errorf("results %+v", got.Status.Results)
	}
	if u := get(t, unwatched); len(u.Finalizers) > 0 || u.Status.Phase != "" {
		t.Errorf("the namespaced operator acted in %s: finalizers %v, phase %q", namespace, u.Finalizers, u.Status.Phase)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorServiceAccount}
	manager, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: scopedNamespace, Name: "probe"}, StringData: map[string]string{"k": "v"}}
	if err := c.Create(ctx, probe); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := manager.Get(ctx, client.ObjectKeyFromObject(probe), &corev1.Secret{}); err != nil {
		t.Errorf("the manager reading a Secret of its namespace %s: %v", scopedNamespace, err)
	}
	if err := manager.Get(ctx, client.ObjectKey{Namespace: namespace, Name: existingSecret}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager reading Secret %s/%s outside its namespaces: %v; want Forbidden", namespace, existingSecret, err)
	}
	if err := manager.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager listing the cluster's Secrets: %v; want Forbidden", err)
	}
	noRefusals(t)
}
