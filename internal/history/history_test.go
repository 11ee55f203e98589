package history

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
)

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

func runAt(i int, values map[string]float64) Run {
	return Run{Name: fmt.Sprintf("nightly-%02d", i), ScheduledAt: t0.Add(time.Duration(i) * 24 * time.Hour), Values: values}
}

// twoArms is a run's document of arms a and b that took turns for their builds: rates[i] is
// the i-th round's docs/s of each.
func twoArms(a, b []float64) []*results.Document {
	arm := func(name string, rates []float64) results.Arm {
		s := results.IndexingSeries{Reducer: "builtin"}
		for _, r := range rates {
			s.Runs = append(s.Runs, indexing.Run{Documents: 10000, DocsPerSecond: r})
		}
		return results.Arm{QueryServer: name, Profiles: []results.Profile{{Profile: "small", Indexing: []results.IndexingSeries{s}}}}
	}
	return []*results.Document{{
		Steps: []results.StepRecord{{QueryServer: "a", Step: "index", Rounds: [][]string{{"a", "b"}, {"b", "a"}}}},
		Arms:  []results.Arm{arm("a", a), arm("b", b)},
	}}
}

// A run's entry holds each arm's median and the second arm's ratio to the first, paired
// round by round, each with the way it improves.
func TestRunOfTakesMediansAndRatios(t *testing.T) {
	docs := twoArms([]float64{1000, 1100, 900, 1000, 1050}, []float64{800, 880, 720, 800, 840})
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

// A shift is announced once; an announced shift is forgotten with the run it began at.
func TestAnnounceOnceUntilTheRunIsDropped(t *testing.T) {
	var h History
	h.Add(runAt(0, map[string]float64{"m": 1}), nil)
	h.Add(runAt(1, map[string]float64{"m": 1}), nil)
	first, second := Shift{Metric: "m", Run: "nightly-00"}, Shift{Metric: "m", Run: "nightly-01"}
	if !h.Announce(first) || h.Announce(first) || !h.Announce(second) {
		t.Fatalf("announced %v: want each shift announced once", h.Announced)
	}
	for i := 2; i <= MaxRuns; i++ {
		h.Add(runAt(i, map[string]float64{"m": 1}), nil)
	}
	if !slices.Equal(h.Announced, []string{"m@nightly-01"}) {
		t.Errorf("announced %v once nightly-00 was dropped, want [m@nightly-01]", h.Announced)
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

// Shifts say which run a change began with and whether it is worse, by the way each metric
// improves, newest first.
func TestShiftsNameTheRunAndTheDirection(t *testing.T) {
	rate := []float64{1000, 1010, 990, 1005, 995, 1000, 1002, 998, 1001, 999, 850, 855, 848, 852}
	duration := []float64{10, 10.1, 9.9, 10, 10.05, 9.95, 8, 8.1, 7.9, 8, 8.05, 7.95, 8, 8.02}
	var h History
	for i := range rate {
		h.Add(runAt(i, map[string]float64{"rate": rate[i], "time": duration[i]}), map[string]string{"rate": "higher", "time": "lower"})
	}
	shifts := h.Shifts(changepoint.Options{})
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
	if got.Confidence < 99.9 {
		t.Errorf("confidence %.3f%%", got.Confidence)
	}
}

// In runs with a reference arm, the machine moves every arm's own numbers: a busier node that
// slows both arms alike is a shift of their own numbers (shown, marked machine) and none of
// their ratio; an arm that slows alone shifts its ratio, which is judged. The shape is the
// local cluster's schedule of docs/benchmarks.md: both arms 20% down from the 8th run, the
// candidate 37% down alone from the 15th.
func TestShiftsOfOwnNumbersBesideAReferenceAreTheMachines(t *testing.T) {
	const own, ref, ratio = "cand/small/indexing/builtin/changes_per_second",
		"ref/small/indexing/builtin/changes_per_second", "cand:ref/small/indexing/builtin/changes_per_second"
	jitter := []float64{1, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.003, 0.997, 1.001, 0.999, 1.004, 0.996, 1, 1.002, 0.998, 1.001}
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
	shifts := h.Shifts(changepoint.Options{})
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

	// Without a reference arm there is no ratio to tell the machine by: every shift is judged.
	var single History
	for i, j := range jitter {
		v := 10000 * j
		if i >= 7 {
			v *= 0.8
		}
		single.Add(runAt(i, map[string]float64{own: v}), better)
	}
	if s := single.Shifts(changepoint.Options{}); len(s) != 1 || s[0].Machine || s[0].Verdict() != "Regressed" {
		t.Errorf("one arm's shifts %+v, want one, Regressed", s)
	}
}
