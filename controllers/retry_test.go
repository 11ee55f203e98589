package controllers

// Failures that pass by themselves. These tests talk to envtest's API server, to a classic
// Helm chart repository served on loopback by net/http (httptest, serving the operator's
// built-in Apache chart 4.6.2, which the real Helm SDK downloads and installs), and to
// couchDBStub (not CouchDB) for the operator's cluster checks.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/repo"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// chartRepository serves the built-in chart as a classic Helm repository (index.yaml and the
// archive, as `helm repo index` lays them out), answering 503 Service Unavailable to its
// first unavailable requests.
func chartRepository(t *testing.T, unavailable int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "couchdb-"+helmrelease.BuiltInChartVersion+".tgz"), helmrelease.BuiltInArchive(), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := repo.IndexDirectory(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if requests.Add(1) <= unavailable {
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// repositoryBenchmark is a provisioned benchmark whose chart comes from a repository, with
// the harness answering for its CouchDB.
func repositoryBenchmark(t *testing.T, h *harness, ns, repository, version string) *benchv1.CouchBenchmark {
	t.Helper()
	h.serviceURL = startCouchDBStub(t).URL
	h.allowChartRepository(repository)
	bench := provisionedBenchmark(ns)
	bench.Spec.CouchDB.Provision.Chart = &benchv1.ChartSource{Repository: repository, Name: "couchdb", Version: version}
	create(t, bench)
	adminSecretFor(t, bench)
	h.reconcile(bench) // the finalizer
	return bench
}

// A chart repository that answers 503 twice, as one behind a busy proxy does, costs two
// retries with a backoff and a Warning, not the run.
func TestChartRepositoryUnavailableTwiceIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	bench := repositoryBenchmark(t, h, ns, chartRepository(t, 2), helmrelease.BuiltInChartVersion)

	var delays []time.Duration
	for range 2 {
		res, got := h.reconcile(bench)
		reconciling := meta.FindStatusCondition(got.Status.Conditions, conditionReconciling)
		if got.Status.Phase != benchv1.PhaseRunning || reconciling == nil || reconciling.Reason != reasonRetrying ||
			!strings.Contains(reconciling.Message, "step provision") || !strings.Contains(reconciling.Message, "503 Service Unavailable") {
			t.Fatalf("phase %s, Reconciling %+v; want Running, retrying the provision step after the 503", got.Status.Phase, reconciling)
		}
		delays = append(delays, res.RequeueAfter)
		h.clock.SetTime(h.clock.Now().Add(res.RequeueAfter))
	}
	if delays[0] != minRetryDelay || delays[1] != minRetryDelay {
		t.Errorf("retried after %v; want %s twice (as long as the step took, at least %s)", delays, minRetryDelay, minRetryDelay)
	}
	_, got := h.reconcile(bench)
	if got.Status.Progress.Step != benchv1.StepCluster || got.Status.Phase != benchv1.PhaseRunning {
		t.Fatalf("progress %+v, phase %s; want the chart installed at the third try", got.Status.Progress, got.Status.Phase)
	}
	if evs := drainEvents(h); strings.Count(evs, "Warning Retrying") != 1 || strings.Contains(evs, "Warning ChartFailed") {
		t.Errorf("want one Retrying event for the same failure and no ChartFailed, got:\n%s", evs)
	}
	if got = h.drive(bench, 40); got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
}

// A chart version the repository does not have fails the run at once; a repository that stays
// unavailable fails it once the step has retried for retryTransientFor.
func TestChartFailuresThatDoNotPassFailTheRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unavailable int64
		version     string
		retryFor    time.Duration
		want        []string
	}{
		{"unknown version", 0, "9.9.9", 0, []string{`version "9.9.9" not found`, helmrelease.BuiltInChartVersion}},
		{"repository down", 1 << 30, helmrelease.BuiltInChartVersion, retryTransientFor, []string{"503 Service Unavailable", "still failing after retrying for 5m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			h := newHarness(t)
			bench := repositoryBenchmark(t, h, ns, chartRepository(t, tc.unavailable), tc.version)
			_, got := h.reconcile(bench)
			if tc.retryFor > 0 {
				if got.Status.Phase != benchv1.PhaseRunning {
					t.Fatalf("phase %s at the first failure; want Running, retrying", got.Status.Phase)
				}
				h.clock.SetTime(h.clock.Now().Add(tc.retryFor))
				_, got = h.reconcile(bench)
			}
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
			if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonChartFailed {
				t.Fatalf("phase %s, Stalled %+v; want Failed ChartFailed", got.Status.Phase, stalled)
			}
			for _, want := range tc.want {
				if !strings.Contains(stalled.Message, want) {
					t.Errorf("Stalled message lacks %q:\n%s", want, stalled.Message)
				}
			}
		})
	}
}

// anotherWriter is the operator's client with another writer in the way: just before the
// operator's first update of an object (its status, or a ConfigMap), the other writer changes
// it, so that the operator's update is refused as a real API server refuses it.
type anotherWriter struct {
	client.Client
	mu      sync.Mutex
	changed map[string]bool
}

// change makes the other writer's change to obj, once per object: a label.
func (w *anotherWriter) change(ctx context.Context, obj client.Object) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(obj).String()
	if w.changed[key] {
		return nil
	}
	w.changed[key] = true
	theirs := obj.DeepCopyObject().(client.Object)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), theirs); err != nil {
		return err
	}
	theirs.SetLabels(map[string]string{"changed-by": "another-writer"})
	return env.Client.Update(ctx, theirs)
}

func (w *anotherWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := w.change(ctx, obj); err != nil {
		return err
	}
	return w.Client.Update(ctx, obj, opts...)
}

func (w *anotherWriter) Status() client.SubResourceWriter {
	return statusWriter{SubResourceWriter: w.Client.Status(), w: w}
}

type statusWriter struct {
	client.SubResourceWriter
	w *anotherWriter
}

func (s statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.w.change(ctx, obj); err != nil {
		return err
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// logLines keeps what a logger was given, info and errors apart.
type logLines struct {
	mu            sync.Mutex
	infos, errors []string
}

func (l *logLines) Init(logr.RuntimeInfo)          {}
func (l *logLines) Enabled(int) bool               { return true }
func (l *logLines) WithValues(...any) logr.LogSink { return l }
func (l *logLines) WithName(string) logr.LogSink   { return l }

func (l *logLines) Info(_ int, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.infos = append(l.infos, msg)
}

func (l *logLines) Error(err error, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, msg+": "+err.Error())
}

// Optimistic-lock conflicts, on the benchmark's status and on its results ConfigMap, are
// routine: each reconcile that meets one returns no error (so controller-runtime logs no
// error and no stack trace), logs it at info level, raises no Warning and no ReconcileError
// condition, and asks to run again; the run goes on to succeed.
func TestConflictsAreRetriedQuietly(t *testing.T) {
	ns := env.Namespace(t)
	h := newHarness(t)
	writer := &anotherWriter{Client: h.operator, changed: map[string]bool{}}
	h.r.Client = writer
	lines := &logLines{}
	h.logger = logr.New(lines)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	create(t, bench)

	var got *benchv1.CouchBenchmark
	conflicts := 0
	for range 40 {
		before := len(lines.infos)
		res, stored, err := h.tryReconcile(bench)
		if err != nil {
			t.Fatalf("Reconcile: %v; a conflict is no error", err)
		}
		got = stored
		for _, msg := range lines.infos[before:] {
			if strings.Contains(msg, "changed since it was read") {
				conflicts++
				if res.RequeueAfter <= 0 {
					t.Errorf("a reconcile that met a conflict did not ask to run again")
				}
			}
		}
		if got.Status.Phase == benchv1.PhaseSucceeded || got.Status.Phase == benchv1.PhaseFailed {
			break
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, conditionReconciling); c != nil && c.Reason == reasonReconcileError {
			t.Fatalf("Reconciling %+v: a conflict is no reconcile error", c)
		}
		h.playKubelet(got)
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	results := client.ObjectKey{Namespace: ns, Name: got.Status.ResultsConfigMap}.String()
	if !writer.changed[client.ObjectKeyFromObject(bench).String()] || !writer.changed[results] || conflicts < 2 {
		t.Errorf("conflicts logged %d, objects changed by the other writer %v; want the status and the results ConfigMap's", conflicts, writer.changed)
	}
	if len(lines.errors) > 0 {
		t.Errorf("errors logged: %q", lines.errors)
	}
	if evs := drainEvents(h); strings.Contains(evs, "Warning") {
		t.Errorf("Warning events for conflicts:\n%s", evs)
	}
}
