package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// What a GitOps tool puts on the objects it applies says which of its objects applied them,
// not from which revision: Flux's kustomize-controller (v1.9) labels them
// kustomize.toolkit.fluxcd.io/name and /namespace, the Kustomization, whose status names the
// revision it applies (lastAttemptedRevision; lastAppliedRevision only once its health checks
// pass, which a schedule that is not healthy holds back); Argo CD labels them
// app.kubernetes.io/instance or annotates them argocd.argoproj.io/tracking-id, the
// Application (not read here).

// fluxKustomization is Flux's Kustomization kind, and the labels it puts on what it applies.
var fluxKustomization = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}

const (
	labelFluxName      = "kustomize.toolkit.fluxcd.io/name"
	labelFluxNamespace = "kustomize.toolkit.fluxcd.io/namespace"
)

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get

// sourceRevision is the source revision the schedule is applied from, as far as it says: its
// annotation bench.couchbench.io/revision, else the revision the Flux Kustomization that
// applied it is at (e.g. "main@sha1:0c6fe0d..."); "" when neither says. A Kustomization that
// cannot be read (none, no Flux, no right to read it) leaves it unknown: it names a change, it
// never holds a run up.
func (r *CouchBenchmarkScheduleReconciler) sourceRevision(ctx context.Context, s *benchv1.CouchBenchmarkSchedule) string {
	if rev := s.Annotations[benchv1.AnnotationRevision]; rev != "" {
		return rev
	}
	name, namespace := s.Labels[labelFluxName], s.Labels[labelFluxNamespace]
	if name == "" || namespace == "" {
		return ""
	}
	k := &unstructured.Unstructured{}
	k.SetGroupVersionKind(fluxKustomization)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, k); err != nil {
		log.FromContext(ctx).V(1).Info("the schedule's revision: reading its Flux Kustomization", "kustomization", namespace+"/"+name, "error", err.Error())
		return ""
	}
	rev, _, _ := unstructured.NestedString(k.Object, "status", "lastAttemptedRevision")
	return rev
}
