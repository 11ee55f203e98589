package loadtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/results"
)

// A failed k6 runner ends the reads with an error that quotes k6, and the runs before it are
// kept in the document. Arm a's database is seeded; arm b's does not exist, so b's view
// scenario aborts in setup (its design document cannot be installed: 404). On real Apache
// CouchDB 3.4.3, the kit's single node. (cmd/couchbench's tests run Local through
// `couchbench run`: turns, repetitions, warm-up, thresholds.)
func TestLocalKeepsTheRunsBeforeAFailedRunnerOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	k6, err := FindK6(k6Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	spec := readsSpec(benchv1.ScenarioViewByKey)
	spec.QueryServers = []benchv1.QueryServer{{Name: "a", Language: "javascript"}, {Name: "b", Language: "javascript"}}
	spec.K6.Parallelism = 2
	missing := "cb-missing-" + couchdbtest.RandomID()
	// Run r1's one round has a go first, then b (internal/turns).
	doc := &results.Document{Benchmark: "local", RunID: "r1", Arms: []results.Arm{
		{QueryServer: "a", Profiles: []results.Profile{{Profile: "small", DB: db}}},
		{QueryServer: "b", Profiles: []results.Profile{{Profile: "small", DB: missing}}},
	}}
	local := Local{K6: k6, Bench: &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: *spec},
		Target: func(string) (string, couch.Credentials) { return srv.URL(), srv.Credentials() }, Log: io.Discard}
	err = local.Run(context.Background(), doc)
	if err == nil || !strings.Contains(err.Error(), "query server b, reads, repetition 1 of 1: k6 runner ") ||
		!strings.Contains(err.Error(), "installing _design/cb-viewreads: HTTP 404") {
		t.Fatalf("error %v: want b's runner failing, quoting k6", err)
	}
	if doc.Error != err.Error() || doc.Interrupted {
		t.Errorf("document error %q, interrupted %v", doc.Error, doc.Interrupted)
	}
	a, b := doc.Arms[0].Profiles[0].Reads, doc.Arms[1].Profiles[0].Reads
	if a == nil || len(a.Runners) != 2 || a.Runners[0].Requests+a.Runners[1].Requests != 30 || b != nil {
		t.Errorf("reads of a %+v, of b %+v: want a's run (30 requests by 2 runners) kept, none of b", a, b)
	}
	steps := map[string]string{}
	for _, rec := range doc.Steps {
		steps[rec.QueryServer] = rec.Error
	}
	if _, ran := steps["a"]; !ran || steps["a"] != "" || !strings.Contains(steps["b"], "HTTP 404") || len(steps) != 2 {
		t.Errorf("step records %q: want a's without an error, b's with it", steps)
	}
}

// A metered round: the server's CPU time over each repetition's load, read by a meter that
// takes part in the round's barriers beside the k6 runners (internal/readscpu), gives the reads
// a CPU cost per 1,000 requests. Each reading is within what the server spent over the whole
// reads, read independently before and after; the warm-up is not read. A meter whose reading
// fails costs the round its reading, not its load. On real Apache CouchDB 3.4.3, the kit's
// single node, read from its process tree in /proc (internal/cpucost); the failing meter is
// that tree with a fault injected into its second reading.
func TestMeteredRoundsCarryTheServersCPUOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	k6, err := FindK6(k6Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	node := cpucost.Tree{Root: srv.PID(t, 1)}
	spec := readsSpec(benchv1.ScenarioGetDocument)
	spec.Workloads.Reads.IterationsPerUser = ptr.To[int32](300)
	spec.Workloads.Reads.Repetitions, spec.Workloads.Reads.WarmUp = 2, true
	spec.K6.Parallelism = 2
	spec.QueryServers = []benchv1.QueryServer{{Name: "a", Language: "javascript"}, {Name: "b", Language: "javascript"}}
	// Each arm reads its own database, as in a run: a round's barriers are named by the round.
	doc := &results.Document{Benchmark: "metered", RunID: "m" + couchdbtest.RandomID(), Arms: []results.Arm{
		{QueryServer: "a", Profiles: []results.Profile{{Profile: "small", DB: db}}},
		{QueryServer: "b", Profiles: []results.Profile{{Profile: "small", DB: seededDB(t, srv, docs)}}},
	}}
	var log strings.Builder
	local := Local{K6: k6, Bench: &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "metered"}, Spec: *spec},
		Target: func(string) (string, couch.Credentials) { return srv.URL(), srv.Credentials() },
		Meters: map[string]cpucost.Meter{"a": node, "b": &failingRead{Meter: node, failAt: 2}}, Log: &log}
	before, err := node.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Run(context.Background(), doc); err != nil {
		t.Fatalf("reads failed: %v\n%s", err, log.String())
	}
	after, err := node.Read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", log.String())
	whole := cpucost.Between(before, after).CPU.Seconds()
	a, b := doc.Arms[0].Profiles[0].Reads, doc.Arms[1].Profiles[0].Reads
	if len(a.CPU) != 2 || len(a.WarmUp) != 2 || len(a.Runners) != 4 {
		t.Fatalf("arm a: CPU %+v, %d warm-up runners, %d runners: want a reading of each of 2 repetitions, none of the warm-up",
			a.CPU, len(a.WarmUp), len(a.Runners))
	}
	var sum float64
	for i, c := range a.CPU {
		if c.Repetition != i || c.Error != "" || !(c.CPUSeconds > 0) {
			t.Errorf("arm a's reading %d: %+v; want repetition %d's CPU time", i, c, i)
		}
		// The reading spans the load: it begins as the runners leave the start barrier and
		// ends after the last one marked its end. Half leaves room for a loaded machine's
		// scheduling; a reading taken before the load ended would span next to nothing.
		var load float64
		for _, r := range a.Runners {
			if r.Repetition == i {
				load = max(load, r.DurationMs/1000)
			}
		}
		if c.WallSeconds < load/2 {
			t.Errorf("arm a's reading %d spans %.3f s, its load %.3f s: it did not wait for the load's end", i, c.WallSeconds, load)
		}
		sum += c.CPUSeconds
	}
	// Tree loses a thread that ends unreaped by the tree, so the whole reads' reading gets 2%.
	if sum > 1.02*whole {
		t.Errorf("arm a's rounds read %.3f s of the server's CPU, more than it spent over all the reads (%.3f s)", sum, whole)
	}
	// b's first repetition lost its second reading; its second repetition was read.
	if len(b.CPU) != 2 || !strings.Contains(b.CPU[0].Error, "reading the server's CPU time as the load ended: injected") ||
		b.CPU[0].CPUSeconds != 0 || b.CPU[1].Error != "" || !(b.CPU[1].CPUSeconds > 0) || len(b.Runners) != 4 {
		t.Errorf("arm b: CPU %+v, %d runners: want repetition 1's reading failed, its load kept, repetition 2 read", b.CPU, len(b.Runners))
	}
	costs := map[string][]float64{}
	for _, m := range results.Metrics(doc) {
		if m.Workload == "reads" && strings.HasPrefix(m.Name, "cpu_seconds") {
			costs[m.QueryServer+"/"+m.Name] = m.Samples
		}
	}
	if got := costs["a/cpu_seconds_per_1000_requests"]; len(got) != 2 || len(costs) != 1 {
		t.Errorf("CPU cost metrics of the reads %v: want arm a's, a sample a repetition, and none of b's (one repetition unread)", costs)
	}
}

// failingRead is a meter whose failAt-th reading fails.
type failingRead struct {
	cpucost.Meter
	reads, failAt int
}

func (f *failingRead) Read() (cpucost.Usage, error) {
	f.reads++
	if f.reads == f.failAt {
		return cpucost.Usage{}, errors.New("injected")
	}
	return f.Meter.Read()
}
