package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/compare"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// The results of a run live in one document per arm, each in a ConfigMap of its own (a
// ConfigMap holds at most 1 MiB; an arm's document, compressed, is tens of kilobytes and is
// thinned if it ever grows past maxDocumentBytes). Status, the rendered results ConfigMap and
// the metrics are all derived from those documents by results.Aggregate, after every step.

// maxDocumentBytes keeps an arm's compressed document, and the ConfigMap around it, under the
// API server's 1 MiB limit for one object.
const maxDocumentBytes = 900 << 10

// conditionThresholds reports the k6 thresholds of the spec: False with the failed ones.
// A failed threshold is a result, not a failed run.
const conditionThresholds = "ThresholdsPassed"

// storeStepDocument merges what one step measured into the stored document of each arm it
// measured, then derives status and the rendered results from every arm's document. Merging
// is idempotent, so a step read twice (a restarted manager) stores the same.
func (r *CouchBenchmarkReconciler) storeStepDocument(ctx context.Context, bench *benchv1.CouchBenchmark, step *results.Document) error {
	docs, err := r.storedDocuments(ctx, bench)
	if err != nil {
		return err
	}
	for _, a := range step.Arms {
		stored := &results.Document{}
		for _, d := range docs {
			if len(d.Arms) > 0 && d.Arms[0].QueryServer == a.QueryServer {
				stored = d
			}
		}
		if len(stored.Arms) == 0 {
			docs = append(docs, stored)
		}
		results.Merge(stored, results.ArmDocument(step, a.QueryServer))
		data, err := results.EncodeWithin(stored, maxDocumentBytes)
		if err != nil {
			return fmt.Errorf("storing the results of query server %s: %w", a.QueryServer, err)
		}
		if err := r.apply(ctx, bench, builders.DocumentConfigMap(bench, a.QueryServer, data)); err != nil {
			return err
		}
	}
	return r.summarize(ctx, bench, ordered(bench, docs), nil)
}

// storedDocuments reads every arm's stored document, past the cache: a document written by
// the previous step must be read back whole.
func (r *CouchBenchmarkReconciler) storedDocuments(ctx context.Context, bench *benchv1.CouchBenchmark) ([]*results.Document, error) {
	var docs []*results.Document
	for _, qs := range bench.Spec.QueryServers {
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: builders.DocumentConfigMapName(bench, qs.Name)}, &cm)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(&cm, bench) {
			continue // a deleted benchmark's, not yet garbage-collected
		}
		d, err := results.Decode(cm.BinaryData[benchv1.DocumentKey])
		if err != nil {
			return nil, fmt.Errorf("the stored results of query server %s (ConfigMap %s): %w", qs.Name, cm.Name, err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// ordered puts the documents in the spec's order of arms.
func ordered(bench *benchv1.CouchBenchmark, docs []*results.Document) []*results.Document {
	var out []*results.Document
	for _, qs := range bench.Spec.QueryServers {
		for _, d := range docs {
			if len(d.Arms) > 0 && d.Arms[0].QueryServer == qs.Name {
				out = append(out, d)
			}
		}
	}
	return out
}

// summarize makes status, the thresholds condition, the metrics and the rendered results
// (Markdown, CSV, an HTML page with charts; the comparison with the baseline, once there is
// one) views of the documents.
func (r *CouchBenchmarkReconciler) summarize(ctx context.Context, bench *benchv1.CouchBenchmark, docs []*results.Document, c *compare.Comparison) error {
	s := results.Aggregate(docs...)
	st := &bench.Status
	st.Results, st.BestChangesPerSecond, st.ReadP95, st.Server = s.Results, s.BestChangesPerSecond, s.ReadP95, s.Server
	arms, err := compare.Arms(docs, compare.OptionsOf(bench.Spec.Baseline))
	if err != nil {
		return err
	}
	st.Arms = armsSummary(arms)
	r.recordDecided(bench, arms)
	r.recordThresholds(bench, s.Thresholds)
	r.recordIsolation(bench, s.Isolation)
	r.recordSameNodes(bench, s.SameNodes)
	r.recordRuntimes(bench, s.Runtimes)
	recordResultMetrics(bench, docs)

	files, err := render(docs, c)
	if err != nil {
		return err
	}
	st.ResultsConfigMap = builders.ResultsConfigMapName(bench)
	return r.apply(ctx, bench, builders.ResultsConfigMap(bench, files))
}

// maxReportBytes keeps the HTML page, with the tables beside it, within a ConfigMap; a larger
// page (very many arms and profiles) is left to `couchbench report --format html`.
const maxReportBytes = 600 << 10

// render is the results as the results ConfigMap holds them: the run as `couchbench report`
// renders it (the arms set against the first included), then the comparison with the
// baseline, when there is one.
func render(docs []*results.Document, c *compare.Comparison) (map[string]string, error) {
	report := results.NewReport(docs...)
	var comparison []results.Table
	if c != nil {
		comparison = c.Tables()
	}
	var md, csv, page bytes.Buffer
	if err := compare.WriteRun(&md, docs); err != nil {
		return nil, err
	}
	if len(comparison) > 0 {
		md.WriteString("\n")
		if err := results.WriteMarkdown(&md, comparison); err != nil {
			return nil, err
		}
	}
	if err := results.WriteCSV(&csv, []results.Report{report}); err != nil {
		return nil, err
	}
	// The page is a view of the tables beside it: one that cannot be drawn is left out, as one
	// too large is, and the Markdown says why, rather than the run wait on it.
	pageErr := htmlreport.HTML(&page, comparison, docs...)
	if pageErr != nil {
		fmt.Fprintf(&md, "\nThe HTML page was left out: %v.\n", pageErr)
	}
	files := map[string]string{builders.ResultsMarkdownKey: md.String(), builders.ResultsCSVKey: csv.String()}
	if pageErr == nil && page.Len() <= maxReportBytes {
		files[builders.ResultsHTMLKey] = page.String()
	}
	if c != nil {
		data, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return nil, err
		}
		files[builders.ComparisonKey] = string(data)
	}
	return files, nil
}

// recordThresholds sets the ThresholdsPassed condition from the verdict on every arm's
// reads so far, with an event when thresholds fail.
func (r *CouchBenchmarkReconciler) recordThresholds(bench *benchv1.CouchBenchmark, v *results.ThresholdVerdict) {
	if v != nil {
		r.recordResultCondition(bench, conditionThresholds, v.Passed, reasonThresholdsMet, "every k6 threshold passed",
			reasonThresholdsFailed, "Reads", strings.Join(v.Failed, "; "))
	}
}

// recordIsolation sets the LoadIsolated condition from where the load generators ran so far,
// with an event when one shared a node with the CouchDB it measured.
func (r *CouchBenchmarkReconciler) recordIsolation(bench *benchv1.CouchBenchmark, v *results.IsolationVerdict) {
	if v != nil {
		r.recordResultCondition(bench, conditionLoadIsolated, v.Isolated, reasonSeparateNodes,
			"every load generator ran on a node without the CouchDB it measured", reasonSharedNode, "Placement",
			"load generators ran beside the CouchDB they measured and took CPU from it (results flagged SharedNode; "+
				"give the cluster a node for them, see spec.isolation): "+strings.Join(v.Shared, "; "))
	}
}

// recordSameNodes sets the ArmsOnSameNodes condition from where each arm's CouchDB ran, with
// an event when an arm ran elsewhere than the first.
func (r *CouchBenchmarkReconciler) recordSameNodes(bench *benchv1.CouchBenchmark, v *results.SameNodesVerdict) {
	if v != nil {
		r.recordResultCondition(bench, conditionSameNodes, v.Same, reasonSameNodes,
			"every arm's CouchDB ran on the first arm's nodes", reasonOtherNodes, "Placement",
			"arms' CouchDB ran on other nodes than the first arm's, so differences between arms include the hardware's "+
				"(free or label the first arm's nodes, see status.couchdbNodes): "+strings.Join(v.Other, "; "))
	}
}

// recordRuntimes sets the RuntimeAsAsked condition from what ran each arm's views, with an
// event when an arm's views ran on another runtime than it asks for: the arm was stopped, or
// measured with every number flagged RuntimeMismatch (spec.runtimeMismatch).
func (r *CouchBenchmarkReconciler) recordRuntimes(bench *benchv1.CouchBenchmark, v *results.RuntimesVerdict) {
	if v != nil {
		r.recordResultCondition(bench, conditionRuntimeAsAsked, v.AsAsked, reasonAsAsked,
			"every arm's views ran on what its preset, engine or command asks for (where it names one)",
			reasonRuntimeMismatch, "Probe", strings.Join(v.Mismatched, "; "))
	}
}

// recordDecided sets Decided for a run whose steps added rounds until their ratios were
// decided: False names the ratios the time limit or maxRounds left undecided, and how wide
// their intervals still were.
func (r *CouchBenchmarkReconciler) recordDecided(bench *benchv1.CouchBenchmark, arms *compare.ArmsComparison) {
	if arms == nil || len(arms.Sequential) == 0 {
		return
	}
	steps := compare.DescribeAll(arms.Sequential)
	var undecided []string
	for _, row := range arms.Undecided() {
		line := strings.Join([]string{row.QueryServer, row.Profile, row.Workload, row.Variant, row.Metric}, "/")
		if iv := row.Interval; iv != nil {
			line += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", iv.LowPercent, iv.HighPercent)
		}
		undecided = append(undecided, line)
	}
	r.recordResultCondition(bench, conditionDecided, len(undecided) == 0, reasonDecided,
		"every arm's ratio the steps had to decide (spec.sequential.stopOn) was decided ("+steps+")",
		reasonUndecided, "Decide", fmt.Sprintf("%s; undecided: %s; raise sequential.timeLimit or maxRounds, or run on a quieter node",
			steps, strings.Join(undecided, ", ")))
}

// recordResultCondition sets a condition the results decide: True with okReason and
// okMessage, or False with badReason and badMessage and a Warning event (action) whenever
// that message is new, so that a condition that stays False is not announced again.
func (r *CouchBenchmarkReconciler) recordResultCondition(bench *benchv1.CouchBenchmark, condition string, ok bool,
	okReason, okMessage, badReason, action, badMessage string) {
	st := &bench.Status
	if ok {
		setCondition(&st.Conditions, bench.Generation, r.Clock.Now(), condition, metav1.ConditionTrue, okReason, okMessage)
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, condition); c == nil || c.Message != badMessage {
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, badReason, action, "%s", badMessage)
	}
	setCondition(&st.Conditions, bench.Generation, r.Clock.Now(), condition, metav1.ConditionFalse, badReason, badMessage)
}

// apply creates obj, or updates the one of its name to obj's labels and data when it is this
// benchmark's. A deleted benchmark's object of the same name, not yet garbage-collected, is
// an error that requeues until it is gone.
func (r *CouchBenchmarkReconciler) apply(ctx context.Context, bench *benchv1.CouchBenchmark, want *corev1.ConfigMap) error {
	var have corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	if apierrors.IsNotFound(err) {
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if owner, err := r.ownerOf(ctx, bench, &have); err != nil || owner != ours {
		if err == nil {
			err = fmt.Errorf("ConfigMap %s belongs to another benchmark; waiting for it to be removed", have.Name)
		}
		return err
	}
	if equality.Semantic.DeepEqual(have.Data, want.Data) && equality.Semantic.DeepEqual(have.BinaryData, want.BinaryData) &&
		equality.Semantic.DeepEqual(have.Labels, want.Labels) {
		return nil
	}
	have.Data, have.BinaryData, have.Labels = want.Data, want.BinaryData, want.Labels
	return r.Update(ctx, &have)
}
