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
	SchemaVersion int                          `json:"v"`
	Step          string                       `json:"step"`
	Results       []benchv1.QueryServerResults `json:"results,omitempty"`
	Error         string                       `json:"error,omitempty"`
	Interrupted   bool                         `json:"interrupted,omitempty"`
	// Truncated is true when details were left out to stay within MaxSummaryBytes; the
	// full document has them.
	Truncated bool `json:"truncated,omitempty"`
}

// Summary condenses the document for a step.
func (d *Document) Summary(step string) Summary {
	s := Summary{SchemaVersion: SchemaVersion, Step: step, Error: d.Error, Interrupted: d.Interrupted}
	for _, a := range d.Arms {
		r := benchv1.QueryServerResults{QueryServer: a.QueryServer}
		for _, p := range a.Profiles {
			for _, ix := range p.Indexing {
				if len(ix.Runs) == 0 {
					continue
				}
				st := ix.DocsPerSecond()
				r.Indexing = append(r.Indexing, benchv1.IndexingResult{
					Profile: p.Profile, Reducer: benchv1.Reducer(ix.Reducer),
					ChangesPerSecond:      round(st.Median),
					ShardChangesPerSecond: round(ix.ShardChangesPerSecond().Median),
					Runs:                  int32(st.N), CV: fmt.Sprintf("%.1f%%", st.CV),
				})
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
					Mode: w.Mode, Profile: p.Profile, DocsPerSecond: round(w.DocsPerSecond()), Accepted: w.Accepted, Errors: w.Errors,
				})
			}
		}
		s.Results = append(s.Results, r)
	}
	return s
}

// Marshal encodes the summary within MaxSummaryBytes, leaving out the least central
// details first (writes, then view reads, then the error's tail) and saying so.
func (s Summary) Marshal() []byte {
	data, _ := json.Marshal(s)
	for _, shrink := range []func(*Summary) bool{dropWrites, dropViewReads, shortenError} {
		if len(data) <= MaxSummaryBytes {
			return data
		}
		if shrink(&s) {
			s.Truncated = true
			data, _ = json.Marshal(s)
		}
	}
	// Indexing rates alone outgrow 4 KB only with many arms in one summary (the operator
	// runs one Job per arm): keep the arms that fit.
	for len(data) > MaxSummaryBytes && len(s.Results) > 0 {
		s.Results, s.Truncated = s.Results[:len(s.Results)-1], true
		data, _ = json.Marshal(s)
	}
	return data
}

// dropDetail makes a shrink step that clears one kind of detail in every arm; it reports
// whether there was any.
func dropDetail(clear func(*benchv1.QueryServerResults) bool) func(*Summary) bool {
	return func(s *Summary) bool {
		changed := false
		for i := range s.Results {
			changed = clear(&s.Results[i]) || changed
		}
		return changed
	}
}

var (
	dropWrites = dropDetail(func(r *benchv1.QueryServerResults) bool {
		had := len(r.Writes) > 0
		r.Writes = nil
		return had
	})
	dropViewReads = dropDetail(func(r *benchv1.QueryServerResults) bool {
		had := len(r.ViewReads) > 0
		r.ViewReads = nil
		return had
	})
)

func shortenError(s *Summary) bool {
	const keep = 512
	if len(s.Error) <= keep {
		return false
	}
	s.Error = s.Error[:keep] + "..."
	return true
}

func round(v float64) int64 { return int64(math.Round(v)) }
