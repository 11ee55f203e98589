package results

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// MaxSummaryBytes is the most a summary may take: Kubernetes keeps at most 4096 bytes of a
// container's termination message, which is how the operator reads a step's results
// without log access.
const MaxSummaryBytes = 4096

// Summary is the compact result of one runner step, in the API's status shapes.
type Summary struct {
	SchemaVersion int    `json:"v"`
	Step          string `json:"step"`
	// Server is the CouchDB that produced the numbers: vendor, version, node count.
	Server      string                       `json:"server,omitempty"`
	Results     []benchv1.QueryServerResults `json:"results,omitempty"`
	Error       string                       `json:"error,omitempty"`
	Interrupted bool                         `json:"interrupted,omitempty"`
	// Truncated is true when details were left out to stay within MaxSummaryBytes; the
	// full document has them.
	Truncated bool `json:"truncated,omitempty"`
}

// Summary condenses the document for a step.
func (d *Document) Summary(step string) Summary {
	s := Summary{SchemaVersion: SchemaVersion, Step: step, Error: d.Error, Interrupted: d.Interrupted, Results: d.Compact()}
	if d.Server.Version != "" {
		s.Server = d.Report().Server
	}
	return s
}

// Compact is the document in the API's status shapes: medians and counts per arm, what
// status, tables and CSV show.
func (d *Document) Compact() []benchv1.QueryServerResults {
	out := make([]benchv1.QueryServerResults, 0, len(d.Arms))
	for _, a := range d.Arms {
		r := benchv1.QueryServerResults{QueryServer: a.QueryServer, Language: a.Language}
		for _, p := range a.Profiles {
			if p.Seeding != nil {
				r.Seeding = append(r.Seeding, benchv1.SeedingResult{
					Profile: p.Profile, Documents: p.Seeding.Stored, DocsPerSecond: round(p.SeedingDocsPerSecond),
					MBPerSecond: fmt.Sprintf("%.2f", p.SeedingMBPerSecond), Retries: p.Seeding.Retries,
				})
			}
			for _, ix := range p.Indexing {
				if len(ix.Runs) > 0 {
					r.Indexing = append(r.Indexing, compactIndexing(p.Profile, ix))
				}
			}
			for _, vr := range p.ViewReads {
				if len(vr.Reads) == 0 {
					continue
				}
				secs := ViewReadSeconds(vr).Median
				r.ViewReads = append(r.ViewReads, benchv1.ViewReadResult{
					View: vr.View, Profile: p.Profile, RowsPerSecond: round(RowsPerSecond(vr)),
					Duration: time.Duration(secs * float64(time.Second)).Round(time.Millisecond).String(),
				})
			}
			for _, w := range p.Writes {
				r.Writes = append(r.Writes, benchv1.WriteResult{
					Mode: w.Mode, Profile: p.Profile, DocsPerSecond: round(w.DocsPerSecond()),
					Created: w.Created, Accepted: w.Accepted, Errors: w.Errors, Stored: w.Stored,
				})
			}
		}
		out = append(out, r)
	}
	return out
}

func compactIndexing(profile string, ix IndexingSeries) benchv1.IndexingResult {
	st := ix.DocsPerSecond()
	n := len(ix.Runs)
	queryable, built, ratios := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	var timeouts int32
	for _, run := range ix.Runs {
		queryable = append(queryable, run.QueryableDocsPerSecond)
		built = append(built, run.Built.Seconds())
		timeouts += int32(run.ViewTimeouts)
		if run.MapDocs >= 0 && run.MapDocsExpected > 0 {
			ratios = append(ratios, float64(run.MapDocs)/float64(run.MapDocsExpected))
		}
	}
	res := benchv1.IndexingResult{
		Profile: profile, Reducer: benchv1.Reducer(ix.Reducer),
		ChangesPerSecond: round(st.Median), MinChangesPerSecond: round(st.Min), MaxChangesPerSecond: round(st.Max),
		QueryableChangesPerSecond: round(Summarize(queryable).Median),
		ShardChangesPerSecond:     round(ix.ShardChangesPerSecond().Median),
		Runs:                      int32(st.N), CV: fmt.Sprintf("%.1f%%", st.CV),
		BuiltSeconds:   fmt.Sprintf("%.2f", Summarize(built).Median),
		ViewCompaction: ix.ViewCompaction, ViewTimeouts: timeouts,
	}
	if len(ratios) > 0 {
		res.MapDocsPerDoc = fmt.Sprintf("%.2f", Summarize(ratios).Median)
	}
	return res
}

// Marshal encodes the summary within MaxSummaryBytes. Over it, the error keeps its first
// 512 characters, then rows go one at a time from the end of the longest list of any arm,
// so that every kind of result keeps as many rows as fit (a one-step summary keeps its own
// step's rows); Truncated says so.
func (s Summary) Marshal() []byte {
	data, _ := json.Marshal(s)
	if len(data) <= MaxSummaryBytes {
		return data
	}
	s.Truncated = true
	const keep = 512
	if len(s.Error) > keep {
		s.Error = s.Error[:keep] + "..."
	}
	s.Results = append([]benchv1.QueryServerResults(nil), s.Results...)
	for data, _ = json.Marshal(s); len(data) > MaxSummaryBytes && dropOneRow(s.Results); data, _ = json.Marshal(s) {
	}
	return data
}

// dropOneRow removes the last row of the longest list of results; false when none is left.
func dropOneRow(rs []benchv1.QueryServerResults) bool {
	longest, arm, kind := 0, -1, ""
	for i := range rs {
		for k, n := range map[string]int{"seeding": len(rs[i].Seeding), "indexing": len(rs[i].Indexing),
			"viewReads": len(rs[i].ViewReads), "writes": len(rs[i].Writes)} {
			if n > longest {
				longest, arm, kind = n, i, k
			}
		}
	}
	if arm < 0 {
		return false
	}
	r := &rs[arm]
	switch kind {
	case "seeding":
		r.Seeding = r.Seeding[:len(r.Seeding)-1]
	case "indexing":
		r.Indexing = r.Indexing[:len(r.Indexing)-1]
	case "viewReads":
		r.ViewReads = r.ViewReads[:len(r.ViewReads)-1]
	default:
		r.Writes = r.Writes[:len(r.Writes)-1]
	}
	return true
}

func round(v float64) int64 { return int64(math.Round(v)) }
