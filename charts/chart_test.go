// Package charts_test lints and renders the operator's Helm chart with the Helm SDK (no
// helm binary), and checks it grants what the generated RBAC grants.
package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/couchbench/couchbench/internal/testenv"
)

const chartDir = "couchbench-operator"

func TestChartLints(t *testing.T) {
	linter := lint.All(chartDir, map[string]any{}, "couchbench-system", true)
	for _, msg := range linter.Messages {
		t.Logf("helm lint: %s", msg)
	}
	if linter.HighestSeverity >= support.WarningSev {
		t.Fatalf("helm lint found problems (see the log)")
	}
}

// render renders the chart with values for release cb in couchbench-system and returns the
// documents by kind.
func render(t *testing.T, values map[string]any) map[string][]map[string]any {
	t.Helper()
	return testenv.OperatorChart(t, "cb", "couchbench-system", values)
}

// generatedRules are the manager's rules as generated, with the ClusterRoles it may bind
// named boundRoles, as a chart or kustomize install names them.
func generatedRules(t *testing.T, boundRoles ...string) []rbacv1.PolicyRule {
	t.Helper()
	rules := roleFile(t, "role.yaml")
	for i, r := range rules {
		if slices.Contains(r.Resources, "clusterroles") {
			rules[i].ResourceNames = boundRoles
		}
	}
	return rules
}

// installerRules are the rules of the installer ClusterRole (config/rbac/installer_role.yaml).
func installerRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	return roleFile(t, "installer_role.yaml")
}

func roleFile(t *testing.T, name string) []rbacv1.PolicyRule {
	t.Helper()
	return roleFileIn(t, "rbac", name)
}

// roleFileIn reads the rules of a ClusterRole of config/dir.
func roleFileIn(t *testing.T, dir, name string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	return role.Rules
}

func rulesOf(t *testing.T, obj map[string]any) []rbacv1.PolicyRule {
	t.Helper()
	data, _ := yaml.Marshal(obj["rules"])
	var rules []rbacv1.PolicyRule
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestDefaultRender(t *testing.T) {
	docs := render(t, nil)
	for kind, n := range map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 3, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1, "Service": 2} {
		if len(docs[kind]) != n {
			t.Errorf("%d %s, want %d", len(docs[kind]), kind, n)
		}
	}
	if got, want := rulesOf(t, docs["ClusterRole"][0]), generatedRules(t, "cb-installer"); !reflect.DeepEqual(got, want) {
		t.Errorf("the chart's ClusterRole differs from config/rbac/role.yaml:\n%v\n%v", got, want)
	}
	installer := docs["ClusterRole"][1]
	if name := installer["metadata"].(map[string]any)["name"]; name != "cb-installer" ||
		!reflect.DeepEqual(rulesOf(t, installer), installerRules(t)) {
		t.Errorf("the chart's installer ClusterRole %v differs from config/rbac/installer_role.yaml", name)
	}
	dep, _ := yaml.Marshal(docs["Deployment"][0])
	for _, want := range []string{"image: couchbench/manager:0.1.0", "runAsNonRoot: true", "readOnlyRootFilesystem: true", "--leader-elect",
		"name: RUNNER_IMAGE", "value: couchbench/manager:0.1.0", "--zap-log-level=info"} {
		if !strings.Contains(string(dep), want) {
			t.Errorf("Deployment lacks %q:\n%s", want, dep)
		}
	}
}

// Without leader election the manager gets no Lease to take, and no rights on Leases.
func TestLeaderElectionIsOptional(t *testing.T) {
	docs := render(t, map[string]any{"leaderElection": false})
	dep, _ := yaml.Marshal(docs["Deployment"][0])
	if len(docs["Role"]) != 0 || strings.Contains(string(dep), "--leader-elect") {
		t.Errorf("leaderElection false renders %d Roles and the Deployment:\n%s", len(docs["Role"]), dep)
	}
}

func TestWatchNamespacesGrantPerNamespace(t *testing.T) {
	docs := render(t, map[string]any{"watchNamespaces": []any{"bench-a", "bench-b"}, "image": map[string]any{"tag": "dev"}, "logLevel": "debug"})
	// Per namespace: the manager's rules; cluster-wide only reading nodes, for the provenance
	// and to see a node that holds a benchmark's pods stop answering, and the secure metrics'
	// reviews of who scrapes them (the installer's and the metrics reader's roles bind no one).
	if len(docs["ClusterRole"]) != 4 || len(docs["ClusterRoleBinding"]) != 2 || len(docs["Role"]) != 3 || len(docs["RoleBinding"]) != 3 {
		t.Fatalf("ClusterRoles %d, ClusterRoleBindings %d, Roles %d, RoleBindings %d; want the manager's rules in each watched namespace",
			len(docs["ClusterRole"]), len(docs["ClusterRoleBinding"]), len(docs["Role"]), len(docs["RoleBinding"]))
	}
	if rules, _ := yaml.Marshal(docs["ClusterRole"][0]["rules"]); string(rules) != "- apiGroups:\n  - \"\"\n  resources:\n  - nodes\n  verbs:\n  - get\n  - list\n  - watch\n" {
		t.Errorf("the cluster-wide role grants more than reading nodes:\n%s", rules)
	}
	review := "- apiGroups:\n  - authentication.k8s.io\n  resources:\n  - tokenreviews\n  verbs:\n  - create\n" +
		"- apiGroups:\n  - authorization.k8s.io\n  resources:\n  - subjectaccessreviews\n  verbs:\n  - create\n"
	if rules, _ := yaml.Marshal(docs["ClusterRole"][1]["rules"]); string(rules) != review {
		t.Errorf("the metrics' cluster-wide role grants other than the reviews:\n%s", rules)
	}
	if docs := render(t, map[string]any{"watchNamespaces": []any{"bench-a"}, "metrics": map[string]any{"secure": false}}); len(docs["ClusterRoleBinding"]) != 1 {
		t.Errorf("plain metrics bind %d ClusterRoles; want only reading nodes", len(docs["ClusterRoleBinding"]))
	}
	dep, _ := yaml.Marshal(docs["Deployment"][0])
	if !strings.Contains(string(dep), "--watch-namespaces=bench-a,bench-b") || !strings.Contains(string(dep), "couchbench/manager:dev") ||
		!strings.Contains(string(dep), "--zap-log-level=debug") {
		t.Errorf("Deployment:\n%s", dep)
	}
}

// The chart installs the same CRDs as config/crd, from its templates (so that an upgrade
// updates them) and kept on uninstall; crds.create false leaves them out.
func TestChartCRDIsTheGeneratedOne(t *testing.T) {
	generated, err := filepath.Glob(filepath.Join("..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(generated) != 2 {
		t.Fatalf("generated CRDs %v, %v; want CouchBenchmark and CouchBenchmarkSchedule", generated, err)
	}
	rendered := map[string]map[string]any{}
	for _, crd := range render(t, nil)["CustomResourceDefinition"] {
		meta := crd["metadata"].(map[string]any)
		annotations := meta["annotations"].(map[string]any)
		if annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not kept on uninstall: annotations %v", meta["name"], annotations)
		}
		delete(annotations, "helm.sh/resource-policy")
		rendered[meta["name"].(string)] = crd
	}
	for _, path := range generated {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		name := want["metadata"].(map[string]any)["name"].(string)
		if !reflect.DeepEqual(rendered[name], want) {
			t.Errorf("the chart's CRD %s differs from %s: run make manifests", name, path)
		}
	}
	if len(rendered) != len(generated) {
		t.Errorf("the chart renders %d CRDs, want %d", len(rendered), len(generated))
	}
	if off := render(t, map[string]any{"crds": map[string]any{"create": false}}); len(off["CustomResourceDefinition"]) != 0 {
		t.Errorf("crds.create false renders %d CRDs", len(off["CustomResourceDefinition"]))
	}
}

// The ServiceMonitor and the Grafana dashboard are opt-in; enabled, they render for the
// Prometheus Operator and Grafana's dashboard sidecar.
func TestMonitoringIsOptIn(t *testing.T) {
	if off := render(t, map[string]any{}); len(off["ServiceMonitor"]) != 0 || len(off["ConfigMap"]) != 0 {
		t.Errorf("by default the chart renders %d ServiceMonitors and %d ConfigMaps", len(off["ServiceMonitor"]), len(off["ConfigMap"]))
	}
	on := render(t, map[string]any{
		"metrics":          map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "monitoring"},
	})
	if len(on["ServiceMonitor"]) != 1 || len(on["ConfigMap"]) != 1 {
		t.Fatalf("rendered %d ServiceMonitors, %d ConfigMaps", len(on["ServiceMonitor"]), len(on["ConfigMap"]))
	}
	sm, _ := yaml.Marshal(on["ServiceMonitor"][0])
	if !strings.Contains(string(sm), "release: prometheus") || !strings.Contains(string(sm), "port: metrics") {
		t.Errorf("ServiceMonitor:\n%s", sm)
	}
	// One Service per replica's endpoint: two would make every series twice.
	selector := on["ServiceMonitor"][0]["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
	var selected []string
	for _, svc := range on["Service"] {
		meta := svc["metadata"].(map[string]any)
		labels, all := meta["labels"].(map[string]any), true
		for k, v := range selector {
			all = all && labels[k] == v
		}
		if all {
			selected = append(selected, meta["name"].(string))
		}
	}
	if len(on["Service"]) != 2 || len(selected) != 1 {
		t.Errorf("the ServiceMonitor's selector %v selects %v of %d Services; want one", selector, selected, len(on["Service"]))
	}
	cm := on["ConfigMap"][0]
	meta := cm["metadata"].(map[string]any)
	if meta["namespace"] != "monitoring" || meta["labels"].(map[string]any)["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap metadata %v", meta)
	}
	var dashboard map[string]any
	if err := json.Unmarshal([]byte(cm["data"].(map[string]any)["couchbench.json"].(string)), &dashboard); err != nil || dashboard["uid"] != "couchbench" {
		t.Errorf("the dashboard is not Grafana JSON: %v", err)
	}
}

// A cluster that cannot pull grafana/k6 names its k6 image once, on the operator, for every
// benchmark that names none; unset, the manager keeps its own default.
func TestK6ImageIsOneSetting(t *testing.T) {
	if dep, _ := yaml.Marshal(render(t, nil)["Deployment"][0]); strings.Contains(string(dep), "--k6-image") {
		t.Errorf("by default the chart overrides the manager's k6 image:\n%s", dep)
	}
	dep, _ := yaml.Marshal(render(t, map[string]any{"k6": map[string]any{"image": "registry.local/k6:1.8.1"}})["Deployment"][0])
	if !strings.Contains(string(dep), "--k6-image=registry.local/k6:1.8.1") {
		t.Errorf("k6.image does not reach the manager:\n%s", dep)
	}
}
