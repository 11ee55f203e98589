// Package controllers holds the CouchBenchmark reconciler. Each concern has its own file:
// this one reads the world and writes status; preflight.go checks what admission cannot
// (referenced objects); conditions.go keeps the kstatus-style conditions consistent.
package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// preflightRetry is how soon a benchmark whose preflight failed is looked at again. Secrets
// are read directly, not watched, so that the operator needs only `get` on them; a fixed
// Secret is noticed within this interval.
const preflightRetry = 30 * time.Second

// CouchBenchmarkReconciler reconciles CouchBenchmark objects.
type CouchBenchmarkReconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (Secrets), straight from the API
	// server.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Clock is injected so that tests control time.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the benchmark and what it refers to, rebuilds the status from those
// observations, and writes the status only when it changed.
func (r *CouchBenchmarkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)

	var bench benchv1.CouchBenchmark
	if err := r.Get(ctx, req.NamespacedName, &bench); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	findings, err := r.preflight(ctx, &bench)
	if err != nil {
		return ctrl.Result{}, err
	}

	status := bench.Status.DeepCopy()
	status.ObservedGeneration = bench.Generation
	if status.Phase == "" {
		status.Phase = benchv1.PhasePending
	}
	now := r.Clock.Now()
	if findings.blocked() {
		markStalled(status, bench.Generation, now, findings.reason, findings.message)
	} else {
		markWaiting(status, bench.Generation, now)
	}

	if equality.Semantic.DeepEqual(status, &bench.Status) {
		return requeueWhile(findings.blocked()), nil
	}
	wasBlocked := isStalled(&bench.Status)
	bench.Status = *status
	// A conflict means the benchmark changed since it was read; the error requeues it and
	// the next reconcile starts from the new version.
	if err := r.Status().Update(ctx, &bench); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case findings.blocked() && !wasBlocked:
		logger.Info("preflight failed", "reason", findings.reason, "message", findings.message)
		r.Recorder.Eventf(&bench, nil, "Warning", findings.reason, "Preflight", "%s", findings.message)
	case !findings.blocked() && wasBlocked:
		r.Recorder.Eventf(&bench, nil, "Normal", reasonPreflightPassed, "Preflight", "preflight checks passed")
	}
	return requeueWhile(findings.blocked()), nil
}

func requeueWhile(blocked bool) ctrl.Result {
	if blocked {
		return ctrl.Result{RequeueAfter: preflightRetry}
	}
	return ctrl.Result{}
}

// SetupWithManager registers the reconciler with the manager.
func (r *CouchBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&benchv1.CouchBenchmark{}).
		Named("couchbenchmark").
		Complete(r)
}
