package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/results"
)

// maxChanges bounds the changed metrics status lists; the results ConfigMap has every row.
const maxChanges = 20

// baselineOf reads the benchmark's baseline; nil when it names none or it does not exist.
func (r *CouchBenchmarkReconciler) baselineOf(ctx context.Context, bench *benchv1.CouchBenchmark) (*benchv1.CouchBenchmark, error) {
	if bench.Spec.Baseline == nil {
		return nil, nil
	}
	var base benchv1.CouchBenchmark
	err := r.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: bench.Spec.Baseline.Benchmark}, &base)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return &base, err
}

// checkBaseline is the preflight of spec.baseline: it must exist and have run the same
// dataset and workloads, or the run's verdict could never be given. A run waits (Stalled) for
// a baseline that does not exist yet.
func (r *CouchBenchmarkReconciler) checkBaseline(ctx context.Context, bench *benchv1.CouchBenchmark) (*stepFailure, error) {
	if bench.Spec.Baseline == nil {
		return nil, nil
	}
	base, err := r.baselineOf(ctx, bench)
	if err != nil {
		return nil, err
	}
	name := bench.Spec.Baseline.Benchmark
	if base == nil {
		return &stepFailure{reason: reasonBaselineNotFound, message: fmt.Sprintf(
			"spec.baseline.benchmark: CouchBenchmark %q does not exist in namespace %q; name a run of the same dataset and workloads",
			name, bench.Namespace)}, nil
	}
	refused, err := compare.Refusals(base.Spec, bench.Spec)
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		return &stepFailure{reason: reasonNotComparable, message: fmt.Sprintf(
			"spec.baseline.benchmark: %s ran another dataset or other workloads, so no verdict could be given (%s); "+
				"name a baseline with the same spec.dataset and spec.workloads, or remove spec.baseline",
			name, strings.Join(refused, "; "))}, nil
	}
	return nil, nil
}

// judge compares the finished run (its stored documents) with its baseline: the verdict goes
// to status, the Regressed and Improved conditions, an event, the metrics and the stored
// results. A run of a schedule allows for the spread between the schedule's earlier runs.
func (r *CouchBenchmarkReconciler) judge(ctx context.Context, bench *benchv1.CouchBenchmark, docs []*results.Document) error {
	if bench.Spec.Baseline == nil {
		return nil
	}
	st := &bench.Status
	name := bench.Spec.Baseline.Benchmark
	base, err := r.baselineOf(ctx, bench)
	if err != nil {
		return err
	}
	if base == nil || base.Status.Phase != benchv1.PhaseSucceeded {
		reason, message := reasonBaselineNotFound, fmt.Sprintf("baseline %s does not exist any more", name)
		if base != nil {
			reason, message = reasonBaselineNotFinished, fmt.Sprintf("baseline %s has not succeeded (phase %q)", name, base.Status.Phase)
		}
		st.Comparison = &benchv1.ComparisonSummary{Baseline: name, Verdict: benchv1.VerdictInconclusive, Summary: message}
		r.recordVerdict(bench, metav1.ConditionUnknown, metav1.ConditionUnknown, reason, message)
		return r.summarize(ctx, bench, docs, nil)
	}
	baseDocs, err := r.storedDocuments(ctx, base)
	if err != nil {
		return err
	}
	opts := compare.OptionsOf(bench.Spec.Baseline)
	if opts.History, err = r.runHistory(ctx, bench); err != nil {
		return err
	}
	c, err := compare.Compare(baseDocs, docs, opts)
	if err != nil {
		return err
	}
	st.Comparison = comparisonSummary(name, c)
	regressed, improved := verdictConditions(c)
	reason := string(c.Verdict)
	if len(c.Refused) > 0 {
		reason = reasonNotComparable
	}
	r.recordVerdict(bench, regressed, improved, reason, st.Comparison.Summary)
	recordVerdictMetric(bench, c.Verdict)
	return r.summarize(ctx, bench, docs, &c)
}

// recordVerdict sets the Regressed and Improved conditions, with an event.
func (r *CouchBenchmarkReconciler) recordVerdict(bench *benchv1.CouchBenchmark, regressed, improved metav1.ConditionStatus, reason, message string) {
	st := &bench.Status
	now := r.Clock.Now()
	setCondition(&st.Conditions, bench.Generation, now, conditionRegressed, regressed, reason, message)
	setCondition(&st.Conditions, bench.Generation, now, conditionImproved, improved, reason, message)
	kind := corev1.EventTypeNormal
	if regressed == metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(bench, nil, kind, reason, "Compare", "against %s: %s", bench.Spec.Baseline.Benchmark, message)
}

// verdictConditions are the Regressed and Improved conditions' statuses for a comparison:
// Unknown when it could judge nothing (inconclusive, or refused).
func verdictConditions(c compare.Comparison) (regressed, improved metav1.ConditionStatus) {
	switch c.Verdict {
	case compare.Regressed:
		improved = metav1.ConditionFalse
		for _, row := range c.Rows {
			if row.Verdict == compare.Improved {
				improved = metav1.ConditionTrue
			}
		}
		return metav1.ConditionTrue, improved
	case compare.Improved:
		return metav1.ConditionFalse, metav1.ConditionTrue
	case compare.Unchanged:
		return metav1.ConditionFalse, metav1.ConditionFalse
	}
	return metav1.ConditionUnknown, metav1.ConditionUnknown
}

// comparisonSummary is the comparison's compact form in status.
func comparisonSummary(baseline string, c compare.Comparison) *benchv1.ComparisonSummary {
	return summaryOf(baseline, c.Verdict, c.Summary(), c.Rows)
}

// armsSummary is the arms' comparison's compact form in status.
func armsSummary(a *compare.ArmsComparison) *benchv1.ComparisonSummary {
	if a == nil {
		return nil
	}
	return summaryOf(a.Reference, a.Verdict(), a.Summary(), a.Rows)
}

func summaryOf(baseline string, verdict compare.Verdict, summary string, rows []compare.Row) *benchv1.ComparisonSummary {
	s := &benchv1.ComparisonSummary{Baseline: baseline, Verdict: benchv1.Verdict(verdict), Summary: summary}
	for _, row := range rows {
		switch row.Verdict {
		case compare.Regressed:
			s.Regressed++
		case compare.Improved:
			s.Improved++
		case compare.Unchanged:
			s.Unchanged++
		default:
			s.Inconclusive++
		}
		if (row.Verdict == compare.Regressed || row.Verdict == compare.Improved) && len(s.Changes) < maxChanges {
			change := benchv1.MetricChange{
				Metric:  strings.Join([]string{row.QueryServer, row.Profile, row.Workload, row.Variant, row.Metric}, "/"),
				Verdict: benchv1.Verdict(row.Verdict),
			}
			if d := row.Change(); d != nil {
				change.DeltaPercent = fmt.Sprintf("%+.1f%%", *d)
			}
			if iv := row.Interval; iv != nil {
				change.Interval = fmt.Sprintf("[%+.1f%%, %+.1f%%]", iv.LowPercent, iv.HighPercent)
			}
			s.Changes = append(s.Changes, change)
		}
	}
	return s
}
