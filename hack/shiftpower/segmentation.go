package main

// segmentation is the detector internal/changepoint had before it went online, kept here as the
// baseline the new one is measured against: at every look, binary segmentation of the whole
// history with Student's t test, Bonferroni over the splits tried (p <= 0.0009), the newest
// split tested on its own with half of that level, and stretches (a shift later undone) at the
// rest (0.0001). It is the code as it was, with its names prefixed where they would clash.

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// segOptions tune the detector; the zero value takes the defaults.
type segOptions struct {
	// MinBefore is the fewest runs before a change point (default 4): the level it changed
	// from must be known.
	MinBefore int
	// MinAfter is the fewest runs at the new level (default 3): one run is an outlier, and
	// two slow runs in a row are not rare on a shared machine.
	MinAfter int
	// Alpha is the largest p-value of a change point (default 0.001): at most the chance
	// that a history with no change shows one.
	Alpha float64
}

// splitShare is the part of Alpha the single splits get, the rest going to the stretches: a
// segment without a change then shows one in either at most Alpha of the time. The splits get
// most because they are what flags a shift while it is new, at the end of the history; by the
// time a shift is undone it has been flagged.
var splitShare = 0.9

// newestShare is the part of the splits' level that the newest split of the newest segment
// gets on its own.
const newestShare = 0.5

func (o segOptions) withDefaults() segOptions {
	if o.MinBefore <= 0 {
		o.MinBefore = 4
	}
	if o.MinAfter <= 0 {
		o.MinAfter = 3
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.001
	}
	return o
}

// segChangePoint is a persistent shift of a series.
type segChangePoint struct {
	// Index is the first run at the new level.
	Index int
	// Ratio is the new level over the old one: the geometric means of the runs after and
	// before the change point, within its segment (0.85: 15% lower).
	Ratio float64
	// PValue bounds the chance of a shift this clear in a history with none. Confidence is
	// 1 - PValue.
	PValue float64
}

// Detect finds the change points of a series of positive values, in order. Values that are
// not positive (no ratio can be taken) make no change point and are left out.
func segmentationDetect(values []float64, opts segOptions) []segChangePoint {
	opts = opts.withDefaults()
	var logs []float64
	var at []int
	for i, v := range values {
		if v > 0 && !math.IsInf(v, 1) {
			logs = append(logs, math.Log(v))
			at = append(at, i)
		}
	}
	// Change points by their place in logs, with their p-values. Each pass tests every
	// segment between the change points found so far once, then moves each change point to
	// the best split between its neighbours: the first split of a segment with two shifts
	// can fall between them, and its neighbours' segments are only right once it has moved.
	found := map[int]float64{}
	for {
		bounds := boundsOf(found, len(logs))
		added := false
		for i := 0; i+1 < len(bounds); i++ {
			lo, hi := bounds[i], bounds[i+1]
			for k, p := range changesIn(logs[lo:hi], segmentOptions(opts, lo), hi == len(logs)) {
				found[lo+k], added = p, true
			}
		}
		if !added {
			break
		}
		refine(logs, found, opts)
	}
	bounds := boundsOf(found, len(logs))
	var out []segChangePoint
	for i := 1; i+1 < len(bounds); i++ {
		k := bounds[i]
		out = append(out, segChangePoint{Index: at[k], PValue: found[k],
			Ratio: math.Exp(stat.Mean(logs[k:bounds[i+1]], nil) - stat.Mean(logs[bounds[i-1]:k], nil))})
	}
	return out
}

// boundsOf is 0, the change points in order, and n.
func boundsOf(found map[int]float64, n int) []int {
	bounds := make([]int, 0, len(found)+2)
	bounds = append(bounds, 0, n)
	for k := range found {
		bounds = append(bounds, k)
	}
	slices.Sort(bounds)
	return bounds
}

// changesIn are the change points of a segment of a series with none found in it yet, by
// their place in it, with their p-values: in the newest segment the newest split if it is
// clear enough, else the best split if that is, else the ends of the best stretch if that is.
func changesIn(seg []float64, opts segOptions, newest bool) map[int]float64 {
	n := len(seg)
	share := 1.0 // of the splits' level, for the best split
	if newest {
		if k, p := newestSplit(seg, opts); k >= 0 && p <= splitShare*opts.Alpha {
			return map[int]float64{k: p}
		}
		share = 1 - newestShare
	}
	if k, t, tried := bestSplit(seg, opts); k >= 0 {
		if p := pValue(t, n, tried) / share; p <= splitShare*opts.Alpha {
			return map[int]float64{k: p}
		}
	}
	if k, e, t, tried := bestEpisode(seg, opts); k >= 0 {
		if p := pValue(t, n, tried); p <= (1-splitShare)*opts.Alpha {
			return map[int]float64{k: p, e: p}
		}
	}
	return nil
}

// segmentOptions are the options for the segment from lo: one after a change point is a
// level of its own once it has MinAfter runs, so MinBefore only holds from the first run.
func segmentOptions(opts segOptions, lo int) segOptions {
	if lo > 0 {
		opts.MinBefore = opts.MinAfter
	}
	return opts
}

// refine moves each change point to the split with the largest |t| between its neighbours,
// keeping MinBefore runs before the first and MinAfter runs in every other segment, until
// none moves.
func refine(logs []float64, found map[int]float64, opts segOptions) {
	for range len(logs) {
		bounds := boundsOf(found, len(logs))
		moved := false
		for i := 1; i+1 < len(bounds); i++ {
			lo, k, hi := bounds[i-1], bounds[i], bounds[i+1]
			best, _, _ := bestSplit(logs[lo:hi], segmentOptions(opts, lo))
			if best >= 0 && lo+best != k {
				found[lo+best] = found[k]
				delete(found, k)
				bounds[i], moved = lo+best, true
			}
		}
		if !moved {
			return
		}
	}
}

// pValue is the chance that the largest of tried |t| statistics of a series of n values
// without a change is at least t: the two-sided t test's p-value at n - 2 degrees of
// freedom, times the number tried (Bonferroni).
func pValue(t float64, n, tried int) float64 {
	return min(1, float64(tried)*2*distuv.StudentsT{Sigma: 1, Nu: float64(n - 2)}.Survival(t))
}

// newestSplit is the split of x before its newest MinAfter values and its p-value, tested on
// its own with newestShare of the splits' level; -1 when x is too short, or when the newest
// values do not look like one new level: when the split one value later has the larger |t|
// (a shift there is not yet MinAfter values old), or when one of them lies on the old level's
// side of halfway between the two (two outliers and a normal run are not a level, though
// their mean may be far off).
func newestSplit(x []float64, opts segOptions) (k int, p float64) {
	n := len(x)
	k = n - opts.MinAfter
	if k < opts.MinBefore {
		return -1, 1
	}
	sum, sq := prefixSums(x)
	t := math.Abs(pooledT(sum, sq, k, n))
	if k+1 < n && math.Abs(pooledT(sum, sq, k+1, n)) > t {
		return -1, 1
	}
	before, after := sum[k]/float64(k), (sum[n]-sum[k])/float64(n-k)
	for _, v := range x[k:] {
		if (v-(before+after)/2)*(after-before) < 0 {
			return -1, 1
		}
	}
	return k, pValue(t, n, 1) / newestShare
}

// bestSplit is the split of x (the index of the first value after it) with the largest |t|
// between the means before and after it, that |t| and how many splits it was chosen from;
// -1 when x is too short to split.
func bestSplit(x []float64, opts segOptions) (k int, tStat float64, tried int) {
	n := len(x)
	if n < opts.MinBefore+opts.MinAfter {
		return -1, 0, 0
	}
	sum, sq := prefixSums(x)
	best, bestT := -1, -1.0
	for k := opts.MinBefore; k <= n-opts.MinAfter; k++ {
		tried++
		if t := math.Abs(pooledT(sum, sq, k, n)); t > bestT {
			best, bestT = k, t
		}
	}
	return best, bestT, tried
}

// bestEpisode is the stretch x[k:e] that differs most from the rest of x by |t| of the two
// means, that |t| and how many stretches it was chosen from; -1 when x is too short. It
// finds a shift that was later undone — a regression fixed a few runs on — which no single
// split tells apart: the runs after the fix look like the runs before it, and both halves
// of any split are mixed.
func bestEpisode(x []float64, opts segOptions) (k, e int, tStat float64, tried int) {
	n := len(x)
	if n < opts.MinBefore+2*opts.MinAfter {
		return -1, -1, 0, 0
	}
	sum, sq := prefixSums(x)
	bestK, bestE, bestT := -1, -1, -1.0
	for k := opts.MinBefore; k <= n-2*opts.MinAfter; k++ {
		for e := k + opts.MinAfter; e <= n-opts.MinAfter; e++ {
			tried++
			if t := math.Abs(episodeT(sum, sq, k, e, n)); t > bestT {
				bestK, bestE, bestT = k, e, t
			}
		}
	}
	return bestK, bestE, bestT, tried
}

// prefixSums are the running sums of x and of its squares, from 0.
func prefixSums(x []float64) (sum, sq []float64) {
	sum, sq = make([]float64, len(x)+1), make([]float64, len(x)+1)
	for i, v := range x {
		sum[i+1], sq[i+1] = sum[i]+v, sq[i]+v*v
	}
	return sum, sq
}

// pooledT is Student's t of the means of x[:k] and x[k:n] with their pooled variance.
func pooledT(sum, sq []float64, k, n int) float64 {
	return twoSampleT(sum[k], sq[k], float64(k), sum[n]-sum[k], sq[n]-sq[k], float64(n-k))
}

// episodeT is Student's t of the means of x[k:e] and of the rest of x[:n].
func episodeT(sum, sq []float64, k, e, n int) float64 {
	in, inSq := sum[e]-sum[k], sq[e]-sq[k]
	return twoSampleT(sum[n]-in, sq[n]-inSq, float64(n-(e-k)), in, inSq, float64(e-k))
}

// twoSampleT is Student's t of two samples' means with their pooled variance, from their sums,
// sums of squares and sizes. Two flat samples (no variance) score by the size of the step
// alone.
func twoSampleT(s1, q1, n1, s2, q2, n2 float64) float64 {
	m1, m2 := s1/n1, s2/n2
	ss := (q1 - n1*m1*m1) + (q2 - n2*m2*m2)
	df := n1 + n2 - 2
	if df <= 0 {
		return 0
	}
	v := max(ss/df, 0)
	se := math.Sqrt(v * (1/n1 + 1/n2))
	if se == 0 {
		if m1 == m2 {
			return 0
		}
		return math.Inf(1)
	}
	return (m2 - m1) / se
}
