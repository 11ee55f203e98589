package controllers

// Arms take turns: on an existing CouchDB they share, and provisioned side by side. These
// tests talk to envtest's API server, and to couchDBStub (not CouchDB) for the
// operator's own cluster checks of provisioned arms: the harness plays the runner, handing
// over a document per arm named in the Job's --arm flag, as the real runner does
// (internal/runner's tests time real turns on real CouchDB).

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/turns"
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

func TestPlanOfArmsTakingTurns(t *testing.T) {
	plan := func(spec benchv1.CouchBenchmarkSpec) []string {
		var got []string
		for _, s := range buildPlan(&spec) {
			got = append(got, s.queryServers()+"/"+string(s.Step))
		}
		return got
	}
	spec := existingBenchmark("ns").Spec
	spec.Workloads.Reads = &benchv1.ReadsWorkload{}
	if got, want := plan(spec), []string{"js,py/seed", "js,py/index", "js,py/views", "js,py/writes", "js,py/reads", "js,py/cleanup"}; !slices.Equal(got, want) {
		t.Errorf("existing CouchDB: plan %v, want %v", got, want)
	}
	spec.ArmOrder = benchv1.ArmsSequential
	if got, want := plan(spec), []string{"js/seed", "js/index", "js/views", "js/writes", "js/reads", "js/cleanup",
		"py/seed", "py/index", "py/views", "py/writes", "py/reads", "py/cleanup"}; !slices.Equal(got, want) {
		t.Errorf("existing CouchDB, sequential: plan %v, want %v", got, want)
	}
	// Databases kept: nothing to clean up.
	spec.KeepDatabases = true
	if got, want := plan(spec), []string{"js/seed", "js/index", "js/views", "js/writes", "js/reads",
		"py/seed", "py/index", "py/views", "py/writes", "py/reads"}; !slices.Equal(got, want) {
		t.Errorf("existing CouchDB, sequential, databases kept: plan %v, want %v", got, want)
	}
	spec.KeepDatabases = false

	// Provisioned arms each have a CouchDB of their own: side by side, or one after the other.
	spec.CouchDB = benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{}}
	spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}}
	spec.ArmOrder = benchv1.ArmsInterleaved
	if got, want := plan(spec), []string{"js,py/provision", "js,py/cluster", "js,py/seed", "js,py/index", "js,py/teardown"}; !slices.Equal(got, want) {
		t.Errorf("provisioned, interleaved: plan %v, want %v", got, want)
	}
	spec.ArmOrder = benchv1.ArmsSequential
	if got, want := plan(spec), []string{"js/provision", "js/cluster", "js/seed", "js/index", "js/teardown",
		"py/provision", "py/cluster", "py/seed", "py/index", "py/teardown"}; !slices.Equal(got, want) {
		t.Errorf("provisioned, sequential: plan %v, want %v", got, want)
	}

	// Conditions and events say how the arms meet their units.
	named := func(spec benchv1.CouchBenchmarkSpec) string { return buildPlan(&spec)[3].String() }
	spec.ArmOrder = benchv1.ArmsInterleaved
	if got, want := named(spec), "query servers js, py (taking turns): index"; got != want {
		t.Errorf("interleaved: the index step is %q, want %q", got, want)
	}
	spec.ArmOrder = benchv1.ArmsDuet
	if got, want := named(spec), "query servers js, py (in duet): index"; got != want {
		t.Errorf("duet: the index step is %q, want %q", got, want)
	}
}

// Two arms on one existing CouchDB: every runner step is one Job for both, and the read load
// has the arms take turns run by run, in each round's random order (internal/turns), with the
// pause between any two runs. Each arm's results land in its own document and in status.
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
	// One k6 Job per run (spec.k6.parallelism 1): the arms take turns, round by round.
	var want []string
	for round := 1; round <= 2; round++ {
		want = append(want, turns.Order(builders.RunID(got), string(benchv1.StepReads), round, []string{"js", "py"})...)
	}
	if !slices.Equal(order, want) {
		t.Errorf("k6 runs in the order %v, want %v", order, want)
	}
	if jobs := jobsOf(t, got); jobs["/seed"] != 1 || jobs["/index"] != 1 || jobs["js/reads"] != 2 || jobs["py/reads"] != 2 || jobs["/cleanup"] != 1 || len(jobs) != 5 {
		t.Errorf("jobs %v: want one seed, one index and one clean-up Job for both arms, two k6 runs per arm", jobs)
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
			if rec.Step == benchv1.StepReads && !slices.Equal(slices.Concat(rec.Rounds...), want) {
				t.Errorf("%s's reads record the rounds %v, want the order %v", a.QueryServer, rec.Rounds, want)
			}
		}
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Normal StepStarted query servers js, py (taking turns): index") {
		t.Errorf("events:\n%s", evs)
	}
}

// Two provisioned arms side by side (spec.armOrder Interleaved, the default): both CouchDBs
// are installed in the provision step before anything runs, every runner step is one Job
// that names both arms with their own CouchDB and credentials, and one teardown removes both.
func TestProvisionedArmsRunSideBySide(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	bench := provisionedBenchmark(ns)
	bench.Spec.QueryServers = append(bench.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	create(t, bench)
	adminSecretFor(t, bench)

	var got *benchv1.CouchBenchmark
	for range 60 {
		_, got = h.reconcile(bench)
		if p := got.Status.Progress; p != nil && p.Step == benchv1.StepSeed {
			break
		}
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	if p := got.Status.Progress; p == nil || p.Step != benchv1.StepSeed || p.QueryServer != "js,py" {
		t.Fatalf("progress %+v, want both arms' seed step", got.Status.Progress)
	}
	for _, arm := range []string{"js", "py"} {
		sts := types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(builders.ReleaseName(got, arm))}
		if err := env.Client.Get(context.Background(), sts, &appsv1.StatefulSet{}); err != nil {
			t.Errorf("%s's CouchDB before the seed step: %v", arm, err)
		}
	}
	got = h.drive(bench, 60)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	if jobs := jobsOf(t, got); jobs["/cluster"] != 1 || jobs["/seed"] != 1 || jobs["/index"] != 1 || len(jobs) != 3 {
		t.Errorf("jobs %v: want one cluster, one seed and one index Job for both arms", jobs)
	}
	var index batchv1.Job
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: builders.JobName(got, []string{"js", "py"}, benchv1.StepIndex)}, &index); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(index.Spec.Template.Spec.Containers[0].Args, " ")
	for _, arm := range []string{"js", "py"} {
		if want := "--arm-url " + arm + "=" + srv.URL; !strings.Contains(args, want) {
			t.Errorf("index Job args %q lack %q", args, want)
		}
		found := false
		for _, v := range index.Spec.Template.Spec.Volumes {
			found = found || v.Secret != nil && v.Secret.SecretName == builders.AdminSecretName(got, arm)
		}
		if !found {
			t.Errorf("the index Job does not mount %s's admin Secret", arm)
		}
		sts := types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(builders.ReleaseName(got, arm))}
		if err := env.Client.Get(context.Background(), sts, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s's CouchDB after the teardown: %v", arm, err)
		}
	}
	if len(got.Status.Results) != 2 {
		t.Errorf("results %+v, want both arms", got.Status.Results)
	}
	evs := drainEvents(h)
	for _, want := range []string{"StepStarted query servers js, py: provision", "StepDone query servers js, py: teardown done"} {
		if !strings.Contains(evs, want) {
			t.Errorf("events lack %q:\n%s", want, evs)
		}
	}
}

// A CouchDB pod the scheduler finds no node for says so at once, with what to change: with
// arms side by side, running them one at a time; the run fails after spec.podStartTimeout.
func TestUnschedulableCouchDBSaysWhatToChange(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	bench := provisionedBenchmark(ns)
	bench.Spec.QueryServers = append(bench.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	create(t, bench)
	adminSecretFor(t, bench)
	h.reconcile(bench) // finalizer
	h.reconcile(bench) // provision
	_, got := h.reconcile(bench)
	if got.Status.Progress.Step != benchv1.StepCluster {
		t.Fatalf("progress %+v, want the cluster step", got.Status.Progress)
	}
	release := builders.ReleaseName(got, "js")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: builders.StatefulSetName(release) + "-1", Labels: builders.CouchDBPodLabels(release)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "couchdb", Image: "couchdb:3.4.3"}}},
	}
	create(t, pod)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	_, got = h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonUnschedulable || !strings.Contains(stalled.Message, pod.Name) ||
		!strings.Contains(stalled.Message, "Insufficient cpu") || !strings.Contains(stalled.Message, "spec.armOrder: Sequential") {
		t.Fatalf("Stalled %+v; want Unschedulable naming the pod, the scheduler's reason and spec.armOrder: Sequential", stalled)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "Warning Unschedulable") {
		t.Errorf("no Unschedulable event:\n%s", evs)
	}

	// Nobody frees resources: spec.podStartTimeout after the report the run fails, and with
	// teardown Always both arms' CouchDBs go, so that their pods stop holding the nodes.
	h.clock.SetTime(h.clock.Now().Add(5 * time.Minute))
	_, got = h.reconcile(bench)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonUnschedulable ||
		!strings.Contains(stalled.Message, "spec.podStartTimeout (5m)") {
		t.Fatalf("phase %s, Stalled %+v; want Failed Unschedulable after spec.podStartTimeout", got.Status.Phase, stalled)
	}
	for _, arm := range []string{"js", "py"} {
		sts := types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(builders.ReleaseName(got, arm))}
		if err := env.Client.Get(context.Background(), sts, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s's CouchDB after the failure: %v; want it uninstalled", arm, err)
		}
	}
}
