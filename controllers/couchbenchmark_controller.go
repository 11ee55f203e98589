// Package controllers holds the CouchBenchmark reconciler, one file per concern:
//
//   - this file reads the world, walks the run's plan one step at a time and writes status;
//   - plan.go is the run as an ordered list of steps that only moves forward;
//   - stage_provision.go, stage_cluster.go, stage_runner.go, stage_reads.go and
//     stage_teardown.go (teardown and cleanup) act for one kind of step each, idempotently, so that a restarted manager picks up where the
//     last one stopped without a second Job or release;
//   - jobs.go observes the Jobs of a step and reads what they hand over;
//   - pods.go finds the pods the run causes (CouchDB, runner, k6) that cannot start, and
//     says what to change;
//   - nodes.go watches the nodes those pods run on, and says when one is lost;
//   - stage_reads.go runs the k6 Jobs of a read workload;
//   - results.go stores each step's results document and derives status, the rendered
//     results and the metrics from the stored documents;
//   - ownership.go tells this benchmark's objects from a deleted namesake's;
//   - finalizer.go removes Helm releases, or the run's databases on an existing CouchDB,
//     when a benchmark is deleted;
//   - retry.go retries what may pass by itself: transient failures within a step, and
//     conflicts;
//   - preflight.go checks what admission cannot; conditions.go keeps the kstatus
//     conditions consistent; metrics.go exports stage durations and results;
//   - cache.go is what the manager caches, and what it reads past the cache.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// Releases installs and removes Helm releases (internal/helmrelease in production).
type Releases interface {
	Install(ctx context.Context, namespace, release string, ref helmrelease.ChartRef, values map[string]any,
		labels map[string]string) (helmrelease.Status, error)
	Uninstall(ctx context.Context, namespace, release string) error
}

// CouchBenchmarkReconciler reconciles CouchBenchmark objects.
type CouchBenchmarkReconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (Secrets, pods, Helm's StatefulSets),
	// from the API server.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is injected so that tests control time.
	Clock    clock.PassiveClock
	Releases Releases
	// Logs reads the logs of finished Jobs' pods, where they leave their results.
	Logs PodLogs
	// KubernetesVersion is the API server's version, for the results' provenance.
	KubernetesVersion string
	// RunnerImage is the image of the runner Jobs (the operator's own image carries the
	// couchbench binary).
	RunnerImage string
	// K6Image is the k6 image of benchmarks that name none (spec.k6.image unset).
	K6Image string
	// ServiceURL is the base URL of a Service; tests point it at a local server.
	ServiceURL func(namespace, service string) string
	// InstallerClusterRole is what the installer ServiceAccount of a namespace where the
	// operator provisions is bound to: Helm acts as that ServiceAccount (stage_provision.go).
	InstallerClusterRole string
	// CPUReaderClusterRole, when set, lets the runner Jobs that load, build, read views and
	// write read a provisioned CouchDB's CPU time (readsCPUIn): they run as the CPU reader
	// ServiceAccount of the benchmark's namespace, bound there to it (identities.go). Empty:
	// the server's CPU cost is not measured on Kubernetes.
	CPUReaderClusterRole string
	// ChartSources are the chart sources the operator's installer allowed; Releases holds
	// charts to the same.
	ChartSources helmrelease.Sources
}

// ClusterServiceURL is how pods and the operator reach a Service inside the cluster.
func ClusterServiceURL(namespace, service string) string {
	return fmt.Sprintf("http://%s.%s.svc:5984", service, namespace)
}

// Polling intervals for what is not watched: StatefulSets and Helm releases belong to
// Helm, not to the benchmark. A CouchDB pod is ready a few seconds after it starts, and
// every poll after that is time the user waits for nothing. While an arm's pods are not
// ready a poll reads its StatefulSet and lists its pods; once they are, it reads the admin
// Secret and asks CouchDB for its membership: a few reads per arm every 2 s, for the
// seconds an arm is provisioned.
const (
	pollWhileProvisioning = 2 * time.Second
	// clusterTimeout bounds provisioning plus cluster formation of one arm.
	clusterTimeout = 15 * time.Minute
)

// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bench.couchbench.io,resources=couchbenchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update;patch;delete
// Helm acts as the installer ServiceAccount of the benchmark's namespace, never as the
// operator (stage_provision.go): the manager itself only reads credentials and makes and
// deletes the admin Secret of a provisioned CouchDB, reads the chart's StatefulSet, and
// deletes the volumes it claimed.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=deletecollection
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get

// Reconcile reads the benchmark and the world it made, decides the one thing to do next,
// does it, and writes the status it observed. A conflict with another writer is retried
// quietly (requeueOnConflict).
func (r *CouchBenchmarkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	result, err := r.reconcile(ctx, req)
	return requeueOnConflict(ctx, result, err)
}

func (r *CouchBenchmarkReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var bench benchv1.CouchBenchmark
	if err := r.Get(ctx, req.NamespacedName, &bench); err != nil {
		if apierrors.IsNotFound(err) {
			forgetResultMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bench.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &bench)
	}
	if added, err := r.ensureFinalizer(ctx, &bench); added || err != nil {
		return ctrl.Result{}, err
	}

	before := bench.Status.DeepCopy()
	result, runErr := r.reconcileRun(ctx, &bench)
	if runErr != nil && !apierrors.IsConflict(runErr) {
		r.recordError(&bench, runErr)
	}
	recordStatusMetrics(&bench)
	if !equality.Semantic.DeepEqual(before, &bench.Status) {
		// A conflict means the benchmark changed since it was read; the next reconcile starts
		// from the new version.
		if err := r.Status().Update(ctx, &bench); err != nil {
			return ctrl.Result{}, errors.Join(runErr, err)
		}
	}
	return result, runErr
}

// recordError makes a reconcile that failed visible where users look (retrying). The error
// itself goes back to controller-runtime, which retries with backoff.
func (r *CouchBenchmarkReconciler) recordError(bench *benchv1.CouchBenchmark, err error) {
	r.retrying(bench, reasonReconcileError, fmt.Sprintf("retrying after an error: %v", err))
}

// retrying records that the step under way is being tried again: the conditions say which
// step and why, and a Warning event is raised when that is new.
func (r *CouchBenchmarkReconciler) retrying(bench *benchv1.CouchBenchmark, reason, message string) {
	st := &bench.Status
	if p := st.Progress; p != nil {
		message = fmt.Sprintf("query server %s, step %s: %s", p.QueryServer, p.Step, message)
	}
	if c := meta.FindStatusCondition(st.Conditions, conditionReconciling); c == nil || c.Message != message {
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reason, "Retry", "%s", message)
	}
	markRetrying(&st.Conditions, bench.Generation, r.Clock.Now(), reason, message)
}

// stall records that the run waits for something only the user can fix (Stalled=True with
// what to fix, a Warning event when that is new); it goes on by itself once it is fixed.
func (r *CouchBenchmarkReconciler) stall(bench *benchv1.CouchBenchmark, action string, why *stepFailure) {
	st := &bench.Status
	if c := meta.FindStatusCondition(st.Conditions, conditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Message != why.message {
		r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, why.reason, action, "%s", why.message)
	}
	markStalled(&st.Conditions, bench.Generation, r.Clock.Now(), why.reason, why.message)
}

// reconcileRun advances the run by at most one step, recording what it saw in
// bench.Status.
func (r *CouchBenchmarkReconciler) reconcileRun(ctx context.Context, bench *benchv1.CouchBenchmark) (ctrl.Result, error) {
	st := &bench.Status
	now := r.Clock.Now()
	st.ObservedGeneration = bench.Generation
	if st.Phase == "" {
		st.Phase = benchv1.PhasePending
	}
	if st.Phase == benchv1.PhaseSucceeded || st.Phase == benchv1.PhaseFailed {
		// A finished run has no Job running. The failure's clean-up deleted them, but a
		// reconcile that read this benchmark from a cache not yet showing the failure can
		// start its step's Job again, and its status write is then refused as stale (seen in
		// e2e: a stuck seed Job back after the run failed). The Job's creation wakes the
		// benchmark, and this stops it.
		return ctrl.Result{}, r.stopJobs(ctx, bench)
	}

	if st.StartTime == nil {
		findings, err := r.preflight(ctx, bench)
		if err != nil {
			return ctrl.Result{}, err
		}
		if findings != nil {
			r.stall(bench, "Preflight", findings)
			return ctrl.Result{RequeueAfter: preflightRetry}, nil
		}
		if isStalled(&st.Conditions) {
			r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonPreflightPassed, "Preflight", "preflight checks passed")
		}
		st.StartTime = &metav1.Time{Time: now}
		st.Phase = benchv1.PhaseRunning
		runsStarted.Inc()
	}

	if deadline := st.StartTime.Add(bench.Spec.TimeoutDuration()); now.After(deadline) {
		r.fail(ctx, bench, reasonTimeout, fmt.Sprintf("the run did not finish within spec.timeout (%s)", bench.Spec.Timeout))
		r.cleanUpAfterFailure(ctx, bench)
		return ctrl.Result{}, nil
	}

	plan := buildPlan(&bench.Spec)
	pos, ok := position(plan, st.Progress)
	if !ok {
		// Never start over: a step this operator does not know (status written by another
		// version) ends the run instead of repeating steps already done.
		r.fail(ctx, bench, reasonUnknownStep, fmt.Sprintf("status names step %q of query server %q, which this operator's plan does not have; create a new benchmark",
			st.Progress.Step, st.Progress.QueryServer))
		return ctrl.Result{}, nil
	}
	step := plan[pos]
	if st.Progress == nil {
		r.enterStep(bench, plan, pos)
	}
	lost, err := r.checkNodes(ctx, bench, step)
	if err != nil {
		return ctrl.Result{}, err
	}
	if lost != nil {
		r.fail(ctx, bench, lost.reason, lost.message)
		r.cleanUpAfterFailure(ctx, bench)
		return ctrl.Result{}, nil
	}

	outcome, err := r.act(ctx, bench, step)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why := outcome.stalled; why != nil {
		timeout := bench.Spec.PodStartTimeout
		if r.stuckFor(bench) >= bench.Spec.PodStartTimeoutDuration() {
			outcome = failed(why.reason, "%s; it did not start within spec.podStartTimeout (%s) of being reported", why.message, timeout)
		} else {
			why.message += fmt.Sprintf("; the run fails if it cannot start within spec.podStartTimeout (%s)", timeout)
		}
	}
	switch {
	case outcome.failure != nil:
		r.fail(ctx, bench, outcome.failure.reason, outcome.failure.message)
		r.cleanUpAfterFailure(ctx, bench)
		return ctrl.Result{}, nil
	case outcome.stalled != nil:
		r.stall(bench, string(step.Step), outcome.stalled)
		return ctrl.Result{RequeueAfter: outcome.requeueAfter}, nil
	case outcome.retrying != "":
		r.retrying(bench, reasonRetrying, outcome.retrying)
		return ctrl.Result{RequeueAfter: outcome.requeueAfter}, nil
	}
	markProgressing(&st.Conditions, bench.Generation, now, step)
	if outcome.progress != "" {
		st.Progress.Message = outcome.progress
	}
	if !outcome.done {
		return ctrl.Result{RequeueAfter: outcome.requeueAfter}, nil
	}

	r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonStepDone, string(step.Step), "%s done", step)
	stepDuration.WithLabelValues(string(step.Step)).Observe(now.Sub(st.Progress.StepStartTime.Time).Seconds())
	if pos+1 == len(plan) {
		// The other arms finished; a run with an arm that measured nothing is not what was asked.
		if stopped := stoppedArms(bench); len(stopped) > 0 {
			r.fail(ctx, bench, reasonRuntimeMismatch, fmt.Sprintf("%s; the other arms' results are in status and ConfigMap %s",
				strings.Join(stopped, "; "), st.ResultsConfigMap))
			return ctrl.Result{}, nil
		}
		docs, err := r.storedDocuments(ctx, bench)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.judge(ctx, bench, docs); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.recordInHistory(ctx, bench, docs); err != nil {
			return ctrl.Result{}, err
		}
		r.succeed(bench)
		return ctrl.Result{}, nil
	}
	// The status write that records the next step wakes the benchmark again.
	r.enterStep(bench, plan, pos+1)
	return ctrl.Result{}, nil
}

// stepOutcome is what acting on a step found: done, still going (requeue after, or wait for
// a watched object), retrying a failure that may pass (retryTransient), stalled on a pod that
// cannot start (still waiting, Stalled=True, until spec.podStartTimeout), or failed with a
// reason the user can act on.
type stepOutcome struct {
	done         bool
	requeueAfter time.Duration
	// progress is the last line the step's load generator logged (status.progress.message).
	progress string
	retrying string
	stalled  *stepFailure
	failure  *stepFailure
}

type stepFailure struct{ reason, message string }

func failed(reason, format string, args ...any) stepOutcome {
	return stepOutcome{failure: &stepFailure{reason: reason, message: fmt.Sprintf(format, args...)}}
}

func (r *CouchBenchmarkReconciler) act(ctx context.Context, bench *benchv1.CouchBenchmark, step planStep) (stepOutcome, error) {
	if step.measuring() {
		if step.Arms = measuringArms(bench, step); len(step.Arms) == 0 {
			return stepOutcome{done: true}, nil
		}
	}
	arms := make([]benchv1.QueryServer, len(step.Arms))
	for i, name := range step.Arms {
		arms[i] = queryServer(bench, name)
	}
	switch {
	case step.Step == benchv1.StepProvision:
		return eachArm(ctx, bench, arms, r.provision)
	case step.Step == benchv1.StepCluster:
		return r.formCluster(ctx, bench, arms)
	case step.Step.IsRunnerStep():
		return r.runStep(ctx, bench, step)
	case step.Step == benchv1.StepReads:
		return r.runReads(ctx, bench, arms)
	case step.Step == benchv1.StepTeardown:
		return eachArm(ctx, bench, arms, r.teardown)
	case step.Step == benchv1.StepCleanup:
		return r.cleanup(ctx, bench)
	}
	return stepOutcome{}, fmt.Errorf("unknown step %q", step.Step)
}

// eachArm acts for every arm of a step (the provisioning of arms side by side, say), in the
// spec's order, and is done when every arm's action is: an arm not done yet ends the pass.
// Each action is idempotent, so the arms done before are only checked again.
func eachArm(ctx context.Context, bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer,
	act func(context.Context, *benchv1.CouchBenchmark, benchv1.QueryServer) (stepOutcome, error)) (stepOutcome, error) {
	for _, qs := range arms {
		if out, err := act(ctx, bench, qs); err != nil || !out.done {
			return out, err
		}
	}
	return stepOutcome{done: true}, nil
}

// stoppedArms are "query server <arm> was stopped: it <why>" for every arm stopped before its
// first step.
func stoppedArms(bench *benchv1.CouchBenchmark) []string {
	var out []string
	for _, q := range bench.Status.Results {
		if q.Stopped != "" {
			out = append(out, fmt.Sprintf("query server %s was stopped: it %s", q.QueryServer, q.Stopped))
		}
	}
	return out
}

// queryServer is the arm's query server with its preset applied.
func queryServer(bench *benchv1.CouchBenchmark, name string) benchv1.QueryServer {
	for _, qs := range bench.Spec.QueryServers {
		if qs.Name == name {
			return qs.Resolved()
		}
	}
	return benchv1.QueryServer{Name: name}
}

// enterStep moves the progress to plan[pos]: forward only.
func (r *CouchBenchmarkReconciler) enterStep(bench *benchv1.CouchBenchmark, plan []planStep, pos int) {
	step := plan[pos]
	bench.Status.Progress = &benchv1.Progress{
		QueryServer: step.queryServers(), Step: step.Step,
		Percent:       int32(100 * pos / len(plan)),
		StepStartTime: &metav1.Time{Time: r.Clock.Now()},
	}
	r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonStepStarted, string(step.Step), "%s", step)
}

func (r *CouchBenchmarkReconciler) succeed(bench *benchv1.CouchBenchmark) {
	st := &bench.Status
	now := r.Clock.Now()
	st.Phase = benchv1.PhaseSucceeded
	st.CompletionTime = &metav1.Time{Time: now}
	st.Message = "succeeded; results in ConfigMap " + st.ResultsConfigMap
	if st.Progress != nil {
		st.Progress.Percent, st.Progress.Message = 100, ""
	}
	markSucceeded(&st.Conditions, bench.Generation, now)
	runsFinished.WithLabelValues(string(benchv1.PhaseSucceeded)).Inc()
	r.Recorder.Eventf(bench, nil, corev1.EventTypeNormal, reasonSucceeded, "Complete", "benchmark finished; results in ConfigMap %s", st.ResultsConfigMap)
}

// fail ends the run; the results gathered so far stay in status and the ConfigMap. Its end is
// said where a user looks first: status.message (the step it failed in and why), the progress
// line no longer quoting the step's last log line, and a Warning event of its own, reason
// RunFailed (a failure's cause, a NodeLost say, may have had its own events: one with the same
// reason and message would be folded into them).
func (r *CouchBenchmarkReconciler) fail(ctx context.Context, bench *benchv1.CouchBenchmark, reason, message string) {
	st := &bench.Status
	now := r.Clock.Now()
	st.Phase = benchv1.PhaseFailed
	st.CompletionTime = &metav1.Time{Time: now}
	st.Message = "failed"
	if p := st.Progress; p != nil {
		st.Message += fmt.Sprintf(" in step %s of query server %s (%d%% of the run done)", p.Step, p.QueryServer, p.Percent)
		p.Message = ""
	}
	st.Message += ": " + reason + ": " + message
	markFailed(&st.Conditions, bench.Generation, now, reason, message)
	runsFinished.WithLabelValues(string(benchv1.PhaseFailed)).Inc()
	r.Recorder.Eventf(bench, nil, corev1.EventTypeWarning, reasonRunFailed, "Failed", "%s", st.Message)
	log.FromContext(ctx).Info("benchmark failed", "reason", reason, "message", message)
}

// SetupWithManager registers the reconciler: benchmarks, the Jobs they own (a finished
// Job wakes its benchmark), and Nodes (a node that stops wakes the benchmarks with pods on it,
// see nodes.go). The ConfigMaps a benchmark owns are not watched: the operator
// writes them and reads them past the cache, and an event for its own write would only wake
// the benchmark again before its status had reached the cache, to read a step's logs twice.
func (r *CouchBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&benchv1.CouchBenchmark{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.benchmarksOnNode), builder.WithPredicates(nodeTroubleChanged)).
		Named("couchbenchmark").
		// Helm installs (at most helmrelease's 2 min) and log reads (at most logReadTimeout)
		// run inside a reconcile: one slow benchmark, or a dozen, must not hold the others up.
		WithOptions(controller.Options{MaxConcurrentReconciles: 16}).
		Complete(r)
}
