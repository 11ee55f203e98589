package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CouchDBTarget is the CouchDB under test: one to provision, or one that exists.
// +kubebuilder:validation:XValidation:rule="has(self.provision) != has(self.existing)",message="set exactly one of couchdb.provision (install CouchDB with the Helm chart) or couchdb.existing (use a running CouchDB by URL)"
type CouchDBTarget struct {
	// Provision installs CouchDB with the Apache CouchDB Helm chart, one release per
	// query server, owned by the benchmark.
	// +optional
	Provision *ProvisionedCouchDB `json:"provision,omitempty"`

	// Existing uses a running CouchDB. Each arm gets databases of its own there; the
	// query servers must already be configured on that server.
	// +optional
	Existing *ExistingCouchDB `json:"existing,omitempty"`
}

// ProvisionedCouchDB is a CouchDB cluster installed with the Apache CouchDB Helm chart.
type ProvisionedCouchDB struct {
	// Chart is where the Helm chart comes from. Unset: the Apache CouchDB chart 4.6.2 built
	// into the operator (its SHA-256 is recorded with the results), which needs no chart
	// repository and no internet. Set it to install another chart or version.
	// +optional
	Chart *ChartSource `json:"chart,omitempty"`

	// ClusterSize is the number of CouchDB nodes (the chart's clusterSize).
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	ClusterSize int32 `json:"clusterSize,omitempty"`

	// Image is the CouchDB image for query servers that do not bring their own.
	// +optional
	// +kubebuilder:default={}
	Image ImageSource `json:"image"`

	// Storage gives each node a PersistentVolumeClaim. Unset, nodes keep their data in
	// an emptyDir on the node's disk, which is enough for a benchmark and needs no
	// storage class.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// Resources for each CouchDB container. Indexing is CPU-bound: pin CPU requests and
	// limits to the same value for comparable runs.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Values are extra Helm values, merged over the values the operator sets (the
	// chart's own names, e.g. couchdbConfig, erlangFlags).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// Scheduling places the CouchDB pods: the chart's nodeSelector, tolerations and
	// affinity (values can still override them).
	Scheduling `json:",inline"`
}

// ChartSource locates a Helm chart other than the operator's built-in one: a Helm repository
// (https://, or http:// inside the cluster), an OCI registry (oci://), or a packaged chart
// (.tgz) kept in a ConfigMap of the benchmark's namespace, for clusters that cannot reach a
// repository.
// +kubebuilder:validation:XValidation:rule="has(self.repository) != has(self.configMap)",message="set one of chart.repository (a Helm repository URL or an oci:// reference) or chart.configMap (a ConfigMap holding the packaged chart), not both; or leave chart unset for the chart built into the operator"
// +kubebuilder:validation:XValidation:rule="!has(self.repository) || has(self.version)",message="chart.version is required with chart.repository, so that every run installs the same chart"
// +kubebuilder:validation:XValidation:rule="!has(self.repository) || self.repository.startsWith('oci://') || has(self.name)",message="chart.name is required with an http(s):// chart.repository"
type ChartSource struct {
	// Repository is a Helm repository URL (https://..., or http://... for one served inside
	// the cluster) or an OCI reference (oci://registry/path/couchdb).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(https?|oci)://\S+$`
	Repository string `json:"repository,omitempty"`

	// Name is the chart's name in the repository.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// Version is the chart version. With configMap it is optional and, when set, must be the
	// version of the chart the ConfigMap holds.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`

	// ConfigMap holds the packaged chart (the .tgz of `helm package`), e.g. made with
	// `kubectl create configmap couchdb-chart --from-file=couchdb-4.6.2.tgz`: no repository
	// and no internet needed.
	// +optional
	ConfigMap *ChartConfigMap `json:"configMap,omitempty"`
}

// ChartConfigMap is a ConfigMap in the benchmark's namespace that holds a packaged chart.
type ChartConfigMap struct {
	// Name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key of the chart archive in the ConfigMap's binaryData (or data). Unset: the ConfigMap
	// must hold exactly one key.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// ImageSource is a container image by repository and tag.
type ImageSource struct {
	// +optional
	// +kubebuilder:default="couchdb"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Repository string `json:"repository,omitempty"`

	// +optional
	// +kubebuilder:default="3.4.3"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Tag string `json:"tag,omitempty"`
}

// Storage is the persistent volume of each CouchDB node.
type Storage struct {
	// Size of each node's volume.
	// +required
	Size resource.Quantity `json:"size"`

	// StorageClassName; unset uses the cluster's default class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ExistingCouchDB is a running CouchDB reached by URL, with admin credentials from a
// Secret in the benchmark's namespace.
type ExistingCouchDB struct {
	// URL of the CouchDB cluster's HTTP API (any node, or a Service in front of them),
	// without credentials: they go in credentialsSecret, not where the URL shows.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+(/\S*)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/?#]*@')",message="couchdb.existing.url must not carry credentials (user:password@); put them in credentialsSecret"
	URL string `json:"url"`

	// CredentialsSecret holds the admin username and password. Admin rights are needed
	// to create databases and read /_active_tasks and node statistics.
	// +required
	CredentialsSecret SecretKeys `json:"credentialsSecret"`

	// CPUPods are this CouchDB's pods, in the benchmark's namespace (every node's: the runner
	// refuses fewer pods than nodes), whose CPU time gives the server's CPU cost of every load,
	// build, view read and write (cpu_seconds_per_1000_docs) and k6 read round
	// (cpu_seconds_per_1000_requests): the runner, or a k6 round's meter, reads each pod's
	// couchdb container's own cgroup through pods/exec, as the namespace's CPU reader, when
	// the operator is installed to (the chart's cpuCost.kubernetes), and the admission policy
	// then asks that the author may exec into pods there. Every arm shares this CouchDB and the
	// arms take turns, so a unit's reading is its own arm's. Empty: no CPU cost.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	CPUPods []string `json:"cpuPods,omitempty"`
}

// SecretKeys names a Secret and the keys of a username and a password in it.
type SecretKeys struct {
	// Name of the Secret, in the benchmark's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// +optional
	// +kubebuilder:default="username"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	UsernameKey string `json:"usernameKey,omitempty"`

	// +optional
	// +kubebuilder:default="password"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PasswordKey string `json:"passwordKey,omitempty"`
}
