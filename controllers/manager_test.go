package controllers

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// The operator as it runs in a cluster: a controller-runtime manager (informers, watches,
// the events API, the production cache and client options) acting as the operator's service
// account with only the generated RBAC,
// installing the real Apache chart with Helm, tearing it down and finalizing a deletion. The
// test plays kubelet and the Job controller; CouchDB's answers come from the couchtest fake.
func TestManagerRunsAProvisionedBenchmarkWithItsOwnRBAC(t *testing.T) {
	ns := env.Namespace(t)
	cfg := env.OperatorConfig(t)
	// Informers retry a forbidden list or watch forever and the run may still get through on
	// requeues: count every refusal instead.
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Cache: CacheOptions(), Client: ClientOptions(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	releases, err := helmrelease.New(cfg, t.TempDir(), ctrl.Log.WithName("helm"))
	if err != nil {
		t.Fatal(err)
	}
	srv := couchtest.New(t, couchtest.WithAdmin("admin", fakeAdminPassword), couchtest.WithNodes("couchdb@a", "couchdb@b", "couchdb@c"))
	// The harness plays kubelet; its clock only dates the pods and Jobs it finishes.
	h := &harness{t: t, document: okDocument, clock: clocktesting.NewFakePassiveClock(time.Now()), logs: &podLogs{}}
	r := &CouchBenchmarkReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("couchbench"),
		Clock: clock.RealClock{}, Releases: releases, Logs: h.logs, RunnerImage: "couchbench/manager:test",
		ServiceURL: func(string, string) string { return srv.URL },
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// The chart from a ConfigMap, which the operator reads with its own permissions.
	bench := provisionedBenchmark(ns)
	bench.Spec.CouchDB.Provision.Chart = chartConfigMap(t, ns)
	create(t, bench)
	adminSecretFor(t, bench)
	var got benchv1.CouchBenchmark
	waitFor(t, "the benchmark to succeed", func() bool {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == benchv1.PhaseFailed {
			t.Fatalf("the run failed: %+v", got.Status.Conditions)
		}
		h.playKubelet(&got)
		return got.Status.Phase == benchv1.PhaseSucceeded
	})
	if len(got.Status.Results) != 1 || len(got.Status.Results[0].Indexing) != 1 {
		t.Errorf("results %+v", got.Status.Results)
	}
	var evs corev1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs.Items {
		reasons = append(reasons, e.Reason)
	}
	if !strings.Contains(strings.Join(reasons, ","), reasonSucceeded) {
		t.Errorf("events %v: the manager's events did not reach the API server", reasons)
	}

	release := builders.ReleaseName(&got, "js")
	if err := env.Client.Delete(ctx, &got); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the benchmark to be finalized", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &benchv1.CouchBenchmark{}))
	})
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: builders.StatefulSetName(release)}, &appsv1.StatefulSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet after deletion: %v", err)
	}
	if list := refused.list(); len(list) > 0 {
		t.Errorf("the API server refused the operator %d request(s): its RBAC lacks them:\n%s", len(list), strings.Join(list, "\n"))
	}
}

// forbiddenRequests records the requests the API server answered 403 Forbidden.
type forbiddenRequests struct {
	mu       sync.Mutex
	requests []string
}

func (f *forbiddenRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			f.mu.Lock()
			f.requests = append(f.requests, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
			f.mu.Unlock()
		}
		return resp, err
	})
}

func (f *forbiddenRequests) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitFor polls cond every 200 ms. The limit only stops a test that hangs; it is no
// performance assertion, so it is generous.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
