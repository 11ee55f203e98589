package v1alpha1

// SequentialRounds asks the runner's index and views steps for as many rounds as it takes to
// know every arm's ratio to the first arm well enough, instead of a fixed number: a run on a
// quiet node stops after a few minutes, one on a busy node goes on until its time limit.
//
// The ratios are judged by a confidence sequence (internal/sequential), which stays valid
// although the run looks after every round and stops when it likes what it sees; the t
// interval of a fixed number of rounds would not. A step stops once each of its ratios is
// decided: changed (its interval clears ±tolerancePercent) or unchanged (its interval lies
// within ±targetPercent). Each step's ratios hold together at the arms' table's level (99%).
//
// +kubebuilder:validation:XValidation:rule="self.tolerancePercent < self.targetPercent",message="sequential.tolerancePercent must be below targetPercent: a ratio is called changed beyond the tolerance and unchanged within the target, and with the tolerance at or above the target a ratio between them could never be decided"
type SequentialRounds struct {
	// TargetPercent is the smallest change the run must be able to see: a ratio is decided
	// unchanged once its interval lies within ±TargetPercent.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	TargetPercent int32 `json:"targetPercent,omitempty"`

	// TolerancePercent is how far a ratio's interval must clear 1 to call a change. Two arms
	// of the same build differ by a little every run (which node, which files), and a
	// sequence that runs long enough would call that a change; the default is above the
	// offsets measured on the kit (docs/benchmarks.md, "Arms in duet").
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=49
	TolerancePercent int32 `json:"tolerancePercent,omitempty"`

	// TimeLimit bounds each step's rounds past its repetitions (which always run): once a
	// step's rounds have run this long it finishes its round and stops, its undecided ratios
	// staying undecided. A Go duration between 1m and 24h; spec.timeout still bounds the
	// whole run.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="sequential.timeLimit must be between 1m and 24h"
	TimeLimit string `json:"timeLimit,omitempty"`

	// MaxRounds bounds each step's counted rounds; the workload's repetitions, which may not
	// exceed it, are the least.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	MaxRounds int32 `json:"maxRounds,omitempty"`

	// StopOn are the metrics whose ratios must be decided for a step to stop; unset, or
	// naming none of a step's metrics, every metric the step measures. The others are still
	// judged by their sequences, and share the level with them. Wall time on a busy node may
	// need far more rounds than CPU cost: stopOn [cpu_seconds_per_1000_docs] stops the builds
	// on that alone. The operator reads it for a provisioned CouchDB when its chart sets
	// cpuCost.kubernetes, and refuses it otherwise (by hand: couchbench run --arm-pid or
	// --arm-pods).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	StopOn []SequentialMetric `json:"stopOn,omitempty"`

	// TunedForRounds is the round count near which the sequence is tightest: about as many
	// rounds as a step is expected to need. Any value keeps the sequence valid.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	TunedForRounds int32 `json:"tunedForRounds,omitempty"`
}

// SequentialMetric is a metric of the index or views step that a sequential step can stop on.
// +kubebuilder:validation:Enum=changes_per_second;cpu_seconds_per_1000_docs;seconds_per_read
type SequentialMetric string

// SequentialCPUCost is the server's CPU-seconds per 1,000 documents of a build, which only a
// run that reads its servers' CPU time has (the operator's with cpuCost.kubernetes, on a
// provisioned CouchDB; couchbench run --arm-pid or --arm-pods).
const SequentialCPUCost SequentialMetric = "cpu_seconds_per_1000_docs"
