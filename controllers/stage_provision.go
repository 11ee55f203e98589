package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// provision installs the arm's CouchDB with the Helm chart: first the admin Secret the
// chart reads (made once; the chart would otherwise make a new password on every render),
// then the identity Helm acts as in the namespace (ensureIdentity), then the release.
// Install is idempotent, so a restarted manager finds the release and moves on.
func (r *CouchBenchmarkReconciler) provision(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	if out, late := r.pastClusterTimeout(bench, "provisioning"); late {
		return out, nil
	}
	secret, err := builders.AdminSecret(bench, qs.Name, builders.Random)
	if err != nil {
		return stepOutcome{}, err
	}
	if out, ok, err := r.createOwned(ctx, bench, secret); !ok {
		return out, err
	}
	if err := r.ensureIdentity(ctx, bench.Namespace, r.installer()); err != nil {
		return stepOutcome{}, err
	}
	values, err := builders.HelmValues(bench, qs)
	if err != nil {
		return failed(reasonChartFailed, "Helm values for query server %s: %v", qs.Name, err), nil
	}
	ref, problem, err := r.chartRef(ctx, bench)
	if err != nil {
		return stepOutcome{}, err
	}
	if problem != "" {
		return failed(reasonChartFailed, "%s", problem), nil
	}
	release := builders.ReleaseName(bench, qs.Name)
	st, err := r.Releases.Install(ctx, bench.Namespace, release, ref, values, builders.Labels(bench, qs.Name, ""))
	var refused *helmrelease.RefusedError
	switch {
	case errors.As(err, &refused):
		return failed(reasonChartRefused, "%s as release %s was refused, and nothing of it was created: %v%s", ref, release, err, refusalHint(refused)), nil
	case apierrors.IsForbidden(err):
		return failed(reasonChartRefused, "%s as release %s was refused by the API server: it asked for what the installer ServiceAccount %s may not do "+
			"(the installer ClusterRole's rights in namespace %s): %v", ref, release, builders.InstallerName, bench.Namespace, err), nil
	case errors.Is(err, helmrelease.ErrChartNotAllowed):
		return failed(reasonChartNotAllowed, "%v; %s", err, chartSourceHint(ref)), nil
	case err != nil && helmrelease.Transient(err):
		// A chart download that failed on the network or a repository's 5xx left nothing; an
		// install that the API server cut short left a release Helm recorded as failed, which
		// goes before the next try.
		if st.State == helmrelease.Failed {
			if err := r.Releases.Uninstall(ctx, bench.Namespace, release); err != nil {
				return stepOutcome{}, err
			}
		}
		return r.retryTransient(bench, reasonChartFailed, fmt.Sprintf("installing %s as release %s: %v", ref, release, err)), nil
	case err != nil && !errors.Is(err, helmrelease.ErrReleaseFailed):
		return failed(reasonChartFailed, "installing %s as release %s: %v", ref, release, err), nil
	}
	switch {
	case st.State == helmrelease.Deployed:
		return stepOutcome{done: true}, nil
	case st.State == helmrelease.Pending, strings.Contains(st.Description, "context canceled"), strings.Contains(st.Description, "context deadline exceeded"):
		// A release still pending, or one that failed because its install was cut short, was
		// left by a manager that stopped mid-install or by an install past its deadline. It is
		// this benchmark's: remove it and install again.
		if err := r.Releases.Uninstall(ctx, bench.Namespace, release); err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{requeueAfter: time.Second}, nil
	default:
		return failed(reasonChartFailed, "release %s is %s: %s", release, st.State, st.Description), nil
	}
}

// refusalHint says what to change for a refusal of the whole release (its size).
func refusalHint(refused *helmrelease.RefusedError) string {
	if refused.Kind != "" {
		return ""
	}
	return "; a CouchDB release needs a few KiB of values and a few dozen templates (spec.couchdb.provision.values and chart)"
}

// checkChartSource refuses a chart from a source the operator's installer did not allow,
// before anything is read or fetched, saying which value of the operator's chart allows it.
func (r *CouchBenchmarkReconciler) checkChartSource(bench *benchv1.CouchBenchmark) *stepFailure {
	c := bench.Spec.CouchDB.Provision.Chart
	if c == nil {
		return nil
	}
	ref := helmrelease.ChartRef{Repository: c.Repository, Name: c.Name, Version: c.Version}
	if c.ConfigMap != nil {
		// Not read yet: only the kind of source matters.
		ref.Archive, ref.ArchiveSource = []byte{}, chartArchiveSource(bench.Namespace, *c.ConfigMap)
	}
	if err := r.ChartSources.Check(ref); err != nil {
		return &stepFailure{reason: reasonChartNotAllowed, message: fmt.Sprintf("%v; %s", err, chartSourceHint(ref))}
	}
	return nil
}

// chartSourceHint says how the installer allows a source: the operator chart's value, and the
// manager's flag it sets.
func chartSourceHint(ref helmrelease.ChartRef) string {
	if ref.Archive != nil {
		return "the operator's installer allows charts from ConfigMaps with the operator chart's value chartSources.configMaps=true " +
			"(the manager's --allow-configmap-charts), or leave spec.couchdb.provision.chart unset for the chart built into the operator"
	}
	return fmt.Sprintf("the operator's installer allows a repository with the operator chart's value chartSources.repositories "+
		"(the manager's --chart-repositories), e.g. --set 'chartSources.repositories={%s}', or leave spec.couchdb.provision.chart "+
		"unset for the chart built into the operator", ref.Repository)
}

// chartRef is the chart a spec names (none: the zero ChartRef, the chart built into the
// operator), with a chart kept in a ConfigMap read into memory. problem says what to fix
// when the ConfigMap does not hold a chart.
func (r *CouchBenchmarkReconciler) chartRef(ctx context.Context, bench *benchv1.CouchBenchmark) (helmrelease.ChartRef, string, error) {
	c := bench.Spec.CouchDB.Provision.Chart
	if c == nil {
		return helmrelease.ChartRef{}, "", nil
	}
	ref := helmrelease.ChartRef{Repository: c.Repository, Name: c.Name, Version: c.Version}
	if c.ConfigMap == nil {
		return ref, "", nil
	}
	archive, problem, err := r.chartArchive(ctx, bench.Namespace, *c.ConfigMap)
	ref.Archive, ref.ArchiveSource = archive, chartArchiveSource(bench.Namespace, *c.ConfigMap)
	return ref, problem, err
}

// chartArchive reads the packaged chart from its ConfigMap: the named key, or the only one.
// problem says what is wrong with the ConfigMap, for the user to fix.
func (r *CouchBenchmarkReconciler) chartArchive(ctx context.Context, namespace string, src benchv1.ChartConfigMap) ([]byte, string, error) {
	var cm corev1.ConfigMap
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: src.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("ConfigMap %q named in spec.couchdb.provision.chart.configMap does not exist in namespace %q; "+
			"create it from the packaged chart: kubectl create configmap %s --from-file=CHART.tgz", src.Name, namespace, src.Name), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the chart ConfigMap %q: %w", src.Name, err)
	}
	archives := map[string][]byte{}
	for k, v := range cm.BinaryData {
		archives[k] = v
	}
	for k, v := range cm.Data {
		archives[k] = []byte(v)
	}
	if src.Key != "" {
		if data, ok := archives[src.Key]; ok {
			return data, "", nil
		}
		return nil, fmt.Sprintf("ConfigMap %q has no key %q (spec.couchdb.provision.chart.configMap.key); it has %s",
			src.Name, src.Key, keyList(archives)), nil
	}
	if len(archives) != 1 {
		return nil, fmt.Sprintf("ConfigMap %q holds %d keys (%s): name the chart archive's in spec.couchdb.provision.chart.configMap.key",
			src.Name, len(archives), keyList(archives)), nil
	}
	for _, data := range archives {
		return data, "", nil
	}
	return nil, "", nil
}

// chartArchiveSource names a ConfigMap chart in messages.
func chartArchiveSource(namespace string, src benchv1.ChartConfigMap) string {
	s := fmt.Sprintf("ConfigMap %s/%s", namespace, src.Name)
	if src.Key != "" {
		s += fmt.Sprintf(" key %q", src.Key)
	}
	return s
}

func keyList(m map[string][]byte) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, strconv.Quote(k))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
