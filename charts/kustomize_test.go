package charts_test

import (
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/couchbench/couchbench/internal/testenv"
)

// The kustomize install (config/default) and the chart deploy the same operator: the same
// rules (the manager's and leader election's), the same manager flags, the runner image equal
// to the manager's, the same security settings; also with the CPU cost measured on
// Kubernetes (the component config/cpu-cost, the chart's cpuCost.kubernetes).
func TestKustomizeInstallMatchesTheChart(t *testing.T) {
	t.Run("default", func(t *testing.T) { kustomizeMatchesTheChart(t, false) })
	t.Run("cpu cost", func(t *testing.T) { kustomizeMatchesTheChart(t, true) })
}

// configWith is config/ in memory, config/default with the component config/cpu-cost when
// cpuCost, as its comment tells an installer to add it.
func configWith(t *testing.T, cpuCost bool) filesys.FileSystem {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	err := filepath.WalkDir("../config", func(path string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if cpuCost && path == filepath.Join("..", "config", "default", "kustomization.yaml") {
			data = append(data, "components:\n- ../cpu-cost\n"...)
		}
		return fs.WriteFile(filepath.Join("/", strings.TrimPrefix(path, "../")), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func kustomizeMatchesTheChart(t *testing.T, cpuCost bool) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(configWith(t, cpuCost), "/config/default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var kDeploy appsv1.Deployment
	var kPolicy, kBinding map[string]any
	var kRules, kLeaderRules, kInstallerRules, kCPUReaderRules []rbacv1.PolicyRule
	for _, r := range resources.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case r.GetKind() == "Deployment":
			if err := yaml.Unmarshal(data, &kDeploy); err != nil {
				t.Fatal(err)
			}
		case r.GetKind() == "ClusterRole" && r.GetName() == "couchbench-manager-role":
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal(data, &role); err != nil {
				t.Fatal(err)
			}
			kRules = role.Rules
		case r.GetKind() == "ValidatingAdmissionPolicy":
			if kPolicy, err = r.Map(); err != nil {
				t.Fatal(err)
			}
		case r.GetKind() == "ValidatingAdmissionPolicyBinding":
			if kBinding, err = r.Map(); err != nil {
				t.Fatal(err)
			}
		case r.GetKind() == "ClusterRole" && r.GetName() == "couchbench-installer":
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal(data, &role); err != nil {
				t.Fatal(err)
			}
			kInstallerRules = role.Rules
		case r.GetKind() == "ClusterRole" && r.GetName() == "couchbench-cpu-reader":
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal(data, &role); err != nil {
				t.Fatal(err)
			}
			kCPUReaderRules = role.Rules
		case r.GetKind() == "Role" && r.GetName() == "couchbench-leader-election-role":
			var role rbacv1.Role
			if err := yaml.Unmarshal(data, &role); err != nil {
				t.Fatal(err)
			}
			kLeaderRules = role.Rules
		}
	}
	// The markers grant bind on both ClusterRoles; without the component the CPU reader's
	// does not exist, and the chart leaves its name out.
	if !reflect.DeepEqual(kRules, generatedRules(t, "couchbench-cpu-reader", "couchbench-installer")) {
		t.Errorf("config/default's manager role differs from the generated rules")
	}
	if !reflect.DeepEqual(kInstallerRules, installerRules(t)) {
		t.Errorf("config/default has no installer ClusterRole couchbench-installer, which the manager's rules let it bind")
	}
	if want := roleFileIn(t, "cpu-cost", "cpu_reader_role.yaml"); cpuCost != (kCPUReaderRules != nil) || cpuCost && !reflect.DeepEqual(kCPUReaderRules, want) {
		t.Errorf("config/default's CPU reader ClusterRole %v, want %v with cpu cost %v", kCPUReaderRules, want, cpuCost)
	}

	chart := testenv.OperatorChart(t, "couchbench", "couchbench-system", map[string]any{"image": map[string]any{"repository": "couchbench/manager", "tag": "dev"},
		"cpuCost": map[string]any{"kubernetes": cpuCost}})
	boundRoles := []string{"couchbench-installer"}
	if cpuCost {
		boundRoles = []string{"couchbench-cpu-reader", "couchbench-installer"}
		if !slices.ContainsFunc(chart["ClusterRole"], func(role map[string]any) bool {
			return role["metadata"].(map[string]any)["name"] == "couchbench-cpu-reader" &&
				reflect.DeepEqual(rulesOf(t, role), kCPUReaderRules)
		}) {
			t.Errorf("the chart has no CPU reader ClusterRole couchbench-cpu-reader as kustomize's")
		}
	}
	if got := rulesOf(t, chart["ClusterRole"][0]); !reflect.DeepEqual(got, generatedRules(t, boundRoles...)) {
		t.Errorf("the chart's manager role may bind other ClusterRoles than %v: %v", boundRoles, got)
	}
	if leader := chart["Role"]; len(leader) != 1 || !reflect.DeepEqual(rulesOf(t, leader[0]), kLeaderRules) {
		t.Errorf("the leader election roles differ: kustomize %+v, chart %+v", kLeaderRules, leader)
	}
	// The same admission policy, bound to itself, but for the operator's name.
	cPolicy := chart["ValidatingAdmissionPolicy"][0]["spec"].(map[string]any)
	kSpec := kPolicy["spec"].(map[string]any)
	if !reflect.DeepEqual(kSpec["validations"], cPolicy["validations"]) || !reflect.DeepEqual(kSpec["variables"], cPolicy["variables"]) ||
		!reflect.DeepEqual(kSpec["matchConstraints"], cPolicy["matchConstraints"]) {
		t.Errorf("the admission policies differ:\nkustomize %v\nchart %v", kSpec, cPolicy)
	}
	if bound := kBinding["spec"].(map[string]any)["policyName"]; bound != kPolicy["metadata"].(map[string]any)["name"] {
		t.Errorf("config/default binds policy %v, not its policy %v", bound, kPolicy["metadata"])
	}
	data, _ := yaml.Marshal(chart["Deployment"][0])
	var cDeploy appsv1.Deployment
	if err := yaml.Unmarshal(data, &cDeploy); err != nil {
		t.Fatal(err)
	}
	k, c := kDeploy.Spec.Template.Spec.Containers[0], cDeploy.Spec.Template.Spec.Containers[0]
	if k.Image != c.Image || k.Env[0] != c.Env[0] || k.Env[0].Value != k.Image {
		t.Errorf("image/runner image: kustomize %s %+v, chart %s %+v", k.Image, k.Env, c.Image, c.Env)
	}
	if kArgs, cArgs := slices.Sorted(slices.Values(k.Args)), slices.Sorted(slices.Values(c.Args)); !slices.Equal(kArgs, cArgs) {
		t.Errorf("the manager's flags differ: kustomize %v, chart %v", kArgs, cArgs)
	}
	if !reflect.DeepEqual(k.SecurityContext, c.SecurityContext) || !reflect.DeepEqual(kDeploy.Spec.Template.Spec.SecurityContext, cDeploy.Spec.Template.Spec.SecurityContext) {
		t.Errorf("security contexts differ: kustomize %+v / chart %+v", k.SecurityContext, c.SecurityContext)
	}
	if !reflect.DeepEqual(k.VolumeMounts, c.VolumeMounts) {
		t.Errorf("volume mounts differ: %+v / %+v", k.VolumeMounts, c.VolumeMounts)
	}
}
