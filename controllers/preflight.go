package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// preflightRetry is how soon a benchmark whose preflight failed is looked at again. Secrets
// and chart ConfigMaps are read directly, not watched, so that the operator needs no watch on
// every Secret; a fixed object is noticed within this interval.
const preflightRetry = 30 * time.Second

// preflight checks the objects the spec refers to: the baseline, the credentials Secret of an
// existing CouchDB, and a chart's source (allowed by the operator's installer?) and ConfigMap. It returns an error only when the API
// server could not answer; a missing or incomplete object is a finding, reported in the
// status with what to fix; nil means nothing blocks the run.
func (r *CouchBenchmarkReconciler) preflight(ctx context.Context, bench *benchv1.CouchBenchmark) (*stepFailure, error) {
	if found, err := r.checkBaseline(ctx, bench); found != nil || err != nil {
		return found, err
	}
	if refused := r.cpuCostNotMeasured(&bench.Spec); refused != nil {
		return refused, nil
	}
	if existing := bench.Spec.CouchDB.Existing; existing != nil {
		return r.checkCredentials(ctx, bench.Namespace, existing.CredentialsSecret)
	}
	if refused := r.checkChartSource(bench); refused != nil {
		return refused, nil
	}
	if chart := bench.Spec.CouchDB.Provision.Chart; chart != nil && chart.ConfigMap != nil {
		_, problem, err := r.chartArchive(ctx, bench.Namespace, *chart.ConfigMap)
		if err != nil || problem == "" {
			return nil, err
		}
		return &stepFailure{reason: reasonChartNotFound, message: problem}, nil
	}
	return nil, nil
}

// checkCredentials finds the Secret with an existing CouchDB's admin and both its keys.
func (r *CouchBenchmarkReconciler) checkCredentials(ctx context.Context, namespace string, ref benchv1.SecretKeys) (*stepFailure, error) {
	var secret corev1.Secret
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return &stepFailure{
			reason: reasonCredentialsNotFound,
			message: fmt.Sprintf("Secret %q named in spec.couchdb.existing.credentialsSecret does not exist in namespace %q; "+
				"create it with keys %q and %q", ref.Name, namespace, ref.UsernameKey, ref.PasswordKey),
		}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading credentials Secret %q: %w", ref.Name, err)
	}
	for _, key := range []string{ref.UsernameKey, ref.PasswordKey} {
		if len(secret.Data[key]) == 0 {
			return &stepFailure{
				reason: reasonCredentialsIncomplete,
				message: fmt.Sprintf("Secret %q has no value under key %q (spec.couchdb.existing.credentialsSecret); "+
					"add it or point usernameKey/passwordKey at the keys it has", ref.Name, key),
			}, nil
		}
	}
	return nil, nil
}

// cpuCostNotMeasured refuses a run that asks for a CPU cost the operator will not read: one
// that would stop on it (its steps could only end at their limits), or one that names an
// existing CouchDB's pods to read. It reads CouchDB pods only when its chart sets
// cpuCost.kubernetes: a provisioned CouchDB's, or those spec.couchdb.existing.cpuPods names.
// The spec cannot change, so the message says to create the benchmark again.
func (r *CouchBenchmarkReconciler) cpuCostNotMeasured(spec *benchv1.CouchBenchmarkSpec) *stepFailure {
	stopsOnCPU := spec.Sequential != nil && slices.Contains(spec.Sequential.StopOn, benchv1.SequentialCPUCost)
	namesPods := spec.CouchDB.Existing != nil && len(spec.CouchDB.Existing.CPUPods) > 0
	if r.readsCPU(spec) || !stopsOnCPU && !namesPods {
		return nil
	}
	off := "the operator reads CouchDB pods' CPU time only when installed to (the chart's cpuCost.kubernetes, the " +
		"kustomize component config/cpu-cost: the operator's installer decides; it is off)"
	var message string
	switch {
	case namesPods:
		message = "spec.couchdb.existing.cpuPods names pods to read, but " + off + "; create the benchmark again without cpuPods"
		if stopsOnCPU {
			message += " and with stopOn [changes_per_second] or without stopOn"
		}
	case r.CPUReaderClusterRole == "":
		message = fmt.Sprintf("spec.sequential.stopOn names %s, but %s: its steps could never stop on it; create the "+
			"benchmark again with stopOn [changes_per_second] or without stopOn", benchv1.SequentialCPUCost, off)
	default:
		message = fmt.Sprintf("spec.sequential.stopOn names %s, but the spec names none of the existing CouchDB's pods to "+
			"read it from: its steps could never stop on it; create the benchmark again with its pods in "+
			"spec.couchdb.existing.cpuPods, or with stopOn [changes_per_second]", benchv1.SequentialCPUCost)
	}
	return &stepFailure{reason: reasonCPUCostNotMeasured, message: message}
}

// readsCPU says whether the benchmark's runner Jobs read its CouchDB's CPU time (in the steps
// readsCPUIn names): a provisioned CouchDB's pods, or the existing one's the spec names.
func (r *CouchBenchmarkReconciler) readsCPU(spec *benchv1.CouchBenchmarkSpec) bool {
	if r.CPUReaderClusterRole == "" {
		return false
	}
	return spec.CouchDB.Provision != nil || spec.CouchDB.Existing != nil && len(spec.CouchDB.Existing.CPUPods) > 0
}
