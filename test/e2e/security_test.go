//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// What the administrator tried on kind, through the real chart path (the operator
// installed by its chart, ConfigMap charts allowed, Helm acting as the namespace's installer):
// a namespace editor's ConfigMap chart that puts a ConfigMap into kube-system, and one whose
// template reads kube-system's Secrets with lookup. Both runs fail with ChartRefused, and
// nothing of either exists afterwards, in kube-system or the namespace.
func TestSecurityEditorsChartStaysInItsNamespace(t *testing.T) {
	ctx := context.Background()
	editor := namespaceEditor(t)
	if can(t, editor, "kube-system", "configmaps", "create") || can(t, editor, "kube-system", "secrets", "list") {
		t.Fatal("the editor may do by themselves what the charts try")
	}
	for _, tc := range []struct {
		name, template string
		refused        []string
	}{{
		name:     "sec-escape",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sec-escaped\n  namespace: kube-system\ndata: {owned: \"yes\"}\n",
		refused:  []string{"ConfigMap kube-system/sec-escaped", "only in its own namespace"},
	}, {
		name: "sec-lookup",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sec-stolen\ndata:\n" +
			"  secrets: {{ lookup \"v1\" \"Secret\" \"kube-system\" \"\" | toJson | quote }}\n",
		refused: []string{"forbidden", "system:serviceaccount:" + namespace + ":couchbench-installer", "kube-system"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tc.name + "-chart"},
				BinaryData: map[string][]byte{"chart.tgz": packagedChart(t, tc.template)}}
			_ = c.Delete(ctx, cm)
			if err := editor.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(ctx, cm) })
			b := provisioned(tc.name, &benchv1.ChartSource{ConfigMap: &benchv1.ChartConfigMap{Name: cm.Name}}, 1,
				benchv1.QueryServer{Name: "js", Language: "javascript"})
			b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1}}
			if err := removeBenchmark(b); err != nil {
				t.Fatal(err)
			}
			if err := editor.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := removeBenchmark(b); err != nil {
					t.Error(err)
				}
			})
			got := waitPhase(t, b, 5*time.Minute)
			stalled := meta.FindStatusCondition(got.Status.Conditions, "Stalled")
			if got.Status.Phase != benchv1.PhaseFailed || stalled == nil || stalled.Reason != "ChartRefused" {
				t.Fatalf("phase %s, Stalled %+v; want Failed with ChartRefused", got.Status.Phase, stalled)
			}
			contains(t, "the refusal", stalled.Message, tc.refused...)
			t.Logf("refused: %s", stalled.Message)
			for _, where := range []string{"kube-system", namespace} {
				for _, name := range []string{"sec-escaped", "sec-stolen"} {
					if err := c.Get(ctx, client.ObjectKey{Namespace: where, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
						t.Errorf("ConfigMap %s/%s: %v; want none", where, name, err)
					}
				}
			}
			var records corev1.SecretList
			if err := c.List(ctx, &records, client.InNamespace(namespace), client.MatchingLabels{"owner": "helm", "name": tc.name + "-js"}); err != nil || len(records.Items) > 0 {
				t.Errorf("Helm's records of the refused release: %d, %v; want none", len(records.Items), err)
			}
		})
	}
}

// The manager's metrics: the suite's Prometheus scrapes them with its ServiceAccount's token
// (docs/alerts.md's configuration), and the same scrape without a token is refused.
func TestSecurityMetricsNeedAToken(t *testing.T) {
	type target struct {
		Labels    map[string]string `json:"labels"`
		Health    string            `json:"health"`
		LastError string            `json:"lastError"`
	}
	var answer struct {
		Data struct {
			ActiveTargets []target `json:"activeTargets"`
		} `json:"data"`
	}
	var with, without []target
	if err := poll(context.Background(), 2*time.Minute, func() (bool, string) {
		if err := monitoringGet(context.Background(), prometheusService, "9090", "/api/v1/targets", map[string]string{"state": "active"}, &answer); err != nil {
			return false, err.Error()
		}
		with, without = nil, nil
		for _, tg := range answer.Data.ActiveTargets {
			switch tg.Labels["job"] {
			case "couchbench-operator":
				with = append(with, tg)
			case metricsWithoutTokenJob:
				without = append(without, tg)
			}
		}
		scraped := len(with) > 0 && len(without) > 0 && with[0].Health != "unknown" && without[0].Health != "unknown"
		return scraped, fmt.Sprintf("targets %+v", answer.Data.ActiveTargets)
	}); err != nil {
		t.Fatal(err)
	}
	for _, tg := range with {
		if tg.Health != "up" {
			t.Errorf("the scrape with a token: %+v; want up", tg)
		}
	}
	for _, tg := range without {
		if tg.Health != "down" || !strings.Contains(tg.LastError, "401") && !strings.Contains(tg.LastError, "403") {
			t.Errorf("the scrape without a token: %+v; want it refused with 401 or 403", tg)
		}
		t.Logf("without a token: %s", tg.LastError)
	}
}

// namespaceEditor is a client acting as a user bound to the built-in edit role in the
// suite's namespace, into which the chart's users are given CouchBenchmarks (here by a Role).
func namespaceEditor(t *testing.T) client.Client {
	t.Helper()
	ctx := context.Background()
	const user = "e2e-namespace-editor"
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "e2e-benchmarks"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{benchv1.GroupVersion.Group}, Resources: []string{"couchbenchmarks"}, Verbs: []string{"*"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "e2e-benchmarks"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "e2e-benchmarks"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "e2e-edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName, cfg.Impersonate.Groups = user, []string{"system:authenticated"}
	editor, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return editor
}

// can asks the API server whether the client's identity may verb resource in ns.
func can(t *testing.T, cl client.Client, ns, resource, verb string) bool {
	t.Helper()
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Resource: resource, Verb: verb}}}
	if err := cl.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

// packagedChart is a chart of one template, packaged as `helm package` does.
func packagedChart(t *testing.T, template string) []byte {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "escalate", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/t.yaml", Data: []byte(template)}}}
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
