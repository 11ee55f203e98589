package testenv

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// OperatorChart renders the operator's Helm chart (charts/couchbench-operator) with values, as
// `helm template` does for release in namespace, with the Helm SDK, and returns its objects by
// kind.
func OperatorChart(t testing.TB, release, namespace string, values map[string]any) map[string][]map[string]any {
	t.Helper()
	ch, err := loader.Load(filepath.Join(ModuleRoot(t), "charts", "couchbench-operator"))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]any{}
	for name, content := range files {
		for _, doc := range strings.Split(content, "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if kind, ok := obj["kind"].(string); ok {
				out[kind] = append(out[kind], obj)
			}
		}
	}
	return out
}

// rbacKinds are the objects of the chart that grant the manager its permissions.
var rbacKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// ChartOperatorConfig creates what the operator's chart, rendered with values for release in
// namespace, grants the manager (its ServiceAccount, Roles, ClusterRoles and their bindings;
// not the Deployment), and returns a config that acts as that ServiceAccount: the
// permissions a Helm install of the operator gives it, and no others. The namespace is
// created if missing; release must be unique in the API server (it names cluster-wide roles).
func (e *Env) ChartOperatorConfig(t testing.TB, release, namespace string, values map[string]any) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	docs := OperatorChart(t, release, namespace, values)
	serviceAccounts := docs["ServiceAccount"]
	if len(serviceAccounts) != 1 {
		t.Fatalf("the chart renders %d ServiceAccounts, want the manager's", len(serviceAccounts))
	}
	for _, kind := range rbacKinds {
		for _, obj := range docs[kind] {
			u := &unstructured.Unstructured{Object: obj}
			if err := e.Client.Create(ctx, u); err != nil {
				t.Fatalf("creating the chart's %s %s/%s: %v", kind, u.GetNamespace(), u.GetName(), err)
			}
		}
	}
	sa := unstructured.Unstructured{Object: serviceAccounts[0]}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName()}
	return cfg
}
