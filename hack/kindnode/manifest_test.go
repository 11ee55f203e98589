// Package kindnode holds what the air-gapped kind node image carries besides binaries; these
// tests read default-cni.yaml as kind does and run the few lines that write flannel's CNI
// config. They talk to no server: the e2e suite's multi-node cluster is what shows the pod
// network working.
package kindnode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const podSubnet = "10.244.0.0/16"

// applied returns the manifest's objects as kind creates them: run through text/template with
// the cluster's pod subnet (the first marker line), every document decoded strictly so that a
// misspelt field fails here rather than being dropped by the API server.
func applied(t *testing.T) (*appsv1.DaemonSet, *corev1.ConfigMap) {
	t.Helper()
	raw, err := os.ReadFile("default-cni.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.SplitN(string(raw), "\n", 3); len(lines) < 3 ||
		lines[0] != "# would you kindly template this file" || lines[1] != "# would you kindly patch this file" {
		t.Fatal("the first two lines are not kind's template and patch markers")
	}
	tmpl, err := template.New("cni-manifest").Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ PodSubnet string }{podSubnet}); err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	var cm corev1.ConfigMap
	targets := map[string]any{"ServiceAccount": &corev1.ServiceAccount{}, "ClusterRole": &rbacv1.ClusterRole{},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBinding{}, "ConfigMap": &cm, "DaemonSet": &ds}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(&out))
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
		if !ok {
			t.Fatalf("unexpected or repeated object of kind %q", meta.Kind)
		}
		delete(targets, meta.Kind)
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	if len(targets) > 0 {
		t.Fatalf("missing from the manifest: %v", targets)
	}
	return &ds, &cm
}

// TestManifestAsKindAppliesIt: flannel's network is the cluster's pod subnet, kind's patch
// has an env list to append to, and nothing runs privileged: NET_ADMIN and NET_RAW are the
// only capabilities added.
func TestManifestAsKindAppliesIt(t *testing.T) {
	ds, cm := applied(t)
	var netConf struct{ Network string }
	if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &netConf); err != nil || netConf.Network != podSubnet {
		t.Errorf("net-conf.json %q (%v): want Network %s", cm.Data["net-conf.json"], err, podSubnet)
	}
	pod := ds.Spec.Template.Spec
	if len(pod.Containers) == 0 || pod.Containers[0].Env == nil {
		t.Fatal("the first container has no env list for kind to append CONTROL_PLANE_ENDPOINT to")
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s is privileged", c.Name)
		}
		if sc.Capabilities != nil {
			for _, capability := range sc.Capabilities.Add {
				if capability != "NET_ADMIN" && capability != "NET_RAW" {
					t.Errorf("container %s adds %s", c.Name, capability)
				}
			}
		}
	}
}

// TestCNIConfigWrittenFromSubnetEnv runs the cni-config container's script on subnet.env
// files as flanneld writes them and checks the config the bridge and host-local plugins get.
func TestCNIConfigWrittenFromSubnetEnv(t *testing.T) {
	ds, _ := applied(t)
	i := slices.IndexFunc(ds.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "cni-config" })
	if i < 0 {
		t.Fatal("no cni-config container")
	}
	command := ds.Spec.Template.Spec.Containers[i].Command
	for _, tc := range []struct{ subnet, network string }{
		{"10.244.3.1/24", "10.244.3.0/24"},
		{"10.244.17.1/20", "10.244.16.0/20"},
		{"10.244.0.1/24", "10.244.0.0/24"},
	} {
		dir := t.TempDir()
		env := filepath.Join(dir, "subnet.env")
		conf := filepath.Join(dir, "10-flannel.conflist")
		if err := os.WriteFile(env, []byte("FLANNEL_NETWORK="+podSubnet+"\nFLANNEL_SUBNET="+tc.subnet+"\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Env = append(os.Environ(), "SUBNET_ENV="+env, "CNI_CONF="+conf)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		// Its own process group, so that its idle sleep goes with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		data, err := waitForFile(conf, 10*time.Second)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if err != nil {
			t.Fatalf("subnet %s: %v; stderr: %s", tc.subnet, err, stderr.String())
		}
		var list struct {
			CNIVersion string
			Plugins    []struct {
				Type string
				MTU  int
				IPAM struct {
					Type   string
					Ranges [][]struct{ Subnet string }
				}
			}
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("subnet %s: %v\n%s", tc.subnet, err, data)
		}
		if len(list.Plugins) != 2 || list.Plugins[0].Type != "bridge" || list.Plugins[1].Type != "portmap" {
			t.Fatalf("subnet %s: plugins %+v, want bridge and portmap", tc.subnet, list.Plugins)
		}
		bridge := list.Plugins[0]
		if bridge.MTU != 1450 || bridge.IPAM.Type != "host-local" || len(bridge.IPAM.Ranges) != 1 || len(bridge.IPAM.Ranges[0]) != 1 ||
			bridge.IPAM.Ranges[0][0].Subnet != tc.network {
			t.Errorf("subnet %s: bridge %+v, want MTU 1450 and host-local on %s", tc.subnet, bridge, tc.network)
		}
	}
}

func waitForFile(path string, limit time.Duration) ([]byte, error) {
	deadline := time.Now().Add(limit)
	for {
		data, err := os.ReadFile(path)
		if err == nil || time.Now().After(deadline) {
			return data, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
