package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// manyRows is one run of arms a and b that took turns for 8 rounds of builds of each of rows
// indexing series (variants r00, r01, ...): each round's machine speed, shared by both arms'
// builds, drifts by 20% (CV), and each build strays by 4%. change(i) is b's true speed over
// a's in row i.
func manyRows(r *rand.Rand, rows int, change func(row int) float64) []*results.Document {
	const rounds, drift, noise = 8, 0.2, 0.04
	series := [2][]results.IndexingSeries{}
	for i := range rows {
		for arm := range series {
			series[arm] = append(series[arm], results.IndexingSeries{Reducer: fmt.Sprintf("r%02d", i)})
		}
	}
	for range rounds {
		machine := samples(r, 1, 1, drift)[0]
		for i := range rows {
			for arm, speed := range []float64{1, change(i)} {
				rate := 5000 * speed * machine * samples(r, 1, 1, noise)[0]
				series[arm][i].Runs = append(series[arm][i].Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: rate})
			}
		}
	}
	d := &results.Document{Steps: []results.StepRecord{{QueryServer: "a", Step: "index", Rounds: [][]string{{"a", "b"}}}}}
	for arm, name := range []string{"a", "b"} {
		d.Arms = append(d.Arms, results.Arm{QueryServer: name, Profiles: []results.Profile{{Profile: "small", Indexing: series[arm]}}})
	}
	return []*results.Document{d}
}

// alarms counts the rows that gave a verdict of a change.
func alarms(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Verdict == Regressed || r.Verdict == Improved {
			n++
		}
	}
	return n
}

// aloneAlarms tells whether any row of a run's arms, each judged alone at ConfidencePercent
// with the given tolerance, gives a verdict of a change: the rule before families.
func aloneAlarms(docs []*results.Document, tolerance float64) bool {
	for _, p := range armsOf(docs).pairs {
		if v := judgePairs(p.ref.Samples, p.arm.Samples, p.arm.Direction, tolerance).verdict; v == Regressed || v == Improved {
			return true
		}
	}
	return false
}

// Twenty rows of pure noise, every row's true change exactly at the edge of its band
// (tolerance 0, the hardest case for the level: noise either way is "beyond" it). The share
// of runs with any false verdict stays within the family's 1%, with a margin of three
// standard errors of the simulation; each row judged alone at 99%, as before families, gives
// one run in several a false verdict. Arms of an interleaved run, 8 rounds, the machine
// drifting 20% from round to round and 4% noise per build; fixed seeds.
func TestTwentyRowsHoldTheFamilyLevel(t *testing.T) {
	const runs, rows = 2000, 20
	r := rand.New(rand.NewPCG(25, 1))
	opts := Options{Tolerances: map[string]float64{"indexing": 0}}
	together, alone := 0, 0
	for range runs {
		docs := manyRows(r, rows, func(int) float64 { return 1 })
		c, err := Arms(docs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Rows) != rows || c.Judged != rows {
			t.Fatalf("%d rows, %d judged; want %d of each", len(c.Rows), c.Judged, rows)
		}
		if alarms(c.Rows) > 0 {
			together++
		}
		if aloneAlarms(docs, 0) {
			alone++
		}
	}
	level := 1 - ConfidencePercent/100.0
	se := math.Sqrt(level * (1 - level) / runs)
	got, gotAlone := float64(together)/runs, float64(alone)/runs
	t.Logf("%d rows of noise at the band's edge: a false verdict in %.2f%% of %d runs judged together, %.1f%% judged row by row",
		rows, 100*got, runs, 100*gotAlone)
	if got > level+3*se {
		t.Errorf("a false verdict in %.2f%% of runs, above the family's %.0f%% by more than 3 standard errors (%.2f%%)", 100*got, 100*level, 100*se)
	}
	if gotAlone < 0.1 {
		t.Errorf("row by row only %.1f%% of runs had a false verdict: the noise is too weak to test the family", 100*gotAlone)
	}
}

// The same twenty rows at the band's edge with stalls, as on a loaded machine: about one build
// in seven of either arm at 0.6x its speed, on top of 4% noise. Heavy tails do not lift the
// share of runs with a false verdict above the family's level.
func TestTwentyRowsOfStallsHoldTheFamilyLevel(t *testing.T) {
	const runs, rows = 2000, 20
	r := rand.New(rand.NewPCG(25, 2))
	together, alone := 0, 0
	for range runs {
		docs := manyRows(r, rows, func(int) float64 { return 1 })
		for _, arm := range docs[0].Arms {
			for _, s := range arm.Profiles[0].Indexing {
				for i := range s.Runs {
					if r.Float64() < 0.15 {
						s.Runs[i].DocsPerSecond *= 0.6
					}
				}
			}
		}
		c, err := Arms(docs, Options{Tolerances: map[string]float64{"indexing": 0}})
		if err != nil {
			t.Fatal(err)
		}
		if alarms(c.Rows) > 0 {
			together++
		}
		if aloneAlarms(docs, 0) {
			alone++
		}
	}
	level := 1 - ConfidencePercent/100.0
	se := math.Sqrt(level * (1 - level) / runs)
	got := float64(together) / runs
	t.Logf("%d rows with stalls: a false verdict in %.2f%% of %d runs judged together, %.2f%% judged row by row",
		rows, 100*got, runs, 100*float64(alone)/runs)
	if got > level+3*se || float64(alone)/runs < 0.02 {
		t.Errorf("a false verdict in %.2f%% of runs (the family's level %.0f%%), %.2f%% row by row: want at most the level "+
			"give or take 3 standard errors, and row by row far more", 100*got, 100*level, 100*float64(alone)/runs)
	}
}

// A real change in one row of twenty is still called: the second arm 30% slower in one
// variant, the rest unchanged, 8 rounds as above. It is Regressed in nearly every draw, and
// the other rows give no verdict.
func TestOneLargeChangeAmongTwentyIsCalled(t *testing.T) {
	const draws, rows = 300, 20
	r := rand.New(rand.NewPCG(25, 3))
	found, others := 0, 0
	for range draws {
		c, err := Arms(manyRows(r, rows, func(i int) float64 {
			if i == 7 {
				return 0.7
			}
			return 1
		}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Rows[7].Verdict == Regressed {
			found++
		}
		others += alarms(c.Rows) - alarms(c.Rows[7:8])
	}
	t.Logf("30%% slower in 1 row of %d: Regressed in %d of %d draws; %d verdicts in the other rows", rows, found, draws, others)
	if found < draws*98/100 || others > 0 {
		t.Errorf("Regressed in %d of %d draws, %d verdicts elsewhere: want nearly always, and none", found, draws, others)
	}
}

// A row's interval is at the level Holm tested it at: a table of one row at 99%; of twenty
// with nothing called, 99.95% each (1% over 40 one-sided hypotheses); of twenty with ten
// rows called, the others at the level of the step that failed, 1% over the 30 hypotheses
// left. A called row's interval clears the band, and the note says how many rows share the
// level.
func TestRowsStateTheirLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 4))
	levels := func(c *ArmsComparison) map[float64]int {
		out := map[float64]int{}
		for _, row := range c.Rows {
			if row.Verdict != Regressed {
				out[row.ConfidencePercent]++
			}
		}
		return out
	}
	for _, c := range []struct {
		rows, called int
		want         map[float64]int
	}{{1, 0, map[float64]int{99: 1}}, {20, 0, map[float64]int{99.95: 20}}, {20, 10, map[float64]int{99.9333: 10}}} {
		arms, err := Arms(manyRows(r, c.rows, func(i int) float64 {
			if i < c.called {
				return 0.7
			}
			return 1
		}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := levels(arms); !reflect.DeepEqual(got, c.want) || alarms(arms.Rows) != c.called {
			t.Errorf("%d rows, %d of them 30%% slower: %d called, the others' levels %v; want %v", c.rows, c.called,
				alarms(arms.Rows), got, c.want)
		}
		for i, row := range arms.Rows {
			if row.Verdict == Regressed && (row.Interval.HighPercent >= -5 || row.ConfidencePercent <= 99.9333) {
				t.Errorf("row %d Regressed, its interval %+v at %v%%: want it beyond the band, at a level above the rest's",
					i, *row.Interval, row.ConfidencePercent)
			}
		}
		if want := fmt.Sprintf("The %d judged rows hold 99%% together (Holm)", c.rows); !strings.Contains(arms.Tables()[0].Note, want) {
			t.Errorf("note %q does not say %q", arms.Tables()[0].Note, want)
		}
	}
}
