package builders

import (
	"maps"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// slotFormat names a run by its start time in the schedule: minutes are cron's resolution.
const slotFormat = "200601021504"

// ScheduledRunName is the run of a schedule's start time: "<schedule>-<yyyymmddhhmm>" in UTC,
// cut and hashed like every name. Fixed by the slot, so that a manager that made the run and
// died before it could record so finds it instead of making a second.
func ScheduledRunName(schedule *benchv1.CouchBenchmarkSchedule, slot time.Time) string {
	return name(maxObjectName, schedule.Name, slot.UTC().Format(slotFormat))
}

// ScheduledRun is the CouchBenchmark a schedule makes for a start time: the template, the
// schedule's labels and the start time on it, owned by the schedule, compared with baseline
// ("" for none). Its annotations say what it was made from, for a shift that begins with it to
// be traced to a change: the schedule's generation, the template's fields that changed since
// the schedule's run before (changes, "" on its first run) and the source revision
// (revision, "" when unknown).
func ScheduledRun(schedule *benchv1.CouchBenchmarkSchedule, slot time.Time, baseline string, immediate bool, changes, revision string) *benchv1.CouchBenchmark {
	t := schedule.Spec.Template
	labels := maps.Clone(t.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[benchv1.LabelSchedule] = LabelValue(schedule.Name)
	if immediate {
		labels[benchv1.LabelImmediate] = "true"
	}
	annotations := maps.Clone(t.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[benchv1.AnnotationScheduledAt] = slot.UTC().Format(time.RFC3339)
	annotations[benchv1.AnnotationScheduleGeneration] = strconv.FormatInt(schedule.Generation, 10)
	for key, value := range map[string]string{benchv1.AnnotationTemplateChanges: changes, benchv1.AnnotationRevision: revision} {
		if value != "" {
			annotations[key] = value
		} else {
			delete(annotations, key)
		}
	}
	run := &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{
			Name: ScheduledRunName(schedule, slot), Namespace: schedule.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(schedule, benchv1.GroupVersion.WithKind("CouchBenchmarkSchedule"))},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if baseline != "" {
		b := schedule.Spec.Baseline
		run.Spec.Baseline = &benchv1.Baseline{Benchmark: baseline, TolerancePercent: b.TolerancePercent, Tolerances: maps.Clone(b.Tolerances),
			BetweenRunsPercent: b.BetweenRunsPercent}
	}
	return run
}
