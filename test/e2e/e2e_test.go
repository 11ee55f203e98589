//go:build e2e

// Package e2e runs couchbench on a real Kubernetes cluster (kind, or the project's local
// single-node cluster; `make test-e2e` picks): the operator installed with its Helm chart,
// and, as the "existing CouchDB", pouchdb-server — a CouchDB-compatible server from npm, not
// Apache CouchDB (no CouchDB image can be built where CI runs). Its numbers are its own; these
// tests check behaviour, not speed.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

const (
	operatorNamespace = "couchbench-system"
	namespace         = "couchbench-e2e"
	adminPassword     = "e2e-password"
)

var (
	c   client.Client
	tag = envOr("E2E_IMAGE_TAG", "e2e")
)

func envOr(k, v string) string {
	if s := os.Getenv(k); s != "" {
		return s
	}
	return v
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// setUp installs the operator with its chart and starts pouchdb-server.
func setUp() error {
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
	releases, err := helmrelease.New(cfg, filepath.Join(os.TempDir(), "couchbench-e2e-charts"), ctrl.Log.WithName("helm"))
	if err != nil {
		return err
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	st, err := releases.Install(ctx, operatorNamespace, "couchbench", helmrelease.ChartRef{Path: filepath.Join(root, "charts", "couchbench-operator")},
		map[string]any{"image": map[string]any{"repository": "couchbench/manager", "tag": tag}, "leaderElection": false, "logLevel": "debug"}, nil)
	if err != nil {
		return fmt.Errorf("installing the operator chart: %w (status %+v)", err, st)
	}
	for _, obj := range pouchdbObjects() {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := waitAvailable(ctx, operatorNamespace, "couchbench-couchbench"); err != nil {
		return err
	}
	return waitAvailable(ctx, namespace, "pouchdb")
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

// poll calls check every 2 s until it is true or the time is up.
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

func pouchdbObjects() []client.Object {
	labels := map[string]string{"app": "pouchdb"}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "couchdb-admin"},
		StringData: map[string]string{"username": "admin", "password": adminPassword},
	}
	fromSecret := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "couchdb-admin"}, Key: key}}}
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pouchdb"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)},
					Containers: []corev1.Container{{
						Name: "pouchdb", Image: "couchbench/pouchdb-server:" + tag, ImagePullPolicy: corev1.PullIfNotPresent,
						Env:          []corev1.EnvVar{fromSecret("COUCHDB_USER", "username"), fromSecret("COUCHDB_PASSWORD", "password")},
						Ports:        []corev1.ContainerPort{{ContainerPort: 5984}},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/", Port: intstr.FromInt32(5984)}}, PeriodSeconds: 2},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pouchdb"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 5984, TargetPort: intstr.FromInt32(5984)}}},
	}
	return []client.Object{secret, deploy, svc}
}

// benchmark is the e2e benchmark: every workload, small.
func benchmark(name string, documents int64) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB: benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{
				URL: "http://pouchdb." + namespace + ".svc:5984", CredentialsSecret: benchv1.SecretKeys{Name: "couchdb-admin", UsernameKey: "username", PasswordKey: "password"},
			}},
			QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
			Dataset: benchv1.Dataset{Documents: documents, Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}, Seed: 1,
				BatchSize: 500, Concurrency: 2, Shards: 1},
			Workloads: benchv1.Workloads{
				Indexing:  &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin, benchv1.ReducerCustom}, Repetitions: 1, ViewCompaction: benchv1.ViewCompactionAllowed},
				ViewReads: &benchv1.ViewReadsWorkload{Views: []benchv1.ViewReadKind{benchv1.ViewEmitDoc, benchv1.ViewEmitNull, benchv1.ViewEmitNullIncludeDocs}, Repetitions: 2},
				Writes:    &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}, Serial: true},
				Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 4, IterationsPerUser: ptr.To[int32](25),
					Thresholds: []benchv1.Threshold{{Metric: "http_req_failed", Condition: "rate<0.01"}}},
			},
			K6:       benchv1.K6Settings{Image: "couchbench/k6:" + tag, Parallelism: 2},
			Teardown: benchv1.TeardownAlways,
			Timeout:  "20m",
		},
	}
}

// start creates the benchmark after removing one of the same name left by an earlier run
// on this cluster, and removes it again when the test ends.
func start(t *testing.T, b *benchv1.CouchBenchmark) {
	t.Helper()
	ctx := context.Background()
	remove := func() error {
		err := c.Delete(ctx, b.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground))
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return poll(ctx, 2*time.Minute, func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(b), &benchv1.CouchBenchmark{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%s still there: %v", b.Name, err)
		})
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := remove(); err != nil {
			t.Error(err)
		}
	})
}

// waitForStep waits until the run is at step (of any query server).
func waitForStep(t *testing.T, b *benchv1.CouchBenchmark, step string) {
	t.Helper()
	if err := poll(context.Background(), 5*time.Minute, func() (bool, string) {
		p := get(t, b).Status.Progress
		return p != nil && p.Step == step, fmt.Sprintf("progress %+v", p)
	}); err != nil {
		t.Fatal(err)
	}
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

func jobsOf(t *testing.T, name string) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(namespace), client.MatchingLabels{builders.LabelBenchmark: name}); err != nil {
		t.Fatal(err)
	}
	return jobs.Items
}

func TestBenchmarkRunsToResults(t *testing.T) {
	ctx := context.Background()
	b := benchmark("e2e-full", 2000)
	start(t, b)
	got := waitPhase(t, b, 15*time.Minute)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s: %+v", got.Status.Phase, got.Status.Conditions)
	}
	r := got.Status.Results
	if len(r) != 1 || len(r[0].Seeding) != 1 || len(r[0].Indexing) != 2 || len(r[0].ViewReads) != 3 || len(r[0].Writes) != 2 || r[0].Reads == nil {
		t.Fatalf("results %+v", r)
	}
	if r[0].Seeding[0].Documents != 2000 || r[0].Indexing[0].ChangesPerSecond <= 0 || r[0].Reads.Requests != 100 ||
		!r[0].Reads.PercentilesUpperBound || got.Status.ReadP95 == "" || got.Status.BestChangesPerSecond == nil {
		t.Errorf("results %+v, readP95 %q", r, got.Status.ReadP95)
	}
	if !strings.Contains(got.Status.Server, "PouchDB") {
		t.Errorf("server %q: the results must name the server that produced them", got.Status.Server)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: got.Status.ResultsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	md := cm.Data[builders.ResultsMarkdownKey]
	for _, want := range []string{"### Indexing", "### Reads (k6)", "### Writes", "### View reads"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	t.Logf("results.md:\n%s", md)
	// Every Job ran once and left its summary in its pod's termination message.
	perStep := map[string]int{}
	for _, job := range jobsOf(t, b.Name) {
		perStep[job.Labels[builders.LabelStep]]++
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || pods.Items[0].Status.ContainerStatuses[0].State.Terminated == nil ||
			pods.Items[0].Status.ContainerStatuses[0].State.Terminated.Message == "" {
			t.Errorf("Job %s: pods %d, want one with a termination message", job.Name, len(pods.Items))
		}
	}
	if fmt.Sprint(perStep) != "map[index:1 reads:2 seed:1 views:1 writes:1]" {
		t.Errorf("jobs per step %v", perStep)
	}

	// Deleting the benchmark leaves nothing behind.
	if err := c.Delete(ctx, got, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		n := len(jobsOf(t, b.Name))
		var cms corev1.ConfigMapList
		_ = c.List(ctx, &cms, client.InNamespace(namespace), client.MatchingLabels{builders.LabelBenchmark: b.Name})
		return n == 0 && len(cms.Items) == 0, fmt.Sprintf("%d jobs, %d configmaps left", n, len(cms.Items))
	}); err != nil {
		t.Error(err)
	}
}

func TestDeletingMidRunCleansUp(t *testing.T) {
	ctx := context.Background()
	b := benchmark("e2e-delete", 20000)
	start(t, b)
	waitForStep(t, b, "index")
	if err := c.Delete(ctx, b, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(b), &benchv1.CouchBenchmark{})
		n := len(jobsOf(t, b.Name))
		return apierrors.IsNotFound(err) && n == 0, fmt.Sprintf("benchmark: %v, %d jobs", err, n)
	}); err != nil {
		t.Error(err)
	}
}

func TestManagerRestartMidRunCompletesWithoutDuplicates(t *testing.T) {
	ctx := context.Background()
	b := benchmark("e2e-restart", 5000)
	start(t, b)
	waitForStep(t, b, "index")
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "couchbench-operator"}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := c.Delete(ctx, &pods.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("deleted %d manager pod(s) during %s", len(pods.Items), get(t, b).Status.Progress.Step)
	got := waitPhase(t, b, 15*time.Minute)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s after the restart: %+v", got.Status.Phase, got.Status.Conditions)
	}
	perStep := map[string]int{}
	for _, job := range jobsOf(t, b.Name) {
		perStep[job.Labels[builders.LabelStep]]++
	}
	if fmt.Sprint(perStep) != "map[index:1 reads:2 seed:1 views:1 writes:1]" {
		t.Errorf("jobs per step after the restart %v; want no duplicates", perStep)
	}
}
