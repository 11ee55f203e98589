package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Column names shared by several tables.
const (
	colOption  = "Option"
	colProfile = "Profile"
)

// Table is a titled grid of cells.
type Table struct {
	Title  string
	Note   string
	Header []string
	Rows   [][]string
}

// Tables lays the document out like the seed articles' tables: indexing as option ×
// reducer → changes/s per document profile (seed 000), then the build details, view reads
// (seed 002) and writes (seed 003). Tables without data are left out.
func (d *Document) Tables() []Table {
	var out []Table
	for _, t := range []Table{d.indexingTable(), d.indexingDetailTable(), d.seedingTable(), d.viewReadsTable(), d.writesTable()} {
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// profileNames lists the document profiles in the order they first appear.
func (d *Document) profileNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			if !seen[p.Profile] {
				seen[p.Profile] = true
				names = append(names, p.Profile)
			}
		}
	}
	return names
}

func option(a Arm) string { return fmt.Sprintf("%s (%s)", a.QueryServer, a.Language) }

func (d *Document) indexingTable() Table {
	profiles := d.profileNames()
	t := Table{
		Title: "Indexing: changes/s (documents / time to a fully built view, median of runs, CV)",
		Note:  "A fully built view: every shard copy's indexer done, from /_active_tasks polled every 250 ms.",
	}
	t.Header = append([]string{colOption, "Reducer"}, prefixed("c/s ", profiles)...)
	type rowKey struct{ arm, reducer string }
	cells := map[rowKey][]string{}
	var order []rowKey
	for _, a := range d.Arms {
		for pi, name := range profiles {
			p := a.profile(name)
			if p == nil {
				continue
			}
			for _, s := range p.Indexing {
				k := rowKey{option(a), s.Reducer}
				if _, ok := cells[k]; !ok {
					cells[k] = make([]string, len(profiles))
					order = append(order, k)
				}
				st := s.DocsPerSecond()
				cells[k][pi] = fmt.Sprintf("%s (n=%d, CV %.1f%%)", whole(st.Median), st.N, st.CV)
			}
		}
	}
	for _, k := range order {
		t.Rows = append(t.Rows, append([]string{k.arm, k.reducer}, dashes(cells[k])...))
	}
	return t
}

func (d *Document) indexingDetailTable() Table {
	t := Table{
		Title: "Indexing details (medians)",
		Note: "queryable: the view request answered (first copy of every shard range); shard c/s: changes over all " +
			"shard copies / time to fully built; map/doc: couchdb.mrview.map_doc growth / (documents x n), 1.00 = every " +
			"document mapped once per copy.",
		Header: []string{colOption, colProfile, "Reducer", "Compaction", "Built s", "Queryable s", "Shard c/s", "Peak shard c/s", "map/doc", "Timeouts"},
	}
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			for _, s := range p.Indexing {
				n := len(s.Runs)
				built, queryable, peak, ratios := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
				mapRatio, timeouts := "n/a", 0
				for _, r := range s.Runs {
					built = append(built, r.Built.Seconds())
					queryable = append(queryable, r.Queryable.Seconds())
					peak = append(peak, r.PeakShardChangesPerSecond)
					timeouts += r.ViewTimeouts
					if r.MapDocs >= 0 && r.MapDocsExpected > 0 {
						ratios = append(ratios, float64(r.MapDocs)/float64(r.MapDocsExpected))
					}
				}
				if len(ratios) > 0 {
					mapRatio = fmt.Sprintf("%.2f", Summarize(ratios).Median)
				}
				t.Rows = append(t.Rows, []string{
					option(a), p.Profile, s.Reducer, s.ViewCompaction,
					fmt.Sprintf("%.2f", Summarize(built).Median), fmt.Sprintf("%.2f", Summarize(queryable).Median),
					whole(s.ShardChangesPerSecond().Median), whole(Summarize(peak).Median), mapRatio, strconv.Itoa(timeouts),
				})
			}
		}
	}
	return t
}

func (d *Document) seedingTable() Table {
	t := Table{Title: "Seeding (_bulk_docs)", Header: []string{colOption, colProfile, "Documents", "docs/s", "MB/s", "Retries", "Failed"}}
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			if p.Seeding == nil {
				continue
			}
			t.Rows = append(t.Rows, []string{option(a), p.Profile, strconv.FormatInt(p.Seeding.Stored, 10),
				whole(p.SeedingDocsPerSecond), fmt.Sprintf("%.2f", p.SeedingMBPerSecond),
				strconv.FormatInt(p.Seeding.Retries, 10), strconv.FormatInt(p.Seeding.Failed, 10)})
		}
	}
	return t
}

func (d *Document) viewReadsTable() Table {
	t := Table{
		Title:  "View reads: seconds per full read (median), rows/s",
		Header: []string{colOption, colProfile, "View", "Rows", "Seconds", "Rows/s", "Reads"},
	}
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			for _, r := range p.ViewReads {
				if len(r.Reads) == 0 {
					continue
				}
				st := ViewReadSeconds(r)
				t.Rows = append(t.Rows, []string{option(a), p.Profile, string(r.View), strconv.FormatInt(r.Reads[0].Rows, 10),
					fmt.Sprintf("%.3f", st.Median), whole(RowsPerSecond(r)), strconv.Itoa(st.N)})
			}
		}
	}
	return t
}

func (d *Document) writesTable() Table {
	t := Table{
		Title: "Writes: documents/s per insert mode",
		Note: "202 (batch=ok) answers are counted apart: CouchDB holds those documents in memory first and can lose them " +
			"in a crash. Stored is the database's doc_count after the mode.",
		Header: []string{colOption, colProfile, "Mode", "docs/s", "201", "202", "Errors", "Stored"},
	}
	for _, a := range d.Arms {
		for _, p := range a.Profiles {
			for _, w := range p.Writes {
				t.Rows = append(t.Rows, []string{option(a), p.Profile, w.Mode, whole(w.DocsPerSecond()),
					strconv.FormatInt(w.Created, 10), strconv.FormatInt(w.Accepted, 10), strconv.FormatInt(w.Errors, 10), strconv.FormatInt(w.Stored, 10)})
			}
		}
	}
	return t
}

func (a Arm) profile(name string) *Profile {
	for i := range a.Profiles {
		if a.Profiles[i].Profile == name {
			return &a.Profiles[i]
		}
	}
	return nil
}

// WriteMarkdown writes the tables as Markdown, columns padded so that the text reads as a
// table in a terminal too.
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
		if t.Note != "" {
			fmt.Fprintf(&b, "\n%s\n", t.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes one row per measured value, in long form, for spreadsheets and plots:
// benchmark, option, profile, workload, variant, metric, value.
func WriteCSV(w io.Writer, docs []*Document) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"benchmark", "started_at", "option", "profile", "workload", "variant", "metric", "value"}); err != nil {
		return err
	}
	for _, d := range docs {
		started := d.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
		emit := func(a Arm, p Profile, workload, variant, metric string, v float64) error {
			return cw.Write([]string{d.Benchmark, started, a.QueryServer, p.Profile, workload, variant, metric, strconv.FormatFloat(v, 'f', -1, 64)})
		}
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				if p.Seeding != nil {
					if err := emit(a, p, "seeding", "bulk", "docs_per_second", p.SeedingDocsPerSecond); err != nil {
						return err
					}
				}
				for _, s := range p.Indexing {
					for i, r := range s.Runs {
						variant := fmt.Sprintf("%s/run%d", s.Reducer, i+1)
						for _, m := range []struct {
							name string
							v    float64
						}{
							{"docs_per_second", r.DocsPerSecond}, {"queryable_docs_per_second", r.QueryableDocsPerSecond},
							{"shard_changes_per_second", r.ShardChangesPerSecond}, {"built_seconds", r.Built.Seconds()},
						} {
							if err := emit(a, p, "indexing", variant, m.name, m.v); err != nil {
								return err
							}
						}
					}
				}
				for _, r := range p.ViewReads {
					for i, read := range r.Reads {
						if err := emit(a, p, "viewReads", fmt.Sprintf("%s/read%d", r.View, i+1), "seconds", read.Elapsed.Seconds()); err != nil {
							return err
						}
					}
				}
				for _, wr := range p.Writes {
					if err := emit(a, p, "writes", wr.Mode, "docs_per_second", wr.DocsPerSecond()); err != nil {
						return err
					}
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
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
		if c == "" {
			c = "-"
		}
		out[i] = c
	}
	return out
}

// whole formats a rate as a whole number with thousands separators.
func whole(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
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
