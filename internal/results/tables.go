package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
)

// Column names shared by several tables.
const (
	colOption        = "Option"
	colProfile       = "Profile"
	colDocsPerSecond = "docs/s"
)

// Report is one benchmark's results as the tables show them: what the runner prints,
// `couchbench report` renders and the operator writes into the results ConfigMap, all from
// the same documents through Aggregate.
type Report struct {
	Benchmark string
	// RunID tells runs of one benchmark apart ("" for a run by hand without --run-id).
	RunID     string
	StartedAt time.Time
	// Server describes the CouchDB, e.g. "The Apache Software Foundation 3.4.3, 3 node(s)".
	Server  string
	Results []benchv1.QueryServerResults
	// PollInterval is the /_active_tasks poll interval of the builds (0: unknown).
	PollInterval time.Duration
	// provenance says what produced each arm's numbers; load how busy the generator and
	// CouchDB were during each step; placement which node each pod ran on; cpuCost what the
	// server spent per document.
	provenance, load, seedingParts, warmUp, placement, cpuCost Table
}

// NewReport is the report of a run's documents.
func NewReport(docs ...*Document) Report {
	s := Aggregate(docs...)
	r := Report{StartedAt: StartedAt(docs), Server: s.Server, Results: s.Results, provenance: provenanceTable(docs), load: loadTable(docs),
		seedingParts: seedingPartsTable(docs), warmUp: warmUpTable(docs), placement: placementTable(docs),
		cpuCost: cpuCostTable(docs)}
	for _, d := range docs {
		if r.Benchmark == "" {
			r.Benchmark = d.Benchmark
		}
		if r.RunID == "" {
			r.RunID = d.RunID
		}
		if r.PollInterval == 0 {
			r.PollInterval = d.pollInterval()
		}
	}
	return r
}

// Table is a titled grid of cells.
type Table struct {
	Title  string
	Note   string
	Header []string
	Rows   [][]string
	// Marked tells, by row, which rows warn of something: their cells say so, and a renderer
	// that can makes them stand out too.
	Marked []bool
	// Lines add the rows up, one line each, after the table.
	Lines []string
}

// Tables lays the results out like the seed articles' tables: indexing as option ×
// reducer → changes/s per document profile (seed 000), the build details, seeding, view
// reads (seed 002), writes (seed 003) and k6 reads (seed 001), and the server's CPU cost of
// each where the run read it; then how the run went: the
// warm-ups, the load, the provenance and the pods' placement. Tables without data are left
// out.
func (r Report) Tables() []Table {
	var out []Table
	tables := []Table{r.indexingTable(), r.indexingDetailTable(), r.seedingTable(), r.seedingParts, r.viewReadsTable(), r.writesTable(),
		r.readsTable(), r.cpuCost, r.warmUp, r.load, r.provenance, r.placement}
	for _, t := range tables {
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

func option(q benchv1.QueryServerResults) string {
	if q.Language == "" {
		return q.QueryServer
	}
	return fmt.Sprintf("%s (%s)", q.QueryServer, q.Language)
}

// profileNames lists the document profiles in the order they first appear.
func (r Report) profileNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, q := range r.Results {
		for _, ix := range q.Indexing {
			if !seen[ix.Profile] {
				seen[ix.Profile] = true
				names = append(names, ix.Profile)
			}
		}
	}
	return names
}

func (r Report) indexingTable() Table {
	profiles := r.profileNames()
	t := Table{
		Title: "Indexing: changes/s (documents / time to a fully built view; median of runs, CV)",
		Note: "Fully built: from the first shard copy's index update starting to the last one's written, every copy asked on its own " +
			"node (Timing in the details: how close that is). Noisy: CV above the spec's noiseThresholdPercent; Imprecise: a build timed to worse than 5%; " +
			"SharedNode: the load generator ran on a node of the CouchDB it measured; GeneratorBound: it used its whole CPU allowance " +
			"(or k6 dropped iterations), so the number may be its own; RuntimeMismatch: the arm's views ran on another runtime " +
			"than it asked for (Provenance).",
		Header: append([]string{colOption, "Reducer"}, prefixed("c/s ", profiles)...),
	}
	for _, q := range r.Results {
		var reducers []benchv1.Reducer
		cells := map[benchv1.Reducer][]string{}
		for _, ix := range q.Indexing {
			if _, ok := cells[ix.Reducer]; !ok {
				cells[ix.Reducer] = make([]string, len(profiles))
				reducers = append(reducers, ix.Reducer)
			}
			for i, p := range profiles {
				if p == ix.Profile {
					cells[ix.Reducer][i] = whole(ix.ChangesPerSecond) + spreadNote(ix.Spread)
				}
			}
		}
		for _, red := range reducers {
			t.Rows = append(t.Rows, append([]string{option(q), string(red)}, dashes(cells[red])...))
		}
	}
	return t
}

func (r Report) indexingDetailTable() Table {
	t := Table{
		Title: "Indexing details (medians)",
		Note: "Timing: how far the build's time can be from the span CouchDB logs, the largest over the runs. " +
			"Queryable: every shard range had a built copy (what a view request needs). Shard c/s: changes over all " +
			"shard copies / time to fully built. map/doc: map_doc counter growth / (documents x n); 1.00 = every " +
			"document mapped once per copy.",
		Header: []string{colOption, colProfile, "Reducer", "Compaction", "Built s", "Timing", "Min-max c/s", "Queryable c/s", "Shard c/s", "map/doc"},
	}
	for _, q := range r.Results {
		for _, ix := range q.Indexing {
			t.Rows = append(t.Rows, []string{option(q), ix.Profile, string(ix.Reducer), ix.ViewCompaction, ix.BuiltSeconds, orNA(ix.Uncertainty),
				whole(ix.MinChangesPerSecond) + "-" + whole(ix.MaxChangesPerSecond), whole(ix.QueryableChangesPerSecond),
				whole(ix.ShardChangesPerSecond), orNA(ix.MapDocsPerDoc)})
		}
	}
	return t
}

func (r Report) seedingTable() Table {
	t := Table{
		Title:  "Seeding (_bulk_docs; median of loads, CV)",
		Header: []string{colOption, colProfile, "Documents", colDocsPerSecond, "MB/s", "Retries", "Runners"},
	}
	for _, q := range r.Results {
		for _, s := range q.Seeding {
			t.Rows = append(t.Rows, []string{option(q), s.Profile, strconv.FormatInt(s.Documents, 10), whole(s.DocsPerSecond) + spreadNote(s.Spread),
				s.MBPerSecond, strconv.FormatInt(s.Retries, 10), strconv.Itoa(int(max(s.Runners, 1)))})
		}
	}
	return t
}

func (r Report) viewReadsTable() Table {
	t := Table{
		Title:  "View reads: time per full read (median of runs, CV) and rows/s",
		Header: []string{colOption, colProfile, "View", "Time", "Rows/s"},
	}
	for _, q := range r.Results {
		for _, v := range q.ViewReads {
			t.Rows = append(t.Rows, []string{option(q), v.Profile, string(v.View), v.Duration + spreadNote(v.Spread), whole(v.RowsPerSecond)})
		}
	}
	return t
}

func (r Report) writesTable() Table {
	t := Table{
		Title: "Writes: documents/s per insert mode (median of repetitions, CV)",
		Note: "202 (batch=ok) answers are counted apart from 201: CouchDB holds those documents in memory first and can " +
			"lose them in a crash. Stored is the database's doc_count after the mode. Counts add up the repetitions.",
		Header: []string{colOption, colProfile, "Mode", colDocsPerSecond, "201", "202", "Errors", "Stored"},
	}
	for _, q := range r.Results {
		for _, w := range q.Writes {
			t.Rows = append(t.Rows, []string{option(q), w.Profile, w.Mode, whole(w.DocsPerSecond) + spreadNote(w.Spread), strconv.FormatInt(w.Created, 10),
				strconv.FormatInt(w.Accepted, 10), strconv.FormatInt(w.Errors, 10), strconv.FormatInt(w.Stored, 10)})
		}
	}
	return t
}

func (r Report) readsTable() Table {
	t := Table{
		Title:  "Reads (k6): requests/s (median of repetitions, CV) and the load's time summed over them",
		Header: []string{colOption, "Requests", "req/s", "Elapsed (sum)", "Errors", "p50", "p95", "p99", "Thresholds"},
	}
	for _, q := range r.Results {
		if rd := q.Reads; rd != nil {
			p95 := rd.P95
			switch {
			case rd.PercentileError != "":
				p95 += " (±" + rd.PercentileError + ")"
			case rd.PercentilesUpperBound:
				p95 += " (upper bound)"
			}
			thresholds := "-"
			if rd.ThresholdsPassed != nil {
				thresholds = map[bool]string{true: "passed", false: "FAILED"}[*rd.ThresholdsPassed]
			}
			t.Rows = append(t.Rows, []string{option(q), strconv.FormatInt(rd.Requests, 10), whole(rd.RequestsPerSecond) + spreadNote(rd.Spread),
				orNA(rd.Elapsed), rd.ErrorRate,
				rd.P50, p95, rd.P99, thresholds})
		}
	}
	return t
}

// WriteMarkdown writes the report as Markdown: a heading that names the benchmark and the
// server that produced the numbers, then the tables.
func (r Report) WriteMarkdown(w io.Writer) error {
	if err := r.WriteHeader(w); err != nil {
		return err
	}
	return WriteMarkdown(w, r.Tables())
}

// WriteHeader writes the report's Markdown heading: the benchmark, its run id, its start,
// its server.
func (r Report) WriteHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "## %s (%s)\n\n", r.Benchmark, strings.Join(append(r.run(), r.Server), ", "))
	return err
}

// Label names the run among others: "quickstart (run r1a2b3c4d, 2026-11-22T01:00:00Z)".
func (r Report) Label() string {
	return fmt.Sprintf("%s (%s)", r.Benchmark, strings.Join(r.run(), ", "))
}

// run is what tells the run from other runs of its benchmark: its run id, when it has one,
// and its start.
func (r Report) run() []string {
	started := r.StartedAt.UTC().Format(time.RFC3339)
	if r.RunID == "" {
		return []string{started}
	}
	return []string{"run " + r.RunID, started}
}

// WriteMarkdown writes the tables as Markdown, columns padded so that the text reads as a
// table in a terminal too; a table's lines follow it as a list, which rendered Markdown keeps
// one a line.
func WriteMarkdown(w io.Writer, tables []Table) error {
	var b strings.Builder
	for i, t := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s\n\n", t.Title)
		widths := make([]int, len(t.Header))
		for _, row := range append([][]string{t.Header}, t.Rows...) {
			for c, cell := range row {
				widths[c] = max(widths[c], len(cell))
			}
		}
		line := func(cells []string) {
			b.WriteString("|")
			for c, cell := range cells {
				fmt.Fprintf(&b, " %-*s |", widths[c], cell)
			}
			b.WriteString("\n")
		}
		line(t.Header)
		rule := make([]string, len(widths))
		for c, wd := range widths {
			rule[c] = strings.Repeat("-", wd)
		}
		line(rule)
		for _, row := range t.Rows {
			line(row)
		}
		if len(t.Lines) > 0 {
			b.WriteString("\n")
			for _, l := range t.Lines {
				fmt.Fprintf(&b, "- %s\n", l)
			}
		}
		if t.Note != "" {
			fmt.Fprintf(&b, "\n%s\n", t.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes one row per value, in long form for spreadsheets and plots:
// benchmark, run_id, started_at, option, profile, workload, variant, metric, value. The
// first three tell the reports' runs apart.
func WriteCSV(w io.Writer, reports []Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"benchmark", "run_id", "started_at", "option", "profile", "workload", "variant", "metric", "value"}); err != nil {
		return err
	}
	for _, r := range reports {
		started := r.StartedAt.UTC().Format(time.RFC3339)
		for _, q := range r.Results {
			row := func(profile, workload, variant, metric string, v any) {
				_ = cw.Write([]string{r.Benchmark, r.RunID, started, q.QueryServer, profile, workload, variant, metric, fmt.Sprint(v)})
			}
			for _, s := range q.Seeding {
				row(s.Profile, "seeding", "bulk", "docs_per_second", s.DocsPerSecond)
			}
			for _, ix := range q.Indexing {
				row(ix.Profile, "indexing", string(ix.Reducer), "docs_per_second_median", ix.ChangesPerSecond)
				row(ix.Profile, "indexing", string(ix.Reducer), "docs_per_second_min", ix.MinChangesPerSecond)
				row(ix.Profile, "indexing", string(ix.Reducer), "docs_per_second_max", ix.MaxChangesPerSecond)
				row(ix.Profile, "indexing", string(ix.Reducer), "queryable_docs_per_second", ix.QueryableChangesPerSecond)
				row(ix.Profile, "indexing", string(ix.Reducer), "shard_changes_per_second", ix.ShardChangesPerSecond)
			}
			for _, v := range q.ViewReads {
				row(v.Profile, "viewReads", string(v.View), "rows_per_second", v.RowsPerSecond)
			}
			for _, wr := range q.Writes {
				row(wr.Profile, "writes", wr.Mode, "docs_per_second", wr.DocsPerSecond)
			}
			if rd := q.Reads; rd != nil {
				row("", "reads", "k6", "requests_per_second", rd.RequestsPerSecond)
				row("", "reads", "k6", "p95", rd.P95)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// spreadNote is what a cell says after a median: " (n=3, CV 4.1%) Noisy".
func spreadNote(s benchv1.Spread) string {
	note := fmt.Sprintf(" (n=%d)", s.Runs)
	if s.CV != "" {
		note = fmt.Sprintf(" (n=%d, CV %s)", s.Runs, s.CV)
	}
	return note + flagNote(s.Flags)
}

// flagNote lists a result's flags after its number: " Noisy SharedNode".
func flagNote(flags []benchv1.ResultFlag) string {
	var note string
	for _, f := range flags {
		note += " " + string(f)
	}
	return note
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

func dashes(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = orNA(c)
	}
	return out
}

func orNA(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// whole formats a whole number with thousands separators.
func whole[T int64 | float64](v T) string {
	s := strconv.FormatInt(int64(math.Round(float64(v))), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// seedingPartsTable keeps each runner's own load where runners seeded together: its slice,
// its rate, and when it started after the first, which the joined rate already counts.
func seedingPartsTable(docs []*Document) Table {
	t := Table{
		Title: "Seeding per runner",
		Note: "The seeding rate above is every document over the first runner's start to the last one's end; " +
			"the runners left a barrier in CouchDB together, within its poll interval (the start column).",
		Header: []string{colOption, colProfile, "Runner", "Documents", colDocsPerSecond, "Start", "Elapsed"},
	}
	for _, d := range inSpecOrder(docs) {
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				if p.Seeding == nil {
					continue
				}
				for i, part := range p.Seeding.Parts {
					t.Rows = append(t.Rows, []string{a.QueryServer, p.Profile, strconv.Itoa(i), strconv.FormatInt(part.Stored, 10),
						whole(part.DocsPerSecond()), fmt.Sprintf("+%d ms", part.StartedAt.Sub(p.Seeding.StartedAt).Milliseconds()),
						part.Elapsed.Round(time.Millisecond).String()})
				}
			}
		}
	}
	return t
}

// warmUpTable shows the warm-up runs (workloads' warmUp) beside the median of the runs that
// count, which they are left out of.
func warmUpTable(docs []*Document) Table {
	t := Table{
		Title:  "Warm-up runs (not counted)",
		Note:   "Each warm-up ran before the repetitions and is left out of their median, spread and comparisons.",
		Header: []string{colOption, colProfile, "Run", "Warm-up", "Median of the counted runs"},
	}
	for _, d := range inSpecOrder(docs) {
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				add := func(run, warmUp, counted string) {
					t.Rows = append(t.Rows, []string{a.QueryServer, p.Profile, run, warmUp, counted})
				}
				for _, ix := range p.Indexing {
					if ix.WarmUp != nil {
						add("index, "+ix.Reducer+" reducer", whole(ix.WarmUp.DocsPerSecond)+" docs/s", whole(ix.DocsPerSecond().Median)+" docs/s")
					}
				}
				for _, vr := range p.ViewReads {
					if vr.WarmUp != nil {
						add("view "+string(vr.View), vr.WarmUp.Elapsed.Round(time.Millisecond).String(),
							time.Duration(ViewReadSeconds(vr).Median*float64(time.Second)).Round(time.Millisecond).String())
					}
				}
				for _, w := range p.WritesWarmUp {
					counted := "-"
					for _, m := range writeModes(p.Writes) {
						if m.name == w.Mode {
							counted = whole(m.docsPerSecond().Median) + " docs/s"
						}
					}
					add("writes "+w.Mode, whole(w.DocsPerSecond())+" docs/s", counted)
				}
				if r := p.Reads; r != nil && len(r.WarmUp) > 0 {
					warm, _ := Reads{Runners: r.WarmUp}.repetitions()
					counted, _ := r.repetitions()
					if len(warm) > 0 {
						add("reads (k6)", whole(warm[0])+" req/s", whole(Summarize(counted).Median)+" req/s")
					}
				}
			}
		}
	}
	return t
}

// cpuCostTable is the server's CPU cost of every workload the run metered (Metrics), per
// 1,000 documents built, loaded, read or stored, or requests of the k6 reads.
func cpuCostTable(docs []*Document) Table {
	t := Table{
		Title: "Server CPU cost: CPU-seconds per 1,000 documents or requests (median of repetitions, CV)",
		Note: "The CPU time the arm's CouchDB (the Erlang VM and its query servers) spent over each repetition's measured part, " +
			"read from its own cgroup: steadier than the rate on a busy machine, and it grows with work, not with waits. " +
			"The k6 reads' is per request, from the start of a repetition's load to its last runner's end.",
		Header: []string{colOption, colProfile, "Workload", "Variant", "Per 1,000", "CPU s"},
	}
	for _, m := range Metrics(docs...) {
		per := map[string]string{cpuCostMetric: "docs", cpuCostPerRequest: "requests"}[m.Name]
		if per == "" {
			continue
		}
		s := Summarize(m.Samples)
		cell := fmt.Sprintf("%.3f (n=%d)", s.Median, s.N)
		if s.N > 1 {
			cell = fmt.Sprintf("%.3f (n=%d, CV %.1f%%)", s.Median, s.N, s.CV)
		}
		t.Rows = append(t.Rows, []string{m.QueryServer, m.Profile, m.Workload, m.Variant, per, cell})
	}
	return t
}

// loadTable shows how busy each step kept the runner (its CPU allowance) and CouchDB (from
// every node's /_node/_system during the step), so that a number taken under load can be
// told from a clean one.
func loadTable(docs []*Document) Table {
	t := Table{
		Title: "Load during the steps",
		Note: "Runner CPU: CPU time / (wall time x allowance), GeneratorBound from " + strconv.Itoa(int(cpuuse.BoundAbove)) + "%. " +
			"CouchDB, over its nodes: the highest scheduler run queue, the highest count of internal replication jobs " +
			"(a copy being refilled), and the Erlang VM's work in reductions per second.",
		Header: []string{colOption, "Step", "Runner CPU", "Run queue max", "Replication jobs max", "Reductions/s"},
	}
	for _, d := range inSpecOrder(docs) {
		for _, rec := range d.Steps {
			cpu := "-"
			if u := rec.LoadGenerator; u != nil {
				cpu = fmt.Sprintf("%.0f%% of %.2g (%s)", u.BusyPercent, u.LimitCores, u.LimitFrom)
			}
			queue, replications, reductions := "-", "-", "-"
			if len(rec.CouchDBLoad) > 0 {
				var q, j int
				var red float64
				for _, n := range rec.CouchDBLoad {
					q, j, red = max(q, n.MaxRunQueue), max(j, n.MaxInternalReplications), red+n.ReductionsPerSecond
				}
				queue, replications, reductions = strconv.Itoa(q), strconv.Itoa(j), whole(red)
			}
			if cpu == "-" && queue == "-" {
				continue
			}
			t.Rows = append(t.Rows, []string{rec.QueryServer, string(rec.Step), cpu, queue, replications, reductions})
		}
	}
	return t
}
