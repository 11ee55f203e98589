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
)

// The kustomize install (config/default) and the chart deploy the same operator: the same
// rules, the same manager flags, the runner image equal to the manager's, the same
// security settings.
func TestKustomizeInstallMatchesTheChart(t *testing.T) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../config/default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var kDeploy appsv1.Deployment
	var kRules []rbacv1.PolicyRule
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
		}
	}
	if !reflect.DeepEqual(kRules, generatedRules(t)) {
		t.Errorf("config/default's manager role differs from the generated rules")
	}

	chart := render(t, map[string]any{"image": map[string]any{"repository": "couchbench/manager", "tag": "dev"}})
	data, _ := yaml.Marshal(chart["Deployment"][0])
	var cDeploy appsv1.Deployment
	if err := yaml.Unmarshal(data, &cDeploy); err != nil {
		t.Fatal(err)
	}
	k, c := kDeploy.Spec.Template.Spec.Containers[0], cDeploy.Spec.Template.Spec.Containers[0]
	if k.Image != c.Image || k.Env[0] != c.Env[0] || k.Env[0].Value != k.Image {
		t.Errorf("image/runner image: kustomize %s %+v, chart %s %+v", k.Image, k.Env, c.Image, c.Env)
	}
	for _, flag := range k.Args {
		if !slices.Contains(c.Args, flag) {
			t.Errorf("kustomize passes %s, the chart does not (%v)", flag, c.Args)
		}
	}
	if !reflect.DeepEqual(k.SecurityContext, c.SecurityContext) || !reflect.DeepEqual(kDeploy.Spec.Template.Spec.SecurityContext, cDeploy.Spec.Template.Spec.SecurityContext) {
		t.Errorf("security contexts differ: kustomize %+v / chart %+v", k.SecurityContext, c.SecurityContext)
	}
	if !reflect.DeepEqual(k.VolumeMounts, c.VolumeMounts) {
		t.Errorf("volume mounts differ: %+v / %+v", k.VolumeMounts, c.VolumeMounts)
	}
}
