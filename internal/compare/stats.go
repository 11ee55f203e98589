package compare

import (
	"fmt"
	"math"

	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/tdist"
)

// MinSamples is the fewest repetitions per run a metric needs to be judged. Two values give
// one difference, no estimate of the spread worth the name; with three a side the interval
// below is finite, and wide unless the runs are tight.
const MinSamples = 3

// ConfidencePercent is the level of every row's interval.
const ConfidencePercent = 99

// judgement is a metric's verdict and what it rests on.
type judgement struct {
	verdict Verdict
	// estimate is the change the interval is around, in percent.
	estimate *float64
	interval *Interval
	// minDetectable is the smallest change, in percent, that the verdict would have called
	// Regressed or Improved at least 4 times in 5 (nil when the samples allow no interval).
	minDetectable *float64
	reason        string
}

// change is an estimate of a metric's change as the logarithm of a ratio, with its standard
// error and degrees of freedom: what a verdict, its interval and the smallest change it can
// tell rest on, wherever the estimate comes from (two runs, an arm's rounds against another's,
// or two runs widened by the history of runs before them).
type change struct {
	est, se, df float64
}

// welch estimates the log of the ratio of the geometric means of cur and base, with Welch's
// standard error and degrees of freedom: each run's own spread and count enter, so a noisy or
// short run widens it.
func welch(base, cur []float64) change {
	mb, vb := logMeanVar(base)
	mc, vc := logMeanVar(cur)
	nb, nc := float64(len(base)), float64(len(cur))
	se2 := vb/nb + vc/nc
	c := change{est: mc - mb, se: math.Sqrt(se2)}
	if se2 > 0 {
		// Welch–Satterthwaite degrees of freedom.
		c.df = se2 * se2 / ((vb/nb)*(vb/nb)/(nb-1) + (vc/nc)*(vc/nc)/(nc-1))
	}
	return c
}

// halfWidth is the half width of the change's two-sided interval at the given level.
func (c change) halfWidth(level float64) float64 {
	if c.se == 0 {
		return 0
	}
	return tdist.Quantile(1-(1-level)/2, c.df) * c.se
}

// detectPower is how often a change of the minimum detectable size is called: 4 times in 5.
const detectPower = 0.8

// minDetectable is the smallest change, as a fraction (0.12 for 12%), that the verdict would
// call at least detectPower of the time: it must clear the tolerance and the interval's half
// width, and then the estimate's own spread (Student's t at the power's quantile).
func (c change) minDetectable(level, tolerance float64) float64 {
	if c.se == 0 {
		return tolerance
	}
	power := tdist.Quantile(detectPower, c.df) * c.se
	return math.Exp(math.Log1p(tolerance)+c.halfWidth(level)+power) - 1
}

// judge applies the package's rule (see the package documentation) to one metric's samples.
// tolerance is a fraction (0.05 for 5%). A run-to-run spread (sd 0: none) floors the change's
// standard error: two runs' medians each stray from the metric's level by that much.
func judge(base, cur []float64, dir results.Direction, tolerance float64, spread runSpread) judgement {
	if len(base) < MinSamples || len(cur) < MinSamples {
		return judgement{verdict: Inconclusive,
			reason: fmt.Sprintf("%d and %d runs: %d a side are needed", len(base), len(cur), MinSamples)}
	}
	if !positive(base) || !positive(cur) {
		return judgement{verdict: Inconclusive, reason: "a value is not positive: no ratio"}
	}
	medians := results.Summarize(cur).Median / results.Summarize(base).Median
	c := welch(base, cur)
	if floor := spread.sd * math.Sqrt2; floor > c.se {
		c.se, c.df = floor, spread.df
	}
	return rule(c, medians, dir, tolerance)
}

// rule gives the verdict on an estimated change: Regressed or Improved when its interval
// and the medians' ratio both lie beyond the tolerance band on one side, Unchanged when both
// lie within it, Inconclusive otherwise.
func rule(c change, medians float64, dir results.Direction, tolerance float64) judgement {
	level := ConfidencePercent / 100.0
	half := c.halfWidth(level)
	low, high := math.Exp(c.est-half), math.Exp(c.est+half)
	mde, est := 100*c.minDetectable(level, tolerance), 100*(math.Exp(c.est)-1)
	j := judgement{estimate: &est, interval: &Interval{LowPercent: 100 * (low - 1), HighPercent: 100 * (high - 1)}, minDetectable: &mde}
	floor, ceiling := 1-tolerance, 1+tolerance
	down, up := high < floor, low > ceiling
	switch {
	case down && medians < floor, up && medians > ceiling:
		// Falling is worse for a rate, better for a latency.
		if down == (dir == results.HigherIsBetter) {
			j.verdict = Regressed
		} else {
			j.verdict = Improved
		}
	case low >= floor && high <= ceiling && medians >= floor && medians <= ceiling:
		j.verdict = Unchanged
	case down || up || (low >= floor && high <= ceiling):
		// Only outliers separate the medians from the means this far.
		j.verdict, j.reason = Inconclusive, "the medians and the interval disagree (outliers)"
	default:
		j.verdict, j.reason = Inconclusive, fmt.Sprintf("the interval reaches across ±%s: spread too large to tell", percent(100*tolerance))
	}
	return j
}

func positive(values []float64) bool {
	for _, v := range values {
		if !(v > 0) || math.IsInf(v, 1) {
			return false
		}
	}
	return true
}

// logMeanVar is the mean and the sample variance of the values' logarithms.
func logMeanVar(values []float64) (mean, variance float64) {
	for _, v := range values {
		mean += math.Log(v)
	}
	mean /= float64(len(values))
	for _, v := range values {
		d := math.Log(v) - mean
		variance += d * d
	}
	return mean, variance / float64(len(values)-1)
}
