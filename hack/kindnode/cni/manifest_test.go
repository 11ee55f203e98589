package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const manifestPath = "../default-cni.yaml"

func readManifest(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestManifestKindMarkers checks what kind relies on before it applies the file: the two marker
// lines, and that running it through text/template (as the first marker makes kind do) leaves
// it unchanged.
func TestManifestKindMarkers(t *testing.T) {
	raw := readManifest(t)
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 3 || lines[0] != "# would you kindly template this file" || lines[1] != "# would you kindly patch this file" {
		t.Errorf("the first two lines are not kind's template and patch markers: %q", lines[:min(2, len(lines))])
	}
	if bytes.Contains(raw, []byte("{{")) {
		t.Error("the manifest contains {{, which kind's templating would try to expand")
	}
	tmpl, err := template.New("cni-manifest").Parse(string(raw))
	if err != nil {
		t.Fatalf("kind could not parse the manifest as a template: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ PodSubnet string }{PodSubnet: "10.244.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), raw) {
		t.Error("templating changed the manifest")
	}
}

type manifestObjects struct {
	serviceAccount corev1.ServiceAccount
	clusterRole    rbacv1.ClusterRole
	binding        rbacv1.ClusterRoleBinding
	daemonSet      appsv1.DaemonSet
}

// decodeManifest decodes every document strictly, so a misspelt field fails here instead of
// being dropped by the API server.
func decodeManifest(t *testing.T, raw []byte) manifestObjects {
	t.Helper()
	var objs manifestObjects
	targets := map[string]any{
		"ServiceAccount":     &objs.serviceAccount,
		"ClusterRole":        &objs.clusterRole,
		"ClusterRoleBinding": &objs.binding,
		"DaemonSet":          &objs.daemonSet,
	}
	seen := map[string]bool{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		target, ok := targets[meta.Kind]
		if !ok || seen[meta.Kind] {
			t.Fatalf("unexpected or repeated object of kind %q", meta.Kind)
		}
		seen[meta.Kind] = true
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	for kind := range targets {
		if !seen[kind] {
			t.Errorf("no %s in the manifest", kind)
		}
	}
	return objs
}

func TestManifestRBAC(t *testing.T) {
	objs := decodeManifest(t, readManifest(t))
	const name, namespace = "kindnode-cni", "kube-system"

	if sa := objs.serviceAccount; sa.Name != name || sa.Namespace != namespace {
		t.Errorf("ServiceAccount %s/%s, want %s/%s", sa.Namespace, sa.Name, namespace, name)
	}
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}
	if cr := objs.clusterRole; cr.Name != name || !reflect.DeepEqual(cr.Rules, wantRules) {
		t.Errorf("ClusterRole %s rules %+v, want %s with %+v", cr.Name, cr.Rules, name, wantRules)
	}
	b := objs.binding
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}
	if b.Name != name || b.RoleRef != wantRef || !reflect.DeepEqual(b.Subjects, wantSubjects) {
		t.Errorf("ClusterRoleBinding %s: roleRef %+v subjects %+v; want %s binding %+v to %+v", b.Name, b.RoleRef, b.Subjects, name, wantRef, wantSubjects)
	}
}

func TestManifestDaemonSet(t *testing.T) {
	ds := decodeManifest(t, readManifest(t)).daemonSet
	if ds.Name != "kindnode-cni" || ds.Namespace != "kube-system" {
		t.Errorf("DaemonSet %s/%s, want kube-system/kindnode-cni", ds.Namespace, ds.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("selector %v (err %v) does not select the pod template's labels %v", ds.Spec.Selector, err, ds.Spec.Template.Labels)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("update strategy %q, want RollingUpdate", ds.Spec.UpdateStrategy.Type)
	}
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || pod.PriorityClassName != "system-node-critical" || pod.ServiceAccountName != "kindnode-cni" {
		t.Errorf("hostNetwork %v, priorityClassName %q, serviceAccountName %q; want true, system-node-critical, kindnode-cni",
			pod.HostNetwork, pod.PriorityClassName, pod.ServiceAccountName)
	}
	if want := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}; !reflect.DeepEqual(pod.Tolerations, want) {
		t.Errorf("tolerations %+v, want %+v", pod.Tolerations, want)
	}
	if len(pod.Containers) == 0 {
		t.Fatal("no containers")
	}
	checkCNIContainer(t, pod.Containers[0])
	checkCNIConfVolume(t, pod)
}

func checkCNIContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	if c.Image != "docker.io/couchbench/kindnode-cni:v1" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %q pull policy %q, want docker.io/couchbench/kindnode-cni:v1 IfNotPresent", c.Image, c.ImagePullPolicy)
	}
	if !reflect.DeepEqual(c.Command, []string{"/kindnode-cni"}) {
		t.Errorf("command %q, want [/kindnode-cni]", c.Command)
	}
	// kind appends CONTROL_PLANE_ENDPOINT with a JSON patch "add .../containers/0/env/-",
	// which fails unless env is already a list.
	wantEnv := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	if !reflect.DeepEqual(c.Env, wantEnv) {
		t.Errorf("env %+v, want only NODE_NAME from spec.nodeName", c.Env)
	}
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Error("the container is not privileged")
	}
	wantResources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("20Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("50Mi")},
	}
	if !quantitiesEqual(c.Resources.Requests, wantResources.Requests) || !quantitiesEqual(c.Resources.Limits, wantResources.Limits) {
		t.Errorf("resources %+v, want %+v", c.Resources, wantResources)
	}
}

func quantitiesEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if want, ok := b[name]; !ok || q.Cmp(want) != 0 {
			return false
		}
	}
	return true
}

func checkCNIConfVolume(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	var mount *corev1.VolumeMount
	for i, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath == "/etc/cni/net.d" {
			mount = &pod.Containers[0].VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatal("nothing is mounted at /etc/cni/net.d")
	}
	for _, v := range pod.Volumes {
		if v.Name == mount.Name {
			if v.HostPath == nil || v.HostPath.Path != "/etc/cni/net.d" {
				t.Errorf("volume %s is %+v, want hostPath /etc/cni/net.d", v.Name, v.VolumeSource)
			}
			return
		}
	}
	t.Errorf("no volume %q for the /etc/cni/net.d mount", mount.Name)
}
