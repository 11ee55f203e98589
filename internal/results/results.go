// Package results holds the runner's output: the versioned JSON result document (every
// measurement, with provenance), its statistics, the human tables laid out like the seed
// articles' tables, Markdown and CSV reports, and the compact summary a Kubernetes Job
// leaves in its termination message.
package results

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/seeding"
	"github.com/couchbench/couchbench/internal/viewreads"
	"github.com/couchbench/couchbench/internal/writes"
)

// SchemaVersion is the version of the result document's layout; readers refuse others.
const SchemaVersion = 1

// Document is one run's results.
type Document struct {
	SchemaVersion int    `json:"schemaVersion"`
	Benchmark     string `json:"benchmark"`
	// SpecHash is the SHA-256 of the benchmark spec (as JSON), so that runs of the same
	// spec can be compared and runs of different specs are not.
	SpecHash   string     `json:"specHash"`
	Seed       int64      `json:"seed"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt time.Time  `json:"finishedAt"`
	Server     Provenance `json:"server"`
	Arms       []Arm      `json:"arms"`
	// Error is why the run stopped early; the results before it are kept.
	Error string `json:"error,omitempty"`
	// Interrupted is true when the run was stopped (SIGTERM) before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Provenance says which server produced the numbers.
type Provenance struct {
	URL     string   `json:"url"`
	Vendor  string   `json:"vendor"`
	Version string   `json:"version"`
	GitSHA  string   `json:"gitSha,omitempty"`
	Nodes   []string `json:"nodes"`
}

// Arm is the results of one query server.
type Arm struct {
	QueryServer string    `json:"queryServer"`
	Language    string    `json:"language"`
	Profiles    []Profile `json:"profiles"`
}

// Profile is the results of one arm on one document profile.
type Profile struct {
	Profile  string          `json:"profile"`
	DB       string          `json:"db"`
	Shards   int             `json:"shards"`
	Replicas int             `json:"replicas"`
	Seeding  *seeding.Result `json:"seeding,omitempty"`
	// SeedingDocsPerSecond and SeedingMBPerSecond are derived from Seeding.
	SeedingDocsPerSecond float64            `json:"seedingDocsPerSecond,omitempty"`
	SeedingMBPerSecond   float64            `json:"seedingMBPerSecond,omitempty"`
	Indexing             []IndexingSeries   `json:"indexing,omitempty"`
	ViewReads            []viewreads.Result `json:"viewReads,omitempty"`
	Writes               []writes.Result    `json:"writes,omitempty"`
}

// IndexingSeries is the repeated builds of one reducer.
type IndexingSeries struct {
	Reducer string `json:"reducer"`
	// ViewCompaction is "paused" or "allowed": whether CouchDB could compact views during
	// the builds.
	ViewCompaction string         `json:"viewCompaction"`
	Runs           []indexing.Run `json:"runs"`
	// Stats summarizes the runs' docs/s (median, min, max, CV) for readers of the JSON;
	// Finish fills it in.
	Stats Stats `json:"docsPerSecondStats"`
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
func ViewReadSeconds(r viewreads.Result) Stats {
	secs := make([]float64, len(r.Reads))
	for i, read := range r.Reads {
		secs[i] = read.Elapsed.Seconds()
	}
	return Summarize(secs)
}

// RowsPerSecond is rows over the median read time.
func RowsPerSecond(r viewreads.Result) float64 {
	if len(r.Reads) == 0 {
		return 0
	}
	median := ViewReadSeconds(r).Median
	if median == 0 {
		return 0
	}
	return float64(r.Reads[0].Rows) / median
}

// Read loads a results document written by the runner.
func Read(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: not a results document: %w", path, err)
	}
	if d.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: results schema version %d, this couchbench reads version %d", path, d.SchemaVersion, SchemaVersion)
	}
	return &d, nil
}
