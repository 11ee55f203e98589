//go:build e2e

package e2e

// The suite's Flux: source-controller and kustomize-controller v1.9.6, built from their Go
// modules (hack/flux/images.sh, which hack/e2e.sh runs), with their CRDs from the same modules,
// reading a Git repository served inside the cluster by Debian's git (git http-backend behind
// busybox httpd). Installed once, by the first Flux test that runs.

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	fluxNamespace = "flux-system"
	// gitRepository is the GitRepository every Flux test's Kustomization reads, one folder each.
	gitRepository = "bench"
	gitServer     = "git"
)

var (
	fluxOnce sync.Once
	fluxErr  error
	// commits serializes the tests' commits to the one repository.
	commits sync.Mutex
)

// useFlux installs the suite's Flux once; a test that needs it fails when it cannot be.
func useFlux(t *testing.T) {
	t.Helper()
	fluxOnce.Do(func() { fluxErr = installFlux(context.Background()) })
	if fluxErr != nil {
		t.Fatalf("installing Flux: %v", fluxErr)
	}
}

// fluxModules are the controllers' modules, whose config/crd/bases hold their CRDs.
var fluxModules = []string{"github.com/fluxcd/source-controller", "github.com/fluxcd/kustomize-controller"}

func installFlux(ctx context.Context) error {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	for _, module := range fluxModules {
		list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
		list.Dir, list.Stderr = filepath.Join(root, "hack", "flux"), os.Stderr
		dir, err := list.Output()
		if err != nil {
			return fmt.Errorf("finding module %s: %w", module, err)
		}
		crds, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "config", "crd", "bases", "*.yaml"))
		if err != nil || len(crds) == 0 {
			return fmt.Errorf("the CRDs of %s: none (%v)", module, err)
		}
		for _, file := range crds {
			if err := applyFile(ctx, file); err != nil {
				return err
			}
		}
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "flux"}},
		// The controllers apply whatever the repository holds (CRD-typed objects, in any
		// namespace), as Flux's own install lets them.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "couchbench-e2e-flux"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: fluxNamespace, Name: "flux"}}},
		fluxController("source-controller", 9090, "--watch-all-namespaces", "--storage-path=/data",
			"--storage-adv-addr=source-controller."+fluxNamespace+".svc.cluster.local."),
		fluxController("kustomize-controller", 0, "--watch-all-namespaces"),
		service(fluxNamespace, "source-controller", 80, 9090),
		gitServerDeployment(),
		service(fluxNamespace, gitServer, 8080, 8080),
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	for _, name := range []string{"source-controller", "kustomize-controller", gitServer} {
		if err := waitAvailable(ctx, fluxNamespace, name); err != nil {
			return err
		}
	}
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": fluxNamespace, "name": gitRepository},
		"spec": map[string]any{
			"url":      fmt.Sprintf("http://%s.%s.svc:8080/cgi-bin/git/bench.git", gitServer, fluxNamespace),
			"ref":      map[string]any{"branch": "main"},
			"interval": "10s",
		},
	}}
	if err := c.Create(ctx, repo); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func applyFile(ctx context.Context, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("couchbench-e2e"), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s: %w", file, err)
	}
	return nil
}

// fluxController is a Flux controller's Deployment as Flux's own manifests make it (its
// config/manager), on the image hack/flux/images.sh built; port, when not 0, is its artifact
// server's.
func fluxController(name string, port int32, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	container := corev1.Container{
		Name: "manager", Image: "couchbench/flux-" + name + ":" + tag, ImagePullPolicy: corev1.PullIfNotPresent,
		Args: append([]string{"--log-level=info", "--log-encoding=json", "--enable-leader-election=false"}, args...),
		Env: []corev1.EnvVar{{Name: "RUNTIME_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "TUF_ROOT", Value: "/tmp/.sigstore"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(9440)}}, PeriodSeconds: 2},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
	}
	if port != 0 {
		container.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: port}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "flux", TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1337)},
					Containers:      []corev1.Container{container},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

func service(namespace, name string, port, target int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(target)}}},
	}
}

// gitServerScript makes an empty repository bench.git, served read and write over smart HTTP
// by git http-backend as busybox httpd's CGI, and a clone of it in /work that the tests commit
// in (gitCommit) and push from.
const gitServerScript = `set -e
mkdir -p /srv/git /srv/cgi-bin
git init -q --bare -b main /srv/git/bench.git
git -C /srv/git/bench.git config http.receivepack true
printf '#!/bin/sh\nexport GIT_PROJECT_ROOT=/srv/git GIT_HTTP_EXPORT_ALL=1\nexec git http-backend\n' >/srv/cgi-bin/git
chmod +x /srv/cgi-bin/git
git clone -q /srv/git/bench.git /work
git -C /work config user.name couchbench-e2e
git -C /work config user.email e2e@couchbench.invalid
git -C /work commit -q --allow-empty -m "an empty repository"
git -C /work push -q origin HEAD:main
exec busybox httpd -f -v -p 8080 -h /srv
`

func gitServerDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": gitServer}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: gitServer},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: gitServer, Image: envOr("E2E_GIT_IMAGE", "couchbench/e2e-git:bookworm"), ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", gitServerScript},
					Ports:   []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/cgi-bin/git/bench.git/info/refs?service=git-upload-pack", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
				}}},
			},
		},
	}
}

// gitCommit writes files (path: content; "" removes the file) into the repository, commits
// them with message and pushes; it returns the commit's hash.
func gitCommit(t *testing.T, message string, files map[string]string) string {
	t.Helper()
	commits.Lock()
	defer commits.Unlock()
	var script strings.Builder
	script.WriteString("set -e\ncd /work\n")
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if files[path] == "" {
			fmt.Fprintf(&script, "git rm -q %q\n", path)
			continue
		}
		fmt.Fprintf(&script, "mkdir -p \"$(dirname %q)\"\nprintf %%s %s | base64 -d >%q\ngit add %q\n", path,
			base64.StdEncoding.EncodeToString([]byte(files[path])), path, path)
	}
	fmt.Fprintf(&script, "git commit -q -m %q\ngit push -q origin HEAD:main\ngit rev-parse HEAD\n", message)
	out := execInGitServer(t, script.String())
	return strings.TrimSpace(out)
}

// execInGitServer runs a shell script in the git server's pod and returns what it printed.
func execInGitServer(t *testing.T, script string) string {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(fluxNamespace), client.MatchingLabels{"app": gitServer}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("the git server's pod: %d (%v)", len(pods.Items), err)
	}
	cfg, cs := clientset(t)
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(fluxNamespace).Name(pods.Items[0].Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: gitServer, Command: []string{"sh", "-c", script}, Stdout: true, Stderr: true},
			clientgoscheme.ParameterCodec)
	executor, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("in the git server: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// kustomization is a Flux Kustomization of the suite's repository's folder path, applying
// what is there with wait (health checks by kstatus on everything it applied), pruning what
// leaves it, every 30 s; force recreates what an apply cannot change.
func kustomization(name, path string, force bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": fluxNamespace, "name": name},
		"spec": map[string]any{
			"sourceRef": map[string]any{"kind": "GitRepository", "name": gitRepository},
			"path":      "./" + path, "prune": true, "wait": true, "force": force,
			"interval": "30s", "retryInterval": "10s", "timeout": "1m",
		},
	}}
}

// createKustomization creates it afresh (one of an earlier run is deleted first, with what it
// applied) and deletes it when the test ends.
func createKustomization(t *testing.T, k *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	remove := func() {
		_ = c.Delete(ctx, k.DeepCopy())
		_ = poll(ctx, 3*time.Minute, func() (bool, string) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(k), k.DeepCopy())), "Kustomization still there"
		})
	}
	remove()
	if err := c.Create(ctx, k.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
}

// fluxObject reads a Flux object's current state.
func fluxObject(t *testing.T, proto *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(proto.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(proto), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// readyCondition is a Flux object's Ready condition: its status, reason and message.
func readyCondition(obj *unstructured.Unstructured) (status, reason, message string) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

// reconcileNow asks Flux to reconcile the repository and then the Kustomization now, as `flux
// reconcile ks --with-source` does: the Kustomization is asked only once the repository has
// fetched the newest commit, since asked together it may apply the artifact it already had.
// It returns the Kustomization's Ready condition once it has handled its request.
func reconcileNow(t *testing.T, k *unstructured.Unstructured) (status, reason, message string) {
	t.Helper()
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"})
	repo.SetNamespace(fluxNamespace)
	repo.SetName(gitRepository)
	requestReconcile(t, repo, "True")
	return requestReconcile(t, k, "True", "False")
}

// requestReconcile annotates a Flux object with a reconcile request and waits until it has
// handled that request, or a later one (the tests beside this one ask for the same
// repository, and Flux may handle two requests in one reconcile), with its Ready status one
// of ready; it returns its Ready condition then.
func requestReconcile(t *testing.T, obj *unstructured.Unstructured, ready ...string) (status, reason, message string) {
	t.Helper()
	ctx := context.Background()
	at := time.Now()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, at.Format(time.RFC3339Nano)))
	if err := c.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 5*time.Minute, func() (bool, string) {
		got := fluxObject(t, obj)
		handled, _, _ := unstructured.NestedString(got.Object, "status", "lastHandledReconcileAt")
		handledAt, err := time.Parse(time.RFC3339Nano, handled)
		status, reason, message = readyCondition(got)
		return err == nil && !handledAt.Before(at) && slices.Contains(ready, status),
			fmt.Sprintf("%s %s: handled %q (asked %s), Ready %s %s %s", got.GetKind(), got.GetName(), handled, at.Format(time.RFC3339Nano), status, reason, message)
	}); err != nil {
		t.Fatal(err)
	}
	return status, reason, message
}
