//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dashboard"
)

// The monitoring the suite runs beside the operator: Debian's Prometheus 2.42 and Alertmanager
// 0.25 (hack/e2e.sh builds the image from Debian's packages: nothing is pulled), in one pod on
// the control-plane node so that the placement tests' workers stay as they were. Prometheus
// scrapes every replica of the operator through the chart's headless metrics Service, with
// the configuration docs/alerts.md gives for a Prometheus without Kubernetes discovery (which
// Debian builds it without), loads config/prometheus/couchbench-rules.yaml as it is, and
// sends what fires to the Alertmanager, configured with the route docs/alerts.md gives. The
// Service names are the ones that configuration points at (alertmanager.monitoring.svc:9093).
const (
	// metricsWithoutTokenJob scrapes the manager as the documented job does, without a token.
	metricsWithoutTokenJob = "couchbench-operator-without-token"
	monitoringNamespace    = "monitoring"
	prometheusService      = "prometheus"
	alertmanagerService    = "alertmanager"
)

// monitoringImage is the Prometheus and Alertmanager image hack/e2e.sh builds and loads.
var monitoringImage = envOr("E2E_MONITORING_IMAGE", "couchbench/e2e-prometheus:bookworm")

// documentedConfig is the YAML block of docs/alerts.md that begins with the comment "# name".
func documentedConfig(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile("(?s)```yaml\n(# " + regexp.QuoteMeta(name) + "\n.*?)```").FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("docs/alerts.md has no yaml block beginning with # %s", name)
	}
	return string(m[1]), nil
}

// installMonitoring starts Prometheus and Alertmanager as docs/alerts.md configures them,
// with the suite's intervals (5 s) in place of Prometheus's defaults (1 m) so that an alert
// fires and resolves within seconds of what it watches.
func installMonitoring(ctx context.Context) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	monitoringServices = cs.CoreV1().Services(monitoringNamespace)
	promConfig, err := documentedConfig("prometheus.yml, with DNS discovery")
	if err != nil {
		return err
	}
	amConfig, err := documentedConfig("alertmanager.yml")
	if err != nil {
		return err
	}
	rules, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "couchbench-rules.yaml"))
	if err != nil {
		return err
	}
	// A second job scrapes the same replicas without a token: the manager must refuse it
	// (TestSecurityMetricsNeedAToken reads its targets).
	withoutToken := strings.Replace(promConfig[strings.Index(promConfig, "- job_name: couchbench-operator\n"):strings.Index(promConfig, "alerting:")],
		"job_name: couchbench-operator\n", "job_name: "+metricsWithoutTokenJob+"\n", 1)
	withoutToken = regexp.MustCompile(`(?m)^  authorization:\n    credentials_file: .*\n`).ReplaceAllString(withoutToken, "")
	promConfig = "global: {scrape_interval: 5s, evaluation_interval: 5s}\n" + strings.Replace(promConfig, "alerting:", withoutToken+"alerting:", 1)
	labels := map[string]string{"app.kubernetes.io/name": "e2e-monitoring"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: monitoringNamespace, Name: name}
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitoringNamespace}},
		// Prometheus scrapes the manager with its ServiceAccount's token, bound to the
		// chart's metrics-reader ClusterRole, as docs/alerts.md says.
		&corev1.ServiceAccount{ObjectMeta: meta("e2e-monitoring")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-monitoring-couchbench-metrics"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "couchbench-couchbench-metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: monitoringNamespace, Name: "e2e-monitoring"}}},
		&corev1.ConfigMap{ObjectMeta: meta("e2e-monitoring"), Data: map[string]string{
			"prometheus.yml": promConfig, "couchbench-rules.yaml": string(rules), "alertmanager.yml": amConfig}},
		&corev1.Service{ObjectMeta: meta(prometheusService), Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromInt32(9090)}}}},
		&corev1.Service{ObjectMeta: meta(alertmanagerService), Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Name: "web", Port: 9093, TargetPort: intstr.FromInt32(9093)}}}},
		monitoringDeployment(labels),
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); apierrors.IsAlreadyExists(err) {
			// A cluster kept from an earlier run: this checkout's configuration replaces its.
			if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			err = poll(ctx, 2*time.Minute, func() (bool, string) {
				err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
				return err == nil, fmt.Sprintf("making %T %s again: %v", obj, obj.GetName(), err)
			})
			if err != nil {
				return err
			}
		} else if err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return waitAvailable(ctx, monitoringNamespace, "e2e-monitoring")
}

func monitoringDeployment(labels map[string]string) *appsv1.Deployment {
	mount := func(path, key string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: "config", MountPath: path, SubPath: key, ReadOnly: true}
	}
	small := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: monitoringNamespace, Name: "e2e-monitoring"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "e2e-monitoring",
					NodeSelector:       map[string]string{"node-role.kubernetes.io/control-plane": ""},
					Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoSchedule}},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534)},
					Containers: []corev1.Container{{
						Name: "prometheus", Image: monitoringImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"prometheus", "--config.file=/etc/prometheus/prometheus.yml",
							"--storage.tsdb.path=/data", "--web.listen-address=:9090"},
						Ports:        []corev1.ContainerPort{{Name: "prometheus", ContainerPort: 9090}},
						VolumeMounts: []corev1.VolumeMount{mount("/etc/prometheus/prometheus.yml", "prometheus.yml"), mount("/etc/prometheus/couchbench-rules.yaml", "couchbench-rules.yaml"), {Name: "prometheus-data", MountPath: "/data"}},
						Resources:    small,
					}, {
						Name: "alertmanager", Image: monitoringImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"prometheus-alertmanager", "--config.file=/etc/alertmanager/alertmanager.yml",
							"--storage.path=/data", "--web.listen-address=:9093", "--cluster.listen-address="},
						Ports:        []corev1.ContainerPort{{Name: "alertmanager", ContainerPort: 9093}},
						VolumeMounts: []corev1.VolumeMount{mount("/etc/alertmanager/alertmanager.yml", "alertmanager.yml"), {Name: "alertmanager-data", MountPath: "/data"}},
						Resources:    small,
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-monitoring"}}}},
						{Name: "prometheus-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "alertmanager-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// monitoringServices reaches the monitoring namespace's Services through the API server's
// proxy; installMonitoring sets it.
var monitoringServices corev1client.ServiceInterface

// monitoringGet asks a monitoring Service, through the API server's service proxy, for path
// with query, and decodes the JSON answer into out.
func monitoringGet(ctx context.Context, service, port, path string, query map[string]string, out any) error {
	data, err := monitoringServices.ProxyGet("http", service, port, path, query).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%s %s: %w (%s)", service, path, err, data)
	}
	return json.Unmarshal(data, out)
}

// promQuery evaluates query now in the suite's Prometheus.
func promQuery(ctx context.Context, query string) ([]dashboard.Series, error) {
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []dashboard.Series `json:"result"`
		} `json:"data"`
	}
	if err := monitoringGet(ctx, prometheusService, "9090", "/api/v1/query", map[string]string{"query": query}, &answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, answer.Error)
	}
	return answer.Data.Result, nil
}

// amAlert is an alert as the Alertmanager holds it.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
	Receivers []amReceiver `json:"receivers"`
}

type amReceiver struct {
	Name string `json:"name"`
}

// alertsIn are the Alertmanager's active alerts called name whose labels include match.
func alertsIn(ctx context.Context, name string, match map[string]string) ([]amAlert, error) {
	var all []amAlert
	if err := monitoringGet(ctx, alertmanagerService, "9093", "/api/v2/alerts", nil, &all); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(a amAlert) bool {
		if a.Labels["alertname"] != name {
			return true
		}
		for k, v := range match {
			if a.Labels[k] != v {
				return true
			}
		}
		return false
	}), nil
}

// waitForAlert waits until the Alertmanager holds an active alert called name with the
// labels of match, and returns it.
func waitForAlert(t *testing.T, name string, match map[string]string, limit time.Duration) amAlert {
	t.Helper()
	ctx := context.Background()
	var got []amAlert
	if err := poll(ctx, limit, func() (bool, string) {
		var err error
		got, err = alertsIn(ctx, name, match)
		firing, _ := promQuery(ctx, fmt.Sprintf("ALERTS{alertname=%q}", name))
		return err == nil && len(got) > 0, fmt.Sprintf("Alertmanager: %v (%v); Prometheus's ALERTS: %v", got, err, firing)
	}); err != nil {
		t.Fatalf("alert %s %v never reached the Alertmanager: %v", name, match, err)
	}
	t.Logf("Alertmanager holds %s: %s", name, got[0].Annotations["summary"])
	// docs/alerts.md's route sends every couchbench alert to the team's receiver.
	if !slices.Contains(got[0].Receivers, amReceiver{Name: "couchdb-performance"}) {
		t.Errorf("alert %s routed to %+v; want the receiver couchdb-performance", name, got[0].Receivers)
	}
	return got[0]
}

// waitForResolved waits until Prometheus no longer fires an alert called name with the labels
// of match and the Alertmanager holds it no more as active.
func waitForResolved(t *testing.T, name string, match map[string]string, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	var selector []string
	for k, v := range match {
		selector = append(selector, fmt.Sprintf("%s=%q", k, v))
	}
	query := fmt.Sprintf("ALERTS{alertname=%q,%s}", name, strings.Join(selector, ","))
	if err := poll(ctx, limit, func() (bool, string) {
		firing, perr := promQuery(ctx, query)
		active, aerr := alertsIn(ctx, name, match)
		return perr == nil && aerr == nil && len(firing) == 0 && len(active) == 0,
			fmt.Sprintf("Prometheus: %v (%v); Alertmanager: %v (%v)", firing, perr, active, aerr)
	}); err != nil {
		t.Fatalf("alert %s %v did not resolve: %v", name, match, err)
	}
}

// waitForNoSeries waits until Prometheus has no current series that selector matches.
func waitForNoSeries(t *testing.T, selector string, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := poll(ctx, limit, func() (bool, string) {
		left, err := promQuery(ctx, selector)
		return err == nil && len(left) == 0, fmt.Sprintf("%d series left: %v (%v)", len(left), left, err)
	}); err != nil {
		t.Fatalf("series %s: %v", selector, err)
	}
}

func countSucceeded(s *benchv1.CouchBenchmarkSchedule) int {
	n := 0
	for _, h := range s.Status.History {
		if h.Phase == benchv1.PhaseSucceeded {
			n++
		}
	}
	return n
}

// waitForRuns waits until the schedule has at least n successful runs in its history, or
// until done says so, failing the test on a failed run; it returns the successful runs' names.
func waitForRuns(t *testing.T, s *benchv1.CouchBenchmarkSchedule, n int, done func(*benchv1.CouchBenchmarkSchedule) bool) []string {
	t.Helper()
	ctx := context.Background()
	var got benchv1.CouchBenchmarkSchedule
	if err := poll(ctx, 25*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), &got); err != nil {
			return false, err.Error()
		}
		for _, h := range got.Status.History {
			if h.Phase == benchv1.PhaseFailed {
				t.Fatalf("run %s failed: %+v", h.Name, got.Status)
			}
		}
		if done != nil {
			return done(&got), fmt.Sprintf("history %+v shifts %+v", got.Status.History, got.Status.Shifts)
		}
		return countSucceeded(&got) >= n, fmt.Sprintf("history %+v", got.Status.History)
	}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range got.Status.History {
		if h.Phase == benchv1.PhaseSucceeded {
			names = append(names, h.Name)
		}
	}
	return names
}
