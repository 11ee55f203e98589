package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/history"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// A schedule's history (internal/history) lives in a ConfigMap the schedule owns: each of its
// runs that succeeds adds its headline numbers there, and they stay after the run is pruned.
// A run's verdict takes the run-to-run spread from the runs before it, and the schedule looks
// for shifts over all of them and records there which shifts it has announced.

// scheduleOf is the schedule that made a run, its controller owner reference; nil for a run
// made by hand.
func scheduleOf(bench *benchv1.CouchBenchmark) *metav1.OwnerReference {
	owner := metav1.GetControllerOf(bench)
	if owner == nil || owner.Kind != "CouchBenchmarkSchedule" || owner.APIVersion != benchv1.GroupVersion.String() {
		return nil
	}
	return owner
}

// readHistory reads a schedule's history ConfigMap, past the cache; an empty history and a
// nil ConfigMap when there is none yet. A ConfigMap of that name that the schedule does not
// own is not its history.
func readHistory(ctx context.Context, reader client.Reader, namespace string, schedule metav1.OwnerReference) (history.History, *corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: builders.HistoryConfigMapName(schedule.Name)}, &cm)
	if apierrors.IsNotFound(err) {
		return history.History{}, nil, nil
	}
	if err != nil {
		return history.History{}, nil, err
	}
	if owner := metav1.GetControllerOf(&cm); owner == nil || owner.UID != schedule.UID {
		return history.History{}, nil, fmt.Errorf("ConfigMap %s/%s is not schedule %s's history; remove it", namespace, cm.Name, schedule.Name)
	}
	var h history.History
	if err := json.Unmarshal([]byte(cm.Data[builders.HistoryKey]), &h); err != nil {
		return history.History{}, nil, fmt.Errorf("the history of schedule %s (ConfigMap %s): %w", schedule.Name, cm.Name, err)
	}
	return h, &cm, nil
}

// runHistory is, by metric, the values of the runs of the benchmark's schedule before it;
// nil for a run made by hand.
func (r *CouchBenchmarkReconciler) runHistory(ctx context.Context, bench *benchv1.CouchBenchmark) (map[string][]float64, error) {
	owner := scheduleOf(bench)
	if owner == nil {
		return nil, nil
	}
	h, _, err := readHistory(ctx, r.APIReader, bench.Namespace, *owner)
	if err != nil {
		return nil, err
	}
	return h.Before(scheduledAt(bench)), nil
}

// recordInHistory adds a scheduled run that succeeded to its schedule's history. Adding the
// same run again changes nothing, so a reconcile that repeats it is harmless; two runs that
// finish at once meet the ConfigMap's resource version, and the later one tries again.
func (r *CouchBenchmarkReconciler) recordInHistory(ctx context.Context, bench *benchv1.CouchBenchmark, docs []*results.Document) error {
	owner := scheduleOf(bench)
	if owner == nil {
		return nil
	}
	h, cm, err := readHistory(ctx, r.APIReader, bench.Namespace, *owner)
	if err != nil {
		return err
	}
	run, better, err := history.RunOf(bench.Name, scheduledAt(bench), docs)
	if err != nil {
		return err
	}
	if !h.Add(run, better) {
		return nil
	}
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	if err := htmlreport.HistoryHTML(&page, owner.Name, h, h.Shifts(changepoint.Options{})); err != nil {
		return err
	}
	// The numbers must fit; the page is left out when they and it would not.
	var html []byte
	if len(data)+page.Len() <= maxReportBytes {
		html = page.Bytes()
	}
	want := builders.HistoryConfigMap(bench.Namespace, *owner, data, html)
	if cm == nil {
		return r.Create(ctx, want)
	}
	cm.Data = want.Data
	return r.Update(ctx, cm)
}
