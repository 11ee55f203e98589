package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/results"
)

// Every load, view read and write carries the CPU time its server spent on it, as builds do,
// each over its own measured part: the parts do not overlap, so together they are at most
// what the server spent over the whole run, read independently before and after it. Each
// gets its cpu_seconds_per_1000_docs metric beside its rate. The server is the kit's real
// Apache CouchDB 3.4.3 (single node), read from its process tree in /proc.
func TestLoadsReadsAndWritesCarryTheServersCPUCostOnRealCouchDB(t *testing.T) {
	single := couchdbtest.Single(t)
	node := cpucost.Tree{Root: single.PID(t, 1)}
	bench := jsBench("cpu-cost", `
  dataset:
    documents: 2000
    seedRepetitions: 2
  workloads:
    viewReads: {repetitions: 2, warmUp: true, views: [emitNull, emitNullIncludeDocs]}
    writes:
      duration: 1s
      repetitions: 2
      bulkBatchSizes: [100]
      batchOk: {clients: 2}
`)
	before, err := node.Read()
	if err != nil {
		t.Fatal(err)
	}
	doc, log, err := realRun(t, single, bench, Config{Meters: map[string]cpucost.Meter{"js": node}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	after, err := node.Read()
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Arms[0].Profiles[0]
	var units []float64
	carries := func(what string, seconds float64) {
		units = append(units, seconds)
		if !(seconds > 0) {
			t.Errorf("%s carries no CPU time of its server", what)
		}
	}
	for i, s := range p.Seedings() {
		carries(fmt.Sprintf("load %d", i+1), s.CPUSeconds)
	}
	for _, vr := range p.ViewReads {
		if vr.WarmUp != nil {
			carries(string(vr.View)+" warm-up read", vr.WarmUp.CPUSeconds)
		}
		for _, r := range vr.Reads {
			carries(string(vr.View)+" read", r.CPUSeconds)
		}
	}
	for _, w := range append(p.WritesWarmUp, p.Writes...) {
		carries("writes "+w.Mode, w.CPUSeconds)
	}
	if len(units) != 2+2*3+2*2 {
		t.Fatalf("%d measured units, want 2 loads, 6 view reads, 4 write rounds", len(units))
	}
	var sum float64
	for _, s := range units {
		sum += s
	}
	// Tree loses a thread that ends unreaped by the tree, so the whole run's reading gets 2%.
	whole := cpucost.Between(before, after).CPU.Seconds()
	t.Logf("%d units spent %.3f s of the server's CPU, the whole run %.3f s", len(units), sum, whole)
	if sum > 1.02*whole {
		t.Errorf("the units' CPU time adds up to %.3f s, more than the server spent over the whole run (%.3f s): "+
			"their readings overlap or are not differences", sum, whole)
	}
	cost := map[string]bool{}
	for _, m := range results.Metrics(doc) {
		if m.Name == "cpu_seconds_per_1000_docs" {
			cost[m.Workload+"/"+m.Variant] = true
		}
	}
	for _, want := range []string{"seeding/bulk", "viewReads/emitNull", "viewReads/emitNullIncludeDocs", "writes/bulk-100", "writes/batchOk-2"} {
		if !cost[want] {
			t.Errorf("no CPU cost metric for %s; have %v", want, cost)
		}
	}
	if n := strings.Count(log, "s per 1,000 docs"); n < len(units) {
		t.Errorf("%d progress lines give a CPU cost, want one per unit (%d):\n%s", n, len(units), log)
	}
}
