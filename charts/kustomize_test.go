package charts_test

import (
	"reflect"
	"slices"
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
// to the manager's, the same security settings.
func TestKustomizeInstallMatchesTheChart(t *testing.T) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../config/default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var kDeploy appsv1.Deployment
	var kPolicy, kBinding map[string]any
	var kRules, kLeaderRules, kInstallerRules []rbacv1.PolicyRule
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
		case r.GetKind() == "Role" && r.GetName() == "couchbench-leader-election-role":
			var role rbacv1.Role
			if err := yaml.Unmarshal(data, &role); err != nil {
				t.Fatal(err)
			}
			kLeaderRules = role.Rules
		}
	}
	if !reflect.DeepEqual(kRules, generatedRules(t, "couchbench-installer")) {
		t.Errorf("config/default's manager role differs from the generated rules")
	}
	if !reflect.DeepEqual(kInstallerRules, installerRules(t)) {
		t.Errorf("config/default has no installer ClusterRole couchbench-installer, which the manager's rules let it bind")
	}

	chart := testenv.OperatorChart(t, "couchbench", "couchbench-system", map[string]any{"image": map[string]any{"repository": "couchbench/manager", "tag": "dev"}})
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
