package controllers

// What a run leaves on an existing CouchDB. These tests talk to envtest's API server and, where
// the operator deletes a run's databases itself, to real Apache CouchDB 3.4.3: the kit's single
// node that `make test` starts (internal/couchdbtest), which holds the databases the harness's
// (played) runner would have made. The runner's side (its cleanup at the end of `couchbench
// run`, and `couchbench clean`) is tested on real CouchDB in cmd/couchbench.

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/rundbs"
)

// onOwnCouchDB creates existingBenchmark, changed by change, against the kit's real single
// node (its admin's credentials in the Secret of credentials()), reached through c, holding
// what the run would have left there (every arm's databases, as the runner names them), and
// a database of another run of the benchmark and one of another benchmark, which must stay.
// Every one of them is deleted when the test ends.
func onOwnCouchDB(t *testing.T, change func(*benchv1.CouchBenchmark)) (bench *benchv1.CouchBenchmark, c *couch.Client, run, others []string) {
	t.Helper()
	srv := couchdbtest.Single(t)
	c = srv.Client(t, couch.Options{})
	ns := env.Namespace(t)
	secret := credentials(ns)
	secret.Data = map[string][]byte{"username": []byte(srv.User), "password": []byte(srv.Password)}
	create(t, secret)
	bench = existingBenchmark(ns)
	bench.Spec.CouchDB.Existing.URL = srv.URL()
	change(bench)
	create(t, bench)
	for _, qs := range bench.Spec.QueryServers {
		run = append(run, rundbs.Databases(bench, builders.RunID(bench), qs.Name)...)
	}
	others = []string{names.Database(bench.Name, "otherrun", "js", "small"), names.Database("other", builders.RunID(bench), "js", "small")}
	for _, db := range append(slices.Clone(run), others...) {
		srv.DeleteLater(t, db)
		if _, err := c.CreateDB(context.Background(), db, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	return bench, c, run, others
}

// present are the databases of dbs that c has.
func present(t *testing.T, c *couch.Client, dbs []string) []string {
	t.Helper()
	var out []string
	for _, db := range dbs {
		_, err := c.DBInfo(context.Background(), db)
		switch {
		case err == nil:
			out = append(out, db)
		case couch.StatusOf(err) != 404:
			t.Fatal(err)
		}
	}
	return out
}

// A run on an existing CouchDB ends with a cleanup step that deletes exactly the databases
// it made there; the benchmark's finalizer then has nothing left to do when it is deleted.
func TestExistingCouchDBRunDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	bench, c, run, others := onOwnCouchDB(t, func(*benchv1.CouchBenchmark) {})

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded || got.Status.Progress.Step != benchv1.StepCleanup {
		t.Fatalf("phase %s, last step %+v; want Succeeded after the cleanup step", got.Status.Phase, got.Status.Progress)
	}
	if left := present(t, c, run); len(left) > 0 {
		t.Errorf("the run's databases %v are still there", left)
	}
	if kept := present(t, c, others); !slices.Equal(kept, others) {
		t.Errorf("other runs' databases: %v left of %v", kept, others)
	}
	evs := drainEvents(h)
	if !strings.Contains(evs, "Normal DatabasesDeleted deleted the run's databases from "+c.URL()+": "+strings.Join(run, ", ")) {
		t.Errorf("no event naming the deleted databases %v:\n%s", run, evs)
	}
	if !controllerutil.ContainsFinalizer(got, databasesFinalizer) {
		t.Fatalf("finalizers %v, want %s", got.Finalizers, databasesFinalizer)
	}
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if _, gone := h.reconcile(bench); gone != nil {
		t.Errorf("the benchmark is still there: finalizers %v", gone.Finalizers)
	}
}

// spec.keepDatabases: no cleanup step, no finalizer, the databases stay.
func TestKeepDatabasesKeepsThem(t *testing.T) {
	h := newHarness(t)
	bench, c, run, _ := onOwnCouchDB(t, func(b *benchv1.CouchBenchmark) { b.Spec.KeepDatabases = true })

	got := h.drive(bench, 40)

	if got.Status.Phase != benchv1.PhaseSucceeded || got.Status.Progress.Step != benchv1.StepWrites || len(got.Finalizers) > 0 {
		t.Fatalf("phase %s, last step %+v, finalizers %v; want Succeeded after the writes, and no finalizer",
			got.Status.Phase, got.Status.Progress, got.Finalizers)
	}
	if kept := present(t, c, run); !slices.Equal(kept, run) {
		t.Errorf("kept %v of the run's databases %v", kept, run)
	}
}

// A failed run deletes its databases too; its results stay.
func TestFailedRunDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	h.failStep = benchv1.StepIndex
	bench, c, run, others := onOwnCouchDB(t, func(*benchv1.CouchBenchmark) {})

	got := h.drive(bench, 20)

	if got.Status.Phase != benchv1.PhaseFailed || len(got.Status.Results) != 2 || len(got.Status.Results[0].Seeding) != 1 {
		t.Fatalf("phase %s, results %+v; want Failed with the seeding kept", got.Status.Phase, got.Status.Results)
	}
	if left := present(t, c, run); len(left) > 0 {
		t.Errorf("the failed run's databases %v are still there", left)
	}
	if kept := present(t, c, others); !slices.Equal(kept, others) {
		t.Errorf("other runs' databases: %v left of %v", kept, others)
	}
}

// A benchmark deleted in the middle of its run takes its databases with it. When its CouchDB
// does not answer, the deletion is retried for cleanupPatience, then the benchmark goes
// anyway, with an event that says what is left and how to remove it.
func TestDeletedBenchmarkDeletesItsDatabases(t *testing.T) {
	h := newHarness(t)
	h.document = func(arm string, step benchv1.Step) *results.Document {
		if step != benchv1.StepSeed {
			return nil // the run never gets past its index step
		}
		return okDocument(arm, step)
	}
	bench, c, run, _ := onOwnCouchDB(t, func(*benchv1.CouchBenchmark) {})
	for range 4 {
		_, got := h.reconcile(bench)
		h.playKubelet(got)
	}
	if err := env.Client.Delete(context.Background(), bench); err != nil {
		t.Fatal(err)
	}
	if _, gone := h.reconcile(bench); gone != nil {
		t.Fatalf("the benchmark is still there: finalizers %v", gone.Finalizers)
	}
	if left := present(t, c, run); len(left) > 0 {
		t.Errorf("the deleted benchmark's databases %v are still there", left)
	}

	// A CouchDB that does not answer.
	down, stop := newCouchDBStub("admin", "s3cret-value")
	stop()
	lost := existingBenchmark(bench.Namespace)
	lost.Name = "lost"
	lost.Spec.CouchDB.Existing.URL = down.URL
	create(t, lost)
	h.reconcile(lost) // the finalizer
	if err := env.Client.Delete(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	var deleting benchv1.CouchBenchmark
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(lost), &deleting); err != nil {
		t.Fatal(err)
	}
	h.clock.SetTime(deleting.DeletionTimestamp.Add(cleanupPatience / 2))
	if _, still, err := h.tryReconcile(lost); err == nil || still == nil {
		t.Fatalf("within the patience: error %v, benchmark there: %v; want the deletion retried", err, still != nil)
	}
	h.clock.SetTime(deleting.DeletionTimestamp.Add(cleanupPatience))
	if _, still := h.reconcile(lost); still != nil {
		t.Fatalf("the benchmark is still there after the patience: finalizers %v", still.Finalizers)
	}
	evs := drainEvents(h)
	want := "Warning CleanUpFailed the run's databases on " + down.URL + " could not be deleted"
	how := "remove them with couchbench clean --benchmark lost --run-id " + builders.RunID(&deleting) + " --url " + down.URL
	if !strings.Contains(evs, want) || !strings.Contains(evs, how) {
		t.Errorf("events lack %q and %q:\n%s", want, how, evs)
	}
}
