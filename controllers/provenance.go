package controllers

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/version"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// provenance is where a step of an arm ran: the step's pods and, for a provisioned arm, its
// CouchDB's pods, each with the image it really ran (the kubelet's imageID, a digest) and its
// node; those nodes' allocatable CPU and memory, kernel and OS; the Kubernetes, operator and
// chart versions. What cannot be read (a node the operator may not get) is left out, not
// guessed: provenance never fails a step.
func (r *CouchBenchmarkReconciler) provenance(ctx context.Context, bench *benchv1.CouchBenchmark, arm string, step benchv1.Step,
	role string, jobs jobSet) *results.Cluster {
	c := &results.Cluster{KubernetesVersion: r.KubernetesVersion, Operator: version.String()}
	if p := bench.Spec.CouchDB.Provision; p != nil {
		c.Chart = chartName(bench)
		var pods corev1.PodList
		release := builders.ReleaseName(bench, arm)
		if err := r.APIReader.List(ctx, &pods, client.InNamespace(bench.Namespace), client.MatchingLabels(builders.CouchDBPodLabels(release))); err == nil {
			for i := range pods.Items {
				c.Pods = append(c.Pods, podRuns(&pods.Items[i], results.RoleCouchDB, "")...)
			}
		}
	}
	for _, o := range jobs {
		var pod corev1.Pod
		if o.pod == "" || r.APIReader.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: o.pod}, &pod) != nil {
			continue
		}
		c.Pods = append(c.Pods, podRuns(&pod, role, step)...)
	}
	var nodes []string
	for _, p := range c.Pods {
		if p.Node != "" && !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	for _, name := range nodes {
		var node corev1.Node
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
			if !apierrors.IsNotFound(err) {
				log.FromContext(ctx).Info("the results will not describe a node", "node", name, "error", err.Error())
			}
			continue
		}
		c.Nodes = append(c.Nodes, results.NodeRun{Name: name,
			CPU: node.Status.Allocatable.Cpu().String(), Memory: node.Status.Allocatable.Memory().String(),
			Kernel: node.Status.NodeInfo.KernelVersion, OSImage: node.Status.NodeInfo.OSImage})
	}
	return c
}

// podRuns are a pod's containers as the provenance lists them.
func podRuns(pod *corev1.Pod, role string, step benchv1.Step) []results.PodRun {
	out := make([]results.PodRun, 0, len(pod.Status.ContainerStatuses))
	for _, cs := range pod.Status.ContainerStatuses {
		out = append(out, results.PodRun{Role: role, Step: step, Pod: pod.Name, Node: pod.Spec.NodeName, Image: cs.Image, ImageID: cs.ImageID})
	}
	return out
}

// chartName says which chart a provisioned benchmark installs, without reading it; the
// operator's built-in chart with its digest.
func chartName(bench *benchv1.CouchBenchmark) string {
	ch := bench.Spec.CouchDB.Provision.Chart
	switch {
	case ch == nil:
		return helmrelease.ChartRef{}.String()
	case ch.ConfigMap != nil:
		return "chart " + ch.Version + " from " + chartArchiveSource(bench.Namespace, *ch.ConfigMap)
	}
	return "chart " + ch.Name + " " + ch.Version + " from " + ch.Repository
}

// withProvenance puts the provenance of a step into the arm of its document.
func withProvenance(doc *results.Document, arm string, c *results.Cluster) {
	for i := range doc.Arms {
		if doc.Arms[i].QueryServer == arm {
			doc.Arms[i].Cluster = c
		}
	}
}
