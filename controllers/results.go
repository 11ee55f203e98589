package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// mergeSummary puts what one step measured for one arm into status; each step owns one
// part of an arm's results, so a repeated merge changes nothing.
func mergeSummary(bench *benchv1.CouchBenchmark, arm string, kind benchv1.Step, s *results.Summary) {
	st := &bench.Status
	var from *benchv1.QueryServerResults
	for i := range s.Results {
		if s.Results[i].QueryServer == arm {
			from = &s.Results[i]
		}
	}
	if s.Server != "" {
		st.Server = s.Server
	}
	if from == nil {
		return
	}
	to := armResults(st, arm)
	to.Language = from.Language
	switch kind {
	case benchv1.StepSeed:
		to.Seeding = from.Seeding
	case benchv1.StepIndex:
		to.Indexing = from.Indexing
	case benchv1.StepViews:
		to.ViewReads = from.ViewReads
	case benchv1.StepWrites:
		to.Writes = from.Writes
	}
	var best *int64
	for _, q := range st.Results {
		for _, ix := range q.Indexing {
			if best == nil || ix.ChangesPerSecond > *best {
				v := ix.ChangesPerSecond
				best = &v
			}
			indexRate.WithLabelValues(bench.Namespace, bench.Name, q.QueryServer, ix.Profile, string(ix.Reducer)).Set(float64(ix.ChangesPerSecond))
		}
	}
	st.BestChangesPerSecond = best
}

// armResults is the status entry of an arm, made on first use.
func armResults(st *benchv1.CouchBenchmarkStatus, arm string) *benchv1.QueryServerResults {
	for i := range st.Results {
		if st.Results[i].QueryServer == arm {
			return &st.Results[i]
		}
	}
	st.Results = append(st.Results, benchv1.QueryServerResults{QueryServer: arm})
	return &st.Results[len(st.Results)-1]
}

// writeResults keeps the results ConfigMap equal to what status says, once a run has
// started; it runs before the status write, so a failed write is redone with it.
func (r *CouchBenchmarkReconciler) writeResults(ctx context.Context, bench *benchv1.CouchBenchmark) error {
	if bench.Status.StartTime == nil {
		return nil
	}
	bench.Status.ResultsConfigMap = builders.ResultsConfigMapName(bench)
	want, err := builders.ResultsConfigMap(bench, bench.Status.Server)
	if err != nil {
		return err
	}
	var have corev1.ConfigMap
	err = r.Get(ctx, keyOf(want), &have)
	if apierrors.IsNotFound(err) {
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if owner, err := r.ownerOf(ctx, bench, &have); err != nil || owner != ours {
		// A deleted benchmark's results, not yet garbage-collected: written on a later step.
		return err
	}
	if equality.Semantic.DeepEqual(have.Data, want.Data) {
		return nil
	}
	have.Data = want.Data
	return r.Update(ctx, &have)
}
