package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/couchbench/couchbench/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

const testUUID = "0123456789abcdef0123456789abcdef"

// newManager makes a Manager that acts as the test's administrator (not confined) and may
// fetch charts from repositories and take archives.
func newManager(t *testing.T, cacheDir string, repositories ...string) *Manager {
	t.Helper()
	if cacheDir == "" {
		cacheDir = t.TempDir()
	}
	m, err := New(env.Config, cacheDir, testr.New(t), Options{Sources: Sources{Repositories: repositories, Archives: true}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// benchValues are values as the operator passes them: the Apache chart's names, an existing
// credentials Secret with its own keys, and API types that must survive normalisation.
func benchValues() map[string]any {
	return map[string]any{
		"clusterSize":         2,
		"createAdminSecret":   false,
		"extraSecretName":     "bench-credentials",
		"adminUsernameKey":    "user",
		"adminPasswordKey":    "password",
		"cookieAuthSecretKey": "cookie-secret",
		"erlangCookieKey":     "erlang-cookie",
		"image":               map[string]any{"repository": "couchdb", "tag": "3.4.3", "pullPolicy": "IfNotPresent"},
		"couchdbConfig": map[string]any{
			"couchdb": map[string]any{"uuid": testUUID, "js_engine": "quickjs", "max_dbs_open": 1000},
		},
		"extraEnv": []corev1.EnvVar{{Name: "COUCHBENCH_RUN", Value: "run-1"}},
		"resources": corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

// releaseRecords lists Helm's storage Secrets of a release: one per revision.
func releaseRecords(t *testing.T, ns, name string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func mustGet(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("%T %s/%s: %v", obj, ns, name, err)
	}
}

func TestInstallStatusUninstall(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t, "")
	ns := env.Namespace(t)
	ref := ChartRef{} // the chart built into the operator
	labels := map[string]string{"couchbench.io/benchmark": "views-small"}

	st, err := m.Status(ctx, ns, "bench")
	if err != nil || st.State != NotInstalled {
		t.Fatalf("Status before install = %+v, %v; want NotInstalled", st, err)
	}

	st, err = m.Install(ctx, ns, "bench", ref, benchValues(), labels)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	want := Status{State: Deployed, Description: "Install complete", ChartVersion: BuiltInChartVersion, AppVersion: "3.5.0"}
	if st != want {
		t.Fatalf("Install = %+v, want %+v", st, want)
	}

	var sts appsv1.StatefulSet
	mustGet(t, ns, "bench-couchdb", &sts)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want clusterSize 2", sts.Spec.Replicas)
	}
	if sts.Spec.ServiceName != "bench-couchdb" {
		t.Errorf("serviceName = %q", sts.Spec.ServiceName)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if c.Image != "couchdb:3.4.3" {
		t.Errorf("image = %q", c.Image)
	}
	if got := c.Resources.Requests.Memory().String(); got != "256Mi" {
		t.Errorf("memory request = %s, want 256Mi", got)
	}
	envByName := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		envByName[e.Name] = e
	}
	for name, key := range map[string]string{
		"COUCHDB_USER": "user", "COUCHDB_PASSWORD": "password", "COUCHDB_SECRET": "cookie-secret", "COUCHDB_ERLANG_COOKIE": "erlang-cookie",
	} {
		from := envByName[name].ValueFrom
		if from == nil || from.SecretKeyRef == nil || from.SecretKeyRef.Name != "bench-credentials" || from.SecretKeyRef.Key != key {
			t.Errorf("%s = %+v, want secret bench-credentials key %s", name, envByName[name], key)
		}
	}
	if envByName["COUCHBENCH_RUN"].Value != "run-1" {
		t.Errorf("extraEnv missing: env = %+v", c.Env)
	}
	var dataVolume bool
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "database-storage" && v.EmptyDir != nil {
			dataVolume = true
		}
	}
	if !dataVolume || len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("persistentVolume disabled: want an emptyDir database-storage and no claim templates, got %+v", sts.Spec.Template.Spec.Volumes)
	}

	var headless, svc corev1.Service
	mustGet(t, ns, "bench-couchdb", &headless)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service clusterIP = %q", headless.Spec.ClusterIP)
	}
	mustGet(t, ns, "bench-svc-couchdb", &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 5984 {
		t.Errorf("client Service ports = %+v, want 5984", svc.Spec.Ports)
	}
	if svc.Spec.Selector["app"] != "couchdb" || svc.Spec.Selector["release"] != "bench" {
		t.Errorf("client Service selector = %v", svc.Spec.Selector)
	}

	var cm corev1.ConfigMap
	mustGet(t, ns, "bench-couchdb", &cm)
	ini := cm.Data["inifile"]
	for _, line := range []string{"[couchdb]", "uuid = " + testUUID, "js_engine = quickjs", "max_dbs_open = 1000", "[chttpd]", "bind_address = any"} {
		if !strings.Contains(ini, line+"\n") {
			t.Errorf("inifile lacks %q:\n%s", line, ini)
		}
	}

	// createAdminSecret: false -> the chart makes no Secret of its own.
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench-couchdb"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Secret bench-couchdb with createAdminSecret=false: err = %v, want NotFound", err)
	}

	records := releaseRecords(t, ns, "bench")
	if len(records) != 1 || records[0].Labels["couchbench.io/benchmark"] != "views-small" || records[0].Labels["status"] != "deployed" {
		t.Fatalf("release records = %d, labels %v; want one, deployed, labelled", len(records), records[0].Labels)
	}

	// Idempotent: a second install of the same release changes nothing, whatever the values.
	other := benchValues()
	other["clusterSize"] = 5
	st, err = m.Install(ctx, ns, "bench", ref, other, labels)
	if err != nil || st.State != Deployed {
		t.Fatalf("second Install = %+v, %v; want Deployed, nil", st, err)
	}
	if n := len(releaseRecords(t, ns, "bench")); n != 1 {
		t.Errorf("%d release revisions after a second Install, want 1", n)
	}
	mustGet(t, ns, "bench-couchdb", &sts)
	if *sts.Spec.Replicas != 2 {
		t.Errorf("replicas = %d after a second Install, want 2 (no upgrade)", *sts.Spec.Replicas)
	}

	st, err = m.Status(ctx, ns, "bench")
	if err != nil || st != want {
		t.Fatalf("Status = %+v, %v; want %+v", st, err, want)
	}

	if err := m.Uninstall(ctx, ns, "bench"); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench-couchdb"}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T bench-couchdb after Uninstall: err = %v, want NotFound", obj, err)
		}
	}
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench-svc-couchdb"}, &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Service bench-svc-couchdb after Uninstall: err = %v, want NotFound", err)
	}
	if n := len(releaseRecords(t, ns, "bench")); n != 0 {
		t.Errorf("%d release records after Uninstall, want 0", n)
	}
	st, err = m.Status(ctx, ns, "bench")
	if err != nil || st.State != NotInstalled {
		t.Errorf("Status after Uninstall = %+v, %v; want NotInstalled", st, err)
	}
	if err := m.Uninstall(ctx, ns, "bench"); err != nil {
		t.Errorf("Uninstall of a missing release: %v", err)
	}
	if err := m.Uninstall(ctx, ns, "never-installed"); err != nil {
		t.Errorf("Uninstall of a release never installed: %v", err)
	}
}

func TestInstallWithoutUUID(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t, "")
	ns := env.Namespace(t)
	values := benchValues()
	values["couchdbConfig"] = map[string]any{"couchdb": map[string]any{"js_engine": "quickjs"}}

	st, err := m.Install(ctx, ns, "nouuid", ChartRef{}, values, nil)
	if err == nil || !strings.Contains(err.Error(), "couchdbConfig.couchdb.uuid") {
		t.Fatalf("Install without a uuid: err = %v, want one naming couchdbConfig.couchdb.uuid", err)
	}
	if st.State != NotInstalled {
		t.Errorf("Install without a uuid returned %+v, want NotInstalled", st)
	}
	if errors.Is(err, ErrReleaseFailed) {
		t.Errorf("a render error is not a failed release: %v", err)
	}
	if st, err := m.Status(ctx, ns, "nouuid"); err != nil || st.State != NotInstalled {
		t.Errorf("Status = %+v, %v; want NotInstalled", st, err)
	}
	if n := len(releaseRecords(t, ns, "nouuid")); n != 0 {
		t.Errorf("%d release records, want 0", n)
	}
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nouuid-couchdb"}, &appsv1.StatefulSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet after a failed render: err = %v, want NotFound", err)
	}
}

// A chart that renders but whose objects the API server refuses leaves a Failed release:
// Install reports it (again on every call) until it is uninstalled.
func TestInstallFailedRelease(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t, "")
	ns := env.Namespace(t)
	ref := ChartRef{} // the chart built into the operator
	bad := benchValues()
	bad["clusterSize"] = -1 // the API server refuses negative replicas

	st, err := m.Install(ctx, ns, "broken", ref, bad, nil)
	if !errors.Is(err, ErrReleaseFailed) || st.State != Failed {
		t.Fatalf("Install with clusterSize -1 = %+v, %v; want Failed and ErrReleaseFailed", st, err)
	}
	if !strings.Contains(err.Error(), "replicas") {
		t.Errorf("error %q does not say what the API server refused", err)
	}
	st, err = m.Install(ctx, ns, "broken", ref, benchValues(), nil)
	if !errors.Is(err, ErrReleaseFailed) || st.State != Failed || !strings.Contains(st.Description, "replicas") {
		t.Fatalf("Install over a failed release = %+v, %v; want Failed with Helm's description", st, err)
	}
	if err := m.Uninstall(ctx, ns, "broken"); err != nil {
		t.Fatalf("Uninstall of a failed release: %v", err)
	}
	st, err = m.Install(ctx, ns, "broken", ref, benchValues(), nil)
	if err != nil || st.State != Deployed {
		t.Fatalf("Install after uninstalling the failed release = %+v, %v; want Deployed", st, err)
	}
}

// Concurrent calls: the same release from several goroutines installs once; releases in
// different namespaces install side by side.
func TestConcurrentInstalls(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t, "")
	ref := ChartRef{} // the chart built into the operator
	namespaces := []string{env.Namespace(t), env.Namespace(t), env.Namespace(t)}

	var wg sync.WaitGroup
	errs := make(chan error, 3*len(namespaces))
	for _, ns := range namespaces {
		for range 3 {
			wg.Go(func() {
				st, err := m.Install(ctx, ns, "same", ref, benchValues(), nil)
				if err == nil && st.State != Deployed {
					err = fmt.Errorf("state %s", st.State)
				}
				if err != nil {
					errs <- fmt.Errorf("namespace %s: %w", ns, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, ns := range namespaces {
		if n := len(releaseRecords(t, ns, "same")); n != 1 {
			t.Errorf("namespace %s: %d release records, want 1", ns, n)
		}
	}
}

func TestStateOf(t *testing.T) {
	for status, want := range map[release.Status]State{
		release.StatusDeployed:        Deployed,
		release.StatusPendingInstall:  Pending,
		release.StatusPendingUpgrade:  Pending,
		release.StatusPendingRollback: Pending,
		release.StatusUninstalling:    Pending,
		release.StatusFailed:          Failed,
		release.StatusUnknown:         Failed,
		release.StatusUninstalled:     NotInstalled,
	} {
		if got := stateOf(status); got != want {
			t.Errorf("stateOf(%s) = %s, want %s", status, got, want)
		}
	}
}

func TestKeyedLocksForgetKeys(t *testing.T) {
	var k keyedLocks
	unlock := k.lock("a")
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.lock("a")()
	}()
	k.lock("b")() // another key is not blocked
	unlock()
	<-done
	if len(k.locks) != 0 {
		t.Errorf("%d locks kept after release, want 0", len(k.locks))
	}
}
