// Package changepoint finds persistent shifts in a series of runs' results: the history of a
// schedule's nightly runs, one value per run and metric.
//
// # Why not compare each run with the one before
//
// On shared machines runs minutes apart differ by 12–21% (CV) with nothing changed, so a
// verdict on two runs either flags noise or, widened for it, misses real changes; Mozilla's
// Perfherder still sees 12.5% false alerts with windowed t-tests. Looking at the whole history
// for the point where its level changed (MongoDB's E-Divisive means, Apache Otava's t-test
// variant) tells a persistent shift from a noisy run, and names the run where it began.
//
// # The method
//
// Binary segmentation with Student's t test. For a series x (logarithms of the values, so that
// a shift is a ratio), every split into a "before" of at least MinBefore runs and an "after"
// of at least MinAfter runs is scored by Student's pooled t statistic of the two means; the
// largest |t| is the candidate. Its p-value is the two-sided t test's at n - 2 degrees of
// freedom, multiplied by the number of splits tried (Bonferroni: the chance that any split of
// a history without a change looks this clear is at most that). A split with a p-value at
// most 0.9 Alpha is a change point; the two sides are then searched again, each on its own.
//
// A schedule sees every shift first at the end of its history, and Bonferroni's factor grows
// with the history while the evidence of a new shift does not. So in the newest segment (the
// one that ends with the newest run) the split before the newest MinAfter runs is tested on
// its own, with half of the splits' level: its p-value is the t test's divided by that half,
// and the other splits' Bonferroni p-values are divided by the other half (a weighted
// Bonferroni test: the level still holds). It is only taken when those runs look like one
// new level: each of them nearer the new mean than the old, and no higher |t| for the split
// one run later (that shift would not yet be MinAfter runs old, and waiting for its
// MinAfter-th run names it by its first run rather than by the run before).
//
// A shift that was undone (a regression fixed some runs later) defeats single splits: the
// runs after the fix look like those before it, so both sides of every split are mixed.
// Failing a split, each stretch of at least MinAfter runs, with MinBefore runs before it and
// MinAfter after, is set against the rest in the same way, Bonferroni over the stretches
// tried, at the other tenth of Alpha: its two ends are change points, and the three parts are
// searched again. E-Divisive means asks the same of its segments for the same reason.
//
// Why not a permutation test, which needs no assumption about the noise: its p-values are
// limited by how many reorderings a short history has. With 12 runs, 4 of them shifted, no
// reordering test can go below 0.004 (4 of 12 values can sit at the end in 495 ways, and at
// the start as well), so it cannot flag a shift a few runs old at a level that keeps a
// schedule free of false alarms. On logarithms, and with MinAfter runs at the new level, the
// t test holds its level on the noise these machines show (the package's tests draw stalls
// and outliers).
//
// A single noisy run, or two, cannot be a change point: MinAfter runs must share the new
// level. A shift shows once MinAfter runs after it share the new level clearly enough, and is
// named by its first run.
package changepoint

import (
	"math"
	"slices"

	"github.com/couchbench/couchbench/internal/tdist"
)

// Options tune the detector; the zero value takes the defaults.
type Options struct {
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
// gets on its own. On synthetic histories (hack/shiftpower, 4% run-to-run noise) half of it
// finds a 15% shift within 3 runs in 88% of histories where Bonferroni over all splits found
// 75%, and flags 3.3% of 100-run histories without a change instead of 1.7%.
const newestShare = 0.5

func (o Options) withDefaults() Options {
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

// ChangePoint is a persistent shift of a series.
type ChangePoint struct {
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
func Detect(values []float64, opts Options) []ChangePoint {
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
	var out []ChangePoint
	for i := 1; i+1 < len(bounds); i++ {
		k := bounds[i]
		out = append(out, ChangePoint{Index: at[k], PValue: found[k],
			Ratio: math.Exp(mean(logs[k:bounds[i+1]]) - mean(logs[bounds[i-1]:k]))})
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
func changesIn(seg []float64, opts Options, newest bool) map[int]float64 {
	n := len(seg)
	share := 1.0 // of the splits' level, for the best split
	if newest {
		if k, p := newestSplit(seg, opts); k >= 0 && p <= splitShare*opts.Alpha {
			return map[int]float64{k: p}
		}
		share = 1 - newestShare
	}
	if k, stat, tried := bestSplit(seg, opts); k >= 0 {
		if p := pValue(stat, n, tried) / share; p <= splitShare*opts.Alpha {
			return map[int]float64{k: p}
		}
	}
	if k, e, stat, tried := bestEpisode(seg, opts); k >= 0 {
		if p := pValue(stat, n, tried); p <= (1-splitShare)*opts.Alpha {
			return map[int]float64{k: p, e: p}
		}
	}
	return nil
}

// segmentOptions are the options for the segment from lo: one after a change point is a
// level of its own once it has MinAfter runs, so MinBefore only holds from the first run.
func segmentOptions(opts Options, lo int) Options {
	if lo > 0 {
		opts.MinBefore = opts.MinAfter
	}
	return opts
}

// refine moves each change point to the split with the largest |t| between its neighbours,
// keeping MinBefore runs before the first and MinAfter runs in every other segment, until
// none moves.
func refine(logs []float64, found map[int]float64, opts Options) {
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
// without a change is at least stat: the two-sided t test's p-value at n - 2 degrees of
// freedom, times the number tried (Bonferroni).
func pValue(stat float64, n, tried int) float64 {
	return min(1, float64(tried)*2*(1-tdist.CDF(stat, float64(n-2))))
}

// newestSplit is the split of x before its newest MinAfter values and its p-value, tested on
// its own with newestShare of the splits' level; -1 when x is too short, or when the newest
// values do not look like one new level: when the split one value later has the larger |t|
// (a shift there is not yet MinAfter values old), or when one of them lies on the old level's
// side of halfway between the two (two outliers and a normal run are not a level, though
// their mean may be far off).
func newestSplit(x []float64, opts Options) (k int, p float64) {
	n := len(x)
	k = n - opts.MinAfter
	if k < opts.MinBefore {
		return -1, 1
	}
	sum, sq := prefixSums(x)
	stat := math.Abs(pooledT(sum, sq, k, n))
	if k+1 < n && math.Abs(pooledT(sum, sq, k+1, n)) > stat {
		return -1, 1
	}
	before, after := sum[k]/float64(k), (sum[n]-sum[k])/float64(n-k)
	for _, v := range x[k:] {
		if (v-(before+after)/2)*(after-before) < 0 {
			return -1, 1
		}
	}
	return k, pValue(stat, n, 1) / newestShare
}

// bestSplit is the split of x (the index of the first value after it) with the largest |t|
// between the means before and after it, that |t| and how many splits it was chosen from;
// -1 when x is too short to split.
func bestSplit(x []float64, opts Options) (k int, stat float64, tried int) {
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
func bestEpisode(x []float64, opts Options) (k, e int, stat float64, tried int) {
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

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
