package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// scheduledRuns are a schedule's runs, read from the cluster and sorted: the schedule keeps
// no state of its own that its runs cannot tell again (the kubebuilder CronJob's way).
type scheduledRuns struct {
	// all is every run, newest start time first; active, succeeded and failed split them.
	all, active, succeeded, failed []*benchv1.CouchBenchmark
}

// scheduledAt is a run's start time in its schedule (its annotation; its creation if that
// was edited away).
func scheduledAt(run *benchv1.CouchBenchmark) time.Time {
	if t, err := time.Parse(time.RFC3339, run.Annotations[benchv1.AnnotationScheduledAt]); err == nil {
		return t
	}
	return run.CreationTimestamp.Time
}

func finished(run *benchv1.CouchBenchmark) bool {
	return run.Status.Phase == benchv1.PhaseSucceeded || run.Status.Phase == benchv1.PhaseFailed
}

// classify sorts the schedule's runs, newest first.
func classify(runs []benchv1.CouchBenchmark) scheduledRuns {
	var s scheduledRuns
	for i := range runs {
		if runs[i].DeletionTimestamp.IsZero() {
			s.all = append(s.all, &runs[i])
		}
	}
	sort.SliceStable(s.all, func(i, j int) bool { return scheduledAt(s.all[i]).After(scheduledAt(s.all[j])) })
	for _, run := range s.all {
		switch run.Status.Phase {
		case benchv1.PhaseSucceeded:
			s.succeeded = append(s.succeeded, run)
		case benchv1.PhaseFailed:
			s.failed = append(s.failed, run)
		default:
			s.active = append(s.active, run)
		}
	}
	return s
}

// kept are the runs not being deleted.
func (s scheduledRuns) kept() []benchv1.CouchBenchmark {
	var out []benchv1.CouchBenchmark
	for _, run := range s.all {
		if run.DeletionTimestamp.IsZero() {
			out = append(out, *run)
		}
	}
	return out
}

// latestFinished is the newest run that has finished, or nil.
func (s scheduledRuns) latestFinished() *benchv1.CouchBenchmark {
	for _, run := range s.all {
		if finished(run) {
			return run
		}
	}
	return nil
}

// observe rebuilds the schedule's status from its runs.
func (s scheduledRuns) observe(schedule *benchv1.CouchBenchmarkSchedule, now time.Time) {
	st := &schedule.Status
	st.ObservedGeneration = schedule.Generation
	st.Active, st.History, st.LastSuccessfulRun, st.LastVerdict = nil, nil, "", ""
	for _, run := range s.active {
		st.Active = append(st.Active, run.Name)
	}
	if len(s.all) > 0 {
		st.LastScheduleTime = &metav1.Time{Time: scheduledAt(s.all[0])}
	}
	if len(s.succeeded) > 0 {
		st.LastSuccessfulRun = s.succeeded[0].Name
	}
	for _, run := range s.all {
		h := benchv1.ScheduledRun{Name: run.Name, ScheduledAt: metav1.Time{Time: scheduledAt(run)}, Phase: run.Status.Phase,
			BestChangesPerSecond: run.Status.BestChangesPerSecond, ReadP95: run.Status.ReadP95,
			TemplateChanges: run.Annotations[benchv1.AnnotationTemplateChanges], Revision: run.Annotations[benchv1.AnnotationRevision]}
		h.ScheduleGeneration, _ = strconv.ParseInt(run.Annotations[benchv1.AnnotationScheduleGeneration], 10, 64)
		if c := run.Status.Comparison; c != nil {
			h.Verdict, h.Comparison = c.Verdict, c.Summary
		}
		st.History = append(st.History, h)
	}
	latest := s.latestFinished()
	switch {
	case latest == nil:
		meta.RemoveStatusCondition(&st.Conditions, conditionRegressed)
	case latest.Status.Comparison == nil || latest.Status.Comparison.Verdict == "":
		st.LastVerdict = ""
		setCondition(&st.Conditions, schedule.Generation, now, conditionRegressed, metav1.ConditionUnknown, reasonNoBaseline,
			"run "+latest.Name+" has no verdict: it ran without a baseline, or did not finish")
	default:
		c := latest.Status.Comparison
		st.LastVerdict = c.Verdict
		value := metav1.ConditionFalse
		switch c.Verdict {
		case benchv1.VerdictRegressed:
			value = metav1.ConditionTrue
		case benchv1.VerdictInconclusive:
			value = metav1.ConditionUnknown
		}
		setCondition(&st.Conditions, schedule.Generation, now, conditionRegressed, value, string(c.Verdict),
			"run "+latest.Name+" against "+c.Baseline+": "+c.Summary)
	}
}

// prunable are the runs beyond the history limits, oldest first. The latest successful run
// (the next run's baseline), a pinned baseline and the baseline of a run under way are kept.
func (s scheduledRuns) prunable(schedule *benchv1.CouchBenchmarkSchedule) []*benchv1.CouchBenchmark {
	keep := map[string]bool{}
	if len(s.succeeded) > 0 {
		keep[s.succeeded[0].Name] = true
	}
	if b := schedule.Spec.Baseline; b.Policy == benchv1.BaselinePinned {
		keep[b.Benchmark] = true
	}
	for _, run := range s.active {
		if run.Spec.Baseline != nil {
			keep[run.Spec.Baseline.Benchmark] = true
		}
	}
	failedLimit := 1
	if l := schedule.Spec.FailedRunsHistoryLimit; l != nil {
		failedLimit = int(*l)
	}
	var out []*benchv1.CouchBenchmark
	for _, group := range []struct {
		runs  []*benchv1.CouchBenchmark
		limit int
	}{{s.succeeded, int(max(schedule.Spec.SuccessfulRunsHistoryLimit, 1))}, {s.failed, failedLimit}} {
		for i := len(group.runs) - 1; i >= group.limit; i-- {
			if !keep[group.runs[i].Name] {
				out = append(out, group.runs[i])
			}
		}
	}
	return out
}

// maxTemplateChanges bounds the fields a run's template-changes annotation names.
const maxTemplateChanges = 10

// templateChanges are the fields of the template (as JSON paths under spec, e.g.
// "spec.couchdb.provision.image" or "spec.queryServers[1].config") in which next differs from
// the spec of the schedule's run before (previous; nil for a schedule's first run), the most
// general path that holds a difference, at most maxTemplateChanges and a count of the rest: what
// a shift that begins with the run may be due to. The baseline is the schedule's, not the
// template's, and is left out.
func templateChanges(previous *benchv1.CouchBenchmark, next benchv1.CouchBenchmarkSpec) (string, error) {
	if previous == nil {
		return "", nil
	}
	before, after := previous.Spec.DeepCopy(), next.DeepCopy()
	before.Baseline, after.Baseline = nil, nil
	a, err := asJSON(before)
	if err != nil {
		return "", err
	}
	b, err := asJSON(after)
	if err != nil {
		return "", err
	}
	var paths []string
	jsonDiff("spec", a, b, &paths)
	if len(paths) > maxTemplateChanges {
		paths = append(paths[:maxTemplateChanges], fmt.Sprintf("and %d more", len(paths)-maxTemplateChanges))
	}
	return strings.Join(paths, ", "), nil
}

func asJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// jsonDiff adds to paths, in order, where the JSON values a and b differ: a key of two objects
// (one that only one has, or whose values differ), an item of two lists of equal length; else
// the path itself.
func jsonDiff(path string, a, b any, paths *[]string) {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			keys := slices.Collect(maps.Keys(a))
			for k := range b {
				if _, ok := a[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				jsonDiff(path+"."+k, a[k], b[k], paths)
			}
			return
		}
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			for i := range a {
				jsonDiff(fmt.Sprintf("%s[%d]", path, i), a[i], b[i], paths)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*paths = append(*paths, path)
	}
}
