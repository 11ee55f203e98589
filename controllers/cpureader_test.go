package controllers

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

// With the CPU reader installed (the chart's cpuCost.kubernetes), a provisioned benchmark's
// seed, index and writes Jobs read its CouchDB pods' CPU time as the namespace's CPU reader:
// the operator, with its generated RBAC and no right to exec anywhere itself, made that
// ServiceAccount and bound it to the CPU reader ClusterRole; the reader may exec into pods of
// that namespace only (nor read the pods themselves), and the cluster Job gets no token. It
// talks to envtest's kube-apiserver and the in-repo CouchDB stub (no real CouchDB: no pod runs).
func TestRunnerJobsReadCPUAsTheNamespacesReader(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.r.CPUReaderClusterRole = testenv.CPUReaderClusterRole
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	bench := provisionedBenchmark(ns)
	bench.Spec.Workloads.Writes = &benchv1.WritesWorkload{Serial: true}
	create(t, bench)
	adminSecretFor(t, bench)
	got := h.drive(bench, 60)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}

	for _, step := range []benchv1.Step{benchv1.StepSeed, benchv1.StepIndex, benchv1.StepWrites} {
		pod := job(t, ns, builders.JobName(got, []string{"js"}, step)).Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		if want := "--arm-pods js=" + ns + "/prov-js-couchdb-0,prov-js-couchdb-1,prov-js-couchdb-2"; !strings.Contains(args, want) {
			t.Errorf("the %s Job runs %q, without %q", step, args, want)
		}
		if pod.ServiceAccountName != builders.CPUReaderName || !*pod.AutomountServiceAccountToken {
			t.Errorf("the %s Job runs as %q, token %v; want the CPU reader, with its token", step, pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
		}
	}
	cluster := job(t, ns, builders.JobName(got, []string{"js"}, benchv1.StepCluster)).Spec.Template.Spec
	if cluster.ServiceAccountName != "" || *cluster.AutomountServiceAccountToken || slices.Contains(cluster.Containers[0].Args, "--arm-pods") {
		t.Errorf("the cluster Job runs as %q, token %v, args %v; it measures nothing on the server", cluster.ServiceAccountName,
			*cluster.AutomountServiceAccountToken, cluster.Containers[0].Args)
	}
	var binding rbacv1.RoleBinding
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: builders.CPUReaderName}, &binding); err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Name != testenv.CPUReaderClusterRole || len(binding.Subjects) != 1 || binding.Subjects[0].Name != builders.CPUReaderName {
		t.Errorf("RoleBinding %+v", binding)
	}

	reader := serviceaccount.MakeUsername(ns, builders.CPUReaderName)
	operator := testenv.OperatorServiceAccount
	for _, c := range []struct {
		user, namespace, resource, subresource, verb string
		want                                         bool
	}{
		{reader, ns, "pods", "exec", "create", true},
		{reader, ns, "pods", "exec", "get", true},
		{reader, ns, "pods", "", "get", false},
		{reader, "default", "pods", "exec", "create", false},
		{reader, ns, "secrets", "", "get", false},
		{reader, "", "nodes", "proxy", "get", false},
		{operator, ns, "pods", "exec", "create", false},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: c.user,
			Groups: serviceaccount.MakeGroupNames(ns), ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: c.namespace, Resource: c.resource, Subresource: c.subresource, Verb: c.verb}}}
		if c.user == operator {
			review.Spec.Groups = serviceaccount.MakeGroupNames("couchbench-system")
		}
		if err := env.Client.Create(context.Background(), review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.want {
			t.Errorf("%s may %s %s/%s in %q: %v, want %v", c.user, c.verb, c.resource, c.subresource, c.namespace, review.Status.Allowed, c.want)
		}
	}
}

// Stopping on the CPU cost, or naming an existing CouchDB's pods to read it from, passes the
// preflight only where the operator reads it: with the CPU reader installed, a provisioned
// CouchDB or an existing one whose pods the spec names; the refusals say why and what to do.
func TestAskingForCPUCostNeedsTheReader(t *testing.T) {
	stopsOnCPU := func(spec benchv1.CouchBenchmarkSpec) *benchv1.CouchBenchmarkSpec {
		spec.Sequential = &benchv1.SequentialRounds{StopOn: []benchv1.SequentialMetric{benchv1.SequentialCPUCost}}
		return &spec
	}
	provisioned, existing := stopsOnCPU(provisionedBenchmark("ns").Spec), stopsOnCPU(existingBenchmark("ns").Spec)
	existingPods := existing.DeepCopy()
	existingPods.CouchDB.Existing.CPUPods = []string{"couchdb-0"}
	podsOnly := existingBenchmark("ns").Spec.DeepCopy()
	podsOnly.CouchDB.Existing.CPUPods = []string{"couchdb-0"}
	withReader := &CouchBenchmarkReconciler{CPUReaderClusterRole: testenv.CPUReaderClusterRole}
	for name, spec := range map[string]*benchv1.CouchBenchmarkSpec{"provisioned": provisioned, "existing with its pods": existingPods} {
		if refused := withReader.cpuCostNotMeasured(spec); refused != nil {
			t.Errorf("%s, with the reader: refused %+v", name, refused)
		}
	}
	for _, c := range []struct {
		name string
		r    *CouchBenchmarkReconciler
		spec *benchv1.CouchBenchmarkSpec
		says string
	}{
		{"provisioned, no reader", &CouchBenchmarkReconciler{}, provisioned, "cpuCost.kubernetes"},
		{"existing without its pods, with the reader", withReader, existing, "spec.couchdb.existing.cpuPods, or with stopOn"},
		{"existing with its pods, no reader", &CouchBenchmarkReconciler{}, existingPods, "without cpuPods and with stopOn"},
		{"existing pods named, not stopping on them, no reader", &CouchBenchmarkReconciler{}, podsOnly, "create the benchmark again without cpuPods"},
	} {
		refused := c.r.cpuCostNotMeasured(c.spec)
		if refused == nil || refused.reason != reasonCPUCostNotMeasured || !strings.Contains(refused.message, c.says) {
			t.Errorf("%s: %+v, want CPUCostNotMeasured naming %s", c.name, refused, c.says)
		}
	}
}

// Only the steps whose units carry a CPU cost, done by one runner, read it: a right no other
// Job needs is never given. It talks to no server.
func TestOnlyStepsThatCarryCPUCostReadIt(t *testing.T) {
	for _, c := range []struct {
		step  benchv1.Step
		parts int
		want  bool
	}{
		{benchv1.StepSeed, 1, true},
		{benchv1.StepIndex, 1, true},
		{benchv1.StepViews, 1, true},
		{benchv1.StepWrites, 1, true},
		{benchv1.StepSeed, 2, false},
		{benchv1.StepWrites, 3, false},
		{benchv1.StepCluster, 1, false},
		{benchv1.StepReads, 1, false},
	} {
		if got := readsCPUIn(c.step, c.parts); got != c.want {
			t.Errorf("readsCPUIn(%s, %d parts) = %v, want %v", c.step, c.parts, got, c.want)
		}
	}
}

// An existing CouchDB whose pods the spec names is read as a provisioned one is: with the CPU
// reader installed, every arm's runner Job that carries a CPU cost gets those pods (the arms
// share the server and take turns) and runs as the namespace's CPU reader. It talks to
// envtest's kube-apiserver and the in-repo CouchDB stub (no real CouchDB: no pod runs).
func TestExistingCouchDBsNamedPodsAreReadAsTheNamespacesReader(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.r.CPUReaderClusterRole = testenv.CPUReaderClusterRole
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	bench.Spec.CouchDB.Existing.CPUPods = []string{"couchdb-0", "couchdb-1"}
	create(t, bench)
	got := h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	for _, step := range []benchv1.Step{benchv1.StepSeed, benchv1.StepIndex, benchv1.StepViews, benchv1.StepWrites} {
		pod := job(t, ns, builders.JobName(got, []string{"js", "py"}, step)).Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		for _, arm := range []string{"js", "py"} {
			if want := "--arm-pods " + arm + "=" + ns + "/couchdb-0,couchdb-1"; !strings.Contains(args, want) {
				t.Errorf("the %s Job runs %q, without %q", step, args, want)
			}
		}
		if pod.ServiceAccountName != builders.CPUReaderName || !*pod.AutomountServiceAccountToken {
			t.Errorf("the %s Job runs as %q, token %v; want the CPU reader, with its token", step, pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
		}
	}
}

// With the CPU reader installed, every counted round of the k6 reads gets a meter: a Job of
// the runner's image, as the namespace's CPU reader, named with the arm's CouchDB pods, one
// more part of the round's barriers (its k6 Jobs wait for it, and mark their load's end for
// it); the warm-up gets none. Its reading becomes the reads' CPU cost per 1,000 requests. It
// talks to envtest's
// kube-apiserver and the in-repo CouchDB stub (no real CouchDB: no pod runs; internal/loadtest
// meters rounds of real k6 on real CouchDB).
func TestReadsRoundsAreMeteredAsTheNamespacesReader(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.r.CPUReaderClusterRole = testenv.CPUReaderClusterRole
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	h.readsCPU = results.ReadsCPU{CPUSeconds: 1.203, WallSeconds: 2}
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	bench.Spec.CouchDB.Existing.CPUPods = []string{"couchdb-0"}
	bench.Spec.Workloads.Reads.Repetitions, bench.Spec.Workloads.Reads.WarmUp = 2, true
	create(t, bench)
	got := h.drive(bench, 30)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	if jobs := jobsOf(t, got); jobs["js/reads"] != 8 {
		t.Errorf("jobs %v, want 3 rounds of 2 k6 runners and 2 meters", jobs)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: builders.ReadsMeterJobName(got, "js", 0)},
		&batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the warm-up's meter: %v, want none", err)
	}
	for round := 1; round <= 2; round++ {
		pod := job(t, ns, builders.ReadsMeterJobName(got, "js", round)).Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		for _, want := range []string{"reads-cpu ", "--arm js ", "--round " + strconv.Itoa(round) + " ", "--runners 2 ",
			"--arm-pods js=" + ns + "/couchdb-0"} {
			if !strings.Contains(args, want) {
				t.Errorf("round %d's meter runs %q, without %q", round, args, want)
			}
		}
		if pod.ServiceAccountName != builders.CPUReaderName || !*pod.AutomountServiceAccountToken || pod.Containers[0].Image != h.r.RunnerImage {
			t.Errorf("round %d's meter runs %s as %q, token %v; want the runner's image as the CPU reader, with its token",
				round, pod.Containers[0].Image, pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
		}
		k6 := job(t, ns, builders.K6JobName(got, "js", round, 1)).Spec.Template.Spec
		if want := barrier.MeteredSpec(k6plan.BarrierName(round), 1, 2); !slices.Contains(k6.Containers[0].Env,
			corev1.EnvVar{Name: "COUCHBENCH_BARRIER", Value: want}) {
			t.Errorf("round %d's second k6 runner has env %v, without its barrier with the meter %s", round, k6.Containers[0].Env, want)
		}
		if k6.ServiceAccountName != "" || *k6.AutomountServiceAccountToken {
			t.Errorf("round %d's k6 runner runs as %q, token %v: the meter reads, k6 gets no rights", round, k6.ServiceAccountName,
				*k6.AutomountServiceAccountToken)
		}
	}
	warmUp := job(t, ns, builders.K6JobName(got, "js", 0, 1)).Spec.Template.Spec
	if want := barrier.Spec(k6plan.BarrierName(0), 1, 2); !slices.Contains(warmUp.Containers[0].Env, corev1.EnvVar{Name: "COUCHBENCH_BARRIER", Value: want}) {
		t.Errorf("the warm-up's second k6 runner has env %v, want its barrier without a meter %s", warmUp.Containers[0].Env, want)
	}
	reads := storedDocuments(t, got)[0].Arms[0].Profiles[0].Reads
	if len(reads.CPU) != 2 || reads.CPU[0] != (results.ReadsCPU{Repetition: 0, CPUSeconds: 1.203, WallSeconds: 2}) || reads.CPU[1].Repetition != 1 {
		t.Fatalf("reads' CPU %+v: want each counted repetition's reading", reads.CPU)
	}
	var cost []float64
	for _, m := range results.Metrics(storedDocuments(t, got)...) {
		if m.Workload == "reads" && m.Name == "cpu_seconds_per_1000_requests" {
			cost = m.Samples
		}
	}
	// Each repetition's two runners made 200 and 201 requests (k6Summary).
	if want := 1000 * 1.203 / 401; len(cost) != 2 || math.Abs(cost[0]-want) > 1e-9 {
		t.Errorf("the reads' CPU cost %v, want %.4f s per 1,000 requests each repetition", cost, want)
	}
}

// A round whose k6 runners all ended without marking their ends (teardowns that could not
// write): its meter waits on for them. meterGrace after the runners' end the operator stops
// it (its deadline cut to a second) with a Warning that says why, and the round keeps its
// load without a reading; the run succeeds. It talks to envtest's kube-apiserver (no pod
// runs: the harness ends the meter's Job only once it is stopped, as its pod would).
func TestAMeterLeftWaitingIsStoppedAndTheRoundKeepsItsLoad(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.r.CPUReaderClusterRole = testenv.CPUReaderClusterRole
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	h.readsCPU = results.ReadsCPU{Error: "waiting for the k6 runners' ends: interrupted by SIGTERM"}
	h.only = func(job *batchv1.Job) bool {
		return job.Labels[builders.LabelRunner] != builders.MeterRunner || ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0) == 1
	}
	create(t, credentials(ns))
	bench := readsBenchmark(ns)
	bench.Spec.CouchDB.Existing.CPUPods = []string{"couchdb-0"}
	create(t, bench)
	got := h.drive(bench, 80)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	if d := job(t, ns, builders.ReadsMeterJobName(got, "js", 0)).Spec.ActiveDeadlineSeconds; d == nil || *d != 1 {
		t.Errorf("the meter's deadline %v: want it cut to a second", d)
	}
	reads := storedDocuments(t, got)[0].Arms[0].Profiles[0].Reads
	if len(reads.Runners) != 2 || len(reads.CPU) != 1 || !strings.Contains(reads.CPU[0].Error, "interrupted") || reads.CPU[0].CPUSeconds != 0 {
		t.Errorf("reads: %d runners, CPU %+v; want the round's load kept and its reading saying why there is none", len(reads.Runners), reads.CPU)
	}
	if events := drainEvents(h); !strings.Contains(events, "still waits for their ends; stopping it") {
		t.Errorf("events:\n%s\nwant a Warning saying why the meter was stopped", events)
	}
}
