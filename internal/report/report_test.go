package report_test

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/plot"
	"github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// comparison stands in for internal/compare's table, with text that must be escaped.
var comparison = []results.Table{{
	Title:  "Against baseline <r20261121>",
	Header: []string{"Metric", "Baseline", "This run", "Change"},
	Rows:   [][]string{{"spidermonkey/small/indexing/builtin", "10,000", "8,100", "-19% <script>alert(1)</script> & worse"}},
	Note:   "Regressed: worse by more than 10% & outside the baseline's min-max.",
}}

func render(t *testing.T, comparison []results.Table, docs ...*results.Document) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.HTML(&buf, comparison, docs...); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// svgNamespaces are the namespace names gonum's <svg> declares: names, not addresses that
// anything fetches.
var svgNamespaces = strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "")

func TestHTMLIsOneSelfContainedPage(t *testing.T) {
	d := realisticRun(t)
	page := render(t, comparison, d)

	if !strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\"en\">") || !strings.HasSuffix(page, "</html>\n") ||
		strings.Count(page, "<html") != 1 || strings.Count(page, "<body>") != 1 {
		t.Errorf("not one HTML document:\n%.300s", page)
	}
	title := "nightly-query-servers on The Apache Software Foundation 3.4.3, 1 node(s)"
	if !strings.Contains(page, "<title>"+title+" · couchbench</title>") || !strings.Contains(page, "<h1>couchbench: nightly-query-servers</h1>") {
		t.Errorf("title and heading do not name the benchmark and the server:\n%.600s", page)
	}

	// Every chart inline, as the SVG element itself.
	charts, err := plot.Charts(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 9 || strings.Count(page, "<svg") != len(charts) || strings.Count(page, "</svg>") != len(charts) {
		t.Errorf("%d charts, %d <svg> in the page", len(charts), strings.Count(page, "<svg"))
	}
	for _, c := range charts {
		svg := c.SVG[bytes.Index(c.SVG, []byte("<svg")):]
		if !strings.Contains(page, string(svg)) {
			t.Errorf("chart %s is not in the page as it was drawn", c.Name)
		}
	}
	if strings.Contains(page, "<?xml") || strings.Contains(page, "base64") {
		t.Error("charts are not inline SVG elements")
	}

	// Nothing to fetch: no addresses, no references, no scripts.
	outside := regexp.MustCompile(`(?i)https?:|src=|href=|url\(|@import|<script|<link|<img|<iframe|<object`)
	if found := outside.FindAllString(svgNamespaces.Replace(page), -1); len(found) > 0 {
		t.Errorf("the page refers to things outside itself: %q", found)
	}

	// The tables of the report, then the comparison, escaped.
	last := strings.Index(page, `<section id="results">`)
	if last < 0 || last < strings.LastIndex(page, "</svg>") {
		t.Fatalf("no results section after the charts")
	}
	runTables, err := compare.RunTables([]*results.Document{d})
	if err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(page)
	for _, table := range append(runTables, comparison...) {
		at := strings.Index(page, "<h3>"+html.EscapeString(table.Title)+"</h3>")
		if at < last {
			t.Errorf("table %q missing or out of order", table.Title)
			continue
		}
		last = at
		for _, row := range table.Rows {
			for _, cell := range row {
				// html/template writes some characters as references ("+" as "&#43;").
				if !strings.Contains(text, ">"+cell+"</td>") {
					t.Errorf("table %q: no cell %q", table.Title, cell)
				}
			}
		}
	}
	if !strings.Contains(page, `<section id="comparison">`) || strings.Contains(page, "<script>") ||
		!strings.Contains(page, "-19% &lt;script&gt;alert(1)&lt;/script&gt; &amp; worse") {
		t.Error("the comparison is missing or not escaped")
	}
	// Columns of numbers align right; their headers too.
	if !strings.Contains(page, `<th class="num">c/s small</th>`) || !strings.Contains(page, `<td class="num">10,303 (n=3, CV 4.5%)</td>`) ||
		!strings.Contains(page, "<th>Option</th>") {
		t.Error("number columns are not marked")
	}

	if again := render(t, comparison, realisticRun(t)); again != page {
		t.Error("two renderings of the same documents differ")
	}
}

func TestHTMLWithoutComparisonOrCharts(t *testing.T) {
	d := realisticRun(t)
	page := render(t, nil, d)
	if strings.Contains(page, `id="comparison"`) {
		t.Error("a comparison section without a comparison")
	}

	// A run that stopped before it measured anything: the header, a warning, no charts.
	stopped := &results.Document{SchemaVersion: results.SchemaVersion, Benchmark: "b", Spec: d.Spec, Server: d.Server,
		Error: "seeding spidermonkey: 401 <unauthorized>", Interrupted: true, SeriesThinned: 4}
	page = render(t, nil, stopped)
	if strings.Contains(page, "<svg") || strings.Contains(page, `id="charts"`) || strings.Contains(page, "<table") {
		t.Error("charts or tables without data")
	}
	// An arm stopped for the runtime of its views says so, with why.
	stopped.Arms = []results.Arm{{QueryServer: "pypy", Language: "python", Runtime: &results.Runtime{Language: "python", Engine: "CPython",
		Asked: "PyPy", Mismatch: "asks for PyPy (preset pypy), but the CouchDB at http://c:5984 runs its python views on CPython 3.11.2", Stopped: true}}}
	page = render(t, nil, stopped)
	for _, want := range []string{"The run stopped early: seeding spidermonkey: 401 &lt;unauthorized&gt;.", "The run was interrupted",
		"The indexing curves keep one poll in 4",
		"Query server pypy was stopped before its first step and has no results: it asks for PyPy (preset pypy), but the CouchDB at http://c:5984"} {
		if !strings.Contains(page, want) {
			t.Errorf("no warning %q", want)
		}
	}
}

// Several runs: one page, a section per run labelled with its benchmark, run id and start,
// each with every chart and table of its own documents.
func TestHTMLShowsEveryRun(t *testing.T) {
	first, second := realisticRun(t), realisticRun(t)
	second.RunID, second.StartedAt = "r20261123", first.StartedAt.Add(24*time.Hour)
	second.Error = "writes of quickjs: 401 unauthorized"
	for i := range second.Arms {
		second.Arms[i].Profiles = second.Arms[i].Profiles[:1] // the small documents only
	}
	runs := results.Runs([]*results.Document{second, first})
	var buf bytes.Buffer
	if err := report.HTMLRuns(&buf, runs); err != nil {
		t.Fatal(err)
	}
	page := buf.String()

	if !strings.Contains(page, "<title>2 runs of nightly-query-servers · couchbench</title>") ||
		!strings.Contains(page, "<h1>couchbench: 2 runs of nightly-query-servers</h1>") {
		t.Errorf("the page does not say it holds two runs:\n%.900s", page)
	}
	svgs, tables, at := 0, 0, 0
	for i, docs := range runs {
		r := results.NewReport(docs...)
		label := html.EscapeString(r.Label())
		section := strings.Index(page, fmt.Sprintf("<section class=\"run\" id=\"run-%d\">\n<h2>%s</h2>", i, label))
		if section < at || !strings.Contains(page, "<li>"+label+" on ") {
			t.Fatalf("run %d (%s) has no section of its own after the one before, or is not listed", i, label)
		}
		at = section
		charts, err := plot.Charts(docs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range charts {
			if !strings.Contains(page[section:], string(c.SVG[bytes.Index(c.SVG, []byte("<svg")):])) {
				t.Errorf("run %d: chart %s is not in its section", i, c.Name)
			}
		}
		svgs += len(charts)
		runTables, err := compare.RunTables(docs)
		if err != nil {
			t.Fatal(err)
		}
		tables += len(runTables)
		for _, table := range runTables {
			if !strings.Contains(page[section:], "<h4>"+html.EscapeString(table.Title)+"</h4>") {
				t.Errorf("run %d: no table %q", i, table.Title)
			}
		}
	}
	if first.RunID == second.RunID || strings.Count(page, "<svg") != svgs || strings.Count(page, "<table>") != tables || svgs == 0 {
		t.Errorf("%d <svg> and %d tables in the page, want the runs' %d and %d", strings.Count(page, "<svg"),
			strings.Count(page, "<table>"), svgs, tables)
	}
	// The second run's warning is in its own section only.
	if w := strings.Index(page, "The run stopped early: writes of quickjs"); w < strings.Index(page, `id="run-1"`) {
		t.Error("the later run's warning is missing or shown with the earlier run")
	}
	// Section ids are unique.
	for _, id := range regexp.MustCompile(`id="[^"]+"`).FindAllString(page, -1) {
		if strings.Count(page, id) != 1 {
			t.Errorf("%s is not unique", id)
		}
	}
}

// An operator run's placement: a table of its pods, the load generators on a node of their
// CouchDB highlighted as warnings, and the line that adds the arm's nodes up.
func TestHTMLMarksLoadGeneratorsBesideTheirCouchDB(t *testing.T) {
	d := realisticRun(t)
	if strings.Contains(render(t, nil, d), "Placement") {
		t.Error("a placement section for a run without pods")
	}
	d.Arms[0].Cluster = &results.Cluster{Pods: []results.PodRun{
		{Role: results.RoleCouchDB, Pod: "couchdb-0", Node: "w1"},
		{Role: results.RoleCouchDB, Pod: "couchdb-1", Node: "w2"},
		{Role: results.RoleCouchDB, Pod: "couchdb-2", Node: "w3"},
		{Role: results.RoleRunner, Step: benchv1.StepSeed, Pod: "seed", Node: "w4"},
		{Role: results.RoleRunner, Step: benchv1.StepIndex, Pod: "index", Node: "w1"},
		{Role: results.RoleK6, Step: benchv1.StepReads, Pod: "reads-0", Node: "w4"},
		{Role: results.RoleK6, Step: benchv1.StepReads, Pod: "reads-1", Node: "w2"},
	}}
	page := render(t, nil, d)
	_, section, ok := strings.Cut(page, "<h3>Placement</h3>")
	if !ok {
		t.Fatalf("no placement section:\n%s", page)
	}
	section, _, _ = strings.Cut(section, "</ul>")
	row := func(class, role, step, pod, node, marker string) string {
		return fmt.Sprintf("<tr%s><td>spidermonkey</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", class, role, step, pod, node, marker)
	}
	const warning, shared = ` class="warning"`, "shares a node with its CouchDB"
	for _, want := range []string{
		row("", "couchdb", "", "couchdb-0", "w1", ""),
		row("", "runner", "seed", "seed", "w4", ""),
		row(warning, "runner", "index", "index", "w1", shared),
		row("", "k6", "reads", "reads-0", "w4", ""),
		row(warning, "k6", "reads", "reads-1", "w2", shared),
		"<li>spidermonkey: CouchDB on 3 node(s) (w1, w2, w3); load generators on 3 node(s) (w1, w2, w4), 2 of them shared with CouchDB</li>",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the placement section lacks %s:\n%s", want, section)
		}
	}
	if n := strings.Count(page, "<tr class=\"warning\">"); n != 2 {
		t.Errorf("%d rows marked in the page, want the 2 shared ones", n)
	}
}
