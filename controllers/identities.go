package controllers

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/couchbench/couchbench/internal/builders"
)

// identity is one of the operator's ServiceAccounts in a benchmark's namespace, bound there to
// one of its ClusterRoles, and a right that binding gives, by which ensureIdentity sees the
// binding take effect.
type identity struct {
	name, clusterRole string
	right             authorizationv1.ResourceAttributes
}

// installer is the identity Helm acts as (stage_provision.go): a chart creates a StatefulSet.
func (r *CouchBenchmarkReconciler) installer() identity {
	return identity{name: builders.InstallerName, clusterRole: r.InstallerClusterRole,
		right: authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "statefulsets"}}
}

// cpuReader is the identity the runner Jobs that carry a CPU cost run as when the operator
// reads CouchDB pods' CPU time (stage_runner.go): it execs into them.
func (r *CouchBenchmarkReconciler) cpuReader() identity {
	return identity{name: builders.CPUReaderName, clusterRole: r.CPUReaderClusterRole,
		right: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec"}}
}

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;delete,resourceNames=couchbench-installer;couchbench-cpu-reader
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate,resourceNames=couchbench-installer
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=couchbench-installer;couchbench-cpu-reader

// ensureIdentity makes the identity's ServiceAccount in namespace and its RoleBinding to the
// identity's ClusterRole. The operator may create that binding without holding the role's
// rights itself (bind, on those ClusterRoles only); a binding of that name that binds
// something else (roleRef cannot change) is replaced.
func (r *CouchBenchmarkReconciler) ensureIdentity(ctx context.Context, namespace string, id identity) error {
	if err := r.Create(ctx, builders.NamespaceServiceAccount(namespace, id.name)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the ServiceAccount %s/%s: %w", namespace, id.name, err)
	}
	want := builders.NamespaceRoleBinding(namespace, id.name, id.clusterRole)
	err := r.Create(ctx, want)
	if err == nil {
		return r.bound(ctx, namespace, id)
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var have rbacv1.RoleBinding
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
		return err
	}
	if have.RoleRef == want.RoleRef && equality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
		return nil
	}
	log.FromContext(ctx).Info("replacing a RoleBinding of the operator's, which binds something else", "namespace", namespace,
		"name", id.name, "roleRef", have.RoleRef.Name, "subjects", have.Subjects)
	if err := r.Delete(ctx, &have, client.Preconditions{UID: &have.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	if err := r.Create(ctx, want); err != nil {
		return err
	}
	return r.bound(ctx, namespace, id)
}

// bound waits, briefly, until the API server's authorizer grants the identity its right. A
// RoleBinding just made takes a moment to reach the authorizer, and Helm's install, acting as
// the installer at once, was refused meanwhile: the run failed ChartRefused for rights the
// installer had. After bindingWait it gives up and lets the identity's first request say what
// it is refused.
func (r *CouchBenchmarkReconciler) bound(ctx context.Context, namespace string, id identity) error {
	deadline := time.Now().Add(bindingWait)
	right := id.right
	right.Namespace = namespace
	for {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               serviceaccount.MakeUsername(namespace, id.name),
			Groups:             serviceaccount.MakeGroupNames(namespace),
			ResourceAttributes: &right,
		}}
		if err := r.Create(ctx, review); err != nil {
			return fmt.Errorf("asking whether %s may %s %s in %s: %w", id.name, right.Verb, right.Resource, namespace, err)
		}
		if review.Status.Allowed || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bindingWait is how long bound waits for a new binding to take effect.
const bindingWait = 5 * time.Second
