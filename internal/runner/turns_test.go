package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/results"
)

// measured is one measurement of an arm, for checking their order.
type measured struct {
	arm   string
	round int
	at    time.Time
}

// order is the arms of the measurements sorted by when each began.
func order(ms []measured) []string {
	slices.SortFunc(ms, func(a, b measured) int { return a.at.Compare(b.at) })
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s%d", m.arm, m.round)
	}
	return out
}

// Two arms on the real Apache CouchDB single node take turns in every step, round by round,
// warm-up first: js's build, erlang's, js's, erlang's — and likewise the loads of the
// dataset, the view reads and the writes. Each arm's step record spans its own turns, so the two overlap, and its CPU share
// leaves the other arm's turns out.
func TestArmsTakeTurnsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	doc, log, err := realRun(t, srv, jsBench("turns", `
  - {name: erl, language: erlang}
  allowErlangViews: true
  dataset: {documents: 400, seedRepetitions: 2}
  workloads:
    indexing: {repetitions: 2, warmUp: true}
    viewReads: {repetitions: 2, views: [emitNull, emitDoc]}
    writes: {duration: 1s, repetitions: 2, serial: true}
`), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	if len(doc.Arms) != 2 {
		t.Fatalf("%d arms in the document, want 2", len(doc.Arms))
	}
	var seeds, builds, reads, writes []measured
	for _, a := range doc.Arms {
		p := a.Profiles[0]
		for i, load := range p.SeedingRuns {
			if load.Stored != 400 {
				t.Errorf("%s load %d stored %d, want 400", a.QueryServer, i+1, load.Stored)
			}
			seeds = append(seeds, measured{a.QueryServer, i + 1, load.StartedAt})
		}
		for _, series := range p.Indexing {
			if series.WarmUp == nil || len(series.Runs) != 2 {
				t.Fatalf("%s %s: warm-up %v, %d runs; want a warm-up and 2 runs", a.QueryServer, series.Reducer, series.WarmUp != nil, len(series.Runs))
			}
			builds = append(builds, measured{a.QueryServer, 0, series.WarmUp.StartedAt})
			for i, r := range series.Runs {
				builds = append(builds, measured{a.QueryServer, i + 1, r.StartedAt})
			}
		}
		for _, v := range p.ViewReads {
			for i, r := range v.Reads {
				reads = append(reads, measured{a.QueryServer + "/" + string(v.View) + "/", i + 1, r.StartedAt})
			}
		}
		for _, w := range p.Writes {
			writes = append(writes, measured{a.QueryServer, w.Repetition + 1, w.StartedAt})
		}
	}
	if got, want := order(seeds), []string{"js1", "erl1", "js2", "erl2"}; !slices.Equal(got, want) {
		t.Errorf("loads in the order %v, want %v", got, want)
	}
	if got, want := order(builds), []string{"js0", "erl0", "js1", "erl1", "js2", "erl2"}; !slices.Equal(got, want) {
		t.Errorf("builds in the order %v, want %v", got, want)
	}
	if got, want := order(reads), []string{"js/emitNull/1", "js/emitDoc/1", "erl/emitNull/1", "erl/emitDoc/1",
		"js/emitNull/2", "js/emitDoc/2", "erl/emitNull/2", "erl/emitDoc/2"}; !slices.Equal(got, want) {
		t.Errorf("view reads in the order %v, want %v", got, want)
	}
	if got, want := order(writes), []string{"js1", "erl1", "js2", "erl2"}; !slices.Equal(got, want) {
		t.Errorf("writes in the order %v, want %v", got, want)
	}

	records := map[string]results.StepRecord{}
	for _, rec := range doc.Steps {
		records[rec.QueryServer+"/"+string(rec.Step)] = rec
	}
	if len(records) != 8 || len(doc.Steps) != 8 {
		t.Fatalf("step records %+v, want one per arm and step", doc.Steps)
	}
	for _, step := range []string{"seed", "index", "views", "writes"} {
		js, erl := records["js/"+step], records["erl/"+step]
		interleaved := js.StartedAt.Before(erl.StartedAt) && erl.StartedAt.Before(js.FinishedAt) && js.FinishedAt.Before(erl.FinishedAt)
		if !interleaved {
			t.Errorf("%s: js ran %s-%s, erl %s-%s; want overlapping spans, js first", step,
				js.StartedAt.Format(time.StampMilli), js.FinishedAt.Format(time.StampMilli), erl.StartedAt.Format(time.StampMilli), erl.FinishedAt.Format(time.StampMilli))
		}
		for _, rec := range []results.StepRecord{js, erl} {
			if u := rec.LoadGenerator; u == nil || u.CPUSeconds <= 0 || u.BusyPercent <= 0 || u.BusyPercent > 100 {
				t.Errorf("%s/%s: the runner's CPU share %+v", rec.QueryServer, step, u)
			}
			if len(rec.CouchDBLoad) != 1 {
				t.Errorf("%s/%s: CouchDB's load %+v, want the node's", rec.QueryServer, step, rec.CouchDBLoad)
			}
		}
	}
	if !strings.Contains(log, "erl/small: builtin reducer run 2") {
		t.Errorf("the log lacks erlang's second build:\n%s", log)
	}
}
