package controllers

// The reconciler runs against a real kube-apiserver (envtest); the test calls Reconcile
// itself, with an injected clock and an in-memory event recorder, so that every step is
// deterministic and no manager or requeue timing is involved.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

func newReconciler(clock *clocktesting.FakePassiveClock) (*CouchBenchmarkReconciler, *events.FakeRecorder) {
	recorder := events.NewFakeRecorder(10)
	return &CouchBenchmarkReconciler{
		Client:    env.Client,
		APIReader: env.Client,
		Scheme:    env.Scheme,
		Recorder:  recorder,
		Clock:     clock,
	}, recorder
}

func existingBenchmark(namespace string) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "bench"},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB: benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{
				URL:               "http://couchdb:5984",
				CredentialsSecret: benchv1.SecretKeys{Name: "couchdb-admin"},
			}},
			QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
			Workloads:    benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}},
		},
	}
}

func reconcileOnce(t *testing.T, r *CouchBenchmarkReconciler, bench *benchv1.CouchBenchmark) (ctrl.Result, *benchv1.CouchBenchmark) {
	t.Helper()
	ctx := context.Background()
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bench)})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var got benchv1.CouchBenchmark
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &got); err != nil {
		t.Fatal(err)
	}
	return res, &got
}

func TestPreflightReportsCredentialsUntilTheyAreFixed(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	r, recorder := newReconciler(clock)

	bench := existingBenchmark(ns)
	if err := env.Client.Create(ctx, bench); err != nil {
		t.Fatal(err)
	}

	// 1. The Secret does not exist: stalled, with what to create.
	res, got := reconcileOnce(t, r, bench)
	stalled := meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != reasonCredentialsNotFound {
		t.Fatalf("Stalled = %+v, want True/%s", stalled, reasonCredentialsNotFound)
	}
	for _, want := range []string{`"couchdb-admin"`, `"username"`, `"password"`, ns} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("Stalled message %q does not mention %s", stalled.Message, want)
		}
	}
	if !meta.IsStatusConditionFalse(got.Status.Conditions, conditionReady) {
		t.Errorf("Ready is not False while stalled: %+v", got.Status.Conditions)
	}
	if got.Status.Phase != benchv1.PhasePending || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("phase %q observedGeneration %d, want Pending and %d", got.Status.Phase, got.Status.ObservedGeneration, got.Generation)
	}
	if res.RequeueAfter != preflightRetry {
		t.Errorf("RequeueAfter = %v, want %v (Secrets are not watched)", res.RequeueAfter, preflightRetry)
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Warning "+reasonCredentialsNotFound) {
		t.Errorf("event %q, want a Warning %s", e, reasonCredentialsNotFound)
	}

	// 2. Reconciling again with nothing changed writes nothing: same resourceVersion, no event.
	clock.SetTime(start.Add(time.Minute))
	_, again := reconcileOnce(t, r, bench)
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("an idempotent reconcile updated the object (resourceVersion %s -> %s)", got.ResourceVersion, again.ResourceVersion)
	}
	if len(recorder.Events) != 0 {
		t.Errorf("an idempotent reconcile emitted %q", <-recorder.Events)
	}

	// 3. The Secret exists without the password: stalled, naming the missing key.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "couchdb-admin"},
		Data:       map[string][]byte{"username": []byte("admin")},
	}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	_, got = reconcileOnce(t, r, bench)
	stalled = meta.FindStatusCondition(got.Status.Conditions, conditionStalled)
	if stalled == nil || stalled.Reason != reasonCredentialsIncomplete || !strings.Contains(stalled.Message, `key "password"`) {
		t.Fatalf("Stalled = %+v, want %s naming key \"password\"", stalled, reasonCredentialsIncomplete)
	}

	// 4. Fixed: no longer stalled, no requeue, a Normal event, and no Secret value anywhere.
	secret.Data["password"] = []byte("s3cret-value")
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	res, got = reconcileOnce(t, r, bench)
	if meta.FindStatusCondition(got.Status.Conditions, conditionStalled) != nil {
		t.Errorf("still Stalled after the Secret was fixed: %+v", got.Status.Conditions)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, conditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reasonPreflightPassed {
		t.Errorf("Ready = %+v, want False/%s: the benchmark has not run", ready, reasonPreflightPassed)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v after the fix, want 0", res.RequeueAfter)
	}
	drained := ""
	for len(recorder.Events) > 0 {
		drained += <-recorder.Events + "\n"
	}
	if !strings.Contains(drained, "Normal "+reasonPreflightPassed) {
		t.Errorf("events %q, want a Normal %s", drained, reasonPreflightPassed)
	}
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, "s3cret-value") {
			t.Errorf("condition %s carries the password", c.Type)
		}
	}
}

func TestProvisionedBenchmarkNeedsNoSecret(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	r, _ := newReconciler(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)))

	bench := existingBenchmark(ns)
	bench.Spec.CouchDB = benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{}}
	if err := env.Client.Create(ctx, bench); err != nil {
		t.Fatal(err)
	}
	res, got := reconcileOnce(t, r, bench)
	if meta.IsStatusConditionTrue(got.Status.Conditions, conditionStalled) {
		t.Errorf("a provisioned benchmark is Stalled: %+v", got.Status.Conditions)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v, want 0", res.RequeueAfter)
	}
}

func TestDeletedBenchmarkIsIgnored(t *testing.T) {
	r, recorder := newReconciler(clocktesting.NewFakePassiveClock(time.Now()))
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "default", Name: "gone"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile of a missing benchmark = %+v, %v; want no error and no requeue", res, err)
	}
	if len(recorder.Events) != 0 {
		t.Errorf("emitted %q for a missing benchmark", <-recorder.Events)
	}
}
