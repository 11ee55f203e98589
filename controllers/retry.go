package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Two kinds of failure pass by themselves, and neither ends a run nor reads as an error:
//   - a transient failure of a step's own work (the network, a chart repository's 5xx, the
//     API server's "try again": helmrelease.Transient) is retried within the step, with a
//     backoff, until retryTransientFor after the step started (retryTransient); only then,
//     or for a failure that will not pass (a chart version that does not exist), does the
//     step fail;
//   - an optimistic-lock conflict (another writer changed an object since it was read) is
//     routine: the reconcile starts again from a fresh read (requeueOnConflict).
const (
	retryTransientFor = 5 * time.Minute
	minRetryDelay     = 5 * time.Second
	maxRetryDelay     = time.Minute
	// conflictRetry is how soon a reconcile that lost an optimistic-lock race runs again.
	conflictRetry = time.Second
)

// retryTransient is the outcome of a step whose work failed in a way that may pass (what
// says why): a retry after as long as the step has taken so far, between minRetryDelay and
// maxRetryDelay (a backoff that doubles from try to try), until retryTransientFor after the
// step started; then a failure with reason. Both come from the step's start in status and the
// clock, so a restarted manager keeps the same backoff and bound.
func (r *CouchBenchmarkReconciler) retryTransient(bench *benchv1.CouchBenchmark, reason, what string) stepOutcome {
	started := bench.Status.Progress.StepStartTime.Time
	taken := r.Clock.Since(started)
	if taken >= retryTransientFor {
		return failed(reason, "%s; still failing after retrying for %s", what, retryTransientFor)
	}
	return stepOutcome{
		requeueAfter: min(max(taken, minRetryDelay), maxRetryDelay),
		retrying: fmt.Sprintf("%s; this may pass (network, chart repository or API server): retrying until %s",
			what, started.Add(retryTransientFor).UTC().Format(time.RFC3339)),
	}
}

// requeueOnConflict turns a reconcile that failed on an optimistic-lock conflict ("the object
// has been modified; please apply your changes to the latest version") into what it is, a
// routine retry: logged at info level, without the error log and stack trace of a failed
// reconcile, and run again shortly from a fresh read. Other errors go back as they are.
func requeueOnConflict(ctx context.Context, result ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil || !apierrors.IsConflict(err) {
		return result, err
	}
	log.FromContext(ctx).Info("an object changed since it was read; reconciling again from the latest version", "conflict", err.Error())
	return ctrl.Result{RequeueAfter: conflictRetry}, nil
}
