package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/results"
)

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

// judge is the verdict on one metric's samples judged alone, at the default tolerance: a
// family of one, at ConfidencePercent.
func judge(base, cur []float64, dir results.Direction, spread runSpread) judgement {
	t, reason := measure(base, cur, dir, DefaultTolerancePercent/100.0, spread)
	if t == nil {
		return judgement{verdict: Inconclusive, reason: reason}
	}
	return judgeFamily([]*trial{t})[0]
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
		{"20% lower but 10% CV, 3 runs each", samples(r, 3, 10000, 0.1), samples(r, 3, 8000, 0.1), results.HigherIsBetter, Inconclusive, "spread too large"},
		// Its interval would reach from about half to about twice the baseline.
		{"20% lower but 20% CV, 3 runs each", samples(r, 3, 10000, 0.2), samples(r, 3, 8000, 0.2), results.HigherIsBetter, Inconclusive, "unmeasurable"},
		{"one run each (k6, writes)", []float64{100}, []float64{50}, results.HigherIsBetter, Inconclusive, "1 and 1 runs: 3 a side"},
		{"two runs each", []float64{100, 101}, []float64{50, 51}, results.HigherIsBetter, Inconclusive, "2 and 2 runs"},
		{"an error rate of 0", []float64{0, 0, 0}, []float64{0, 0.1, 0}, results.LowerIsBetter, Inconclusive, "not positive"},
		// 9 of 20 runs at half speed: the means fell, the medians did not.
		{"outliers", repeat(20, 100), append(repeat(11, 100), repeat(9, 50)...), results.HigherIsBetter, Inconclusive, "disagree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := judge(c.base, c.cur, c.dir, runSpread{})
			if j.verdict != c.want || !strings.Contains(j.reason, c.reason) || (c.reason == "") != (j.reason == "") {
				t.Errorf("verdict %s (%q), want %s (%q); interval %+v", j.verdict, j.reason, c.want, c.reason, j.interval)
			}
			if (j.interval == nil) != (len(c.base) < MinSamples || strings.Contains(c.reason, "not positive") || c.reason == "unmeasurable") {
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
				if v := judge(base, cur, results.HigherIsBetter, runSpread{}).verdict; v == Regressed || v == Improved {
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
		if judge(samples(r, 5, 1000, 0.03), samples(r, 5, 800, 0.03), results.HigherIsBetter, runSpread{}).verdict == Regressed {
			found++
		}
	}
	t.Logf("20%% drop, 3%% CV, 5 runs each: Regressed in %d of %d draws", found, trials)
	if found < trials*99/100 {
		t.Errorf("Regressed in %d of %d draws, want at least 99%%", found, trials)
	}
}

// runs draws a run's 5 repetitions: its level strays from median by between (CV) from run
// to run, its repetitions by within around its level: runs minutes apart on a shared machine.
func runs(r *rand.Rand, median, between, within float64) []float64 {
	return samples(r, 5, samples(r, 1, median, between)[0], within)
}

// Runs minutes apart differ by more than their repetitions do (on these machines 12-21% CV
// against a few percent). On unchanged runs, the rule on the runs' own spreads alone flags
// many; with the spread of ten earlier runs (the history a schedule keeps) it flags at most
// 1%, as with one run's noise.
func TestHistoryKeepsBetweenRunNoiseFromVerdicts(t *testing.T) {
	const trials, bound = 4000, 0.01
	r := rand.New(rand.NewPCG(11, 11))
	alarms, without := 0, 0
	for range trials {
		var history []float64
		for range 10 {
			history = append(history, results.Summarize(runs(r, 1000, 0.15, 0.04)).Median)
		}
		_, v := logMeanVar(history)
		spread := runSpread{sd: math.Sqrt(v), df: 9, runs: 10}
		base, cur := runs(r, 1000, 0.15, 0.04), runs(r, 1000, 0.15, 0.04)
		if v := judge(base, cur, results.HigherIsBetter, spread).verdict; v == Regressed || v == Improved {
			alarms++
		}
		if v := judge(base, cur, results.HigherIsBetter, runSpread{}).verdict; v == Regressed || v == Improved {
			without++
		}
	}
	t.Logf("between-run CV 15%%, within 4%%: false alarms %d of %d with the history, %d without", alarms, trials, without)
	if rate := float64(alarms) / trials; rate > bound {
		t.Errorf("false-alarm rate with the history %.2f%%, above %.0f%%", 100*rate, 100*bound)
	}
	if rate := float64(without) / trials; rate < 0.25 {
		t.Errorf("without the history only %.1f%% false alarms: the noise is too weak to test the history", 100*rate)
	}
}

// A change as large as a row's minimum detectable effect is called at least about 4 times in
// 5 (the power it is defined by), and one half as large far less often.
func TestMinimumDetectableEffectIsWhatGetsDetected(t *testing.T) {
	const trials = 2000
	r := rand.New(rand.NewPCG(5, 5))
	spread := runSpread{sd: math.Log1p(0.08), df: 9, runs: 10}
	// The MDE of the setting, from one draw's standard error (the floor dominates here).
	j := judge(runs(r, 1000, 0.08, 0.03), runs(r, 1000, 0.08, 0.03), results.HigherIsBetter, spread)
	mde := *j.minDetectable / 100
	rate := func(change float64) float64 {
		found := 0
		for range trials {
			base, cur := runs(r, 1000, 0.08, 0.03), runs(r, 1000/(1+change), 0.08, 0.03)
			if judge(base, cur, results.HigherIsBetter, spread).verdict == Regressed {
				found++
			}
		}
		return float64(found) / trials
	}
	atMDE, atHalf := rate(mde), rate(mde/2)
	t.Logf("between-run CV 8%% with 10 runs of history: MDE %.1f%%; detected %.0f%% at it, %.0f%% at half", 100*mde, 100*atMDE, 100*atHalf)
	if atMDE < 0.7 || atHalf > 0.3 {
		t.Errorf("a change of the MDE (%.1f%%) was called in %.0f%% of draws, half of it in %.0f%%: want about 80%% and far less",
			100*mde, 100*atMDE, 100*atHalf)
	}
}
