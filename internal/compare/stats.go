package compare

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/couchbench/couchbench/internal/results"
)

// MinSamples is the fewest repetitions per run a metric needs to be judged. Two values give
// one difference, no estimate of the spread worth the name; with three a side the interval
// below is finite, and wide unless the runs are tight.
const MinSamples = 3

// ConfidencePercent is the family-wise level of a table's verdicts: with nothing changed
// beyond the tolerances, all its judged rows together give a false verdict at most
// 100 - ConfidencePercent percent of the time, however many rows there are.
const ConfidencePercent = 99

// judgement is a metric's verdict and what it rests on.
type judgement struct {
	verdict Verdict
	// estimate is the change the interval is around, in percent.
	estimate *float64
	interval *Interval
	// level is the interval's two-sided level, in percent.
	level float64
	// minDetectable is the smallest change, in percent, that the verdict would have called
	// Regressed or Improved at least 4 times in 5 (nil when the samples allow no interval).
	minDetectable *float64
	reason        string
	// unmeasurable says what made the interval too wide to mean anything (see unmeasurableMDE).
	unmeasurable string
}

// change is an estimate of a metric's change as the logarithm of a ratio, with its standard
// error and degrees of freedom: what a verdict, its interval and the smallest change it can
// tell rest on, wherever the estimate comes from (two runs, an arm's rounds against another's,
// two runs' arm ratios, or two runs widened by the history of runs before them).
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
	return combine(change{est: -mb, se: math.Sqrt(vb / nb), df: nb - 1}, change{est: mc, se: math.Sqrt(vc / nc), df: nc - 1})
}

// combine is the sum of two independent estimates, with the Welch–Satterthwaite degrees of
// freedom of their standard errors.
func combine(a, b change) change {
	va, vb := a.se*a.se, b.se*b.se
	c := change{est: a.est + b.est, se: math.Sqrt(va + vb), df: assumedDF}
	if va+vb > 0 {
		c.df = (va + vb) * (va + vb) / (va*va/a.df + vb*vb/b.df)
	}
	return c
}

// paired estimates the log of the geometric mean of the round ratios, with the paired
// standard error and n - 1 degrees of freedom.
func paired(ratios []float64) change {
	m, v := logMeanVar(ratios)
	n := float64(len(ratios))
	return change{est: m, se: math.Sqrt(v / n), df: n - 1}
}

// quantile is Student's t p-quantile, 0 for a change known exactly.
func (c change) quantile(p float64) float64 {
	if c.se == 0 {
		return 0
	}
	return studentT(c.df).Quantile(p) * c.se
}

// studentT is Student's t distribution at df degrees of freedom (any positive real, as
// Welch's are).
func studentT(df float64) distuv.StudentsT { return distuv.StudentsT{Sigma: 1, Nu: df} }

// detectPower is how often a change of the minimum detectable size is called: 4 times in 5.
const detectPower = 0.8

// unmeasurableMDE is the minimum detectable effect beyond which a row's interval and MDE are
// not given as numbers: a row that cannot tell its metric doubled (or a rate halved) measures
// nothing a benchmark is run for, and its bounds only mirror the noise.
const unmeasurableMDE = 1.0

// trial is a row's estimated change, waiting for the level its table's family gives it.
type trial struct {
	c change
	// medians is the ratio of the headline values, which a verdict must agree with.
	medians   float64
	dir       results.Direction
	tolerance float64 // a fraction: 0.05 for 5%
	// floor is the run-to-run spread that set c's standard error (nil: the samples' own
	// spread did).
	floor *runSpread
	// noise says what the samples' own spread was, should that make the row unmeasurable.
	noise string
}

// measure is the trial of two runs' samples: the ratio of their geometric means, its
// standard error floored by a run-to-run spread (sd 0: none), as two runs' medians each stray
// from the metric's level by that much. A reason instead when they cannot be judged.
func measure(base, cur []float64, dir results.Direction, tolerance float64, spread runSpread) (*trial, string) {
	if len(base) < MinSamples || len(cur) < MinSamples {
		return nil, fmt.Sprintf("%d and %d runs: %d a side are needed", len(base), len(cur), MinSamples)
	}
	if !positive(base) || !positive(cur) {
		return nil, "a value is not positive: no ratio"
	}
	_, vb := logMeanVar(base)
	_, vc := logMeanVar(cur)
	t := &trial{c: welch(base, cur), medians: results.Summarize(cur).Median / results.Summarize(base).Median,
		dir: dir, tolerance: tolerance,
		noise: fmt.Sprintf("the repetitions spread by %s and %s (%d and %d of them)", cv(math.Sqrt(vb)), cv(math.Sqrt(vc)), len(base), len(cur))}
	t.floorAt(spread)
	return t, ""
}

// floorAt floors the trial's standard error at what two runs differing by spread give.
func (t *trial) floorAt(spread runSpread) {
	if floor := spread.sd * math.Sqrt2; floor > t.c.se {
		t.c.se, t.c.df, t.floor = floor, spread.df, &spread
	}
}

// pValue is the one-sided p-value of the change lying beyond the tolerance band on the side
// of its estimate: at most level a exactly when the interval of one-sided level a on that
// side clears the band.
func (t *trial) pValue() float64 {
	beyond := max(t.c.est-math.Log1p(t.tolerance), lowEdge(t.tolerance)-t.c.est)
	switch {
	case beyond <= 0:
		return 1
	case t.c.se == 0:
		return 0
	}
	return studentT(t.c.df).Survival(beyond / t.c.se)
}

// lowEdge is the log of the band's lower edge; a tolerance of 100% or more has none.
func lowEdge(tolerance float64) float64 {
	if tolerance >= 1 {
		return math.Inf(-1)
	}
	return math.Log(1 - tolerance)
}

// judgeFamily gives the verdicts of a table's judged rows together, at the family-wise
// ConfidencePercent, by Holm's step-down procedure. Each row holds two one-sided hypotheses,
// "not beyond the band above" and "not beyond it below"; Holm tests their p-values from the
// smallest, the i-th at alpha / (2m - i + 1), and stops at the first that fails. A rejected
// row's interval is at the level it was rejected at, and clears the band; every other row's
// interval is at the level of the step that failed, alpha / (2m - r) a side with r rejected,
// which with the rejections holds at the family's level (Strassburger and Bretz's compatible
// bounds for Holm, 2008): so an Unchanged verdict shares the budget too. One row is judged at
// ConfidencePercent, as before there were families.
func judgeFamily(trials []*trial) []judgement {
	alpha := 1 - ConfidencePercent/100.0
	hypotheses := 2 * len(trials)
	p := make([]float64, len(trials))
	order := make([]int, len(trials))
	for i, t := range trials {
		p[i], order[i] = t.pValue(), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(p[a], p[b]) })
	side := make([]float64, len(trials))
	rejected := 0
	for _, i := range order {
		a := alpha / float64(hypotheses-rejected)
		if p[i] > a {
			break
		}
		side[i] = a
		rejected++
	}
	out := make([]judgement, len(trials))
	rest := alpha / float64(hypotheses-rejected)
	for i, t := range trials {
		if side[i] == 0 {
			side[i] = rest
		}
		out[i] = t.judgeAt(side[i])
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// judgeAt applies the package's rule at one-sided level a: Regressed or Improved when the
// interval and the medians' ratio both lie beyond the tolerance band on one side, Unchanged
// when both lie within it, Inconclusive otherwise, and unmeasurable when nothing that could
// be meant would have been seen.
func (t *trial) judgeAt(a float64) judgement {
	half := t.c.quantile(1 - a)
	low, high := math.Exp(t.c.est-half), math.Exp(t.c.est+half)
	mde := math.Exp(math.Log1p(t.tolerance)+half+t.c.quantile(detectPower)) - 1
	// The level to four decimals: 99.95, not 99.94999999999999.
	est, level := 100*(math.Exp(t.c.est)-1), math.Round(1e6*(1-2*a))/1e4
	j := judgement{estimate: &est, level: level}
	floor, ceiling := 1-t.tolerance, 1+t.tolerance
	down, up := high < floor, low > ceiling
	switch {
	case down && t.medians < floor, up && t.medians > ceiling:
		// Falling is worse for a rate, better for a latency.
		if down == (t.dir == results.HigherIsBetter) {
			j.verdict = Regressed
		} else {
			j.verdict = Improved
		}
	case low >= floor && high <= ceiling && t.medians >= floor && t.medians <= ceiling:
		j.verdict = Unchanged
	case mde > unmeasurableMDE:
		j.verdict, j.reason, j.unmeasurable = Inconclusive, "unmeasurable", t.unmeasurable(a)
		return j
	case down || up || (low >= floor && high <= ceiling):
		// Only outliers separate the medians from the means this far.
		j.verdict, j.reason = Inconclusive, "the medians and the interval disagree (outliers)"
	default:
		j.verdict, j.reason = Inconclusive, fmt.Sprintf("the interval reaches across ±%s: spread too large to tell", percent(100*t.tolerance))
	}
	mdePercent := 100 * mde
	j.interval, j.minDetectable = &Interval{LowPercent: 100 * (low - 1), HighPercent: 100 * (high - 1)}, &mdePercent
	return j
}

// unmeasurable says what made the row's interval too wide: how much runs differ, measured or
// assumed, or the samples' own spread.
func (t *trial) unmeasurable(a float64) string {
	s := t.floor
	switch {
	case s == nil:
		return "unmeasurable: " + t.noise
	case s.runs == 0:
		return fmt.Sprintf("unmeasurable: runs differ by %s (assumed, no earlier runs)", cv(s.sd))
	case studentT(s.df).Quantile(1-a) > 2*studentT(assumedDF).Quantile(1-a):
		return fmt.Sprintf("unmeasurable: runs differ by %s, as only %d earlier runs show: too few to know", cv(s.sd), s.runs)
	}
	return fmt.Sprintf("unmeasurable: runs differ by %s (%d earlier runs)", cv(s.sd), s.runs)
}

// cv is a standard deviation of logarithms as a coefficient of variation, "12%".
func cv(sd float64) string { return fmt.Sprintf("%.0f%%", 100*(math.Exp(sd)-1)) }

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
	logs := make([]float64, len(values))
	for i, v := range values {
		logs[i] = math.Log(v)
	}
	return stat.MeanVariance(logs, nil)
}
