//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/turns"
)

// A CouchDB that already runs (the Apache chart, installed by the suite as a user's own):
// two arms on one server, JavaScript and Erlang views, indexing and writes. The arms share the
// server, so they take turns: their builds alternate, js, erl, js, erl. The runners get
// a hundredth of a CPU: their writes, which keep a writer busy making documents, are the
// runner's speed, not CouchDB's, and must say so.
func TestExistingCouchDB(t *testing.T) {
	t.Parallel()
	b := &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "existing"},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB:          existingTarget(),
			QueryServers:     []benchv1.QueryServer{{Name: "js", Language: "javascript"}, {Name: "erl", Language: "erlang"}},
			AllowErlangViews: true,
			Dataset:          benchv1.Dataset{Documents: 2000, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2},
			Workloads: benchv1.Workloads{
				Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 2},
				Writes:   &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}},
			},
			Runner:  benchv1.RunnerSettings{Resources: guaranteed("10m", "128Mi")},
			Timeout: "30m",
		},
	}
	start(t, b)
	// A runner pod of 10m takes minutes to start beside the suite's other tests (its container
	// 72 s from created to started, 7 minutes to its first log line, in CI): the wait is the
	// run's own timeout but for the time the operator needs to say so.
	got := mustSucceed(t, b, 28*time.Minute)
	if len(got.Status.Results) != 2 || !strings.Contains(got.Status.Server, "3.4.3, 1 node(s)") {
		t.Fatalf("results %+v server %q", got.Status.Results, got.Status.Server)
	}
	md, docs := report(t, b, "markdown")
	t.Logf("existing CouchDB 3.4.3:\n%s", md)
	engines := map[string]string{}
	for _, d := range docs {
		if r := d.Arms[0].Runtime; r != nil {
			engines[d.Arms[0].QueryServer] = r.Engine
		}
	}
	if engines["js"] != "spidermonkey" || engines["erl"] != "erlang" {
		t.Errorf("engines %v", engines)
	}
	type build struct {
		name string
		at   time.Time
	}
	var builds []build
	for _, d := range docs {
		a := d.Arms[0]
		for i, r := range a.Profiles[0].Indexing[0].Runs {
			builds = append(builds, build{fmt.Sprintf("%s%d", a.QueryServer, i+1), r.StartedAt})
		}
	}
	slices.SortFunc(builds, func(x, y build) int { return x.at.Compare(y.at) })
	var order []string
	for _, b := range builds {
		order = append(order, b.name)
	}
	// The arms take turns round by round, in each round's random order (internal/turns).
	var want []string
	for round := 1; round <= 2; round++ {
		for _, arm := range turns.Order(builders.RunID(got), string(benchv1.StepIndex), round, []string{"js", "erl"}) {
			want = append(want, fmt.Sprintf("%s%d", arm, round))
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("builds in the order %v, want the arms taking turns %v", order, want)
	}
	for _, q := range got.Status.Results {
		for _, w := range q.Writes {
			if !slices.Contains(w.Flags, benchv1.FlagGeneratorBound) {
				t.Errorf("%s %s: flags %v, want GeneratorBound from a runner with 10m of CPU", q.QueryServer, w.Mode, w.Flags)
			}
		}
	}
	csv, _ := report(t, b, "csv")
	contains(t, "CSV", csv, "existing,", ",js,", ",erl,", "writes,bulk-100,docs_per_second")
}
