package charts_test

// The chart's CRDs upgrade with it: `helm upgrade` from the chart before they moved into
// templates (0.1.0, as main had it at previousChartCommit, its CRDs in crds/) to this one,
// with the Helm SDK against a real kube-apiserver (envtest, started here without CRDs: Helm
// installs them), adds the new fields to the schema without losing objects or their status.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/testenv"
)

// previousChartCommit is main before the chart's CRDs moved into its templates.
const previousChartCommit = "a865369"

const (
	releaseName      = "couchbench"
	releaseNamespace = "couchbench-system"
)

func TestChartUpgradeUpdatesTheCRDs(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which provides kube-apiserver and etcd")
	}
	apiServer := &envtest.Environment{}
	cfg, err := apiServer.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = apiServer.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(benchv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	helm := helmConfig(t, testenv.Kubeconfig(t, cfg))

	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = releaseName, releaseNamespace, true
	if _, err := install.RunWithContext(ctx, loadChart(t, previousChart(t)), nil); err != nil {
		t.Fatalf("installing chart 0.1.0: %v", err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		t.Fatal(err)
	}
	// A schedule and a finished run under the old CRDs, with status; status.message is a field
	// the old schema does not have, and is pruned.
	schedule := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "nightly"},
		Spec: benchv1.CouchBenchmarkScheduleSpec{Schedule: "0 2 * * *", Template: benchv1.BenchmarkTemplate{Spec: benchmarkSpec()}}}
	run := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "nightly-202611280200"}, Spec: benchmarkSpec()}
	for _, obj := range []client.Object{schedule, run} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	lastRun := metav1.NewTime(time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
	schedule.Status.LastScheduleTime = &lastRun
	meta.SetStatusCondition(&schedule.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "next run at 2026-11-29T02:00:00Z"})
	run.Status.Phase, run.Status.Message = benchv1.PhaseFailed, "failed in step index of query server js: NodeLost"
	for _, obj := range []client.Object{schedule, run} {
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if got := getRun(t, c, run); got.Status.Message != "" || got.Status.Phase != benchv1.PhaseFailed {
		t.Fatalf("under chart 0.1.0's CRD: phase %q message %q; want Failed, the message pruned (the field is new)", got.Status.Phase, got.Status.Message)
	}

	// Chart 0.1.0 installed its CRDs from crds/, outside the release: an upgrade that brings
	// them in templates must be told to take them over.
	current := loadChart(t, filepath.Join(testenv.ModuleRoot(t), "charts", "couchbench-operator"))
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace = releaseNamespace
	if _, err := upgrade.RunWithContext(ctx, releaseName, current, nil); err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
		t.Fatalf("an upgrade without --take-ownership: %v; want Helm's refusal to adopt the CRDs", err)
	}
	upgrade.TakeOwnership = true
	if _, err := upgrade.RunWithContext(ctx, releaseName, current, nil); err != nil {
		t.Fatalf("helm upgrade --take-ownership: %v", err)
	}

	for _, name := range []string{"couchbenchmarks.bench.couchbench.io", "couchbenchmarkschedules.bench.couchbench.io"} {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Annotations["helm.sh/resource-policy"] != "keep" || crd.Annotations["meta.helm.sh/release-name"] != releaseName {
			t.Errorf("CRD %s annotations %v: want it the release's, kept on uninstall", name, crd.Annotations)
		}
	}
	// The objects and their status are there; the new fields are kept.
	var gotSchedule benchv1.CouchBenchmarkSchedule
	if err := c.Get(ctx, client.ObjectKeyFromObject(schedule), &gotSchedule); err != nil {
		t.Fatal(err)
	}
	if gotSchedule.Status.LastScheduleTime == nil || !gotSchedule.Status.LastScheduleTime.Equal(&lastRun) ||
		!meta.IsStatusConditionTrue(gotSchedule.Status.Conditions, "Ready") {
		t.Errorf("the schedule's status after the upgrade: %+v", gotSchedule.Status)
	}
	gotSchedule.Spec.HistoryRetentionPolicy.WhenDeleted = benchv1.RetentionDelete
	if err := c.Update(ctx, &gotSchedule); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(schedule), &gotSchedule); err != nil || gotSchedule.Spec.HistoryRetentionPolicy.WhenDeleted != benchv1.RetentionDelete {
		t.Errorf("spec.historyRetentionPolicy after the upgrade: %+v (%v); want Delete kept", gotSchedule.Spec.HistoryRetentionPolicy, err)
	}
	got := getRun(t, c, run)
	got.Status.Message = "failed in step index of query server js: NodeLost"
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got = getRun(t, c, run); got.Status.Message == "" || got.Status.Phase != benchv1.PhaseFailed {
		t.Errorf("the run's status after the upgrade: phase %q message %q; want Failed, the message kept", got.Status.Phase, got.Status.Message)
	}

	// Uninstalled, the release leaves the CRDs, and so every benchmark and schedule.
	if _, err := action.NewUninstall(helm).Run(releaseName); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(run), &benchv1.CouchBenchmark{}); err != nil {
		t.Errorf("the run after helm uninstall: %v", err)
	}
}

func getRun(t *testing.T, c client.Client, run *benchv1.CouchBenchmark) *benchv1.CouchBenchmark {
	t.Helper()
	var got benchv1.CouchBenchmark
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(run), &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func benchmarkSpec() benchv1.CouchBenchmarkSpec {
	return benchv1.CouchBenchmarkSpec{
		CouchDB:      benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{ClusterSize: 1}},
		QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
		Workloads:    benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}},
	}
}

// previousChart is the operator's chart at previousChartCommit, from this repository's history.
func previousChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git archive %s charts/couchbench-operator | tar -x -C %s", previousChartCommit, dir))
	archive.Dir = testenv.ModuleRoot(t)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("the chart at %s (needs this repository's history): %v\n%s", previousChartCommit, err, out)
	}
	return filepath.Join(dir, "charts", "couchbench-operator")
}

func loadChart(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// helmConfig is Helm's action configuration for the release namespace, through kubeconfig.
func helmConfig(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	namespace := releaseNamespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, releaseNamespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}
