package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/turns"
)

// stamped is one measurement of an arm, for checking their order.
type stamped struct {
	arm   string
	round int
	at    time.Time
}

// order is the arms of the measurements sorted by when each began.
func order(ms []stamped) []string {
	slices.SortFunc(ms, func(a, b stamped) int { return a.at.Compare(b.at) })
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s%d", m.arm, m.round)
	}
	return out
}

// expected is the order the measurements of a step must have run in: round by round, unit by
// unit (items, an arm's measurements of a round, in order), the arms in the order the step
// record says they took their turns, and that order the one internal/turns draws from the run.
func expected(t *testing.T, rec results.StepRecord, runID string, first int, items map[string][]string) []string {
	t.Helper()
	var out []string
	for i, order := range rec.Rounds {
		round := first + i
		if want := turns.Order(runID, string(rec.Step), round, []string{"js", "erl"}); !slices.Equal(order, want) {
			t.Errorf("%s round %d: the record says %v, internal/turns draws %v", rec.Step, round, order, want)
		}
		for unit := range items[order[0]] {
			for _, arm := range order {
				out = append(out, fmt.Sprintf("%s%d", items[arm][unit], round))
			}
		}
	}
	return out
}

// Two arms on the real Apache CouchDB single node take turns in every step, round by round,
// warm-up first, unit by unit (each view read), in each round's own random order as the step
// records say: the loads of the dataset, the builds, the view reads and the writes. Each arm's step record spans its own
// turns, so the two overlap, and its CPU share leaves the other arm's turns out.
func TestArmsTakeTurnsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	runID := "t" + couchdbtest.RandomID()
	doc, log, err := realRun(t, srv, jsBench("turns", `
  - {name: erl, language: erlang}
  allowErlangViews: true
  dataset: {documents: 400, seedRepetitions: 2}
  workloads:
    indexing: {repetitions: 2, warmUp: true}
    viewReads: {repetitions: 2, views: [emitNull, emitDoc]}
    writes: {duration: 1s, repetitions: 2, serial: true}
`), Config{RunID: runID})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	if len(doc.Arms) != 2 {
		t.Fatalf("%d arms in the document, want 2", len(doc.Arms))
	}
	var seeds, builds, reads, writes []stamped
	for _, a := range doc.Arms {
		p := a.Profiles[0]
		for i, load := range p.SeedingRuns {
			if load.Stored != 400 {
				t.Errorf("%s load %d stored %d, want 400", a.QueryServer, i+1, load.Stored)
			}
			seeds = append(seeds, stamped{a.QueryServer, i + 1, load.StartedAt})
		}
		for _, series := range p.Indexing {
			if series.WarmUp == nil || len(series.Runs) != 2 {
				t.Fatalf("%s %s: warm-up %v, %d runs; want a warm-up and 2 runs", a.QueryServer, series.Reducer, series.WarmUp != nil, len(series.Runs))
			}
			builds = append(builds, stamped{a.QueryServer, 0, series.WarmUp.StartedAt})
			for i, r := range series.Runs {
				builds = append(builds, stamped{a.QueryServer, i + 1, r.StartedAt})
			}
		}
		for _, v := range p.ViewReads {
			for i, r := range v.Reads {
				reads = append(reads, stamped{a.QueryServer + "/" + string(v.View) + "/", i + 1, r.StartedAt})
			}
		}
		for _, w := range p.Writes {
			writes = append(writes, stamped{a.QueryServer, w.Repetition + 1, w.StartedAt})
		}
	}

	records := map[string]results.StepRecord{}
	for _, rec := range doc.Steps {
		records[rec.QueryServer+"/"+string(rec.Step)] = rec
	}
	if len(records) != 8 || len(doc.Steps) != 8 {
		t.Fatalf("step records %+v, want one per arm and step", doc.Steps)
	}
	arms := map[string][]string{"js": {"js"}, "erl": {"erl"}}
	for _, c := range []struct {
		step     string
		first    int
		got      []stamped
		measured map[string][]string
	}{
		{"seed", 1, seeds, arms},
		{"index", 0, builds, arms},
		{"views", 1, reads, map[string][]string{"js": {"js/emitNull/", "js/emitDoc/"}, "erl": {"erl/emitNull/", "erl/emitDoc/"}}},
		{"writes", 1, writes, arms},
	} {
		js, erl := records["js/"+c.step], records["erl/"+c.step]
		if !slices.EqualFunc(js.Rounds, erl.Rounds, slices.Equal[[]string]) {
			t.Errorf("%s: js's record has the rounds %v, erl's %v", c.step, js.Rounds, erl.Rounds)
		}
		if got, want := order(c.got), expected(t, js, runID, c.first, c.measured); !slices.Equal(got, want) {
			t.Errorf("%s: measured in the order %v, want %v (rounds %v)", c.step, got, want, js.Rounds)
		}
		overlap := js.StartedAt.Before(erl.FinishedAt) && erl.StartedAt.Before(js.FinishedAt)
		if !overlap {
			t.Errorf("%s: js ran %s-%s, erl %s-%s; want overlapping spans", c.step,
				js.StartedAt.Format(time.StampMilli), js.FinishedAt.Format(time.StampMilli), erl.StartedAt.Format(time.StampMilli), erl.FinishedAt.Format(time.StampMilli))
		}
		for _, rec := range []results.StepRecord{js, erl} {
			if u := rec.LoadGenerator; u == nil || u.CPUSeconds <= 0 || u.BusyPercent <= 0 || u.BusyPercent > 100 {
				t.Errorf("%s/%s: the runner's CPU share %+v", rec.QueryServer, c.step, u)
			}
			if len(rec.CouchDBLoad) != 1 {
				t.Errorf("%s/%s: CouchDB's load %+v, want the node's", rec.QueryServer, c.step, rec.CouchDBLoad)
			}
		}
	}
	if !strings.Contains(log, "erl/small: builtin reducer run 2") {
		t.Errorf("the log lacks erlang's second build:\n%s", log)
	}
}

// Two arms on CouchDBs of their own — js on the kit's single node, erl on its 3-node cluster
// (both real Apache CouchDB 3.4.3) — take turns as arms on one server do, and each arm's
// results name its own server: one node and three.
func TestArmsOnTheirOwnServersTakeTurnsOnRealCouchDB(t *testing.T) {
	single, cluster := couchdbtest.Single(t), couchdbtest.Cluster(t)
	runID := "t" + couchdbtest.RandomID()
	yaml := jsBench("servers", `
  - {name: erl, language: erlang}
  allowErlangViews: true
  dataset: {documents: 300}
  workloads:
    indexing: {repetitions: 3, reducers: [builtin]}
`)
	bench, err := benchspec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cluster.DeleteLater(t, names.Database(bench.Name, runID, "erl", "small"))
	doc, log, err := realRun(t, single, yaml, Config{RunID: runID, Servers: map[string]*couch.Client{
		"erl": cluster.Client(t, couch.Options{MaxConns: 16}),
	}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	nodes := map[string]int{}
	for _, a := range doc.Arms {
		nodes[a.QueryServer] = len(doc.ServerOf(a).Nodes)
		if n := len(a.Profiles[0].Indexing[0].Runs); n != 3 {
			t.Errorf("%s: %d builds, want 3", a.QueryServer, n)
		}
	}
	if nodes["js"] != 1 || nodes["erl"] != 3 {
		t.Errorf("the arms' servers have %v nodes, want js 1 and erl 3", nodes)
	}
	var builds []stamped
	var rec results.StepRecord
	for _, a := range doc.Arms {
		for i, r := range a.Profiles[0].Indexing[0].Runs {
			builds = append(builds, stamped{a.QueryServer, i + 1, r.StartedAt})
		}
	}
	for _, r := range doc.Steps {
		if r.Step == "index" {
			rec = r
		}
	}
	if got, want := order(builds), expected(t, rec, runID, 1, map[string][]string{"js": {"js"}, "erl": {"erl"}}); !slices.Equal(got, want) {
		t.Errorf("builds in the order %v, want %v (rounds %v)", got, want, rec.Rounds)
	}
	// The operator keeps a document per arm: each names its own server.
	for _, a := range doc.Arms {
		armDoc := results.ArmDocument(doc, a.QueryServer)
		if len(armDoc.Server.Nodes) != nodes[a.QueryServer] || armDoc.Arms[0].Server != nil {
			t.Errorf("%s's own document: server %+v, arm server %v", a.QueryServer, armDoc.Server, armDoc.Arms[0].Server)
		}
	}
}

// duetBench is two JavaScript arms in duet, which a provisioned CouchDB gives each its own
// server; by hand (and here) Config.Servers names them.
const duetBench = `
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: duet}
spec:
  couchdb: {provision: {}}
  armOrder: Duet
  queryServers:
  - {name: one, language: javascript}
  - {name: three, language: javascript}
  dataset: {documents: 2000}
  workloads:
    indexing: {repetitions: 3, warmUp: true, reducers: [builtin]}
`

// Two arms in duet — one on the kit's single node, three on its 3-node cluster (both real
// Apache CouchDB 3.4.3) — take every unit at the same moment: in every round the two arms'
// builds are under way together, where taking turns one ends before the other starts; the
// step records say duet instead of an order, and each carries the runner's CPU share.
func TestArmsInDuetTakeEachUnitTogetherOnRealCouchDB(t *testing.T) {
	single, cluster := couchdbtest.Single(t), couchdbtest.Cluster(t)
	runID := "t" + couchdbtest.RandomID()
	bench, err := benchspec.Parse([]byte(duetBench))
	if err != nil {
		t.Fatal(err)
	}
	cluster.DeleteLater(t, names.Database(bench.Name, runID, "three", "small"))
	doc, log, err := realRun(t, single, duetBench, Config{RunID: runID, Servers: map[string]*couch.Client{
		"one":   single.Client(t, couch.Options{MaxConns: 8}),
		"three": cluster.Client(t, couch.Options{MaxConns: 16}),
	}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	builds := map[string][]measured.IndexBuild{}
	for _, a := range doc.Arms {
		s := a.Profiles[0].Indexing[0]
		if s.WarmUp == nil || len(s.Runs) != 3 {
			t.Fatalf("%s: warm-up %v, %d builds; want a warm-up and 3", a.QueryServer, s.WarmUp != nil, len(s.Runs))
		}
		builds[a.QueryServer] = append([]measured.IndexBuild{*s.WarmUp}, s.Runs...)
	}
	for round := range 4 {
		one, three := builds["one"][round], builds["three"][round]
		oneEnd, threeEnd := one.StartedAt.Add(one.Queryable), three.StartedAt.Add(three.Queryable)
		if !one.StartedAt.Before(threeEnd) || !three.StartedAt.Before(oneEnd) {
			t.Errorf("round %d: one built %s-%s, three %s-%s; want the builds under way together", round,
				one.StartedAt.Format(time.StampMilli), oneEnd.Format(time.StampMilli),
				three.StartedAt.Format(time.StampMilli), threeEnd.Format(time.StampMilli))
		}
	}
	steps := 0
	for _, rec := range doc.Steps {
		steps++
		if !rec.Duet || rec.Rounds != nil {
			t.Errorf("%s/%s: duet %v, rounds %v; want duet and no order", rec.QueryServer, rec.Step, rec.Duet, rec.Rounds)
		}
		if u := rec.LoadGenerator; u == nil || u.CPUSeconds <= 0 {
			t.Errorf("%s/%s: the runner's CPU share %+v", rec.QueryServer, rec.Step, u)
		}
	}
	if steps != 4 {
		t.Errorf("%d step records, want the seed and index steps of both arms: %+v", steps, doc.Steps)
	}
}

// Arms in duet on one CouchDB would share it, not meet the same neighbours on servers of
// their own: on the kit's single node (real Apache CouchDB 3.4.3) through one connection, and
// on its 3-node cluster through two of its nodes' URLs, the run stops before any step and
// says what to give each arm.
func TestArmsInDuetNeedServersOfTheirOwnOnRealCouchDB(t *testing.T) {
	single, cluster := couchdbtest.Single(t), couchdbtest.Cluster(t)
	for name, cfg := range map[string]Config{
		"one connection": {},
		"two nodes of one cluster": {Servers: map[string]*couch.Client{
			"one": cluster.NodeClient(t, 1, couch.Options{MaxConns: 8}), "three": cluster.NodeClient(t, 2, couch.Options{MaxConns: 8}),
		}},
	} {
		doc, log, err := realRun(t, single, duetBench, cfg)
		if err == nil || !strings.Contains(err.Error(), "each on a CouchDB of its own") || !strings.Contains(err.Error(), "--arm-url") {
			t.Fatalf("%s: %v; want the duet's refusal\n%s", name, err, log)
		}
		if len(doc.Steps) != 0 {
			t.Errorf("%s: step records %+v; want none", name, doc.Steps)
		}
	}
}

// Progress lines name a round by its place among the measured ones, the warm-up apart, and
// without a count when rounds go on until decided (n 0). No server.
func TestRoundName(t *testing.T) {
	for _, c := range []struct {
		round int
		n     int32
		want  string
	}{{0, 5, "warm-up"}, {1, 5, "run 1 of 5"}, {5, 5, "run 5 of 5"}, {1, 0, "run 1"}, {37, 0, "run 37"}} {
		if got := roundName("run", c.round, c.n); got != c.want {
			t.Errorf("roundName(run, %d, %d) = %q, want %q", c.round, c.n, got, c.want)
		}
	}
}
