package controllers

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/couchbench/couchbench/internal/builders"
)

// ownObjects selects the objects the operator makes: builders.Labels puts it on every one.
var ownObjects = labels.SelectorFromSet(labels.Set{builders.LabelManagedBy: builders.ManagedBy})

// cacheOptions keep the manager's informer caches to what the reconcilers watch, and lean:
// no managedFields (nothing reads them), only the operator's own Jobs (it reads no other), and
// of every Node only whether it is ready (keepNodeReadiness; the results' provenance reads the
// few nodes it describes whole, past the cache). namespaces, when given, are the only ones
// watched; Nodes belong to no namespace and are watched whatever they are.
func cacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}: {Label: ownObjects},
			&corev1.Node{}: {Transform: keepNodeReadiness},
		},
	}
	for _, ns := range namespaces {
		if opts.DefaultNamespaces == nil {
			opts.DefaultNamespaces = map[string]cache.Config{}
		}
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}

// clientOptions make the manager's client read what no reconciler watches from the API
// server, never from an informer: reading one of those kinds through the cache would start a
// watch on every such object in the cluster (every ConfigMap and Secret, Helm's release
// Secrets among them) and keep them all in memory for a read now and then.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Pod{}, &appsv1.StatefulSet{}},
	}}
}

// WatchNamespaces reads the manager's --watch-namespaces: a comma-separated list of
// namespaces, or empty for all. An empty item is refused rather than skipped, because to
// controller-runtime's cache an empty namespace means every namespace: a stray comma would
// otherwise widen a namespaced install to the whole cluster.
func WatchNamespaces(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var namespaces []string
	for item := range strings.SplitSeq(list, ",") {
		ns := strings.TrimSpace(item)
		if ns == "" {
			return nil, fmt.Errorf("--watch-namespaces %q has an empty item: list namespaces separated by commas, or leave it empty to watch all", list)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(namespaces, ns) {
			return nil, fmt.Errorf("--watch-namespaces %q names %s twice", list, ns)
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, nil
}

// ChartRepositories reads the manager's --chart-repositories: a comma-separated list of
// chart repository (http://, https://) and OCI registry (oci://) URLs, or empty for none.
func ChartRepositories(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for item := range strings.SplitSeq(list, ",") {
		raw := strings.TrimSpace(item)
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--chart-repositories: %q: %w", raw, err)
		case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci", u.Host == "":
			return nil, fmt.Errorf("--chart-repositories: %q is not an https://, http:// or oci:// URL with a host", raw)
		}
		out = append(out, raw)
	}
	return out, nil
}
