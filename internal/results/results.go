// Package results is the one results pipeline. A Document is the unit: every measurement of
// a run (every repetition, the /_active_tasks series, k6's numbers per runner) with its
// provenance, as the runner writes it and the operator stores it. Aggregate derives all that
// status shows from documents; the tables, CSV and Markdown render that; Merge and the
// store's encoding are how the operator keeps a run's documents; Handoff and frames are how a
// Job hands a document to the operator.
package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/measured"
)

// SchemaVersion is the version of the result document's layout; readers refuse others.
// Version 2: k6 reads in the document, every step's start and end, the run id.
const SchemaVersion = 2

// SpecHash is the SHA-256 of the spec as JSON: runs with the same hash ran the same benchmark.
func SpecHash(spec benchv1.CouchBenchmarkSpec) string {
	data, _ := json.Marshal(spec)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Document is one run's results.
type Document struct {
	SchemaVersion int    `json:"schemaVersion"`
	Benchmark     string `json:"benchmark"`
	// SpecHash is the SHA-256 of the benchmark spec (as JSON), so that runs of the same
	// spec can be compared and runs of different specs are not.
	SpecHash string `json:"specHash"`
	// Spec is the benchmark as it ran, defaults applied: what a comparison checks before it
	// compares, and what orders the arms.
	Spec benchv1.CouchBenchmarkSpec `json:"spec"`
	// RunID names the run's databases and design documents in CouchDB ("" for a run by hand
	// without --run-id).
	RunID      string     `json:"runId,omitempty"`
	Seed       int64      `json:"seed"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt time.Time  `json:"finishedAt"`
	Server     Provenance `json:"server"`
	Arms       []Arm      `json:"arms"`
	// Steps are the steps that produced the document, in the order they ran.
	Steps []StepRecord `json:"steps,omitempty"`
	// Error is why the run stopped early; the results before it are kept.
	Error string `json:"error,omitempty"`
	// Interrupted is true when the run was stopped (SIGTERM) before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// SeriesThinned is 2, 4, ... when the /_active_tasks curves keep every 2nd, 4th, ...
	// point only, so that the document fits where it is stored; 0 when they are whole.
	SeriesThinned int `json:"seriesThinned,omitempty"`
}

// StepRecord is when one step of one arm ran, and how it ended.
type StepRecord struct {
	QueryServer string       `json:"queryServer"`
	Step        benchv1.Step `json:"step"`
	StartedAt   time.Time    `json:"startedAt"`
	FinishedAt  time.Time    `json:"finishedAt"`
	Error       string       `json:"error,omitempty"`
	// LoadGenerator is what the step cost the runner of its CPU allowance: at BoundAbove
	// percent or more, the generator may have been the bottleneck.
	LoadGenerator *cpuuse.Use `json:"loadGenerator,omitempty"`
	// CouchDBLoad is every node's load during the step, as CouchDB reported it.
	CouchDBLoad []measured.NodeLoad `json:"couchdbLoad,omitempty"`
	// Rounds is the order the arms took their turns in, round by round (the warm-up first,
	// when there was one), when several arms took turns in the step.
	Rounds [][]string `json:"rounds,omitempty"`
	// Duet is true when the arms took each unit of the step at the same moment, each on a
	// CouchDB of its own (spec.armOrder Duet): their rounds pair as turns' do, and
	// LoadGenerator is the runner's share over every arm's units together.
	Duet bool `json:"duet,omitempty"`
	// Sequential is how the step ended when it added rounds until its arms' ratios were
	// decided (spec.sequential).
	Sequential *SequentialStop `json:"sequential,omitempty"`
}

// SequentialStop is how many counted rounds a sequential step took and why it stopped.
type SequentialStop struct {
	Rounds int `json:"rounds"`
	// Stopped is StoppedDecided, StoppedTimeLimit, StoppedMaxRounds or StoppedEarly.
	Stopped string `json:"stopped"`
}

// Why a sequential step stopped adding rounds.
const (
	StoppedDecided   = "decided"
	StoppedTimeLimit = "timeLimit"
	StoppedMaxRounds = "maxRounds"
	// StoppedEarly: an error or an interrupt ended the step; its rounds are still judged by
	// their sequences, as the run looked at them after every round.
	StoppedEarly = "early"
)

// Provenance says which server produced the numbers, as the server itself reports it.
type Provenance struct {
	URL      string   `json:"url"`
	Vendor   string   `json:"vendor"`
	Version  string   `json:"version"`
	GitSHA   string   `json:"gitSha,omitempty"`
	Features []string `json:"features,omitempty"`
	Nodes    []string `json:"nodes"`
	// From /_node/_local/_versions (empty where a server has none).
	JavaScriptEngine string `json:"javascriptEngine,omitempty"`
	ErlangVersion    string `json:"erlangVersion,omitempty"`
	CollationDriver  string `json:"collationDriver,omitempty"`
}

// ServerOf is the CouchDB an arm of the document ran on.
func (d *Document) ServerOf(a Arm) Provenance {
	if a.Server != nil {
		return *a.Server
	}
	return d.Server
}

// Arm is the results of one query server.
type Arm struct {
	QueryServer string `json:"queryServer"`
	Language    string `json:"language"`
	// Server is the arm's own CouchDB, where the arms of a document ran on different ones
	// (nil: the document's Server).
	Server *Provenance `json:"server,omitempty"`
	// Runtime is what ran the arm's views, as the arm's own CouchDB showed it.
	Runtime *Runtime `json:"runtime,omitempty"`
	// Cluster is where the arm ran in Kubernetes (operator runs only).
	Cluster  *Cluster  `json:"cluster,omitempty"`
	Profiles []Profile `json:"profiles"`
}

// Cluster is where an operator run's arm ran, as the operator saw it: the versions, the chart,
// every pod that took part (the arm's CouchDB, its runner and k6 Jobs) with the image it
// really ran (imageID, a digest) and its node, and those nodes.
type Cluster struct {
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Operator is the couchbench build that ran the run: "version (commit)".
	Operator string `json:"operator,omitempty"`
	// Chart is the CouchDB Helm chart of a provisioned arm: "chart couchdb 4.6.2 from <source>",
	// or "chart couchdb 4.6.2 built into the operator (sha256:<digest>)".
	Chart string    `json:"chart,omitempty"`
	Pods  []PodRun  `json:"pods,omitempty"`
	Nodes []NodeRun `json:"nodes,omitempty"`
}

// Pod roles in the provenance: the CouchDB measured, and the load generators.
const (
	RoleCouchDB = "couchdb"
	RoleRunner  = "runner"
	RoleK6      = "k6"
)

// PodRun is one pod of a run: what it was for, the image it ran and where.
type PodRun struct {
	// Role is RoleCouchDB, RoleRunner or RoleK6; Step the runner's or k6's step.
	Role    string       `json:"role"`
	Step    benchv1.Step `json:"step,omitempty"`
	Pod     string       `json:"pod"`
	Node    string       `json:"node,omitempty"`
	Image   string       `json:"image"`
	ImageID string       `json:"imageID,omitempty"`
}

// NodeRun is a node a run's pods ran on.
type NodeRun struct {
	Name string `json:"name"`
	// CPU and Memory are the node's allocatable resources.
	CPU     string `json:"cpu,omitempty"`
	Memory  string `json:"memory,omitempty"`
	Kernel  string `json:"kernel,omitempty"`
	OSImage string `json:"osImage,omitempty"`
}

// Runtime is the query server that really runs an arm's views: asked of a view in the arm's
// language (its code reports its interpreter) and of /_node/_local/_versions. A preset or a
// command can be wrong; this cannot.
type Runtime struct {
	// Language is the design documents' language.
	Language string `json:"language"`
	// Engine is the JavaScript engine (spidermonkey, quickjs), the Python implementation
	// (CPython, PyPy) or "erlang".
	Engine string `json:"engine"`
	// Version is the engine's version: SpiderMonkey's from /_node/_local/_versions, Python's,
	// or the Erlang/OTP release.
	Version string `json:"version,omitempty"`
	// JSONModule is the JSON module a Python query server decodes with (json, simplejson).
	JSONModule string `json:"jsonModule,omitempty"`
	// Asked is what the arm's preset, engine or command asks to run its views, in the same
	// terms ("PyPy", "CPython with JSON module json"); empty when it leaves that to CouchDB.
	Asked string `json:"asked,omitempty"`
	// Mismatch says what the arm asks for, what ran and how to configure the server to run
	// what was asked ("asks for PyPy (preset pypy), but the CouchDB at ... runs ..."), when
	// that is not what ran; empty when it is.
	Mismatch string `json:"mismatch,omitempty"`
	// Stopped is true when the mismatch stopped the arm before its first step
	// (spec.runtimeMismatch Stop); with a Mismatch and not Stopped, the arm was measured
	// anyway and every number of it is flagged RuntimeMismatch.
	Stopped bool `json:"stopped,omitempty"`
}

// String is what ran, in a few words: "CPython 3.11.2, JSON simplejson".
func (rt Runtime) String() string {
	s := strings.TrimSpace(rt.Engine + " " + rt.Version)
	if rt.JSONModule != "" {
		s += ", JSON " + rt.JSONModule
	}
	return s
}

// Stopped tells whether the arm was stopped before its first step because its views ran on
// another runtime than it asked for.
func (a Arm) Stopped() bool { return a.Runtime != nil && a.Runtime.Stopped }

// Profile is the results of one arm on one document profile.
type Profile struct {
	Profile  string `json:"profile"`
	DB       string `json:"db"`
	Shards   int    `json:"shards"`
	Replicas int    `json:"replicas"`
	// Seeding is the load of the dataset the workloads read: the last, when it was loaded
	// more than once.
	Seeding *measured.Seeding `json:"seeding,omitempty"`
	// SeedingRuns is every load in order, Seeding last, when the dataset was loaded more
	// than once (dataset.seedRepetitions).
	SeedingRuns []measured.Seeding `json:"seedingRuns,omitempty"`
	// SeedingDocsPerSecond and SeedingMBPerSecond are derived from Seeding.
	SeedingDocsPerSecond float64              `json:"seedingDocsPerSecond,omitempty"`
	SeedingMBPerSecond   float64              `json:"seedingMBPerSecond,omitempty"`
	Indexing             []IndexingSeries     `json:"indexing,omitempty"`
	ViewReads            []measured.ViewReads `json:"viewReads,omitempty"`
	Writes               []measured.Write     `json:"writes,omitempty"`
	// WritesWarmUp is every mode once before the repetitions (writes.warmUp): reported,
	// not counted.
	WritesWarmUp []measured.Write `json:"writesWarmUp,omitempty"`
	// Reads is the k6 read load, run on an arm's first profile.
	Reads *Reads `json:"reads,omitempty"`
}

// Seedings are the profile's loads of the dataset: SeedingRuns, or Seeding alone.
func (p Profile) Seedings() []measured.Seeding {
	if len(p.SeedingRuns) > 0 {
		return p.SeedingRuns
	}
	if p.Seeding != nil {
		return []measured.Seeding{*p.Seeding}
	}
	return nil
}

// IndexingSeries is the repeated builds of one reducer.
type IndexingSeries struct {
	Reducer string `json:"reducer"`
	// ViewCompaction is "paused" or "allowed": whether CouchDB could compact views during
	// the builds.
	ViewCompaction string `json:"viewCompaction"`
	// PollInterval is how often /_active_tasks was polled: a build's end is known to within it.
	PollInterval time.Duration         `json:"pollIntervalNs"`
	Runs         []measured.IndexBuild `json:"runs"`
	// WarmUp is the build before the runs (indexing.warmUp): reported, not counted.
	WarmUp *measured.IndexBuild `json:"warmUp,omitempty"`
	// Stats summarizes the runs' docs/s (median, min, max, CV) for readers of the JSON;
	// Finish fills it in.
	Stats Stats `json:"docsPerSecondStats"`
}

// pollInterval is the poll interval of the document's first indexing series; 0 without one.
func (d *Document) pollInterval() time.Duration {
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			for _, ix := range p.Indexing {
				if ix.PollInterval > 0 {
					return ix.PollInterval
				}
			}
		}
	}
	return 0
}

// Finish computes the series' statistics from its runs.
func (s *IndexingSeries) Finish() { s.Stats = s.DocsPerSecond() }

// DocsPerSecond is the statistics of the builds' rates (documents / time to fully built).
func (s IndexingSeries) DocsPerSecond() Stats {
	rates := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		rates[i] = r.DocsPerSecond
	}
	return Summarize(rates)
}

// ShardChangesPerSecond is the statistics of the builds' shard-change rates.
func (s IndexingSeries) ShardChangesPerSecond() Stats {
	rates := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		rates[i] = r.ShardChangesPerSecond
	}
	return Summarize(rates)
}

// Stats summarizes repeated measurements.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CV is the coefficient of variation (sample standard deviation / mean), in percent;
	// 0 for fewer than two values.
	CV float64 `json:"cvPercent"`
}

// Summarize computes Stats of values.
func Summarize(values []float64) Stats {
	if len(values) == 0 {
		return Stats{}
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	s := Stats{N: len(sorted), Min: sorted[0], Max: sorted[len(sorted)-1]}
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		s.Median = sorted[mid]
	} else {
		s.Median = (sorted[mid-1] + sorted[mid]) / 2
	}
	if len(sorted) > 1 {
		var sum float64
		for _, v := range sorted {
			sum += v
		}
		mean := sum / float64(len(sorted))
		var sq float64
		for _, v := range sorted {
			sq += (v - mean) * (v - mean)
		}
		if mean != 0 {
			s.CV = 100 * math.Sqrt(sq/float64(len(sorted)-1)) / math.Abs(mean)
		}
	}
	return s
}

// ViewReadSeconds is the statistics of one view's full-read times, in seconds.
func ViewReadSeconds(r measured.ViewReads) Stats {
	secs := make([]float64, len(r.Reads))
	for i, read := range r.Reads {
		secs[i] = read.Elapsed.Seconds()
	}
	return Summarize(secs)
}

// RowsPerSecond is rows over the median read time.
func RowsPerSecond(r measured.ViewReads) float64 {
	if len(r.Reads) == 0 {
		return 0
	}
	median := ViewReadSeconds(r).Median
	if median == 0 {
		return 0
	}
	return float64(r.Reads[0].Rows) / median
}
