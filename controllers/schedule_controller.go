package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/schedule"
)

// CouchBenchmarkScheduleReconciler makes a schedule's runs, modelled on the kubebuilder
// CronJob and CloudNativePG's ScheduledBackup: read the runs, rebuild status from them, prune
// the history, then make the run that is due, named by its start time. It never writes a
// schedule's spec, so a GitOps tool that applied it sees no drift.
type CouchBenchmarkScheduleReconciler struct {
	client.Client
	// APIReader reads what the manager does not cache: the schedule's history ConfigMap.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is injected so that tests step through schedules without sleeping.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarkschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarkschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;update

// Reconcile reads the schedule and its runs, writes the status they show, prunes, and makes
// the run that is due; it asks to be woken at the next start time. A conflict with another
// writer is retried quietly (requeueOnConflict).
func (r *CouchBenchmarkScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	result, err := r.reconcile(ctx, req)
	return requeueOnConflict(ctx, result, err)
}

func (r *CouchBenchmarkScheduleReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s benchv1.CouchBenchmarkSchedule
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			forgetScheduleMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := s.Status.DeepCopy()
	result, err := r.reconcileSchedule(ctx, &s)
	if !equality.Semantic.DeepEqual(before, &s.Status) {
		if uerr := r.Status().Update(ctx, &s); uerr != nil && err == nil {
			err = uerr
		}
	}
	return result, err
}

func (r *CouchBenchmarkScheduleReconciler) reconcileSchedule(ctx context.Context, s *benchv1.CouchBenchmarkSchedule) (ctrl.Result, error) {
	now := r.Clock.Now()
	runs, err := r.runsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, run := range runs.prunable(s) {
		if err := r.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		run.DeletionTimestamp = &metav1.Time{Time: now} // gone from the history below
		log.FromContext(ctx).Info("pruned a run beyond the history limits", "run", run.Name, "phase", run.Status.Phase)
	}
	runs = classify(runs.kept())
	runs.observe(s, now)
	recordScheduleMetrics(s, runs, now)
	if err := r.observeShifts(ctx, s, now); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.keepHistory(ctx, s); err != nil {
		return ctrl.Result{}, err
	}

	cron, err := schedule.Parse(s.Spec.Schedule, s.Spec.TimeZone)
	if err != nil {
		r.stallSchedule(s, now, fmt.Sprintf("spec.schedule or spec.timeZone: %v", err))
		return ctrl.Result{}, nil
	}
	if s.Spec.Suspend {
		s.Status.NextScheduleTime = nil
		r.conclude(s, runs, now, notice{reason: reasonSuspended, message: "suspended: no new runs until spec.suspend is false"})
		return ctrl.Result{}, nil
	}
	// What the schedule said last: a wait or a skip is told once, not on every reconcile that
	// a run's status changes bring while it lasts.
	said := meta.FindStatusCondition(s.Status.Conditions, conditionReady).DeepCopy()
	// The immediate run's notice is shown last, unless a start time's replaces it: it is
	// tried again on every reconcile, and Ready must still say it then. Once the schedule has
	// started a run (its status says when), the immediate run is made: a pruned one is not
	// made again.
	var immediateSkip *notice
	if s.Spec.Immediate && s.Status.LastScheduleTime == nil && !hasImmediate(runs) {
		slot := s.CreationTimestamp.Truncate(time.Minute)
		if runs, immediateSkip, err = r.startRun(ctx, s, runs, slot, true, now); err != nil {
			return ctrl.Result{}, err
		}
	}

	after := s.CreationTimestamp.Time
	if st := s.Status.LastScheduleTime; st != nil && st.After(after) {
		after = st.Time
	}
	var deadline time.Duration
	if d := s.Spec.StartingDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	due, err := schedule.Next(cron, after, now, deadline)
	if err != nil {
		r.stallSchedule(s, now, err.Error())
		return ctrl.Result{}, nil
	}
	s.Status.NextScheduleTime = &metav1.Time{Time: due.Next}
	skip := immediateSkip
	switch {
	case due.Slot.IsZero():
	case due.Late:
		skip = &notice{corev1.EventTypeWarning, reasonMissedSchedule, fmt.Sprintf(
			"the run of %s was not started within startingDeadlineSeconds (%ds): skipped; next run at %s",
			due.Slot.UTC().Format(time.RFC3339), *s.Spec.StartingDeadlineSeconds, due.Next.UTC().Format(time.RFC3339))}
	default:
		var slotSkip *notice
		if runs, slotSkip, err = r.startRun(ctx, s, runs, due.Slot, false, now); err != nil {
			return ctrl.Result{}, err
		}
		if slotSkip != nil {
			skip = slotSkip
		}
	}
	r.announce(s, said, skip)
	says := notice{reason: reasonScheduled, message: "next run at " + due.Next.UTC().Format(time.RFC3339)}
	if skip != nil {
		says = *skip
	}
	r.conclude(s, runs, now, says)
	return ctrl.Result{RequeueAfter: max(due.Next.Sub(now), time.Second)}, nil
}

// runsOf reads the schedule's runs: labelled with its name and owned by it.
func (r *CouchBenchmarkScheduleReconciler) runsOf(ctx context.Context, s *benchv1.CouchBenchmarkSchedule) (scheduledRuns, error) {
	var list benchv1.CouchBenchmarkList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{benchv1.LabelSchedule: builders.LabelValue(s.Name)}); err != nil {
		return scheduledRuns{}, err
	}
	var owned []benchv1.CouchBenchmark
	for _, run := range list.Items {
		if metav1.IsControlledBy(&run, s) {
			owned = append(owned, run)
		}
	}
	return classify(owned), nil
}

func hasImmediate(runs scheduledRuns) bool {
	for _, run := range runs.all {
		if run.Labels[benchv1.LabelImmediate] == "true" {
			return true
		}
	}
	return false
}

// notice is why a start time did not run (yet): the Ready condition's reason and message
// while it holds, and an event when it is new.
type notice struct{ eventType, reason, message string }

// announce tells a notice, if any, as an event unless the Ready condition said it already
// (said: the condition before this reconcile; conclude puts the notice at the end of its
// message).
func (r *CouchBenchmarkScheduleReconciler) announce(s *benchv1.CouchBenchmarkSchedule, said *metav1.Condition, n *notice) {
	if n != nil && (said == nil || !strings.HasSuffix(said.Message, n.message)) {
		r.Recorder.Eventf(s, nil, n.eventType, n.reason, "Schedule", "%s", n.message)
	}
}

// startRun makes the run of a start time, minding the concurrency policy, and returns the
// runs with it, the status rebuilt from them, or why it made none. A run of that name that
// exists is found, not made again: the schedule's status may have lost a run made just
// before a manager restart.
func (r *CouchBenchmarkScheduleReconciler) startRun(ctx context.Context, s *benchv1.CouchBenchmarkSchedule, runs scheduledRuns,
	slot time.Time, immediate bool, now time.Time) (scheduledRuns, *notice, error) {
	name := builders.ScheduledRunName(s, slot)
	for _, run := range runs.all {
		if run.Name == name {
			return runs, nil, nil
		}
	}
	if len(runs.active) > 0 {
		switch s.Spec.ConcurrencyPolicy {
		case benchv1.ConcurrencyAllow:
		case benchv1.ConcurrencyReplace:
			for _, run := range runs.active {
				if err := r.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
					return runs, nil, err
				}
				run.DeletionTimestamp = &metav1.Time{Time: now}
				r.Recorder.Eventf(s, run, corev1.EventTypeNormal, reasonReplaced, "Schedule", "run %s replaced by the run of %s", run.Name, slot.UTC().Format(time.RFC3339))
			}
		default:
			return runs, &notice{corev1.EventTypeNormal, reasonSkippedSchedule, fmt.Sprintf(
				"the run of %s waits: %s is still running (concurrencyPolicy Forbid)", slot.UTC().Format(time.RFC3339), runs.active[0].Name)}, nil
		}
	}
	var previous *benchv1.CouchBenchmark
	if len(runs.all) > 0 {
		previous = runs.all[0]
	}
	changes, err := templateChanges(previous, s.Spec.Template.Spec)
	if err != nil {
		return runs, nil, err
	}
	run := builders.ScheduledRun(s, slot, r.baselineFor(s, runs), immediate, changes, r.sourceRevision(ctx, s))
	err = r.Create(ctx, run)
	if apierrors.IsAlreadyExists(err) {
		// Someone else's object of that name (not owned by this schedule): never adopt it.
		return runs, &notice{corev1.EventTypeWarning, reasonNameCollision, fmt.Sprintf(
			"a CouchBenchmark named %s exists and is not this schedule's: the run of %s is skipped", name, slot.UTC().Format(time.RFC3339))}, nil
	}
	if err != nil {
		return runs, nil, err
	}
	r.Recorder.Eventf(s, run, corev1.EventTypeNormal, reasonScheduled, "Schedule", "started run %s", run.Name)
	runs = classify(append(runs.kept(), *run))
	runs.observe(s, now)
	return runs, nil, nil
}

// baselineFor is the baseline of a new run: the pinned one; none; or the latest successful run
// of the template's dataset and workloads. A commit that changes those starts a new series: a
// run of the old ones could give no verdict, and the new run would wait for it (NotComparable).
func (r *CouchBenchmarkScheduleReconciler) baselineFor(s *benchv1.CouchBenchmarkSchedule, runs scheduledRuns) string {
	switch s.Spec.Baseline.Policy {
	case benchv1.BaselinePinned:
		return s.Spec.Baseline.Benchmark
	case benchv1.BaselineNone:
		return ""
	}
	for _, run := range runs.succeeded {
		if refused, err := compare.Refusals(run.Spec, s.Spec.Template.Spec); err == nil && len(refused) == 0 {
			return run.Name
		}
	}
	return ""
}

// stallSchedule says what to fix in the spec; nothing runs until it is fixed.
func (r *CouchBenchmarkScheduleReconciler) stallSchedule(s *benchv1.CouchBenchmarkSchedule, now time.Time, message string) {
	if c := meta.FindStatusCondition(s.Status.Conditions, conditionStalled); c == nil || c.Message != message {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, reasonInvalidSchedule, "Schedule", "%s", message)
	}
	s.Status.NextScheduleTime = nil
	markStalled(&s.Status.Conditions, s.Generation, now, reasonInvalidSchedule, message)
}

// conclude sets the schedule's health (health.go): Ready with what the schedule says of its
// start times (says) while it is healthy; Stalled, and Ready False, with what is wrong and then
// what it says, while it is not, told once as a Warning event.
func (r *CouchBenchmarkScheduleReconciler) conclude(s *benchv1.CouchBenchmarkSchedule, runs scheduledRuns, now time.Time, says notice) {
	conds := &s.Status.Conditions
	meta.RemoveStatusCondition(conds, conditionReconciling)
	wrong := scheduleHealth(s, runs)
	if wrong == nil {
		meta.RemoveStatusCondition(conds, conditionStalled)
		setCondition(conds, s.Generation, now, conditionReady, metav1.ConditionTrue, says.reason, says.message)
		return
	}
	if c := meta.FindStatusCondition(*conds, conditionStalled); c == nil || c.Reason != wrong.reason || !strings.HasPrefix(c.Message, wrong.message) {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, wrong.reason, "Health", "%s", wrong.message)
	}
	markStalled(conds, s.Generation, now, wrong.reason, wrong.message+"; "+says.message)
}

// SetupWithManager registers the reconciler: schedules, and the runs they own (a run that
// finishes wakes its schedule).
func (r *CouchBenchmarkScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&benchv1.CouchBenchmarkSchedule{}).
		Owns(&benchv1.CouchBenchmark{}).
		Named("couchbenchmarkschedule").
		Complete(r)
}
