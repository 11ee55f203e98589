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
// then what differs between the runs (or why they cannot be compared).
func (c Comparison) Tables() []results.Table {
	var out []results.Table
	if len(c.Refused) > 0 {
		out = append(out, listTable(fmt.Sprintf("Not comparable with baseline %s", c.Baseline),
			"The dataset and the workloads must be the same for a verdict.", c.Refused))
	} else {
		t := results.Table{
			Title: fmt.Sprintf("%s against baseline %s: %s", c.Current, c.Baseline, c.Verdict),
			Note: fmt.Sprintf("Regressed or Improved: the %v%% interval of the change (geometric means, Welch t on logs, at "+
				"least as wide as runs minutes apart differ: Between runs, from the earlier runs or assumed) lies beyond the "+
				"tolerance and so does the medians' change; Unchanged: both within it; otherwise Inconclusive, as with fewer "+
				"than %d runs a side. MDE: the smallest change the row would call 4 times in 5; Unchanged says nothing of "+
				"smaller ones.", c.ConfidencePercent, MinSamples),
			Header: []string{"Option", "Profile", "Workload", "Variant", "Metric", "Baseline", "Current", "Delta",
				"Verdict", fmt.Sprintf("%v%% interval", c.ConfidencePercent), "Between runs", "MDE", "n"},
		}
		for _, r := range c.Rows {
			between := "-"
			if r.BetweenRunsPercent != nil {
				between = fmt.Sprintf("%.1f%% (assumed)", *r.BetweenRunsPercent)
				if r.HistoryRuns > 0 {
					between = fmt.Sprintf("%.1f%% (%d runs)", *r.BetweenRunsPercent, r.HistoryRuns)
				}
			}
			t.Rows = append(t.Rows, []string{r.QueryServer, dash(r.Profile), r.Workload, dash(r.Variant), r.Metric,
				number(r.Baseline), number(r.Current), delta(r.DeltaPercent), verdictOf(r), interval(r.Interval),
				between, mde(r.MinDetectablePercent), fmt.Sprintf("%d/%d", r.NBaseline, r.NCurrent)})
		}
		out = append(out, t)
	}
	if lines := append(append([]string(nil), c.Differences...), c.Unmatched...); len(lines) > 0 {
		out = append(out, listTable("What else differs (baseline vs current)",
			"Listed, not judged: a verdict above may come from any of these.", lines))
	}
	return out
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
		"conditions. Change: the geometric mean of the round ratios (arm / %s), with a paired %v%% t interval",
		a.Reference, a.ConfidencePercent)
	if !a.Interleaved {
		title = fmt.Sprintf("Arms against %s, one after the other", a.Reference)
		how = fmt.Sprintf("The arms ran one after the other (spec.armOrder Sequential), minutes apart: they are set "+
			"against each other as two runs are, not paired. Change: the ratio of the geometric means (arm / %s), "+
			"with a %v%% interval at least as wide as runs minutes apart differ (spec.baseline.betweenRunsPercent)",
			a.Reference, a.ConfidencePercent)
	}
	t := results.Table{
		Title: title,
		Note: fmt.Sprintf("%s; Regressed: the arm is worse than %s beyond the tolerance, Improved: better, Unchanged: "+
			"within it, else Inconclusive (fewer than %d rounds, or too much spread). MDE: the smallest change the row "+
			"would call 4 times in 5.", how, a.Reference, MinSamples),
		Header: []string{"Option", "Profile", "Workload", "Variant", "Metric", a.Reference, "Arm", "Change",
			fmt.Sprintf("%v%% interval", a.ConfidencePercent), "Verdict", "MDE", "Rounds"},
	}
	for _, r := range a.Rows {
		t.Rows = append(t.Rows, []string{r.QueryServer, dash(r.Profile), r.Workload, dash(r.Variant), r.Metric,
			number(r.Baseline), number(r.Current), delta(r.EstimatePercent), interval(r.Interval), verdictOf(r),
			mde(r.MinDetectablePercent), strconv.Itoa(r.NCurrent)})
	}
	return []results.Table{t}
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
	s := rowsSummary(c.Rows)
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
	return "against " + a.Reference + ": " + rowsSummary(a.Rows)
}

// rowsSummary counts the rows' verdicts and names the first regressions, then improvements,
// with their change and interval.
func rowsSummary(rows []Row) string {
	count := map[Verdict]int{}
	for _, r := range rows {
		count[r.Verdict]++
	}
	var named []string
	for _, v := range []Verdict{Regressed, Improved} {
		for _, r := range rows {
			if r.Verdict == v {
				named = append(named, fmt.Sprintf("%s %s/%s/%s %s %s %s", r.Workload, r.QueryServer, dash(r.Profile),
					dash(r.Variant), r.Metric, delta(r.Change()), interval(r.Interval)))
			}
		}
	}
	s := fmt.Sprintf("%d regressed, %d improved, %d unchanged, %d inconclusive",
		count[Regressed], count[Improved], count[Unchanged], count[Inconclusive])
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

func interval(i *Interval) string {
	if i == nil {
		return "-"
	}
	return fmt.Sprintf("[%+.1f%%, %+.1f%%]", i.LowPercent, i.HighPercent)
}
