package controllers

// What a run leaves on an existing CouchDB. The operator deletes nothing itself: a clean-up
// Job in the benchmark's namespace runs `couchbench clean` (tested on real CouchDB in
// cmd/couchbench). These tests talk to envtest's API server only; the harness plays the Job
// (its end is its answer), and the existing CouchDB the benchmarks name is couchDBStub, a stub,
// which must see no request from the operator.

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// onExistingCouchDB creates existingBenchmark, changed by change, with its credentials.
func onExistingCouchDB(t *testing.T, change func(*benchv1.CouchBenchmark)) *benchv1.CouchBenchmark {
	t.Helper()
	ns := env.Namespace(t)
	create(t, credentials(ns))
	bench := existingBenchmark(ns)
	change(bench)
	create(t, bench)
	return bench
}

// cleanupArgs are what a clean-up Job of bench must run: every database of the run, by its
// prefix, with the credentials the run's Jobs had.
func cleanupArgs(bench *benchv1.CouchBenchmark) string {
	return "clean --benchmark " + bench.Name + " --run-id " + builders.RunID(bench) + " --url " + bench.Spec.CouchDB.Existing.URL +
		" --credentials-dir /etc/couchbench/credentials"
}

func checkCleanupJob(t *testing.T, job *batchv1.Job, bench *benchv1.CouchBenchmark, owned bool) {
	t.Helper()
	pod := job.Spec.Template.Spec
	if args := strings.Join(pod.Containers[0].Args, " "); args != cleanupArgs(bench) {
		t.Errorf("the clean-up Job runs %q, want %q", args, cleanupArgs(bench))
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != bench.Spec.CouchDB.Existing.CredentialsSecret.Name {
		t.Errorf("the clean-up Job's volumes %+v, want the credentials Secret", pod.Volumes)
	}
	if metav1.IsControlledBy(job, bench) != owned {
		t.Errorf("the clean-up Job's owners %+v; owned by the benchmark: want %v", job.OwnerReferences, owned)
	}
	if *job.Spec.BackoffLimit != cleanupRetries || *job.Spec.ActiveDeadlineSeconds != int64(cleanupPatience.Seconds()) {
		t.Errorf("the clean-up Job's backoff limit %d and deadline %d s", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
	}
}

// noRequests fails the test if the operator sent the existing CouchDB anything.
func noRequests(t *testing.T) {
	t.Helper()
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "DELETE"} {
		if n := existingCouchDB.Requests(method, "/"); n > 0 {
			t.Errorf("the operator sent the existing CouchDB %d %s request(s)", n, method)
		}
	}
}

// A run on an existing CouchDB ends with a cleanup step: a Job that deletes the run's
// databases; the benchmark's finalizer then has a Job of its own to run when it is deleted,
// which it deletes once it has ended.
func TestExistingCouchDBRunDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	bench := onExistingCouchDB(t, func(*benchv1.CouchBenchmark) {})

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded || got.Status.Progress.Step != benchv1.StepCleanup {
		t.Fatalf("phase %s, last step %+v; want Succeeded after the cleanup step", got.Status.Phase, got.Status.Progress)
	}
	checkCleanupJob(t, job(t, bench.Namespace, builders.CleanupJobName(got, false)), got, true)
	if evs := drainEvents(h); !strings.Contains(evs, "Normal DatabasesDeleted Job "+builders.CleanupJobName(got, false)+" deleted the run's databases") {
		t.Errorf("no event of the clean-up:\n%s", evs)
	}
	if !controllerutil.ContainsFinalizer(got, databasesFinalizer) {
		t.Fatalf("finalizers %v, want %s", got.Finalizers, databasesFinalizer)
	}

	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	_, deleting := h.reconcile(bench)
	if deleting == nil {
		t.Fatal("the benchmark went before its databases")
	}
	finalize := job(t, bench.Namespace, builders.CleanupJobName(got, true))
	checkCleanupJob(t, finalize, got, false)
	h.playKubelet(deleting)
	if _, gone := h.reconcile(bench); gone != nil {
		t.Errorf("the benchmark is still there after its clean-up: finalizers %v", gone.Finalizers)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(finalize), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the finalizer's clean-up Job after it ended: %v; want it deleted", err)
	}
	noRequests(t)
}

// spec.keepDatabases: no cleanup step, no finalizer, no clean-up Job.
func TestKeepDatabasesKeepsThem(t *testing.T) {
	h := newHarness(t)
	bench := onExistingCouchDB(t, func(b *benchv1.CouchBenchmark) { b.Spec.KeepDatabases = true })

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded || got.Status.Progress.Step != benchv1.StepWrites || len(got.Finalizers) > 0 {
		t.Fatalf("phase %s, last step %+v, finalizers %v; want Succeeded after the writes, and no finalizer",
			got.Status.Phase, got.Status.Progress, got.Finalizers)
	}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: bench.Namespace, Name: builders.CleanupJobName(got, false)}, &batchv1.Job{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a clean-up Job of a run that keeps its databases: %v", err)
	}
}

// A failed run deletes its databases too, by a clean-up Job that the end of the run leaves
// running; its results stay. A clean-up that fails does not fail a run: it says what is left.
func TestFailedRunDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	h.failStep = benchv1.StepIndex
	bench := onExistingCouchDB(t, func(*benchv1.CouchBenchmark) {})
	h.only = func(job *batchv1.Job) bool { return job.Labels[builders.LabelStep] != string(benchv1.StepCleanup) }

	got := h.drive(bench, 20)

	if got.Status.Phase != benchv1.PhaseFailed || len(got.Status.Results) != 2 || len(got.Status.Results[0].Seeding) != 1 {
		t.Fatalf("phase %s, results %+v; want Failed with the seeding kept", got.Status.Phase, got.Status.Results)
	}
	h.reconcile(got) // a finished run stops its Jobs, but not the clean-up
	cleanup := job(t, bench.Namespace, builders.CleanupJobName(got, false))
	checkCleanupJob(t, cleanup, got, true)
	if cleanup.Spec.Suspend != nil && *cleanup.Spec.Suspend {
		t.Error("the end of the failed run suspended its clean-up Job")
	}

	h = newHarness(t)
	h.failStep = benchv1.StepCleanup
	bench = onExistingCouchDB(t, func(*benchv1.CouchBenchmark) {})
	got = h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s after a failed clean-up, want Succeeded", got.Status.Phase)
	}
	want := "Warning CleanUpFailed the run's databases on " + bench.Spec.CouchDB.Existing.URL + " could not be deleted (Job " +
		builders.CleanupJobName(got, false) + " failed"
	how := "remove them with couchbench clean --benchmark bench --run-id " + builders.RunID(got)
	if evs := drainEvents(h); !strings.Contains(evs, want) || !strings.Contains(evs, how) {
		t.Errorf("events lack %q and %q:\n%s", want, how, evs)
	}
}

// A benchmark deleted in the middle of its run takes its databases with it, by a clean-up Job
// of its own. One that has not ended within cleanupPatience of the deletion is given up on,
// and deleted, with an event that says what is left and how to remove it; so is the clean-up
// of a benchmark whose credentials Secret is gone, at once.
func TestDeletedBenchmarkDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	h.document = func(arm string, step benchv1.Step) *results.Document {
		if step != benchv1.StepSeed {
			return nil // the run never gets past its index step
		}
		return okDocument(arm, step)
	}
	h.only = func(job *batchv1.Job) bool { return job.Labels[builders.LabelStep] != string(benchv1.StepCleanup) }
	bench := onExistingCouchDB(t, func(*benchv1.CouchBenchmark) {})
	for range 4 {
		_, got := h.reconcile(bench)
		h.playKubelet(got)
	}
	if err := env.Client.Delete(context.Background(), bench); err != nil {
		t.Fatal(err)
	}
	_, deleting := h.reconcile(bench)
	if deleting == nil {
		t.Fatal("the benchmark went before its databases")
	}
	finalize := job(t, bench.Namespace, builders.CleanupJobName(deleting, true))
	h.clock.SetTime(deleting.DeletionTimestamp.Add(cleanupPatience / 2))
	if _, still := h.reconcile(bench); still == nil {
		t.Fatal("the benchmark went while its clean-up runs")
	}
	h.clock.SetTime(deleting.DeletionTimestamp.Add(cleanupPatience))
	if _, still := h.reconcile(bench); still != nil {
		t.Fatalf("the benchmark is still there after the patience: finalizers %v", still.Finalizers)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(finalize), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the clean-up Job given up on: %v; want it deleted", err)
	}
	url := bench.Spec.CouchDB.Existing.URL
	evs := drainEvents(h)
	want := "Warning CleanUpFailed the run's databases on " + url + " could not be deleted (Job " + finalize.Name + " did not end within 2m0s)"
	how := "remove them with couchbench clean --benchmark bench --run-id " + builders.RunID(deleting) + " --url " + url
	if !strings.Contains(evs, want) || !strings.Contains(evs, how) {
		t.Errorf("events lack %q and %q:\n%s", want, how, evs)
	}

	lost := existingBenchmark(bench.Namespace)
	lost.Name = "lost"
	lost.Spec.CouchDB.Existing.CredentialsSecret.Name = "gone"
	create(t, lost)
	h.reconcile(lost) // the finalizer
	if err := env.Client.Delete(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	if _, still := h.reconcile(lost); still != nil {
		t.Fatalf("the benchmark whose credentials are gone is still there: finalizers %v", still.Finalizers)
	}
	if evs := drainEvents(h); !strings.Contains(evs, "could not be deleted (the credentials Secret gone is gone)") {
		t.Errorf("no event for the credentials that are gone:\n%s", evs)
	}
	noRequests(t)
}
