package results

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/couchbench/couchbench/internal/latency"
	"github.com/couchbench/couchbench/internal/names"
)

// Reads is the k6 read load of one arm: every k6 runner's own numbers, as k6 reported them.
// Runners split the load with execution segments; what they add up to is Aggregate's.
type Reads struct {
	Scenario string        `json:"scenario"`
	Runners  []ReadsRunner `json:"runners"`
	// WarmUp is the runners of the load before the repetitions (reads.warmUp): reported,
	// not counted.
	WarmUp []ReadsRunner `json:"warmUp,omitempty"`
	// CPU is what the arm's CouchDB spent on each repetition, all its runners together, when
	// a meter read it (internal/readscpu); a repetition whose reading failed says why.
	CPU []ReadsCPU `json:"cpu,omitempty"`
}

// ReadsCPU is the server's CPU time over one repetition's load: from the start barrier's
// release to the last runner's end.
type ReadsCPU struct {
	Repetition  int     `json:"repetition"`
	CPUSeconds  float64 `json:"cpuSeconds,omitempty"`
	WallSeconds float64 `json:"wallSeconds,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// cpuCosts are the repetitions' CPU costs in the order byRepetition gives, each with all its
// runners' requests; nil unless every repetition has a reading.
func (r Reads) cpuCosts() []cpuCost {
	reps := r.byRepetition()
	costs := make([]cpuCost, 0, len(reps))
	for _, rep := range reps {
		i := slices.IndexFunc(r.CPU, func(c ReadsCPU) bool { return c.Repetition == rep.repetition && c.Error == "" })
		if i < 0 {
			return nil
		}
		costs = append(costs, cpuCost{r.CPU[i].CPUSeconds, rep.requests})
	}
	return costs
}

// ReadsRunner is one k6 runner's end-of-test summary of the measured requests (those tagged
// couchbench:load; the script's setup, which builds views, is left out).
type ReadsRunner struct {
	// Repetition is the repetition of the load the runner took part in, from 0.
	Repetition int `json:"repetition,omitempty"`
	// Segment is the runner's k6 execution segment, e.g. "1/2:1"; "0:1" for a lone runner.
	Segment  string `json:"segment"`
	Requests int64  `json:"requests"`
	Failed   int64  `json:"failed"`
	// DurationMs is the test run's time without setup (nor the teardown that marks the
	// load's end for a meter): the load's time.
	DurationMs float64 `json:"durationMs"`
	SetupMs    float64 `json:"setupMs"`
	// LoadStartedAt is when the runner's measured load began (its setup, and the start
	// barrier with several runners, ended), by its clock.
	LoadStartedAt time.Time `json:"loadStartedAt,omitzero"`
	BytesRead     float64   `json:"bytesReceived"`
	Milliseconds  Latencies `json:"ms"`
	// DroppedIterations counts iterations an open model (arrivalRate) could not start for
	// want of a free virtual user: the generator could not send the load asked for.
	DroppedIterations int64 `json:"droppedIterations,omitempty"`
	// Thresholds are the spec's thresholds, "metric: expression" -> passed.
	Thresholds map[string]bool `json:"thresholds,omitempty"`
	// Histogram counts the measured requests by latency bucket (latency.K6), so that
	// runners' percentiles can be merged.
	Histogram latency.Histogram `json:"latencyHistogram,omitempty"`
}

// Latencies are http_req_duration statistics in milliseconds.
type Latencies struct {
	Avg float64 `json:"avg"`
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// teardownMetric is the script's count of its teardown's milliseconds (k6plan's reads.js).
const teardownMetric = "couchbench_teardown_ms"

// k6Summary is the part of k6's end-of-test summary (handleSummary's data) that is read.
type k6Summary struct {
	State struct {
		TestRunDurationMs float64 `json:"testRunDurationMs"`
	} `json:"state"`
	SetupData *struct {
		SetupMs         float64 `json:"setupMs"`
		LoadStartedAtMs int64   `json:"loadStartedAtMs"`
	} `json:"setup_data"`
	Metrics map[string]struct {
		Values     map[string]float64 `json:"values"`
		Thresholds map[string]struct {
			OK bool `json:"ok"`
		} `json:"thresholds"`
	} `json:"metrics"`
}

// ParseK6Summary reads k6's end-of-test summary of one runner. userThresholds are the
// spec's thresholds as "metric|expression" (the script adds thresholds of its own so that k6
// computes the tagged sub-metrics; those are not the user's and are left out).
func ParseK6Summary(data []byte, segment string, userThresholds []string) (ReadsRunner, error) {
	var s k6Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return ReadsRunner{}, fmt.Errorf("not a k6 summary: %w", err)
	}
	reqs, ok := s.Metrics["http_reqs{"+names.K6LoadTag+"}"]
	if !ok {
		return ReadsRunner{}, fmt.Errorf("the k6 summary has no metric http_reqs{%s}: not couchbench's script", names.K6LoadTag)
	}
	d := s.Metrics["http_req_duration{"+names.K6LoadTag+"}"].Values
	r := ReadsRunner{
		Segment:  segment,
		Requests: int64(reqs.Values["count"]),
		// k6 counts a request that failed as a "pass" of the http_req_failed rate.
		Failed:            int64(s.Metrics["http_req_failed{"+names.K6LoadTag+"}"].Values["passes"]),
		DurationMs:        s.State.TestRunDurationMs,
		DroppedIterations: int64(s.Metrics["dropped_iterations"].Values["count"]),
		BytesRead:         s.Metrics["data_received"].Values["count"],
		Milliseconds: Latencies{Avg: d["avg"], Min: d["min"], P50: d["p(50)"], P90: d["p(90)"], P95: d["p(95)"], P99: d["p(99)"],
			Max: d["max"]},
	}
	counts := map[string]float64{}
	for name, m := range s.Metrics {
		if strings.HasPrefix(name, latency.K6.Prefix) {
			counts[name] = m.Values["count"]
		}
	}
	if h := latency.K6.FromCounters(counts); len(h) > 0 {
		r.Histogram = h
	}
	if s.SetupData != nil {
		r.SetupMs = s.SetupData.SetupMs
		if s.SetupData.LoadStartedAtMs > 0 {
			r.LoadStartedAt = time.UnixMilli(s.SetupData.LoadStartedAtMs).UTC()
		}
		r.DurationMs -= r.SetupMs
	}
	r.DurationMs -= s.Metrics[teardownMetric].Values["count"]
	for _, ut := range userThresholds {
		metric, expr, _ := strings.Cut(ut, "|")
		if t, ok := s.Metrics[metric].Thresholds[expr]; ok {
			if r.Thresholds == nil {
				r.Thresholds = map[string]bool{}
			}
			r.Thresholds[metric+": "+expr] = t.OK
		}
	}
	return r, nil
}

// repetitions are each repetition's requests/s — all its runners' requests over the longest
// runner's time (they start together) — and the load's time summed over the repetitions.
func (r Reads) repetitions() (rates []float64, elapsedMs float64) {
	for _, rep := range r.byRepetition() {
		if rep.longestMs > 0 {
			rates = append(rates, float64(rep.requests)/(rep.longestMs/1000))
		}
		elapsedMs += rep.longestMs
	}
	return rates, elapsedMs
}

// repetitionTotals are one repetition's runners added up: their requests and the longest
// runner's time.
type repetitionTotals struct {
	repetition int
	requests   int64
	longestMs  float64
}

// byRepetition adds up the runners of each repetition, in the order the repetitions first
// appear (the order they ran), so that every per-repetition series pairs with the others.
func (r Reads) byRepetition() []repetitionTotals {
	var out []repetitionTotals
	for _, run := range r.Runners {
		i := slices.IndexFunc(out, func(t repetitionTotals) bool { return t.repetition == run.Repetition })
		if i < 0 {
			out, i = append(out, repetitionTotals{repetition: run.Repetition}), len(out)
		}
		out[i].requests += run.Requests
		out[i].longestMs = max(out[i].longestMs, run.DurationMs)
	}
	return out
}

// runnersPerRepetition is how many k6 runners took part in each repetition.
func (r Reads) runnersPerRepetition() int {
	n := 0
	for _, run := range r.Runners {
		if run.Repetition == 0 {
			n++
		}
	}
	return n
}

// failedThresholds lists the thresholds any runner failed, sorted.
func (r Reads) failedThresholds() []string {
	seen := map[string]bool{}
	for _, run := range r.Runners {
		for t, ok := range run.Thresholds {
			if !ok {
				seen[t] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// mergedLatencies are the percentiles of every runner's requests together, from their
// histograms added up; ok is false when a runner has none.
func (r Reads) mergedLatencies() (l Latencies, ok bool) {
	all := latency.Histogram{}
	for _, run := range r.Runners {
		if run.Histogram.Count() == 0 {
			return l, false
		}
		all.Add(run.Histogram)
	}
	p := func(q float64) float64 { return latency.K6.Percentile(all, q) }
	return Latencies{P50: p(50), P90: p(90), P95: p(95), P99: p(99)}, true
}

// hasThresholds tells whether any runner judged a threshold.
func (r Reads) hasThresholds() bool {
	for _, run := range r.Runners {
		if len(run.Thresholds) > 0 {
			return true
		}
	}
	return false
}
