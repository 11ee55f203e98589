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
package history

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/results"
)

// MaxRuns is how many runs a history keeps, the newest: enough for shifts months back in a
// nightly schedule, little enough to keep in one ConfigMap.
const MaxRuns = 100

// History is the runs of one spec, oldest first.
type History struct {
	Runs []Run `json:"runs"`
	// Better says which way each metric improves: "higher" or "lower".
	Better map[string]string `json:"better,omitempty"`
	// Announced is the shifts already told (Shift.ID) that begin at a kept run. The detector
	// can lose a shift for a run, when the first runs after a slowdown's end pull the level
	// back, and find it again a run later (seen on the local cluster): it is told once.
	Announced []string `json:"announced,omitempty"`
}

// Run is one run's headline values, by metric key: results.Metric.Key for the arms' own
// numbers, RatioKey for an arm's ratio to the first arm.
type Run struct {
	Name        string             `json:"name"`
	ScheduledAt time.Time          `json:"scheduledAt"`
	Values      map[string]float64 `json:"values"`
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
// the first.
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
			if r.EstimatePercent != nil {
				key := RatioKey(r, arms.Reference)
				run.Values[key], better[key] = 1+*r.EstimatePercent/100, r.Better
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
	if i >= 0 && h.Runs[i].ScheduledAt.Equal(run.ScheduledAt) && mapsEqual(h.Runs[i].Values, run.Values) {
		return false
	}
	if i >= 0 {
		h.Runs = slices.Delete(h.Runs, i, i+1)
	}
	h.Runs = append(h.Runs, run)
	sort.SliceStable(h.Runs, func(a, b int) bool { return h.Runs[a].ScheduledAt.Before(h.Runs[b].ScheduledAt) })
	if len(h.Runs) > MaxRuns {
		h.Runs = h.Runs[len(h.Runs)-MaxRuns:]
		h.Announced = slices.DeleteFunc(h.Announced, func(id string) bool {
			return !slices.ContainsFunc(h.Runs, func(r Run) bool { return strings.HasSuffix(id, "@"+r.Name) })
		})
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

// Before is, by metric key, the values of the runs scheduled before t, oldest first: the
// history a verdict on the run at t takes the run-to-run spread from (compare.Options.History).
func (h History) Before(t time.Time) map[string][]float64 {
	out := map[string][]float64{}
	for _, r := range h.Runs {
		if !r.ScheduledAt.Before(t) {
			continue
		}
		for k, v := range r.Values {
			out[k] = append(out[k], v)
		}
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

// Spread is how much a metric differs from run to run: the coefficient of variation of its
// values (from the standard deviation of their logarithms), in percent, over n runs; 0 with
// fewer than 2.
func (h History) Spread(key string) (percent float64, n int) {
	_, values := h.Series(key)
	if len(values) < 2 {
		return 0, len(values)
	}
	var mean float64
	for _, v := range values {
		mean += math.Log(v)
	}
	mean /= float64(len(values))
	var ss float64
	for _, v := range values {
		d := math.Log(v) - mean
		ss += d * d
	}
	return 100 * (math.Exp(math.Sqrt(ss/float64(len(values)-1))) - 1), len(values)
}

// Shift is a persistent change in the level of a metric.
type Shift struct {
	Metric string `json:"metric"`
	// Run is the first run at the new level; Runs how many runs since show it.
	Run  string `json:"run"`
	Runs int    `json:"runs"`
	// ChangePercent is the new level against the old (geometric means of the runs after and
	// before), e.g. -15.2.
	ChangePercent float64 `json:"changePercent"`
	// Confidence is 1 - the change point's p-value, in percent.
	Confidence float64 `json:"confidence"`
	// Worse says whether the new level is worse: lower for a rate, higher for a time.
	Worse bool `json:"worse"`
	// Machine marks a shift in an arm's own numbers in a history whose runs set their arms
	// against a reference arm. The machine's level moves those (on the local cluster, a busier
	// node took 20% off an unchanged arm, and its reference with it), so it is shown but not
	// judged: the arms' ratios are what show a change of an arm.
	Machine bool `json:"machine,omitempty"`
}

// ID names the shift by its metric and the run it began at: "<metric>@<run>".
func (s Shift) ID() string { return s.Metric + "@" + s.Run }

// Announce records that the shift is being told, and reports whether it was not told before.
func (h *History) Announce(s Shift) bool {
	if slices.Contains(h.Announced, s.ID()) {
		return false
	}
	h.Announced = append(h.Announced, s.ID())
	return true
}

// String says it in one line: "indexing ... -15.2% from run X (3 runs, 99.9%)".
func (s Shift) String() string {
	return fmt.Sprintf("%s %+.1f%% from run %s (%d runs, %.2f%% confidence)", s.Metric, s.ChangePercent, s.Run, s.Runs, s.Confidence)
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

// Shifts are the change points of every metric of the history, newest first.
func (h History) Shifts(opts changepoint.Options) []Shift {
	var out []Shift
	keys := h.Keys()
	referenced := slices.ContainsFunc(keys, isRatio)
	for _, key := range keys {
		runs, values := h.Series(key)
		for _, cp := range changepoint.Detect(values, opts) {
			lower := cp.Ratio < 1
			out = append(out, Shift{Metric: key, Run: runs[cp.Index], Runs: len(runs) - cp.Index,
				ChangePercent: 100 * (cp.Ratio - 1), Confidence: 100 * (1 - cp.PValue), Worse: lower == (h.Better[key] != "lower"),
				Machine: referenced && !isRatio(key)})
		}
	}
	at := map[string]int{}
	for i, r := range h.Runs {
		at[r.Name] = i
	}
	sort.SliceStable(out, func(a, b int) bool { return at[out[a].Run] > at[out[b].Run] })
	return out
}

// Tables are the history's metrics with their spread from run to run, and its shifts: what
// `couchbench history` prints and the history's page shows.
func (h History) Tables(shifts []Shift) []results.Table {
	if len(h.Runs) == 0 {
		return nil
	}
	first, last := h.Runs[0], h.Runs[len(h.Runs)-1]
	metrics := results.Table{
		Title: fmt.Sprintf("%d runs, %s (%s) to %s (%s)", len(h.Runs), first.Name, first.ScheduledAt.Format("2006-01-02 15:04"),
			last.Name, last.ScheduledAt.Format("2006-01-02 15:04")),
		Note: "Between runs: the coefficient of variation of a metric over the runs, which a verdict on two runs must allow " +
			"for (spec.baseline.betweenRunsPercent). Rows named arm:reference are an arm's ratio to the first arm, run by run.",
		Header: []string{"Metric", "Runs", "Between runs", "First", "Last", "Shifts"},
	}
	count := map[string]int{}
	for _, s := range shifts {
		count[s.Metric]++
	}
	for _, key := range h.Keys() {
		_, values := h.Series(key)
		cv, n := h.Spread(key)
		metrics.Rows = append(metrics.Rows, []string{key, fmt.Sprint(n), fmt.Sprintf("%.1f%%", cv),
			fmt.Sprintf("%.4g", values[0]), fmt.Sprintf("%.4g", values[len(values)-1]), fmt.Sprint(count[key])})
	}
	tables := make([]results.Table, 0, 2)
	tables = append(tables, metrics)
	t := results.Table{
		Title: "Shifts",
		Note: "A shift: the level of a metric changed and stayed so for at least 3 runs, found over the whole series " +
			"(binary segmentation with Student's t test, Bonferroni over the splits tried, p ≤ 0.001), named by its first run; " +
			"Change: the geometric means of the runs after it and before it. Verdict: Regressed or Improved; machine: an arm's own " +
			"numbers in runs with a reference arm, which the machine's level moves as much as the arm (its ratio to the reference " +
			"says whether the arm changed), shown, not judged.",
		Header: []string{"Metric", "From run", "Change", "Runs since", "Confidence", "Verdict"},
	}
	for _, s := range shifts {
		t.Rows = append(t.Rows, []string{s.Metric, s.Run, fmt.Sprintf("%+.1f%%", s.ChangePercent), fmt.Sprint(s.Runs),
			fmt.Sprintf("%.2f%%", s.Confidence), s.Verdict()})
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"none", "-", "-", "-", "-", "-"})
	}
	return append(tables, t)
}
