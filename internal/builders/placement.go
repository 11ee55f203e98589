package builders

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// placeLoadGenerator sizes and places the pod of a load generator (a runner or k6 Job) of
// arms: the resources and scheduling of the spec, and unless isolation is None, a soft rule
// that keeps it off the nodes of the arms' CouchDB pods, whose CPU it would otherwise take.
// Soft, so that a one-node cluster still runs the benchmark; the operator reports a shared
// node from where the pods really ran.
func placeLoadGenerator(job *batchv1.Job, bench *benchv1.CouchBenchmark, arms []string, resources corev1.ResourceRequirements, s benchv1.Scheduling) {
	pod := &job.Spec.Template.Spec
	pod.Containers[0].Resources = resources
	pod.NodeSelector = s.NodeSelector
	pod.Tolerations = s.Tolerations
	pod.Affinity = s.Affinity.DeepCopy()
	if bench.Spec.Isolation == benchv1.IsolationNone || bench.Spec.CouchDB.Provision == nil {
		return
	}
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	if pod.Affinity.PodAntiAffinity == nil {
		pod.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	releases := make([]string, len(arms))
	for i, arm := range arms {
		releases[i] = ReleaseName(bench, arm)
	}
	anti := pod.Affinity.PodAntiAffinity
	anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, nodesOfCouchDBPods(releases...))
}

// nodesOfCouchDBPods is a strong (weight 100) preference term for the nodes of the releases'
// CouchDB pods: an affinity joins them, an anti-affinity avoids them.
func nodesOfCouchDBPods(releases ...string) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
		LabelSelector: couchDBPodsOf(releases...), TopologyKey: corev1.LabelHostname,
	}}
}

// couchDBPodsOf selects the CouchDB pods of the releases.
func couchDBPodsOf(releases ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{
		MatchLabels:      map[string]string{chartAppLabel: chartApp},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: chartReleaseLabel, Operator: metav1.LabelSelectorOpIn, Values: releases}},
	}
}

// spreadPodsOf adds a strong preference (weight 100) for nodes without another CouchDB pod of
// the release. Preferred, not required: a cluster with fewer nodes than CouchDB nodes still
// runs the benchmark, and the results' placement shows where each pod ran.
func spreadPodsOf(a *corev1.Affinity, release string) {
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	anti := a.PodAntiAffinity
	anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, nodesOfCouchDBPods(release))
}

// preferPodsOf adds a strong preference (weight 100) for the nodes that run the release's
// CouchDB pods.
func preferPodsOf(a *corev1.Affinity, release string) {
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	with := a.PodAffinity
	with.PreferredDuringSchedulingIgnoredDuringExecution = append(with.PreferredDuringSchedulingIgnoredDuringExecution, nodesOfCouchDBPods(release))
}

// preferNodes adds a strong preference (weight 100) for the nodes given. Preferred, not
// required: a cluster whose first arm's nodes are gone or full still runs the arm, and the
// ArmsOnSameNodes condition says where it ran.
func preferNodes(a *corev1.Affinity, nodes []string) {
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: nodes},
		}}})
}
