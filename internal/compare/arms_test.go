package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// interleavedRun is one run of two arms that took turns for rounds builds: the machine's
// speed drifts from round to round by drift (CV), which both arms' builds of a round share,
// and each build strays by noise on its own. b is the second arm's true speed over the first's.
func interleavedRun(r *rand.Rand, rounds int, b, drift, noise float64) []*results.Document {
	series := make([]results.IndexingSeries, 2)
	for range rounds {
		machine := samples(r, 1, 1, drift)[0]
		for i, speed := range []float64{1, b} {
			series[i].Runs = append(series[i].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: 5000 * speed * machine * samples(r, 1, 1, noise)[0]})
		}
	}
	return twoArms(series, [][]string{{"a", "b"}})
}

// sequentialRun is one run of two arms one after the other (spec.armOrder Sequential), builds
// each: between the first arm's builds and the second's the machine's speed changed by the
// factor machine, and each build strays by noise. b is the second arm's true speed over the
// first's.
func sequentialRun(r *rand.Rand, builds int, b, machine, noise float64) []*results.Document {
	series := make([]results.IndexingSeries, 2)
	for i, speed := range []float64{1, b * machine} {
		for _, n := range samples(r, builds, 1, noise) {
			series[i].Runs = append(series[i].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: 5000 * speed * n})
		}
	}
	return twoArms(series, nil)
}

// twoArms is the results document of arms a and b with these indexing series; rounds are the
// turns the arms took (nil: none, they ran one after the other).
func twoArms(series []results.IndexingSeries, rounds [][]string) []*results.Document {
	d := &results.Document{Steps: []results.StepRecord{{QueryServer: "a", Step: "index", Rounds: rounds}}}
	for i, name := range []string{"a", "b"} {
		series[i].Reducer = "builtin"
		d.Arms = append(d.Arms, results.Arm{QueryServer: name,
			Profiles: []results.Profile{{Profile: "small", Indexing: []results.IndexingSeries{series[i]}}}})
	}
	return []*results.Document{d}
}

// judgePairs is the verdict on an arm's rounds against the reference's, paired, judged alone.
func judgePairs(ref, arm []float64, dir results.Direction, tolerance float64) judgement {
	t, reason := measurePairs(ref, arm, dir, tolerance)
	if t == nil {
		return judgement{verdict: Inconclusive, reason: reason}
	}
	return judgeFamily([]*trial{t})[0]
}

// An A/A benchmark (the same CouchDB twice, taking turns) comes out Unchanged or
// Inconclusive, whatever the machine does between rounds: at most 1% of draws say otherwise.
func TestArmsAAIsNeverAVerdict(t *testing.T) {
	const trials = 2000
	r := rand.New(rand.NewPCG(3, 3))
	alarms := 0
	for range trials {
		c, err := Arms(interleavedRun(r, 5, 1, 0.2, 0.04), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Rows) != 1 || c.Reference != "a" || !c.Interleaved {
			t.Fatalf("comparison %+v: want one row of b against a, interleaved", c)
		}
		if v := c.Rows[0].Verdict; v == Regressed || v == Improved {
			alarms++
		}
	}
	t.Logf("A/A, 5 rounds, drift 20%%, build noise 4%%: %d verdicts in %d draws", alarms, trials)
	if alarms > trials/100 {
		t.Errorf("%d of %d A/A draws gave a verdict, want at most 1%%", alarms, trials)
	}
}

// A second arm 15% slower, under a drift of 20% from round to round, 8 rounds: paired round
// by round, the drift cancels and the change is found (its minimum detectable effect is about
// 12%); the two arms' builds taken as independent samples (Welch, as two runs are compared)
// cannot tell it from the drift.
func TestArmsPairingCancelsTheDrift(t *testing.T) {
	const trials = 500
	r := rand.New(rand.NewPCG(4, 4))
	paired, unpaired := 0, 0
	for range trials {
		docs := interleavedRun(r, 8, 0.85, 0.2, 0.04)
		c, err := Arms(docs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := c.Rows[0]
		if row.Verdict == Regressed {
			paired++
		}
		if row.NBaseline != 8 || row.EstimatePercent == nil || math.Abs(*row.EstimatePercent+15) > 10 {
			t.Fatalf("row %+v: want 8 rounds paired and an estimate near -15%%", row)
		}
		ms := results.Metrics(docs...)
		if judge(ms[0].Samples, ms[1].Samples, results.HigherIsBetter, runSpread{}).verdict == Regressed {
			unpaired++
		}
	}
	t.Logf("15%% slower, 8 rounds, drift 20%%, noise 4%%: Regressed in %d of %d draws paired, %d unpaired", paired, trials, unpaired)
	if paired < trials*9/10 || unpaired > trials/2 {
		t.Errorf("Regressed in %d (paired) and %d (unpaired) of %d draws: want pairing to find it nearly always, and unpaired not",
			paired, unpaired, trials)
	}
}

// Arms in duet (spec.armOrder Duet) record no order, only that they ran together: their
// rounds pair as turns' do, so a 15% slower arm under a drift of 20% is found as in
// TestArmsPairingCancelsTheDrift, and the table says the arms ran in duet. No server.
func TestArmsInDuetArePaired(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	docs := interleavedRun(r, 8, 0.85, 0.2, 0.04)
	docs[0].Steps = []results.StepRecord{{QueryServer: "a", Step: "index", Duet: true}, {QueryServer: "b", Step: "index", Duet: true}}
	c, err := Arms(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Interleaved || !c.Duet || len(c.Rows) != 1 || c.Rows[0].Verdict != Regressed {
		t.Fatalf("comparison %+v: want one row, paired in duet, Regressed", c)
	}
	if title := c.Tables()[0].Title; !strings.Contains(title, "in duet") {
		t.Errorf("table title %q does not say the arms ran in duet", title)
	}
}

// One arm has no comparison; rows of metrics the reference lacks are left out.
func TestArmsNeedTwoArms(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	docs := interleavedRun(r, 3, 1, 0, 0.01)
	docs[0].Arms = docs[0].Arms[:1]
	if c, err := Arms(docs, Options{}); err != nil || c != nil {
		t.Errorf("one arm: %+v, %v; want none", c, err)
	}
}

// Arms that ran one after the other are two runs minutes apart, and are judged so: the
// same CouchDB twice, the machine 20% slower for the second arm's builds (on the kit, an
// A/B of 3.4.3 and 3.5.1 run Sequential read "Regressed -22.6%" where the arms taking turns
// read -1.1% [-4.7%, +2.7%] over ten runs), is not a verdict with the default spread
// between runs; paired by repetition, as they were before, it was.
func TestSequentialArmsAreJudgedAsTwoRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	docs := sequentialRun(r, 15, 1, 0.8, 0.04)
	c, err := Arms(docs, OptionsOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Interleaved || len(c.Rows) != 1 {
		t.Fatalf("comparison %+v: want one row, not interleaved", c)
	}
	row := c.Rows[0]
	if row.Verdict == Regressed || row.Verdict == Improved {
		t.Errorf("the machine 20%% slower for the second arm: %s %v; want no verdict", row.Verdict, *row.EstimatePercent)
	}
	if row.BetweenRunsPercent == nil || math.Abs(*row.BetweenRunsPercent-DefaultBetweenRunsPercent) > 1e-9 {
		t.Errorf("between runs %v; want the default %d%% assumed", row.BetweenRunsPercent, DefaultBetweenRunsPercent)
	}
	ms := results.Metrics(docs...)
	if j := judgePairs(ms[0].Samples, ms[1].Samples, results.HigherIsBetter, 0.05); j.verdict != Regressed {
		t.Errorf("paired by repetition: %s; the drift should read as a regression there", j.verdict)
	}
	// A change far beyond what runs minutes apart differ by is still found: the second arm at
	// a quarter of the speed. (Half the speed is not, with 30% between runs assumed: that is
	// what an A/B one arm after the other can tell on a busy machine.)
	c, err = Arms(sequentialRun(r, 15, 0.25, 1, 0.04), OptionsOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Rows[0].Verdict; v != Regressed {
		t.Errorf("the second arm at a quarter of the speed, one after the other: %s; want Regressed", v)
	}
}

// The one-line summary (the run's condition and status.arms) gives the change its interval is
// around, the geometric mean of the round ratios, as the arms table does; the medians' change
// can differ (on the local cluster one run's summary read -14.2% beside the table's -17.3%).
func TestArmsSummaryGivesTheChangeTheIntervalIsAround(t *testing.T) {
	series := make([]results.IndexingSeries, 2)
	for _, arm := range []float64{60, 70, 70, 70, 75} {
		series[0].Runs = append(series[0].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: 100})
		series[1].Runs = append(series[1].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: arm})
	}
	c, err := Arms(twoArms(series, [][]string{{"a", "b"}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := c.Rows[0]
	if row.Verdict != Regressed || row.DeltaPercent == nil || math.Abs(*row.DeltaPercent+30) > 0.05 {
		t.Fatalf("row %+v; want Regressed, medians -30%%", row)
	}
	// exp(mean(log .6, log .7 x3, log .75)) - 1 = -31.2%
	if got := c.Summary(); !strings.Contains(got, "changes_per_second -31.2% [") {
		t.Errorf("summary %q; want the geometric mean of the round ratios, -31.2%%", got)
	}
}
