package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CouchBenchmarkSpec describes one benchmark run: the CouchDB under test, the query servers
// to compare (the arms), the dataset every arm is seeded with, and the workloads to measure.
//
// Rules that involve more than one field live here, next to the fields they join.
//
// +kubebuilder:validation:XValidation:rule="!self.queryServers.exists(q, (has(q.language) && q.language == 'erlang') || (!has(q.language) && has(q.preset) && q.preset == 'erlang')) || (has(self.allowErlangViews) && self.allowErlangViews)",fieldPath=".allowErlangViews",message="a query server with language erlang runs view code inside CouchDB's own Erlang VM, unsandboxed, with access to CouchDB's internals: set allowErlangViews: true to accept that, or remove the erlang query server"
// +kubebuilder:validation:XValidation:rule="has(self.couchdb.provision) || self.queryServers.all(q, !has(q.image) && !has(q.command) && !has(q.env) && !has(q.config) && !has(q.values))",fieldPath=".queryServers",message="queryServers[].image, command, env, config and values shape a provisioned CouchDB: an existing CouchDB already runs as it is; remove them or provision CouchDB"
// +kubebuilder:validation:XValidation:rule="!has(self.dataset.profiles) || !self.dataset.profiles.exists(p, p.type == 'tiny') || (!has(self.workloads.indexing) && !has(self.workloads.viewReads) && !has(self.workloads.reads))",fieldPath=".dataset.profiles",message="the tiny profile is seed 003's {\"foo\":\"bar\"} for the writes workload only: it has no fields for views or reads; remove indexing, viewReads and reads, or use the small profile"
// +kubebuilder:validation:XValidation:rule="!has(self.armOrder) || self.armOrder != 'Duet' || (size(self.queryServers) >= 2 && has(self.couchdb.provision))",fieldPath=".armOrder",message="armOrder Duet runs two or more arms at the same moment, each on a CouchDB of its own: it needs at least two queryServers and couchdb.provision (an existing CouchDB is one server for every arm; by hand, write couchdb: {provision: {}} and give each arm its own server with --arm-url ARM=URL); use Interleaved otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.sequential) || (size(self.queryServers) >= 2 && (!has(self.armOrder) || self.armOrder != 'Sequential'))",fieldPath=".sequential",message="sequential adds rounds until every arm's ratio to the first arm is decided: it needs at least two queryServers whose rounds pair (armOrder Interleaved or Duet, not Sequential)"
// +kubebuilder:validation:XValidation:rule="!has(self.sequential) || ((!has(self.workloads.indexing) || self.workloads.indexing.repetitions <= self.sequential.maxRounds) && (!has(self.workloads.viewReads) || self.workloads.viewReads.repetitions <= self.sequential.maxRounds))",fieldPath=".sequential.maxRounds",message="sequential.maxRounds must be at least the indexing and viewReads repetitions: the repetitions are the least number of rounds a step runs"
// +kubebuilder:validation:XValidation:rule="self.runner.parallelism <= self.dataset.documents",fieldPath=".runner.parallelism",message="runner.parallelism cannot exceed dataset.documents: each seeding runner loads a slice of at least one document"
// +kubebuilder:validation:XValidation:rule="!has(self.couchdb.provision) || !has(self.dataset.replicas) || self.dataset.replicas <= self.couchdb.provision.clusterSize",fieldPath=".dataset.replicas",message="dataset.replicas cannot exceed couchdb.provision.clusterSize: CouchDB keeps at most one copy of a shard per node"
type CouchBenchmarkSpec struct {
	// CouchDB says where the CouchDB under test comes from: set exactly one of provision
	// (the operator installs it with the Apache CouchDB Helm chart, one release per query
	// server) or existing (a running CouchDB reached by URL).
	// +required
	CouchDB CouchDBTarget `json:"couchdb"`

	// QueryServers are the arms of the comparison: every workload runs once per entry,
	// against a database of its own. Names must be unique. Arms of a provisioned CouchDB
	// each get a CouchDB of their own; arms of an existing CouchDB share it. How they share
	// the run's time is spec.armOrder.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	QueryServers []QueryServer `json:"queryServers"`

	// AllowErlangViews opts in to query servers with language erlang. Erlang native views
	// run inside CouchDB's Erlang VM with no sandbox: view code can call any function of
	// the server, including destructive ones. They are the fastest option (seed 000), and
	// safe only with view code you trust, which in a benchmark is the code this operator
	// writes. For a provisioned CouchDB this also enables CouchDB's native query server.
	// +optional
	// +kubebuilder:default=false
	AllowErlangViews bool `json:"allowErlangViews,omitempty"`

	// Dataset is what every arm is seeded with before its workloads run.
	// +optional
	// +kubebuilder:default={}
	Dataset Dataset `json:"dataset"`

	// Workloads are the measurements to take; set at least one.
	// +required
	Workloads Workloads `json:"workloads"`

	// K6 configures the k6 Jobs that generate read load.
	// +optional
	// +kubebuilder:default={}
	K6 K6Settings `json:"k6"`

	// Runner configures the runner Jobs (seed, index, views, writes).
	// +optional
	// +kubebuilder:default={}
	Runner RunnerSettings `json:"runner"`

	// ArmOrder is how the arms share the run's time. Interleaved (default): every arm's
	// CouchDB is provisioned at once (on the same nodes where placement allows) and seeded,
	// then every step runs round by round, the arms taking turns in a fresh random order
	// each round (A B, B A, ...; the order is recorded with the results), and one teardown
	// ends the run: a drift of the machine over the run reaches every arm alike, and each
	// round's turns pair up for the arms' ratio. Duet: as Interleaved, except that in each
	// round of the runner's steps (k6's reads still take turns) the arms' units start at
	// the same moment, each arm on its CouchDB of its own on
	// the same nodes, so that both meet the same neighbours for the same seconds (duet
	// benchmarking, Bulej et al., ICPE 2020); it needs two or more arms and a provisioned
	// CouchDB (by hand: an --arm-url per arm), and the runner's CPU share is then one for
	// the step, not cut into the arms' turns. Sequential: each arm's whole run
	// (provision, seed, every workload, teardown) before the next one's, for clusters that
	// cannot hold every arm's CouchDB at once; arms then meet different conditions, minutes
	// apart.
	// +optional
	// +kubebuilder:default=Interleaved
	ArmOrder ArmOrder `json:"armOrder,omitempty"`

	// Sequential runs the index and views steps until every arm's ratio to the first arm is
	// decided (see SequentialRounds), with the workloads' repetitions as the least number of
	// rounds; unset, each step runs its repetitions. It needs two or more arms whose rounds
	// pair (armOrder Interleaved or Duet). The other steps run their repetitions.
	// +optional
	Sequential *SequentialRounds `json:"sequential,omitempty"`

	// Isolation keeps the load generators (runner and k6 pods) off the nodes of the CouchDB
	// they measure: Preferred (default) asks the scheduler to, and runs anyway where it
	// cannot (a one-node cluster), flagging the results SharedNode and setting the
	// LoadIsolated condition False; None leaves placement to the scheduler, and still
	// reports a shared node. Where each pod ran is recorded with the results.
	// +optional
	// +kubebuilder:default=Preferred
	Isolation IsolationPolicy `json:"isolation,omitempty"`

	// Teardown says when a provisioned CouchDB is uninstalled, always after the results
	// are stored: Always, OnSuccess (keep a failed run's CouchDB to look at), or Never.
	// It has no effect on an existing CouchDB; keepDatabases says what happens to the
	// databases a run makes there.
	// +optional
	// +kubebuilder:default=Always
	Teardown TeardownPolicy `json:"teardown,omitempty"`

	// KeepDatabases keeps the databases a run makes (every arm's seeded databases, the
	// writes' and the probe's) on an existing CouchDB when the run ends. Unset or false, the
	// operator deletes them after the last step and after a failure (the results are kept
	// in status and the ConfigMaps), and when the benchmark is deleted; `couchbench run`
	// deletes them at its end as well (--keep keeps them). A provisioned CouchDB goes with
	// its release (see teardown), databases and all.
	// +optional
	KeepDatabases bool `json:"keepDatabases,omitempty"`

	// RuntimeMismatch says what happens to an arm whose views turn out to run on another
	// runtime than its preset, engine or command asks for (the runner asks each arm's
	// CouchDB before its first step: a pypy arm on a CouchDB that registers CPython for
	// python, a couchpy arm that decodes with simplejson, a spidermonkey arm on a CouchDB
	// whose js_engine is quickjs). Stop (default): the arm measures nothing, its message says
	// what was asked, what ran and how to configure the server, the other arms go on and the
	// run ends Failed. Flag: the arm is measured anyway and every number of it is flagged
	// RuntimeMismatch. Either way the RuntimeAsAsked condition says so.
	// +optional
	// +kubebuilder:default=Stop
	RuntimeMismatch RuntimeMismatchPolicy `json:"runtimeMismatch,omitempty"`

	// Baseline is a finished CouchBenchmark of this namespace, with the same dataset and
	// workloads, that this run is compared with when it has finished: a noise-aware verdict
	// per headline metric (Regressed, Improved, Unchanged, Inconclusive) in status, the results
	// and the Regressed/Improved conditions. Runs of a schedule get it from the schedule.
	// +optional
	Baseline *Baseline `json:"baseline,omitempty"`

	// NoiseThresholdPercent: a result whose repetitions' coefficient of variation exceeds
	// this is flagged Noisy in the tables and status. Its median is still reported, but a
	// machine or cluster that disturbs runs that much cannot tell small changes apart.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	NoiseThresholdPercent int32 `json:"noiseThresholdPercent,omitempty"`

	// Timeout bounds the whole run, from the first step to the results; a run that takes
	// longer ends Failed with reason Timeout, keeping the results gathered so far.
	// A Go duration between 1m and 168h, e.g. "90m".
	// +optional
	// +kubebuilder:default="2h"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="timeout must be between 1m and 168h"
	Timeout string `json:"timeout,omitempty"`

	// PodStartTimeout bounds how long the run waits for a pod of its own that cannot start:
	// a CouchDB, runner or k6 pod whose image the node cannot pull, that no node can take
	// (too few CPUs or too little memory left, a selector no node matches), or whose
	// container cannot be created. Such a pod is reported at once (Stalled, with the reason,
	// the pod, its image or resources and what to change, and a Warning event) and the run
	// waits for a fix; if the pods still cannot start this long after that report, the run
	// fails, keeping the results gathered so far, and its Jobs are removed so that their
	// pods stop holding the nodes' resources. A Go duration between 30s and 24h.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="podStartTimeout must be between 30s and 24h: how long a pod that cannot start (an image the node cannot pull, no node with room for it) may wait for a fix before the run fails"
	PodStartTimeout string `json:"podStartTimeout,omitempty"`
}

// Baseline is what a run is compared with.
type Baseline struct {
	// Benchmark names the baseline run: a CouchBenchmark in this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Benchmark string `json:"benchmark"`

	// TolerancePercent: a change smaller than this is never a regression or an improvement,
	// whatever the statistics say.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	TolerancePercent int32 `json:"tolerancePercent,omitempty"`

	// Tolerances override TolerancePercent for a workload ("indexing"), a metric
	// ("p95_ms") or both ("reads/p95_ms"), in percent.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Tolerances map[string]int32 `json:"tolerances,omitempty"`

	// BetweenRunsPercent is how much two runs of an unchanged spec, minutes apart, differ
	// (a coefficient of variation, in percent): a verdict's interval is at least as wide as
	// that. A schedule's runs measure it from the schedule's earlier runs once there are 3;
	// until then, and for a run compared by hand, this is assumed. The default 30 is what
	// shared 2-core machines show when busy (12-21% on quiet days, 30-36% under load, and
	// one run half as fast as the next); on quiet, dedicated nodes measure yours (couchbench
	// history over a few runs shows it) and set it lower, or 0 to trust the runs' own
	// repetitions alone (and get false alarms from machine noise).
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BetweenRunsPercent *int32 `json:"betweenRunsPercent,omitempty"`
}

// ArmOrder is how a benchmark's arms share its time.
// +kubebuilder:validation:Enum=Interleaved;Duet;Sequential
type ArmOrder string

const (
	// ArmsInterleaved runs the arms side by side, taking turns round by round in a random
	// order.
	ArmsInterleaved ArmOrder = "Interleaved"
	// ArmsDuet runs the arms side by side, each round's units of every arm at the same
	// moment, each arm on a CouchDB of its own.
	ArmsDuet ArmOrder = "Duet"
	// ArmsSequential runs each arm's whole run before the next one's.
	ArmsSequential ArmOrder = "Sequential"
)

// Durations are kept as the strings the user wrote (validated as Go durations): a typed
// client that re-encoded them ("2h" -> "2h0m0s") would otherwise change an immutable spec.

// TeardownPolicy says when a provisioned CouchDB is uninstalled.
// +kubebuilder:validation:Enum=Always;OnSuccess;Never
type TeardownPolicy string

const (
	// TeardownAlways uninstalls the CouchDB release once the results are stored.
	TeardownAlways TeardownPolicy = "Always"
	// TeardownOnSuccess uninstalls it only after a successful run.
	TeardownOnSuccess TeardownPolicy = "OnSuccess"
	// TeardownNever leaves it installed; deleting the benchmark still removes it.
	TeardownNever TeardownPolicy = "Never"
)

// RuntimeMismatchPolicy says what happens to an arm whose views run on another runtime than
// it asks for.
// +kubebuilder:validation:Enum=Stop;Flag
type RuntimeMismatchPolicy string

const (
	// RuntimeMismatchStop stops the arm before its first step; the other arms go on.
	RuntimeMismatchStop RuntimeMismatchPolicy = "Stop"
	// RuntimeMismatchFlag measures the arm anyway and flags every number of it.
	RuntimeMismatchFlag RuntimeMismatchPolicy = "Flag"
)

// K6Settings configures the k6 Jobs that generate read load.
type K6Settings struct {
	// Image is the k6 container image. Unset: the operator's default, which its Helm chart
	// sets (value k6.image; grafana/k6:1.8.1 unless set), so that a cluster that cannot pull
	// from Docker Hub names its own k6 image once for every benchmark.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Parallelism is the number of k6 Jobs that share each read workload, split with
	// k6 execution segments and started together.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Parallelism int32 `json:"parallelism,omitempty"`

	// Resources of each k6 pod; Guaranteed by default (requests equal to limits): half a CPU
	// and 512Mi, as for a runner (spec.runner.resources says why). A k6 pod short of CPU
	// counts its own delays as latency, and only the open model (arrivalRate) flags it
	// (GeneratorBound, dropped iterations): on a real cluster give each k6 pod 1-2 CPUs, or
	// spread the virtual users over more pods (parallelism); memory grows with the users.
	// +optional
	// +kubebuilder:default={requests: {cpu: "500m", memory: "512Mi"}, limits: {cpu: "500m", memory: "512Mi"}}
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`

	Scheduling `json:",inline"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cbench,categories=couchbench
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Best c/s",type=integer,JSONPath=`.status.bestChangesPerSecond`,description="Highest median indexing rate (documents per second to a fully built view) over all arms"
// +kubebuilder:printcolumn:name="Read p95",type=string,JSONPath=`.status.readP95`,description="95th percentile of k6 read latency, worst arm"
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.comparison.verdict`,description="Against spec.baseline: Regressed, Improved, Unchanged or Inconclusive"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// CouchBenchmark runs a CouchDB benchmark: it provisions or uses a CouchDB, seeds it,
// runs the workloads for every query server and reports the results in its status and
// in a ConfigMap.
type CouchBenchmark struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec cannot change once the benchmark exists: a benchmark is the record of one run,
	// and its results must describe the spec it shows. To run another, create another.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec cannot change once the benchmark exists: a benchmark is the record of one run; create a new CouchBenchmark to run another"
	Spec CouchBenchmarkSpec `json:"spec"`

	// +optional
	Status CouchBenchmarkStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CouchBenchmarkList is a list of CouchBenchmarks.
type CouchBenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CouchBenchmark `json:"items"`
}

// Where the operator stores a benchmark's results, for tools that read them: every arm's
// results document is in a ConfigMap labelled LabelResultsOf=<benchmark>, under the
// binaryData key DocumentKey (gzip-compressed JSON; `couchbench report` reads it).
const (
	LabelResultsOf = "bench.couchbench.io/results-of"
	DocumentKey    = "document.json.gz"
)
