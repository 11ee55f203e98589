package helmrelease

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// ReleaseKinds are the only kinds a confined release may create: what a CouchDB release of
// the Apache chart makes, all namespaced. The installer's ClusterRole
// (config/rbac/installer_role.yaml) grants exactly these; a test holds the two together.
var ReleaseKinds = []schema.GroupKind{
	{Kind: "ConfigMap"},
	{Kind: "PersistentVolumeClaim"},
	{Kind: "Secret"},
	{Kind: "Service"},
	{Kind: "ServiceAccount"},
	{Group: "apps", Kind: "StatefulSet"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
	{Group: "policy", Kind: "PodDisruptionBudget"},
}

// Limits of a confined release: Helm keeps the chart, the values and the rendered manifests
// of a release in its record, one Secret, which the API server holds to 1 MiB; past these a
// release could not be recorded anyway, and rendering it would only take the operator's time.
const (
	// MaxValuesBytes bounds a release's values, as JSON.
	MaxValuesBytes = 128 << 10
	// MaxChartTemplates bounds the templates of a chart and its dependencies (the Apache
	// chart has 15).
	MaxChartTemplates = 500
	// MaxManifestBytes bounds the rendered manifests of a release.
	MaxManifestBytes = 2 << 20
)

// RefusedError says why a confined release was refused: the object and the rule it broke.
// Nothing of the release was created.
type RefusedError struct {
	// Kind, Namespace and Name name the object ("" for a rule about the whole release).
	Kind, Namespace, Name string
	Rule                  string
}

func (e *RefusedError) Error() string {
	if e.Kind == "" {
		return e.Rule
	}
	if e.Namespace == "" {
		return fmt.Sprintf("%s %s: %s", e.Kind, e.Name, e.Rule)
	}
	return fmt.Sprintf("%s %s/%s: %s", e.Kind, e.Namespace, e.Name, e.Rule)
}

// confinement is the post-renderer of a confined release: it passes the rendered manifests
// through unchanged when every object keeps to what a CouchDB release may do in namespace,
// and refuses the release otherwise, before Helm creates anything. Helm does not post-render
// hooks, which a confined install therefore does not run.
type confinement struct {
	namespace string
	evaluator psapolicy.Evaluator
}

func newConfinement(namespace string) (*confinement, error) {
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("helmrelease: the Pod Security checks: %w", err)
	}
	return &confinement{namespace: namespace, evaluator: evaluator}, nil
}

// Run is Helm's postrender.PostRenderer.
func (c *confinement) Run(manifests *bytes.Buffer) (*bytes.Buffer, error) {
	if manifests.Len() > MaxManifestBytes {
		return nil, &RefusedError{Rule: fmt.Sprintf("the chart renders %d bytes of manifests; a release may have at most %d", manifests.Len(), MaxManifestBytes)}
	}
	objects, err := decodeManifests(manifests.Bytes())
	if err != nil {
		return nil, err
	}
	// The ServiceAccounts the release makes: the only ones its pods may run as.
	own := map[string]bool{}
	for _, obj := range objects {
		if obj.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "ServiceAccount"}) {
			own[obj.GetName()] = true
		}
	}
	for _, obj := range objects {
		if rule := c.check(obj, own); rule != "" {
			return nil, &RefusedError{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Rule: rule}
		}
	}
	return manifests, nil
}

// check is the rule obj breaks, or "".
func (c *confinement) check(obj *unstructured.Unstructured, ownServiceAccounts map[string]bool) string {
	gk := obj.GroupVersionKind().GroupKind()
	if !slices.Contains(ReleaseKinds, gk) {
		return fmt.Sprintf("a CouchDB release may create only %s", kindList())
	}
	if ns := obj.GetNamespace(); ns != "" && ns != c.namespace {
		return fmt.Sprintf("a release may create objects only in its own namespace, %s", c.namespace)
	}
	switch gk {
	case schema.GroupKind{Kind: "Service"}:
		var svc corev1.Service
		if err := fromUnstructured(obj, &svc); err != nil {
			return err.Error()
		}
		switch {
		case svc.Spec.Type == corev1.ServiceTypeExternalName:
			return "a Service of type ExternalName is not allowed (it would name a host outside the release)"
		case len(svc.Spec.ExternalIPs) > 0:
			return "a Service with externalIPs is not allowed (it would take traffic for addresses outside the release)"
		}
	case schema.GroupKind{Kind: "Secret"}:
		var secret corev1.Secret
		if err := fromUnstructured(obj, &secret); err != nil {
			return err.Error()
		}
		if secret.Type == corev1.SecretTypeServiceAccountToken {
			return "a Secret of type kubernetes.io/service-account-token is not allowed (it would hold a token of another ServiceAccount)"
		}
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		var sts appsv1.StatefulSet
		if err := fromUnstructured(obj, &sts); err != nil {
			return err.Error()
		}
		return c.checkPod(&sts.Spec.Template, ownServiceAccounts)
	}
	return ""
}

// checkPod holds a pod template to a ServiceAccount of the release's own (or none) and to
// the Pod Security Standards' baseline level, as the API server's Pod Security admission
// would check it.
func (c *confinement) checkPod(tmpl *corev1.PodTemplateSpec, ownServiceAccounts map[string]bool) string {
	//nolint:staticcheck // the deprecated alias names a ServiceAccount too
	for _, sa := range []string{tmpl.Spec.ServiceAccountName, tmpl.Spec.DeprecatedServiceAccount} {
		if sa != "" && sa != "default" && !ownServiceAccounts[sa] {
			return fmt.Sprintf("its pods may run as no ServiceAccount but one the release makes, not %q", sa)
		}
	}
	results := c.evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()},
		&tmpl.ObjectMeta, &tmpl.Spec)
	if agg := psapolicy.AggregateCheckResults(results); !agg.Allowed {
		return fmt.Sprintf("its pods do not meet the Pod Security Standards' baseline level: %s (%s)", agg.ForbiddenReason(), agg.ForbiddenDetail())
	}
	return ""
}

func kindList() string {
	names := make([]string, len(ReleaseKinds))
	for i, gk := range ReleaseKinds {
		names[i] = gk.String()
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// decodeManifests reads the YAML documents Helm rendered, leaving out empty ones.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered manifests: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("reading the rendered manifests: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("not a valid %s: %v", obj.GetKind(), err)
	}
	return nil
}

// countTemplates counts the templates of a chart and its dependencies.
func countTemplates(ch *chart.Chart) int {
	n := len(ch.Templates)
	for _, dep := range ch.Dependencies() {
		n += countTemplates(dep)
	}
	return n
}
