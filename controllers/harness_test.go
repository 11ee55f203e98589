package controllers

// The controller tests run against a real kube-apiserver (envtest). The reconciler acts as
// the operator's service account, bound only to the ClusterRole generated from the RBAC
// markers, so a verb the operator uses without asking for it fails a test. Nothing runs pods
// there, so the tests play kubelet and the Job controller: they finish a runner Job by
// creating its pod with a terminated container whose termination message is a runner
// handoff and its log the framed results document (both as the runner writes them), and they
// mark StatefulSets ready. Helm installs the real Apache CouchDB chart
// 4.6.2 (the one built into the operator, which a benchmark that names no chart gets; one test
// reads it from a ConfigMap) through the real Helm SDK. The manager sends CouchDB nothing:
// forming a cluster and deleting a run's databases are Jobs (`couchbench cluster`, `couchbench
// clean`, tested on real CouchDB in cmd/couchbench), which the harness plays. The "existing
// CouchDB" of the benchmarks that name one (existingCouchDB) and the provisioned arms' Service
// URLs are couchDBStub, which records what it is sent, so that tests can check it saw nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

var env *testenv.Env

// existingCouchDB is the CouchDB existingBenchmark names: a stub, not CouchDB, which the
// manager must never reach (the harness plays the Jobs that would).
var existingCouchDB *couchDBStub

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false)))
	srv, stop := newCouchDBStub()
	existingCouchDB = srv
	code := testenv.Run(m, &env)
	stop()
	os.Exit(code)
}

// harness is one reconciler with a fake clock and recorder, and what the tests play.
type harness struct {
	t testing.TB
	r *CouchBenchmarkReconciler
	// operator is a client with the operator's own permissions.
	operator client.Client
	clock    *clocktesting.FakePassiveClock
	recorder *events.FakeRecorder
	// serviceURL is the provisioned arms' CouchDB URL the Jobs are given.
	serviceURL string
	// document makes the runner's results document for a step; nil leaves a Job running.
	document func(arm string, step benchv1.Step) *results.Document
	// failStep makes that step's Job fail; with earlyExit, before it hands over results,
	// leaving earlyExit (the end of its log) as its termination message, as the kubelet does.
	failStep  benchv1.Step
	earlyExit string
	// only, when set, is the Jobs the kubelet finishes; the others keep running.
	only func(job *batchv1.Job) bool
	// k6Summary is k6's summary of runner i of an arm, which the script writes to its log.
	k6Summary func(arm string, runner int) []byte
	// readsCPU is what every reads round's meter hands over.
	readsCPU results.ReadsCPU
	// logs are the pods' logs the harness serves as the kubelet would.
	logs *podLogs
	// node is the Node the harness's pods run on: a fake kubelet's, which serves logs to the
	// API server; empty when the reconciler reads logs directly.
	node string
	// logger is the reconciler's logger, as controller-runtime puts one in its context.
	logger logr.Logger
}

// podLogs serves the logs the harness's pods wrote.
type podLogs struct {
	mu   sync.Mutex
	text map[string]string
}

func (l *podLogs) Logs(_ context.Context, namespace, pod, container string, tailLines int64) (io.ReadCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	text, ok := l.text[namespace+"/"+pod+"/"+container]
	if !ok {
		return nil, fmt.Errorf("pods %q not found", pod)
	}
	if lines := strings.SplitAfter(text, "\n"); tailLines > 0 && int64(len(lines)) > tailLines {
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		text = strings.Join(lines[max(0, int64(len(lines))-tailLines):], "")
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

func (l *podLogs) write(namespace, pod, container, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.text == nil {
		l.text = map[string]string{}
	}
	l.text[namespace+"/"+pod+"/"+container] = text
}

// seedStarted creates an existing-CouchDB benchmark and reconciles it until its seed Job
// exists: the benchmark and the Job.
func seedStarted(t *testing.T, h *harness, ns string) (*benchv1.CouchBenchmark, *batchv1.Job) {
	t.Helper()
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	create(t, bench)
	h.reconcile(bench) // the finalizer that deletes the run's databases
	_, got := h.reconcile(bench)
	return bench, job(t, ns, builders.JobName(got, []string{"js", "py"}, benchv1.StepSeed))
}

var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, clock: clocktesting.NewFakePassiveClock(start), recorder: events.NewFakeRecorder(1000), document: okDocument,
		logs: &podLogs{}, logger: ctrl.Log}
	cfg := env.OperatorConfig(t)
	var err error
	if h.operator, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		t.Fatal(err)
	}
	h.r = h.reconciler(operatorReleases(t, cfg, testChartSources))
	return h
}

// testChartSources are the chart sources the tests' operator allows: ConfigMaps, as one
// test's chart comes from one, and no repository.
var testChartSources = helmrelease.Sources{Archives: true}

// operatorReleases is Helm as the operator runs it, confined: acting as the installer
// ServiceAccount of each benchmark's namespace, from the allowed sources only.
func operatorReleases(t testing.TB, cfg *rest.Config, sources helmrelease.Sources) *helmrelease.Manager {
	t.Helper()
	releases, err := helmrelease.New(cfg, t.TempDir(), ctrl.Log.WithName("helm"),
		helmrelease.Options{Installer: builders.InstallerName, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return releases
}

// allowChartRepository makes the operator allow charts from repository, as its installer
// would with the chart value chartSources.repositories.
func (h *harness) allowChartRepository(repository string) {
	sources := testChartSources
	sources.Repositories = []string{repository}
	h.r.ChartSources, h.r.Releases = sources, operatorReleases(h.t, env.OperatorConfig(h.t), sources)
}

// reconciler makes a new reconciler, as a restarted manager would.
func (h *harness) reconciler(releases Releases) *CouchBenchmarkReconciler {
	return &CouchBenchmarkReconciler{
		Client: h.operator, APIReader: h.operator, Recorder: h.recorder, Clock: h.clock,
		Releases: releases, Logs: h.logs, RunnerImage: "couchbench/manager:test", K6Image: "couchbench/k6:test",
		ServiceURL:           func(namespace, service string) string { return h.serviceURL },
		InstallerClusterRole: testenv.InstallerClusterRole, ChartSources: testChartSources,
	}
}

// reconcile runs one Reconcile and returns the benchmark as stored after it.
func (h *harness) reconcile(bench *benchv1.CouchBenchmark) (ctrl.Result, *benchv1.CouchBenchmark) {
	h.t.Helper()
	res, got, err := h.tryReconcile(bench)
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res, got
}

// tryReconcile runs one Reconcile and returns its error and the benchmark as stored after it.
func (h *harness) tryReconcile(bench *benchv1.CouchBenchmark) (ctrl.Result, *benchv1.CouchBenchmark, error) {
	h.t.Helper()
	ctx := log.IntoContext(context.Background(), h.logger)
	res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bench)})
	var got benchv1.CouchBenchmark
	if gerr := env.Client.Get(context.Background(), client.ObjectKeyFromObject(bench), &got); gerr != nil {
		if apierrors.IsNotFound(gerr) {
			return res, nil, err
		}
		h.t.Fatal(gerr)
	}
	return res, &got, err
}

// drive reconciles, playing kubelet between reconciles, until the benchmark reaches a
// final phase or the step limit.
func (h *harness) drive(bench *benchv1.CouchBenchmark, limit int) *benchv1.CouchBenchmark {
	h.t.Helper()
	got := bench
	for range limit {
		_, got = h.reconcile(bench)
		if got.Status.Phase == benchv1.PhaseSucceeded || got.Status.Phase == benchv1.PhaseFailed {
			return got
		}
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	h.t.Fatalf("the benchmark did not finish in %d reconciles: phase %s, progress %+v, conditions %+v",
		limit, got.Status.Phase, got.Status.Progress, got.Status.Conditions)
	return nil
}

// playKubelet finishes the benchmark's running Jobs and makes its StatefulSets ready.
func (h *harness) playKubelet(bench *benchv1.CouchBenchmark) {
	h.t.Helper()
	ctx := context.Background()
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(bench.Namespace), client.MatchingLabels{builders.LabelBenchmark: bench.Name}); err != nil {
		h.t.Fatal(err)
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if phase := phaseOf(job); phase == jobSucceeded || phase == jobFailed || (h.only != nil && !h.only(job)) {
			continue
		}
		arm, step := job.Labels[builders.LabelQueryServer], benchv1.Step(job.Labels[builders.LabelStep])
		if job.Labels[builders.LabelRunner] == builders.MeterRunner {
			// A reads round's meter hands over its reading; one the operator stopped (its
			// deadline cut to a second) also fails.
			reading, err := json.Marshal(h.readsCPU)
			if err != nil {
				h.t.Fatal(err)
			}
			h.finishJob(job, builders.RunnerContainer, results.PayloadReadsCPU, reading, nil, ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0) == 1)
			continue
		}
		if runner, ok := job.Labels[builders.LabelRunner]; ok {
			i, _ := strconv.Atoi(runner)
			summary := h.k6Summary(arm, i)
			h.finishJob(job, builders.K6Container, results.PayloadK6Summary, summary, nil, false)
			continue
		}
		if step == benchv1.StepCluster || step == benchv1.StepCleanup {
			// Setup Jobs hand over nothing: their end is their answer.
			h.finishJob(job, builders.RunnerContainer, results.PayloadDocument, nil, nil, step == h.failStep)
			continue
		}
		doc := h.stepDocument(job, step)
		if doc == nil {
			continue
		}
		data, err := results.Encode(doc)
		if err != nil {
			h.t.Fatal(err)
		}
		var stepErr error
		if doc.Error != "" {
			stepErr = errors.New(doc.Error)
		}
		h.finishJob(job, builders.RunnerContainer, results.PayloadDocument, data, stepErr, step == h.failStep)
	}
	var sets appsv1.StatefulSetList
	if err := env.Client.List(ctx, &sets, client.InNamespace(bench.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	for i := range sets.Items {
		s := &sets.Items[i]
		if s.Status.ReadyReplicas == *s.Spec.Replicas {
			continue
		}
		s.Status.Replicas, s.Status.ReadyReplicas, s.Status.AvailableReplicas = *s.Spec.Replicas, *s.Spec.Replicas, *s.Spec.Replicas
		if err := env.Client.Status().Update(ctx, s); err != nil {
			h.t.Fatal(err)
		}
	}
}

// finishJob does what the kubelet and the Job controller do when a Job's pod ends: a pod
// whose container wrote the payload to its log, framed, and the handoff to its termination
// message, as the runner and the k6 script do; then the Job's conditions.
func (h *harness) finishJob(job *batchv1.Job, container, kind string, payload []byte, stepErr error, fail bool) {
	h.t.Helper()
	ctx := context.Background()
	var podLog strings.Builder
	podLog.WriteString("12:00:00 progress lines and tables\n")
	if err := results.WriteFrame(&podLog, kind, payload); err != nil {
		h.t.Fatal(err)
	}
	h.logs.write(job.Namespace, job.Name+"-pod", container, podLog.String())
	message := string(results.NewHandoff(kind, payload, stepErr, false).Marshal())
	if fail && h.earlyExit != "" {
		message = h.earlyExit
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod", Labels: podLabels(job)},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = h.node
	if err := env.Client.Create(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	exit := int32(0)
	if fail {
		exit = 1
	}
	now := metav1.NewTime(h.clock.Now())
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: job.Spec.Template.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Reason: "Completed", Message: message, StartedAt: now, FinishedAt: now,
		}},
	}}}
	if fail {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses[0].State.Terminated.Reason = "Error"
	}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	job.Status.StartTime = &now
	if fail {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		}
	} else {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		h.t.Fatalf("finishing Job %s: %v", job.Name, err)
	}
}

// startPod does what the Job controller, the scheduler and the kubelet do for a Job whose pod
// has not ended: its pod (with the Job's template and labels and the Job controller's label,
// on h.node) with status, and the Job's count of it: active, and ready once it runs.
func (h *harness) startPod(job *batchv1.Job, status corev1.PodStatus) *corev1.Pod {
	h.t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod", Labels: podLabels(job)},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = h.node
	if err := env.Client.Create(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	pod.Status = status
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	h.countPod(job, status.Phase == corev1.PodRunning)
	return pod
}

// podLabels are the labels the Job controller gives a Job's pod: its template's, and the
// Job's name.
func podLabels(job *batchv1.Job) map[string]string {
	l := map[string]string{batchv1.JobNameLabel: job.Name}
	for k, v := range job.Spec.Template.Labels {
		l[k] = v
	}
	return l
}

// countPod sets the Job's count of its one pod, as the Job controller does: active, and ready
// or not.
func (h *harness) countPod(job *batchv1.Job, ready bool) {
	h.t.Helper()
	if job.Status.StartTime == nil {
		job.Status.StartTime = &metav1.Time{Time: h.clock.Now()}
	}
	job.Status.Active, job.Status.Ready = 1, ptr.To[int32](0)
	if ready {
		job.Status.Ready = ptr.To[int32](1)
	}
	if err := env.Client.Status().Update(context.Background(), job); err != nil {
		h.t.Fatalf("counting the pod of Job %s: %v", job.Name, err)
	}
}

// okDocument is a runner's results document of a step that went well, with one result of
// that step, in the runner's own types.
func okDocument(arm string, step benchv1.Step) *results.Document {
	p := results.Profile{Profile: "small", DB: "cb-bench-" + arm + "-small", Shards: 2, Replicas: 3}
	switch step {
	case benchv1.StepSeed:
		p.Seeding = &measured.Seeding{Stored: 1000, Created: 1000, Bytes: 110000, Elapsed: time.Second / 9}
	case benchv1.StepIndex:
		rate := float64(10393 + len(arm))
		p.Indexing = []results.IndexingSeries{{Reducer: "builtin", ViewCompaction: "paused", PollInterval: 250 * time.Millisecond,
			Runs: []measured.IndexBuild{{Documents: 1000, Built: time.Duration(1000 / rate * float64(time.Second)), DocsPerSecond: rate,
				Series: []measured.BuildPoint{{AtMs: 0, ChangesDone: 0, LiveTasks: 2}, {AtMs: 250, ChangesDone: 3000, LiveTasks: 0}}}}}}
	case benchv1.StepViews:
		p.ViewReads = []measured.ViewReads{{View: benchv1.ViewEmitNull, Reads: []measured.ViewRead{{Rows: 1000, Elapsed: 45 * time.Millisecond}}}}
	case benchv1.StepWrites:
		p.Writes = []measured.Write{{Mode: "bulk-1000", Created: 27000, Stored: 27000, Elapsed: 10 * time.Second}}
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &results.Document{
		SchemaVersion: results.SchemaVersion, Benchmark: "bench", StartedAt: at, FinishedAt: at.Add(time.Second),
		Server: results.Provenance{Vendor: "The Apache Software Foundation", Version: "3.4.3", Nodes: []string{"a", "b", "c"}},
		Arms:   []results.Arm{{QueryServer: arm, Language: "javascript", Profiles: []results.Profile{p}}},
		Steps:  []results.StepRecord{{QueryServer: arm, Step: step, StartedAt: at, FinishedAt: at.Add(time.Second)}},
	}
}

// jobsOf counts the benchmark's Jobs per step, but for those it has stopped.
func jobsOf(t testing.TB, bench *benchv1.CouchBenchmark) map[string]int {
	t.Helper()
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(bench.Namespace), client.MatchingLabels{builders.LabelBenchmark: bench.Name}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, j := range jobs.Items {
		if !stopped(&j) {
			count[j.Labels[builders.LabelQueryServer]+"/"+j.Labels[builders.LabelStep]]++
		}
	}
	return count
}

// stopped says whether the manager has stopped job: suspended it (then the Job controller,
// which envtest lacks, deletes its pods and says so, and the manager deletes the Job) or
// deleted it.
func stopped(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.Suspend, false) || job.DeletionTimestamp != nil
}

func drainEvents(h *harness) string {
	var b strings.Builder
	for len(h.recorder.Events) > 0 {
		b.WriteString(<-h.recorder.Events + "\n")
	}
	return b.String()
}

// chartConfigMap keeps the Apache chart (the operator's built-in one) in a ConfigMap of the
// namespace, as `kubectl create configmap couchdb-chart --from-file=couchdb-4.6.2.tgz` does,
// and returns its source.
func chartConfigMap(t *testing.T, namespace string) *benchv1.ChartSource {
	t.Helper()
	create(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "couchdb-chart"},
		BinaryData: map[string][]byte{"couchdb-" + helmrelease.BuiltInChartVersion + ".tgz": helmrelease.BuiltInArchive()},
	})
	return &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: "couchdb-chart"}}
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
