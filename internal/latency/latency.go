// Package latency merges the request latencies of several k6 runners. Percentiles cannot be
// merged (the p95 of two runners is not a function of their p95s), so each runner also counts
// its requests in a log-scaled histogram, the idea of HDR histograms: bucket b holds the
// durations from BaseMs x Ratio^b up to BaseMs x Ratio^(b+1). Histograms add exactly, and a
// percentile read from the sum is the middle of a bucket, within ErrorPercent of the
// duration of the request at that rank. The k6 script makes the buckets from the Layout the
// operator hands it, so both sides count the same way.
package latency

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// Layout is a histogram's buckets, and the prefix of the k6 counters that hold them
// ("<prefix><bucket>").
type Layout struct {
	BaseMs  float64 `json:"baseMs"`
	Ratio   float64 `json:"ratio"`
	Buckets int     `json:"buckets"`
	Prefix  string  `json:"prefix"`
}

// K6 is the layout of the reads workload: 2% wide buckets from 50 µs to 120 s (742 of them),
// so a merged percentile is within 1% of the true one. Durations below and above the range
// fall into the first and last bucket.
var K6 = Layout{BaseMs: 0.05, Ratio: 1.02, Buckets: 742, Prefix: "couchbench_latency_"}

// Bucket is the bucket of a duration in milliseconds (the script computes the same).
func (l Layout) Bucket(ms float64) int {
	if ms <= l.BaseMs {
		return 0
	}
	return min(int(math.Floor(math.Log(ms/l.BaseMs)/math.Log(l.Ratio))), l.Buckets-1)
}

// Value is the duration a bucket stands for: its geometric middle.
func (l Layout) Value(b int) float64 { return l.BaseMs * math.Pow(l.Ratio, float64(b)+0.5) }

// ErrorPercent bounds how far a percentile read from the histogram is from the duration at
// that rank, for durations within the layout's range.
func (l Layout) ErrorPercent() float64 { return 100 * (math.Sqrt(l.Ratio) - 1) }

// Histogram is request counts by bucket.
type Histogram map[int]int64

// Add adds o's counts.
func (h Histogram) Add(o Histogram) {
	for b, n := range o {
		h[b] += n
	}
}

// Count is the requests in the histogram.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Percentile is the p-th percentile (0-100) in milliseconds: the value of the bucket that
// holds the request of rank ceil(p/100 x count), the nearest-rank definition; 0 when empty.
func (l Layout) Percentile(h Histogram, p float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(p/100*float64(total))), 1)
	buckets := make([]int, 0, len(h))
	for b := range h {
		buckets = append(buckets, b)
	}
	sort.Ints(buckets)
	var seen int64
	for _, b := range buckets {
		if seen += h[b]; seen >= rank {
			return l.Value(b)
		}
	}
	return l.Value(buckets[len(buckets)-1])
}

// FromCounters reads a histogram from counters named "<prefix><bucket>" (a k6 summary's
// metrics), leaving other names out.
func (l Layout) FromCounters(counts map[string]float64) Histogram {
	h := Histogram{}
	for name, n := range counts {
		rest, ok := strings.CutPrefix(name, l.Prefix)
		if !ok || n <= 0 {
			continue
		}
		if b, err := strconv.Atoi(rest); err == nil && b >= 0 && b < l.Buckets {
			h[b] += int64(n)
		}
	}
	return h
}
