package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/results"
)

func TestStudentTQuantileMatchesTables(t *testing.T) {
	// Two-sided 99% and 95% critical values from standard t tables.
	for _, c := range []struct{ p, df, want float64 }{
		{0.995, 1, 63.657},
		{0.995, 2, 9.925},
		{0.995, 4, 4.604},
		{0.995, 8, 3.355},
		{0.995, 30, 2.750},
		{0.995, 1000, 2.581},
		{0.975, 10, 2.228},
		{0.975, 3, 3.182},
	} {
		if got := studentTQuantile(c.p, c.df); math.Abs(got-c.want) > 0.001 {
			t.Errorf("t quantile %v with %v df = %.4f, want %.3f", c.p, c.df, got, c.want)
		}
	}
	// Welch's degrees of freedom are not whole numbers: the quantile falls between.
	if q := studentTQuantile(0.995, 2.5); q <= 4.604 || q >= 9.925 {
		t.Errorf("t quantile with 2.5 df = %v, want between those of 4 and 2 df", q)
	}
}

// samples draws n values around median with the given coefficient of variation
// (log-normal, as rates and times are: positive, and skewed to the slow side).
func samples(r *rand.Rand, n int, median, cv float64) []float64 {
	sigma := math.Sqrt(math.Log(1 + cv*cv))
	out := make([]float64, n)
	for i := range out {
		out[i] = median * math.Exp(sigma*r.NormFloat64())
	}
	return out
}

func TestJudge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name      string
		base, cur []float64
		dir       results.Direction
		want      Verdict
		reason    string
	}{
		{"a rate 20% lower, 3% CV, 5 runs each", samples(r, 5, 10000, 0.03), samples(r, 5, 8000, 0.03), results.HigherIsBetter, Regressed, ""},
		{"a rate 20% higher", samples(r, 5, 10000, 0.03), samples(r, 5, 12000, 0.03), results.HigherIsBetter, Improved, ""},
		{"a latency 20% higher", samples(r, 5, 0.5, 0.03), samples(r, 5, 0.6, 0.03), results.LowerIsBetter, Regressed, ""},
		{"a latency 20% lower", samples(r, 5, 0.5, 0.03), samples(r, 5, 0.4, 0.03), results.LowerIsBetter, Improved, ""},
		{"3 tight runs each, 20% lower", samples(r, 3, 10000, 0.01), samples(r, 3, 8000, 0.01), results.HigherIsBetter, Regressed, ""},
		{"2% lower, 1% CV: within 5%", samples(r, 5, 10000, 0.01), samples(r, 5, 9800, 0.01), results.HigherIsBetter, Unchanged, ""},
		{"20% lower but 20% CV, 3 runs each", samples(r, 3, 10000, 0.2), samples(r, 3, 8000, 0.2), results.HigherIsBetter, Inconclusive, "spread too large"},
		{"one run each (k6, writes)", []float64{100}, []float64{50}, results.HigherIsBetter, Inconclusive, "1 and 1 runs: 3 a side"},
		{"two runs each", []float64{100, 101}, []float64{50, 51}, results.HigherIsBetter, Inconclusive, "2 and 2 runs"},
		{"an error rate of 0", []float64{0, 0, 0}, []float64{0, 0.1, 0}, results.LowerIsBetter, Inconclusive, "not positive"},
		// 9 of 20 runs at half speed: the means fell, the medians did not.
		{"outliers", repeat(20, 100), append(repeat(11, 100), repeat(9, 50)...), results.HigherIsBetter, Inconclusive, "disagree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := judge(c.base, c.cur, c.dir, 0.05)
			if j.verdict != c.want || !strings.Contains(j.reason, c.reason) || (c.reason == "") != (j.reason == "") {
				t.Errorf("verdict %s (%q), want %s (%q); interval %+v", j.verdict, j.reason, c.want, c.reason, j.interval)
			}
			if (j.interval == nil) != (len(c.base) < MinSamples || strings.Contains(c.reason, "not positive")) {
				t.Errorf("interval %+v", j.interval)
			}
		})
	}
}

func repeat(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		// A little spread, so that the interval is not a point.
		out[i] = v * (1 + 0.001*float64(i%3))
	}
	return out
}

// stalled draws n values at half the CV, of which about 15% are slowed to 0.6x: runs that
// shared the machine with a burst of other work, the skewed noise of a loaded 2-core machine.
func stalled(r *rand.Rand, n int, median, cv float64) []float64 {
	out := samples(r, n, median, cv/2)
	for i := range out {
		if r.Float64() < 0.15 {
			out[i] *= 0.6
		}
	}
	return out
}

// TestNoiseRarelyGivesAVerdict runs the rule on pure noise — both runs drawn from the same
// distribution at CVs seen on a loaded 2-core machine — and bounds the false alarms (Regressed
// or Improved) at 1% per metric: the 99% interval misses on either side at most 0.5% of the
// time. The naive rule on the same samples (medians more than 5% apart) shows the bound is
// not trivially met.
func TestNoiseRarelyGivesAVerdict(t *testing.T) {
	const trials, bound = 10000, 0.01
	for _, noise := range []struct {
		name string
		draw func(r *rand.Rand, n int, median, cv float64) []float64
	}{{"log-normal", samples}, {"stalls", stalled}} {
		for _, c := range []struct {
			n  int
			cv float64
		}{{5, 0.20}, {5, 0.10}, {3, 0.26}, {4, 0.26}, {5, 0.26}} {
			r := rand.New(rand.NewPCG(uint64(c.n), uint64(100*c.cv)))
			alarms, naive := 0, 0
			for range trials {
				base, cur := noise.draw(r, c.n, 1000, c.cv), noise.draw(r, c.n, 1000, c.cv)
				if v := judge(base, cur, results.HigherIsBetter, 0.05).verdict; v == Regressed || v == Improved {
					alarms++
				}
				if d := results.Summarize(cur).Median/results.Summarize(base).Median - 1; math.Abs(d) > 0.05 {
					naive++
				}
			}
			rate, naiveRate := float64(alarms)/trials, float64(naive)/trials
			t.Logf("%s n=%d CV %.0f%%: %d false alarms in %d trials (%.2f%%); naive rule %.1f%%",
				noise.name, c.n, 100*c.cv, alarms, trials, 100*rate, 100*naiveRate)
			if rate > bound {
				t.Errorf("%s n=%d CV %.0f%%: false-alarm rate %.2f%% above %.0f%%", noise.name, c.n, 100*c.cv, 100*rate, 100*bound)
			}
			if naiveRate < 0.25 {
				t.Errorf("%s n=%d CV %.0f%%: the naive rule flagged only %.1f%%: the noise is too weak to test the rule",
					noise.name, c.n, 100*c.cv, 100*naiveRate)
			}
		}
	}
}

// TestClearRegressionsAreFound: a 20% drop at 3% CV is Regressed in (nearly) every draw.
func TestClearRegressionsAreFound(t *testing.T) {
	const trials = 1000
	r := rand.New(rand.NewPCG(7, 7))
	found := 0
	for range trials {
		if judge(samples(r, 5, 1000, 0.03), samples(r, 5, 800, 0.03), results.HigherIsBetter, 0.05).verdict == Regressed {
			found++
		}
	}
	t.Logf("20%% drop, 3%% CV, 5 runs each: Regressed in %d of %d draws", found, trials)
	if found < trials*99/100 {
		t.Errorf("Regressed in %d of %d draws, want at least 99%%", found, trials)
	}
}
