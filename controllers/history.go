package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
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
	"github.com/couchbench/couchbench/internal/history"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// A schedule's history (internal/history) lives in the ConfigMap <schedule>-history: each of
// its runs that succeeds adds its headline numbers there, and they stay after the run is
// pruned. A run's verdict takes the run-to-run spread from the runs before it, and the schedule
// looks for shifts over all of them and records there which shifts it has announced.
//
// The history is the schedule's by name, not by object (its labels, builders.HistoryLabels):
// Git deletes and creates objects (a schedule removed from the repository and put back, renamed
// back, moved to another folder), and months of history and its baseline must not go with
// them. So it outlives its schedule unless spec.historyRetentionPolicy.whenDeleted is Delete,
// in which case the schedule owns it and the garbage collector deletes it with the schedule
// (keepHistory). Deleting it otherwise is the user's to do: `kubectl delete configmap`.

// scheduleOf is the schedule that made a run, its controller owner reference; nil for a run
// made by hand.
func scheduleOf(bench *benchv1.CouchBenchmark) *metav1.OwnerReference {
	owner := metav1.GetControllerOf(bench)
	if owner == nil || owner.Kind != "CouchBenchmarkSchedule" || owner.APIVersion != benchv1.GroupVersion.String() {
		return nil
	}
	return owner
}

// unusableHistoryError is a history that cannot be used, for a reason that will not pass by
// itself: a ConfigMap of its name the schedule does not own, JSON that does not parse, a read
// or write the API server refuses (not a transient failure, which is retried), or a run too
// large to record. A run judges and succeeds without it (a verdict then takes the assumed
// spread between runs); the user is told what to do.
type unusableHistoryError struct {
	// reason is the HistoryRecorded condition's and the event's reason.
	reason string
	// problem says what is wrong; fix what to do about it.
	problem, fix string
}

func (e *unusableHistoryError) Error() string { return e.problem + ": " + e.fix }

// unread says whether nothing could be read from the history: a verdict went without it.
func (e *unusableHistoryError) unread() bool {
	return e.reason == reasonHistoryNotOwned || e.reason == reasonHistoryUnusable
}

// readHistory reads a schedule's history ConfigMap, past the cache; an empty history and a
// nil ConfigMap when there is none yet. A ConfigMap of that name that is not the schedule's
// (historyOf) is not its history. A history that cannot be used is an *unusableHistoryError;
// any other error may pass by itself.
func readHistory(ctx context.Context, reader client.Reader, namespace string, schedule metav1.OwnerReference) (history.History, *corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	name := builders.HistoryConfigMapName(schedule.Name)
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return history.History{}, nil, nil
	}
	if err != nil {
		return history.History{}, nil, historyRequestError(reasonHistoryUnusable, "reading", namespace, name, err)
	}
	if why := notHistoryOf(&cm, schedule); why != "" {
		return history.History{}, nil, &unusableHistoryError{reason: reasonHistoryNotOwned,
			problem: fmt.Sprintf("ConfigMap %s/%s is not schedule %s's history (%s)", namespace, name, schedule.Name, why),
			fix:     "delete it (copy it under another name first if it is someone's), and the schedule's next successful run starts its history there"}
	}
	var h history.History
	if err := json.Unmarshal([]byte(cm.Data[builders.HistoryKey]), &h); err != nil {
		return history.History{}, nil, &unusableHistoryError{reason: reasonHistoryUnusable,
			problem: fmt.Sprintf("ConfigMap %s/%s, schedule %s's history, holds no history in %s (%s)",
				namespace, name, schedule.Name, builders.HistoryKey, jsonProblem(err)),
			fix: "delete it, and the schedule's next successful run starts a new history"}
	}
	return h, &cm, nil
}

// notHistoryOf says why a ConfigMap of the history's name is not the schedule's history, or ""
// when it is: it carries the history's labels for the schedule's name (whichever schedule
// object of that name made it), and no controller but a schedule of that name. A history
// written before histories outlived their schedules lacks the labels' managed-by and is the
// schedule's when the schedule object controls it.
func notHistoryOf(cm *corev1.ConfigMap, schedule metav1.OwnerReference) string {
	owner := metav1.GetControllerOf(cm)
	if owner != nil && owner.UID == schedule.UID {
		return ""
	}
	if owner != nil && (owner.Kind != schedule.Kind || owner.Name != schedule.Name) {
		return fmt.Sprintf("its controller is %s %s, uid %s", owner.Kind, owner.Name, owner.UID)
	}
	for k, v := range builders.HistoryLabels(schedule.Name) {
		if cm.Labels[k] != v {
			return fmt.Sprintf("it lacks the label %s=%s", k, v)
		}
	}
	return ""
}

// keepHistory sets who owns the schedule's history, as its historyRetentionPolicy says: the
// schedule under Delete, so that the garbage collector deletes it with the schedule; no one
// under Retain (a history made by an earlier schedule object of the same name, or by an
// operator that had the schedule own it, is let go). A history that is not the schedule's is
// left alone (observeShifts says so); one not made yet is made by the first successful run,
// which sets no owner, and is taken under Delete at the next reconcile.
func (r *CouchBenchmarkScheduleReconciler) keepHistory(ctx context.Context, s *benchv1.CouchBenchmarkSchedule) error {
	ref := metav1.NewControllerRef(s, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))
	var cm corev1.ConfigMap
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: builders.HistoryConfigMapName(s.Name)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || notHistoryOf(&cm, *ref) != "" {
		return client.IgnoreNotFound(err)
	}
	var owners []metav1.OwnerReference
	if s.Spec.HistoryRetentionPolicy.WhenDeleted == benchv1.RetentionDelete {
		owners = []metav1.OwnerReference{*ref}
	}
	labels := maps.Clone(cm.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, builders.HistoryLabels(s.Name))
	if equality.Semantic.DeepEqual(cm.OwnerReferences, owners) && maps.Equal(cm.Labels, labels) {
		return nil
	}
	cm.OwnerReferences, cm.Labels = owners, labels
	err = r.Update(ctx, &cm)
	if refusedForGood(err) {
		// Runs go on without it; the history stays as it was, which keeps it (the safe side).
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, reasonHistoryNotWritten, "History",
			"the API server refused setting the owner of the history, ConfigMap %s/%s, per historyRetentionPolicy: %v", cm.Namespace, cm.Name, err)
		return nil
	}
	return err
}

// jsonProblem says where JSON that did not decode went wrong.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var shape *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("bad JSON at offset %d: %v", syntax.Offset, err)
	case errors.As(err, &shape):
		return fmt.Sprintf("JSON of another shape at offset %d: %v", shape.Offset, err)
	}
	return err.Error()
}

// historyRequestError is an error of a request on the history ConfigMap: unusable, with reason,
// when the API server refused it for good (refusedForGood); otherwise one to retry.
func historyRequestError(reason, doing, namespace, name string, err error) error {
	if !refusedForGood(err) {
		return fmt.Errorf("%s the history, ConfigMap %s/%s: %w", doing, namespace, name, err)
	}
	return &unusableHistoryError{reason: reason,
		problem: fmt.Sprintf("the API server refused %s the history, ConfigMap %s/%s: %v", doing, namespace, name, err),
		fix:     "fix what it says (the operator's access to ConfigMaps, the namespace)"}
}

// refusedForGood says whether the API server refused a request for a reason that asking again
// will not change (forbidden, invalid, too large): a 4xx but for a conflict (another writer
// was first), a vanished object, a timeout or throttling. A failure to reach it is not.
func refusedForGood(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch code := status.Status().Code; code {
	case http.StatusNotFound, http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	default:
		return code >= 400 && code < 500
	}
}

// runHistory is, by metric, the values of the runs of the benchmark's schedule before it;
// nil for a run made by hand, and for one whose schedule's history cannot be used (the run
// is judged without it, and recordInHistory says why).
func (r *CouchBenchmarkReconciler) runHistory(ctx context.Context, bench *benchv1.CouchBenchmark) (map[string][]float64, error) {
	owner := scheduleOf(bench)
	if owner == nil {
		return nil, nil
	}
	h, _, err := readHistory(ctx, r.APIReader, bench.Namespace, *owner)
	var unusable *unusableHistoryError
	if errors.As(err, &unusable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return h.Before(scheduledAt(bench)), nil
}

// recordInHistory adds a scheduled run that succeeded to its schedule's history, and says so
// in the HistoryRecorded condition. Adding the same run again changes nothing, so a reconcile
// that repeats it is harmless; two runs that finish at once meet the ConfigMap's resource
// version, and the later one tries again. A history that cannot be used does not hold the run
// up: it is left as it is, and the condition and an event say what is wrong with it.
func (r *CouchBenchmarkReconciler) recordInHistory(ctx context.Context, bench *benchv1.CouchBenchmark, docs []*results.Document) error {
	owner := scheduleOf(bench)
	if owner == nil {
		return nil
	}
	recorded, err := r.addToHistory(ctx, bench, *owner, docs)
	var unusable *unusableHistoryError
	if errors.As(err, &unusable) {
		r.historyUnusable(bench, unusable)
		return nil
	}
	if err != nil {
		return err
	}
	setCondition(&bench.Status.Conditions, bench.Generation, r.Clock.Now(), conditionHistoryRecorded, metav1.ConditionTrue,
		reasonHistoryRecorded, recorded)
	return nil
}

// addToHistory writes the run into its schedule's history, oldest runs out first when it would
// not fit builders.MaxHistoryBytes, and says what the history holds.
func (r *CouchBenchmarkReconciler) addToHistory(ctx context.Context, bench *benchv1.CouchBenchmark, owner metav1.OwnerReference,
	docs []*results.Document) (string, error) {
	h, cm, err := readHistory(ctx, r.APIReader, bench.Namespace, owner)
	if err != nil {
		return "", err
	}
	name := builders.HistoryConfigMapName(owner.Name)
	run, better, err := history.RunOf(bench.Name, scheduledAt(bench), docs)
	if err != nil {
		return "", err
	}
	run.Change = templateChange(bench.Annotations)
	changed := h.Add(run, better)
	data, dropped, err := fitHistory(&h, builders.MaxHistoryBytes)
	if err != nil {
		return "", err
	}
	if len(data) > builders.MaxHistoryBytes {
		return "", &unusableHistoryError{reason: reasonHistoryTooLarge,
			problem: fmt.Sprintf("run %s is not in the history, ConfigMap %s/%s: with its numbers alone the history takes %d bytes as JSON, more than its budget of %d",
				bench.Name, bench.Namespace, name, len(data), builders.MaxHistoryBytes),
			fix: "the history keeps the runs before it; a run with fewer metrics (arms, profiles, workloads) fits"}
	}
	recorded := fmt.Sprintf("ConfigMap %s holds the schedule's last %d successful runs", name, len(h.Runs))
	if dropped > 0 {
		recorded += fmt.Sprintf("; the oldest %d were dropped to keep it within %d KiB", dropped, builders.MaxHistoryBytes>>10)
	}
	if !changed && dropped == 0 {
		return recorded, nil
	}
	var page bytes.Buffer
	if err := htmlreport.HistoryHTML(&page, owner.Name, h, h.Shifts()); err != nil {
		return "", err
	}
	// The numbers must fit; the page goes before any run does.
	var html []byte
	if len(data)+page.Len() <= builders.MaxHistoryBytes {
		html = page.Bytes()
	}
	want := builders.HistoryConfigMap(bench.Namespace, owner.Name, data, html)
	if cm == nil {
		err = r.Create(ctx, want)
	} else {
		cm.Data = want.Data
		err = r.Update(ctx, cm)
	}
	if err != nil {
		return "", historyRequestError(reasonHistoryNotWritten, "writing", bench.Namespace, name, err)
	}
	return recorded, nil
}

// templateChange is what changed in the schedule's template before a run, as the schedule
// annotated the run (history.Run.Change): the schedule's generation, the changed fields as
// paths in the schedule's spec, and the revision where the run carries one, e.g.
// "generation 7: template.spec.couchdb.provision.image (revision main@sha1:abc1234)"; empty
// when nothing changed.
func templateChange(annotations map[string]string) string {
	changes := annotations[benchv1.AnnotationTemplateChanges]
	if changes == "" {
		return ""
	}
	fields := strings.Split(changes, ", ")
	for i, f := range fields {
		// The annotation's paths are the run's spec, which is the schedule's template.spec.
		if strings.HasPrefix(f, "spec.") {
			fields[i] = "template." + f
		}
	}
	change := strings.Join(fields, ", ")
	if generation := annotations[benchv1.AnnotationScheduleGeneration]; generation != "" {
		change = "generation " + generation + ": " + change
	}
	if revision := annotations[benchv1.AnnotationRevision]; revision != "" {
		change += " (revision " + revision + ")"
	}
	return change
}

// fitHistory is h as JSON within budget bytes, its oldest runs dropped until it fits, and how
// many were. The newest run is never dropped: with it alone, the JSON may still be larger.
func fitHistory(h *history.History, budget int) ([]byte, int, error) {
	dropped := 0
	for {
		data, err := json.Marshal(h)
		if err != nil || len(data) <= budget || len(h.Runs) <= 1 {
			return data, dropped, err
		}
		// Drop as many of the oldest runs as the excess takes, each its JSON and a comma; the
		// next pass checks.
		excess, n := len(data)-budget, 0
		for excess > 0 && n < len(h.Runs)-1 {
			run, err := json.Marshal(h.Runs[n])
			if err != nil {
				return nil, dropped, err
			}
			excess -= len(run) + 1
			n++
		}
		h.Runs = h.Runs[n:]
		dropped += n
	}
}

// historyUnusable records that the run's schedule's history could not be used: the
// HistoryRecorded condition, a Warning event when that is new (a reconcile that repeats the
// run's end tells it once), and, on a verdict, that it took the assumed spread between runs.
func (r *CouchBenchmarkReconciler) historyUnusable(bench *benchv1.CouchBenchmark, unusable *unusableHistoryError) {
	st := &bench.Status
	message := unusable.Error()
	if c := meta.FindStatusCondition(st.Conditions, conditionHistoryRecorded); c == nil || c.Status != metav1.ConditionFalse || c.Message != message {
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, unusable.reason, "History", "%s", message)
	}
	setCondition(&st.Conditions, bench.Generation, r.Clock.Now(), conditionHistoryRecorded, metav1.ConditionFalse, unusable.reason, message)
	if st.Comparison != nil && unusable.unread() {
		st.Comparison.Summary += fmt.Sprintf("; judged without the schedule's history (see condition %s): runs taken to differ by %g%%",
			conditionHistoryRecorded, compare.OptionsOf(bench.Spec.Baseline).BetweenRunsPercent)
	}
}
