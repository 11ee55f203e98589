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
//   - The change is estimated as the ratio of the runs' geometric means, with a Welch t
//     interval computed on the logarithms of the samples. Each run's own spread and count
//     widen it, and so does how much runs differ from run to run; the logarithms make a
//     change a ratio, whatever the metric's unit.
//   - Regressed or Improved: the whole interval lies beyond the band [1-t, 1+t] on one side,
//     and so does the change of the medians (the headline numbers each row shows). Which side
//     is worse follows the metric's direction: lower changes/s, higher latency.
//   - Unchanged: the whole interval, and the medians' change, lie within the band.
//   - Inconclusive otherwise: the interval reaches across an edge of the band (the spread is
//     too large to tell), the medians disagree with the interval (outliers), or a run has
//     fewer than MinSamples (3) samples. Single-sample metrics — k6's latencies and rate, a
//     writes mode's docs/s, seeding — are therefore shown, never judged.
//   - Unmeasurable (Inconclusive, without numbers) when the row could not have told its
//     metric doubled: its interval and minimum detectable effect would only mirror the noise,
//     so the row says what made it so (how much runs differ, or the samples' own spread).
//
// # One level for a whole table
//
// A table judges tens of rows, each workload, variant, metric and arm, and a false verdict
// anywhere is a false alarm. So the judged rows of one table hold ConfidencePercent together
// (family-wise), by Holm's step-down procedure over their p-values of lying beyond the band
// (judgeFamily): a row's interval is at the level Holm tested it at, ConfidencePercent for a
// table of one row, narrower the more rows share the level. Rows that cannot be judged are
// not in the family; the table says how many are.
//
// # Two runs with a reference arm
//
// Runs of several arms set every arm against the first (Arms). When both runs have the same
// first arm, each other arm's ratio to it is compared too, run against run (the ratio of
// ratios): the machine's drift between the runs moves both arms alike and drops out, so the
// ratio's run-to-run spread is a fraction of the arms' own (DefaultRatioBetweenRunsPercent,
// or the history of the ratio's series, RatioKey).
//
// # Why it does not flap
//
// A verdict needs the change to exceed the tolerance and the measured spread at once, and the
// interval misses at most 100 - ConfidencePercent percent of the time over the table's judged
// rows (rows of steps that added rounds until decided are judged by their own sequences, each
// such step's at that level too).
// docs/measurement.md ("Comparing runs") has the false-alarm rates measured on noise.
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
	// History is, by metric key (results.Metric.Key, or RatioKey for an arm's ratio to the
	// first arm), the headline values of earlier runs of the same spec, such as a schedule's
	// successful runs: with MinHistory of them, how much they differ from run to run widens a
	// comparison of two runs (see betweenRuns).
	History map[string][]float64
	// BetweenRunsPercent is how much runs minutes apart are assumed to differ (a coefficient
	// of variation, in percent) for a metric with less History; 0 assumes they differ only
	// as much as a run's own repetitions do. An arm's ratio to an arm it took turns with is
	// assumed to differ by DefaultRatioBetweenRunsPercent, or by this when it is less.
	BetweenRunsPercent float64
}

// DefaultBetweenRunsPercent is how much runs minutes apart are assumed to differ where a spec
// or a command does not say (spec.baseline.betweenRunsPercent's default).
const DefaultBetweenRunsPercent = 30

// DefaultRatioBetweenRunsPercent is how much an arm's ratio to an arm it took turns with is
// assumed to differ from run to run without a history of it: the larger of the two spreads
// measured on this project's machines (docs/benchmarks.md, "Verdicts on a busy machine").
const DefaultRatioBetweenRunsPercent = 5.1

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

// betweenRuns is the run-to-run spread of the series key: the History's when it has
// MinHistory runs, else assumedPercent; false when neither is there.
func (o Options) betweenRuns(key string, assumedPercent float64) (runSpread, bool) {
	if h := o.History[key]; len(h) >= MinHistory && positive(h) {
		_, v := logMeanVar(h)
		return runSpread{sd: math.Sqrt(v), df: float64(len(h) - 1), runs: len(h)}, true
	}
	if assumedPercent > 0 {
		return runSpread{sd: math.Log1p(assumedPercent / 100), df: assumedDF}, true
	}
	return runSpread{}, false
}

// ratioAssumed is the run-to-run spread assumed for an arm's ratio to the reference: the
// measured default when the arms took turns round by round in both runs, else as much as
// runs differ (arms minutes apart, or one measurement each, leave the drift in the ratio).
func (o Options) ratioAssumed(interleaved bool) float64 {
	if interleaved {
		return min(DefaultRatioBetweenRunsPercent, o.BetweenRunsPercent)
	}
	return o.BetweenRunsPercent
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
	// ConfidencePercent is the family-wise level of the rows' verdicts, which the Judged rows
	// hold together.
	ConfidencePercent float64 `json:"confidencePercent"`
	Judged            int     `json:"judged"`
	// Refused says why the runs cannot be compared; when set there are no rows.
	Refused []string `json:"refused,omitempty"`
	// Differences are what else differs between the runs, "path: baseline vs current".
	Differences []string `json:"differences,omitempty"`
	// Unmatched are metrics only one run measured.
	Unmatched []string `json:"unmatched,omitempty"`
	// Rows are the metrics both runs measured, in the current run's order (arms as its spec
	// lists them), then, when both runs have the same first arm, every other arm's ratio to
	// it (Row.Reference).
	Rows []Row `json:"rows,omitempty"`
	// Sharper says what would narrow rows that assume how much runs differ: a reference arm,
	// or enough earlier runs to measure it.
	Sharper string `json:"sharper,omitempty"`
}

// Row is one metric of both runs and its verdict.
type Row struct {
	// QueryServer is the arm; "<arm>:<reference>" on a row of an arm's ratio to the reference
	// arm, as RatioKey names its series.
	QueryServer string `json:"queryServer"`
	// Reference is set on a row of an arm's ratio to the reference arm, compared run against
	// run: Baseline and Current are then the runs' ratios.
	Reference string `json:"reference,omitempty"`
	Profile   string `json:"profile,omitempty"`
	Workload  string `json:"workload"`
	Variant   string `json:"variant,omitempty"`
	Metric    string `json:"metric"`
	// Better is "higher" or "lower": which way the metric improves.
	Better string `json:"better"`
	// Baseline and Current are the runs' medians, the headline numbers (an arm's ratio to the
	// reference on a Reference row).
	Baseline float64 `json:"baseline"`
	Current  float64 `json:"current"`
	// DeltaPercent is the change of Baseline to Current; nil when the baseline's is not positive.
	DeltaPercent     *float64 `json:"deltaPercent,omitempty"`
	TolerancePercent float64  `json:"tolerancePercent"`
	Verdict          Verdict  `json:"verdict"`
	// EstimatePercent is the estimated change the interval is around: the ratio of the
	// geometric means, or the geometric mean of the round ratios of two arms, or the ratio of
	// two runs' arm ratios. It can differ from DeltaPercent when the samples are skewed.
	EstimatePercent *float64 `json:"estimatePercent,omitempty"`
	// Interval is the change's confidence interval, at ConfidencePercent; nil when the
	// samples allow none or the row is unmeasurable.
	Interval          *Interval `json:"interval,omitempty"`
	ConfidencePercent float64   `json:"confidencePercent,omitempty"`
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
	// Reason says why the verdict is Inconclusive, and why a row is not in the family judged.
	Reason string `json:"reason,omitempty"`
	// Unmeasurable says what made the interval too wide to be given (see unmeasurableMDE).
	Unmeasurable string `json:"unmeasurable,omitempty"`
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

	var f family
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
		f.add(row(b, m, opts))
	}
	for key := range base {
		if !seen[key] {
			c.Unmatched = append(c.Unmatched, "only in the baseline: "+key)
		}
	}
	unmatched := ratioRows(&f, armsOf(baseline), armsOf(current), opts)
	c.Unmatched = append(c.Unmatched, unmatched...)
	sort.Strings(c.Unmatched)
	c.Rows, c.Judged = f.judge()
	c.Verdict = overall(c.Rows)
	c.Sharper = sharper(c.Rows, f.trials, c.Judged, opts)
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

// family is a table's rows, each with its trial (nil when it cannot be judged), until
// judge gives the verdicts of the judged ones together.
type family struct {
	rows   []Row
	trials []*trial
}

func (f *family) add(r Row, t *trial) {
	f.rows, f.trials = append(f.rows, r), append(f.trials, t)
}

// judge sets the verdicts of the family's rows (judgeFamily) and says how many were judged.
func (f *family) judge() ([]Row, int) {
	var judged []*trial
	for _, t := range f.trials {
		if t != nil {
			judged = append(judged, t)
		}
	}
	verdicts := judgeFamily(judged)
	for i, t := range f.trials {
		if t != nil {
			f.rows[i].setJudgement(verdicts[0])
			verdicts = verdicts[1:]
		}
	}
	return f.rows, len(judged)
}

// row is a metric of two runs, or of two arms one after the other, with its trial (nil
// when it cannot be judged: its row is Inconclusive and says why).
func row(base, cur results.Metric, opts Options) (Row, *trial) {
	tolerance := opts.tolerance(cur)
	r := newRow(base, cur, tolerance)
	r.NBaseline, r.NCurrent = len(base.Samples), len(cur.Samples)
	spread, ok := opts.betweenRuns(cur.Key(), opts.BetweenRunsPercent)
	if ok {
		r.setSpread(spread)
	}
	t, reason := measure(base.Samples, cur.Samples, cur.Direction, tolerance/100, spread)
	r.Reason = reason
	return r, t
}

// setSpread shows the run-to-run spread a row allows for.
func (r *Row) setSpread(s runSpread) {
	cv := 100 * (math.Exp(s.sd) - 1)
	r.BetweenRunsPercent, r.HistoryRuns = &cv, s.runs
}

// newRow is the row of a metric set against another, before its verdict: Inconclusive until
// its family judges it.
func newRow(base, cur results.Metric, tolerancePercent float64) Row {
	r := Row{
		QueryServer: cur.QueryServer, Profile: cur.Profile, Workload: cur.Workload, Variant: cur.Variant, Metric: cur.Name,
		Better: "higher", Baseline: finite(base.Value), Current: finite(cur.Value), TolerancePercent: tolerancePercent,
		Verdict: Inconclusive,
	}
	if cur.Direction == results.LowerIsBetter {
		r.Better = "lower"
	}
	r.DeltaPercent = deltaOf(r.Baseline, r.Current)
	return r
}

func deltaOf(base, cur float64) *float64 {
	if !(base > 0) {
		return nil
	}
	delta := 100 * (cur/base - 1)
	return &delta
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
	r.ConfidencePercent, r.Unmeasurable = j.level, j.unmeasurable
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

// RatioKey names the series of an arm's ratio to the reference arm in one metric, row being
// the arm's row against the reference (Arms): "<arm>:<reference>/<profile>/<workload>/<variant>/<metric>".
func RatioKey(row Row, reference string) string {
	m := results.Metric{QueryServer: row.QueryServer + ":" + reference, Profile: row.Profile, Workload: row.Workload,
		Variant: row.Variant, Name: row.Metric}
	return m.Key()
}

// ratioRows adds to f, for runs that both set their arms against the same first arm, each
// other arm's ratio to it in the current run against the baseline's: the ratio of ratios. It
// returns what could not be matched.
func ratioRows(f *family, base, cur *armSet, opts Options) (unmatched []string) {
	switch {
	case base == nil || cur == nil:
		return nil
	case base.reference != cur.reference:
		return []string{fmt.Sprintf("the arms' ratios: the baseline's reference arm is %s, the current run's %s", base.reference, cur.reference)}
	}
	baseRatios := map[string]armRatio{}
	for _, p := range base.pairs {
		baseRatios[withoutArm(p.ref)+"@"+p.arm.QueryServer] = base.ratio(p)
	}
	for _, p := range cur.pairs {
		b, ok := baseRatios[withoutArm(p.ref)+"@"+p.arm.QueryServer]
		if !ok {
			continue
		}
		f.add(ratioRow(b, cur.ratio(p), p, cur.reference, base.interleaved && cur.interleaved, opts))
	}
	return nil
}

// ratioRow sets an arm's ratio to the reference in the current run against the baseline's.
func ratioRow(base, cur armRatio, p armPair, reference string, interleaved bool, opts Options) (Row, *trial) {
	tolerance := opts.tolerance(p.arm)
	r := newRow(p.ref, p.arm, tolerance)
	key := RatioKey(r, reference)
	r.QueryServer, r.Reference = p.arm.QueryServer+":"+reference, reference
	r.Baseline, r.Current, r.NBaseline, r.NCurrent = finite(base.value), finite(cur.value), base.rounds, cur.rounds
	r.DeltaPercent = deltaOf(r.Baseline, r.Current)
	if base.reason != "" || cur.reason != "" {
		r.Reason = "no ratio: " + base.reason + cur.reason
		return r, nil
	}
	spread, ok := opts.betweenRuns(key, opts.ratioAssumed(interleaved && base.paired && cur.paired))
	c := combine(change{est: -base.c.est, se: base.c.se, df: base.c.df}, cur.c)
	if c.se == 0 && !ok {
		r.Reason = "one measurement per arm, and nothing says how much the ratio differs from run to run"
		return r, nil
	}
	if ok {
		r.setSpread(spread)
	}
	t := &trial{c: c, medians: math.Exp(c.est), dir: p.arm.Direction, tolerance: tolerance / 100,
		noise: fmt.Sprintf("the arms' ratios within the runs are uncertain by ±%s and ±%s (standard errors)", cv(base.c.se), cv(cur.c.se))}
	t.floorAt(spread)
	return r, t
}

// sharper says what would narrow the rows that assume how much runs differ, when no arm's
// ratio was compared: a reference arm, whose ratio differs far less from run to run, or
// enough earlier runs to measure how much runs differ.
func sharper(rows []Row, trials []*trial, judged int, opts Options) string {
	var assumed *trial
	for i, t := range trials {
		if rows[i].Reference != "" {
			return ""
		}
		if t != nil && t.floor != nil && t.floor.runs == 0 && assumed == nil {
			assumed = t
		}
	}
	if assumed == nil {
		return ""
	}
	// The level of a table's first Holm step, which every judged row is at least held to.
	a := (1 - ConfidencePercent/100.0) / float64(2*judged)
	withRatio := *assumed
	withRatio.c = change{df: assumedDF}
	withRatio.floorAt(runSpread{sd: math.Log1p(opts.ratioAssumed(true) / 100), df: assumedDF})
	mde := 100 * (math.Exp(math.Log1p(withRatio.tolerance)+withRatio.c.quantile(1-a)+withRatio.c.quantile(detectPower)) - 1)
	return fmt.Sprintf("Runs are assumed to differ by %s. Sharper with a reference arm (a first arm that stays the same, "+
		"which the others take turns with): the arms' ratio is compared run against run, and it differs by about %.1f%%, "+
		"for an MDE of about %.0f%% here; or with %d earlier runs of this spec, whose spread replaces the assumption "+
		"(with fewer, not knowing it well costs more than a tenth of the MDE).",
		cv(assumed.floor.sd), opts.ratioAssumed(true), mde, historyFor(a))
}

// historyFor is the fewest earlier runs whose measured spread widens an MDE at one-sided
// level a by at most a tenth over a spread known exactly.
func historyFor(a float64) int {
	known := studentT(assumedDF).Quantile(1-a) + studentT(assumedDF).Quantile(detectPower)
	n := MinHistory
	for df := float64(n - 1); studentT(df).Quantile(1-a)+studentT(df).Quantile(detectPower) > 1.1*known; df++ {
		n++
	}
	return n
}
