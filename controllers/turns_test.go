package controllers

// Arms that share an existing CouchDB take turns. These tests talk to envtest's API server
// only, no CouchDB: the harness plays the runner, handing over a document per arm named in the
// Job's --arm flag, as the real runner does (internal/runner's tests time real turns on real
// CouchDB).

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// stepDocument is what the runner of a Job hands over: the harness's document of every arm
// the Job runs (its --arm flag), in one.
func (h *harness) stepDocument(job *batchv1.Job, step benchv1.Step) *results.Document {
	h.t.Helper()
	args := job.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "--arm")
	if i < 0 || i+1 == len(args) {
		h.t.Fatalf("Job %s has no --arm: %q", job.Name, args)
	}
	var doc *results.Document
	for _, arm := range strings.Split(args[i+1], ",") {
		d := h.document(arm, step)
		switch {
		case d == nil:
			return nil
		case doc == nil:
			doc = d
		default:
			doc.Arms, doc.Steps = append(doc.Arms, d.Arms...), append(doc.Steps, d.Steps...)
		}
	}
	return doc
}

func TestPlanOfArmsOnOneExistingCouchDBTakesTurns(t *testing.T) {
	spec := existingBenchmark("ns").Spec
	spec.Workloads.Reads = &benchv1.ReadsWorkload{}
	var got []string
	for _, s := range buildPlan(&spec) {
		got = append(got, s.queryServers()+"/"+string(s.Step))
	}
	want := []string{"js,py/seed", "js,py/index", "js,py/views", "js,py/writes", "js,py/reads"}
	if !slices.Equal(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}

	// Provisioned arms each have a CouchDB of their own: one after the other.
	spec.CouchDB = benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{}}
	spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}}
	got = nil
	for _, s := range buildPlan(&spec) {
		got = append(got, s.queryServers()+"/"+string(s.Step))
	}
	want = []string{"js/provision", "js/cluster", "js/seed", "js/index", "js/teardown",
		"py/provision", "py/cluster", "py/seed", "py/index", "py/teardown"}
	if !slices.Equal(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}
}

// Two arms on one existing CouchDB: every runner step is one Job for both, and the read load
// alternates the arms run by run — js, py, js, py — with the pause between any two runs. Each
// arm's results land in its own document and in status.
func TestArmsOnOneExistingCouchDBTakeTurns(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	bench.Spec.Workloads = benchv1.Workloads{
		Indexing: &benchv1.IndexingWorkload{},
		Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 10, IterationsPerUser: ptr.To[int32](20),
			Repetitions: 2, Pause: "30s"},
	}
	create(t, bench)

	// Drive the run by hand, noting the order in which the k6 Jobs appear.
	var order []string
	seen := map[string]bool{}
	var got *benchv1.CouchBenchmark
	for range 40 {
		_, got = h.reconcile(bench)
		var jobs batchv1.JobList
		if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(jobs.Items, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
		for _, j := range jobs.Items {
			if _, k6 := j.Labels[builders.LabelRunner]; k6 && !seen[j.Name] {
				seen[j.Name] = true
				order = append(order, j.Labels[builders.LabelQueryServer])
			}
		}
		if got.Status.Phase == benchv1.PhaseSucceeded || got.Status.Phase == benchv1.PhaseFailed {
			break
		}
		if p := got.Status.Progress; p != nil && p.QueryServer != "js,py" {
			t.Errorf("progress names %q, want both arms", p.QueryServer)
		}
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(10 * time.Second))
	}
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	// One k6 Job per run (spec.k6.parallelism 1): the arms alternate.
	if want := []string{"js", "py", "js", "py"}; !slices.Equal(order, want) {
		t.Errorf("k6 runs in the order %v, want %v", order, want)
	}
	if jobs := jobsOf(t, got); jobs["/seed"] != 1 || jobs["/index"] != 1 || jobs["js/reads"] != 2 || jobs["py/reads"] != 2 || len(jobs) != 4 {
		t.Errorf("jobs %v: want one seed and one index Job for both arms, two k6 runs per arm", jobs)
	}
	var index batchv1.Job
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: builders.JobName(got, []string{"js", "py"}, benchv1.StepIndex)}, &index); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(index.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--arm js,py") {
		t.Errorf("index Job args %q: want both arms, in the spec's order", args)
	}

	if len(got.Status.Results) != 2 {
		t.Fatalf("results %+v, want both arms", got.Status.Results)
	}
	for i, arm := range []string{"js", "py"} {
		r := got.Status.Results[i]
		if r.QueryServer != arm || len(r.Indexing) != 1 || r.Reads == nil || r.Reads.Requests == 0 {
			t.Errorf("results of %s: %+v", arm, r)
		}
	}
	for _, d := range storedDocuments(t, got) {
		a := d.Arms[0]
		if len(d.Arms) != 1 || len(d.Steps) != 3 || len(a.Profiles[0].Reads.Runners) != 2 {
			t.Errorf("stored document of %s: %d arms, steps %+v, reads %+v", a.QueryServer, len(d.Arms), d.Steps, a.Profiles[0].Reads)
		}
		for _, rec := range d.Steps {
			if rec.QueryServer != a.QueryServer {
				t.Errorf("the document of %s holds a step of %s", a.QueryServer, rec.QueryServer)
			}
		}
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Normal StepStarted query servers js, py (taking turns): index") {
		t.Errorf("events:\n%s", evs)
	}
}
