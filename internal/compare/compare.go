// Package compare judges a benchmark run against a baseline run, metric by metric, and gives
// a verdict only where the numbers carry one.
//
// # What is comparable
//
// Two runs are compared only when they measured the same thing: the same spec.dataset and
// spec.workloads, defaults applied (k6 thresholds excepted: they judge the read load and
// change no number). Otherwise the comparison is refused, naming every differing field
// ("spec.dataset.documents: 100000 vs 20000"). Whatever else differs is listed, never
// judged and never hidden: the CouchDB (spec.couchdb, and the vendor, version, git sha and
// node count each arm's server reported), the query servers (spec.queryServers, matched by
// name, and the runtime that really ran each arm's views), shard copies, spec.k6. Arms or
// metrics that only one run has are listed too; the rest is compared.
//
// # The rule
//
// For each metric both runs measured, with a tolerance t (5% unless Options say otherwise):
//
//   - The change is estimated as the ratio of the runs' geometric means, with a 99% Welch t
//     interval computed on the logarithms of the samples. Each run's own spread and count
//     widen it; the logarithms make a change a ratio, whatever the metric's unit.
//   - Regressed or Improved: the whole interval lies beyond the band [1-t, 1+t] on one side,
//     and so does the change of the medians (the headline numbers each row shows). Which side
//     is worse follows the metric's direction: lower changes/s, higher latency.
//   - Unchanged: the whole interval, and the medians' change, lie within the band.
//   - Inconclusive otherwise: the interval reaches across an edge of the band (the spread is
//     too large to tell), the medians disagree with the interval (outliers), or a run has
//     fewer than MinSamples (3) samples. Single-sample metrics — k6's latencies and rate, a
//     writes mode's docs/s, seeding — are therefore shown, never judged.
//
// # Why it does not flap
//
// A verdict needs the change to exceed the tolerance and the runs' measured spread at once.
// At a CV of 20% with 5 runs a side, the 99% interval spans about 0.66x to 1.52x around the
// estimate, so noise of that size cannot put it beyond ±5%, except when the interval misses:
// at most 0.5% per direction and metric for log-normal noise, less since the band must be
// cleared too. At 3% CV the interval is about ±6.5%, and a 20% regression stands clear of it.
// On 10,000 seeded draws of pure noise per case (CV 10-26%, 3-5 runs a side, log-normal or
// with stalls) the tests see 0.02-0.41% false verdicts per metric, where "the medians differ
// by more than 5%" flags 31-84%. A run has tens of metrics, which is why the level is 99% and
// not 95%.
//
// Why a t interval rather than a rank test or a bootstrap of medians: with 3 runs a side, the
// most extreme ordering of pure noise still happens 1 time in 20 per direction, and a
// bootstrap median of 3 can only be one of the 3 values, so its interval is about the runs'
// ranges and fares the same: neither can judge 3 runs without false alarms near 5% per
// metric. The t interval weighs the gap against the spread: 3 tight runs against 3 tight
// runs show a clear regression, noisy runs cannot. An outlier widens it, toward
// Inconclusive, the safe side.
package compare

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
)

// Verdict is the judgement on one metric, or on a whole comparison.
type Verdict string

const (
	Regressed    Verdict = "Regressed"
	Improved     Verdict = "Improved"
	Unchanged    Verdict = "Unchanged"
	Inconclusive Verdict = "Inconclusive"
)

// DefaultTolerancePercent is the tolerance of a metric the Options do not name.
const DefaultTolerancePercent = 5

// Options set the tolerances: how large a change must be, beyond the noise, to count.
type Options struct {
	// TolerancePercent is the tolerance of every metric not in Tolerances; 0 means
	// DefaultTolerancePercent.
	TolerancePercent float64
	// Tolerances override it, in percent, by "workload/name" ("indexing/changes_per_second"),
	// by metric name ("p95_ms") or by workload ("writes"); the most specific key wins.
	Tolerances map[string]float64
	// History is, by metric key (results.Metric.Key), the headline values of earlier runs of
	// the same spec, such as a schedule's successful runs: with MinHistory of them, how much
	// they differ from run to run widens a comparison of two runs (see betweenRuns).
	History map[string][]float64
	// BetweenRunsPercent is how much runs minutes apart are assumed to differ (a coefficient
	// of variation, in percent) for a metric with less History; 0 assumes they differ only
	// as much as a run's own repetitions do.
	BetweenRunsPercent float64
}

// DefaultBetweenRunsPercent is how much runs minutes apart are assumed to differ where a spec
// or a command does not say (spec.baseline.betweenRunsPercent's default).
const DefaultBetweenRunsPercent = 30

// OptionsOf are the Options a spec's baseline sets (nil: the defaults).
func OptionsOf(b *benchv1.Baseline) Options {
	o := Options{BetweenRunsPercent: DefaultBetweenRunsPercent}
	if b == nil {
		return o
	}
	o.TolerancePercent, o.Tolerances = float64(b.TolerancePercent), map[string]float64{}
	for k, v := range b.Tolerances {
		o.Tolerances[k] = float64(v)
	}
	if b.BetweenRunsPercent != nil {
		o.BetweenRunsPercent = float64(*b.BetweenRunsPercent)
	}
	return o
}

// MinHistory is the fewest earlier runs whose spread is taken for the spread between runs.
const MinHistory = 3

// runSpread is how much a metric's runs differ from run to run: the standard deviation of
// the logarithms of their headline values, with its degrees of freedom (huge for an assumed
// one), and how many runs showed it (0 for an assumed one).
type runSpread struct {
	sd, df float64
	runs   int
}

// betweenRuns is the run-to-run spread of a metric: the History's when it has MinHistory
// runs, else the assumed BetweenRunsPercent; false when neither is there.
func (o Options) betweenRuns(key string) (runSpread, bool) {
	if h := o.History[key]; len(h) >= MinHistory && positive(h) {
		_, v := logMeanVar(h)
		return runSpread{sd: math.Sqrt(v), df: float64(len(h) - 1), runs: len(h)}, true
	}
	if o.BetweenRunsPercent > 0 {
		return runSpread{sd: math.Log1p(o.BetweenRunsPercent / 100), df: assumedDF}, true
	}
	return runSpread{}, false
}

// assumedDF is the degrees of freedom of an assumed spread: known, as far as Student's t
// cares.
const assumedDF = 1e4

// tolerance is the tolerance of m, in percent.
func (o Options) tolerance(m results.Metric) float64 {
	for _, key := range []string{m.Workload + "/" + m.Name, m.Name, m.Workload} {
		if t, ok := o.Tolerances[key]; ok {
			return t
		}
	}
	if o.TolerancePercent == 0 {
		return DefaultTolerancePercent
	}
	return o.TolerancePercent
}

func (o Options) validate() error {
	check := func(what string, t float64) error {
		if !(t >= 0) || math.IsInf(t, 1) {
			return fmt.Errorf("%s: tolerance %v%% is not a percentage ≥ 0", what, t)
		}
		return nil
	}
	errs := make([]error, 0, 1+len(o.Tolerances))
	errs = append(errs, check("default", o.TolerancePercent))
	for _, key := range slices.Sorted(maps.Keys(o.Tolerances)) {
		errs = append(errs, check(key, o.Tolerances[key]))
	}
	return errors.Join(errs...)
}

// Comparison is a run judged against its baseline. It is stored with the results and shown
// in status, so it holds only finite numbers and encodes as JSON.
type Comparison struct {
	// Baseline and Current are the benchmarks compared.
	Baseline string `json:"baseline"`
	Current  string `json:"current"`
	// Verdict is Regressed when any row regressed, else Improved when any improved, else
	// Unchanged when any was judged, else Inconclusive (also when refused).
	Verdict Verdict `json:"verdict"`
	// ConfidencePercent is the level of the rows' intervals.
	ConfidencePercent float64 `json:"confidencePercent"`
	// Refused says why the runs cannot be compared; when set there are no rows.
	Refused []string `json:"refused,omitempty"`
	// Differences are what else differs between the runs, "path: baseline vs current".
	Differences []string `json:"differences,omitempty"`
	// Unmatched are metrics only one run measured.
	Unmatched []string `json:"unmatched,omitempty"`
	// Rows are the metrics both runs measured, in the current run's order (arms as its spec
	// lists them).
	Rows []Row `json:"rows,omitempty"`
}

// Row is one metric of both runs and its verdict.
type Row struct {
	QueryServer string `json:"queryServer"`
	Profile     string `json:"profile,omitempty"`
	Workload    string `json:"workload"`
	Variant     string `json:"variant,omitempty"`
	Metric      string `json:"metric"`
	// Better is "higher" or "lower": which way the metric improves.
	Better string `json:"better"`
	// Baseline and Current are the runs' medians, the headline numbers.
	Baseline float64 `json:"baseline"`
	Current  float64 `json:"current"`
	// DeltaPercent is the medians' change; nil when the baseline's is not positive.
	DeltaPercent     *float64 `json:"deltaPercent,omitempty"`
	TolerancePercent float64  `json:"tolerancePercent"`
	Verdict          Verdict  `json:"verdict"`
	// EstimatePercent is the estimated change the interval is around: the ratio of the
	// geometric means, or the geometric mean of the round ratios of two arms.
	EstimatePercent *float64 `json:"estimatePercent,omitempty"`
	// Interval is the change's confidence interval; nil when the samples allow none.
	Interval *Interval `json:"interval,omitempty"`
	// BetweenRunsPercent is how much runs minutes apart differ (CV), as the HistoryRuns
	// earlier runs showed it, or as assumed (HistoryRuns 0): two runs' medians differ by that
	// much with nothing changed, so the interval is at least that wide. Nil: the runs' own
	// repetitions only.
	BetweenRunsPercent *float64 `json:"betweenRunsPercent,omitempty"`
	HistoryRuns        int      `json:"historyRuns,omitempty"`
	// MinDetectablePercent is the smallest change this row would have called Regressed or
	// Improved at least 4 times in 5, at its confidence: an Unchanged row says nothing about
	// changes smaller than that. Nil when the samples allow no interval.
	MinDetectablePercent *float64 `json:"minDetectablePercent,omitempty"`
	NBaseline            int      `json:"nBaseline"`
	NCurrent             int      `json:"nCurrent"`
	// Reason says why the verdict is Inconclusive.
	Reason string `json:"reason,omitempty"`
}

// Interval is a confidence interval of a change, in percent (-12.5 is 12.5% lower).
type Interval struct {
	LowPercent  float64 `json:"low"`
	HighPercent float64 `json:"high"`
}

// Compare judges current against baseline, each a run's results documents (one per arm as
// the operator stores them, or one with every arm). It fails only on invalid Options or a
// spec that does not encode; runs that cannot be compared give a refused Comparison.
func Compare(baseline, current []*results.Document, opts Options) (Comparison, error) {
	if err := opts.validate(); err != nil {
		return Comparison{}, err
	}
	c := Comparison{Verdict: Inconclusive, ConfidencePercent: ConfidencePercent}
	if len(baseline) == 0 || len(current) == 0 {
		c.Refused = []string{fmt.Sprintf("no results documents: %d in the baseline, %d in the current run", len(baseline), len(current))}
		return c, nil
	}
	c.Baseline, c.Current = baseline[0].Benchmark, current[0].Benchmark
	refused, listed, err := specDifferences(baseline[0], current[0])
	if err != nil {
		return Comparison{}, err
	}
	arms, err := armDifferences(baseline, current, armOrder(current[0]))
	if err != nil {
		return Comparison{}, err
	}
	c.Differences = append(listed, arms...)
	if len(refused) > 0 {
		c.Refused = refused
		return c, nil
	}

	base := map[string]results.Metric{}
	for _, m := range results.Metrics(baseline...) {
		base[m.Key()] = m
	}
	seen := map[string]bool{}
	for _, m := range results.Metrics(current...) {
		seen[m.Key()] = true
		b, ok := base[m.Key()]
		if !ok {
			c.Unmatched = append(c.Unmatched, "only in the current run: "+m.Key())
			continue
		}
		c.Rows = append(c.Rows, row(b, m, opts))
	}
	for key := range base {
		if !seen[key] {
			c.Unmatched = append(c.Unmatched, "only in the baseline: "+key)
		}
	}
	sort.Strings(c.Unmatched)
	c.Verdict = overall(c.Rows)
	return c, nil
}

// armOrder is the arms as the run's spec lists them.
func armOrder(d *results.Document) []string {
	names := make([]string, len(d.Spec.QueryServers))
	for i, qs := range d.Spec.QueryServers {
		names[i] = qs.Name
	}
	return names
}

func row(base, cur results.Metric, opts Options) Row {
	tolerance := opts.tolerance(cur)
	r := newRow(base, cur, tolerance)
	r.NBaseline, r.NCurrent = len(base.Samples), len(cur.Samples)
	spread, ok := opts.betweenRuns(cur.Key())
	if ok {
		cv := 100 * (math.Exp(spread.sd) - 1)
		r.BetweenRunsPercent, r.HistoryRuns = &cv, spread.runs
	}
	r.setJudgement(judge(base.Samples, cur.Samples, cur.Direction, tolerance/100, spread))
	return r
}

// newRow is the row of a metric set against another, before its verdict.
func newRow(base, cur results.Metric, tolerancePercent float64) Row {
	r := Row{
		QueryServer: cur.QueryServer, Profile: cur.Profile, Workload: cur.Workload, Variant: cur.Variant, Metric: cur.Name,
		Better: "higher", Baseline: finite(base.Value), Current: finite(cur.Value), TolerancePercent: tolerancePercent,
	}
	if cur.Direction == results.LowerIsBetter {
		r.Better = "lower"
	}
	if r.Baseline > 0 {
		delta := 100 * (r.Current/r.Baseline - 1)
		r.DeltaPercent = &delta
	}
	return r
}

// Change is what a one-line summary shows beside the interval: the estimate the interval is
// around, or the medians' change when the samples allow no interval. (The medians' change can
// lie outside the interval: an arm's rounds and a run's repetitions are skewed.)
func (r Row) Change() *float64 {
	if r.EstimatePercent != nil {
		return r.EstimatePercent
	}
	return r.DeltaPercent
}

func (r *Row) setJudgement(j judgement) {
	r.Verdict, r.EstimatePercent, r.Interval, r.MinDetectablePercent, r.Reason = j.verdict, j.estimate, j.interval, j.minDetectable, j.reason
}

// finite keeps infinities and NaN (a rate over no time) out of the JSON, which cannot hold
// them; such a metric is Inconclusive anyway.
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

func overall(rows []Row) Verdict {
	for _, v := range []Verdict{Regressed, Improved, Unchanged} {
		for _, r := range rows {
			if r.Verdict == v {
				return v
			}
		}
	}
	return Inconclusive
}
