package runner

import (
	"fmt"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/results"
)

// sequentialBench is an A/A run of two JavaScript arms on one server that adds index rounds
// until decided, after at least two; extra is more of spec.sequential.
func sequentialBench(target, tolerance, maxRounds, tunedFor int, extra string) string {
	return fmt.Sprintf(`
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: until-decided}
spec:
  couchdb: {existing: {url: "http://unused:5984", credentialsSecret: {name: s}}}
  queryServers:
  - {name: a, language: javascript}
  - {name: b, language: javascript}
  dataset: {documents: 500}
  sequential: {targetPercent: %d, tolerancePercent: %d, maxRounds: %d, tunedForRounds: %d%s}
  workloads:
    indexing: {repetitions: 2, reducers: [builtin]}
`, target, tolerance, maxRounds, tunedFor, extra)
}

// indexStops are the index step's records of a run, checked to agree across arms with the
// builds each arm kept.
func indexStops(t *testing.T, doc *results.Document) results.SequentialStop {
	t.Helper()
	var stops []results.SequentialStop
	for _, rec := range doc.Steps {
		switch {
		case rec.Step == benchv1.StepSeed && rec.Sequential != nil:
			t.Errorf("%s: the seed step says %+v; only the index and views steps add rounds", rec.QueryServer, *rec.Sequential)
		case rec.Step == benchv1.StepIndex && rec.Sequential == nil:
			t.Fatalf("%s: the index step's record says nothing of how it stopped", rec.QueryServer)
		case rec.Step == benchv1.StepIndex:
			stops = append(stops, *rec.Sequential)
		}
	}
	if len(stops) != 2 || stops[0] != stops[1] {
		t.Fatalf("index step records %+v; want one stop, the same for both arms", stops)
	}
	for _, a := range doc.Arms {
		if n := len(a.Profiles[0].Indexing[0].Runs); n != stops[0].Rounds {
			t.Errorf("%s: %d builds kept, the step says %d rounds", a.QueryServer, n, stops[0].Rounds)
		}
	}
	return stops[0]
}

// With a target no three rounds can reach, the step goes on past its two repetitions and
// stops at maxRounds, saying so; the arms' table calls the ratio undecided, not Unchanged, and
// judges it apart from the t-tested rows. Real Apache CouchDB 3.4.3, the kit's single node.
func TestSequentialStepStopsAtMaxRoundsOnRealCouchDB(t *testing.T) {
	single := couchdbtest.Single(t)
	doc, log, err := realRun(t, single, sequentialBench(1, 0, 3, 20, ""), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	stop := indexStops(t, doc)
	if stop.Rounds != 3 || stop.Stopped != results.StoppedMaxRounds {
		t.Fatalf("stopped %+v; want 3 rounds, maxRounds", stop)
	}
	if !strings.Contains(log, "run 3") || strings.Contains(log, "run 3 of") {
		t.Errorf("progress lines should count rounds without a total:\n%s", log)
	}
	arms, err := compare.Arms([]*results.Document{doc}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	undecided := arms.Undecided()
	if len(arms.Sequential) != 1 || arms.Sequential[0].Stopped != results.StoppedMaxRounds || len(undecided) != 1 {
		t.Fatalf("arms' table: sequential %+v, undecided %+v; want the index step stopped at maxRounds, its one ratio undecided",
			arms.Sequential, undecided)
	}
	if undecided[0].Metric != "changes_per_second" || !strings.Contains(undecided[0].Reason, "undecided after 3 rounds") {
		t.Errorf("undecided row %+v", undecided[0])
	}
	if arms.Judged != 0 {
		t.Errorf("%d rows judged by the t family; the index row is the sequence's, and seeding has one round", arms.Judged)
	}
}

// With a wide target the step stops as soon as the ratio it stops on, the server's CPU cost
// per build, is decided, and only then: the rounds the documents hold decide it, the rounds
// before the last did not. Each arm's builds carry their server's CPU time, read from the
// node's process tree (/proc, the reading cpucost's test holds its cgroup's against), so both
// arms read the one node's. Real Apache CouchDB 3.4.3, the kit's single node.
func TestSequentialStepStopsWhenDecidedOnRealCouchDB(t *testing.T) {
	single := couchdbtest.Single(t)
	node := cpucost.Tree{Root: single.PID(t, 1)}
	doc, log, err := realRun(t, single, sequentialBench(50, 20, 40, 5, ", stopOn: [cpu_seconds_per_1000_docs]"),
		Config{Meters: map[string]cpucost.Meter{"a": node, "b": node}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	stop := indexStops(t, doc)
	t.Logf("stopped %+v", stop)
	for _, a := range doc.Arms {
		for i, b := range a.Profiles[0].Indexing[0].Runs {
			if !(b.CPUSeconds > 0) {
				t.Errorf("%s: build %d carries no CPU time of its server", a.QueryServer, i+1)
			}
		}
	}
	if !strings.Contains(log, "s per 1,000 docs") {
		t.Errorf("progress lines should give each build's CPU cost:\n%s", log)
	}
	decided := func(rounds int) bool {
		cut := *doc
		cut.Arms = nil
		for _, a := range doc.Arms {
			p := a.Profiles[0]
			ix := p.Indexing[0]
			ix.Runs = ix.Runs[:rounds]
			p.Indexing = []results.IndexingSeries{ix}
			a.Profiles = []results.Profile{p}
			cut.Arms = append(cut.Arms, a)
		}
		return compare.StepDecided([]*results.Document{&cut}, benchv1.StepIndex)
	}
	switch {
	case stop.Stopped == results.StoppedDecided:
		if !decided(stop.Rounds) || (stop.Rounds > 2 && decided(stop.Rounds-1)) {
			t.Errorf("stopped decided at round %d: decided there %v, a round before %v; want the first round that decides",
				stop.Rounds, decided(stop.Rounds), decided(stop.Rounds-1))
		}
	case stop.Stopped == results.StoppedMaxRounds && stop.Rounds == 40:
		// A machine so loaded that 40 rounds of A/A builds do not place the ratio within ±50%
		// is possible; the step must then not have been decided at any round.
		for n := 2; n <= 40; n++ {
			if decided(n) {
				t.Fatalf("decided at round %d, yet the step went on to maxRounds", n)
			}
		}
	default:
		t.Fatalf("stopped %+v; want decided, or maxRounds at 40", stop)
	}
	arms, err := compare.Arms([]*results.Document{doc}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]string{}
	for _, r := range arms.Rows {
		if r.Workload == "indexing" {
			metrics[r.Metric] = string(r.Verdict)
		}
	}
	if _, ok := metrics["cpu_seconds_per_1000_docs"]; !ok || len(metrics) != 2 {
		t.Errorf("indexing rows %v; want the rate's and the CPU cost's", metrics)
	}
}

// A step that stops on the CPU cost cannot run without reading it: the run stops before any
// step and says what to give it. Real Apache CouchDB 3.4.3, the kit's single node.
func TestStoppingOnCPUCostNeedsEveryArmsMeterOnRealCouchDB(t *testing.T) {
	single := couchdbtest.Single(t)
	bench := sequentialBench(5, 2, 10, 5, ", stopOn: [cpu_seconds_per_1000_docs]")
	node := cpucost.Tree{Root: single.PID(t, 1)}
	doc, log, err := realRun(t, single, bench, Config{Meters: map[string]cpucost.Meter{"a": node}})
	if err == nil || !strings.Contains(err.Error(), "arm b's server's CPU time is not read") || !strings.Contains(err.Error(), "--arm-pid") {
		t.Fatalf("run with arm b unmetered: %v; want the refusal naming b and --arm-pid\n%s", err, log)
	}
	if len(doc.Steps) != 0 {
		t.Errorf("step records %+v; want none", doc.Steps)
	}
}

// One arm (here `--arm a`) has no ratio to decide: its index step runs its repetitions and
// says nothing of stopping, where it would otherwise run to maxRounds. Real Apache CouchDB
// 3.4.3, the kit's single node.
func TestOneArmRunsItsRepetitionsOnRealCouchDB(t *testing.T) {
	single := couchdbtest.Single(t)
	doc, log, err := realRun(t, single, sequentialBench(5, 2, 40, 20, ""), Config{Arms: []string{"a"}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	for _, rec := range doc.Steps {
		if rec.Sequential != nil {
			t.Errorf("%s/%s says %+v; want a step of fixed rounds", rec.QueryServer, rec.Step, *rec.Sequential)
		}
	}
	if n := len(doc.Arms[0].Profiles[0].Indexing[0].Runs); n != 2 {
		t.Errorf("%d builds; want the 2 repetitions", n)
	}
	if !strings.Contains(log, "run 2 of 2") {
		t.Errorf("progress lines should count the repetitions:\n%s", log)
	}
}
