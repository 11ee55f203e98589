package helmrelease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/couchbench/couchbench/internal/testenv"
)

// The confinement alone, on manifests as Helm renders them: each rule refuses the object that
// breaks it and names it; what keeps to them passes unchanged.
func TestConfinementRules(t *testing.T) {
	const ns = "bench"
	statefulSet := func(podSpec string) string {
		return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
` + podSpec
	}
	for _, tc := range []struct {
		name, manifest string
		// refused names the object refused and words of the rule; nil: passes.
		refused []string
	}{
		{"a ConfigMap of the release", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", nil},
		{"the release's own namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: bench\n", nil},
		{"another namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: kube-system\n",
			[]string{"ConfigMap kube-system/a", "only in its own namespace, bench"}},
		{"a ClusterRoleBinding", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: x\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n",
			[]string{"ClusterRoleBinding", " x:", "may create only", "StatefulSet.apps"}},
		{"a RoleBinding", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: admin\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n",
			[]string{"RoleBinding", " admin:", "may create only"}},
		{"a Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n", []string{"Deployment", "may create only"}},
		{"an ExternalName Service", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  type: ExternalName\n  externalName: kubernetes.default\n",
			[]string{"Service", " s:", "ExternalName"}},
		{"a Service with externalIPs", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports: [{port: 80}]\n  externalIPs: [192.0.2.1]\n",
			[]string{"Service", " s:", "externalIPs"}},
		{"a ServiceAccount token", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: t\n  annotations: {kubernetes.io/service-account.name: couchbench-installer}\n" +
			"type: kubernetes.io/service-account-token\n", []string{"Secret", " t:", "service-account-token"}},
		{"pods as another ServiceAccount", statefulSet("      serviceAccountName: couchbench-installer\n      containers: [{name: c, image: i}]\n"),
			[]string{"StatefulSet", " db:", `"couchbench-installer"`}},
		{"pods as the release's ServiceAccount", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: db\n---\n" +
			statefulSet("      serviceAccountName: db\n      containers: [{name: c, image: i}]\n"), nil},
		{"privileged pods", statefulSet("      containers: [{name: c, image: i, securityContext: {privileged: true}}]\n"),
			[]string{"StatefulSet", " db:", "baseline", "privileged"}},
		{"pods on the host's network", statefulSet("      hostNetwork: true\n      containers: [{name: c, image: i}]\n"),
			[]string{"StatefulSet", " db:", "baseline", "host namespaces"}},
		{"a hostPath volume", statefulSet("      containers: [{name: c, image: i}]\n      volumes: [{name: root, hostPath: {path: /}}]\n"),
			[]string{"StatefulSet", " db:", "baseline", "hostPath"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newConfinement(ns)
			if err != nil {
				t.Fatal(err)
			}
			in := "---\n# Source: x/templates/a.yaml\n" + tc.manifest
			out, err := c.Run(bytes.NewBufferString(in))
			if tc.refused == nil {
				if err != nil || out.String() != in {
					t.Fatalf("Run = %v; want the manifests passed through", err)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Run = %v; want a RefusedError", err)
			}
			for _, want := range tc.refused {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q does not say %q", err, want)
				}
			}
		})
	}
}

// The installer ClusterRole (config/rbac) grants exactly the kinds the confinement lets a
// release create, so that neither lets through what the other holds back.
func TestInstallerRoleGrantsTheReleaseKinds(t *testing.T) {
	role := installerRole(t)
	resources := map[string]schema.GroupKind{
		"configmaps": {Kind: "ConfigMap"}, "persistentvolumeclaims": {Kind: "PersistentVolumeClaim"}, "secrets": {Kind: "Secret"},
		"services": {Kind: "Service"}, "serviceaccounts": {Kind: "ServiceAccount"}, "statefulsets": {Group: "apps", Kind: "StatefulSet"},
		"networkpolicies": {Group: "networking.k8s.io", Kind: "NetworkPolicy"}, "poddisruptionbudgets": {Group: "policy", Kind: "PodDisruptionBudget"},
	}
	var granted []schema.GroupKind
	for _, rule := range role.Rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				gk, ok := resources[res]
				if !ok || gk.Group != group {
					t.Errorf("the installer role grants %s in group %q, which is no kind of a CouchDB release", res, group)
					continue
				}
				granted = append(granted, gk)
				if !slices.Contains(rule.Verbs, "create") || slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Verbs, "escalate") {
					t.Errorf("verbs %v on %s", rule.Verbs, res)
				}
			}
		}
	}
	for _, gk := range ReleaseKinds {
		if !slices.Contains(granted, gk) {
			t.Errorf("the confinement lets a release create %s, which the installer role does not grant", gk)
		}
	}
	if len(granted) != len(ReleaseKinds) {
		t.Errorf("the installer role grants %v, the confinement allows %v", granted, ReleaseKinds)
	}
}

func installerRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "config", "rbac", "installer_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	return &role
}

const testInstaller = "couchbench-installer"

// confinedManager is a Manager as the operator runs it, acting as testInstaller of each
// namespace; installerIn gives a namespace that ServiceAccount, bound to the installer role.
func confinedManager(t *testing.T, sources Sources) *Manager {
	t.Helper()
	m, err := New(env.Config, t.TempDir(), testr.New(t), Options{Installer: testInstaller, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func installerIn(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	role := installerRole(t)
	role.Name = "installer-" + ns
	objs := []client.Object{
		role,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testInstaller}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testInstaller},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: testInstaller}},
		},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// The positive path: the built-in chart installs, status reads and uninstalls as the
// namespace's installer ServiceAccount; without that ServiceAccount's binding the same
// install is refused by the API server, naming it: Helm acts as it, not as the Manager's
// identity (the test's administrator).
func TestConfinedInstallActsAsTheInstaller(t *testing.T) {
	ctx := testContext(t)
	m := confinedManager(t, Sources{})
	ns := env.Namespace(t)
	installerIn(t, ns)
	st, err := m.Install(ctx, ns, "bench", ChartRef{}, benchValues(), nil)
	if err != nil || st.State != Deployed {
		t.Fatalf("Install of the built-in chart = %+v, %v; want Deployed", st, err)
	}
	if err := m.Uninstall(ctx, ns, "bench"); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	if st, err := m.Status(ctx, ns, "bench"); err != nil || st.State != NotInstalled {
		t.Errorf("Status after Uninstall = %+v, %v", st, err)
	}

	unbound := env.Namespace(t)
	_, err = m.Install(ctx, unbound, "bench", ChartRef{}, benchValues(), nil)
	if !apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Install where the installer has no rights = %v; want Forbidden", err)
	}
	if want := "system:serviceaccount:" + unbound + ":" + testInstaller; !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal %q does not name %s", err, want)
	}
}

// Charts that try to do more than a CouchDB release in its namespace, installed by a confined
// Manager as the namespace's installer: each is refused with the object and the rule, and
// nothing of it exists anywhere afterwards, in the namespace, in kube-system, or cluster-wide;
// Helm has not even recorded the release.
func TestConfinedInstallRefusesEscalation(t *testing.T) {
	ctx := testContext(t)
	m := confinedManager(t, Sources{})
	ns := env.Namespace(t)
	installerIn(t, ns)
	// A Secret in kube-system that a lookup would read.
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-secret-" + ns},
		StringData: map[string]string{"token": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	configMap := func(name, namespace string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, namespace)
	}
	for i, tc := range []struct {
		name      string
		templates map[string]string
		values    map[string]any
		want      []string
	}{{
		name:      "an object in another namespace",
		templates: map[string]string{"own.yaml": configMap("own-"+ns, ns), "escape.yaml": configMap("escape-"+ns, "kube-system")},
		want:      []string{"ConfigMap kube-system/escape-" + ns, "only in its own namespace"},
	}, {
		name: "a ClusterRoleBinding",
		templates: map[string]string{"own.yaml": configMap("own-"+ns, ns), "crb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" +
			"metadata:\n  name: escalate-" + ns + "\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
			"subjects: [{kind: ServiceAccount, name: default, namespace: " + ns + "}]\n"},
		want: []string{"ClusterRoleBinding", "escalate-" + ns, "may create only"},
	}, {
		name: "a RoleBinding to cluster-admin",
		templates: map[string]string{"own.yaml": configMap("own-"+ns, ns), "rb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n" +
			"metadata:\n  name: escalate-" + ns + "\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
			"subjects: [{kind: ServiceAccount, name: default, namespace: " + ns + "}]\n"},
		want: []string{"RoleBinding", "escalate-" + ns, "may create only"},
	}, {
		name: "a lookup of a Secret elsewhere",
		templates: map[string]string{"own.yaml": configMap("own-"+ns, ns), "stolen.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen-" + ns +
			"\ndata:\n  secrets: {{ lookup \"v1\" \"Secret\" \"kube-system\" \"cluster-secret-" + ns + "\" | toJson | quote }}\n"},
		want: []string{"forbidden", "system:serviceaccount:" + ns + ":" + testInstaller, "kube-system"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			release := fmt.Sprintf("escalate-%d", i)
			_, err := m.Install(ctx, ns, release, ChartRef{Path: writeChart(t, tc.templates)}, tc.values, nil)
			if err == nil {
				t.Fatal("Install succeeded")
			}
			t.Log(err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %q", err, want)
				}
			}
			if records := releaseRecords(t, ns, release); len(records) > 0 {
				t.Errorf("Helm recorded the refused release: %d record(s)", len(records))
			}
		})
	}
	// The values of the built-in chart that run its pods as another ServiceAccount.
	values := benchValues()
	values["serviceAccount"] = map[string]any{"enabled": true, "create": false, "name": testInstaller}
	_, err := m.Install(ctx, ns, "othersa", ChartRef{}, values, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Kind != "StatefulSet" || !strings.Contains(refused.Rule, testInstaller) {
		t.Errorf("Install with pods as %s = %v; want the StatefulSet refused", testInstaller, err)
	}

	for _, name := range []string{"own-" + ns, "escape-" + ns, "stolen-" + ns} {
		for _, where := range []string{ns, "kube-system", "default"} {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: where, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap %s/%s after the refusals: %v; want none", where, name, err)
			}
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "escalate-" + ns}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding after the refusal: %v; want none", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "escalate-" + ns}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding after the refusal: %v; want none", err)
	}
	var sets corev1.ServiceList
	if err := env.Client.List(ctx, &sets, client.InNamespace(ns)); err != nil || len(sets.Items) > 0 {
		t.Errorf("Services in %s after the refusals: %d, %v; want none", ns, len(sets.Items), err)
	}
}

// A chart too big to be a release is refused before it is rendered; so are values too big.
func TestConfinedInstallLimits(t *testing.T) {
	ctx := testContext(t)
	m := confinedManager(t, Sources{})
	ns := env.Namespace(t)
	installerIn(t, ns)
	templates := map[string]string{}
	for i := range 10000 {
		templates[fmt.Sprintf("t%05d.yaml", i)] = "# nothing\n"
	}
	_, err := m.Install(ctx, ns, "many", ChartRef{Path: writeChart(t, templates)}, nil, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "10000 templates") {
		t.Errorf("Install of a chart of 10,000 templates = %v; want it refused for them", err)
	}

	values := benchValues()
	values["blob"] = strings.Repeat("x", 1<<20)
	_, err = m.Install(ctx, ns, "big", ChartRef{}, values, nil)
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "values are") {
		t.Errorf("Install with 1 MiB of values = %v; want it refused for them", err)
	}
	if records := releaseRecords(t, ns, "big"); len(records) > 0 {
		t.Errorf("Helm recorded the refused release")
	}
}

// A confined Manager fetches charts only from the allowed sources, and refuses the others
// before any request: a repository not allowed (and one whose name begins like an allowed
// one), an OCI registry not allowed, an archive when archives are not allowed. An index that
// points its chart at another host is refused at that request.
func TestChartSources(t *testing.T) {
	ctx := testContext(t)
	srv := newChartRepository(t)
	m := confinedManager(t, Sources{Repositories: []string{srv.URL + "/charts"}})
	for _, ref := range []ChartRef{
		{Repository: srv.URL, Name: "couchdb", Version: BuiltInChartVersion},
		{Repository: srv.URL + "/charts-elsewhere", Name: "couchdb", Version: BuiltInChartVersion},
		{Repository: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts/couchdb", Version: BuiltInChartVersion},
		{Archive: builtInArchive, ArchiveSource: "ConfigMap ns/chart"},
	} {
		_, err := m.LoadChart(ctx, ref)
		if !errors.Is(err, ErrChartNotAllowed) {
			t.Errorf("LoadChart(%s) = %v; want ErrChartNotAllowed", ref, err)
		}
	}
	if n := srv.total(); n > 0 {
		t.Errorf("the repository was asked %d time(s) for charts not allowed", n)
	}

	allowed := Sources{Repositories: []string{srv.URL}}
	if _, err := confinedManager(t, allowed).LoadChart(ctx, ChartRef{Repository: srv.URL, Name: "couchdb", Version: BuiltInChartVersion}); err != nil {
		t.Errorf("LoadChart from an allowed repository: %v", err)
	}
	elsewhere := newChartRepository(t)
	req := mustRequest(t, elsewhere.URL+"/couchdb-"+BuiltInChartVersion+".tgz")
	if _, err := allowed.guard(req); !errors.Is(err, ErrChartNotAllowed) {
		t.Errorf("a request to %s, not allowed, passed the guard: %v", req.URL, err)
	}
}

// writeChart writes a chart of the given templates into a directory and returns it.
func writeChart(t *testing.T, templates map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "chart")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: escalate\nversion: 1.0.0\n"}
	for name, text := range templates {
		files[filepath.Join("templates", name)] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
