// Package report renders a run's results as one self-contained HTML page: the tables of
// results.Report and the charts of internal/plot inline as SVG; and a history of runs as
// one, with each metric's trend and its shifts. The page refers to nothing
// outside itself (no scripts, stylesheets, fonts or images to fetch), so that it can be
// stored with the results, attached or opened offline as it is.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/history"
	"github.com/couchbench/couchbench/internal/plot"
	"github.com/couchbench/couchbench/internal/results"
)

// HTML writes the page of a run's documents: a header naming the benchmark and the server,
// the charts, the results tables and then comparison, extra tables for the caller to pass
// in (e.g. this run against a baseline); nil for none.
func HTML(w io.Writer, comparison []results.Table, docs ...*results.Document) error {
	return write(w, comparison, [][]*results.Document{docs})
}

// HTMLRuns writes one page of several runs (results.Runs): a header listing them, then a
// section per run, labelled with its benchmark, run id and start, with its own charts and
// tables. Runs are not drawn on one chart: their arms share names and would hide each other.
func HTMLRuns(w io.Writer, runs [][]*results.Document) error {
	return write(w, nil, runs)
}

func write(w io.Writer, comparison []results.Table, runs [][]*results.Document) error {
	p := page{Comparison: withNumbers(comparison, 3)}
	// One run keeps the page's own headings; several runs are sections one level down.
	level := 2
	if len(runs) > 1 {
		level = 3
	}
	var benchmarks []string
	for _, docs := range runs {
		r, err := newRun(docs, level)
		if err != nil {
			return err
		}
		p.Runs = append(p.Runs, r)
		if !slices.Contains(benchmarks, r.Benchmark) {
			benchmarks = append(benchmarks, r.Benchmark)
		}
	}
	switch {
	case len(runs) == 1:
		p.Heading, p.Title = p.Runs[0].Benchmark, p.Runs[0].Benchmark+" on "+p.Runs[0].Server
	case len(benchmarks) == 1:
		p.Heading = fmt.Sprintf("%d runs of %s", len(runs), benchmarks[0])
		p.Title = p.Heading
	default:
		p.Heading = fmt.Sprintf("%d runs: %s", len(runs), strings.Join(benchmarks, ", "))
		p.Title = p.Heading
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// HistoryHTML writes the page of a series of runs of one spec (a schedule's history, or the
// runs given to `couchbench history`), named name: every metric's trend over the runs with
// the shifts found in it marked (and, titled so, whether it is judged once per arm or shown
// only, the machine's), then the history's tables.
func HistoryHTML(w io.Writer, name string, h history.History, shifts []history.Shift) error {
	at := map[string]time.Time{}
	for _, r := range h.Runs {
		at[r.Name] = r.ScheduledAt
	}
	began := map[string]history.Shift{}
	for _, s := range shifts {
		began[s.Metric+"@"+s.Run] = s
	}
	keys := h.Keys()
	series := make([]plot.TrendSeries, 0, len(keys))
	for _, key := range keys {
		s := plot.TrendSeries{Title: key, Unit: unitOf(key)}
		if role := h.Role(key); role != history.RoleJudged {
			s.Title += " (" + role + ")"
		}
		runs, values := h.Series(key)
		for i, name := range runs {
			pt := plot.TrendPoint{At: at[name], Value: values[i]}
			if sh, ok := began[key+"@"+name]; ok {
				pt.Shift, pt.Worse = fmt.Sprintf("%+.1f%%", sh.ChangePercent), sh.Worse
			}
			s.Points = append(s.Points, pt)
		}
		series = append(series, s)
	}
	charts, err := plot.Trend(series...)
	if err != nil {
		return err
	}
	p := page{Heading: "history of " + name, Title: "history of " + name, Tables: withNumbers(h.Tables(shifts), 3)}
	if n := len(h.Runs); n > 0 {
		p.About = fmt.Sprintf("%d runs, %s to %s (UTC)", n, h.Runs[0].ScheduledAt.UTC().Format("2006-01-02 15:04"),
			h.Runs[n-1].ScheduledAt.UTC().Format("2006-01-02 15:04"))
	}
	for _, c := range charts {
		p.Trend = append(p.Trend, figure{Title: c.Title, SVG: inline(c.SVG)})
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// unitOf is the y axis of a history metric's trend: the metric's name, or for an arm's
// ratio to the first arm ("arm:reference/..."), that.
func unitOf(key string) string {
	arm, rest, _ := strings.Cut(key, "/")
	metric := rest[strings.LastIndex(rest, "/")+1:]
	if a, ref, ok := strings.Cut(arm, ":"); ok {
		return fmt.Sprintf("%s / %s, %s", a, ref, metric)
	}
	return metric
}

// newRun is what the page shows of one run, its headings at level.
func newRun(docs []*results.Document, level int) (run, error) {
	charts, err := plot.Charts(docs...)
	if err != nil {
		return run{}, err
	}
	r := results.NewReport(docs...)
	tables, err := compare.RunTables(docs)
	if err != nil {
		return run{}, err
	}
	out := run{Report: r, Label: r.Label(), Level: level, Tables: withNumbers(tables, level+1)}
	if !r.StartedAt.IsZero() {
		out.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	for _, c := range charts {
		out.Charts = append(out.Charts, figure{Title: c.Title, SVG: inline(c.SVG)})
	}
	warn := func(w string) {
		// A run's documents are often one per arm, each with the run's own error.
		if !slices.Contains(out.Warnings, w) {
			out.Warnings = append(out.Warnings, w)
		}
	}
	for _, d := range docs {
		if d.Error != "" {
			warn("The run stopped early: " + d.Error + ". The results before that are shown.")
		}
		if d.Interrupted {
			warn("The run was interrupted before it finished. The results before that are shown.")
		}
		for _, a := range d.Arms {
			if a.Stopped() {
				warn(fmt.Sprintf("Query server %s was stopped before its first step and has no results: it %s.", a.QueryServer, a.Runtime.Mismatch))
			}
		}
		if d.SeriesThinned > 1 {
			warn(fmt.Sprintf("The indexing curves keep one poll in %d, to fit where the results are stored.", d.SeriesThinned))
		}
	}
	return out, nil
}

// page is what the template shows: one run or several, and a comparison; or a history: its
// trend charts and tables, About saying which runs.
type page struct {
	Title, Heading string
	Runs           []run
	Comparison     []table
	About          string
	Trend          []figure
	Tables         []table
}

// Several tells whether the page shows more than one run.
func (p page) Several() bool { return len(p.Runs) > 1 }

// run is one run's part of the page; Level is its sections' heading level.
type run struct {
	results.Report
	Label    string
	Started  string
	Level    int
	Warnings []string
	Charts   []figure
	Tables   []table
}

// table is a results.Table with the columns of numbers marked, to align them right, and
// the level of its title's heading.
type table struct {
	results.Table
	Numeric []bool
	Level   int
}

// Warns tells whether row is one of the table's Marked rows; most tables mark none.
func (t table) Warns(row int) bool { return row < len(t.Marked) && t.Marked[row] }

func withNumbers(tables []results.Table, level int) []table {
	out := make([]table, len(tables))
	for i, t := range tables {
		columns := len(t.Header)
		for _, row := range t.Rows {
			columns = max(columns, len(row))
		}
		out[i] = table{Table: t, Numeric: make([]bool, columns), Level: level}
		for c := range columns {
			out[i].Numeric[c] = isNumberColumn(t.Rows, c)
		}
	}
	return out
}

// isNumberColumn tells whether column c holds numbers: every cell starts with a digit
// ("9,900 (n=3, CV 1.0%)", "4.182s"), or is "-" for none.
func isNumberColumn(rows [][]string, c int) bool {
	numbers := 0
	for _, row := range rows {
		switch {
		case c >= len(row) || row[c] == "-":
		case row[c] != "" && '0' <= row[c][0] && row[c][0] <= '9':
			numbers++
		default:
			return false
		}
	}
	return numbers > 0
}

type figure struct {
	Title string
	SVG   template.HTML
}

// inline is the <svg> element of a standalone SVG document: HTML takes SVG as an element,
// without the XML declaration and comment gonum writes before it. The SVG is ours (gonum
// escapes the text it draws), so it goes into the page unescaped.
func inline(svg []byte) template.HTML {
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	return template.HTML(svg)
}

// heading is an HTML heading of the level, its text escaped.
func heading(level int, text string) template.HTML {
	return template.HTML(fmt.Sprintf("<h%d>%s</h%d>", level, template.HTMLEscapeString(text), level))
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"h": heading}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · couchbench</title>
<style>
body { font: 15px/1.45 system-ui, "Liberation Sans", Arial, Helvetica, sans-serif; color: #222; max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.3rem; margin: 2.4rem 0 1rem; padding-bottom: .3rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 1.8rem 0 .5rem; }
section.run > h2 { font-size: 1.5rem; border-bottom: 3px solid #0072b2; }
section.run h3 { font-size: 1.2rem; margin: 2rem 0 .8rem; }
h4 { font-size: 1rem; margin: 1.8rem 0 .5rem; }
.meta { color: #555; margin: .2rem 0; }
.warning { background: #fff4e5; border-left: 4px solid #d55e00; padding: .5rem .8rem; margin: .8rem 0; }
figure { margin: 0 0 2rem; }
figure svg { display: block; width: 100%; height: auto; }
.table { overflow-x: auto; }
table { border-collapse: collapse; font-size: .85rem; font-variant-numeric: tabular-nums; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #e3e3e3; text-align: left; white-space: nowrap; }
.num { text-align: right; }
th { background: #f3f3f3; }
tbody tr:nth-child(even) { background: #fafafa; }
tbody tr.warning { background: #fff4e5; }
.note { color: #555; font-size: .85rem; max-width: 80ch; }
</style>
</head>
<body>
<header>
<h1>couchbench: {{.Heading}}</h1>
{{- if .Several}}
<ul class="meta">
{{- range .Runs}}
<li>{{.Label}} on {{.Server}}</li>
{{- end}}
</ul>
{{- else if .Runs}}{{template "about" index .Runs 0}}
{{- else}}
<p class="meta">{{.About}}</p>
{{- end}}
</header>
<main>
{{- if .Trend}}
<section id="trend">
<h2>Trend</h2>
{{- range .Trend}}
<figure aria-label="{{.Title}}">
{{.SVG}}</figure>
{{- end}}
</section>
{{- end}}
{{- if .Tables}}
<section id="history">
<h2>History</h2>
{{- range .Tables}}{{template "table" .}}{{end}}
</section>
{{- end}}
{{- range $i, $run := .Runs}}
{{- if $.Several}}
<section class="run" id="run-{{$i}}">
<h2>{{.Label}}</h2>
{{- template "about" .}}
{{- end}}
{{- if .Charts}}
<section id="{{if $.Several}}run-{{$i}}-{{end}}charts">
{{h .Level "Charts"}}
{{- range .Charts}}
<figure aria-label="{{.Title}}">
{{.SVG}}</figure>
{{- end}}
</section>
{{- end}}
<section id="{{if $.Several}}run-{{$i}}-{{end}}results">
{{h .Level "Results"}}
{{- range .Tables}}{{template "table" .}}{{end}}
</section>
{{- if $.Several}}
</section>
{{- end}}
{{- end}}
{{- if .Comparison}}
<section id="comparison">
<h2>Comparison</h2>
{{- range .Comparison}}{{template "table" .}}{{end}}
</section>
{{- end}}
</main>
</body>
</html>
{{define "about"}}
<p class="meta">Server: {{.Server}}</p>
{{- if .Started}}
<p class="meta">Started {{.Started}}{{if .PollInterval}}; /_active_tasks polled every {{.PollInterval}}{{end}}</p>
{{- end}}
{{- range .Warnings}}
<p class="warning">{{.}}</p>
{{- end}}
{{- end}}
{{- define "table"}}
{{h .Level .Title}}
<div class="table"><table>
<thead><tr>{{range $c, $h := .Header}}<th{{if index $.Numeric $c}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range $r, $row := .Rows}}
<tr{{if $.Warns $r}} class="warning"{{end}}>{{range $c, $v := $row}}<td{{if index $.Numeric $c}} class="num"{{end}}>{{$v}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- if .Lines}}
<ul class="note">
{{- range .Lines}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
{{- if .Note}}
<p class="note">{{.Note}}</p>
{{- end}}
{{- end}}`))
