// Package report renders a run's results as one self-contained HTML page: the tables of
// results.Report and the charts of internal/plot inline as SVG. The page refers to nothing
// outside itself (no scripts, stylesheets, fonts or images to fetch), so that it can be
// stored with the results, attached or opened offline as it is.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/couchbench/couchbench/internal/plot"
	"github.com/couchbench/couchbench/internal/results"
)

// HTML writes the page of a run's documents: a header naming the benchmark and the server,
// the charts, the results tables and then comparison, extra tables for the caller to pass
// in (e.g. this run against a baseline); nil for none.
func HTML(w io.Writer, comparison []results.Table, docs ...*results.Document) error {
	charts, err := plot.Charts(docs...)
	if err != nil {
		return err
	}
	r := results.NewReport(docs...)
	p := page{Report: r, Tables: withNumbers(r.Tables()), Comparison: withNumbers(comparison)}
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	for _, c := range charts {
		p.Charts = append(p.Charts, figure{Title: c.Title, SVG: inline(c.SVG)})
	}
	for _, d := range docs {
		if d.Error != "" {
			p.Warnings = append(p.Warnings, "The run stopped early: "+d.Error+". The results before that are shown.")
		}
		if d.Interrupted {
			p.Warnings = append(p.Warnings, "The run was interrupted before it finished. The results before that are shown.")
		}
		if d.SeriesThinned > 1 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("The indexing curves keep one poll in %d, to fit where the results are stored.", d.SeriesThinned))
		}
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// page is what the template shows.
type page struct {
	results.Report
	Started    string
	Warnings   []string
	Charts     []figure
	Tables     []table
	Comparison []table
}

// table is a results.Table with the columns of numbers marked, to align them right.
type table struct {
	results.Table
	Numeric []bool
}

func withNumbers(tables []results.Table) []table {
	out := make([]table, len(tables))
	for i, t := range tables {
		columns := len(t.Header)
		for _, row := range t.Rows {
			columns = max(columns, len(row))
		}
		out[i] = table{Table: t, Numeric: make([]bool, columns)}
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

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Benchmark}} on {{.Server}} · couchbench</title>
<style>
body { font: 15px/1.45 system-ui, "Liberation Sans", Arial, Helvetica, sans-serif; color: #222; max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.3rem; margin: 2.4rem 0 1rem; padding-bottom: .3rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 1.8rem 0 .5rem; }
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
.note { color: #555; font-size: .85rem; max-width: 80ch; }
</style>
</head>
<body>
<header>
<h1>couchbench: {{.Benchmark}}</h1>
<p class="meta">Server: {{.Server}}</p>
{{- if .Started}}
<p class="meta">Started {{.Started}}{{if .PollInterval}}; /_active_tasks polled every {{.PollInterval}}{{end}}</p>
{{- end}}
{{- range .Warnings}}
<p class="warning">{{.}}</p>
{{- end}}
</header>
<main>
{{- if .Charts}}
<section id="charts">
<h2>Charts</h2>
{{- range .Charts}}
<figure aria-label="{{.Title}}">
{{.SVG}}</figure>
{{- end}}
</section>
{{- end}}
<section id="results">
<h2>Results</h2>
{{- range .Tables}}{{template "table" .}}{{end}}
</section>
{{- if .Comparison}}
<section id="comparison">
<h2>Comparison</h2>
{{- range .Comparison}}{{template "table" .}}{{end}}
</section>
{{- end}}
</main>
</body>
</html>
{{define "table"}}
<h3>{{.Title}}</h3>
<div class="table"><table>
<thead><tr>{{range $c, $h := .Header}}<th{{if index $.Numeric $c}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range $c, $v := .}}<td{{if index $.Numeric $c}} class="num"{{end}}>{{$v}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- if .Note}}
<p class="note">{{.Note}}</p>
{{- end}}
{{- end}}`))
