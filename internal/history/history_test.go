package history

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// valuesOf is a series' values alone.
func valuesOf(h History, key string) []float64 {
	_, values := h.Series(key)
	return values
}

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

func runAt(i int, values map[string]float64) Run {
	return Run{Name: fmt.Sprintf("nightly-%02d", i), ScheduledAt: t0.Add(time.Duration(i) * 24 * time.Hour), Values: values}
}

// twoArms is a run's document of arms a and b that took turns for their builds: rates[i] is
// the i-th round's docs/s of each. Each arm seeded once, in seedSeconds[arm]: a workload run
// once per arm.
func twoArms(a, b []float64, seedSeconds map[string]time.Duration) []*results.Document {
	arm := func(name string, rates []float64) results.Arm {
		s := results.IndexingSeries{Reducer: "builtin"}
		for _, r := range rates {
			s.Runs = append(s.Runs, measured.IndexBuild{Documents: 10000, DocsPerSecond: r})
		}
		p := results.Profile{Profile: "small", Indexing: []results.IndexingSeries{s}}
		if d, ok := seedSeconds[name]; ok {
			p.Seeding = &measured.Seeding{Stored: 10000, Elapsed: d}
		}
		return results.Arm{QueryServer: name, Profiles: []results.Profile{p}}
	}
	return []*results.Document{{
		Steps: []results.StepRecord{{QueryServer: "a", Step: "index", Rounds: [][]string{{"a", "b"}, {"b", "a"}}}},
		Arms:  []results.Arm{arm("a", a), arm("b", b)},
	}}
}

// A run's entry holds each arm's median and the second arm's ratio to the first, paired
// round by round, each with the way it improves.
func TestRunOfTakesMediansAndRatios(t *testing.T) {
	docs := twoArms([]float64{1000, 1100, 900, 1000, 1050}, []float64{800, 880, 720, 800, 840}, nil)
	run, better, err := RunOf("nightly-01", t0, docs)
	if err != nil {
		t.Fatal(err)
	}
	var ratioKey string
	for _, m := range results.Metrics(docs...) {
		want := map[string]float64{"a": 1000, "b": 800}[m.QueryServer]
		if got := run.Values[m.Key()]; got != want {
			t.Errorf("%s = %v, want the median %v", m.Key(), got, want)
		}
		if better[m.Key()] != "higher" {
			t.Errorf("%s improves %q, want higher (a rate)", m.Key(), better[m.Key()])
		}
		if m.QueryServer == "b" {
			ratioKey = "b:a/" + m.Profile + "/" + m.Workload + "/" + m.Variant + "/" + m.Name
		}
	}
	if ratioKey == "" {
		t.Fatalf("no metric of arm b in %v", run.Values)
	}
	if got := run.Values[ratioKey]; math.Abs(got-0.8) > 1e-9 {
		t.Errorf("%s = %v, want 0.8 (b is 20%% slower in every round); values %v", ratioKey, got, run.Values)
	}
	if len(run.OncePerArm) != 0 {
		t.Errorf("once per arm %v, want none: every round was paired", run.OncePerArm)
	}
}

// A workload run once per arm (seeding here) has no rounds to pair: its ratio is recorded all
// the same, from the two measurements, and marked once per arm; the paired ratio is not.
func TestRunOfRecordsOncePerArmRatios(t *testing.T) {
	const seedRatio, buildRatio = "b:a/small/seeding/bulk/docs_per_second", "b:a/small/indexing/builtin/changes_per_second"
	docs := twoArms([]float64{1000, 1100, 900}, []float64{800, 880, 720}, map[string]time.Duration{"a": time.Second, "b": 1250 * time.Millisecond})
	run, better, err := RunOf("nightly-01", t0, docs)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Values[seedRatio]; math.Abs(got-0.8) > 1e-9 || better[seedRatio] != "higher" {
		t.Errorf("%s = %v improving %q, want 0.8 (b seeded in 1.25 s, a in 1 s), higher; values %v", seedRatio, got, better[seedRatio], run.Values)
	}
	if !slices.Equal(run.OncePerArm, []string{seedRatio}) {
		t.Errorf("once per arm %v, want only %s", run.OncePerArm, seedRatio)
	}
	var h History
	h.Add(run, better)
	if !h.OncePerArm(seedRatio) || h.OncePerArm(buildRatio) {
		t.Errorf("history: seeding once per arm %v, builds %v; want true, false", h.OncePerArm(seedRatio), h.OncePerArm(buildRatio))
	}
	if h.Role(seedRatio) != RoleOncePerArm || h.Role(buildRatio) != RoleJudged || h.Role("a/small/seeding/bulk/docs_per_second") != RoleMachine {
		t.Errorf("roles %q, %q, %q", h.Role(seedRatio), h.Role(buildRatio), h.Role("a/small/seeding/bulk/docs_per_second"))
	}
	var seen bool
	for _, row := range h.Tables(nil)[0].Rows {
		if row[0] == seedRatio {
			seen = row[1] == RoleOncePerArm
		}
	}
	if !seen {
		t.Errorf("the metrics table does not mark %s once per arm: %v", seedRatio, h.Tables(nil)[0].Rows)
	}
}

func TestAddKeepsRunsInOrderAndReplacesByName(t *testing.T) {
	var h History
	for _, i := range []int{3, 1, 2} {
		if !h.Add(runAt(i, map[string]float64{"m": float64(i)}), map[string]string{"m": "higher"}) {
			t.Fatalf("adding run %d changed nothing", i)
		}
	}
	if h.Add(runAt(2, map[string]float64{"m": 2}), nil) {
		t.Error("adding run 2 again, unchanged, reported a change")
	}
	if !h.Add(runAt(2, map[string]float64{"m": 20}), nil) {
		t.Error("run 2 with a new value reported no change")
	}
	var names []string
	for _, r := range h.Runs {
		names = append(names, r.Name)
	}
	if fmt.Sprint(names) != "[nightly-01 nightly-02 nightly-03]" || h.Runs[1].Values["m"] != 20 {
		t.Errorf("runs %v, run 2's value %v; want oldest first, run 2 replaced", names, h.Runs[1].Values["m"])
	}
	if h.Better["m"] != "higher" {
		t.Errorf("better %v", h.Better)
	}
}

func TestAddKeepsTheNewestMaxRuns(t *testing.T) {
	var h History
	for i := range MaxRuns + 5 {
		h.Add(runAt(i, map[string]float64{"m": 1}), nil)
	}
	if len(h.Runs) != MaxRuns || h.Runs[0].Name != "nightly-05" {
		t.Errorf("%d runs from %s, want %d from nightly-05", len(h.Runs), h.Runs[0].Name, MaxRuns)
	}
}

func TestBeforeAndSpread(t *testing.T) {
	var h History
	for i, v := range []float64{100, 110, 90, 100} {
		h.Add(runAt(i, map[string]float64{"m": v, "n": 5}), nil)
	}
	before := h.Before(h.Runs[2].ScheduledAt)
	if fmt.Sprint(before["m"]) != "[100 110]" || len(before["n"]) != 2 {
		t.Errorf("before run 2: %v, want the two runs before it", before)
	}
	// The standard deviation of ln(100, 110, 90, 100) is 0.0820: a CV of 8.54%.
	if got, n := h.Spread("m"); n != 4 || math.Abs(got-8.543) > 0.001 {
		t.Errorf("spread %.3f%% over %d runs, want 8.54%% over 4", got, n)
	}
	if got, _ := h.Spread("n"); got != 0 {
		t.Errorf("spread of a constant %v", got)
	}
	if got, n := h.Spread("missing"); got != 0 || n != 0 {
		t.Errorf("spread of a missing metric %v over %d", got, n)
	}
}

// The spread is measured within the current level: a shift 30% down does not widen it, and a
// verdict on a run takes the level as its runs before it showed it.
func TestSpreadIsWithinTheCurrentLevel(t *testing.T) {
	jitter := []float64{1, 1.02, 0.98, 1.01, 0.99, 1, 1.02, 0.98, 1.01, 0.99, 1, 1.02, 0.98, 1.01, 0.99, 1}
	var h History
	for i, j := range jitter {
		v := 1000 * j
		if i >= 8 {
			v *= 0.7
		}
		h.Add(runAt(i, map[string]float64{"m": v}), map[string]string{"m": "higher"})
	}
	shifts := h.Shifts()
	if len(shifts) != 1 || shifts[0].Run != "nightly-08" {
		t.Fatalf("shifts %v, want one from nightly-08", shifts)
	}
	// The 8 runs of the new level: jitter 1, 1.02, 0.98, 1.01, 0.99, 1, 1.02, 0.98, a CV of 1.5%.
	got, n := h.Spread("m")
	if n != 8 || got > 2 {
		t.Errorf("spread %.2f%% over %d runs, want about 1.5%% over the 8 runs since the shift, not across it", got, n)
	}
	// Before nightly-09 the new level is one run old: no shift yet, every earlier run counts.
	if before := h.Before(h.Runs[9].ScheduledAt)["m"]; len(before) != 9 {
		t.Errorf("before nightly-09: %v, want all 9 runs (the shift was not seen yet)", before)
	}
	// Before nightly-15 the shift has shown: only the new level's runs count.
	if before := h.Before(h.Runs[15].ScheduledAt)["m"]; len(before) != 7 || before[0] != h.Runs[8].Values["m"] {
		t.Errorf("before nightly-15: %v, want the 7 runs from nightly-08", before)
	}
}

// Shifts say which run a change began with and whether it is worse, by the way each metric
// improves, newest first.
func TestShiftsNameTheRunAndTheDirection(t *testing.T) {
	rate := []float64{1000, 1010, 990, 1005, 995, 1000, 1002, 998, 1001, 999, 850, 855, 848, 852}
	duration := []float64{10, 10.1, 9.9, 10, 10.05, 9.95, 8, 8.1, 7.9, 8, 8.05, 7.95, 8, 8.02}
	var h History
	for i := range rate {
		h.Add(runAt(i, map[string]float64{"rate": rate[i], "time": duration[i]}), map[string]string{"rate": "higher", "time": "lower"})
	}
	shifts := h.Shifts()
	if len(shifts) != 2 {
		t.Fatalf("shifts %v, want one per metric", shifts)
	}
	got := shifts[0]
	if got.Metric != "rate" || got.Run != "nightly-10" || got.Runs != 4 || !got.Worse || math.Abs(got.ChangePercent+15) > 0.5 {
		t.Errorf("newest shift %+v, want rate about -15%% from nightly-10 over 4 runs, worse", got)
	}
	got = shifts[1]
	if got.Metric != "time" || got.Run != "nightly-06" || got.Worse || math.Abs(got.ChangePercent+20) > 0.5 {
		t.Errorf("older shift %+v, want time about -20%% from nightly-06, better", got)
	}
	// Two judged metrics: each is searched at half the budget, and says so.
	want := changepoint.Detect(duration, changepoint.Options{FalseAlarmsPerRun: FalseAlarmsPerRun / 2})
	if len(want) != 1 || got.Level != want[0].Level || got.NominalP != want[0].PValue || got.NominalP > got.Level {
		t.Errorf("older shift p = %g at a level of %g, want the detector's at half the budget: %+v", got.NominalP, got.Level, want)
	}
	if s := got.String(); !strings.Contains(s, fmt.Sprintf("nominal p = %.1e at a test level of %.1e", got.NominalP, got.Level)) {
		t.Errorf("%q does not say its nominal p-value and level", s)
	}
}

// Every judged metric has its noise and detectable shift, from the runs of its current level;
// a metric with too few runs says so.
func TestDetectionsOfTheJudgedMetrics(t *testing.T) {
	var h History
	for i := range 20 {
		values := map[string]float64{"steady": 1000 * (1 + 0.03*float64(i%3-1))}
		if i >= 18 {
			values["new"] = 5
		}
		h.Add(runAt(i, values), nil)
	}
	got := h.Detections()
	if len(got) != 2 || got[0].Metric != "new" || got[1].Metric != "steady" {
		t.Fatalf("detections %+v, want new and steady", got)
	}
	if got[0].Unmeasurable == "" || got[0].Shift() != "too few runs" {
		t.Errorf("a metric of 2 runs: %+v, %q; want too few runs", got[0], got[0].Shift())
	}
	steady, values, opts := got[1], valuesOf(h, "steady"), changepoint.Options{FalseAlarmsPerRun: FalseAlarmsPerRun / 2}
	if shift, ok := changepoint.Detectable(values, changepoint.Resume(values, changepoint.Known{}, opts), opts); steady.Unmeasurable != "" ||
		!ok || steady.ShiftPercent != 100*shift || steady.Runs != 20 || math.Abs(steady.NoisePercent-2.5) > 0.1 || steady.ShiftPercent <= steady.NoisePercent {
		t.Errorf("steady: %+v, want 20 runs, 2.5%% noise (ln 0.97, 1, 1.03), the detector's shift at half the budget (%v, %v)", steady, shift, ok)
	}
	if Budget(len(got)) != "1 in 1000 runs over 2 judged metrics" {
		t.Errorf("budget %q", Budget(len(got)))
	}
}

// A level too short for its noise gives the detector a shift beyond doubling: it is not
// stated as a number.
func TestDetectionsBeyondDoublingAreNotNumbers(t *testing.T) {
	var h History
	for i, v := range []float64{1000, 1050, 950, 1030} {
		h.Add(runAt(i, map[string]float64{"short": v}), nil)
	}
	values, opts := valuesOf(h, "short"), changepoint.Options{FalseAlarmsPerRun: FalseAlarmsPerRun}
	if shift, ok := changepoint.Detectable(values, changepoint.Resume(values, changepoint.Known{}, opts), opts); !ok || shift <= 1 {
		t.Fatalf("the detector's shift %v (%v): this test wants one over 100%%", shift, ok)
	}
	if got := h.Detections(); len(got) != 1 || got[0].ShiftPercent != 0 || got[0].Shift() != "over 100%: too few runs at this noise" {
		t.Errorf("detections %+v, want no number, over 100%%", got)
	}
}

// In runs with a reference arm, the machine moves every arm's own numbers: a busier node that
// slows both arms alike is a shift of their own numbers (shown, marked machine) and none of
// their ratio; an arm that slows alone shifts its ratio, which is judged. The shape is the
// local cluster's schedule of docs/benchmarks.md: both arms 20% down from the 8th run, the
// candidate 37% down alone from the 15th, seen for 4 runs (with 14 runs at the old level, the
// detector asks for a fourth: changepoint's outliers rule).
func TestShiftsOfOwnNumbersBesideAReferenceAreTheMachines(t *testing.T) {
	const own, ref, ratio = "cand/small/indexing/builtin/changes_per_second",
		"ref/small/indexing/builtin/changes_per_second", "cand:ref/small/indexing/builtin/changes_per_second"
	jitter := []float64{1, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.003, 0.997, 1.001, 0.999, 1.004, 0.996, 1, 1.002, 0.998, 1.001, 0.999}
	var h History
	better := map[string]string{own: "higher", ref: "higher", ratio: "higher"}
	for i, j := range jitter {
		machine, arm := 1.0, 1.0
		if i >= 7 {
			machine = 0.8
		}
		if i >= 14 {
			arm = 0.63
		}
		h.Add(runAt(i, map[string]float64{ref: 10000 * machine * j, own: 10000 * machine * arm / j, ratio: arm / j / j}), better)
	}
	shifts := h.Shifts()
	judged := Judged(shifts)
	if len(judged) != 1 || judged[0].Metric != ratio || judged[0].Run != "nightly-14" || !judged[0].Worse || judged[0].Machine {
		t.Fatalf("judged %+v; want only the ratio's shift from nightly-14, worse", judged)
	}
	var machine []string
	for _, s := range shifts {
		if s.Machine {
			machine = append(machine, s.Metric+"@"+s.Run+" "+s.Verdict())
		}
	}
	want := []string{own + "@nightly-14 machine", ref + "@nightly-07 machine", own + "@nightly-07 machine"}
	slices.Sort(machine)
	slices.Sort(want)
	if !slices.Equal(machine, want) {
		t.Errorf("machine shifts %q, want %q", machine, want)
	}
	// One judged series, the ratio: it holds the whole budget, and the machine's series are
	// searched at the same level, outside it.
	if keys := h.JudgedKeys(); !slices.Equal(keys, []string{ratio}) {
		t.Errorf("judged %v, want only the ratio", keys)
	}
	level := changepoint.Detect(valuesOf(h, ratio), changepoint.Options{FalseAlarmsPerRun: FalseAlarmsPerRun})[0].Level
	for _, s := range shifts {
		if s.Level != level {
			t.Errorf("%s at a level of %g, want %g (the whole budget, one judged series)", s.ID(), s.Level, level)
		}
	}

	// Without a reference arm there is no ratio to tell the machine by: every shift is judged.
	var single History
	for i, j := range jitter {
		v := 10000 * j
		if i >= 7 {
			v *= 0.8
		}
		single.Add(runAt(i, map[string]float64{own: v}), better)
	}
	if s := single.Shifts(); len(s) != 1 || s[0].Machine || s[0].Verdict() != "Regressed" {
		t.Errorf("one arm's shifts %+v, want one, Regressed", s)
	}
}

// judgeRunByRun adds the runs to h one at a time, as a schedule's runs do, and judges after
// each, as the schedule does; it returns what each look announced, by the run it was taken at.
func judgeRunByRun(h *History, runs []Run, better map[string]string) map[string][]Shift {
	told := map[string][]Shift{}
	for _, r := range runs {
		h.Add(r, better)
		if fresh := h.Judge(nil); len(fresh) > 0 {
			told[r.Name] = fresh
		}
	}
	return told
}

// levelsOf is a series of runs of metric m at the given levels, n runs each, with 1% noise.
func levelsOf(seed uint64, segs ...[2]float64) []Run {
	rng := rand.New(rand.NewPCG(seed, seed))
	var runs []Run
	for _, seg := range segs {
		for range int(seg[1]) {
			runs = append(runs, runAt(len(runs), map[string]float64{"m": seg[0] * math.Exp(0.01*rng.NormFloat64())}))
		}
	}
	return runs
}

// A schedule that judges its history after every run tells a shift once, at the look that
// found it (its third run at the new level here), however often it judges again and however
// many runs come after; status goes on showing it.
func TestJudgeTellsEachShiftOnce(t *testing.T) {
	var h History
	told := judgeRunByRun(&h, levelsOf(1, [2]float64{1000, 30}, [2]float64{850, 12}), map[string]string{"m": "higher"})
	if len(told) != 1 || len(told["nightly-32"]) != 1 {
		t.Fatalf("told %+v, want one shift, at nightly-32", told)
	}
	if s := told["nightly-32"][0]; s.Run != "nightly-30" || s.FoundAt != "nightly-32" || !s.Worse {
		t.Errorf("told %+v, want the drop from nightly-30, found at nightly-32, worse", s)
	}
	if again := h.Judge(nil); len(again) != 0 {
		t.Errorf("judged again with no new run: %+v", again)
	}
	if shifts := h.Shifts(); len(shifts) != 1 || shifts[0].Runs != 12 {
		t.Errorf("shifts %+v, want the one, 12 runs old", shifts)
	}
}

// A history past its window (MaxRuns) announces nothing about runs already judged: each shift
// a look tells was found by that look, at the run just added (or is a dip whose end that look
// found), also once the oldest runs drop
// out and the looks go on over a history that starts later; the change points found among the
// runs dropped go with them. The noise is autocorrelated (phi 0.5), where a replay from each
// new first run found false shifts among runs long judged.
func TestAHistoryPastItsWindowAnnouncesNothingAboutRunsAlreadyJudged(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 1))
	runs := make([]Run, MaxRuns+300)
	e := 0.0
	for i := range runs {
		e = 0.5*e + 0.035*math.Sqrt(1-0.25)*rng.NormFloat64()
		runs[i] = runAt(i, map[string]float64{"m": 1000 * math.Exp(e)})
		runs[i].Name = fmt.Sprintf("nightly-%04d", i)
	}
	var h History
	told := judgeRunByRun(&h, runs, nil)
	for at, shifts := range told {
		for _, s := range shifts {
			if s.FoundAt != at && s.ended != s.Metric+"@"+at {
				t.Errorf("the look at %s told %+v, found at %s: a run judged before", at, s, s.FoundAt)
			}
		}
	}
	if h.Runs[0].Name != "nightly-0300" || len(h.Runs) != MaxRuns {
		t.Fatalf("the history keeps %d runs from %s, want %d from nightly-0300", len(h.Runs), h.Runs[0].Name, MaxRuns)
	}
	for _, f := range h.Looks.Found {
		if !slices.ContainsFunc(h.Runs, func(r Run) bool { return r.Name == f.Run }) {
			t.Errorf("the looks keep %+v, whose first run was dropped", f)
		}
	}
	// The same runs replayed from the window's first run, as schedules did before their
	// history kept its looks: the change points that replay shows, and the looks did not find,
	// are what such a schedule told again about runs long judged.
	var replayed History
	for _, r := range h.Runs {
		replayed.Add(r, nil)
	}
	t.Logf("told %d shifts over %d runs; a replay of the window shows %d change points, the looks keep %d",
		len(told), len(runs), len(replayed.Shifts()), len(h.Shifts()))
}

// A change of the schedule's template that the team accepted is no shift: every series' level
// starts anew at its first run. Not accepted, the shift it made names it.
func TestAcceptedChangeIsNoShift(t *testing.T) {
	runs := levelsOf(2, [2]float64{1000, 30}, [2]float64{800, 10})
	runs[30].Change = "generation 7: template.spec.couchdb"
	var h History
	told := judgeRunByRun(&h, runs, map[string]string{"m": "higher"})
	if len(told) != 1 || told["nightly-32"][0].Follows != runs[30].Change {
		t.Errorf("told %+v, want the drop at nightly-32, following %q", told, runs[30].Change)
	}
	var accepted History
	for _, r := range runs {
		accepted.Add(r, map[string]string{"m": "higher"})
		if fresh := accepted.Judge([]string{"nightly-30"}); len(fresh) > 0 {
			t.Errorf("accepted change told as %+v", fresh)
		}
	}
	if s := accepted.Shifts(); len(s) != 0 {
		t.Errorf("shifts %+v across the accepted change", s)
	}
	if got, n := accepted.Spread("m"); n != 10 || got > 2 {
		t.Errorf("spread %.1f%% over %d runs, want about 1%% over the 10 runs since the accepted change", got, n)
	}
	// Accepted once told: the shift is the change, and is shown no more.
	h.Judge([]string{"nightly-30"})
	if s := h.Shifts(); len(s) != 0 {
		t.Errorf("shifts %+v once the change was accepted", s)
	}
}

// Three slow runs make a new level at the look after the third; the runs after it go back, and
// the shift is told as a dip of three runs that ended, once for its beginning and once for its
// end.
func TestADipIsToldAsADip(t *testing.T) {
	runs := levelsOf(3, [2]float64{1000, 30}, [2]float64{880, 3}, [2]float64{1000, 8})
	var h History
	told := judgeRunByRun(&h, runs, map[string]string{"m": "higher"})
	shifts := h.Shifts()
	if len(shifts) != 1 || shifts[0].Run != "nightly-30" || shifts[0].Until != "nightly-33" || shifts[0].Runs != 3 {
		t.Fatalf("shifts %+v, want one dip from nightly-30 until nightly-33, 3 runs", shifts)
	}
	if len(told) != 2 || !strings.Contains(shifts[0].String(), "until run "+shifts[0].Until) {
		t.Errorf("told %+v, want the dip's beginning and its end; %q", told, shifts[0])
	}
}

// Judged night by night, and stored between nights as a schedule's ConfigMap stores it, a
// history knows what the replay of its whole series finds: bursts of 3 slow runs, whose ends
// the runs after them tell (changepoint.ChangePoint.DipEnd), and a burst at the start (every
// third series), which the first looks leave out as a warm-up (Looks.WarmUps), go on as the
// replay goes on.
func TestJudgedNightByNightAsTheReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	warmUps, dipEnds := 0, 0
	for series := range 30 {
		values := make([]float64, 150)
		for i := range values {
			values[i] = 1000 * math.Exp(0.035*rng.NormFloat64())
		}
		for i := 0; i < len(values); i++ {
			if rng.Float64() < 1.0/30 || i == 0 && series%3 == 0 {
				slow := 0.1 + 0.2*rng.Float64()
				for j := i; j < min(i+3, len(values)); j++ {
					values[j] *= 1 - slow
				}
				i += 2
			}
		}
		var h History
		for i, v := range values {
			h.Add(runAt(i, map[string]float64{"m": v}), map[string]string{"m": "higher"})
			h.Judge(nil)
			stored, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			h = History{}
			if err := json.Unmarshal(stored, &h); err != nil {
				t.Fatal(err)
			}
		}
		got := []string{"warm-up until " + h.Looks.WarmUps["m"]}
		for _, f := range h.Looks.Found {
			got = append(got, fmt.Sprintf("%s (named %s) told at %s, p %.3g at %.3g, dip end %v", f.Run, f.Told, f.At, f.NominalP, f.Level, f.DipEnd))
			dipEnds += map[bool]int{true: 1}[f.DipEnd]
		}
		replayed := changepoint.Resume(values, changepoint.Known{}, h.options())
		want := []string{"warm-up until "}
		if replayed.Start > 0 {
			want[0] += fmt.Sprintf("nightly-%02d", replayed.Start)
			warmUps++
		}
		for _, cp := range replayed.Found {
			want = append(want, fmt.Sprintf("nightly-%02d (named nightly-%02d) told at nightly-%02d, p %.3g at %.3g, dip end %v",
				cp.Index, cp.Found, cp.FoundAt-1, cp.PValue, cp.Level, cp.DipEnd))
		}
		if !slices.Equal(got, want) {
			t.Errorf("series %d: judged night by night %v, replayed %v", series, got, want)
		}
	}
	if warmUps == 0 || dipEnds == 0 {
		t.Errorf("%d series with a warm-up and %d dip ends told by the runs after them; want some of each", warmUps, dipEnds)
	}
}
