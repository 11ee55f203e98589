package controllers

// A change of a schedule's template named by the shift that follows it, and accepted from Git
// (spec.acceptedShifts). Against envtest's kube-apiserver only: the harness plays the runs'
// Jobs (their numbers are made up, as the runner would report them), and no CouchDB is asked
// anything.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/history"
)

// A run's entry in the history says what changed in the template before it, from the
// annotations the schedule gave it.
func TestTemplateChangeSaysGenerationFieldsAndRevision(t *testing.T) {
	for _, c := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, ""},
		{map[string]string{benchv1.AnnotationScheduleGeneration: "3", benchv1.AnnotationRevision: "main@sha1:abc1234"}, ""},
		{map[string]string{benchv1.AnnotationScheduleGeneration: "7", benchv1.AnnotationTemplateChanges: "spec.couchdb.provision.image",
			benchv1.AnnotationRevision: "main@sha1:abc1234"},
			"generation 7: template.spec.couchdb.provision.image (revision main@sha1:abc1234)"},
		{map[string]string{benchv1.AnnotationScheduleGeneration: "8",
			benchv1.AnnotationTemplateChanges: "spec.dataset.documents, spec.queryServers[1].config, and 9 more"},
			"generation 8: template.spec.dataset.documents, template.spec.queryServers[1].config, and 9 more"},
		{map[string]string{benchv1.AnnotationTemplateChanges: "spec.workloads"}, "template.spec.workloads"},
	} {
		if got := templateChange(c.annotations); got != c.want {
			t.Errorf("templateChange(%v) = %q, want %q", c.annotations, got, c.want)
		}
	}
}

// A commit changes the template between two runs; the runs after it are 15% off; the shift
// names the change (generation, field, revision) in status.shifts[].follows, the Shifted
// condition and its event. The team then commits the run where it began to
// spec.acceptedShifts: the shift is no longer reported, the level restarts there, and an
// event says so, once.
func TestAShiftNamesTheTemplateChangeAndGitAcceptsIt(t *testing.T) {
	sh := newSchedule(t, everyMinute())
	ns := sh.schedule.Namespace
	bench := newHarness(t)
	create(t, credentials(ns))
	ctx := context.Background()

	sh.at(65 * time.Second)
	first := sh.runs()[sh.slotName(1)]
	if got := bench.drive(first, 40); got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("%s: phase %s, conditions %+v", first.Name, got.Status.Phase, got.Status.Conditions)
	}
	edit := func(change func(*benchv1.CouchBenchmarkSchedule)) {
		t.Helper()
		var s benchv1.CouchBenchmarkSchedule
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sh.schedule), &s); err != nil {
			t.Fatal(err)
		}
		change(&s)
		if err := env.Client.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	// The commit: the runner pods' CPU (what a run measures is unchanged, so the runs
	// stay comparable), and the revision a GitOps tool set.
	edit(func(s *benchv1.CouchBenchmarkSchedule) {
		s.Annotations = map[string]string{benchv1.AnnotationRevision: "main@sha1:0c6fe0d"}
		r := &s.Spec.Template.Spec.Runner.Resources
		r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceCPU] = resource.MustParse("3"), resource.MustParse("3")
	})
	sh.at(2*time.Minute + 5*time.Second)
	changed := sh.runs()[sh.slotName(2)]
	if got := bench.drive(changed, 40); got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("%s: phase %s, conditions %+v", changed.Name, got.Status.Phase, got.Status.Conditions)
	}
	const change = "generation 2: template.spec.runner.resources.limits.cpu, template.spec.runner.resources.requests.cpu (revision main@sha1:0c6fe0d)"
	recorded, cm, err := readHistory(ctx, env.Client, ns, *scheduleRef(sh.schedule))
	if err != nil || len(recorded.Runs) != 2 || recorded.Runs[0].Change != "" || recorded.Runs[1].Change != change {
		t.Fatalf("the history's runs %+v (%v); want %s without a change, then %s after %q", recorded.Runs, err, first.Name, changed.Name, change)
	}

	// The runs' numbers as a slower template would give them: ten runs before the schedule's
	// first at its level, and from the changed run on 15% lower in every metric, with 1% noise;
	// the schedule's runs would add them one by one, and the history is judged as it would
	// have been run by run (no looks recorded: the next look replays it).
	base := recorded.Runs[0].Values
	noisy := func(i int, factor float64) map[string]float64 {
		values := map[string]float64{}
		for k, v := range base {
			values[k] = v * factor * (1 + 0.01*float64(i%3-1))
		}
		return values
	}
	hist := history.History{Better: recorded.Better}
	for i := range 10 {
		hist.Add(history.Run{Name: fmt.Sprintf("nightly-early-%02d", i), ScheduledAt: sh.minute.Add(-time.Duration(10-i) * time.Hour),
			Values: noisy(i, 1)}, nil)
	}
	hist.Add(recorded.Runs[0], nil)
	for m := 2; m <= 6; m++ {
		run := history.Run{Name: sh.slotName(m), ScheduledAt: sh.minute.Add(time.Duration(m) * time.Minute), Values: noisy(m, 0.85)}
		if m == 2 {
			run.Change = recorded.Runs[1].Change
		}
		hist.Add(run, nil)
	}
	writeHistory(t, cm, hist)

	_, got := sh.at(2*time.Minute + 10*time.Second)
	if len(got.Status.Shifts) == 0 {
		t.Fatalf("no shift in status; history detection %+v", got.Status.Detection)
	}
	for _, s := range got.Status.Shifts {
		if s.Run != changed.Name || s.Follows != change {
			t.Errorf("shift %+v; want it from %s, following %q", s, changed.Name, change)
		}
	}
	shifted := meta.FindStatusCondition(got.Status.Conditions, conditionShifted)
	if shifted == nil || shifted.Status != metav1.ConditionTrue || !strings.Contains(shifted.Message, "after "+change) {
		t.Errorf("Shifted %+v; want True, naming the change", shifted)
	}
	if evs := drainScheduleEvents(sh); !strings.Contains(evs, reasonShift) || !strings.Contains(evs, "after "+change) {
		t.Errorf("events:\n%s\nwant a %s naming the change", evs, reasonShift)
	}

	// The team's commit: the level from the changed run on is the new normal. A mistyped
	// name accepts nothing, and the condition says so.
	edit(func(s *benchv1.CouchBenchmarkSchedule) {
		s.Spec.AcceptedShifts = []string{changed.Name, "nightly-typo"}
	})
	for _, at := range []time.Duration{2*time.Minute + 15*time.Second, 2*time.Minute + 20*time.Second} {
		_, got = sh.at(at)
		if len(got.Status.Shifts) != 0 {
			t.Errorf("at +%s: shifts %+v after the change was accepted; want none", at, got.Status.Shifts)
		}
		shifted = meta.FindStatusCondition(got.Status.Conditions, conditionShifted)
		if shifted == nil || shifted.Status != metav1.ConditionFalse || !strings.Contains(shifted.Message, "levels accepted from runs "+changed.Name) ||
			!strings.Contains(shifted.Message, "does not hold, which accept nothing: nightly-typo") {
			t.Errorf("at +%s: Shifted %+v; want False, naming the accepted run and the name the history lacks", at, shifted)
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, conditionReady) {
			t.Errorf("at +%s: conditions %+v; want Ready", at, got.Status.Conditions)
		}
		// The level restarted at the accepted run: each judged metric's noise is over its 5 runs.
		if d := got.Status.Detection; d == nil || len(d.Metrics) == 0 {
			t.Errorf("at +%s: detection %+v", at, d)
		} else {
			for _, m := range d.Metrics {
				if m.Runs != 5 {
					t.Errorf("at +%s: %s's level has %d runs; want the 5 from %s on", at, m.Metric, m.Runs, changed.Name)
				}
			}
		}
	}
	if evs := drainScheduleEvents(sh); strings.Count(evs, reasonShiftAccepted) != 1 || !strings.Contains(evs, "from run "+changed.Name) ||
		strings.Contains(evs, reasonShift+" ") {
		t.Errorf("events over two reconciles:\n%s\nwant one %s naming %s and no shift", evs, reasonShiftAccepted, changed.Name)
	}
	if h, _, err := readHistory(ctx, env.Client, ns, *scheduleRef(sh.schedule)); err != nil || h.Looks == nil ||
		strings.Join(h.Looks.Accepted, ",") != changed.Name+",nightly-typo" {
		t.Errorf("the history's looks %+v (%v); want them told the accepted runs", h.Looks, err)
	}

	// Names are a set: the API server refuses one twice.
	var s benchv1.CouchBenchmarkSchedule
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sh.schedule), &s); err != nil {
		t.Fatal(err)
	}
	s.Spec.AcceptedShifts = []string{changed.Name, changed.Name}
	if err := env.Client.Update(ctx, &s); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "acceptedShifts") {
		t.Errorf("acceptedShifts naming a run twice: %v; want it refused", err)
	}
}
