package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Phase is where a benchmark is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type Phase string

const (
	PhasePending   Phase = "Pending"
	PhaseRunning   Phase = "Running"
	PhaseSucceeded Phase = "Succeeded"
	PhaseFailed    Phase = "Failed"
)

// CouchBenchmarkStatus is what the operator observed and measured. The full results
// (every run, time series) are in the ConfigMap named by resultsConfigMap; status keeps a
// compact summary.
type CouchBenchmarkStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Message says how a finished run ended, in one line: where its results are, or in which
	// step it failed and why.
	// +optional
	Message string `json:"message,omitempty"`

	// Conditions in the kstatus style: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Progress is the step in flight; once the run has ended, the step it ended in.
	// +optional
	Progress *Progress `json:"progress,omitempty"`

	// Results is a compact summary per query server.
	// +optional
	// +listType=map
	// +listMapKey=queryServer
	Results []QueryServerResults `json:"results,omitempty"`

	// BestChangesPerSecond is the highest median indexing rate over all arms, profiles
	// and reducers, in documents per second to a fully built view.
	// +optional
	BestChangesPerSecond *int64 `json:"bestChangesPerSecond,omitempty"`

	// ReadP95 is the highest k6 read p95 latency over all arms (e.g. "12.4ms").
	// +optional
	ReadP95 string `json:"readP95,omitempty"`

	// Server is the CouchDB that produced the results (vendor, version, nodes), as the
	// runner found it.
	// +optional
	Server string `json:"server,omitempty"`

	// CouchDBNodes are the nodes the first arm's provisioned CouchDB pods ran on, once its
	// cluster was ready. Every later arm's CouchDB pods prefer these nodes, so that arms are
	// compared on the same hardware; the ArmsOnSameNodes condition says whether they got them.
	// +optional
	// +listType=atomic
	CouchDBNodes []string `json:"couchdbNodes,omitempty"`

	// ResultsConfigMap names the ConfigMap with the results rendered for people (Markdown,
	// CSV, an HTML page with charts). Every arm's full results document (every repetition,
	// the time series, the provenance) is in a ConfigMap labelled
	// bench.couchbench.io/results-of=<benchmark>.
	// +optional
	ResultsConfigMap string `json:"resultsConfigMap,omitempty"`

	// Comparison is the verdict against spec.baseline, once the run has finished.
	// +optional
	Comparison *ComparisonSummary `json:"comparison,omitempty"`

	// Arms sets every arm against the first (named in baseline): the A/B of the run, with a
	// verdict per metric (Regressed: worse than the first arm); paired round by round when
	// the arms took turns, judged as two runs minutes apart when they ran one after the other.
	// +optional
	Arms *ComparisonSummary `json:"arms,omitempty"`
}

// Verdict is a comparison's outcome.
// +kubebuilder:validation:Enum=Regressed;Improved;Unchanged;Inconclusive
type Verdict string

const (
	VerdictRegressed    Verdict = "Regressed"
	VerdictImproved     Verdict = "Improved"
	VerdictUnchanged    Verdict = "Unchanged"
	VerdictInconclusive Verdict = "Inconclusive"
)

// ComparisonSummary is the comparison with the baseline, compact; the results ConfigMap has
// every row.
type ComparisonSummary struct {
	// Baseline names the run compared with.
	Baseline string `json:"baseline"`
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// Counts of the metrics per verdict.
	// +optional
	Regressed int32 `json:"regressed,omitempty"`
	// +optional
	Improved int32 `json:"improved,omitempty"`
	// +optional
	Unchanged int32 `json:"unchanged,omitempty"`
	// +optional
	Inconclusive int32 `json:"inconclusive,omitempty"`
	// Summary is one line: the counts, the largest changes, what else differs.
	// +optional
	Summary string `json:"summary,omitempty"`
	// Changes are the metrics that regressed or improved (at most 20).
	// +optional
	// +listType=atomic
	Changes []MetricChange `json:"changes,omitempty"`
}

// MetricChange is one metric that regressed or improved.
type MetricChange struct {
	// Metric names it: query server/profile/workload/variant/metric.
	Metric  string  `json:"metric"`
	Verdict Verdict `json:"verdict"`
	// DeltaPercent is the change the interval is around, e.g. "-12.3%": the ratio of the two
	// runs' geometric means, or the geometric mean of an arm's round ratios to the first arm.
	DeltaPercent string `json:"deltaPercent"`
	// Interval is the confidence interval of the change, e.g. "[-15.1%, -9.4%]".
	// +optional
	Interval string `json:"interval,omitempty"`
}

// Progress is the step in flight.
type Progress struct {
	// QueryServer is the arm being measured; arms that take turns in the step are listed
	// comma-separated.
	// +optional
	QueryServer string `json:"queryServer,omitempty"`

	// Step is the step of that arm.
	// +optional
	Step Step `json:"step,omitempty"`

	// Percent of the whole run done, 0-100: 100 once it succeeded, how far it got when it
	// failed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent,omitempty"`

	// StepStartTime is when the step began; a step's own time limit counts from it.
	// +optional
	StepStartTime *metav1.Time `json:"stepStartTime,omitempty"`

	// Message is the last line the step's load generator logged, read once a minute while
	// its pods run: documents seeded, the build's share of changes done, write rounds, a
	// wait for other parts, or k6's own progress. Empty once the run has ended (status.message
	// says how).
	// +optional
	Message string `json:"message,omitempty"`
}

// QueryServerResults is the summary of one arm. Rates are rounded to whole numbers;
// latencies and durations are Go duration strings.
type QueryServerResults struct {
	// +required
	QueryServer string `json:"queryServer"`

	// Language is the design documents' language (javascript_quickjs for QuickJS arms).
	// +optional
	Language string `json:"language,omitempty"`

	// Stopped says why the arm was stopped before its first step: its views run on another
	// runtime than its preset, engine or command asks for (spec.runtimeMismatch Stop), e.g.
	// "asks for PyPy (preset pypy), but the CouchDB at ... runs its python views on CPython
	// 3.11.2 ...: to run PyPy, ..."; it has no results, and the message says how to configure
	// the server.
	// +optional
	Stopped string `json:"stopped,omitempty"`

	// +optional
	// +listType=atomic
	Seeding []SeedingResult `json:"seeding,omitempty"`

	// +optional
	// +listType=atomic
	Indexing []IndexingResult `json:"indexing,omitempty"`

	// +optional
	// +listType=atomic
	ViewReads []ViewReadResult `json:"viewReads,omitempty"`

	// +optional
	// +listType=atomic
	Writes []WriteResult `json:"writes,omitempty"`

	// +optional
	Reads *ReadResult `json:"reads,omitempty"`
}

// SeedingResult is the load of one profile's dataset.
type SeedingResult struct {
	Profile       string `json:"profile"`
	Documents     int64  `json:"documents"`
	DocsPerSecond int64  `json:"docsPerSecond"`
	// MBPerSecond of document JSON, e.g. "1.42".
	MBPerSecond string `json:"mbPerSecond"`
	// +optional
	Retries int64 `json:"retries,omitempty"`
	// Runners that loaded the dataset together (spec.runner.parallelism), when more than
	// one: the rate is every document over the first runner's start to the last one's end.
	// +optional
	Runners int32 `json:"runners,omitempty"`
	// Spread is over the loads (dataset.seedRepetitions); DocsPerSecond and MBPerSecond
	// are their medians, Retries their sum.
	Spread `json:",inline"`
}

// ResultFlag marks a result whose conditions make it less than a clean measurement.
// +kubebuilder:validation:Enum=Noisy;Imprecise;SharedNode;GeneratorBound;RuntimeMismatch
type ResultFlag string

const (
	// FlagNoisy: the repetitions' coefficient of variation exceeds spec.noiseThresholdPercent.
	FlagNoisy ResultFlag = "Noisy"
	// FlagImprecise: a build was too short to be timed within 5%.
	FlagImprecise ResultFlag = "Imprecise"
	// FlagSharedNode: a load generator of the step ran on a node of the CouchDB it measured,
	// and took CPU from it.
	FlagSharedNode ResultFlag = "SharedNode"
	// FlagGeneratorBound: the load generator was the bottleneck: the runner used 90% or more
	// of its CPU allowance during the step, or k6 dropped iterations it could not start.
	FlagGeneratorBound ResultFlag = "GeneratorBound"
	// FlagRuntimeMismatch: the arm's views ran on another runtime than its preset, engine or
	// command asks for, and spec.runtimeMismatch Flag measured it anyway: the number is not
	// what the arm's name says.
	FlagRuntimeMismatch ResultFlag = "RuntimeMismatch"
)

// Spread is how the repetitions of one result varied, and what marks them.
type Spread struct {
	// Runs is the number of repetitions measured.
	Runs int32 `json:"runs"`
	// CV is the coefficient of variation of the repetitions, e.g. "4.1%".
	// +optional
	CV string `json:"cv,omitempty"`
	// Flags mark conditions that make the result less than a clean measurement.
	// +optional
	// +listType=set
	Flags []ResultFlag `json:"flags,omitempty"`
}

// IndexingResult is the builds of one profile and reducer.
type IndexingResult struct {
	// Profile is the document profile, e.g. "small" or "large-300000".
	Profile string `json:"profile"`
	// +optional
	Reducer Reducer `json:"reducer,omitempty"`
	// ChangesPerSecond is documents divided by the wall time to a fully built view
	// (median over the repetitions): what the seed's c/s means.
	ChangesPerSecond int64 `json:"changesPerSecond"`
	// MinChangesPerSecond and MaxChangesPerSecond are the slowest and fastest build.
	// +optional
	MinChangesPerSecond int64 `json:"minChangesPerSecond,omitempty"`
	// +optional
	MaxChangesPerSecond int64 `json:"maxChangesPerSecond,omitempty"`
	// QueryableChangesPerSecond is documents divided by the time until the view request
	// answered (first copy of every shard range built), median.
	// +optional
	QueryableChangesPerSecond int64 `json:"queryableChangesPerSecond,omitempty"`
	// ShardChangesPerSecond sums the work over all shard copies, median.
	// +optional
	ShardChangesPerSecond int64 `json:"shardChangesPerSecond,omitempty"`
	// Spread is over the builds' rates.
	Spread `json:",inline"`
	// Uncertainty of the builds' rates from timing each build's start and end, e.g.
	// "±0.4%", the largest over the builds: every shard copy is asked on its own node, and
	// the start and the end are each bounded between two of its answers (see
	// docs/measurement.md). Above 5% the result is flagged Imprecise.
	// +optional
	Uncertainty string `json:"uncertainty,omitempty"`
	// BuiltSeconds is the median time to a fully built view, e.g. "14.39".
	// +optional
	BuiltSeconds string `json:"builtSeconds,omitempty"`
	// MapDocsPerDoc is the growth of CouchDB's map_doc counter over documents x n, median,
	// e.g. "1.00" (every document mapped once per copy); empty when unknown.
	// +optional
	MapDocsPerDoc string `json:"mapDocsPerDoc,omitempty"`
	// ViewCompaction is "paused" or "allowed" during the builds.
	// +optional
	ViewCompaction string `json:"viewCompaction,omitempty"`
}

// ViewReadResult is the median full read of one view.
type ViewReadResult struct {
	View ViewReadKind `json:"view"`
	// +optional
	Profile       string `json:"profile,omitempty"`
	RowsPerSecond int64  `json:"rowsPerSecond"`
	// SecondsPerRead as a duration, e.g. "4.5s".
	Duration string `json:"duration"`
	// Spread is over the reads' times.
	Spread `json:",inline"`
}

// WriteResult is the rate of one insert mode.
type WriteResult struct {
	// Mode is bulk-<size>, parallelBulk-<clients>x<size>, batchOk-<clients> or serial.
	Mode string `json:"mode"`
	// +optional
	Profile string `json:"profile,omitempty"`
	// DocsPerSecond is the median over the mode's repetitions.
	DocsPerSecond int64 `json:"docsPerSecond"`
	// Created, Accepted, Errors and Stored add up the repetitions.
	// Created counts 201 answers (on disk).
	// +optional
	Created int64 `json:"created,omitempty"`
	// Accepted counts 202 answers (batch=ok), not known to be on disk.
	// +optional
	Accepted int64 `json:"accepted,omitempty"`
	// Stored is the database's doc_count after the mode.
	// +optional
	Stored int64 `json:"stored,omitempty"`
	// +optional
	Errors int64 `json:"errors,omitempty"`
	// Spread is over the repetitions' docs/s.
	Spread `json:",inline"`
}

// ReadResult is the summary of one arm's k6 read load.
type ReadResult struct {
	// RequestsPerSecond is the median over the repetitions of all runners' requests over the
	// repetition's time; Requests is every repetition's.
	RequestsPerSecond int64 `json:"requestsPerSecond"`
	Requests          int64 `json:"requests"`
	// Elapsed is the load's time summed over the repetitions (seed 001's SUM), e.g. "39.6s".
	// +optional
	Elapsed string `json:"elapsed,omitempty"`
	// ErrorRate of failed requests, e.g. "0.02%".
	ErrorRate string `json:"errorRate"`
	P50       string `json:"p50"`
	P95       string `json:"p95"`
	P99       string `json:"p99"`
	// PercentileError bounds the percentiles when several k6 runners (or repetitions) took
	// part: they are read from the runners' latency histograms added together, within this
	// of the true percentile of all their requests, e.g. "1%". Empty: one runner, whose
	// percentiles k6 computed exactly.
	// +optional
	PercentileError string `json:"percentileError,omitempty"`
	// PercentilesUpperBound is true when several k6 runners reported percentiles without
	// histograms (results written before couchbench counted them), and the values are the
	// worst runner's: an upper bound.
	// +optional
	PercentilesUpperBound bool `json:"percentilesUpperBound,omitempty"`
	// +optional
	ThresholdsPassed *bool `json:"thresholdsPassed,omitempty"`
	// Runners lists each k6 runner's own percentiles when there were several.
	// +optional
	// +listType=atomic
	Runners []RunnerLatencies `json:"runners,omitempty"`
	// Spread is over the repetitions' requests/s.
	Spread `json:",inline"`
}

// RunnerLatencies are one k6 runner's percentiles.
type RunnerLatencies struct {
	// Segment is the runner's k6 execution segment, e.g. "1/2:1".
	Segment  string `json:"segment"`
	Requests int64  `json:"requests"`
	P50      string `json:"p50"`
	P95      string `json:"p95"`
	P99      string `json:"p99"`
}
