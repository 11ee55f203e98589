package compare

import (
	"fmt"
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
			Note: fmt.Sprintf("Regressed or Improved: the %v%% interval of the change (geometric means, Welch t on logs) lies "+
				"beyond the tolerance and so does the medians' change; Unchanged: both within it; otherwise Inconclusive, "+
				"as with fewer than %d runs a side.", c.ConfidencePercent, MinSamples),
			Header: []string{"Option", "Profile", "Workload", "Variant", "Metric", "Baseline", "Current", "Delta",
				"Verdict", fmt.Sprintf("%v%% interval", c.ConfidencePercent), "n"},
		}
		for _, r := range c.Rows {
			verdict := string(r.Verdict)
			if r.Reason != "" {
				verdict += ": " + r.Reason
			}
			t.Rows = append(t.Rows, []string{r.QueryServer, dash(r.Profile), r.Workload, dash(r.Variant), r.Metric,
				number(r.Baseline), number(r.Current), delta(r.DeltaPercent), verdict, interval(r.Interval),
				fmt.Sprintf("%d/%d", r.NBaseline, r.NCurrent)})
		}
		out = append(out, t)
	}
	if lines := append(append([]string(nil), c.Differences...), c.Unmatched...); len(lines) > 0 {
		out = append(out, listTable("What else differs (baseline vs current)",
			"Listed, not judged: a verdict above may come from any of these.", lines))
	}
	return out
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
	count := map[Verdict]int{}
	for _, r := range c.Rows {
		count[r.Verdict]++
	}
	var named []string
	for _, v := range []Verdict{Regressed, Improved} {
		for _, r := range c.Rows {
			if r.Verdict == v {
				named = append(named, fmt.Sprintf("%s %s/%s/%s %s %s %s", r.Workload, r.QueryServer, dash(r.Profile),
					dash(r.Variant), r.Metric, delta(r.DeltaPercent), interval(r.Interval)))
			}
		}
	}
	s := fmt.Sprintf("%d regressed, %d improved, %d unchanged, %d inconclusive",
		count[Regressed], count[Improved], count[Unchanged], count[Inconclusive])
	if len(named) > 0 {
		s += ": " + firstOf(named, summaryItems, ", ")
	}
	if len(c.Differences) > 0 {
		s += "; also differs: " + firstOf(c.Differences, 1, "; ")
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
