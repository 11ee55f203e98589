package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

func existingBenchmark(namespace string) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "bench"},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB: benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{
				URL: existingCouchDB.URL, CredentialsSecret: benchv1.SecretKeys{Name: "couchdb-admin"},
			}},
			QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}, {Name: "py", Language: "python"}},
			Workloads: benchv1.Workloads{
				Indexing: &benchv1.IndexingWorkload{}, ViewReads: &benchv1.ViewReadsWorkload{},
				Writes: &benchv1.WritesWorkload{Serial: true},
			},
		},
	}
}

func credentials(namespace string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "couchdb-admin"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("s3cret-value")},
	}
}

func TestExistingCouchDBRunsEveryStepOnce(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	create(t, bench)

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	// The arms share the CouchDB, so each step is one Job in which they take turns; the
	// clean-up's Job deletes the run's databases.
	want := map[string]int{"/seed": 1, "/index": 1, "/views": 1, "/writes": 1, "/cleanup": 1}
	if jobs := jobsOf(t, got); len(jobs) != len(want) || jobs["/index"] != 1 || jobs["/writes"] != 1 || jobs["/cleanup"] != 1 {
		t.Errorf("jobs %v, want one per step %v", jobs, want)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, conditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || meta.FindStatusCondition(got.Status.Conditions, conditionReconciling) != nil {
		t.Errorf("conditions %+v; want Ready=True and no Reconciling", got.Status.Conditions)
	}
	if len(got.Status.Results) != 2 || len(got.Status.Results[0].Seeding) != 1 || len(got.Status.Results[0].Indexing) != 1 ||
		len(got.Status.Results[1].ViewReads) != 1 || len(got.Status.Results[1].Writes) != 1 {
		t.Fatalf("results %+v", got.Status.Results)
	}
	if got.Status.BestChangesPerSecond == nil || *got.Status.BestChangesPerSecond != 10393+2 {
		t.Errorf("best c/s %v, want the py arm's 10395", got.Status.BestChangesPerSecond)
	}
	if got.Status.Progress.Percent != 100 || got.Status.CompletionTime == nil || got.Status.Server == "" {
		t.Errorf("progress %+v completion %v server %q", got.Status.Progress, got.Status.CompletionTime, got.Status.Server)
	}

	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	md := cm.Data[builders.ResultsMarkdownKey]
	for _, want := range []string{"| js (javascript) | builtin | 10,395", "### Writes", "bulk-1000", "3.4.3, 3 node(s)"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if !metav1.IsControlledBy(&cm, got) || cm.Data[builders.ResultsCSVKey] == "" {
		t.Errorf("results ConfigMap %+v", cm.ObjectMeta)
	}
	// The stored documents, listed as `kubectl get cm -l bench.couchbench.io/results-of=bench
	// -o json` lists them, render to exactly the stored tables, and keep every run's series.
	docs := storedDocuments(t, got)
	if len(docs) != 2 {
		t.Fatalf("%d stored documents, want one per arm", len(docs))
	}
	var rendered strings.Builder
	if err := compare.WriteRun(&rendered, docs); err != nil {
		t.Fatal(err)
	}
	if rendered.String() != md {
		t.Errorf("couchbench report of the stored documents:\n%s\nthe operator's results.md:\n%s", rendered.String(), md)
	}
	for _, d := range docs {
		p := d.Arms[0].Profiles[0]
		if len(d.Steps) != 4 || p.Seeding == nil || len(p.Indexing) != 1 || len(p.Indexing[0].Runs[0].Series) != 2 || len(p.ViewReads) != 1 || len(p.Writes) != 1 {
			t.Errorf("stored document of %s: %d steps, profile %+v", d.Arms[0].QueryServer, len(d.Steps), p)
		}
	}
	for key, value := range cm.Data {
		if strings.Contains(value, "s3cret-value") {
			t.Errorf("%s carries the password", key)
		}
	}
	evs := drainEvents(h)
	if !strings.Contains(evs, "Normal StepStarted query servers js, py (taking turns): seed") || !strings.Contains(evs, "Normal Succeeded") || strings.Contains(evs, "s3cret") {
		t.Errorf("events:\n%s", evs)
	}
}

// storedDocuments reads a benchmark's stored results documents as `couchbench report -`
// reads `kubectl get cm -l bench.couchbench.io/results-of=NAME -o json`.
func storedDocuments(t *testing.T, bench *benchv1.CouchBenchmark) []*results.Document {
	t.Helper()
	var list corev1.ConfigMapList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(bench.Namespace),
		client.MatchingLabels{benchv1.LabelResultsOf: bench.Name}); err != nil {
		t.Fatal(err)
	}
	list.Kind = "ConfigMapList"
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := results.ReadDocuments(data, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestFailedStepKeepsEarlierResults(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.failStep = benchv1.StepIndex
	h.document = func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		if step == benchv1.StepIndex {
			d.Arms[0].Profiles[0].Indexing = nil
			d.Error = "query server js: profile small: indexing (builtin reducer, run 1): the built view does not match the dataset: month 2026-01: 5, want 6"
		}
		return d
	}
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	create(t, bench)

	got := h.drive(bench, 20)

	if got.Status.Phase != benchv1.PhaseFailed {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonStepFailed || !strings.Contains(stalled.Message, "step index") ||
		!strings.Contains(stalled.Message, "does not match the dataset") {
		t.Errorf("Stalled %+v; want StepFailed naming the step and the runner's error", stalled)
	}
	if len(got.Status.Results) != 2 || len(got.Status.Results[0].Seeding) != 1 || len(got.Status.Results[1].Seeding) != 1 {
		t.Errorf("results %+v; the seeding of both arms before the failure must stay", got.Status.Results)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[builders.ResultsMarkdownKey], "### Seeding") {
		t.Errorf("the results ConfigMap lost the seeding:\n%s", cm.Data[builders.ResultsMarkdownKey])
	}
	if jobs := jobsOf(t, got); jobs["/views"] != 0 {
		t.Errorf("jobs after the failure: %v", jobs)
	}
}

// timedOut runs an existing-CouchDB benchmark whose seed Job never ends past its 10-minute
// timeout, and returns it as the failing reconcile left it, with that Job.
func timedOut(t *testing.T, h *harness, ns string) (bench, got *benchv1.CouchBenchmark, seed *batchv1.Job) {
	t.Helper()
	h.document = func(string, benchv1.Step) *results.Document { return nil } // Jobs never finish
	create(t, credentials(ns))
	bench = existingBenchmark(ns)
	bench.Spec.Timeout = "10m"
	create(t, bench)

	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got = h.reconcile(bench)
	if got.Status.Phase != benchv1.PhaseRunning || jobsOf(t, got)["/seed"] != 1 {
		t.Fatalf("phase %s jobs %v; want the seed Job running", got.Status.Phase, jobsOf(t, got))
	}
	seed = job(t, ns, builders.JobName(got, []string{"js", "py"}, benchv1.StepSeed))
	h.clock.SetTime(start.Add(11 * time.Minute))
	_, got = h.reconcile(bench)
	return bench, got, seed
}

func TestTimeoutEndsTheRunAndStopsItsJob(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench, got, seed := timedOut(t, h, ns)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonTimeout || !strings.Contains(stalled.Message, "10m") {
		t.Fatalf("phase %s, Stalled %+v; want Failed with reason Timeout", got.Status.Phase, stalled)
	}
	if !stopped(job(t, ns, seed.Name)) {
		t.Errorf("the running Job %s was not stopped", seed.Name)
	}
	// The Job controller and the garbage collector, which envtest lacks, remove it.
	if err := env.Client.Delete(context.Background(), job(t, ns, seed.Name), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}

	// A reconcile that read the benchmark from a cache not yet showing the failure starts the
	// seed Job again; the next reconcile of the failed run stops it.
	seed.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: seed.Name, Labels: seed.Labels, OwnerReferences: seed.OwnerReferences}
	seed.Status = batchv1.JobStatus{}
	seed.Spec.Selector = nil // the API server's, from the first Job's uid
	for _, l := range []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		delete(seed.Spec.Template.Labels, l)
	}
	create(t, seed)
	if _, again := h.reconcile(bench); again.Status.Phase != benchv1.PhaseFailed {
		t.Fatalf("phase %s after the Job came back", again.Status.Phase)
	}
	if !stopped(job(t, ns, seed.Name)) {
		t.Errorf("the seed Job started after the failure was not stopped")
	}
}

// A benchmark that would stop its steps on a CPU cost the operator does not read never
// starts: it is Stalled, saying why and what to create instead, and no Job runs.
func TestPreflightRefusesStoppingOnCPUCost(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench := existingBenchmark(ns)
	bench.Spec.Sequential = &benchv1.SequentialRounds{TargetPercent: 5, TolerancePercent: 2, TimeLimit: "15m", MaxRounds: 100,
		TunedForRounds: 20, StopOn: []benchv1.SequentialMetric{benchv1.SequentialCPUCost}}
	create(t, bench)
	create(t, credentials(ns))

	h.reconcile(bench)
	_, got := h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonCPUCostNotMeasured || !strings.Contains(stalled.Message, "cpuCost.kubernetes") ||
		!strings.Contains(stalled.Message, "create the benchmark again") {
		t.Fatalf("Stalled %+v; want CPUCostNotMeasured, saying what to do", stalled)
	}
	if got.Status.StartTime != nil || len(jobsOf(t, got)) != 0 {
		t.Errorf("start %v jobs %v; want the run not started", got.Status.StartTime, jobsOf(t, got))
	}
	if !strings.Contains(drainEvents(h), "Warning CPUCostNotMeasured") {
		t.Error("no Warning event says why the run does not start")
	}
}

func TestPreflightWaitsForCredentials(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench := existingBenchmark(ns)
	create(t, bench)

	h.reconcile(bench) // the finalizer that deletes the run's databases
	res, got := h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonCredentialsNotFound || !strings.Contains(stalled.Message, `"couchdb-admin"`) {
		t.Fatalf("Stalled %+v", stalled)
	}
	if res.RequeueAfter != preflightRetry || got.Status.StartTime != nil || len(jobsOf(t, got)) != 0 {
		t.Errorf("requeue %s start %v jobs %v", res.RequeueAfter, got.Status.StartTime, jobsOf(t, got))
	}
	// Nothing changed: nothing written.
	_, again := h.reconcile(bench)
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("an idempotent reconcile wrote the benchmark")
	}

	secret := credentials(ns)
	delete(secret.Data, "password")
	create(t, secret)
	_, got = h.reconcile(bench)
	if s := meta.FindStatusCondition(got.Status.Conditions, conditionStalled); s == nil || s.Reason != reasonCredentialsIncomplete {
		t.Fatalf("Stalled %+v; want CredentialsIncomplete", s)
	}

	secret.Data["password"] = []byte("s3cret-value")
	if err := env.Client.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	_, got = h.reconcile(bench)
	if got.Status.Phase != benchv1.PhaseRunning || got.Status.StartTime == nil || jobsOf(t, got)["/seed"] != 1 {
		t.Errorf("phase %s, jobs %v: the run must start once the Secret is fixed", got.Status.Phase, jobsOf(t, got))
	}
	if s := meta.FindStatusCondition(got.Status.Conditions, conditionStalled); s != nil {
		t.Errorf("still Stalled: %+v", s)
	}
	if !strings.Contains(drainEvents(h), "Normal PreflightPassed") {
		t.Error("no PreflightPassed event")
	}
}

func TestRestartedManagerResumesWithoutSecondJobs(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	create(t, bench)

	// Run into the index step and hold its Job open; then "restart": a
	// new reconciler with no memory, in the same world.
	h.document = func(arm string, step benchv1.Step) *results.Document {
		if step == benchv1.StepIndex {
			return nil
		}
		return okDocument(arm, step)
	}
	var got *benchv1.CouchBenchmark
	for range 6 {
		_, got = h.reconcile(bench)
		h.playKubelet(got)
	}
	if got.Status.Progress == nil || got.Status.Progress.Step != benchv1.StepIndex || jobsOf(t, got)["/index"] != 1 {
		t.Fatalf("progress %+v, jobs %v: want the index step running", got.Status.Progress, jobsOf(t, got))
	}
	h.r = h.reconciler(h.r.Releases)
	for range 3 {
		_, got = h.reconcile(bench)
	}
	if n := jobsOf(t, got)["/index"]; n != 1 {
		t.Fatalf("%d index Jobs after the restart", n)
	}
	h.document = okDocument
	got = h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s after the restart", got.Status.Phase)
	}
	for step, n := range jobsOf(t, got) {
		if n != 1 {
			t.Errorf("%d Jobs for %s", n, step)
		}
	}
}

// provisionedBenchmark provisions a 3-node CouchDB with the Apache chart, kept in a ConfigMap
// of the namespace.
func provisionedBenchmark(namespace string) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prov"},
		Spec: benchv1.CouchBenchmarkSpec{
			// No chart: the one built into the operator, as a benchmark gets by default.
			CouchDB: benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{
				ClusterSize: 3,
				Image:       benchv1.ImageSource{Repository: "couchdb", Tag: "3.4.3"},
			}},
			QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
			Workloads:    benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}},
			Teardown:     benchv1.TeardownAlways,
		},
	}
}

// fakeAdminPassword is the admin password of the in-repo fake CouchDB these tests talk to.
const fakeAdminPassword = "pw"

// adminSecretFor pre-creates the admin Secret of each of the benchmark's query servers with
// the password the fake expects; the operator keeps an existing Secret, as after a restart.
func adminSecretFor(t *testing.T, bench *benchv1.CouchBenchmark) {
	t.Helper()
	for _, qs := range bench.Spec.QueryServers {
		s, err := builders.AdminSecret(bench, qs.Name, builders.Random)
		if err != nil {
			t.Fatal(err)
		}
		s.OwnerReferences = nil
		s.Data[builders.AdminPasswordKey] = []byte(fakeAdminPassword)
		create(t, s)
	}
}

func TestProvisionedCouchDBEndToEnd(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	bench := provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)

	// The first reconcile adds the finalizer, the next installs the release.
	h.reconcile(bench)
	_, got := h.reconcile(bench)
	if !controllerutil.ContainsFinalizer(got, finalizerName) {
		t.Fatal("no finalizer on a benchmark that provisions CouchDB")
	}
	release := builders.ReleaseName(got, "js")
	var sts appsv1.StatefulSet
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(release)}, &sts); err != nil {
		t.Fatalf("the chart's StatefulSet: %v", err)
	}
	if *sts.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *sts.Spec.Replicas)
	}
	// The chart renders the operator's readiness probe: /_up every 2 s, 30 s of failures
	// before a pod leaves its Service, the rest the chart's own.
	if p := sts.Spec.Template.Spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/_up" ||
		p.PeriodSeconds != 2 || p.FailureThreshold != 15 || p.TimeoutSeconds != 1 {
		t.Errorf("readiness probe %+v, want GET /_up every 2 s, 15 failures, 1 s timeout", p)
	}
	got = h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	// The cluster Job asks CouchDB, not the operator, which sent the fake nothing.
	clusterJob := job(t, ns, builders.JobName(got, []string{"js"}, benchv1.StepCluster))
	if args := strings.Join(clusterJob.Spec.Template.Spec.Containers[0].Args, " "); !strings.HasPrefix(args, "cluster --nodes 3 --credentials-dir ") ||
		!strings.Contains(args, "--arm-url js="+srv.URL) {
		t.Errorf("the cluster Job runs %q", args)
	}
	for _, method := range []string{"GET", "POST", "PUT", "DELETE"} {
		if n := srv.Requests(method, "/"); n > 0 {
			t.Errorf("the operator sent CouchDB %d %s request(s)", n, method)
		}
	}
	// Teardown Always: the release and the admin Secret are gone, the results stay.
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(release)}, &appsv1.StatefulSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet after teardown: %v", err)
	}
	err = env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: builders.AdminSecretName(got, "js")}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("admin Secret after teardown: %v", err)
	}
	if len(got.Status.Results) != 1 || len(got.Status.Results[0].Indexing) != 1 {
		t.Errorf("results %+v", got.Status.Results)
	}
	// The results say which chart made the CouchDB: the built-in one, by its digest.
	for _, d := range storedDocuments(t, got) {
		if c := d.Arms[0].Cluster; c == nil || !strings.Contains(c.Chart, "built into the operator") || !strings.Contains(c.Chart, helmrelease.BuiltInChartDigest) {
			t.Errorf("provenance %+v: want the built-in chart and its digest", c)
		}
	}
	// Deleting the benchmark lets it go (the finalizer finds nothing left to remove).
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if _, gone := h.reconcile(bench); gone != nil {
		t.Errorf("the benchmark is still there: finalizers %v", gone.Finalizers)
	}
}

func TestDeletionMidRunUninstallsTheRelease(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.serviceURL = "http://127.0.0.1:1" // CouchDB is never reached: the run is deleted first
	bench := provisionedBenchmark(ns)
	bench.Spec.Teardown = benchv1.TeardownNever // deletion removes the release whatever the policy
	create(t, bench)
	h.reconcile(bench)
	_, got := h.reconcile(bench)
	release := builders.ReleaseName(got, "js")
	sts := types.NamespacedName{Namespace: ns, Name: builders.StatefulSetName(release)}
	if err := env.Client.Get(context.Background(), sts, &appsv1.StatefulSet{}); err != nil {
		t.Fatalf("release not installed: %v", err)
	}
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if _, gone := h.reconcile(bench); gone != nil {
		t.Fatalf("still there after finalizing: %v", gone.Finalizers)
	}
	if err := env.Client.Get(context.Background(), sts, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet after deletion: %v", err)
	}
}

// A chart kept in a ConfigMap: the run waits (Stalled, saying what to fix) while the ConfigMap
// is missing or ambiguous, and fails with ChartFailed when it holds no chart.
func TestChartConfigMapProblemsSayWhatToFix(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench := provisionedBenchmark(ns)
	bench.Spec.CouchDB.Provision.Chart = &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: "my-chart"}}
	create(t, bench)

	h.reconcile(bench) // adds the finalizer
	_, got := h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonChartNotFound || !strings.Contains(stalled.Message, `ConfigMap "my-chart"`) ||
		!strings.Contains(stalled.Message, "kubectl create configmap my-chart") || got.Status.StartTime != nil {
		t.Fatalf("Stalled %+v, start %v; want ChartNotFound saying how to make the ConfigMap, and no start", stalled, got.Status.StartTime)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-chart"},
		BinaryData: map[string][]byte{"a.tgz": []byte("one"), "b.tgz": []byte("two")},
	}
	create(t, cm)
	_, got = h.reconcile(bench)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || !strings.Contains(stalled.Message, `holds 2 keys ("a.tgz", "b.tgz")`) || !strings.Contains(stalled.Message, "configMap.key") {
		t.Fatalf("Stalled %+v; want the keys listed and configMap.key named", stalled)
	}

	cm.BinaryData = map[string][]byte{"a.tgz": []byte("not a chart")}
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	got = h.drive(bench, 5)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonChartFailed ||
		!strings.Contains(stalled.Message, "ConfigMap "+ns+"/my-chart") || !strings.Contains(stalled.Message, "not a packaged Helm chart") {
		t.Fatalf("phase %s, Stalled %+v; want ChartFailed naming the ConfigMap", got.Status.Phase, stalled)
	}
}

// A cluster Job that never sees every node join, because it is still waiting when the step's
// time is out or because it gave up, fails the run with ClusterNotReady and what it saw.
func TestClusterThatNeverFormsTimesOut(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.only = func(job *batchv1.Job) bool { return job.Labels[builders.LabelStep] != string(benchv1.StepCluster) }
	bench := provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)
	for range 5 {
		_, got := h.reconcile(bench)
		h.playKubelet(got)
	}
	_, got := h.reconcile(bench)
	if got.Status.Progress.Step != benchv1.StepCluster {
		t.Fatalf("progress %+v, want the cluster step", got.Status.Progress)
	}
	h.clock.SetTime(h.clock.Now().Add(clusterTimeout + time.Minute))
	_, got = h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonClusterNotReady {
		t.Fatalf("phase %s, Stalled %+v", got.Status.Phase, stalled)
	}

	ns = env.Namespace(t)
	h = newHarness(t)
	h.failStep, h.earlyExit = benchv1.StepCluster, "couchbench cluster: http://x:5984 is not a cluster of 3 nodes: 1 of 3 nodes joined"
	bench = provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)
	got = h.drive(bench, 20)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonClusterNotReady ||
		!strings.Contains(stalled.Message, "1 of 3 nodes joined") {
		t.Fatalf("phase %s, Stalled %+v; want ClusterNotReady quoting the cluster Job", got.Status.Phase, stalled)
	}
}

// A benchmark deleted and applied again finds its predecessor's Jobs until the garbage
// collector removes them (envtest has none): it must wait, not read their old results.
func TestLeftoverJobOfADeletedBenchmarkIsNotAdopted(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	old := bench.DeepCopy()
	old.UID = "0ld-benchmark-uid"
	leftover := builders.RunnerJob{Bench: old, Step: benchv1.StepSeed, Image: "x", Servers: []builders.ArmServer{{Arm: "js", URL: "http://couchdb:5984",
		Credentials: benchv1.SecretKeys{Name: "couchdb-admin", UsernameKey: "username", PasswordKey: "password"}}}}.Job()
	create(t, leftover)
	data, err := results.Encode(okDocument("js", benchv1.StepSeed))
	if err != nil {
		t.Fatal(err)
	}
	h.finishJob(leftover, builders.RunnerContainer, results.PayloadDocument, data, nil, false)
	create(t, bench)

	for range 3 {
		h.reconcile(bench)
	}
	_, got := h.reconcile(bench)
	if got.Status.Progress.Step != benchv1.StepSeed || len(got.Status.Results) != 0 {
		t.Fatalf("progress %+v results %+v: the old Job's summary was adopted", got.Status.Progress, got.Status.Results)
	}
	// The garbage collector removes the old Job; the run goes on with its own.
	if err := env.Client.Delete(context.Background(), leftover, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leftover.Name + "-pod"}}); err != nil {
		t.Fatal(err)
	}
	got = h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s", got.Status.Phase)
	}
}

// A CouchDB pod whose image the node cannot get is reported at once (Stalled, naming the
// image), not after the cluster timeout; the run waits, and goes on once the pod starts.
func TestImagePullFailureIsReportedAtOnce(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	bench := provisionedBenchmark(ns)
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
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: builders.StatefulSetName(release) + "-0",
			Labels: builders.CouchDBPodLabels(release)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "couchdb", Image: "couchdb:3.4.3"}}},
	}
	create(t, pod)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "couchdb", Image: "couchdb:3.4.3", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `Container image "couchdb:3.4.3" is not present with pull policy of Never`},
	}}}
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}

	_, got = h.reconcile(bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseRunning || stalled == nil || stalled.Reason != reasonImagePullFailed ||
		!strings.Contains(stalled.Message, "couchdb:3.4.3") || !strings.Contains(stalled.Message, pod.Name) {
		t.Fatalf("phase %s, Stalled %+v; want Running and Stalled ImagePullFailed naming the pod and image", got.Status.Phase, stalled)
	}
	_, again := h.reconcile(bench)
	if again.ResourceVersion != got.ResourceVersion {
		t.Error("a reconcile that saw the same stall wrote the benchmark again")
	}
	if evs := drainEvents(h); strings.Count(evs, "Warning ImagePullFailed") != 1 {
		t.Errorf("want one ImagePullFailed event, got:\n%s", evs)
	}

	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got = h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded || meta.FindStatusCondition(got.Status.Conditions, conditionStalled) != nil {
		t.Fatalf("phase %s, conditions %+v; want Succeeded and no Stalled once the image is there", got.Status.Phase, got.Status.Conditions)
	}
}

// failingUninstall is Helm that cannot uninstall, as when a permission is missing.
type failingUninstall struct {
	Releases
	err error
}

func (f *failingUninstall) Uninstall(ctx context.Context, namespace, release string) error {
	if f.err != nil {
		return f.err
	}
	return f.Releases.Uninstall(ctx, namespace, release)
}

// A step whose reconcile keeps failing says so where users look: a current condition naming
// the step and the error, and one Warning event; the run goes on once the error is gone.
func TestReconcileErrorsAreReported(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	srv := startCouchDBStub(t)
	h.serviceURL = srv.URL
	broken := &failingUninstall{Releases: h.r.Releases, err: errors.New(`secrets "x" is forbidden: cannot delete`)}
	h.r.Releases = broken
	bench := provisionedBenchmark(ns)
	create(t, bench)
	adminSecretFor(t, bench)

	var got *benchv1.CouchBenchmark
	var err error
	for range 40 {
		_, got, err = h.tryReconcile(bench)
		if err != nil {
			break
		}
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	if err == nil || got.Status.Progress.Step != benchv1.StepTeardown {
		t.Fatalf("err %v, progress %+v: want the teardown to fail", err, got.Status.Progress)
	}
	reconciling := meta.FindStatusCondition(got.Status.Conditions, conditionReconciling)
	if reconciling == nil || reconciling.Reason != reasonReconcileError || !strings.Contains(reconciling.Message, "step teardown") ||
		!strings.Contains(reconciling.Message, "forbidden") {
		t.Fatalf("Reconciling %+v; want ReconcileError naming the step and the error", reconciling)
	}
	if _, _, err := h.tryReconcile(bench); err == nil {
		t.Fatal("the second teardown succeeded with Helm still failing")
	}
	if evs := drainEvents(h); strings.Count(evs, "Warning ReconcileError") != 1 || !strings.Contains(evs, "forbidden") {
		t.Errorf("want one ReconcileError event for the same error, got:\n%s", evs)
	}

	broken.err = nil
	got = h.drive(bench, 5)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
}

// With runner.parallelism 3 the seed and writes steps are three Jobs each, parts 0-2, created
// together; their three documents join into one result over all of them, with each runner's
// own kept. The index and views steps stay one Job each.
func TestSharedStepsAreOneJobPerPartJoinedIntoOneResult(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	parts := map[benchv1.Step]int{}
	h.document = func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		// Part i starts i x 10 ms late: each loads 1,000 documents in a second, or writes
		// 9,000 in 10 s, of which part 0 counts 27,000 landed.
		begin := t0.Add(time.Duration(parts[step]%3) * 10 * time.Millisecond)
		switch step {
		case benchv1.StepSeed:
			d.Arms[0].Profiles[0].Seeding = &measured.Seeding{Stored: 1000, Created: 1000, Bytes: 110000, Elapsed: time.Second,
				StartedAt: begin, FinishedAt: begin.Add(time.Second)}
		case benchv1.StepWrites:
			d.Arms[0].Profiles[0].Writes = []measured.Write{{Mode: "serial", Created: 9000, Elapsed: 10 * time.Second,
				StartedAt: begin, FinishedAt: begin.Add(10 * time.Second)}}
			if parts[step] == 0 {
				d.Arms[0].Profiles[0].Writes[0].Stored = 27000
			}
		}
		parts[step]++
		return d
	}
	bench := createSharedStepsBenchmark(t, ns)

	got := h.drive(bench, 20)

	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s: %+v", got.Status.Phase, got.Status.Conditions)
	}
	if jobs := jobsOf(t, got); jobs["js/seed"] != 3 || jobs["js/index"] != 1 || jobs["js/views"] != 1 || jobs["js/writes"] != 3 {
		t.Errorf("Jobs per step %v: want 3 seed and 3 writes Jobs, one index and one views Job", jobs)
	}
	for part := range 3 {
		var job batchv1.Job
		name := builders.JobNames(got, []string{"js"}, benchv1.StepWrites)[part]
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &job); err != nil {
			t.Fatal(err)
		}
		args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
		if want := fmt.Sprintf("--part %d --parts 3", part); !strings.Contains(args, want) || job.Labels[builders.LabelPart] != strconv.Itoa(part) {
			t.Errorf("Job %s: args %q, labels %v; want %q and its part label", name, args, job.Labels, want)
		}
	}
	s := got.Status.Results[0].Seeding
	// 3,000 documents from the first start to the last end, 1.02 s later.
	if len(s) != 1 || s[0].Documents != 3000 || s[0].Runners != 3 || s[0].DocsPerSecond != 2941 {
		t.Errorf("seeding %+v: want 3000 documents by 3 runners at 2941 docs/s", s)
	}
	// 27,000 documents from the first start to the last end, 10.02 s later.
	if w := got.Status.Results[0].Writes; len(w) != 1 || w[0].DocsPerSecond != 2695 || w[0].Stored != 27000 {
		t.Errorf("writes %+v: want 27000 stored at 2695 docs/s", w)
	}
	docs := storedDocuments(t, got)
	p := docs[0].Arms[0].Profiles[0]
	if len(p.Seeding.Parts) != 3 || len(p.Writes[0].Parts) != 3 {
		t.Errorf("the results document keeps %d runners' loads and %d runners' writes, want 3 of each", len(p.Seeding.Parts), len(p.Writes[0].Parts))
	}
}

// A part of a shared step that fails would leave the others waiting for it at a barrier:
// the operator cuts their active deadline to a second (the Job controller then stops them)
// and says so, and the step fails with the failed part's error.
func TestAFailedPartStopsTheOthers(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.failStep = benchv1.StepSeed
	h.document = func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		if step == benchv1.StepSeed {
			d.Error = "profile small: documents 0000000333-0000000665: gave up after 12 attempts"
		}
		return d
	}
	bench := createSharedStepsBenchmark(t, ns)
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	names := builders.JobNames(got, []string{"js"}, benchv1.StepSeed)
	h.only = func(job *batchv1.Job) bool { return job.Name == names[1] }
	h.playKubelet(got)
	h.reconcile(bench)

	for part, name := range names {
		var job batchv1.Job
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &job); err != nil {
			t.Fatal(err)
		}
		stopped := job.Spec.ActiveDeadlineSeconds != nil && *job.Spec.ActiveDeadlineSeconds == 1
		if stopped != (part != 1) {
			t.Errorf("Job %s: active deadline %v; want 1 s for the parts still running, untouched for the failed one", name,
				*job.Spec.ActiveDeadlineSeconds)
		}
	}
	if events := drainEvents(h); !strings.Contains(events, "PartStopped") || !strings.Contains(events, names[0]) {
		t.Errorf("events %q: want PartStopped for the stopped parts", events)
	}
	// The Job controller ends the stopped parts; the step fails with the failed part's error.
	h.only = nil
	got = h.drive(bench, 10)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || !strings.Contains(stalled.Message, "gave up after 12 attempts") {
		t.Errorf("phase %s, Stalled %+v: want the step failed with the part's error", got.Status.Phase, stalled)
	}
}

// A step that stops before it can hand over results (here: credentials it cannot read) fails
// the run with the end of its log, which the kubelet leaves as its termination message.
func TestAStepThatStopsEarlySaysWhy(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	h.failStep = benchv1.StepSeed
	h.earlyExit = "couchbench seed: credentials: open /etc/couchbench/credentials/username: no such file or directory\n"
	bench := createSharedStepsBenchmark(t, ns)
	got := h.drive(bench, 10)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil ||
		!strings.Contains(stalled.Message, "stopped before handing over results") ||
		!strings.HasSuffix(stalled.Message, "credentials: open /etc/couchbench/credentials/username: no such file or directory") {
		t.Errorf("phase %s, Stalled %+v: want the run failed with the end of the step's log", got.Status.Phase, stalled)
	}
}

// createSharedStepsBenchmark creates, with its credentials, a benchmark of one arm on an
// existing CouchDB whose seed and writes steps three runner Jobs share.
func createSharedStepsBenchmark(t *testing.T, ns string) *benchv1.CouchBenchmark {
	t.Helper()
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	bench.Spec.QueryServers = bench.Spec.QueryServers[:1]
	bench.Spec.Runner.Parallelism = 3
	create(t, bench)
	return bench
}
