package plot

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// build is a build at rate documents/s over one shard copy, polled every 250 ms from before
// the trigger until it is done.
func build(rate float64, documents int64) measured.IndexBuild {
	run := measured.IndexBuild{Documents: documents, DocsPerSecond: rate}
	for at := int64(-250); ; at += 250 {
		done := min(documents, max(0, int64(rate*float64(at)/1000)))
		run.Series = append(run.Series, measured.BuildPoint{AtMs: at, ChangesDone: done, LiveTasks: 1})
		if done == documents {
			return run
		}
	}
}

// twoArms is a run of two arms as the operator stores it, a document per arm, the spec's
// second arm first: each arm with two reducers of three builds on two profiles, seven
// insert modes and k6 reads.
func twoArms() []*results.Document {
	spec := benchv1.CouchBenchmarkSpec{QueryServers: []benchv1.QueryServer{{Name: "quickjs"}, {Name: "spidermonkey"}}}
	var docs []*results.Document
	for a, name := range []string{"spidermonkey", "quickjs"} {
		arm := results.Arm{QueryServer: name, Language: "javascript"}
		for _, profile := range []string{"small", "large"} {
			p := results.Profile{Profile: profile}
			for r, reducer := range []string{"builtin", "custom"} {
				ix := results.IndexingSeries{Reducer: reducer}
				for _, rate := range []float64{9000, 10000, 9500} {
					ix.Runs = append(ix.Runs, build(rate*float64(1+a)/float64(1+r), 20000))
				}
				p.Indexing = append(p.Indexing, ix)
			}
			for m, mode := range []string{"bulk-100", "bulk-1000", "bulk-5000", "bulk-10000", "parallelBulk-10x1000", "batchOk-1", "serial"} {
				p.Writes = append(p.Writes, measured.Write{Mode: mode, Created: int64(100 * (7 - m) * (7 - m)), Elapsed: time.Second})
			}
			if profile == "small" {
				p.Reads = &results.Reads{Scenario: "getDocument", Runners: []results.ReadsRunner{
					{Segment: "0:1", Requests: 100, DurationMs: 1000, Milliseconds: results.Latencies{P50: 2, P95: 9, P99: 20}}}}
			}
			arm.Profiles = append(arm.Profiles, p)
		}
		docs = append(docs, &results.Document{Benchmark: "b", Spec: spec, Arms: []results.Arm{arm}})
	}
	return docs
}

func TestChartsOfARun(t *testing.T) {
	charts, err := Charts(twoArms()...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		svg := string(c.SVG)
		if !strings.HasPrefix(svg, "<?xml") || !strings.HasSuffix(svg, "</svg>\n") || !strings.Contains(svg, "<svg") {
			t.Errorf("%s is not an SVG document:\n%.200s", c.Name, svg)
		}
		if !strings.Contains(svg, ">"+strings.ReplaceAll(c.Title, "'", "&#39;")+"</text>") {
			t.Errorf("%s does not draw its title %q", c.Name, c.Title)
		}
		// Liberation Sans, as laid out, or a font with its metrics; nothing to fetch.
		if strings.Contains(svg, "font-family:Liberation Serif") || !strings.Contains(svg, "font-family:Liberation Sans,Arial,Helvetica,sans-serif;") {
			t.Errorf("%s: fonts %q", c.Name, fontFamilies(svg))
		}
		for _, external := range []string{"<image", "url(", "href=", "@import"} {
			if strings.Contains(svg, external) {
				t.Errorf("%s refers to something outside itself: %q", c.Name, external)
			}
		}
	}
	want := []string{"indexing-small.svg", "indexing-large.svg",
		"indexing-curve-small-builtin.svg", "indexing-curve-small-custom.svg", "indexing-curve-large-builtin.svg", "indexing-curve-large-custom.svg",
		"reads-latency.svg", "writes-small.svg", "writes-large.svg"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("charts %v, want %v", names, want)
	}
	// Arms in the spec's order, whatever the documents' order: quickjs first.
	for _, c := range charts {
		if q, s := bytes.Index(c.SVG, []byte(">quickjs<")), bytes.Index(c.SVG, []byte(">spidermonkey<")); q < 0 || s < 0 || q > s {
			t.Errorf("%s: quickjs at %d, spidermonkey at %d", c.Name, q, s)
		}
	}
}

func fontFamilies(svg string) []string {
	seen := map[string]bool{}
	var out []string
	for _, part := range strings.Split(svg, "font-family:")[1:] {
		family, _, _ := strings.Cut(part, ";")
		if !seen[family] {
			seen[family] = true
			out = append(out, family)
		}
	}
	return out
}

// Stored charts are compared byte for byte: the same documents give the same SVG.
func TestChartsAreDeterministic(t *testing.T) {
	first, err := Charts(twoArms()...)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Charts(twoArms()...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) {
		t.Error("two renderings of the same documents differ")
	}
}

func TestNoDataNoChart(t *testing.T) {
	empty := &results.Document{Benchmark: "b", Arms: []results.Arm{{QueryServer: "js", Profiles: []results.Profile{{Profile: "small",
		// A build without a recorded series (shorter than a poll) has bars but no curve.
		Indexing: []results.IndexingSeries{{Reducer: "builtin", Runs: []measured.IndexBuild{{Documents: 10, DocsPerSecond: 100}}}}}}}}}
	charts, err := Charts(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 1 || charts[0].Name != "indexing-small.svg" {
		t.Errorf("charts of a run with one build and no series: %v", chartNames(charts))
	}
	if charts, err := Charts(); err != nil || len(charts) != 0 {
		t.Errorf("charts of no documents: %v, %v", chartNames(charts), err)
	}
	if charts, err := Trend(TrendSeries{Title: "empty"}); err != nil || len(charts) != 0 {
		t.Errorf("trend without points: %v, %v", chartNames(charts), err)
	}

	// What is not a finite number cannot be drawn: left to the tables, without an error.
	runs := empty.Arms[0].Profiles[0].Indexing[0].Runs
	runs[0].DocsPerSecond = math.Inf(1)
	empty.Arms[0].Profiles[0].Writes = []measured.Write{{Mode: "serial", Created: 10}} // no elapsed time: 0/s
	if charts, err := Charts(empty); err != nil || len(charts) != 0 {
		t.Errorf("charts of infinite and zero rates: %v, %v", chartNames(charts), err)
	}
	if charts, err := Trend(TrendSeries{Title: "NaN", Points: []TrendPoint{{At: time.Unix(0, 0), Value: math.NaN()}}}); err != nil || len(charts) != 0 {
		t.Errorf("trend of NaN: %v, %v", chartNames(charts), err)
	}
}

func chartNames(charts []Chart) []string {
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
	}
	return names
}

func TestIndexingBarsSpanTheRuns(t *testing.T) {
	docs := twoArms()
	bars := func() string {
		charts, err := IndexingBars(docs...)
		if err != nil || len(charts) != 2 {
			t.Fatalf("%d charts, %v", len(charts), err)
		}
		return string(charts[0].SVG)
	}
	withWhiskers := bars()
	// The same medians without spread: no whiskers.
	for _, d := range docs {
		for _, p := range d.Arms[0].Profiles {
			for _, ix := range p.Indexing {
				median := medianRun(ix.Runs).DocsPerSecond
				for r := range ix.Runs {
					ix.Runs[r].DocsPerSecond = median
				}
			}
		}
	}
	without := bars()
	// Each whisker is three strokes in its grey, one per bar: 2 arms x 2 reducers.
	if got := strings.Count(withWhiskers, "stroke:#404040") - strings.Count(without, "stroke:#404040"); got != 3*2*2 {
		t.Errorf("%d whisker strokes, want %d", got, 3*2*2)
	}
	// quickjs builtin, fastest run: 20,000/s; the axis ends on a round tick.
	if !strings.Contains(withWhiskers, ">0</text>") || !strings.Contains(withWhiskers, ">20,000</text>") {
		t.Errorf("y ticks: %v", texts(withWhiskers))
	}
}

// texts lists the text an SVG draws.
func texts(svg string) []string {
	var out []string
	for _, part := range strings.Split(svg, "</text>")[:strings.Count(svg, "</text>")] {
		out = append(out, part[strings.LastIndexByte(part, '>')+1:])
	}
	return out
}

func TestReadLatenciesNameTheUpperBound(t *testing.T) {
	docs := twoArms()
	charts, err := ReadLatencies(docs...)
	if err != nil || len(charts) != 1 || strings.Contains(charts[0].Title, "upper bound") {
		t.Fatalf("one runner per arm: %+v, %v", chartNames(charts), err)
	}
	for _, p := range []string{">p50<", ">p95<", ">p99<"} {
		if !strings.Contains(string(charts[0].SVG), p) {
			t.Errorf("no legend entry %s", p)
		}
	}
	reads := docs[0].Arms[0].Profiles[0].Reads
	reads.Runners = append(reads.Runners, reads.Runners[0])
	if charts, err := ReadLatencies(docs...); err != nil || !strings.Contains(charts[0].Title, "upper bound") {
		t.Errorf("two runners: title %q, %v", charts[0].Title, err)
	}
}

func TestWriteRatesOnALogarithmicAxis(t *testing.T) {
	charts, err := WriteRates(twoArms()...)
	if err != nil || len(charts) != 2 {
		t.Fatalf("%d charts, %v", len(charts), err)
	}
	// serial: 100/s, bulk-100: 4,900/s.
	got := texts(string(charts[0].SVG))
	for _, want := range []string{"100", "1,000", "10,000", "serial", "parallelBulk-10x1000"} {
		if !contains(got, want) {
			t.Errorf("no text %q in %v", want, got)
		}
	}
}

// A write round's server CPU cost is a metric of the writes workload as its rate is, and the
// chart plots rates only: a cost of well under 1 s per 1,000 documents taken for a mode's rate
// put the axis of a one-mode chart below 0, and the log scale panicked the operator's report
// (found in e2e, TestThreeNodeCouchDBOnePodPerNode).
func TestWriteRatesLeaveTheCPUCostOut(t *testing.T) {
	for _, modes := range [][]string{{"bulk-100"}, {"bulk-100", "serial"}} {
		p := results.Profile{Profile: "small"}
		for m, mode := range modes {
			created := int64(4900 / (1 + 48*m))
			p.Writes = append(p.Writes, measured.Write{Mode: mode, Created: created, Stored: created, Elapsed: time.Second, CPUSeconds: 0.5})
		}
		doc := &results.Document{Benchmark: "b", Spec: benchv1.CouchBenchmarkSpec{QueryServers: []benchv1.QueryServer{{Name: "js"}}},
			Arms: []results.Arm{{QueryServer: "js", Language: "javascript", Profiles: []results.Profile{p}}}}
		charts, err := WriteRates(doc)
		if err != nil || len(charts) != 1 {
			t.Fatalf("%v: %d charts, %v", modes, len(charts), err)
		}
		// 100/s to 4,900/s: no tick at 1 or 10, where a cost of 0.1 s per 1,000 would be.
		got := texts(string(charts[0].SVG))
		if len(modes) == 2 && (!contains(got, "1,000") || contains(got, "1") || contains(got, "10")) {
			t.Errorf("%v: ticks %v; want the rates' 100 to 1,000 only", modes, got)
		}
	}
}

func TestRates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series []measured.BuildPoint
		want   plotter.XYs
	}{
		{"nothing recorded", nil, nil},
		{"nothing moved", []measured.BuildPoint{{AtMs: -250}, {AtMs: 0}, {AtMs: 250}, {AtMs: 500}}, nil},
		{
			// Windows of at least a second from the trigger; polls before it left out.
			"steady", []measured.BuildPoint{{AtMs: -250}, {AtMs: 250, ChangesDone: 100}, {AtMs: 500, ChangesDone: 300},
				{AtMs: 750, ChangesDone: 300}, {AtMs: 1000, ChangesDone: 400}, {AtMs: 1250, ChangesDone: 600},
				{AtMs: 2000, ChangesDone: 1000}, {AtMs: 2500, ChangesDone: 1000}},
			plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 400}, {X: 2, Y: 600}, {X: 2.5, Y: 0}},
		},
		{
			// The last window is what is left after the last whole one.
			"short tail", []measured.BuildPoint{{AtMs: 1000, ChangesDone: 500}, {AtMs: 1250, ChangesDone: 600}},
			plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 500}, {X: 1.25, Y: 400}},
		},
		{
			// Polls slower than the window: one step per poll.
			"slow polls", []measured.BuildPoint{{AtMs: 2000, ChangesDone: 1000}, {AtMs: 5000, ChangesDone: 4000}},
			plotter.XYs{{X: 0, Y: 0}, {X: 2, Y: 500}, {X: 5, Y: 1000}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rates(tc.series); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMedianRun(t *testing.T) {
	runs := func(rates ...float64) []measured.IndexBuild {
		var out []measured.IndexBuild
		for i, r := range rates {
			out = append(out, measured.IndexBuild{DesignDoc: fmt.Sprint(i), DocsPerSecond: r})
		}
		return out
	}
	for _, tc := range []struct {
		rates []float64
		want  string
	}{
		{[]float64{10, 30, 20}, "2"},
		{[]float64{40, 10, 30, 20}, "3"}, // the slower middle one
		{[]float64{5}, "0"},
		{nil, ""},
	} {
		if got := medianRun(runs(tc.rates...)).DesignDoc; got != tc.want {
			t.Errorf("median run of %v: %q, want %q", tc.rates, got, tc.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 38400, []string{"0", "10,000", "20,000", "30,000", "40,000"}},
		{0, 26.1, []string{"0", "5", "10", "15", "20", "25", "30"}},
		{0, 43, []string{"0", "10", "20", "30", "40", "50"}},
		{0, 2.2, []string{"0.0", "0.5", "1.0", "1.5", "2.0", "2.5"}},
		{0, 17000, []string{"0", "2,500", "5,000", "7,500", "10,000", "12,500", "15,000", "17,500"}},
		{0, 0.9, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 0.15, []string{"0.000", "0.025", "0.050", "0.075", "0.100", "0.125", "0.150"}},
		{-3, 3, []string{"-3", "-2", "-1", "0", "1", "2", "3"}},
	} {
		var got []string
		for _, tick := range (linearTicks{}).Ticks(tc.lo, tc.hi) {
			got = append(got, tick.Label)
			if math.IsNaN(tick.Value) {
				t.Fatal(tick)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ticks of [%v, %v]: %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "1234567.25": "1,234,567.25", "-12000": "-12,000",
		"1e+07": "1e+07"} {
		if got := groupDigits(in); got != want {
			t.Errorf("groupDigits(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTrendMarksShifts(t *testing.T) {
	day := time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	s := TrendSeries{Title: "spidermonkey, small, indexing builtin: changes/s", Unit: "changes/s", Points: []TrendPoint{
		{At: day.Add(48 * time.Hour), Value: 8100, Shift: "-19.5%", Worse: true},
		{At: day, Value: 10100},
		{At: day.Add(24 * time.Hour), Value: 10000},
	}}
	charts, err := Trend(s, TrendSeries{Title: "one run", Unit: "ms", Points: []TrendPoint{{At: day, Value: 12}}})
	if err != nil || len(charts) != 2 {
		t.Fatalf("%d charts, %v", len(charts), err)
	}
	if charts[0].Name != "trend-spidermonkey-small-indexing-builtin-changes-s.svg" || charts[1].Name != "trend-one-run.svg" {
		t.Errorf("names %v", chartNames(charts))
	}
	svg := string(charts[0].SVG)
	// One vermillion dashed line, on the third day's run and in the legend, labelled.
	if n := strings.Count(svg, "stroke:#D55E00"); n != 2 || !strings.Contains(svg, ">shift, worse<") || !strings.Contains(svg, "-19.5%<") {
		t.Errorf("%d vermillion strokes and texts %v", n, texts(svg))
	}
	if strings.Contains(svg, ">shift, better<") || strings.Contains(svg, "stroke:#009E73") {
		t.Errorf("a better shift drawn without any: %v", texts(svg))
	}
	// Two days of runs: ticks every 12 hours.
	for _, label := range []string{">2026-11-20<", ">12:00<", ">2026-11-22<", ">00:00<"} {
		if !strings.Contains(svg, label) {
			t.Errorf("no time tick %s in %v", label, texts(svg))
		}
	}
	if strings.Contains(string(charts[1].SVG), ">shift") {
		t.Error("a legend entry for shifts without any")
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{"large-300000": "large-300000", "A, b: c/s": "a-b-c-s", "--x--": "x"} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// gonum/plot panics on data it cannot draw; render makes that the chart's error, naming it,
// so that the process rendering a report (the operator) goes on.
func TestAChartThatCannotBeDrawnIsAnError(t *testing.T) {
	g := newGrid()
	g.set("bulk-100", "js", bar{value: 0.5})
	svg, err := g.dots("Writes", "documents/s (logarithmic)")
	if err == nil || !strings.Contains(err.Error(), `drawing "Writes"`) || svg != nil {
		t.Errorf("a log axis reaching below 0: %d bytes, error %v; want an error naming the chart", len(svg), err)
	}
}
