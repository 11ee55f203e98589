package changepoint

// Every test here draws its series in process (fixed seeds); none talks to a server.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// noise draws n run-to-run factors around 1: log-noise of standard deviation sigma (the
// marginal one), AR(1) with autocorrelation phi, Student's t with 4 degrees of freedom
// (scaled to the same standard deviation) when heavy, and one run in ten 30% slow with stalls;
// with regimes, busy spells of 10-60 runs at 2-5 times the spread taking turns with quiet ones;
// with burst, slow runs (10-30%) that come together (burst); with slowStart, the first 1-3
// runs 20-40% slow; with unit, values rounded to whole units of it (of 1,000: a counter of
// whole seconds or documents). These are hack/shiftpower's models (docs/measurement.md).
type noise struct {
	name          string
	sigma, phi    float64
	heavy, stalls bool
	regimes       bool
	burst         *burst
	slowStart     bool
	unit          float64
}

// burst is how slow runs come together: a burst begins at a run with this chance, lasts one
// of lengths, and slows its runs alike (one slowdown) or each its own.
type burst struct {
	chance  float64
	lengths []int
	alike   bool
}

func (nz noise) draw(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	spread := nz.spreads(rng, n)
	e := nz.sigma * rng.NormFloat64()
	for i := range x {
		if i > 0 {
			e = nz.phi*e + nz.sigma*math.Sqrt(1-nz.phi*nz.phi)*rng.NormFloat64()
		}
		v := e
		if nz.heavy {
			chi := 0.0
			for range 4 {
				z := rng.NormFloat64()
				chi += z * z
			}
			v = nz.sigma / math.Sqrt2 * rng.NormFloat64() / math.Sqrt(chi/4)
		}
		x[i] = 1000 * math.Exp(spread[i]*v)
		if nz.stalls && rng.Float64() < 0.1 {
			x[i] *= 0.7
		}
	}
	if b := nz.burst; b != nil {
		for i := 0; i < n; i++ {
			if rng.Float64() >= b.chance {
				continue
			}
			length, slow := b.lengths[rng.IntN(len(b.lengths))], 0.1+0.2*rng.Float64()
			for j := i; j < min(i+length, n); j++ {
				if !b.alike {
					slow = 0.1 + 0.2*rng.Float64()
				}
				x[j] *= 1 - slow
			}
			i += length - 1
		}
	}
	if nz.slowStart {
		for i := range min(1+rng.IntN(3), n) {
			x[i] *= 1 - (0.2 + 0.2*rng.Float64())
		}
	}
	if nz.unit > 0 {
		for i := range x {
			x[i] = nz.unit * math.Round(x[i]/nz.unit)
		}
	}
	return x
}

// spreads is each run's spread, in units of sigma: 1, or with regimes 2-5 in busy spells.
func (nz noise) spreads(rng *rand.Rand, n int) []float64 {
	out := make([]float64, 0, n)
	if !nz.regimes {
		for range n {
			out = append(out, 1)
		}
		return out
	}
	busy := rng.IntN(2) == 0
	for len(out) < n {
		factor := 1.0
		if busy {
			factor = 2 + 3*rng.Float64()
		}
		for range min(10+rng.IntN(51), n-len(out)) {
			out = append(out, factor)
		}
		busy = !busy
	}
	return out
}

var noiseModels = []noise{
	{name: "lognormal 3.5%", sigma: 0.035},
	{name: "lognormal 15%", sigma: 0.15},
	{name: "AR(1) phi 0.3", sigma: 0.035, phi: 0.3},
	{name: "AR(1) phi 0.5", sigma: 0.035, phi: 0.5},
	{name: "t, 4 df", sigma: 0.035, heavy: true},
	{name: "stalls", sigma: 0.035, stalls: true},
	{name: "spread 2-5x in regimes", sigma: 0.035, regimes: true},
	{name: "slow runs in pairs", sigma: 0.035, burst: &burst{chance: 1.0 / 20, lengths: []int{2}, alike: true}},
	{name: "slow runs in bursts of 2-3", sigma: 0.035, burst: &burst{chance: 1.0 / 30, lengths: []int{2, 3}}},
	{name: "slow first runs", sigma: 0.035, slowStart: true},
	{name: "AR(1) phi 0.7", sigma: 0.035, phi: 0.7},
	{name: "whole units, AR(1) phi 0.5 at 1%", sigma: 0.01, phi: 0.5, unit: 10},
}

// withinBudget says whether found false shifts in runs hold a budget per run with a margin of
// three standard errors of the count (Poisson): the simulation's own noise cannot be what
// keeps it within.
func withinBudget(found, runs int, budget float64) bool {
	return float64(found)+3*math.Sqrt(max(float64(found), 1)) <= budget*float64(runs)
}

// shifts is how many change points a series shows that are shifts: all but the ends of dips,
// which end a shift shown before.
func shifts(cps []ChangePoint) int {
	n := 0
	for _, cp := range cps {
		if !cp.Returns {
			n++
		}
	}
	return n
}

// With nothing changed, a series replayed run by run finds at most FalseAlarmsPerRun false
// shifts per run, on every noise model, with three standard errors to spare. Slow runs in
// bursts came near the budget (about 0.8 per 1,000; 0.5 since a level goes on after a dip),
// where 150,000 runs cannot tell it within three standard errors: 300,000 can.
func TestFalseShiftsWithinTheBudget(t *testing.T) {
	for i, nz := range noiseModels {
		holdsTheBudget(t, nz, rand.New(rand.NewPCG(uint64(i)+1, 25)), 300, 1000)
	}
}

// falseShifts is how many shifts Detect finds in series unchanged series of runs runs of nz.
func falseShifts(nz noise, rng *rand.Rand, series, runs int) int {
	found := 0
	for range series {
		found += shifts(Detect(nz.draw(rng, runs), Options{}))
	}
	return found
}

// holdsTheBudget replays series unchanged series of runs runs of nz and fails the test unless
// their false shifts are within the budget of 1 per 1,000 runs with three standard errors to
// spare.
func holdsTheBudget(t *testing.T, nz noise, rng *rand.Rand, series, runs int) {
	t.Helper()
	found := falseShifts(nz, rng, series, runs)
	if !withinBudget(found, series*runs, 0.001) {
		t.Errorf("%s: %d false shifts in %d series of %d runs (%.2f per 1,000), want the budget of 1 per 1,000 with 3 standard errors to spare",
			nz.name, found, series, runs, 1000*float64(found)/float64(series*runs))
	}
}

// A new schedule's first 50 looks hold the budget too, on the models whose noise a short first
// level shows well enough: independent (normal and t), stalls, slow first runs. Not held there
// yet, and so not asserted here: AR(1) noise (a short level's autocorrelation is known poorly;
// every allowance for that tried so far which held the budget took the 10% drop after 50 runs
// under its target and cost a young level much of its power), spread in regimes, slow runs in
// pairs and in bursts, which a first level of a few tens of runs has not shown yet.
// docs/measurement.md gives their figures.
func TestFirstLooksWithinTheBudget(t *testing.T) {
	for i, nz := range noiseModels {
		if nz.phi == 0 && !nz.regimes && nz.burst == nil {
			holdsTheBudget(t, nz, rand.New(rand.NewPCG(uint64(i)+100, 50)), 3000, 50)
		}
	}
}

// A smaller share of the budget is held too: a schedule with ten judged series gives each a
// tenth.
func TestFalseShiftsWithinASmallerShare(t *testing.T) {
	const series, runs = 500, 1000
	rng := rand.New(rand.NewPCG(9, 9))
	found := 0
	for range series {
		found += shifts(Detect(noise{sigma: 0.035, phi: 0.3}.draw(rng, runs), Options{FalseAlarmsPerRun: 0.0001}))
	}
	if !withinBudget(found, series*runs, 0.0001) {
		t.Errorf("%d false shifts in %d runs of AR(1) noise, want the budget of 1 per 10,000 runs with 3 standard errors to spare",
			found, series*runs)
	}
}

// firstFound is the first change point at or after from-3 and the look that found it.
func firstFound(cps []ChangePoint, from int) (ChangePoint, bool) {
	for _, cp := range cps {
		if cp.Index >= from-3 {
			return cp, true
		}
	}
	return ChangePoint{}, false
}

// At the nightly sample's ratio noise (3.5%, independent), after 50 unchanged runs and after
// 100, a 15% drop is found within 3 runs and named by its first run in at least 95% of
// histories, and a 10% drop within 5 runs in at least 80% (the series as the last of those runs
// left it: a young level's first run is refined as runs come). After 100 runs the 15% drop was
// named under its target while the outlier rule took a chance pair of far runs at its face
// (pairPrior; docs/measurement.md).
func TestPowerAtTheNightlyNoise(t *testing.T) {
	const histories = 1000
	for _, before := range []int{50, 100} {
		for _, tc := range []struct {
			drop          float64
			within        int
			flagged, name int // percent of histories at least
		}{{0.15, 3, 95, 95}, {0.10, 5, 80, 80}} {
			rng := rand.New(rand.NewPCG(uint64(before)+7, uint64(100*tc.drop)))
			flagged, named := 0, 0
			for range histories {
				x := noise{sigma: 0.035}.draw(rng, before+tc.within)
				for i := before; i < len(x); i++ {
					x[i] *= 1 - tc.drop
				}
				if cp, ok := firstFound(Detect(x, Options{}), before); ok {
					flagged++
					if cp.Index == before {
						named++
					}
					// The ratio's error is about the new level's mean's, of within runs: 4-5
					// standard errors of it.
					if cp.Index == before && math.Abs(cp.Ratio-(1-tc.drop)) > 4*0.035/math.Sqrt(float64(tc.within)) {
						t.Errorf("%.0f%% drop after %d runs found with ratio %.3f", 100*tc.drop, before, cp.Ratio)
					}
				}
			}
			if flagged < histories*tc.flagged/100 || named < histories*tc.name/100 {
				t.Errorf("%.0f%% drop after %d runs: flagged within %d runs in %d of %d histories, named by its first run in %d, want %d%% and %d%%",
					100*tc.drop, before, tc.within, flagged, histories, named, tc.flagged, tc.name)
			}
		}
	}
}

// levels draws a series of runs at the given levels, n runs each, with 2% noise.
func levels(seed uint64, segs ...[2]float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	var x []float64
	for _, seg := range segs {
		for range int(seg[1]) {
			x = append(x, seg[0]*math.Exp(0.02*rng.NormFloat64()))
		}
	}
	return x
}

// A regression fixed eight runs later is two change points: the fix is found against the level
// the regression started, judged while young with the noise of the level before it.
func TestShiftUndone(t *testing.T) {
	const histories = 50
	both := 0
	for seed := range uint64(histories) {
		cps := Detect(levels(seed, [2]float64{1000, 20}, [2]float64{800, 8}, [2]float64{1000, 8}), Options{})
		if len(cps) == 0 || cps[0].Index != 20 {
			t.Fatalf("seed %d: change points %+v, want the first at 20", seed, cps)
		}
		if len(cps) == 2 && cps[1].Index == 28 && cps[0].Ratio < 0.85 && cps[1].Ratio > 1.15 {
			both++
		} else if len(cps) > 1 {
			t.Errorf("seed %d: change points %+v, want 0.8 at 20 then 1.25 at 28", seed, cps)
		}
	}
	if both < histories*9/10 {
		t.Errorf("both ends found in %d of %d histories", both, histories)
	}
}

// A regression undone after 3 runs, as on the local cluster (docs/benchmarks.md, "A year's
// budget on the local cluster"): its 3 runs are a level too short to know its own noise, so
// its end is judged with the noise of the 20 runs before it, and found at its third run.
func TestShiftUndoneAfterThreeRuns(t *testing.T) {
	const histories = 50
	both := 0
	for seed := range uint64(histories) {
		cps := Detect(levels(seed, [2]float64{1000, 20}, [2]float64{780, 3}, [2]float64{1000, 3}), Options{})
		if len(cps) == 2 && cps[0].Index == 20 && cps[1].Index == 23 && cps[1].FoundAt == 26 {
			both++
		}
	}
	if both < histories*9/10 {
		t.Errorf("the regression and its end, each at its third run, in %d of %d histories", both, histories)
	}
}

// A young level that scatters more than the level it borrows its noise from is judged with its
// own spread: after a drop to runs 25% apart, three runs at its upper edge are no new level.
func TestYoungLevelIsNotJudgedCalmerThanItIs(t *testing.T) {
	x := append(levels(5, [2]float64{1000, 20}), 700, 800, 600, 790, 800, 810)
	cps := Detect(x, Options{})
	if len(cps) != 1 || cps[0].Index != 20 {
		t.Errorf("change points %+v, want only the drop at 20: the young level's scatter is its noise", cps)
	}
}

// A busy spell spreads all its runs, a heavy tail puts one far run in a block: one run far out
// is no busy spell, while ten runs at three times the spread are one, judged by that block's
// spread. Compared whole, the far run's block was taken for busy in most seeds
// (docs/measurement.md, "A chance pair of far runs, and one far run in a block").
func TestAFarRunIsNoBusySpell(t *testing.T) {
	const seeds = 20
	farBusy, spellsFound := 0, 0
	for seed := range uint64(seeds) {
		far := levels(seed, [2]float64{1000, 60})
		far[25] *= math.Exp(7 * 0.02)
		if newSeries(far, Options{}).busy(0, 60) != 0 {
			farBusy++
		}
		spell := levels(seed, [2]float64{1000, 60})
		for i := 20; i < 30; i++ {
			spell[i] = 1000 * math.Exp(3*math.Log(spell[i]/1000)) // three times as far from the level, in logarithms
		}
		if sigma := newSeries(spell, Options{}).busy(0, 60); sigma > 0 {
			spellsFound++
			if want := stat.StdDev(newSeries(spell, Options{}).logs[20:30], nil); math.Abs(sigma-want) > 1e-12 {
				t.Errorf("seed %d: the spell is judged by a spread of %.4f, want its block's, %.4f", seed, sigma, want)
			}
		}
	}
	if farBusy > 1 || spellsFound < 15 {
		t.Errorf("one far run taken for a busy spell in %d of %d seeds, want at most 1; ten runs at three times the spread found as one in %d, want at least 15",
			farBusy, seeds, spellsFound)
	}
}

// A level of 100 runs with three far runs, two of them side by side, is a level whose far runs
// are rare and come alone: three far new runs in a row are a new level. With five pairs among
// ten far runs, far runs come in pairs, and three in a row are not. Taking the one pair at its
// face, the rule took both levels for levels whose far runs come in pairs.
func TestAChancePairOfFarRunsIsNoPattern(t *testing.T) {
	s := newSeries([]float64{1}, Options{})
	level := func(far ...int) []float64 {
		ref := make([]float64, 100)
		for _, i := range far {
			ref[i] = 1
		}
		return ref
	}
	if !s.fewOutliers(level(10, 11, 60), 0.5, 1, 3) {
		t.Error("three far runs, two side by side: taken for a level whose far runs come in pairs")
	}
	if s.fewOutliers(level(5, 6, 20, 21, 40, 41, 60, 61, 80, 81), 0.5, 1, 3) {
		t.Error("five pairs of far runs: taken for a level whose far runs come alone")
	}
}

// Two shifts ten runs apart, the same way, are two change points.
func TestTwoShifts(t *testing.T) {
	const histories = 50
	both := 0
	for seed := range uint64(histories) {
		cps := Detect(levels(seed, [2]float64{1000, 20}, [2]float64{850, 10}, [2]float64{700, 8}), Options{})
		if len(cps) == 0 || cps[0].Index != 20 {
			t.Fatalf("seed %d: change points %+v, want the first at 20", seed, cps)
		}
		if len(cps) == 2 && cps[1].Index == 30 && math.Abs(cps[0].Ratio-0.85) < 0.04 && math.Abs(cps[1].Ratio-700.0/850) < 0.04 {
			both++
		}
	}
	if both < histories*9/10 {
		t.Errorf("both shifts found in %d of %d histories", both, histories)
	}
}

// A change point says what found it: the look (the history's length then), the p-value of
// its own split and the level it was held against, which is the budget's share for MinAfter
// new runs: half of what the late look leaves.
func TestChangePointSaysWhatFoundIt(t *testing.T) {
	x := levels(3, [2]float64{1000, 30}, [2]float64{700, 10})
	cps := Detect(x, Options{})
	if len(cps) != 1 || cps[0].Index != 30 {
		t.Fatalf("change points %+v, want one at 30", cps)
	}
	cp := cps[0]
	if cp.FoundAt != 33 || math.Abs(cp.Level-0.00045) > 1e-12 || cp.PValue > cp.Level {
		t.Errorf("change point %+v, want found at 33 with a p-value within the level 0.00045", cp)
	}
	// The replay is the same at every look: the history as it was then finds what it found.
	if again := Detect(x[:cp.FoundAt], Options{}); len(again) != 1 || again[0].Index != 30 || again[0].PValue != cp.PValue {
		t.Errorf("the history at the look that found it: %+v", again)
	}
	if again := Detect(x[:cp.FoundAt-1], Options{}); len(again) != 0 {
		t.Errorf("the history one run before: %+v", again)
	}
}

// A slow run just before a drop puts the first look's split a run early; the runs that come
// next move it to the drop's first run, with the p-value of that split's own test.
func TestYoungLevelIsRefinedToItsFirstRun(t *testing.T) {
	x := levels(11, [2]float64{1000, 30}, [2]float64{900, 6})
	x[29] = 960
	first := Detect(x[:32], Options{})
	if len(first) != 1 || first[0].Index != 29 || first[0].FoundAt != 32 {
		t.Fatalf("the look that found it: %+v, want one change point at 29 found at 32", first)
	}
	later := Detect(x, Options{})
	if len(later) != 1 || later[0].Index != 30 || later[0].FoundAt != 32 {
		t.Fatalf("with six runs at the new level: %+v, want the change point moved to 30, still found at 32", later)
	}
	if later[0].PValue >= first[0].PValue || later[0].Level != first[0].Level {
		t.Errorf("moved to 30 with p = %g at level %g, want its own split's p-value, below the first split's %g, at the level that found it",
			later[0].PValue, later[0].Level, first[0].PValue)
	}
}

// One bad run is an outlier, not a shift, however far off it is; two in a row are not rare
// on a shared machine either, nor two among the newest three.
func TestOutliersAreNotShifts(t *testing.T) {
	flat := levels(5, [2]float64{100, 30})
	for _, tc := range []struct {
		name string
		slow []int
	}{{"one run in the middle", []int{15}}, {"the newest run", []int{29}},
		{"the two newest runs", []int{28, 29}}, {"two runs in the middle", []int{14, 15}},
		{"two of the three newest runs", []int{27, 29}}} {
		x := slices.Clone(flat)
		for _, i := range tc.slow {
			x[i] = 40
		}
		if cps := Detect(x, Options{}); len(cps) != 0 {
			t.Errorf("%s at 40%%: change points %+v", tc.name, cps)
		}
	}
}

// LevelStart is the first run of the newest level, 0 without a change point.
func TestLevelStart(t *testing.T) {
	if got := Resume(levels(1, [2]float64{1000, 30}), Known{}, Options{}).LevelStart(); got != 0 {
		t.Errorf("unchanged series: level starts at %d, want 0", got)
	}
	if got := Resume(levels(1, [2]float64{1000, 20}, [2]float64{800, 10}), Known{}, Options{}).LevelStart(); got != 20 {
		t.Errorf("a drop at run 20: level starts at %d", got)
	}
	if got := Resume(nil, Known{}, Options{}).LevelStart(); got != 0 {
		t.Errorf("no runs: level starts at %d", got)
	}
}

// Detectable says what simulation shows: a shift of that size, at that noise, is found within
// MinAfter runs about 90% of the time.
func TestDetectableMatchesSimulation(t *testing.T) {
	const before, histories = 50, 1000
	rng := rand.New(rand.NewPCG(11, 11))
	nz := noise{sigma: 0.035}
	x := nz.draw(rng, before)
	shift, ok := Detectable(x, Resume(x, Known{}, Options{}), Options{})
	if !ok || shift < 0.05 || shift > 0.3 {
		t.Fatalf("Detectable at 3.5%% noise after %d runs: %.3f, %v", before, shift, ok)
	}
	found := 0
	for range histories {
		x := nz.draw(rng, before+3)
		for i := before; i < len(x); i++ {
			x[i] *= 1 + shift
		}
		if cp, ok := firstFound(Detect(x, Options{}), before); ok && cp.FoundAt <= before+3 {
			found++
		}
	}
	if found < histories*80/100 || found > histories*97/100 {
		t.Errorf("a %.1f%% shift found within 3 runs in %d of %d histories, want about 90%%", 100*shift, found, histories)
	}
	if x := levels(1, [2]float64{1000, 3}); func() bool { _, ok := Detectable(x, Resume(x, Known{}, Options{}), Options{}); return ok }() {
		t.Error("Detectable with 3 runs: want not ok")
	}
}

// Runs without a usable value are left out, and change points still name runs by their
// place in the series given.
func TestMissingValuesKeepTheRunIndex(t *testing.T) {
	x := levels(2, [2]float64{1000, 25}, [2]float64{700, 6})
	x[3], x[10], x[27] = 0, math.Inf(1), -1
	cps := Detect(x, Options{})
	if len(cps) != 1 || cps[0].Index != 25 {
		t.Errorf("change points %+v, want one at run 25", cps)
	}
	if got := Resume(x, Known{}, Options{}).LevelStart(); got != 25 {
		t.Errorf("level starts at %d, want 25", got)
	}
}

func TestTooShort(t *testing.T) {
	if cps := Detect([]float64{10, 10, 10, 10, 5, 5}, Options{}); len(cps) != 0 {
		t.Errorf("6 runs, MinBefore 4 and MinAfter 3: %+v", cps)
	}
	if cps := Detect(nil, Options{}); len(cps) != 0 {
		t.Errorf("no runs: %+v", cps)
	}
}

// A flat series has no change point; a step in it is one, named by its first run.
func TestFlatSeries(t *testing.T) {
	if cps := Detect(slices.Repeat([]float64{5}, 30), Options{}); len(cps) != 0 {
		t.Errorf("flat series: %+v", cps)
	}
	x := append(slices.Repeat([]float64{5}, 20), 4, 4, 4)
	cps := Detect(x, Options{})
	if len(cps) != 1 || cps[0].Index != 20 || cps[0].PValue != 0 || math.Abs(cps[0].Ratio-0.8) > 1e-12 {
		t.Errorf("step in a flat series: %+v, want one at 20, ratio 0.8, p 0", cps)
	}
}

// A schedule that keeps what its looks found and goes on from there, after any number of runs,
// finds what a replay of the whole series finds: the same change points, refined alike.
func TestResumeGoesOnAsTheReplay(t *testing.T) {
	for seed := range uint64(40) {
		x := levels(seed, [2]float64{1000, 20}, [2]float64{860, 4}, [2]float64{1000, 9}, [2]float64{900, 12})
		x[5] = -1 // a run without a value
		want := Detect(x, Options{})
		var known Known
		rng := rand.New(rand.NewPCG(seed, 2))
		for n := 0; n < len(x); {
			n = min(len(x), n+1+rng.IntN(3))
			known = Resume(x[:n], known, Options{})
		}
		if !slices.Equal(known.Found, want) {
			t.Errorf("seed %d: resumed %+v, replayed %+v", seed, known.Found, want)
		}
	}
	// Dips, and their ends, as a schedule judges them night by night: bursts of 3 slow runs.
	bursts := noise{sigma: 0.035, burst: &burst{chance: 1.0 / 30, lengths: []int{3}, alike: true}}
	rng := rand.New(rand.NewPCG(12, 12))
	for i := range 100 {
		x := bursts.draw(rng, 300)
		want := Detect(x, Options{})
		var known Known
		for n := 1; n <= len(x); n++ {
			known = Resume(x[:n], known, Options{})
		}
		if !slices.Equal(known.Found, want) {
			t.Errorf("bursts, series %d: resumed %+v, replayed %+v", i, known.Found, want)
		}
	}
}

// Slow first runs (a cold first night) are left out as a warm-up and blind nothing: after them
// and 50 runs at 3.5% noise, a 15% drop is named by its first run within 3 runs in at least
// 93% of histories (95.8% measured here; before the warm-up, a few percent).
func TestPowerAfterSlowFirstRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const histories = 500
	named := 0
	for range histories {
		x := noise{sigma: 0.035, slowStart: true}.draw(rng, 53)
		for i := 50; i < len(x); i++ {
			x[i] *= 0.85
		}
		if cp, ok := firstFound(Detect(x, Options{}), 50); ok && cp.Index == 50 {
			named++
		}
	}
	if named < histories*93/100 {
		t.Errorf("a 15%% drop after slow first runs named within 3 runs in %d of %d histories, want 93%%", named, histories)
	}
}

// A step too small to show in the newest runs is found late: a 5% drop at 3.5% noise after 50
// runs is shown (within 3 runs of where it began) 40 runs on in at least 70% of histories (77%
// measured), more than 10 runs on (40%).
func TestAStepMissedIsFoundLate(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const histories = 300
	soon, late := 0, 0
	for range histories {
		x := noise{sigma: 0.035}.draw(rng, 90)
		for i := 50; i < len(x); i++ {
			x[i] *= 0.95
		}
		if _, ok := firstFound(Detect(x[:60], Options{}), 50); ok {
			soon++
		}
		if slices.ContainsFunc(Detect(x, Options{}), func(cp ChangePoint) bool { return cp.Index >= 47 && cp.Index <= 53 }) {
			late++
		}
	}
	if late < histories*70/100 || late <= soon {
		t.Errorf("a 5%% step shown 10 runs on in %d of %d histories, 40 runs on in %d; want 70%% and more than 10 runs on", soon, histories, late)
	}
}

// Two slow runs are a dip, not a lasting shift: when a look takes them and a third low run for a
// new level, the runs after it end it (Returns). At 3.5% noise, 10 runs after a dip of 10% (20%)
// at most 6% (1%) of histories still show a lasting shift there (4.4% and 0 measured).
func TestATwoRunDipIsNoLastingShift(t *testing.T) {
	for _, tc := range []struct{ depth, lasting float64 }{{0.10, 0.06}, {0.20, 0.01}} {
		rng := rand.New(rand.NewPCG(10, 10))
		const histories = 500
		lasting, ended := 0, 0
		for range histories {
			x := noise{sigma: 0.035}.draw(rng, 62)
			x[50] *= 1 - tc.depth
			x[51] *= 1 - tc.depth
			var near []ChangePoint
			for _, cp := range Detect(x, Options{}) {
				if cp.Index >= 47 && cp.Index <= 55 {
					near = append(near, cp)
				}
			}
			switch {
			case len(near) >= 2 && near[len(near)-1].Returns:
				ended++
			case len(near) > 0:
				lasting++
			}
		}
		if float64(lasting) > tc.lasting*histories || ended == 0 {
			t.Errorf("a 2-run dip of %.0f%%: a lasting shift in %d of %d histories, ended in %d; want at most %.0f%% lasting",
				100*tc.depth, lasting, histories, ended, 100*tc.lasting)
		}
	}
}

// A large drop after a first level that drifts is found at its third run. Two series of the
// e2e suite's template-change test on kind (documents/s of writes, docs/measurement.md): in
// the CI check of fd497f6 its 10 runs fell steadily from 5.6k to 3.2k, then 8 runs after a
// 7-fold drop (all 18 measured); at 6bf8c35 its 12 runs rose from 1.9k to 4.2k (measured), then
// a 7.5-fold drop (the measured range, 451-564; these 7 values are drawn in it). Judged as
// autocorrelated noise, the first level's 0.86 and 0.75 left the test about one and three
// degrees of freedom, and neither drop was ever found.
func TestADropAfterADriftingLevelIsFound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		drop   int
	}{
		{"falling", []float64{5640, 6032, 5419, 5709, 4492, 4373, 3872, 4481, 3867, 3165, 581, 548, 532, 565, 566, 662, 566, 646}, 10},
		{"rising", []float64{1919, 1818, 1778, 955, 1671, 2115, 3003, 2877, 3960, 2262, 2961, 4173, 451, 500, 564, 480, 520, 530, 510}, 12},
	} {
		cps := Detect(tc.values[:tc.drop+3], Options{})
		if len(cps) != 1 || cps[0].Index != tc.drop || cps[0].Ratio > 0.25 {
			t.Errorf("%s: %+v after 3 runs of the drop, want one change point at run %d", tc.name, cps, tc.drop)
		}
		if cps := Detect(tc.values[:tc.drop+2], Options{}); len(cps) != 0 {
			t.Errorf("%s: %+v after 2 runs of the drop, want none yet (MinAfter is 3)", tc.name, cps)
		}
	}
}

// A large drop after a short first level that wanders is found: after 10 runs of 30% spread
// with autocorrelation 0.5, a tenfold drop is named (within a run of its first) within 8 runs
// in at least 90% of histories (93.0% measured; 78.2% before runs set apart from the level by
// more than both groups' ranges were judged as independent runs). The e2e's template change on
// kind was probably such a drop: on 2026-11-30, after a 10-run level, its 18 runs spread by
// 145.5% and no shift was found.
func TestADropAfterAWanderingLevelIsFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const histories = 1000
	found := 0
	for range histories {
		x := noise{sigma: 0.3, phi: 0.5}.draw(rng, 18)
		for i := 10; i < len(x); i++ {
			x[i] *= 0.1
		}
		if cp, ok := firstFound(Detect(x, Options{}), 10); ok && cp.Index >= 9 && cp.Index <= 11 {
			found++
		}
	}
	if found < histories*90/100 {
		t.Errorf("a tenfold drop after 10 wandering runs found within 8 runs in %d of %d histories, want 90%%", found, histories)
	}
}

// lastingShifts is how many of the shifts cps show are not ended by the change point after
// them (a dip's end, Returns).
func lastingShifts(cps []ChangePoint) int {
	n := 0
	for i, cp := range cps {
		if !cp.Returns && (i+1 == len(cps) || !cps[i+1].Returns) {
			n++
		}
	}
	return n
}

// Three slow runs alike are, to a look that judges the newest 3 runs, a new level: the first
// burst of them (10-30% slow, one burst in 30 runs, at 3.5% noise) a level meets is announced
// as a shift, and told as a dip by the runs after it. The level the dip interrupted then goes
// on with the dip among its runs, so that the bursts after it are that level's noise, not new
// shifts: past a schedule's first 50 runs the shifts announced hold the budget, and those left
// lasting hold it over all the runs, each with three standard errors to spare: 139 in 285,000
// runs and 32 in 300,000 measured. While each dip's end began a new level, which had seen no
// burst, they were 2,521 and 240.
func TestBurstsOfThreeSlowRunsAreToldAsDips(t *testing.T) {
	nz := noise{sigma: 0.035, burst: &burst{chance: 1.0 / 30, lengths: []int{3}, alike: true}}
	rng := rand.New(rand.NewPCG(11, 11))
	const series, runs, first = 300, 1000, 50
	announced, lasting := 0, 0
	for range series {
		cps := Detect(nz.draw(rng, runs), Options{})
		for _, cp := range cps {
			if !cp.Returns && cp.FoundAt > first {
				announced++
			}
		}
		lasting += lastingShifts(cps)
	}
	if !withinBudget(announced, series*(runs-first), 0.001) || !withinBudget(lasting, series*runs, 0.001) {
		t.Errorf("bursts of 3 slow runs: %d shifts announced in the %d runs after the first %d, %d lasting in all %d runs; "+
			"want both within the budget with 3 standard errors to spare", announced, series*(runs-first), first, lasting, series*runs)
	}
}

// A level goes on after a dip that interrupted it, the dip among its runs: a second dip like
// the first, 20 runs later, is a burst that level has shown, not a new shift. Before, the
// dip's end began a new level of its own 20 runs, which had shown none, and the second dip
// was announced as the first was.
func TestALevelGoesOnAfterADip(t *testing.T) {
	const histories = 50
	for seed := range uint64(histories) {
		x := levels(seed, [2]float64{1000, 40}, [2]float64{800, 3}, [2]float64{1000, 20}, [2]float64{800, 3}, [2]float64{1000, 10})
		cps := Detect(x, Options{})
		if len(cps) != 2 || cps[0].Index != 40 || !cps[1].Returns || !cps[1].DipEnd {
			t.Fatalf("seed %d: change points %+v, want the first dip at run 40 and its end", seed, cps)
		}
		k := Resume(x, Known{}, Options{})
		if start := k.LevelStart(); start != 0 {
			t.Fatalf("seed %d: the level starts at run %d after the dip, want 0: the level the dip interrupted", seed, start)
		}
	}
}

// A change accepted after the looks found a dip: the dip's end no longer ends the level its
// dip began (the accepted change began it), so it begins a level of its own, and the replay
// and LevelStart agree on where the level starts. Before, the dip's end took back a level
// from before the accepted change (run 0, across the 30% drop at run 30 in the second series).
func TestAnAcceptedChangeBeforeADipsEndBeginsTheLevel(t *testing.T) {
	for _, tc := range []struct {
		segs     [][2]float64
		accepted int
	}{
		{[][2]float64{{1000, 40}, {800, 3}, {1000, 30}}, 40},
		{[][2]float64{{1000, 30}, {700, 30}, {560, 5}, {700, 30}}, 61},
	} {
		for seed := range uint64(20) {
			x := levels(seed, tc.segs...)
			found := Detect(x, Options{})
			if !slices.ContainsFunc(found, func(cp ChangePoint) bool { return cp.DipEnd }) {
				t.Fatalf("seed %d: change points %+v, want a dip's end", seed, found)
			}
			k := Resume(x, Known{Looked: len(x), Found: found, Accepted: []int{tc.accepted}}, Options{})
			s := newSeries(x, Options{})
			if level := s.replay(s.known(k)).level; level.start != k.LevelStart() || level.start < tc.accepted {
				t.Errorf("seed %d, accepted at %d: the replay's level starts at %d, LevelStart says %d; want them equal and not before the accepted change",
					seed, tc.accepted, level.start, k.LevelStart())
			}
		}
	}
}

// After a dip's end the level it interrupted goes on, but no change point found later names
// a run before the end: a lasting 8% drop 10 runs after a dip is named after the dip, never
// at the dip's first run again, and change points stay in order. Before, the late look's
// likeliest split over the whole level named the dip's first run in about half of 300 such
// histories.
func TestAChangeAfterADipIsNamedAfterIt(t *testing.T) {
	for seed := range uint64(100) {
		cps := Detect(levels(seed, [2]float64{1000, 50}, [2]float64{800, 3}, [2]float64{1000, 10}, [2]float64{920, 60}), Options{})
		for i := 1; i < len(cps); i++ {
			if cps[i].Index <= cps[i-1].Index {
				t.Fatalf("seed %d: change points %+v out of order", seed, cps)
			}
		}
		for i, cp := range cps {
			if i > 1 && cp.Index < 54 {
				t.Fatalf("seed %d: change points %+v: one after the dip and its end names run %d, before the end", seed, cps, cp.Index)
			}
		}
	}
}

// A drop soon after a dip's end is a shift, not the end of a dip: the end began no level of
// its own that the drop could take back. Before, a drop to the dip's depth 4 runs after its
// end was marked Returns and never reported.
func TestADropSoonAfterADipIsAShift(t *testing.T) {
	for seed := range uint64(50) {
		cps := Detect(levels(seed, [2]float64{1000, 40}, [2]float64{800, 3}, [2]float64{1000, 4}, [2]float64{800, 20}), Options{})
		if !slices.ContainsFunc(cps, func(cp ChangePoint) bool { return cp.Index >= 46 && cp.Index <= 48 && !cp.Returns }) {
			t.Errorf("seed %d: change points %+v, want the drop at run 47 as a shift", seed, cps)
		}
	}
}
