// Package history is the record of a series of runs of one spec — a schedule's runs, or
// results files given to `couchbench history` — as one headline value per run and metric, and
// what that record says: how much the runs differ from run to run with nothing changed (what
// a verdict on two runs must allow for), and where the level of a metric shifted
// (internal/changepoint).
//
// Each run contributes its metrics' medians (results.Metrics) and, when its arms were set
// against its first arm (internal/compare.Arms), each arm's ratio to the first: the series
// of ratios leaves out much of the machine's drift from run to run, which moves arms that
// took turns alike, and so shows a shift of one arm (a CouchDB build, a setting) long before
// the arm's own numbers can.
//
// # The false-alarm budget
//
// Every run is a new look at every series, and a schedule is left on for months: a level per
// look says nothing of a schedule's life. So the judged series of a history (the ratios when
// its runs have a reference arm, else every metric) share one budget, FalseAlarmsPerRun: each
// is searched for shifts (changepoint.Detect, run by run as the schedule saw them) at an
// equal share of it, and all of them together show a false shift at most that often per run
// with nothing changed. The arms' own numbers beside a reference arm (machine) are searched at
// the same per-series level and shown, not judged: they are not in the budget.
package history

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/results"
)

// FalseAlarmsPerRun is a schedule's false-alarm budget: with nothing changed, the chance per
// run that any of its judged series shows a shift, which is one false shift per 1,000 unchanged
// runs over all of them (nightly, about one in three years). Each judged series gets an equal
// share of it (changepoint.Options.FalseAlarmsPerRun).
const FalseAlarmsPerRun = 0.001

// Budget says the budget in words, over that many judged series: "1 in 1000 runs over 3
// judged metrics".
func Budget(judged int) string {
	metrics := "metrics"
	if judged == 1 {
		metrics = "metric"
	}
	return fmt.Sprintf("1 in %.0f runs over %d judged %s", 1/FalseAlarmsPerRun, judged, metrics)
}

// MaxRuns is how many runs a history keeps, the newest: nearly three years of a nightly
// schedule. The ConfigMap's size may cut it sooner (controllers' fitHistory), for schedules of
// many metrics: the looks go on from what they found (Looks) either way.
const MaxRuns = 1000

// History is the runs of one spec, oldest first.
type History struct {
	Runs []Run `json:"runs"`
	// Better says which way each metric improves: "higher" or "lower".
	Better map[string]string `json:"better,omitempty"`
	// Looks is what the schedule's looks at the history found, and which runs they saw (Judge).
	Looks *Looks `json:"looks,omitempty"`
	// Announced is the shifts told (Shift.ID) by a schedule before its history kept Looks: the
	// first Judge tells none of them again, and drops it.
	Announced []string `json:"announced,omitempty"`
}

// Looks is what a schedule's looks at its history found: every change point of every series
// in the runs the history keeps, and how far the looks saw.
type Looks struct {
	// Through is when the newest run the looks saw was scheduled: the runs scheduled after it
	// are the next look's to judge.
	Through time.Time `json:"through"`
	Found   []Found   `json:"found,omitempty"`
	// Accepted are the runs where a change the team accepted began, as the newest Judge was
	// told (Judge).
	Accepted []string `json:"accepted,omitempty"`
	// WarmUps are, by metric key, the first run of a series whose first looks left its first
	// runs out as a warm-up (changepoint.Known.Start): later looks, which no longer decide
	// it, keep it.
	WarmUps map[string]string `json:"warmUps,omitempty"`
}

// Found is a change point a look found in a metric's series, by the runs that name it.
type Found struct {
	Metric string `json:"metric"`
	// Run is its first run; Told the first run the look that found it named (while its level
	// is young, later looks move Run by at most changepoint.RefineReach runs from Told); At the
	// newest run of that look.
	Run  string `json:"run"`
	Told string `json:"told"`
	At   string `json:"at"`
	// NominalP and Level are the test's, as in Shift.
	NominalP float64 `json:"nominalP"`
	Level    float64 `json:"level"`
	// DipEnd: it ended a dip, and the level the dip interrupted went on (changepoint.ChangePoint.DipEnd).
	DipEnd bool `json:"dipEnd,omitempty"`
}

// ID names the change point by its metric and the look that found it, which later looks never
// move: "<metric>@<run>".
func (f Found) ID() string { return f.Metric + "@" + f.At }

// Run is one run's headline values, by metric key: results.Metric.Key for the arms' own
// numbers, RatioKey for an arm's ratio to the first arm.
type Run struct {
	Name        string             `json:"name"`
	ScheduledAt time.Time          `json:"scheduledAt"`
	Values      map[string]float64 `json:"values"`
	// OncePerArm are the ratios of this run that are not paired round by round: the workload
	// gave one figure per arm (seeding without dataset.seedRepetitions, k6's latency
	// percentiles over all its repetitions) or fewer than compare.MinSamples, so the ratio is
	// of the arms' medians, not of measurements taken back to back.
	OncePerArm []string `json:"oncePerArm,omitempty"`
	// Change is what changed in the schedule's template since the run before, as the schedule
	// annotated the run (its generation, the fields and the revision, e.g. "generation 7:
	// template.spec.couchdb.provision.image (revision main@sha1:0c6fe0d)"); empty when nothing
	// did. A shift that begins at this run, or up to
	// changepoint.RefineReach runs after it, names it (Shift.Follows).
	Change string `json:"change,omitempty"`
}

// RatioKey names the series of an arm's ratio to the reference arm in one metric:
// "<arm>:<reference>/<profile>/<workload>/<variant>/<metric>".
func RatioKey(row compare.Row, reference string) string {
	m := results.Metric{QueryServer: row.QueryServer + ":" + reference, Profile: row.Profile, Workload: row.Workload,
		Variant: row.Variant, Name: row.Metric}
	return m.Key()
}

// isRatio says whether key names an arm's ratio to the reference arm (RatioKey).
func isRatio(key string) bool {
	arm, _, _ := strings.Cut(key, "/")
	return strings.Contains(arm, ":")
}

// RunOf is a run's entry: its metrics' medians and, with several arms, each arm's ratio to
// the first in every metric both measured: the paired estimate where the rounds pair, else the
// ratio of the medians, marked OncePerArm.
func RunOf(name string, at time.Time, docs []*results.Document) (Run, map[string]string, error) {
	run := Run{Name: name, ScheduledAt: at.UTC(), Values: map[string]float64{}}
	better := map[string]string{}
	for _, m := range results.Metrics(docs...) {
		if finite(m.Value) {
			run.Values[m.Key()], better[m.Key()] = m.Value, direction(m.Direction)
		}
	}
	arms, err := compare.Arms(docs, compare.Options{})
	if err != nil {
		return Run{}, nil, err
	}
	if arms != nil {
		for _, r := range arms.Rows {
			change := r.Change()
			if change == nil || !finite(1+*change/100) {
				continue
			}
			key := RatioKey(r, arms.Reference)
			run.Values[key], better[key] = 1+*change/100, r.Better
			if r.EstimatePercent == nil || min(r.NBaseline, r.NCurrent) < compare.MinSamples {
				run.OncePerArm = append(run.OncePerArm, key)
			}
		}
	}
	return run, better, nil
}

func direction(d results.Direction) string {
	if d == results.LowerIsBetter {
		return "lower"
	}
	return "higher"
}

func finite(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// Add records a run, replacing an entry of the same name, in the order of their scheduled
// times, and keeps the newest MaxRuns. It reports whether the history changed.
func (h *History) Add(run Run, better map[string]string) bool {
	i := slices.IndexFunc(h.Runs, func(r Run) bool { return r.Name == run.Name })
	if i >= 0 && h.Runs[i].ScheduledAt.Equal(run.ScheduledAt) && mapsEqual(h.Runs[i].Values, run.Values) &&
		slices.Equal(h.Runs[i].OncePerArm, run.OncePerArm) && h.Runs[i].Change == run.Change {
		return false
	}
	if i >= 0 {
		h.Runs = slices.Delete(h.Runs, i, i+1)
	}
	h.Runs = append(h.Runs, run)
	sort.SliceStable(h.Runs, func(a, b int) bool { return h.Runs[a].ScheduledAt.Before(h.Runs[b].ScheduledAt) })
	if len(h.Runs) > MaxRuns {
		h.Runs = h.Runs[len(h.Runs)-MaxRuns:]
	}
	if h.Better == nil {
		h.Better = map[string]string{}
	}
	for k, v := range better {
		h.Better[k] = v
	}
	return true
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Before is, by metric key, the values of the current level as of t (the runs scheduled
// before t, since the newest shift or accepted change the looks up to then knew, a dip that
// ended among them: changepoint.Known.LevelStart), oldest
// first: the history a verdict on the run at t takes the run-to-run spread from
// (compare.Options.History). A shift before t would widen it otherwise: the spread across two
// levels is their distance as much as the noise.
func (h History) Before(t time.Time) map[string][]float64 {
	past := h.asOf(t)
	out := map[string][]float64{}
	for _, key := range past.Keys() {
		_, values, known := past.look(key)
		out[key] = values[known.LevelStart():]
	}
	return out
}

// Keys are the metrics any run has, sorted: the arms' own first, then the ratios.
func (h History) Keys() []string {
	seen := map[string]bool{}
	for _, r := range h.Runs {
		for k := range r.Values {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Series is a metric's values and the runs they belong to, oldest first; runs without it are
// left out.
func (h History) Series(key string) (runs []string, values []float64) {
	for _, r := range h.Runs {
		if v, ok := r.Values[key]; ok {
			runs, values = append(runs, r.Name), append(values, v)
		}
	}
	return runs, values
}

// Spread is how much a metric differs from run to run within its current level (since its
// newest shift or accepted change, a dip that ended among its runs): the coefficient of variation of those values (from the
// standard deviation of their logarithms), in percent, over n runs; 0 with fewer than 2.
func (h History) Spread(key string) (percent float64, n int) {
	_, values, known := h.look(key)
	return spread(values[known.LevelStart():])
}

// spread is the coefficient of variation of values, in percent, over how many there are.
func spread(values []float64) (percent float64, n int) {
	if len(values) < 2 {
		return 0, len(values)
	}
	logs := make([]float64, len(values))
	for i, v := range values {
		logs[i] = math.Log(v)
	}
	return 100 * math.Expm1(stat.StdDev(logs, nil)), len(values)
}

// referenced says whether the history's runs set their arms against a reference arm: then
// only the ratios are judged.
func (h History) referenced() bool { return slices.ContainsFunc(h.Keys(), isRatio) }

// JudgedKeys are the series the history judges, sorted: the ratios when its runs have a
// reference arm, else every metric.
func (h History) JudgedKeys() []string {
	keys := h.Keys()
	if h.referenced() {
		return slices.DeleteFunc(keys, func(k string) bool { return !isRatio(k) })
	}
	return keys
}

// options are every series' detector options: an equal share of FalseAlarmsPerRun for each
// judged series. The machine's series get the same, though they are not in the budget, so
// that they are shown as a judged series would be.
func (h History) options() changepoint.Options {
	return changepoint.Options{FalseAlarmsPerRun: FalseAlarmsPerRun / float64(max(len(h.JudgedKeys()), 1))}
}

// OncePerArm says whether a ratio series is of arms measured once each (Run.OncePerArm) in
// its newest run.
func (h History) OncePerArm(key string) bool {
	for i := len(h.Runs) - 1; i >= 0; i-- {
		if _, ok := h.Runs[i].Values[key]; ok {
			return slices.Contains(h.Runs[i].OncePerArm, key)
		}
	}
	return false
}

// How the history treats a series (Role).
const (
	RoleJudged     = "judged"
	RoleOncePerArm = "judged, once per arm" // a ratio of arms measured once each (OncePerArm)
	RoleMachine    = "machine, not judged"  // an arm's own numbers beside a reference arm
)

// Role says how the history treats a series: RoleJudged, RoleOncePerArm or RoleMachine.
func (h History) Role(key string) string {
	switch {
	case h.referenced() && !isRatio(key):
		return RoleMachine
	case h.OncePerArm(key):
		return RoleOncePerArm
	}
	return RoleJudged
}

// Detection is what the history can find in one judged series at its current noise.
type Detection struct {
	Metric string `json:"metric"`
	// Runs is how many runs the current level has, which NoisePercent is measured over.
	Runs int `json:"runs"`
	// NoisePercent is the series' spread from run to run within its current level (Spread).
	NoisePercent float64 `json:"noisePercent"`
	// ShiftPercent is the smallest shift found 90% of the time within MinAfter runs (more
	// while the level is short or has outliers) at that noise and the series' share of the
	// budget (changepoint.Detectable); 0 when Unmeasurable says why there is none.
	ShiftPercent float64 `json:"shiftPercent,omitempty"`
	Unmeasurable string  `json:"unmeasurable,omitempty"`
}

// maxDetectablePercent is the largest detectable shift stated as a number: a series that
// would not show a shift short of doubling sees nothing a schedule is for, and a short level
// with few degrees of freedom gives figures far beyond it.
const maxDetectablePercent = 100

// Shift says the detectable shift: "12.0%", or why there is none.
func (d Detection) Shift() string {
	if d.Unmeasurable != "" {
		return d.Unmeasurable
	}
	return fmt.Sprintf("%.1f%%", d.ShiftPercent)
}

// Detections are the judged series' detectable shifts, by metric key.
func (h History) Detections() []Detection {
	opts := h.options()
	keys := h.JudgedKeys()
	out := make([]Detection, 0, len(keys))
	for _, key := range keys {
		_, values, known := h.look(key)
		d := Detection{Metric: key}
		d.NoisePercent, d.Runs = spread(values[known.LevelStart():])
		switch shift, ok := changepoint.Detectable(values, known, opts); {
		case !ok:
			d.Unmeasurable = "too few runs"
		case !(100*shift <= maxDetectablePercent):
			d.Unmeasurable = fmt.Sprintf("over %d%%: too few runs at this noise", maxDetectablePercent)
		default:
			d.ShiftPercent = 100 * shift
		}
		out = append(out, d)
	}
	return out
}

// Shift is a persistent change in the level of a metric, or a dip: a change that went back.
type Shift struct {
	Metric string `json:"metric"`
	// Run is the first run at the new level; Runs how many runs since show it (for a dip, how
	// many it lasted).
	Run  string `json:"run"`
	Runs int    `json:"runs"`
	// FoundAt is the newest run of the look that found it.
	FoundAt string `json:"foundAt"`
	// ChangePercent is the new level against the old (geometric means of the runs after and
	// before), e.g. -15.2.
	ChangePercent float64 `json:"changePercent"`
	// Until is, for a dip, the first run back past halfway to the level before it: the level
	// it began did not last (changepoint.ChangePoint.Returns); empty for a shift that lasts.
	Until string `json:"until,omitempty"`
	// NominalP is the p-value of the test of the shift's own split, at the run that found it
	// or, once its first run was moved, at the run that moved it, as the test's model of the
	// noise (AR(1), normal) gives it: nominal, not the chance of a false shift, which the
	// budget bounds (docs/measurement.md measures how far the two part). Level is the level of
	// the test that found it, which NominalP is within: the series' share of the schedule's
	// false-alarm budget per run, split over the tests of one run (changepoint.ChangePoint).
	NominalP float64 `json:"nominalP"`
	Level    float64 `json:"level"`
	// Worse says whether the new level is worse: lower for a rate, higher for a time.
	Worse bool `json:"worse"`
	// Machine marks a shift in an arm's own numbers in a history whose runs set their arms
	// against a reference arm. The machine's level moves those (on the local cluster, a busier
	// node took 20% off an unchanged arm, and its reference with it), so it is shown but not
	// judged: the arms' ratios are what show a change of an arm.
	Machine bool `json:"machine,omitempty"`
	// Follows is the change of the schedule's template (Run.Change) at its first run or up to
	// changepoint.RefineReach runs before it; empty when there was none.
	Follows string `json:"follows,omitempty"`
	// ended names a dip's end by its metric and the look that found it, as ID does the shift.
	ended string
}

// ID names the shift by its metric and the look that found it, which later looks never move:
// "<metric>@<run>".
func (s Shift) ID() string { return s.Metric + "@" + s.FoundAt }

// String says it in one line: "indexing ... -15.2% from run X (3 runs, found at run Y,
// nominal p = 2.1e-06 at a test level of 6.2e-05)".
func (s Shift) String() string {
	what := fmt.Sprintf("%s %+.1f%% from run %s (%d runs", s.Metric, s.ChangePercent, s.Run, s.Runs)
	if s.Until != "" {
		what = fmt.Sprintf("%s %+.1f%% from run %s until run %s (a dip of %d runs", s.Metric, s.ChangePercent, s.Run, s.Until, s.Runs)
	}
	if s.Follows != "" {
		what += ", after " + s.Follows
	}
	return fmt.Sprintf("%s, found at run %s, nominal p = %.1e at a test level of %.1e)", what, s.FoundAt, s.NominalP, s.Level)
}

// Verdict is what the shift says: "Regressed", "Improved", or "machine" (not judged).
func (s Shift) Verdict() string {
	switch {
	case s.Machine:
		return "machine"
	case s.Worse:
		return "Regressed"
	}
	return "Improved"
}

// Judged are the shifts that say something changed in what was measured, not only in the
// machine: all of them but the Machine ones.
func Judged(shifts []Shift) []Shift {
	var out []Shift
	for _, s := range shifts {
		if !s.Machine {
			out = append(out, s)
		}
	}
	return out
}

// Shifts are the change points of every metric of the history, newest first, each judged
// series searched at its share of FalseAlarmsPerRun, as the looks left them and with looks at
// the runs they did not see; a change point that takes a level back within a dip's reach
// ends the shift before it (Until) rather than being one.
func (h History) Shifts() []Shift {
	var out []Shift
	referenced := h.referenced()
	for _, key := range h.Keys() {
		runs, _, known := h.look(key)
		for i, cp := range known.Found {
			if cp.Returns {
				continue
			}
			lower := cp.Ratio < 1
			shift := Shift{Metric: key, Run: runs[cp.Index], Runs: len(runs) - cp.Index, FoundAt: runs[cp.FoundAt-1],
				ChangePercent: 100 * (cp.Ratio - 1), NominalP: cp.PValue, Level: cp.Level, Worse: lower == (h.Better[key] != "lower"),
				Machine: referenced && !isRatio(key), Follows: h.follows(runs[cp.Index])}
			if i+1 < len(known.Found) && known.Found[i+1].Returns {
				end := known.Found[i+1]
				shift.Until, shift.Runs, shift.ended = runs[end.Index], end.Index-cp.Index, key+"@"+runs[end.FoundAt-1]
			}
			out = append(out, shift)
		}
	}
	at := map[string]int{}
	for i, r := range h.Runs {
		at[r.Name] = i
	}
	sort.SliceStable(out, func(a, b int) bool { return at[out[a].Run] > at[out[b].Run] })
	return out
}

// follows is the template change at run or up to changepoint.RefineReach runs before it, the
// nearest first.
func (h History) follows(run string) string {
	i := slices.IndexFunc(h.Runs, func(r Run) bool { return r.Name == run })
	for j := i; j >= 0 && j >= i-changepoint.RefineReach; j-- {
		if h.Runs[j].Change != "" {
			return h.Runs[j].Change
		}
	}
	return ""
}

// Tables are the history's metrics with their spread from run to run within their current
// level, what each judged one would find, and its shifts: what `couchbench history` prints and
// the history's page shows.
func (h History) Tables(shifts []Shift) []results.Table {
	if len(h.Runs) == 0 {
		return nil
	}
	detectable := map[string]string{}
	judged := h.Detections()
	for _, d := range judged {
		detectable[d.Metric] = d.Shift()
	}
	first, last := h.Runs[0], h.Runs[len(h.Runs)-1]
	metrics := results.Table{
		Title: fmt.Sprintf("%d runs, %s (%s) to %s (%s)", len(h.Runs), first.Name, first.ScheduledAt.Format("2006-01-02 15:04"),
			last.Name, last.ScheduledAt.Format("2006-01-02 15:04")),
		Note: "Between runs: the coefficient of variation of a metric over the runs of its current level (since its newest " +
			"shift; a dip that ended is among them), which a verdict on two runs must allow for (spec.baseline.betweenRunsPercent). Detectable shift: the " +
			"smallest shift of a judged metric found 90% of the time within 3 runs (more while its level is short or has " +
			"outliers) at that spread. Rows named arm:reference are " +
			"an arm's ratio to the first arm, run by run, paired round by round; once per arm: the workload gave one figure per " +
			"arm, the ratio is of those, not of measurements back to back, judged like the others at its own series' spread. " +
			"Machine: an arm's own numbers beside a reference arm, shown, not judged.",
		Header: []string{"Metric", "Judged", "Runs", "At its level", "Between runs", "Detectable shift", "First", "Last", "Shifts"},
	}
	count := map[string]int{}
	for _, s := range shifts {
		count[s.Metric]++
	}
	for _, key := range h.Keys() {
		_, values := h.Series(key)
		cv, n := h.Spread(key)
		shift, ok := detectable[key]
		if !ok {
			shift = "-"
		}
		metrics.Rows = append(metrics.Rows, []string{key, h.Role(key), fmt.Sprint(len(values)), fmt.Sprint(n),
			fmt.Sprintf("%.1f%%", cv), shift, fmt.Sprintf("%.4g", values[0]), fmt.Sprintf("%.4g", values[len(values)-1]),
			fmt.Sprint(count[key])})
	}
	tables := make([]results.Table, 0, 2)
	tables = append(tables, metrics)
	t := results.Table{
		Title: "Shifts",
		Note: fmt.Sprintf("A shift: the level of a metric changed and stayed so for at least 3 runs, found online: each run "+
			"judged once, at the first look after it, against a per-run false-alarm level; budget one false shift per %.0f runs "+
			"over the judged metrics (%d here, %.1e per run each), named by its first run. Change: the geometric means of the "+
			"runs after it and before it. Nominal p: the p-value of the test of its own split at the run that found it (or, "+
			"its first run moved within its first 10 runs, at the run that moved it), as the test's model of the noise gives "+
			"it, not the chance of a false shift (the budget bounds that); Level: the level of the test that found it, the "+
			"metric's share per run split over the tests of a run (a step found late, over the newest 10 to 40 runs, has a "+
			"tenth of it). Until: a dip's end, the first run back past halfway. Verdict: Regressed or Improved; machine: an "+
			"arm's own numbers in runs with a reference arm, which the machine's level moves as much as the arm (its ratio to "+
			"the reference says whether the arm changed), shown, not judged.",
			1/FalseAlarmsPerRun, len(judged), h.options().FalseAlarmsPerRun),
		Header: []string{"Metric", "From run", "Change", "Runs", "Nominal p", "Level", "Verdict", "Until", "Found at"},
	}
	for _, s := range shifts {
		until := s.Until
		if until == "" {
			until = "-"
		}
		t.Rows = append(t.Rows, []string{s.Metric, s.Run, fmt.Sprintf("%+.1f%%", s.ChangePercent), fmt.Sprint(s.Runs),
			fmt.Sprintf("%.1e", s.NominalP), fmt.Sprintf("%.1e", s.Level), s.Verdict(), until, s.FoundAt})
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"none", "-", "-", "-", "-", "-", "-", "-", "-"})
	}
	return append(tables, t)
}
