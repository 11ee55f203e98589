package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
)

// interleavedRun is one run of two arms that took turns for rounds builds: the machine's
// speed drifts from round to round by drift (CV), which both arms' builds of a round share,
// and each build strays by noise on its own. b is the second arm's true speed over the first's.
func interleavedRun(r *rand.Rand, rounds int, b, drift, noise float64) []*results.Document {
	arms := []results.Arm{{QueryServer: "a"}, {QueryServer: "b"}}
	series := make([]results.IndexingSeries, 2)
	for range rounds {
		machine := samples(r, 1, 1, drift)[0]
		for i, speed := range []float64{1, b} {
			rate := 5000 * speed * machine * samples(r, 1, 1, noise)[0]
			series[i].Reducer = "builtin"
			series[i].Runs = append(series[i].Runs, indexing.Run{Documents: 10000, DocsPerSecond: rate})
		}
	}
	d := &results.Document{Steps: []results.StepRecord{{QueryServer: "a", Step: "index", Rounds: [][]string{{"a", "b"}}}}}
	for i := range arms {
		arms[i].Profiles = []results.Profile{{Profile: "small", Indexing: []results.IndexingSeries{series[i]}}}
	}
	d.Arms = arms
	return []*results.Document{d}
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
		if judge(ms[0].Samples, ms[1].Samples, results.HigherIsBetter, 0.05, runSpread{}).verdict == Regressed {
			unpaired++
		}
	}
	t.Logf("15%% slower, 8 rounds, drift 20%%, noise 4%%: Regressed in %d of %d draws paired, %d unpaired", paired, trials, unpaired)
	if paired < trials*9/10 || unpaired > trials/2 {
		t.Errorf("Regressed in %d (paired) and %d (unpaired) of %d draws: want pairing to find it nearly always, and unpaired not",
			paired, unpaired, trials)
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
