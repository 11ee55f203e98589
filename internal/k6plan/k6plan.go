// Package k6plan is the k6 read load as planned: the script (embedded, delivered to the k6
// Jobs in a ConfigMap), the configuration passed to it, and how runners split the load. The
// operator builds its Jobs from it and couchbench run its k6 processes (internal/loadtest);
// it runs nothing itself. What k6 measured is read into results documents by
// internal/results (ParseK6Summary).
package k6plan

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/latency"
	"github.com/couchbench/couchbench/internal/names"
)

// Script is the k6 script; ScriptName its file name in the ConfigMap.
//
//go:embed scripts/reads.js
var Script string

const ScriptName = "reads.js"

// Config is what the script reads from COUCHBENCH_CONFIG.
type Config struct {
	URL       string `json:"url"`
	DB        string `json:"db"`
	Documents int64  `json:"documents"`
	Scenario  string `json:"scenario"`
	// Options are k6's options: the scenario's executor, thresholds, summary statistics.
	Options map[string]any `json:"options"`
	// DesignDoc holds the views of the view scenarios, in the arm's language.
	DesignDoc *couch.DesignDoc `json:"designDoc,omitempty"`
	// UserThresholds are "metric|expression" of the spec's thresholds: the ones the
	// summary reports (the script adds its own to have tagged sub-metrics computed).
	UserThresholds []string `json:"userThresholds"`
	// RandomIDs: the documents have random ids (dataset.ids Random), which the script
	// computes from IDSalt as internal/dataset does.
	RandomIDs bool   `json:"randomIds,omitempty"`
	IDSalt    uint32 `json:"idSalt,omitempty"`
	// Histogram is the layout of the latency histogram the script counts the measured
	// requests in, so that runners' latencies merge (internal/latency).
	Histogram latency.Layout `json:"histogram"`
}

// NewConfig builds the script's configuration for one arm's reads of database db.
func NewConfig(spec *benchv1.CouchBenchmarkSpec, qs benchv1.QueryServer, url, db string) (Config, error) {
	r := spec.Workloads.Reads
	if r == nil {
		return Config{}, fmt.Errorf("the benchmark has no reads workload")
	}
	cfg := Config{URL: url, DB: db, Documents: spec.Dataset.Documents, Scenario: string(r.Scenario), UserThresholds: []string{},
		Histogram: latency.K6}
	if spec.Dataset.IDs == benchv1.IDsRandom {
		cfg.RandomIDs, cfg.IDSalt = true, dataset.IDSalt(spec.Dataset.Seed)
	}
	if r.Scenario != benchv1.ScenarioGetDocument && r.Scenario != benchv1.ScenarioGetSameDocument && r.Scenario != benchv1.ScenarioMixed {
		d, err := ddoc.ViewReads(names.ViewReadsDesignDoc, ddoc.Language(qs))
		if err != nil {
			return Config{}, err
		}
		cfg.DesignDoc = &d
	}
	thresholds := map[string][]string{
		// Thresholds on the tagged metrics make k6 compute them for the summary.
		"http_req_duration{" + names.K6LoadTag + "}": {"max>=0"},
		"http_reqs{" + names.K6LoadTag + "}":         {"count>=0"},
		"http_req_failed{" + names.K6LoadTag + "}":   {"rate>=0"},
	}
	for _, t := range r.Thresholds {
		metric := t.Metric
		if !strings.Contains(metric, "{") {
			metric += "{" + names.K6LoadTag + "}" // the user means the measured load, not setup
		}
		thresholds[metric] = append(thresholds[metric], t.Condition)
		cfg.UserThresholds = append(cfg.UserThresholds, metric+"|"+t.Condition)
	}
	cfg.Options = map[string]any{
		"scenarios":             map[string]any{"reads": executor(r, spec.Timeout)},
		"thresholds":            thresholds,
		"summaryTrendStats":     []string{"avg", "min", "med", "max", "p(50)", "p(90)", "p(95)", "p(99)"},
		"discardResponseBodies": true, // the load measures the server; bodies would cost the client
		"setupTimeout":          spec.Timeout,
		"insecureSkipTLSVerify": false,
	}
	return cfg, nil
}

// executor maps the spec's load model to a k6 executor: virtual users × iterations (the
// closed model of siege -c -r), virtual users for a duration, or a constant arrival rate.
func executor(r *benchv1.ReadsWorkload, timeout string) map[string]any {
	switch {
	case r.IterationsPerUser != nil:
		return map[string]any{executorKey: "per-vu-iterations", "vus": r.VirtualUsers, "iterations": *r.IterationsPerUser, "maxDuration": timeout}
	case r.ArrivalRate != nil:
		return map[string]any{executorKey: "constant-arrival-rate", "rate": *r.ArrivalRate, "timeUnit": "1s", "duration": r.Duration,
			"preAllocatedVUs": r.VirtualUsers, "maxVUs": r.VirtualUsers}
	default:
		return map[string]any{executorKey: "constant-vus", "vus": r.VirtualUsers, "duration": r.Duration}
	}
}

// executorKey names a k6 scenario's executor.
const executorKey = "executor"

// JSON is the configuration as the script reads it.
func (c Config) JSON() (string, error) {
	data, err := json.Marshal(c)
	return string(data), err
}

// Segments are the k6 execution segments of n runners ("0:1/2", "1/2:1") and the
// sequence they share, so that n runners together run exactly the configured load.
func Segments(n int) (segments []string, sequence string) {
	if n <= 1 {
		return []string{""}, ""
	}
	points := make([]string, n+1)
	for i := range points {
		points[i] = fraction(i, n)
	}
	for i := range n {
		segments = append(segments, points[i]+":"+points[i+1])
	}
	return segments, strings.Join(points, ",")
}

// BarrierName is the start barrier of a round of an arm's reads (0 is the warm-up when there
// is one), in the arm's read database: its k6 runners' and, when the round is metered, its
// meter's (internal/readscpu).
func BarrierName(round int) string { return fmt.Sprintf("%s-%d", benchv1.StepReads, round) }

// SegmentName is how a runner's segment is shown: "0:1" for a lone runner (which runs with
// no segment).
func SegmentName(segment string) string {
	if segment == "" {
		return "0:1"
	}
	return segment
}

func fraction(i, n int) string {
	switch i {
	case 0:
		return "0"
	case n:
		return "1"
	}
	return fmt.Sprintf("%d/%d", i, n)
}
