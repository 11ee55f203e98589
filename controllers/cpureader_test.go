package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
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
