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
// most Alpha is a change point; the two sides are then searched again, each on its own.
//
// Why not a permutation test, which needs no assumption about the noise: its p-values are
// limited by how many reorderings a short history has. With 12 runs, 4 of them shifted, no
// reordering test can go below 0.004 (4 of 12 values can sit at the end in 495 ways, and at
// the start as well), so it cannot flag a shift a few runs old at a level that keeps a
// schedule free of false alarms. On logarithms, and with MinAfter runs at the new level, the
// t test holds its level on the noise these machines show (the package's tests draw stalls
// and outliers).
//
// A single noisy run cannot be a change point: MinAfter runs must share the new level. A shift
// shows once MinAfter runs after it share the new level clearly enough, and is named by its
// first run.
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
	// MinAfter is the fewest runs at the new level (default 2): one run is an outlier, not a
	// shift.
	MinAfter int
	// Alpha is the largest p-value of a change point (default 0.001): at most the chance
	// that a history with no change shows one.
	Alpha float64
}

func (o Options) withDefaults() Options {
	if o.MinBefore <= 0 {
		o.MinBefore = 4
	}
	if o.MinAfter <= 0 {
		o.MinAfter = 2
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
	var out []ChangePoint
	var search func(lo, hi int)
	search = func(lo, hi int) {
		seg := logs[lo:hi]
		split, stat := bestSplit(seg, opts)
		if split < 0 {
			return
		}
		splits := len(seg) - opts.MinBefore - opts.MinAfter + 1
		p := min(1, float64(splits)*2*(1-tdist.CDF(stat, float64(len(seg)-2))))
		if p > opts.Alpha {
			return
		}
		before, after := mean(seg[:split]), mean(seg[split:])
		out = append(out, ChangePoint{Index: at[lo+split], Ratio: math.Exp(after - before), PValue: p})
		search(lo, lo+split)
		search(lo+split, hi)
	}
	search(0, len(logs))
	slices.SortFunc(out, func(a, b ChangePoint) int { return a.Index - b.Index })
	return out
}

// bestSplit is the split of x (the index of the first value after it) with the largest |t|
// between the means before and after it, and that |t|; -1 when x is too short to split.
func bestSplit(x []float64, opts Options) (int, float64) {
	n := len(x)
	if n < opts.MinBefore+opts.MinAfter {
		return -1, 0
	}
	sum, sq := prefixSums(x)
	best, bestT := -1, -1.0
	for k := opts.MinBefore; k <= n-opts.MinAfter; k++ {
		if t := math.Abs(pooledT(sum, sq, k, n)); t > bestT {
			best, bestT = k, t
		}
	}
	return best, bestT
}

// prefixSums are the running sums of x and of its squares, from 0.
func prefixSums(x []float64) (sum, sq []float64) {
	sum, sq = make([]float64, len(x)+1), make([]float64, len(x)+1)
	for i, v := range x {
		sum[i+1], sq[i+1] = sum[i]+v, sq[i]+v*v
	}
	return sum, sq
}

// pooledT is Student's t of the means of x[:k] and x[k:n] with their pooled variance. A
// split of two flat segments (no variance) scores by the size of the step alone.
func pooledT(sum, sq []float64, k, n int) float64 {
	n1, n2 := float64(k), float64(n-k)
	m1, m2 := sum[k]/n1, (sum[n]-sum[k])/n2
	ss := (sq[k] - n1*m1*m1) + (sq[n] - sq[k] - n2*m2*m2)
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
