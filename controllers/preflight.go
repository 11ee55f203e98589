package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// preflightRetry is how soon a benchmark whose preflight failed is looked at again. Secrets
// are read directly, not watched, so that the operator needs no watch on every Secret; a
// fixed Secret is noticed within this interval.
const preflightRetry = 30 * time.Second

// preflightFindings is the outcome of the checks that admission cannot make because they
// depend on other objects. An empty reason means nothing blocks the run.
type preflightFindings struct {
	reason  string
	message string
}

func (f preflightFindings) blocked() bool { return f.reason != "" }

// preflight checks the objects the spec refers to. It returns an error only when the API
// server could not answer; a missing or incomplete object is a finding, reported in the
// status with what to fix.
func (r *CouchBenchmarkReconciler) preflight(ctx context.Context, bench *benchv1.CouchBenchmark) (preflightFindings, error) {
	existing := bench.Spec.CouchDB.Existing
	if existing == nil {
		return preflightFindings{}, nil
	}
	ref := existing.CredentialsSecret
	var secret corev1.Secret
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return preflightFindings{
			reason: reasonCredentialsNotFound,
			message: fmt.Sprintf("Secret %q named in spec.couchdb.existing.credentialsSecret does not exist in namespace %q; "+
				"create it with keys %q and %q", ref.Name, bench.Namespace, ref.UsernameKey, ref.PasswordKey),
		}, nil
	}
	if err != nil {
		return preflightFindings{}, fmt.Errorf("reading credentials Secret %q: %w", ref.Name, err)
	}
	for _, key := range []string{ref.UsernameKey, ref.PasswordKey} {
		if len(secret.Data[key]) == 0 {
			return preflightFindings{
				reason: reasonCredentialsIncomplete,
				message: fmt.Sprintf("Secret %q has no value under key %q (spec.couchdb.existing.credentialsSecret); "+
					"add it or point usernameKey/passwordKey at the keys it has", ref.Name, key),
			}, nil
		}
	}
	return preflightFindings{}, nil
}
