package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/couchbench/couchbench/internal/results"
)

// Tables lays the comparison out for results.WriteMarkdown: the rows with their verdicts,
// the arms' ratios run against run when both runs have a reference arm, then what differs
// between the runs (or why they cannot be compared).
func (c Comparison) Tables() []results.Table {
	var out []results.Table
	if len(c.Refused) > 0 {
		out = append(out, listTable(fmt.Sprintf("Not comparable with baseline %s", c.Baseline),
			"The dataset and the workloads must be the same for a verdict.", c.Refused))
	} else {
		t := results.Table{
			Title: fmt.Sprintf("%s against baseline %s: %s", c.Current, c.Baseline, c.Verdict),
			Note: "Change: the ratio of the runs' geometric means, which the interval is around (Welch t on logs, at least " +
				"as wide as runs minutes apart differ: Between runs, from the earlier runs or assumed); the medians' change " +
				"can differ when the repetitions are skewed. " + c.rule() + appendNote(c.Sharper),
			Header: header("Baseline median", "Current median", "Medians' change", changeColumn, "Interval (level)", "Verdict",
				"Between runs", "MDE", "n"),
		}
		ratios := results.Table{
			Title: "The arms' ratios to the reference arm, against the baseline's",
			Note: "Each run's ratio of an arm to the reference arm (the geometric mean of its round ratios when the arms " +
				"took turns), the current run's against the baseline's: what moved both arms between the runs drops out. " +
				"Between runs: how much the ratio differs from run to run, from the earlier runs' ratios or assumed. " +
				"Judged with the table above, as one family.",
			Header: header("Baseline ratio", "Current ratio", changeColumn, "Interval (level)", "Verdict", "Between runs", "MDE",
				"Rounds"),
		}
		for _, r := range c.Rows {
			if r.Reference != "" {
				ratios.Rows = append(ratios.Rows, []string{strings.Replace(r.QueryServer, ":", " / ", 1), dash(r.Profile),
					r.Workload, dash(r.Variant), r.Metric, number(r.Baseline), number(r.Current), delta(r.Change()),
					interval(r), verdictOf(r), between(r), mde(r.MinDetectablePercent), fmt.Sprintf("%d/%d", r.NBaseline, r.NCurrent)})
				continue
			}
			t.Rows = append(t.Rows, []string{r.QueryServer, dash(r.Profile), r.Workload, dash(r.Variant), r.Metric,
				number(r.Baseline), number(r.Current), delta(r.DeltaPercent), delta(r.EstimatePercent), interval(r),
				verdictOf(r), between(r), mde(r.MinDetectablePercent), fmt.Sprintf("%d/%d", r.NBaseline, r.NCurrent)})
		}
		out = append(out, t)
		if len(ratios.Rows) > 0 {
			out = append(out, ratios)
		}
	}
	if lines := append(append([]string(nil), c.Differences...), c.Unmatched...); len(lines) > 0 {
		out = append(out, listTable("What else differs (baseline vs current)",
			"Listed, not judged: a verdict above may come from any of these.", lines))
	}
	return out
}

// changeColumn heads the change the interval is around.
const changeColumn = "Change"

// header is a table's header: the columns that name a row's metric, then cols.
func header(cols ...string) []string {
	return append([]string{"Option", "Profile", "Workload", "Variant", "Metric"}, cols...)
}

// rule is the verdicts' rule and their family-wise level, for a table's note.
func (c Comparison) rule() string {
	return verdictRule(c.ConfidencePercent, c.Judged, "baseline")
}

// verdictRule states the rule, the family-wise level and how many rows share it; worse is
// what a Regressed row is worse than.
func verdictRule(confidence float64, judged int, worse string) string {
	return fmt.Sprintf("Regressed or Improved: the interval lies beyond the tolerance, worse or better than the %s, "+
		"and so does the medians' change; Unchanged: both within it; otherwise Inconclusive, as with fewer than %d samples "+
		"a side, which are not judged. The %d judged rows hold %v%% together (Holm): with nothing changed beyond the "+
		"tolerances, they give a false verdict at most %v times in 100 together; each row's interval is at the level Holm "+
		"tested it at. MDE: the smallest "+
		"change the row would call 4 times in 5; Unchanged says nothing of smaller ones. Unmeasurable: it could not have "+
		"told its metric doubled, and says why.", worse, MinSamples, judged, confidence, 100-confidence)
}

func appendNote(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

// between is the run-to-run spread a row allows for, and where it comes from.
func between(r Row) string {
	switch {
	case r.BetweenRunsPercent == nil:
		return "-"
	case r.HistoryRuns > 0:
		return fmt.Sprintf("%.1f%% (%d runs)", *r.BetweenRunsPercent, r.HistoryRuns)
	}
	return fmt.Sprintf("%.1f%% (assumed)", *r.BetweenRunsPercent)
}

// RunTables are a run's tables (results.Report's) and, for a run of several arms, every arm
// against the first (with the tolerances of the run's spec.baseline): what every rendering of
// a run shows, the operator's results ConfigMap and `couchbench run` and `report` alike.
func RunTables(docs []*results.Document) ([]results.Table, error) {
	tables := results.NewReport(docs...).Tables()
	var opts Options
	if len(docs) > 0 {
		opts = OptionsOf(docs[0].Spec.Baseline)
	}
	arms, err := Arms(docs, opts)
	if err != nil || arms == nil {
		return tables, err
	}
	return append(tables, arms.Tables()...), nil
}

// WriteRun writes a run as Markdown: the report's heading, then RunTables.
func WriteRun(w io.Writer, docs []*results.Document) error {
	tables, err := RunTables(docs)
	if err != nil {
		return err
	}
	if err := results.NewReport(docs...).WriteHeader(w); err != nil {
		return err
	}
	return results.WriteMarkdown(w, tables)
}

// Tables lays the arms' comparison out: every arm against the first, with its own numbers.
func (a ArmsComparison) Tables() []results.Table {
	title := fmt.Sprintf("Arms against %s, paired round by round", a.Reference)
	how := fmt.Sprintf("The arms took turns round by round in a random order, so each round's pair met the same "+
		"conditions. Change: the geometric mean of the round ratios (arm / %s), with a paired t interval; the medians' "+
		"change can differ when the rounds are skewed", a.Reference)
	if a.Duet {
		title = fmt.Sprintf("Arms against %s, in duet, paired round by round", a.Reference)
		how = fmt.Sprintf("The arms took each unit at the same moment, each on a CouchDB of its own, so each round's pair "+
			"met the same neighbours for the same seconds (k6's reads took turns). Change: the geometric mean of the round ratios (arm / %s), "+
			"with a paired t interval; the medians' change can differ when the rounds are skewed", a.Reference)
	}
	if !a.Interleaved {
		title = fmt.Sprintf("Arms against %s, one after the other", a.Reference)
		how = fmt.Sprintf("The arms ran one after the other (spec.armOrder Sequential), minutes apart: they are set "+
			"against each other as two runs are, not paired. Change: the ratio of the geometric means (arm / %s), "+
			"with an interval at least as wide as runs minutes apart differ (spec.baseline.betweenRunsPercent)",
			a.Reference)
	}
	t := results.Table{
		Title: title,
		Note:  how + ". " + verdictRule(a.ConfidencePercent, a.Judged, a.Reference) + sequentialNote(a),
		Header: header(a.Reference+" median", "Arm median", "Medians' change", changeColumn, "Interval (level)", "Verdict", "MDE",
			"Rounds"),
	}
	for _, r := range a.Rows {
		t.Rows = append(t.Rows, []string{r.QueryServer, dash(r.Profile), r.Workload, dash(r.Variant), r.Metric,
			number(r.Baseline), number(r.Current), delta(r.DeltaPercent), delta(r.EstimatePercent), interval(r), verdictOf(r),
			mde(r.MinDetectablePercent), strconv.Itoa(r.NCurrent)})
	}
	return []results.Table{t}
}

// sequentialNote says how the rows of steps that added rounds until decided were judged.
func sequentialNote(a ArmsComparison) string {
	if len(a.Sequential) == 0 {
		return ""
	}
	st := a.Sequential[0]
	return fmt.Sprintf(" Steps that added rounds until decided (spec.sequential; %s) are judged otherwise, and are not "+
		"among the judged rows above: each row by a confidence sequence, valid at whatever round the step stopped, a step's "+
		"rows holding %v%% together (Bonferroni: each row's level says its share), apart from the judged rows' %v%%. "+
		"Regressed or Improved: the interval clears ±%d%%; Unchanged: it lies within ±%d%%; a row's first decision stands, "+
		"and its interval is the one that decided it (the round it says); Inconclusive: neither when the step stopped, "+
		"its interval the last. No MDE.",
		DescribeAll(a.Sequential), a.ConfidencePercent, a.ConfidencePercent, st.TolerancePercent, st.TargetPercent)
}

// verdictOf is a row's verdict with the reason for an Inconclusive one.
func verdictOf(r Row) string {
	if r.Reason != "" {
		return string(r.Verdict) + ": " + r.Reason
	}
	return string(r.Verdict)
}

func mde(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *p)
}

func listTable(title, note string, lines []string) results.Table {
	t := results.Table{Title: title, Note: note, Header: []string{"Difference"}}
	for _, l := range lines {
		t.Rows = append(t.Rows, []string{l})
	}
	return t
}

// summaryItems is how many regressed and improved rows Summary names.
const summaryItems = 3

// Summary is the comparison in one line, for a condition message: the counts, the first
// regressions then improvements with their change and interval, and the first difference,
// e.g. "1 regressed, 0 improved, 14 unchanged, 3 inconclusive: indexing js/small/builtin
// changes_per_second -12.3% [-18.0%, -6.1%]; also differs: arms[js].version: 3.4.3 vs 3.5.1".
func (c Comparison) Summary() string {
	if len(c.Refused) > 0 {
		return "not comparable with baseline " + c.Baseline + ": " + strings.Join(c.Refused, "; ")
	}
	s := rowsSummary(c.Rows, c.Judged)
	if len(c.Differences) > 0 {
		s += "; also differs: " + firstOf(c.Differences, 1, "; ")
	}
	return s
}

// Verdict is the arms' comparison's overall verdict: Regressed when an arm is worse than the
// reference in any row, and so on, as a comparison's.
func (a ArmsComparison) Verdict() Verdict { return overall(a.Rows) }

// Summary is the arms' comparison in one line, as a comparison's.
func (a ArmsComparison) Summary() string {
	s := "against " + a.Reference + ": " + rowsSummary(a.Rows, a.Judged)
	if len(a.Sequential) > 0 {
		s += "; rounds until decided: " + DescribeAll(a.Sequential)
	}
	return s
}

// rowsSummary counts the rows' verdicts and names the first regressions, then improvements,
// with their change and interval.
func rowsSummary(rows []Row, judged int) string {
	count := map[Verdict]int{}
	for _, r := range rows {
		count[r.Verdict]++
	}
	var named []string
	for _, v := range []Verdict{Regressed, Improved} {
		for _, r := range rows {
			if r.Verdict == v {
				named = append(named, fmt.Sprintf("%s %s/%s/%s %s %s %s", r.Workload, r.QueryServer, dash(r.Profile),
					dash(r.Variant), r.Metric, delta(r.Change()), interval(r)))
			}
		}
	}
	s := fmt.Sprintf("%d regressed, %d improved, %d unchanged, %d inconclusive (%d judged together at %v%%)",
		count[Regressed], count[Improved], count[Unchanged], count[Inconclusive], judged, float64(ConfidencePercent))
	if len(named) > 0 {
		s += ": " + firstOf(named, summaryItems, ", ")
	}
	return s
}

// firstOf joins the first n items and says how many were left out.
func firstOf(items []string, n int, sep string) string {
	if len(items) <= n {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:n], sep) + fmt.Sprintf(" and %d more", len(items)-n)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// number prints a value with four significant digits, without an exponent: 12345, 123.4,
// 0.5123.
func number(v float64) string {
	if v == 0 {
		return "0"
	}
	decimals := max(0, 3-int(math.Floor(math.Log10(math.Abs(v)))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func percent(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "%" }

func delta(d *float64) string {
	if d == nil {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", *d)
}

// interval is a row's interval with its level, or what made it unmeasurable.
func interval(r Row) string {
	switch {
	case r.Unmeasurable != "":
		return r.Unmeasurable
	case r.Interval == nil:
		return "-"
	}
	return fmt.Sprintf("[%+.1f%%, %+.1f%%] (%s%%)", r.Interval.LowPercent, r.Interval.HighPercent,
		strconv.FormatFloat(r.ConfidencePercent, 'f', -1, 64))
}
