package compare

import (
	"fmt"
	"math"

	"github.com/couchbench/couchbench/internal/results"
)

// MinSamples is the fewest repetitions per run a metric needs to be judged. Two values give
// one difference, no estimate of the spread worth the name; with three a side the interval
// below is finite, and wide unless the runs are tight.
const MinSamples = 3

// ConfidencePercent is the level of every row's interval.
const ConfidencePercent = 99

// judgement is a metric's verdict and what it rests on.
type judgement struct {
	verdict  Verdict
	interval *Interval
	reason   string
}

// judge applies the package's rule (see the package documentation) to one metric's samples.
// tolerance is a fraction (0.05 for 5%).
func judge(base, cur []float64, dir results.Direction, tolerance float64) judgement {
	if len(base) < MinSamples || len(cur) < MinSamples {
		return judgement{verdict: Inconclusive,
			reason: fmt.Sprintf("%d and %d runs: %d a side are needed", len(base), len(cur), MinSamples)}
	}
	if !positive(base) || !positive(cur) {
		return judgement{verdict: Inconclusive, reason: "a value is not positive: no ratio"}
	}
	lo, hi := logRatioInterval(base, cur, ConfidencePercent/100.0)
	low, high := math.Exp(lo), math.Exp(hi)
	j := judgement{interval: &Interval{LowPercent: 100 * (low - 1), HighPercent: 100 * (high - 1)}}
	medians := results.Summarize(cur).Median / results.Summarize(base).Median
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

// logRatioInterval is Welch's t interval, at the given two-sided level, for the difference of
// the mean logarithms of cur and base: the log of the ratio of their geometric means. Each
// run's own spread and count enter, so a noisy or short run widens it.
func logRatioInterval(base, cur []float64, level float64) (lo, hi float64) {
	mb, vb := logMeanVar(base)
	mc, vc := logMeanVar(cur)
	nb, nc := float64(len(base)), float64(len(cur))
	diff := mc - mb
	se2 := vb/nb + vc/nc
	if se2 == 0 {
		return diff, diff
	}
	// Welch–Satterthwaite degrees of freedom.
	df := se2 * se2 / ((vb/nb)*(vb/nb)/(nb-1) + (vc/nc)*(vc/nc)/(nc-1))
	half := studentTQuantile(1-(1-level)/2, df) * math.Sqrt(se2)
	return diff - half, diff + half
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

// studentTQuantile is the p-quantile (p > 0.5) of Student's t distribution with df degrees
// of freedom (any positive real, as Welch's are), found by bisection on its distribution
// function.
func studentTQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if studentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentTCDF is P(T <= t) for t >= 0.
func studentTCDF(t, df float64) float64 {
	return 1 - 0.5*regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its continued
// fraction (Numerical Recipes, 6.4), on the side of x where that converges fast.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaContinuedFraction(a, b, x) / a
	}
	return 1 - front*betaContinuedFraction(b, a, 1-x)/b
}

// betaContinuedFraction evaluates the incomplete beta's continued fraction with the
// modified Lentz method.
func betaContinuedFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	step := func(coef float64) float64 {
		d = 1 + coef*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + coef/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		return c * d
	}
	for m := 1.0; m <= 10000; m++ {
		f *= step(m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m)))
		delta := step(-(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1)))
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}
