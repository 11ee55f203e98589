package compare

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// slower is a run with every build machine times as fast: what the machine did to both arms.
func slower(docs []*results.Document, machine float64) []*results.Document {
	for _, arm := range docs[0].Arms {
		for _, s := range arm.Profiles[0].Indexing {
			for i := range s.Runs {
				s.Runs[i].DocsPerSecond *= machine
			}
		}
	}
	return docs
}

func rowOf(t *testing.T, c Comparison, arm string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.QueryServer == arm {
			return r
		}
	}
	t.Fatalf("no row of %s in %+v", arm, c.Rows)
	return Row{}
}

// Two runs of arms a and b that took turns (12 rounds, the machine drifting 20% from round to
// round, 4% noise per build), the current run on a machine 30% slower: the arms' own rows
// cannot tell that from a change (runs assumed to differ by 30%), and are unmeasurable; b's
// ratio to a, compared run against run, leaves the machine out. With b unchanged it gives no
// verdict (nor Unchanged: two runs cannot tell ±5%); with b at 0.6 of a it is Regressed, at the measured default spread of a ratio;
// b at 0.8 of a needs the ratio's own history (ten runs at 2%), which the row then names.
// (Pure simulation, fixed seeds.)
func TestTwoRunsWithAReferenceCompareTheirRatios(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 5))
	opts := OptionsOf(nil)
	for _, c := range []struct {
		b       float64
		history []float64
		want    Verdict
	}{{1, nil, Inconclusive}, {0.6, nil, Regressed}, {0.8, nil, Inconclusive},
		{0.8, []float64{1, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1, 1.02, 0.98}, Regressed}} {
		opts.History = map[string][]float64{"b:a/small/indexing/builtin/changes_per_second": c.history}
		cmp, err := Compare(interleavedRun(r, 12, 1, 0.2, 0.04), slower(interleavedRun(r, 12, c.b, 0.2, 0.04), 0.7), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(cmp.Rows) != 3 || cmp.Judged != 3 || cmp.Sharper != "" {
			t.Fatalf("b at %v: rows %+v, %d judged, sharper %q; want a's, b's and b's ratio to a, judged", c.b, cmp.Rows, cmp.Judged, cmp.Sharper)
		}
		for _, own := range []string{"a", "b"} {
			if row := rowOf(t, cmp, own); row.Verdict != Inconclusive || !strings.Contains(row.Unmeasurable, "runs differ by 30% (assumed") {
				t.Errorf("b at %v: %s's own row %s %q; want unmeasurable at 30%% assumed", c.b, own, row.Verdict, row.Unmeasurable)
			}
		}
		ratio := rowOf(t, cmp, "b:a")
		if ratio.Verdict != c.want || ratio.Reference != "a" || ratio.MinDetectablePercent == nil || ratio.Interval == nil {
			t.Errorf("b at %v, history %v: b's ratio to a %s (%s), MDE %v; want %s with an interval and an MDE", c.b, c.history,
				ratio.Verdict, ratio.Reason, ratio.MinDetectablePercent, c.want)
			continue
		}
		spread, runs := DefaultRatioBetweenRunsPercent, 0
		if c.history != nil {
			_, v := logMeanVar(c.history)
			spread, runs = 100*(math.Exp(math.Sqrt(v))-1), len(c.history)
		}
		if math.Abs(*ratio.BetweenRunsPercent-spread) > 1e-9 || ratio.HistoryRuns != runs {
			t.Errorf("b at %v: the ratio's run-to-run spread %.2f%% over %d runs; want %.2f%% over %d", c.b,
				*ratio.BetweenRunsPercent, ratio.HistoryRuns, spread, runs)
		}
		t.Logf("b at %v of a, history %d runs: %s %+.1f%% [%+.1f%%, %+.1f%%] at %v%%, MDE %.1f%%", c.b, runs, ratio.Verdict,
			*ratio.EstimatePercent, ratio.Interval.LowPercent, ratio.Interval.HighPercent, ratio.ConfidencePercent, *ratio.MinDetectablePercent)
	}
}

// The ratio rows key the history as RatioKey does, and runs whose first arms differ compare
// no ratio, and say so.
func TestRatiosNeedTheSameReference(t *testing.T) {
	if got := RatioKey(Row{QueryServer: "cand", Profile: "small", Workload: "indexing", Variant: "builtin", Metric: "changes_per_second"}, "ref"); got != "cand:ref/small/indexing/builtin/changes_per_second" {
		t.Errorf("RatioKey %q", got)
	}
	r := rand.New(rand.NewPCG(25, 6))
	cur := interleavedRun(r, 5, 1, 0.2, 0.04)
	cur[0].Arms[0].QueryServer = "c"
	c, err := Compare(interleavedRun(r, 5, 1, 0.2, 0.04), cur, OptionsOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range c.Rows {
		if row.Reference != "" {
			t.Errorf("ratio row %+v between runs of other references", row)
		}
	}
	if !strings.Contains(strings.Join(c.Unmatched, "\n"), "the arms' ratios: the baseline's reference arm is a, the current run's c") {
		t.Errorf("unmatched %q", c.Unmatched)
	}
}

// A history of wildly differing runs (a loaded run among them) and an assumed 30% give no
// numbers no one can use: the row says what made it unmeasurable instead of an interval of
// millions of percent. A comparison of one arm says what would make it sharper.
func TestUnmeasurableRowsSayWhy(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 7))
	one := func() []*results.Document {
		docs := interleavedRun(r, 5, 1, 0.02, 0.02)
		docs[0].Arms, docs[0].Steps = docs[0].Arms[:1], nil
		return docs
	}
	loaded := Options{BetweenRunsPercent: 30, History: map[string][]float64{"a/small/indexing/builtin/changes_per_second": {5000, 40, 6000, 300}}}
	c, err := Compare(one(), one(), loaded)
	if err != nil {
		t.Fatal(err)
	}
	row := c.Rows[0]
	if row.Interval != nil || row.MinDetectablePercent != nil || row.Verdict != Inconclusive ||
		!strings.HasPrefix(row.Unmeasurable, "unmeasurable: runs differ by ") || !strings.HasSuffix(row.Unmeasurable, "as only 4 earlier runs show: too few to know") {
		t.Errorf("row %+v; want no interval or MDE, and why", row)
	}
	if cell := c.Tables()[0].Rows[0][9]; cell != row.Unmeasurable {
		t.Errorf("interval cell %q; want %q", cell, row.Unmeasurable)
	}
	if c.Sharper != "" {
		t.Errorf("sharper %q with a measured spread; want none", c.Sharper)
	}

	c, err = Compare(one(), one(), OptionsOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Rows[0].Unmeasurable; u != "unmeasurable: runs differ by 30% (assumed, no earlier runs)" {
		t.Errorf("unmeasurable %q", u)
	}
	n := historyFor((1 - ConfidencePercent/100.0) / 2)
	if n <= MinHistory || !strings.Contains(c.Sharper, "Sharper with a reference arm") ||
		!strings.Contains(c.Sharper, "differs by about 5.1%") || !strings.Contains(c.Sharper, "or with "+strconv.Itoa(n)+" earlier runs") {
		t.Errorf("sharper %q; want a reference arm or %d earlier runs", c.Sharper, n)
	}
	t.Logf("%s", c.Sharper)
}

// The arms' table shows the medians of the rounds both arms measured and their change, beside
// the change the interval is around (the geometric mean of the round ratios), each in a
// column of its own: skewed rounds under a swinging load can put them far apart, as in
// "Change +0.1%" beside medians of 1.302 and 0.7043. The reference's rounds the arm lacks are
// left out of its medians.
func TestArmsTableSaysWhichChangeIsWhich(t *testing.T) {
	series := make([]results.IndexingSeries, 2)
	for i, rates := range [][]float64{{0.5, 0.6, 1.302, 1.4, 1.5, 9, 9}, {0.6, 0.7, 0.7043, 1.6, 1.8}} {
		for _, v := range rates {
			series[i].Runs = append(series[i].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: v})
		}
	}
	c, err := Arms(twoArms(series, [][]string{{"a", "b"}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := c.Rows[0]
	if row.Baseline != 1.302 || row.Current != 0.7043 || row.NCurrent != 5 || math.Abs(*row.DeltaPercent+45.9) > 0.05 ||
		math.Abs(*row.EstimatePercent-0.8) > 0.05 || row.Verdict != Inconclusive {
		t.Errorf("row %+v; want medians 1.302 and 0.7043 of 5 rounds (-45.9%%), change +0.8%%, Inconclusive", row)
	}
	table := c.Tables()[0]
	if want := []string{"a median", "Arm median", "Medians' change", "Change"}; strings.Join(table.Header[5:9], "|") != strings.Join(want, "|") ||
		table.Rows[0][7] != "-45.9%" || table.Rows[0][8] != "+0.8%" {
		t.Errorf("header %q, row %q", table.Header, table.Rows[0])
	}
}
