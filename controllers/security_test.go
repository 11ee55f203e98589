package controllers

// A benchmark can do no more than its author could. These tests act as a namespace's editor
// (the built-in edit role and the CouchBenchmark editor role; never as the operator): the editor makes a chart ConfigMap and a CouchBenchmark, and the
// operator (the harness's reconciler, as the operator's service account with the generated
// RBAC) installs it with the real Helm SDK, confined. They talk to envtest's kube-apiserver
// only; no CouchDB is involved (the operator contacts none).

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
)

var editorRoleOnce sync.Once

// editorIn is a client acting as a user who may edit namespace ns and nothing else: bound
// there to the built-in edit role and the CouchBenchmark editor role
// (config/rbac/couchbenchmark_editor_role.yaml).
func editorIn(t *testing.T, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	editorRoleOnce.Do(func() {
		data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "config", "rbac", "couchbenchmark_editor_role.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(data, &role); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	})
	// envtest runs no controller-manager, whose controller fills the aggregated edit role
	// (and aggregates the editor role into it): bind what edit aggregates, the bootstrap
	// roles system:aggregate-to-edit and -view, and the editor role.
	c := userIn(t, ns, "editor-of-"+ns, "system:aggregate-to-edit", "system:aggregate-to-view", "couchbenchmark-editor-role")
	// The API server's RBAC authorizer learns of new bindings from its informers, a moment
	// after they are made (longer on a loaded machine): wait until it grants what they grant.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return mayCreate(t, c, ns, "bench.couchbench.io", "couchbenchmarks"), nil
	})
	if err != nil {
		t.Fatal("the editor may not create CouchBenchmarks a minute after the bindings were made")
	}
	return c
}

// userIn is a client acting as user, bound in ns to the ClusterRoles roles.
func userIn(t *testing.T, ns, user string, roles ...string) client.Client {
	t.Helper()
	for _, role := range roles {
		create(t, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mayCreate asks the API server whether c's identity may create resource in ns.
func mayCreate(t *testing.T, c client.Client, ns, group, resource string) bool {
	t.Helper()
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: "create"}}}
	if err := c.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

// chartArchive packages a chart of templates (and values) as `helm package` would.
func packageChart(t *testing.T, templates map[string]string) []byte {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "escalate", Version: "1.0.0"}}
	for name, text := range templates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: []byte(text)})
	}
	dir := t.TempDir()
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A namespace editor tries, through a CouchBenchmark, what the edit role does not let them do
// themselves. Each try fails the run with ChartRefused naming the object and the rule, or, for
// a source the installer did not allow, stalls it with ChartNotAllowed before any request;
// nothing is created anywhere: in the namespace, in kube-system, in another namespace, or
// cluster-wide.
func TestSecurityEditorCannotEscalateThroughABenchmark(t *testing.T) {
	ctx := context.Background()
	elsewhere := env.Namespace(t)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-secret"},
		StringData: map[string]string{"token": "s3cret"}})
	configMap := func(name, namespace string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, namespace)
	}
	binding := func(kind, name string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: " + name +
			"\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
			"subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}]\n"
	}
	for _, tc := range []struct {
		name string
		// templates make a chart the editor puts in a ConfigMap; none: the built-in chart.
		templates map[string]string
		values    string
		// refused are words of the Stalled message.
		refused []string
	}{{
		name:      "a template with another namespace",
		templates: map[string]string{"a.yaml": configMap("escaped", "kube-system")},
		refused:   []string{"ConfigMap kube-system/escaped", "only in its own namespace"},
	}, {
		name:      "a template with a namespace of another tenant",
		templates: map[string]string{"a.yaml": configMap("escaped", elsewhere)},
		refused:   []string{"ConfigMap " + elsewhere + "/escaped", "only in its own namespace"},
	}, {
		name:      "a ClusterRoleBinding",
		templates: map[string]string{"a.yaml": binding("ClusterRoleBinding", "escalated")},
		refused:   []string{"ClusterRoleBinding", " escalated:", "may create only"},
	}, {
		name:      "a RoleBinding to cluster-admin",
		templates: map[string]string{"a.yaml": binding("RoleBinding", "escalated")},
		refused:   []string{"RoleBinding", " escalated:", "may create only"},
	}, {
		name: "a lookup of a Secret elsewhere",
		templates: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n" +
			"  secret: {{ lookup \"v1\" \"Secret\" \"kube-system\" \"cluster-secret\" | toJson | quote }}\n"},
		refused: []string{"forbidden", "system:serviceaccount:", builders.InstallerName, "kube-system"},
	}, {
		name:    "values that run the pods as another ServiceAccount",
		values:  `{"serviceAccount": {"enabled": true, "create": false, "name": "couchbench-installer"}}`,
		refused: []string{"StatefulSet", `"couchbench-installer"`, "no ServiceAccount but one the release makes"},
	}, {
		name:    "values that make the pods privileged",
		values:  `{"containerSecurityContext": {"privileged": true}}`,
		refused: []string{"StatefulSet", "baseline", "privileged"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			editor := editorIn(t, ns)
			if mayCreate(t, editor, "kube-system", "", "configmaps") || mayCreate(t, editor, "", "rbac.authorization.k8s.io", "clusterrolebindings") {
				t.Fatal("the editor may do by themselves what the chart tries")
			}
			h := newHarness(t)
			bench := provisionedBenchmark(ns)
			if tc.templates != nil {
				if err := editor.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart"},
					BinaryData: map[string][]byte{"chart.tgz": packageChart(t, tc.templates)}}); err != nil {
					t.Fatal(err)
				}
				bench.Spec.CouchDB.Provision.Chart = &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: "chart"}}
			}
			if tc.values != "" {
				bench.Spec.CouchDB.Provision.Values = &apiextensionsv1.JSON{Raw: []byte(tc.values)}
			}
			if err := editor.Create(ctx, bench); err != nil {
				t.Fatal(err)
			}
			got := h.drive(bench, 10)
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
			if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonChartRefused {
				t.Fatalf("phase %s, Stalled %+v; want Failed with ChartRefused", got.Status.Phase, stalled)
			}
			for _, want := range tc.refused {
				if !strings.Contains(stalled.Message, want) {
					t.Errorf("the refusal %q does not say %q", stalled.Message, want)
				}
			}
			nothingCreated(t, ns, elsewhere, builders.ReleaseName(got, "js"))
		})
	}
}

// nothingCreated fails the test if a refused release left anything: the escaping objects the
// charts above try, anywhere, and Helm's record and the release's objects in ns.
func nothingCreated(t *testing.T, ns, elsewhere, release string) {
	t.Helper()
	ctx := context.Background()
	for _, where := range []string{ns, "kube-system", elsewhere, "default"} {
		for _, name := range []string{"escaped", "stolen"} {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: where, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap %s/%s: %v; want none", where, name, err)
			}
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: where, Name: "escalated"}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("RoleBinding %s/escalated: %v; want none", where, err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "escalated"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding escalated: %v; want none", err)
	}
	var secrets corev1.SecretList
	if err := env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil || len(secrets.Items) > 0 {
		t.Errorf("Helm's records in %s: %d, %v; want none", ns, len(secrets.Items), err)
	}
	var services corev1.ServiceList
	if err := env.Client.List(ctx, &services, client.InNamespace(ns), client.MatchingLabels{"release": release}); err != nil || len(services.Items) > 0 {
		t.Errorf("the release's Services: %d, %v; want none", len(services.Items), err)
	}
}

// A chart from a source the installer did not allow (a repository, a ConfigMap when
// ConfigMaps are not allowed) stalls the run before any request, saying which value of the
// operator's chart allows it; the repository is never asked.
func TestSecurityChartSourceNotAllowed(t *testing.T) {
	var requests atomic.Int64
	repository := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(repository.Close)
	for _, tc := range []struct {
		name   string
		chart  *benchv1.ChartSource
		noMaps bool
		want   []string
	}{
		{"a repository", &benchv1.ChartSource{Repository: repository.URL, Name: "couchdb", Version: "4.6.2"}, false,
			[]string{repository.URL, "chartSources.repositories", "--chart-repositories"}},
		{"an OCI registry", &benchv1.ChartSource{Repository: "oci://" + strings.TrimPrefix(repository.URL, "http://") + "/charts/couchdb", Version: "4.6.2"}, false,
			[]string{"oci://", "chartSources.repositories"}},
		{"a ConfigMap", &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: "chart"}}, true,
			[]string{"ConfigMap", "chartSources.configMaps=true", "--allow-configmap-charts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			editor := editorIn(t, ns)
			h := newHarness(t)
			if tc.noMaps {
				h.r.ChartSources.Archives = false
			}
			bench := provisionedBenchmark(ns)
			bench.Spec.CouchDB.Provision.Chart = tc.chart
			if err := editor.Create(context.Background(), bench); err != nil {
				t.Fatal(err)
			}
			h.reconcile(bench) // the finalizer
			_, got := h.reconcile(bench)
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
			if got.Status.StartTime != nil || stalled == nil || stalled.Reason != reasonChartNotAllowed {
				t.Fatalf("start %v, Stalled %+v; want the run stalled before it starts with ChartNotAllowed", got.Status.StartTime, stalled)
			}
			for _, want := range tc.want {
				if !strings.Contains(stalled.Message, want) {
					t.Errorf("Stalled %q does not say %q", stalled.Message, want)
				}
			}
		})
	}
	if n := requests.Load(); n > 0 {
		t.Errorf("the repository was asked %d time(s)", n)
	}
}

// operatorTokenConfig authenticates as the operator's ServiceAccount by a token of its own, as
// a manager pod does, rather than as the test's administrator impersonating it: Kubernetes
// impersonates one identity at a time, so only then does the operator's own right to
// impersonate the installer take part.
func operatorTokenConfig(t *testing.T) *rest.Config {
	t.Helper()
	ctx := context.Background()
	env.OperatorConfig(t) // the operator's RBAC
	ns, name, _ := strings.Cut(strings.TrimPrefix(testenv.OperatorServiceAccount, "system:serviceaccount:"), ":")
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// The positive path: the built-in chart installs for an editor's benchmark, as the
// namespace's installer ServiceAccount, which the operator made and bound to the installer
// ClusterRole. The operator runs with a token of its own, so its right to impersonate the
// installer (and no other ServiceAccount) is what Helm uses; it may not create what Helm
// created itself.
func TestSecurityBuiltInChartInstallsAsTheInstaller(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	editor := editorIn(t, ns)
	h := newHarness(t)
	cfg := operatorTokenConfig(t)
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	var err error
	if h.operator, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		t.Fatal(err)
	}
	h.r = h.reconciler(operatorReleases(t, cfg, testChartSources))
	bench := provisionedBenchmark(ns)
	if err := editor.Create(ctx, bench); err != nil {
		t.Fatal(err)
	}
	adminSecretFor(t, bench)
	got := h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	var binding rbacv1.RoleBinding
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: builders.InstallerName}, &binding); err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Name != testenv.InstallerClusterRole || len(binding.Subjects) != 1 || binding.Subjects[0].Name != builders.InstallerName {
		t.Errorf("the installer's RoleBinding %+v", binding)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: builders.InstallerName}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the installer ServiceAccount: %v", err)
	}
	for _, res := range []string{"statefulsets", "services"} {
		group := ""
		if res == "statefulsets" {
			group = "apps"
		}
		if mayCreate(t, h.operator, ns, group, res) {
			t.Errorf("the operator may create %s itself: Helm need not have acted as the installer", res)
		}
	}
	refused.none(t)
	impersonate := func(sa string) bool {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Resource: "serviceaccounts", Verb: "impersonate", Name: sa}}}
		if err := h.operator.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	if !impersonate(builders.InstallerName) || impersonate("default") {
		t.Errorf("the operator may impersonate %s: %v, default: %v; want only the installer", builders.InstallerName,
			impersonate(builders.InstallerName), impersonate("default"))
	}
}

// A pathological benchmark fails itself with a clear message, and nothing else: values of
// 1 MiB, a chart of 10,000 templates, a log of 1 GiB (read no further than its cap), a log
// that declares 1 GiB.
func TestSecurityPathologicalBenchmarksFailThemselves(t *testing.T) {
	t.Run("1 MiB of values", func(t *testing.T) {
		ns := env.Namespace(t)
		h := newHarness(t)
		bench := provisionedBenchmark(ns)
		bench.Spec.CouchDB.Provision.Values = &apiextensionsv1.JSON{Raw: []byte(`{"blob": "` + strings.Repeat("x", 1<<20) + `"}`)}
		create(t, bench)
		got := h.drive(bench, 10)
		refusedWith(t, got, "values are", "spec.couchdb.provision.values")
	})
	t.Run("a chart of 10,000 templates", func(t *testing.T) {
		ns := env.Namespace(t)
		h := newHarness(t)
		templates := map[string]string{}
		for i := range 10000 {
			templates[fmt.Sprintf("t%05d.yaml", i)] = "# nothing\n"
		}
		create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart"},
			BinaryData: map[string][]byte{"chart.tgz": packageChart(t, templates)}})
		bench := provisionedBenchmark(ns)
		bench.Spec.CouchDB.Provision.Chart = &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: "chart"}}
		create(t, bench)
		got := h.drive(bench, 10)
		refusedWith(t, got, "10000 templates", "at most")
	})
	t.Run("a log of 1 GiB", func(t *testing.T) {
		ns := env.Namespace(t)
		h := newHarness(t)
		huge := &endlessLog{size: 1 << 30}
		h.r.Logs = huge
		create(t, credentials(ns))
		bench := existingBenchmark(ns)
		create(t, bench)
		got := h.drive(bench, 10)
		stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
		if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonStepFailed ||
			!strings.Contains(stalled.Message, errLogTooLong.Error()) {
			t.Fatalf("phase %s, Stalled %+v; want the step failed for its log", got.Status.Phase, stalled)
		}
		// The harness's documents are a few KiB: 64 KiB bounds what they declare.
		_, limit := frameBounds(64 << 10)
		if read := huge.read.Load(); read > limit {
			t.Errorf("read %d bytes of the log; the cap is %d", read, limit)
		}
	})
	t.Run("a log that declares 1 GiB", func(t *testing.T) {
		ns := env.Namespace(t)
		h := newHarness(t)
		h.failStep, h.earlyExit = benchv1.StepSeed, string(results.Handoff{V: results.HandoffVersion, Payload: results.PayloadDocument,
			Bytes: 1 << 30, SHA256: strings.Repeat("0", 64)}.Marshal())
		create(t, credentials(ns))
		bench := existingBenchmark(ns)
		create(t, bench)
		got := h.drive(bench, 10)
		stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
		if stalled == nil || !strings.Contains(stalled.Message, "declares 1073741824 bytes of results") {
			t.Fatalf("Stalled %+v; want the declared size refused", stalled)
		}
	})
}

func refusedWith(t *testing.T, got *benchv1.CouchBenchmark, words ...string) {
	t.Helper()
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != reasonChartRefused {
		t.Fatalf("phase %s, Stalled %+v; want Failed with ChartRefused", got.Status.Phase, stalled)
	}
	for _, w := range words {
		if !strings.Contains(stalled.Message, w) {
			t.Errorf("the refusal %q does not say %q", stalled.Message, w)
		}
	}
}

// endlessLog serves, for every pod, a log of size bytes of progress lines, whatever the
// lines asked for (as a kubelet that ignores them would), and counts what was read of it.
type endlessLog struct {
	size int64
	read atomic.Int64
}

func (l *endlessLog) Logs(context.Context, string, string, string, int64) (io.ReadCloser, error) {
	return io.NopCloser(io.LimitReader(lineReader{read: &l.read}, l.size)), nil
}

type lineReader struct{ read *atomic.Int64 }

func (r lineReader) Read(p []byte) (int, error) {
	const line = "12:00:00 js/small: load 1: documents seeded 4000 of 10000 (40%)\n"
	for i := range p {
		p[i] = line[i%len(line)]
	}
	r.read.Add(int64(len(p)))
	return len(p), nil
}

// The chart's ValidatingAdmissionPolicy, run by envtest's kube-apiserver (its binding limited
// here to the test's namespace): a user who may create CouchBenchmarks but not the Jobs and
// ConfigMaps a run makes, nor a CouchDB release's kinds, is refused a benchmark and a schedule
// with a message that names what they may not create; a namespace editor (edit) is not.
func TestSecurityAdmissionRequiresTheAuthorsRights(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	installAdmissionPolicy(t, ns, "vaptest", nil)

	editor := editorIn(t, ns) // makes the editor role, and a namespace editor to compare with
	// Only the CouchBenchmark editor role, not edit.
	const user = "benchmarks-only"
	limited := userIn(t, ns, user, "couchbenchmark-editor-role")
	bench := provisionedBenchmark(ns)
	refusal := refusedOnceLoaded(t, limited, bench)
	for _, want := range []string{"runs with its author's rights", user, "may not create jobs.batch", ns} {
		if !strings.Contains(refusal.Error(), want) {
			t.Errorf("the refusal %q does not say %q", refusal, want)
		}
	}
	schedule := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: benchv1.CouchBenchmarkScheduleSpec{Schedule: "0 2 * * *", Template: benchv1.BenchmarkTemplate{Spec: bench.Spec}}}
	if err := limited.Create(ctx, schedule.DeepCopy()); err == nil || !strings.Contains(err.Error(), "may not create jobs.batch") {
		t.Errorf("a schedule by a user who may not create Jobs: %v; want it refused", err)
	}
	if err := editor.Create(ctx, bench); err != nil {
		t.Errorf("a namespace editor's benchmark: %v; want it admitted", err)
	}
}

// The manager's metrics as cmd/manager serves them by default (SecureMetrics), on envtest's
// API server: HTTPS, and only to a bearer token the API server authenticates whose identity
// may get /metrics (the metrics-reader ClusterRole): none is 401, one without the role 403.
func TestSecureMetrics(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	addr := freeLoopbackAddr(t)
	runManager(t, env.OperatorConfig(t), ManagerSettings{MetricsAddress: addr, HealthProbeAddress: "0", SecureMetrics: true}, func(ctrl.Manager) {})

	data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var reader rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &reader); err != nil {
		t.Fatal(err)
	}
	reader.Name = "metrics-reader-" + ns
	create(t, &reader)
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}})
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}}})
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// The manager's certificate is its own, self-signed.
	scraper := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test of who may scrape, not of the certificate
	scrape := func(bearer string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := scraper.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var code int
	var body string
	waitFor(t, "the metrics endpoint to answer", func() bool {
		code, body = scrape(token("prometheus"))
		return code == http.StatusOK
	})
	if !strings.Contains(body, "couchbench_runs_started_total") && !strings.Contains(body, "go_goroutines") {
		t.Errorf("the metrics with a token: %.200s", body)
	}
	if code, body = scrape(""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: %d %s; want 401", code, body)
	}
	if code, body = scrape(token("nobody")); code != http.StatusForbidden {
		t.Errorf("a scrape with a token not allowed /metrics: %d %s; want 403", code, body)
	}
}

// With CPU cost read (the chart's cpuCost.kubernetes), the admission policy also asks that a
// benchmark's author may exec into the namespace's pods when its runs would: a benchmark that
// names an existing CouchDB's pods (spec.couchdb.existing.cpuPods) is refused to a user who may
// create the Jobs and ConfigMaps a run makes but not pods/exec, and admitted without those
// pods, or to a user who may exec there. envtest's kube-apiserver runs the policy.
func TestSecurityAdmissionAsksTheAuthorMayExecToReadPods(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	installAdmissionPolicy(t, ns, "vapcpu", map[string]any{"cpuCost": map[string]any{"kubernetes": true}})
	editorIn(t, ns) // makes the CouchBenchmark editor role
	runs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "runs-without-exec-" + ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}}
	create(t, runs)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, runs) })
	execs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "execs-" + ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
	}}
	create(t, execs)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, execs) })
	noExec := userIn(t, ns, "runs-without-exec", "couchbenchmark-editor-role", runs.Name)
	withExec := userIn(t, ns, "runs-with-exec", "couchbenchmark-editor-role", runs.Name, execs.Name)

	// The API server's RBAC authorizer learns of the bindings a moment after they are made.
	waitFor(t, "the bindings that let the users run benchmarks", func() bool {
		return mayCreate(t, noExec, ns, "batch", "jobs") && mayCreate(t, noExec, ns, "", "configmaps") &&
			mayCreatePodsExec(t, withExec, ns)
	})
	readsPods := existingBenchmark(ns)
	readsPods.Spec.CouchDB.Existing.CPUPods = []string{"couchdb-0"}
	refusal := refusedOnceLoaded(t, noExec, readsPods)
	if !strings.Contains(refusal.Error(), "may not create pods/exec") {
		t.Errorf("the refusal %q does not name pods/exec", refusal)
	}
	plain := existingBenchmark(ns)
	plain.Name = "no-pods"
	if err := noExec.Create(ctx, plain); err != nil {
		t.Errorf("an existing CouchDB without pods to read, by a user who may not exec: %v; want it admitted", err)
	}
	readsPods.Name = "with-exec"
	if err := withExec.Create(ctx, readsPods); err != nil {
		t.Errorf("its pods named by a user who may exec: %v; want it admitted", err)
	}
}

// mayCreatePodsExec asks the API server whether c's identity may exec into pods in ns.
func mayCreatePodsExec(t *testing.T, c client.Client, ns string) bool {
	t.Helper()
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Resource: "pods", Subresource: "exec", Verb: "create"}}}
	if err := c.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

// installAdmissionPolicy creates the chart's admission policy, rendered with values, and its
// binding limited to namespace ns, for the test's life.
func installAdmissionPolicy(t *testing.T, ns, release string, values map[string]any) {
	t.Helper()
	docs := testenv.OperatorChart(t, release, "couchbench-system", values)
	policy, binding := docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"]
	if len(policy) != 1 || len(binding) != 1 {
		t.Fatalf("the chart renders %d policies and %d bindings", len(policy), len(binding))
	}
	spec := binding[0]["spec"].(map[string]any)
	spec["matchResources"] = map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}
	for _, obj := range []map[string]any{policy[0], binding[0]} {
		u := &unstructured.Unstructured{Object: obj}
		create(t, u)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
	}
}

// refusedOnceLoaded is c's creation of bench refused by the admission policy. The policy is
// enforced once the API server has loaded it; a benchmark admitted before then is deleted, and
// the next one has another name.
func refusedOnceLoaded(t *testing.T, c client.Client, bench *benchv1.CouchBenchmark) error {
	t.Helper()
	var refusal error
	tries := 0
	waitFor(t, "the admission policy to refuse the benchmark", func() bool {
		probe := bench.DeepCopy()
		tries++
		probe.Name = fmt.Sprintf("probe-%d", tries)
		if refusal = c.Create(context.Background(), probe); refusal == nil {
			if err := env.Client.Delete(context.Background(), probe); err != nil {
				t.Fatal(err)
			}
		}
		return refusal != nil
	})
	return refusal
}
