//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v3/pkg/repo"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// Besides the operator's built-in chart (a benchmark's default), the Apache CouchDB chart
// 4.6.2 reaches the operator the two other ways a cluster without internet can use: a
// classic Helm repository served inside the cluster (a static HTTP server with index.yaml and
// the archive) and a ConfigMap holding the archive. Both serve the built-in chart's archive.
const (
	chartVersion    = helmrelease.BuiltInChartVersion
	chartFile       = "couchdb-" + chartVersion + ".tgz"
	chartRepository = "charts"
	// flakyChartRepository answers 503 before it serves the chart (flakyRepository).
	flakyChartRepository = "flaky-charts"
	chartConfigMap       = "couchdb-chart"
	// existingRelease is the CouchDB the "existing CouchDB" tests benchmark.
	existingRelease = "existing"
	existingSecret  = "existing-admin"
	existingPass    = "e2e-existing-password"
)

// repositoryChart names the chart in the in-cluster Helm repository.
func repositoryChart() *benchv1.ChartSource {
	return &benchv1.ChartSource{
		Repository: fmt.Sprintf("http://%s.%s.svc:8080", chartRepository, namespace), Name: "couchdb", Version: chartVersion,
	}
}

// configMapChart names the chart kept in a ConfigMap of the namespace.
func configMapChart() *benchv1.ChartSource {
	return &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: chartConfigMap}, Version: chartVersion}
}

// serveCharts makes both chart sources: the ConfigMap with the archive, and a Deployment
// serving index.yaml and the archive over HTTP (busybox httpd, in the image hack/e2e.sh
// builds from Debian's busybox, or E2E_HTTPD_IMAGE).
func serveCharts(ctx context.Context) error {
	archive := helmrelease.BuiltInArchive()
	dir, err := os.MkdirTemp("", "chart-repo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.WriteFile(filepath.Join(dir, chartFile), archive, 0o644); err != nil {
		return err
	}
	index, err := repo.IndexDirectory(dir, "")
	if err != nil {
		return err
	}
	indexFile := filepath.Join(dir, "index.yaml")
	if err := index.WriteFile(indexFile, 0o644); err != nil {
		return err
	}
	indexYAML, err := os.ReadFile(indexFile)
	if err != nil {
		return err
	}
	objects := []client.Object{
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: chartConfigMap},
			BinaryData: map[string][]byte{chartFile: archive},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: chartRepository},
			Data:       map[string]string{"index.yaml": string(indexYAML)},
			BinaryData: map[string][]byte{chartFile: archive},
		},
	}
	objects = append(objects, httpd(chartRepository, corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/index.yaml", Port: intstr.FromInt32(8080)}},
		httpdFiles{configMap: chartRepository, path: "/srv"})...)
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// httpdFiles is a ConfigMap that httpd serves or runs, mounted at path with mode (unset: the
// default 0644).
type httpdFiles struct {
	configMap, path string
	mode            *int32
}

// httpd is a Deployment of busybox httpd serving /srv on port 8080 (the image hack/e2e.sh
// builds from Debian's busybox, or E2E_HTTPD_IMAGE), ready when probe
// says so, and its Service of the same name.
func httpd(name string, probe corev1.ProbeHandler, files ...httpdFiles) []client.Object {
	labels := map[string]string{"app": name}
	// -vv logs every request's URL; -v logs only the errors httpd answers itself, without
	// the URL, so whoAnswered could not tell which server a stray request reached.
	container := corev1.Container{
		Name: "httpd", Image: envOr("E2E_HTTPD_IMAGE", "couchbench/e2e-httpd:bookworm"), ImagePullPolicy: corev1.PullIfNotPresent,
		Command:        []string{"busybox", "httpd", "-f", "-vv", "-p", "8080", "-h", "/srv"},
		Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: probe, PeriodSeconds: 2},
	}
	var volumes []corev1.Volume
	for _, f := range files {
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: f.configMap, MountPath: f.path, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: f.configMap, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: f.configMap}, DefaultMode: f.mode}}})
	}
	return []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534)},
						Containers:      []corev1.Container{container},
						Volumes:         volumes,
					},
				},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
		},
	}
}

// flakyRepository is the in-cluster chart repository (serveCharts' ConfigMap) behind a server
// that first answers 503 Service Unavailable to unavailable requests, as a repository behind a
// busy proxy does: busybox httpd runs a CGI script for /cgi-bin/repo/<file> that counts the
// requests in /tmp, then serves <file> from the ConfigMap. It is made afresh for the test, so
// that it counts from zero, and removed after it.
func flakyRepository(t *testing.T, unavailable int) *benchv1.ChartSource {
	t.Helper()
	ctx := context.Background()
	const name = flakyChartRepository
	script := fmt.Sprintf(`#!/bin/sh
n=$(( $(cat /tmp/requests 2>/dev/null || echo 0) + 1 ))
echo "$n" > /tmp/requests
# answer STATUS [FILE]: the answer, and a line in the pod's log (httpd's stderr) that
# whoAnswered reads when the test fails.
answer() {
	echo "request $n $PATH_INFO: $1" >&2
	if [ -n "$2" ]; then
		printf 'HTTP/1.1 %%s\r\nContent-Type: application/octet-stream\r\n\r\n' "$1"
		exec cat "$2"
	fi
	printf 'HTTP/1.1 %%s\r\nContent-Type: text/plain\r\n\r\n%%s\n' "$1" "$1"
	exit 0
}
[ "$n" -gt %d ] || answer '503 Service Unavailable'
case "$PATH_INFO" in
/index.yaml | /couchdb-*.tgz)
	[ ! -f "/charts$PATH_INFO" ] || answer '200 OK' "/charts$PATH_INFO"
	;;
esac
answer '404 Not Found'
`, unavailable)
	objects := append([]client.Object{&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string]string{"repo": script},
	}}, httpd(name, corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		httpdFiles{configMap: chartRepository, path: "/charts"}, httpdFiles{configMap: name, path: "/srv/cgi-bin", mode: ptr.To[int32](0o755)})...)
	remove := func() {
		for _, obj := range objects {
			if err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
		gone(t, "flaky repository pods", &corev1.PodList{}, map[string]string{"app": name})
	}
	remove()
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(remove)
	if err := waitAvailable(ctx, namespace, name); err != nil {
		t.Fatal(err)
	}
	return &benchv1.ChartSource{Repository: fmt.Sprintf("http://%s.%s.svc:8080/cgi-bin/repo", name, namespace), Name: "couchdb", Version: chartVersion}
}

// whoAnswered says, for a failed test of the flaky repository, who answered the operator's
// requests: the repository's own log (a line per answer), the lines of the suite's other
// busybox httpd servers (the chart repository, the git server) that name the flaky
// repository's path, which they would only see if the cluster's network sent its requests
// there, and the pods that have the repository pod's IP.
func whoAnswered(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	var flaky corev1.PodList
	if err := c.List(ctx, &flaky, client.InNamespace(namespace), client.MatchingLabels{"app": flakyChartRepository}); err != nil {
		return err.Error()
	}
	var all corev1.PodList
	if err := c.List(ctx, &all); err != nil {
		return err.Error()
	}
	for _, pod := range flaky.Items {
		fmt.Fprintf(&out, "flaky repository pod %s on %s, IP %s; its log:\n%s\n", pod.Name, pod.Spec.NodeName, pod.Status.PodIP,
			podLog(t, namespace, pod.Name, "httpd"))
		for _, other := range all.Items {
			if other.UID != pod.UID && other.Status.PodIP == pod.Status.PodIP && !other.Spec.HostNetwork {
				fmt.Fprintf(&out, "pod %s/%s on %s has the same IP (phase %s)\n", other.Namespace, other.Name, other.Spec.NodeName, other.Status.Phase)
			}
		}
	}
	for _, server := range []struct{ namespace, app, container string }{{namespace, chartRepository, "httpd"}, {fluxNamespace, gitServer, gitServer}} {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(server.namespace), client.MatchingLabels{"app": server.app}); err != nil {
			return err.Error()
		}
		for _, pod := range pods.Items {
			for line := range strings.Lines(podLog(t, server.namespace, pod.Name, server.container)) {
				if strings.Contains(line, "/cgi-bin/repo") {
					fmt.Fprintf(&out, "%s/%s (IP %s) was asked: %s", server.namespace, pod.Name, pod.Status.PodIP, line)
				}
			}
		}
	}
	return out.String()
}

// installExistingCouchDB installs a one-node CouchDB 3.4.3 with the built-in chart, as a user's
// running CouchDB, with its admin in a Secret the benchmarks name.
func installExistingCouchDB(ctx context.Context) error {
	return installCouchDB(ctx, existingRelease, "0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e", nil)
}

// installCouchDB installs a one-node CouchDB 3.4.3 with the built-in chart as release, with the
// server uuid and the admin of existingSecret; limits, when given, are its container's, and it
// has no liveness probe then: held to a small CPU limit on a loaded machine, it may answer the
// chart's probe (1 s) late, and the kubelet would restart it.
func installCouchDB(ctx context.Context, release, uuid string, limits map[string]any) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: existingSecret},
		StringData: map[string]string{"adminUsername": "admin", "adminPassword": existingPass,
			"cookieAuthSecret": "e2e-cookie-secret", "erlangCookie": "e2e-erlang-cookie"},
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// A small request: the CouchDB shares its node with the tests' runs, and takes what CPU is
	// free up to its limits.
	resources := map[string]any{"requests": map[string]any{"cpu": "100m"}}
	if limits != nil {
		resources["limits"] = limits
	}
	values := map[string]any{
		"clusterSize": 1, "createAdminSecret": false, "extraSecretName": existingSecret,
		"image":            map[string]any{"repository": "couchdb", "tag": "3.4.3", "pullPolicy": "IfNotPresent"},
		"initImage":        map[string]any{"repository": "couchdb", "tag": "3.4.3", "pullPolicy": "IfNotPresent"},
		"persistentVolume": map[string]any{"enabled": false},
		"resources":        resources,
		"couchdbConfig": map[string]any{"couchdb": map[string]any{"uuid": uuid, "single_node": true},
			"native_query_servers": map[string]any{"enable_erlang_query_server": true}},
	}
	if limits != nil {
		values["livenessProbe"] = map[string]any{"enabled": false}
	}
	if st, err := releases.Install(ctx, namespace, release, helmrelease.ChartRef{}, values, nil); err != nil {
		return fmt.Errorf("installing the CouchDB %s: %w (status %+v)", release, err, st)
	}
	return poll(ctx, 5*time.Minute, func() (bool, string) {
		var sts appsv1.StatefulSet
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-couchdb"}, &sts); err != nil {
			return false, err.Error()
		}
		return sts.Status.ReadyReplicas == 1, fmt.Sprintf("CouchDB %s: %d ready", release, sts.Status.ReadyReplicas)
	})
}

// existingTarget is the existing CouchDB as a benchmark names it.
func existingTarget() benchv1.CouchDBTarget { return couchDBTarget(existingRelease) }

// couchDBTarget is the CouchDB of release (installCouchDB) as a benchmark names it.
func couchDBTarget(release string) benchv1.CouchDBTarget {
	return benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{
		URL:               fmt.Sprintf("http://%s-svc-couchdb.%s.svc:5984", release, namespace),
		CredentialsSecret: benchv1.SecretKeys{Name: existingSecret, UsernameKey: "adminUsername", PasswordKey: "adminPassword"},
	}}
}
