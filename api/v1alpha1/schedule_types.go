package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CouchBenchmarkScheduleSpec creates CouchBenchmarks from a template on a cron schedule, each
// compared with the previous successful run (or a pinned one): regression runs a GitOps tool
// can apply once and leave alone. The operator never writes a schedule's spec.
type CouchBenchmarkScheduleSpec struct {
	// Schedule in cron syntax: five fields (minute hour day-of-month month day-of-week), e.g.
	// "0 2 * * *" every night at 02:00, or @hourly, @daily, @weekly.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// TimeZone of the schedule, an IANA time zone name such as Europe/Berlin. Unset: UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// Suspend stops new runs; a run under way goes on.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ConcurrencyPolicy says what happens when a run is due while another runs: Forbid (skip
	// the new one: benchmarks sharing a cluster distort each other), Allow, or Replace (delete
	// the running one; its CouchDB is uninstalled).
	// +optional
	// +kubebuilder:default=Forbid
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// StartingDeadlineSeconds is how late a run may start after its time (the manager was
	// down, or a run held it back); a later one is skipped. Unset: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// SuccessfulRunsHistoryLimit is how many successful runs are kept, with their results;
	// older ones are deleted. The latest successful run (the next run's baseline) and a pinned
	// baseline are always kept.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessfulRunsHistoryLimit int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// FailedRunsHistoryLimit is how many failed runs are kept.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`

	// Immediate starts one run when the schedule is created, besides the scheduled ones.
	// +optional
	Immediate bool `json:"immediate,omitempty"`

	// Baseline is what each run is compared with.
	// +optional
	// +kubebuilder:default={}
	Baseline ScheduleBaseline `json:"baseline"`

	// HistoryRetentionPolicy says what becomes of the schedule's history (the ConfigMap
	// <schedule>-history: its runs' numbers, shifts and what was announced) when the schedule
	// is deleted, as a StatefulSet's persistentVolumeClaimRetentionPolicy does for its volumes.
	// Retain (the default) keeps it, so that a schedule removed from Git, renamed back or moved
	// (deleted and created again with the same name in the same namespace) continues the same
	// history; Delete deletes it with the schedule.
	// +optional
	// +kubebuilder:default={}
	HistoryRetentionPolicy HistoryRetentionPolicy `json:"historyRetentionPolicy"`

	// AcceptedShifts accepts shifts as the new level, by the run where each began (as
	// status.shifts[].run names it): a change the team made on purpose (a new CouchDB image,
	// an ini setting), committed to Git once the shift is reported. Every metric's level
	// starts anew at each run named, so a shift found there, or within 2 runs after it, is no
	// longer reported, and later runs are judged against the new level. A name the history does
	// not hold accepts nothing (the Shifted condition says so). Remove a name to judge across
	// it again.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	AcceptedShifts []string `json:"acceptedShifts,omitempty"`

	// Template is the CouchBenchmark each run is made from. Its spec is validated as a
	// CouchBenchmark's; a run's baseline comes from the schedule.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.spec.baseline)",fieldPath=".spec.baseline",message="template.spec.baseline is set by the schedule for each run: use the schedule's spec.baseline"
	Template BenchmarkTemplate `json:"template"`
}

// HistoryRetentionPolicy says what becomes of a schedule's history when the schedule goes.
type HistoryRetentionPolicy struct {
	// WhenDeleted: Retain (the default) or Delete.
	// +optional
	// +kubebuilder:default=Retain
	WhenDeleted RetentionPolicy `json:"whenDeleted,omitempty"`
}

// RetentionPolicy says whether an object outlives its schedule.
// +kubebuilder:validation:Enum=Retain;Delete
type RetentionPolicy string

const (
	RetentionRetain RetentionPolicy = "Retain"
	RetentionDelete RetentionPolicy = "Delete"
)

// ConcurrencyPolicy says what a schedule does when a run is due while another runs.
// +kubebuilder:validation:Enum=Forbid;Allow;Replace
type ConcurrencyPolicy string

const (
	ConcurrencyForbid  ConcurrencyPolicy = "Forbid"
	ConcurrencyAllow   ConcurrencyPolicy = "Allow"
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// ScheduleBaseline is what a schedule's runs are compared with.
// +kubebuilder:validation:XValidation:rule="(has(self.policy) && self.policy == 'Pinned') == has(self.benchmark)",message="baseline.benchmark names the pinned run: set it with policy Pinned, and only then"
type ScheduleBaseline struct {
	// Policy: PreviousSuccessful (each run against the schedule's latest successful run of
	// the template's dataset and workloads; after a change to those, none until one succeeds),
	// Pinned (every run against baseline.benchmark), or None.
	// +optional
	// +kubebuilder:default=PreviousSuccessful
	Policy BaselinePolicy `json:"policy,omitempty"`

	// Benchmark is the pinned baseline: a CouchBenchmark in the schedule's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Benchmark string `json:"benchmark,omitempty"`

	// TolerancePercent and Tolerances are passed to each run's spec.baseline.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	TolerancePercent int32 `json:"tolerancePercent,omitempty"`

	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Tolerances map[string]int32 `json:"tolerances,omitempty"`

	// BetweenRunsPercent is passed to each run's spec.baseline: how much runs differ from run
	// to run, assumed until the schedule has 3 earlier successful runs to measure it from.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BetweenRunsPercent *int32 `json:"betweenRunsPercent,omitempty"`
}

// BaselinePolicy chooses a scheduled run's baseline.
// +kubebuilder:validation:Enum=PreviousSuccessful;Pinned;None
type BaselinePolicy string

const (
	BaselinePreviousSuccessful BaselinePolicy = "PreviousSuccessful"
	BaselinePinned             BaselinePolicy = "Pinned"
	BaselineNone               BaselinePolicy = "None"
)

// BenchmarkTemplate is the CouchBenchmark a schedule makes for each run.
type BenchmarkTemplate struct {
	// Metadata: labels and annotations of every run.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// +required
	Spec CouchBenchmarkSpec `json:"spec"`
}

// TemplateMetadata is what a template sets of a run's metadata.
type TemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CouchBenchmarkScheduleStatus is rebuilt from the schedule's runs on every reconcile: it
// keeps nothing that the runs cannot tell again.
type CouchBenchmarkScheduleStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions in the kstatus style, which Flux's health checks and the Argo CD health
	// check (docs/gitops.md) read: Ready (True while the schedule works, its latest finished
	// run succeeded and no recent shift is a regression; reason SkippedSchedule while a start
	// time waits for a run under way, MissedSchedule when one could not start within
	// startingDeadlineSeconds, each told once as an event), Stalled (True, and Ready False,
	// with what a person must look at: InvalidSchedule, an invalid schedule or time zone, with
	// what to fix; RunFailed, the latest finished run failed, naming it and why, until a later
	// run succeeds; ShiftRegressed, a metric's level got worse within the last 10 runs, naming
	// the shift), Regressed (the latest finished run's verdict against its baseline: one
	// run's verdict, not the schedule's health), Shifted (True when a metric's level shifted
	// within the last 10 runs: the newest shifts, reason Regressed or Improved).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastScheduleTime is the start time of the latest run made.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// NextScheduleTime is when the next run is due (unset while suspended).
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastSuccessfulRun names the latest run that succeeded: the next run's baseline.
	// +optional
	LastSuccessfulRun string `json:"lastSuccessfulRun,omitempty"`

	// LastVerdict is the latest finished run's verdict against its baseline.
	// +optional
	LastVerdict Verdict `json:"lastVerdict,omitempty"`

	// Active names the runs under way.
	// +optional
	// +listType=atomic
	Active []string `json:"active,omitempty"`

	// History is the kept runs, newest first, with their headline numbers and verdict: the
	// trend of a nightly regression run in `kubectl get -o yaml`.
	// +optional
	// +listType=atomic
	History []ScheduledRun `json:"history,omitempty"`

	// Shifts are the persistent changes in the level of a metric that the schedule's history
	// (its last 1,000 successful runs, fewer when they would not fit the ConfigMap <schedule>-history) shows, newest first, at
	// most 20: each named by the first run at the new level.
	// +optional
	// +listType=atomic
	Shifts []Shift `json:"shifts,omitempty"`

	// Detection is what the history can find: the false-alarm budget its judged metrics share,
	// and each one's noise and smallest detectable shift.
	// +optional
	Detection *Detection `json:"detection,omitempty"`
}

// Detection is the schedule's false-alarm budget and what each judged metric of its history
// would find.
type Detection struct {
	// FalseAlarmsPerRun is the budget all judged metrics share: with nothing changed, how
	// often a run shows a false shift in any of them, e.g. "1 in 1000 runs over 3 judged
	// metrics".
	FalseAlarmsPerRun string `json:"falseAlarmsPerRun"`
	// Metrics are the judged metrics (an arm's ratio to the first arm when the runs have a
	// reference arm, else every metric), at most 20.
	// +optional
	// +listType=atomic
	Metrics []DetectableShift `json:"metrics,omitempty"`
}

// DetectableShift is what one judged metric would find at its own noise.
type DetectableShift struct {
	Metric string `json:"metric"`
	// Runs is how many runs the metric's current level has (since its newest shift; a dip that
	// ended is among them), which Noise is measured over.
	Runs int32 `json:"runs"`
	// Noise is the metric's coefficient of variation from run to run within its current
	// level, e.g. "3.4%".
	Noise string `json:"noise"`
	// DetectableShift is the smallest shift found 90% of the time within 3 runs (more while
	// the level is short or has outliers) at that noise and the metric's share of the budget,
	// e.g. "12.0%"; "too few runs" until the level has enough.
	DetectableShift string `json:"detectableShift"`
}

// Shift is a persistent change in the level of one metric over a schedule's runs, or a dip: a
// change that went back within 10 runs.
type Shift struct {
	// Metric names it: query server/profile/workload/variant/metric, or an arm's ratio to
	// the first arm (query server "arm:first").
	Metric string `json:"metric"`
	// Run is the first run at the new level; Runs how many runs since show it (for a dip, how
	// many runs it lasted).
	Run  string `json:"run"`
	Runs int32  `json:"runs"`
	// FoundAt is the newest run of the look that found it: each run is judged once, at the
	// first look after it, so a shift is news about the runs up to this one.
	// +optional
	FoundAt string `json:"foundAt,omitempty"`
	// Until is, for a dip, the first run back past halfway to the level before it.
	// +optional
	Until string `json:"until,omitempty"`
	// Change is the new level against the old, e.g. "-15.2%".
	Change string `json:"change"`
	// NominalPValue is the p-value of the test of the shift's own split at the run that found
	// it or, when a later run moved its first run (while the new level is young), at that run,
	// e.g. "2.1e-06", as the test's model of the noise gives it: nominal, not the chance of a
	// false shift, which the schedule's budget bounds (status.detection).
	NominalPValue string `json:"nominalPValue"`
	// Level is the level of the test that found it, which NominalPValue is within, e.g.
	// "6.2e-05": the metric's share of the schedule's false-alarm budget per run
	// (status.detection), split over the tests of one run.
	Level string `json:"level"`
	// Verdict is Regressed when the new level is worse, Improved when better.
	Verdict Verdict `json:"verdict"`
	// Follows is the change of the schedule's template at its first run or up to 2 runs
	// before it, as the history recorded it from the run's annotations, e.g. "generation 7:
	// template.spec.couchdb.provision.image (revision main@sha1:0c6fe0d)". A change the team
	// meant is accepted by committing Run to spec.acceptedShifts.
	// +optional
	Follows string `json:"follows,omitempty"`
}

// ScheduledRun is one run of a schedule in its history.
type ScheduledRun struct {
	Name        string      `json:"name"`
	ScheduledAt metav1.Time `json:"scheduledAt"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// +optional
	BestChangesPerSecond *int64 `json:"bestChangesPerSecond,omitempty"`
	// +optional
	ReadP95 string `json:"readP95,omitempty"`
	// Comparison is the comparison's one-line summary.
	// +optional
	Comparison string `json:"comparison,omitempty"`
	// Shift names the shifts that began with this run.
	// +optional
	Shift string `json:"shift,omitempty"`
	// ScheduleGeneration is the schedule's metadata.generation the run was made from.
	// +optional
	ScheduleGeneration int64 `json:"scheduleGeneration,omitempty"`
	// TemplateChanges are the fields of the template that changed since the schedule's run
	// before it, e.g. "spec.couchdb.provision.image, spec.queryServers[0].config": what a
	// shift that begins with this run may be due to.
	// +optional
	TemplateChanges string `json:"templateChanges,omitempty"`
	// Revision is the source revision the schedule carried when the run was made (its
	// annotation bench.couchbench.io/revision, e.g. set from Git by the tool that applies it).
	// +optional
	Revision string `json:"revision,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cbsched,categories=couchbench
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last run",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Last verdict",type=string,JSONPath=`.status.lastVerdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// CouchBenchmarkSchedule runs a CouchBenchmark on a cron schedule and compares each run with
// its baseline.
type CouchBenchmarkSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CouchBenchmarkScheduleSpec `json:"spec"`

	// +optional
	Status CouchBenchmarkScheduleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CouchBenchmarkScheduleList is a list of CouchBenchmarkSchedules.
type CouchBenchmarkScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CouchBenchmarkSchedule `json:"items"`
}

// Labels and annotations of scheduled runs.
const (
	// LabelSchedule names the schedule a run belongs to.
	LabelSchedule = "bench.couchbench.io/schedule"
	// LabelImmediate marks the run an immediate schedule made on creation.
	LabelImmediate = "bench.couchbench.io/immediate"
	// AnnotationScheduledAt is the run's start time in the schedule, RFC 3339.
	AnnotationScheduledAt = "bench.couchbench.io/scheduled-at"
	// AnnotationScheduleGeneration is the schedule's generation a run was made from.
	AnnotationScheduleGeneration = "bench.couchbench.io/schedule-generation"
	// AnnotationTemplateChanges lists the template's fields that changed since the schedule's
	// run before, comma-separated; absent on a schedule's first run.
	AnnotationTemplateChanges = "bench.couchbench.io/template-changes"
	// AnnotationRevision is the source revision of an object a GitOps tool applies (the user
	// sets it, e.g. with Flux's postBuild substitution of the commit): on a schedule, each run
	// made from it carries it on.
	AnnotationRevision = "bench.couchbench.io/revision"
)
