//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/couchbench/couchbench/controllers"
)

const (
	// operatorDeployment is the manager's Deployment as the suite installs the chart.
	operatorDeployment = "couchbench-couchbench"
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

	var evs corev1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Kind == "Lease" && strings.HasPrefix(e.Message, successor+"_") && strings.HasSuffix(e.Message, "became leader")
	}) {
		t.Errorf("no event says %s became leader: the manager may not record events in %s", successor, operatorNamespace)
	}
	for pod, log := range managerLogs(t) {
		for line := range strings.Lines(log) {
			if strings.Contains(line, "forbidden") {
				t.Errorf("manager pod %s was refused: %s", pod, line)
			}
		}
	}
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

// managerLogs are the logs of the manager pods that run, by pod.
func managerLogs(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), operatorPods); err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		stream, err := cs.CoreV1().Pods(operatorNamespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "manager"}).Stream(ctx)
		if err != nil {
			t.Fatalf("the log of manager pod %s: %v", pod.Name, err)
		}
		data, err := io.ReadAll(stream)
		_ = stream.Close()
		if err != nil {
			t.Fatal(err)
		}
		logs[pod.Name] = string(data)
	}
	return logs
}
