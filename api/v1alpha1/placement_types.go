package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Scheduling places pods on nodes, with the Kubernetes fields of the same names.
type Scheduling struct {
	// NodeSelector the pods' nodes must match.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the pods. For load generators the operator adds its own rule to it (kept
	// off the nodes of the CouchDB they measure, see spec.isolation).
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
}

// RunnerSettings configures the runner Jobs: the steps seed, index, views and writes.
type RunnerSettings struct {
	// Resources of each runner pod. The default makes them Guaranteed (requests equal to
	// limits), so that the kubelet neither starves nor evicts them first, and what they
	// may take from a node they share is bounded. It is half a CPU and 512Mi, so that a
	// benchmark runs on one 2-core node beside its CouchDB, with room for a second load
	// generator (spec.k6, or a parallel part); on a real cluster give each runner what its
	// load needs (1-2 CPUs), and more when its results are flagged GeneratorBound.
	// +optional
	// +kubebuilder:default={requests: {cpu: "500m", memory: "512Mi"}, limits: {cpu: "500m", memory: "512Mi"}}
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`

	// Parallelism is the number of runner pods that share the seed and writes steps, for a
	// CouchDB cluster that one pod cannot load. In seeding each pod loads its own
	// contiguous slice of the documents (the same documents, whatever the parallelism); in
	// writes each runs its share of every mode's clients (a mode of one client, bulk-N or
	// serial, runs in one pod), with ids of its own. The pods start each load together at a
	// barrier in CouchDB, and a rate is every document over the first pod's start to the
	// last one's end, with each pod's own result kept. The index and views steps run in one
	// pod.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Parallelism int32 `json:"parallelism,omitempty"`

	Scheduling `json:",inline"`
}

// IsolationPolicy says whether load generators (runner and k6 pods) are kept apart from the
// CouchDB they measure.
// +kubebuilder:validation:Enum=Preferred;None
type IsolationPolicy string

const (
	// IsolationPreferred asks the scheduler to keep load generators off the nodes of the
	// arm's CouchDB pods (provisioned CouchDB). Where the cluster cannot (one node), they
	// run anyway, and the results (flag SharedNode) and the LoadIsolated condition say so.
	IsolationPreferred IsolationPolicy = "Preferred"
	// IsolationNone leaves placement to the scheduler; a shared node is still reported.
	IsolationNone IsolationPolicy = "None"
)
