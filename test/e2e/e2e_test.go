//go:build e2e

// Package e2e runs couchbench on a real multi-node kind cluster (`make test-e2e`: a control
// plane and four workers, the real scheduler placing every pod) against real Apache CouchDB: the operator
// installed with its own Helm chart provisions CouchDB pods from the real Apache CouchDB chart
// 4.6.2 (the one built into the operator, and the same chart served from inside the cluster,
// as a cluster without internet would serve it) and the images hack/images.sh loads
// (couchdb:3.4.3, pulled or built from the Apache release, the Python and PyPy presets' images, k6); the
// "existing CouchDB" is the same chart installed by the suite.
// These tests check behaviour, never speed.
//
// Side by side: a test that changes what every other test relies on (the operator reinstalled
// or its pod deleted, a node stopped or tainted, the existing CouchDB's CPU cut) or asserts where
// the scheduler put pods (it needs the cluster's room to itself) runs alone; the others call
// t.Parallel and run together once those are done (go test -parallel, hack/e2e.sh), each on
// objects of its own names. The cluster's room bounds them: every runner and k6 pod asks for
// its CPU (500m by default) and a run fails when the scheduler finds no node for one.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/results"
)

const (
	operatorNamespace = "couchbench-system"
	namespace         = "couchbench-e2e"
)

var (
	c        client.Client
	releases *helmrelease.Manager
	tag      = envOr("E2E_IMAGE_TAG", "e2e")
	// k6Image is the k6 image hack/images.sh builds and loads.
	k6Image = "couchbench/k6:" + tag
	// operatorChart is the operator's chart in this checkout.
	operatorChart string
	// couchbenchBinary is `couchbench`, built from this checkout, for `couchbench report`.
	couchbenchBinary string
)

func envOr(k, v string) string {
	if s := os.Getenv(k); s != "" {
		return s
	}
	return v
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "couchbench-e2e-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := setUp(dir); err != nil {
		return 0, err
	}
	code := m.Run()
	logManagerMemory()
	return code, nil
}

// logManagerMemory prints the manager pod's memory after the suite, as the kubelet reports it
// (/stats/summary through the API server's node proxy): the operator's own RSS, in a real
// pod, after every benchmark of the suite (docs/benchmarks.md records it). A figure, not a
// check: memory targets live in the benchmarks.
func logManagerMemory() {
	ctx := context.Background()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "couchbench-operator"}); err != nil ||
		len(pods.Items) == 0 {
		fmt.Fprintf(os.Stderr, "manager memory: no manager pod (%v)\n", err)
		return
	}
	pod := pods.Items[0]
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager memory:", err)
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager memory:", err)
		return
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", pod.Spec.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager memory: reading the kubelet's summary:", err)
		return
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Memory struct {
				RSSBytes, WorkingSetBytes uint64
			} `json:"memory"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(data, &summary); err != nil {
		fmt.Fprintln(os.Stderr, "manager memory:", err)
		return
	}
	for _, p := range summary.Pods {
		if p.PodRef.Name == pod.Name && p.PodRef.Namespace == pod.Namespace {
			fmt.Fprintf(os.Stderr, "manager memory: pod %s after the suite: RSS %.1f MiB, working set %.1f MiB (kubelet /stats/summary)\n",
				pod.Name, float64(p.Memory.RSSBytes)/(1<<20), float64(p.Memory.WorkingSetBytes)/(1<<20))
		}
	}
}

// setUp installs the operator with its chart, builds `couchbench`, and makes the chart
// sources and the existing CouchDB the tests use.
func setUp(dir string) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(benchv1.AddToScheme(scheme))
	if c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	ctx := context.Background()
	for _, ns := range []string{operatorNamespace, namespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	couchbenchBinary = filepath.Join(dir, "couchbench")
	build := exec.Command("go", "build", "-o", couchbenchBinary, "./cmd/couchbench")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building couchbench: %w", err)
	}
	if releases, err = helmrelease.New(cfg, filepath.Join(dir, "charts"), ctrl.Log.WithName("helm"), helmrelease.Options{}); err != nil {
		return err
	}
	operatorChart = filepath.Join(root, "charts", "couchbench-operator")
	if err := installOperator(ctx); err != nil {
		return err
	}
	// The existing CouchDB takes the longest to be ready: it starts while the rest is made.
	existing := make(chan error, 1)
	go func() { existing <- installExistingCouchDB(ctx) }()
	err = serveCharts(ctx)
	if err == nil {
		if err = installMonitoring(ctx); err != nil {
			err = fmt.Errorf("installing Prometheus and Alertmanager: %w", err)
		}
	}
	if err == nil {
		err = waitAvailable(ctx, operatorNamespace, operatorDeployment)
	}
	if err == nil {
		err = waitAvailable(ctx, namespace, chartRepository)
	}
	return errors.Join(err, <-existing)
}

// installOperator installs the operator chart afresh, so that a cluster kept from an earlier
// run (kind's is) tests this checkout: a release left by an earlier run is uninstalled rather
// than kept. The chart installs and upgrades the CRDs from its templates and keeps them on
// uninstall; CRDs it did not install (a cluster kept from before it did) are handed to the
// release first, as docs/gitops.md tells a user upgrading from chart 0.1.0. With
// watchNamespaces the install is namespaced (the chart's watchNamespaces); they must exist.
func installOperator(ctx context.Context, watchNamespaces ...string) error {
	for _, name := range []string{"couchbenchmarks.bench.couchbench.io", "couchbenchmarkschedules.bench.couchbench.io"} {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName(name)
		crd.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm"})
		crd.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "couchbench", "meta.helm.sh/release-namespace": operatorNamespace})
		patch, err := crd.MarshalJSON()
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("handing CRD %s to the release: %w", name, err)
		}
	}
	if err := releases.Uninstall(ctx, operatorNamespace, "couchbench"); err != nil {
		return err
	}
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), "the earlier operator deployment is still there"
	}); err != nil {
		return err
	}
	// The k6 image is set once, on the operator, as a cluster without internet does: no
	// benchmark of the suite names one. Leader election stays on, the chart's default: a
	// deleted manager pod's successor takes the Lease it gives back.
	// The suite's chart repositories and ConfigMap charts are allowed, as an installer would
	// allow theirs (docs/security.md); no other source is.
	// It reads CouchDB pods' CPU time, as an installer who opts in would (docs/security.md).
	values := map[string]any{"image": map[string]any{"repository": "couchbench/manager", "tag": tag},
		"k6": map[string]any{"image": k6Image}, "logLevel": "debug", "cpuCost": map[string]any{"kubernetes": true},
		"chartSources": map[string]any{"configMaps": true, "repositories": []any{
			fmt.Sprintf("http://%s.%s.svc:8080", chartRepository, namespace), fmt.Sprintf("http://%s.%s.svc:8080", flakyChartRepository, namespace)}}}
	if len(watchNamespaces) > 0 {
		values["watchNamespaces"] = watchNamespaces
	}
	if st, err := releases.Install(ctx, operatorNamespace, "couchbench", helmrelease.ChartRef{Path: operatorChart}, values, nil); err != nil {
		return fmt.Errorf("installing the operator chart: %w (status %+v)", err, st)
	}
	return nil
}

func waitAvailable(ctx context.Context, ns, name string) error {
	return poll(ctx, 5*time.Minute, func() (bool, string) {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas >= 1, fmt.Sprintf("deployment %s/%s: %d available", ns, name, d.Status.AvailableReplicas)
	})
}

// clientset is a client-go clientset of the suite's cluster, with its config, for what the
// controller-runtime client does not do (a pod's log, exec).
func clientset(t *testing.T) (*rest.Config, *kubernetes.Clientset) {
	t.Helper()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cs
}

// podLog is the log of a container of a pod.
func podLog(t *testing.T, ns, pod, container string) string {
	t.Helper()
	_, cs := clientset(t)
	stream, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(context.Background())
	if err != nil {
		t.Fatalf("the log of %s in pod %s/%s: %v", container, ns, pod, err)
	}
	defer func() { _ = stream.Close() }()
	data, err := io.ReadAll(stream)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// poll calls check every 2 s until it is true or the limit is reached. A limit only stops a
// test that hangs; none is a performance assertion.
func poll(ctx context.Context, limit time.Duration, check func() (bool, string)) error {
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := check()
		if ok {
			return nil
		}
		last = state
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return fmt.Errorf("not done after %s: %s", limit, last)
}

// start creates the benchmark after removing one of the same name left by an earlier run
// on this cluster, and removes it again when the test ends.
func start(t *testing.T, b *benchv1.CouchBenchmark) {
	t.Helper()
	if err := removeBenchmark(b); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeBenchmark(b); err != nil {
			t.Error(err)
		}
	})
}

// removeBenchmark deletes the benchmark with everything it owns and waits until it is gone.
func removeBenchmark(b *benchv1.CouchBenchmark) error {
	ctx := context.Background()
	err := c.Delete(ctx, b.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return poll(ctx, 3*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(b), &benchv1.CouchBenchmark{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%s still there: %v", b.Name, err)
	})
}

// createSchedule creates the schedule after removing one of the same name left by an earlier
// run on this cluster, and removes it with its runs when the test ends.
func createSchedule(t *testing.T, s *benchv1.CouchBenchmarkSchedule) {
	t.Helper()
	removeSchedule(s)
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeSchedule(s) })
}

// removeSchedule deletes the schedule with its runs and waits until it is gone.
func removeSchedule(s *benchv1.CouchBenchmarkSchedule) {
	ctx := context.Background()
	_ = c.Delete(ctx, s.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground))
	_ = poll(ctx, 3*time.Minute, func() (bool, string) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(s), &benchv1.CouchBenchmarkSchedule{})), "schedule still there"
	})
}

// waitForStep waits until the run is at step (of any query server).
func waitForStep(t *testing.T, b *benchv1.CouchBenchmark, step benchv1.Step) *benchv1.CouchBenchmark {
	t.Helper()
	var got *benchv1.CouchBenchmark
	if err := poll(context.Background(), 10*time.Minute, func() (bool, string) {
		got = get(t, b)
		if got.Status.Phase == benchv1.PhaseFailed {
			t.Fatalf("the run failed before step %s: %+v", step, got.Status.Conditions)
		}
		p := got.Status.Progress
		return p != nil && p.Step == step, fmt.Sprintf("progress %+v", p)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func get(t *testing.T, b *benchv1.CouchBenchmark) *benchv1.CouchBenchmark {
	t.Helper()
	var got benchv1.CouchBenchmark
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func waitPhase(t *testing.T, b *benchv1.CouchBenchmark, limit time.Duration) *benchv1.CouchBenchmark {
	t.Helper()
	var got *benchv1.CouchBenchmark
	err := poll(context.Background(), limit, func() (bool, string) {
		got = get(t, b)
		done := got.Status.Phase == benchv1.PhaseSucceeded || got.Status.Phase == benchv1.PhaseFailed
		return done, fmt.Sprintf("phase %s progress %+v conditions %+v", got.Status.Phase, got.Status.Progress, got.Status.Conditions)
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// mustSucceed waits for the run's end and fails the test unless it succeeded.
func mustSucceed(t *testing.T, b *benchv1.CouchBenchmark, limit time.Duration) *benchv1.CouchBenchmark {
	t.Helper()
	got := waitPhase(t, b, limit)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s: %+v", got.Status.Phase, got.Status.Conditions)
	}
	return got
}

// jobsPerStep counts the benchmark's Jobs per arm and step.
func jobsPerStep(t *testing.T, name string) map[string]int {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(namespace), client.MatchingLabels{builders.LabelBenchmark: name}); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, j := range jobs.Items {
		n[j.Labels[builders.LabelQueryServer]+"/"+j.Labels[builders.LabelStep]]++
	}
	return n
}

// report runs `couchbench report` on the benchmark's stored results, given as `kubectl get
// cm -l bench.couchbench.io/results-of=NAME -o json` gives them, and returns its output and
// the documents it read.
func report(t *testing.T, b *benchv1.CouchBenchmark, format string) (string, []*results.Document) {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(context.Background(), &list, client.InNamespace(b.Namespace), client.MatchingLabels{benchv1.LabelResultsOf: b.Name}); err != nil {
		t.Fatal(err)
	}
	list.APIVersion, list.Kind = "v1", "List"
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(couchbenchBinary, "report", "--format", format, "-")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(data), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("couchbench report: %v\n%s", err, stderr.String())
	}
	docs, err := results.ReadDocuments(data, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), docs
}

// resultsMarkdown is the operator's rendered results.md.
func resultsMarkdown(t *testing.T, b *benchv1.CouchBenchmark) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: b.Namespace, Name: get(t, b).Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[builders.ResultsMarkdownKey]
}

// gone waits until no object of the list type with the labels is left in the namespace.
func gone(t *testing.T, what string, list client.ObjectList, labels map[string]string) {
	t.Helper()
	if err := poll(context.Background(), 3*time.Minute, func() (bool, string) {
		if err := c.List(context.Background(), list, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
			return false, err.Error()
		}
		n := len(itemsOf(list))
		return n == 0, fmt.Sprintf("%d %s left", n, what)
	}); err != nil {
		t.Error(err)
	}
}

func itemsOf(list client.ObjectList) []runtime.Object {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	return items
}

// deletePods deletes the pods with the labels and says how many it deleted.
func deletePods(t *testing.T, ns string, labels map[string]string) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := c.Delete(context.Background(), &pods.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	return len(pods.Items)
}

// eventsOf are the notes of the events with reason about this benchmark (not a deleted
// namesake of an earlier run).
func eventsOf(t *testing.T, b *benchv1.CouchBenchmark, reason string) []string {
	t.Helper()
	return eventNotes(t, b.Namespace, get(t, b).UID, reason)
}

// eventNotes are the notes of the events with reason about the object of uid.
func eventNotes(t *testing.T, namespace string, uid types.UID, reason string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}
