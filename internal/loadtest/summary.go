package loadtest

import (
	"encoding/json"
	"fmt"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// RunnerSummary is what one k6 runner leaves in its termination message (handleSummary in
// scripts/reads.js).
type RunnerSummary struct {
	V        int    `json:"v"`
	Segment  string `json:"segment"`
	Requests int64  `json:"requests"`
	// DurationMs is the load's time: the test run's without setup (building views).
	DurationMs   float64         `json:"durationMs"`
	SetupMs      float64         `json:"setupMs"`
	FailedRate   float64         `json:"failedRate"`
	Failed       int64           `json:"failed"`
	DataReceived float64         `json:"dataReceived"`
	Ms           Latencies       `json:"ms"`
	Thresholds   map[string]bool `json:"thresholds"`
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

// ParseSummary reads a runner's summary.
func ParseSummary(data []byte) (RunnerSummary, error) {
	var s RunnerSummary
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("not a k6 runner summary: %w", err)
	}
	if s.V != 1 {
		return s, fmt.Errorf("k6 runner summary version %d, this operator reads 1", s.V)
	}
	return s, nil
}

// Merge combines the runners of one read workload. Counts and rates add up exactly
// (requests over the longest runner's time: the runners start together). Percentiles do
// not add up: with one runner they are exact; with several the aggregate is each
// percentile's largest value over the runners, an upper bound of the true one (no runner
// has more than 5% of its requests above its own p95, so neither do all together), said so
// in PercentilesUpperBound, and each runner's own are listed.
func Merge(runners []RunnerSummary) benchv1.ReadResult {
	var res benchv1.ReadResult
	var requests, failed int64
	var longest float64
	var worst Latencies
	passed, anyThreshold := true, false
	for _, r := range runners {
		requests += r.Requests
		failed += r.Failed
		longest = max(longest, r.DurationMs)
		worst = Latencies{P50: max(worst.P50, r.Ms.P50), P95: max(worst.P95, r.Ms.P95), P99: max(worst.P99, r.Ms.P99)}
		for _, ok := range r.Thresholds {
			anyThreshold = true
			passed = passed && ok
		}
		if len(runners) > 1 {
			res.Runners = append(res.Runners, benchv1.RunnerLatencies{
				Segment: r.Segment, Requests: r.Requests, P50: ms(r.Ms.P50), P95: ms(r.Ms.P95), P99: ms(r.Ms.P99),
			})
		}
	}
	res.Requests = requests
	if longest > 0 {
		res.RequestsPerSecond = int64(float64(requests)/(longest/1000) + 0.5)
	}
	if requests > 0 {
		res.ErrorRate = fmt.Sprintf("%.2f%%", 100*float64(failed)/float64(requests))
	} else {
		res.ErrorRate = "n/a"
	}
	res.P50, res.P95, res.P99 = ms(worst.P50), ms(worst.P95), ms(worst.P99)
	res.PercentilesUpperBound = len(runners) > 1
	if anyThreshold {
		res.ThresholdsPassed = &passed
	}
	return res
}

// FailedThresholds lists the thresholds any runner failed.
func FailedThresholds(runners []RunnerSummary) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runners {
		for t, ok := range r.Thresholds {
			if !ok && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// ms formats milliseconds as a duration ("12.34ms").
func ms(v float64) string {
	return time.Duration(v * float64(time.Millisecond)).Round(10 * time.Microsecond).String()
}
