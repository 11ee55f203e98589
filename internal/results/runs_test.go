package results

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"strings"
	"testing"
	"time"
)

// runOf is sampleDocument's arms as a run: benchmark b, the run id, started at the time.
func runOf(runID string, started time.Time, arms int) *Document {
	d := sampleDocument(arms)
	d.RunID, d.StartedAt = runID, started
	return d
}

func TestRunsTellRunsApart(t *testing.T) {
	first := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	second := first.Add(24 * time.Hour)

	// Two runs by hand without a run id, given latest first: two runs, in the order they
	// started.
	early, late := runOf("", first, 1), runOf("", second, 1)
	runs := Runs([]*Document{late, early})
	if len(runs) != 2 || runs[0][0] != early || runs[1][0] != late {
		t.Fatalf("runs %v: want the two documents as two runs, earliest first", runs)
	}

	// The operator's documents of one run, one per arm: one run, the documents as they are.
	js, erl := runOf("r1", first, 2), runOf("r1", first.Add(time.Minute), 2)
	js.Arms, erl.Arms = js.Arms[:1], erl.Arms[1:]
	runs = Runs([]*Document{erl, js, late})
	if len(runs) != 2 || len(runs[0]) != 2 || runs[0][0] != erl || runs[0][1] != js || runs[1][0] != late {
		t.Errorf("runs %v: want the per-arm documents of r1 as one run, then the later run", runs)
	}

	// The same run given twice is one run, and its rows show once.
	once := runOf("", first, 2)
	runs = Runs([]*Document{once, once})
	if len(runs) != 1 || !reflect.DeepEqual(Aggregate(runs[0]...).Results, Aggregate(once).Results) {
		t.Errorf("the same document twice: %d runs, %+v", len(runs), Aggregate(runs[0]...).Results)
	}
}

// A run's steps written one by one (couchbench seed --run-id r1 --out seed.json, then index
// ...) are one run, each arm's steps merged as the operator merges them.
func TestRunsMergeARunsSteps(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	whole := runOf("r1", at, 2)
	whole.SeriesThinned = 4
	seed, index := runOf("r1", at, 2), runOf("r1", at.Add(time.Minute), 2)
	index.SeriesThinned = 4
	for a := range seed.Arms {
		for p := range seed.Arms[a].Profiles {
			seed.Arms[a].Profiles[p].Indexing, seed.Arms[a].Profiles[p].ViewReads, seed.Arms[a].Profiles[p].Writes = nil, nil, nil
			index.Arms[a].Profiles[p].Seeding, index.Arms[a].Profiles[p].ViewReads, index.Arms[a].Profiles[p].Writes = nil, nil, nil
		}
	}
	runs := Runs([]*Document{seed, index})
	if len(runs) != 1 || len(runs[0]) != 2 {
		t.Fatalf("%d runs: want one, a document per arm", len(runs))
	}
	got, want := Aggregate(runs[0]...).Results, Aggregate(whole).Results
	for i := range want {
		want[i].ViewReads, want[i].Writes = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged steps %+v\nwant %+v", got, want)
	}
	if runs[0][0].SeriesThinned != 4 || !runs[0][0].StartedAt.Equal(at) {
		t.Errorf("merged document: thinned %d, started %s; want the index step's thinning and the seed step's start",
			runs[0][0].SeriesThinned, runs[0][0].StartedAt)
	}
}

// Each run's rows carry its benchmark, run id and start, in the Markdown heading and in
// every CSV row.
func TestReportsLabelTheirRun(t *testing.T) {
	first := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a, b := NewReport(runOf("r1", first, 1)), NewReport(runOf("", first.Add(time.Hour), 1))
	if a.Label() != "b (run r1, 2026-11-22T01:00:00Z)" || b.Label() != "b (2026-11-22T02:00:00Z)" {
		t.Errorf("labels %q and %q", a.Label(), b.Label())
	}
	var md bytes.Buffer
	if err := a.WriteHeader(&md); err != nil {
		t.Fatal(err)
	}
	if md.String() != "## b (run r1, 2026-11-22T01:00:00Z, "+a.Server+")\n\n" {
		t.Errorf("heading %q", md.String())
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []Report{a, b}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, row := range rows[1:] {
		runs[strings.Join(row[:3], ",")]++
	}
	if len(runs) != 2 || runs["b,r1,2026-11-22T01:00:00Z"] != (len(rows)-1)/2 || runs["b,,2026-11-22T02:00:00Z"] != (len(rows)-1)/2 {
		t.Errorf("rows by run %v; want half of the %d rows each", runs, len(rows)-1)
	}
}
