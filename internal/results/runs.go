package results

import (
	"slices"
	"time"
)

// Runs sorts documents into the runs they belong to, for a report of several: the documents
// of one benchmark with one run id are one run (the operator stores one per arm; steps run
// one by one by hand with --run-id each write one), and so are documents without a run id
// that started at the same moment (the same run's file given twice). Where a query server
// is in more than one document of a run, the run's documents are merged per query server as
// the operator merges a step's (Merge: the same step twice changes nothing), so that no row
// shows twice. Runs are in the order they started; each run's documents in the order given.
func Runs(docs []*Document) [][]*Document {
	type key struct {
		benchmark, runID string
		started          time.Time
	}
	var order []key
	given := map[key][]*Document{}
	for _, d := range docs {
		k := key{benchmark: d.Benchmark, runID: d.RunID}
		if d.RunID == "" {
			k.started = d.StartedAt
		}
		if _, ok := given[k]; !ok {
			order = append(order, k)
		}
		given[k] = append(given[k], d)
	}
	runs := make([][]*Document, len(order))
	for i, k := range order {
		runs[i] = given[k]
		if armRepeats(runs[i]) {
			runs[i] = byArm(runs[i])
		}
	}
	slices.SortStableFunc(runs, func(a, b []*Document) int { return StartedAt(a).Compare(StartedAt(b)) })
	return runs
}

// armRepeats tells whether a query server is in more than one of the documents.
func armRepeats(docs []*Document) bool {
	seen := map[string]bool{}
	for _, d := range docs {
		for _, a := range d.Arms {
			if seen[a.QueryServer] {
				return true
			}
			seen[a.QueryServer] = true
		}
	}
	return false
}

// byArm merges the documents of one run into one document per query server, in the order
// the query servers first appear; a document without arms (a run that stopped before it
// measured anything) stays as it is.
func byArm(docs []*Document) []*Document {
	var out []*Document
	merged := map[string]*Document{}
	for _, d := range docs {
		if len(d.Arms) == 0 {
			out = append(out, d)
		}
		for _, a := range d.Arms {
			m, ok := merged[a.QueryServer]
			if !ok {
				m = &Document{}
				merged[a.QueryServer] = m
				out = append(out, m)
			}
			Merge(m, ArmDocument(d, a.QueryServer))
		}
	}
	return out
}
