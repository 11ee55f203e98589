package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Objects are found by their fixed names, so an object of the right name may belong to
// someone else: a deleted benchmark of the same name whose objects the garbage collector
// has not removed yet (a benchmark deleted and applied again), or, rarely, another
// benchmark whose names join to the same string.
type foreignOwner int

const (
	ours foreignOwner = iota
	// leftover: its owner is gone; the garbage collector will remove it, so wait.
	leftover
	// collision: another live benchmark owns it.
	collision
)

// ownerOf tells whose an object is.
func (r *CouchBenchmarkReconciler) ownerOf(ctx context.Context, bench *benchv1.CouchBenchmark, obj client.Object) (foreignOwner, error) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID == bench.UID {
		return ours, nil
	}
	var other benchv1.CouchBenchmark
	err := r.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: ref.Name}, &other)
	if apierrors.IsNotFound(err) || (err == nil && other.UID != ref.UID) {
		return leftover, nil
	}
	if err != nil {
		return ours, err
	}
	return collision, nil
}

// notOurs turns a foreign object into the step's outcome: wait for a leftover to go, fail
// on a collision.
func notOurs(owner foreignOwner, obj client.Object) stepOutcome {
	if owner == leftover {
		return stepOutcome{requeueAfter: pollWhileProvisioning}
	}
	return failed(reasonNameCollision, "%s %s belongs to benchmark %s; two benchmarks' names join to the same object name: rename one",
		fmt.Sprintf("%T", obj)[1:], obj.GetName(), metav1.GetControllerOf(obj).Name)
}

// createOwned creates obj, or finds the one of its name; ok is false with the outcome to
// return when that one is not this benchmark's.
func (r *CouchBenchmarkReconciler) createOwned(ctx context.Context, bench *benchv1.CouchBenchmark, obj client.Object) (stepOutcome, bool, error) {
	err := r.Create(ctx, obj)
	if err == nil {
		return stepOutcome{}, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return stepOutcome{}, false, err
	}
	// Read past the cache: it holds only the operator's own Jobs, and the one in the way may
	// be anybody's.
	existing := obj.DeepCopyObject().(client.Object)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return stepOutcome{}, false, err
	}
	owner, err := r.ownerOf(ctx, bench, existing)
	if err != nil || owner != ours {
		return notOurs(owner, existing), false, err
	}
	return stepOutcome{}, true, nil
}
