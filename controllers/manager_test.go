package controllers

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/testenv"
)

// The operator as it runs in a cluster: a controller-runtime manager (informers, watches,
// the events API, the production cache and client options) acting as the operator's service
// account with only the generated RBAC,
// installing the real Apache chart with Helm, tearing it down and finalizing a deletion. The
// test plays kubelet and the Job controller; CouchDB's answers come from couchDBStub.
func TestManagerRunsAProvisionedBenchmarkWithItsOwnRBAC(t *testing.T) {
	ns := env.Namespace(t)
	cfg := env.OperatorConfig(t)
	// Informers retry a forbidden list or watch forever and the run may still get through on
	// requeues: count every refusal instead.
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	h := runOperator(t, cfg, testenv.InstallerClusterRole, ManagerSettings{MetricsAddress: "0", HealthProbeAddress: "0"})

	// The chart from a ConfigMap, which the operator reads with its own permissions.
	bench := provisionedBenchmark(ns)
	bench.Spec.CouchDB.Provision.Chart = chartConfigMap(t, ns)
	got := runToSuccess(t, h, bench)
	ctx := context.Background()
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

	release := builders.ReleaseName(got, "js")
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the benchmark to be finalized", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(bench), &benchv1.CouchBenchmark{}))
	})
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: builders.StatefulSetName(release)}, &appsv1.StatefulSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet after deletion: %v", err)
	}
	refused.none(t)
}

// runOperator runs the operator as cmd/manager does, in this process: a manager with
// settings, acting as cfg's identity, and the CouchBenchmark controller on it with the real
// Helm SDK acting as each namespace's installer, bound to installerRole; CouchDB's answers
// come from couchDBStub. The returned harness plays kubelet for it (its clock only
// dates the pods and Jobs it finishes). The manager stops when the test ends.
func runOperator(t *testing.T, cfg *rest.Config, installerRole string, settings ManagerSettings) *harness {
	t.Helper()
	h := &harness{t: t, document: okDocument, clock: clocktesting.NewFakePassiveClock(time.Now()), logs: &podLogs{}}
	runManager(t, cfg, settings, func(mgr ctrl.Manager) {
		releases := operatorReleases(t, cfg, testChartSources)
		srv := startCouchDBStub(t)
		h.r = &CouchBenchmarkReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("couchbench"),
			Clock: clock.RealClock{}, Releases: releases, Logs: h.logs, RunnerImage: "couchbench/manager:test", K6Image: "couchbench/k6:test",
			ServiceURL:           func(string, string) string { return srv.URL },
			InstallerClusterRole: installerRole, ChartSources: testChartSources,
		}
		if err := h.r.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	})
	return h
}

// runManager starts a manager with settings, acting as cfg's identity, after setup has put
// its controllers on it. stop ends it and returns once it has stopped (its Lease given back);
// it is called when the test ends too.
func runManager(t *testing.T, cfg *rest.Config, settings ManagerSettings, setup func(ctrl.Manager)) (mgr ctrl.Manager, stop func()) {
	t.Helper()
	opts := settings.Options(env.Scheme)
	// The tests run a manager each in one process, and controller-runtime refuses a
	// controller name it has seen in the process before (its metrics would mix).
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	setup(mgr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return mgr, stop
}

// runToSuccess creates a provisioned benchmark of one query server and the admin Secret the
// couchDBStub expects, and plays kubelet until the operator has run it to success.
func runToSuccess(t *testing.T, h *harness, bench *benchv1.CouchBenchmark) *benchv1.CouchBenchmark {
	t.Helper()
	create(t, bench)
	adminSecretFor(t, bench)
	var got benchv1.CouchBenchmark
	waitFor(t, "the benchmark to succeed", func() bool {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(bench), &got); err != nil {
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
	return &got
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

// none fails the test if the API server refused any request: the RBAC lacks them.
func (f *forbiddenRequests) none(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) > 0 {
		t.Errorf("the API server refused the operator %d request(s): its RBAC lacks them:\n%s", len(f.requests), strings.Join(f.requests, "\n"))
	}
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

// Two replicas of the manager with leader election, as the chart runs them, each acting as
// the chart's service account with only the chart's RBAC: the first takes the Lease and
// records the event of it on the Lease in the manager's namespace (the core events API);
// stopped, it gives the Lease back (a holder left in it would make its successor wait out
// the lease duration); the second then takes it.
func TestManagerLeaderElectionWithTheChartsRBAC(t *testing.T) {
	ns := env.Namespace(t)
	cfg := env.ChartOperatorConfig(t, ns, ns, nil)
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	settings := ManagerSettings{LeaderElection: true, LeaderElectionNamespace: ns, MetricsAddress: "0", HealthProbeAddress: "0"}
	noControllers := func(ctrl.Manager) {}

	first, stopFirst := runManager(t, cfg, settings, noControllers)
	waitFor(t, "the first manager to be elected", elected(first))
	holder := leaseHolder(t, ns)
	if holder == "" {
		t.Fatal("the elected manager holds no Lease")
	}
	waitFor(t, "the leader's event on its Lease", func() bool {
		var evs corev1.EventList
		if err := env.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == LeaderElectionID && e.Message == holder+" became leader"
		})
	})

	stopFirst()
	if after := leaseHolder(t, ns); after != "" {
		t.Fatalf("the stopped leader left %q in the Lease: its successor must wait for it to expire", after)
	}
	second, _ := runManager(t, cfg, settings, noControllers)
	waitFor(t, "the second manager to be elected", elected(second))
	if next := leaseHolder(t, ns); next == "" || next == holder {
		t.Errorf("the Lease is held by %q after the second manager was elected, want it (not %q)", next, holder)
	}
	refused.none(t)
}

// elected says whether mgr has won the leader election.
func elected(mgr ctrl.Manager) func() bool {
	return func() bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	}
}

// leaseHolder is the holder of the manager's Lease in namespace.
func leaseHolder(t testing.TB, namespace string) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: LeaderElectionID}, &lease); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// The namespaced install: the chart given watchNamespaces binds the manager's rules in those
// namespaces only, and the manager, given the same list, caches only them. Acting as the
// chart's service account with nothing but what the chart grants, it runs a benchmark in a
// watched namespace end to end (Helm, Jobs, results, teardown) without one refused request,
// leaves a benchmark in another namespace alone, and cannot read a Secret there.
func TestManagerNamespacedInstallWithTheChartsRBAC(t *testing.T) {
	operatorNamespace, watched, elsewhere := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	cfg := env.ChartOperatorConfig(t, operatorNamespace, operatorNamespace, map[string]any{"watchNamespaces": []any{watched}})
	var refused forbiddenRequests
	cfg.WrapTransport = refused.wrap
	namespaces, err := WatchNamespaces(watched)
	if err != nil {
		t.Fatal(err)
	}
	ignored := provisionedBenchmark(elsewhere)
	create(t, ignored)
	h := runOperator(t, cfg, operatorNamespace+"-installer", ManagerSettings{Namespaces: namespaces, MetricsAddress: "0", HealthProbeAddress: "0"})

	runToSuccess(t, h, provisionedBenchmark(watched))
	refused.none(t)
	var untouched benchv1.CouchBenchmark
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ignored), &untouched); err != nil {
		t.Fatal(err)
	}
	if len(untouched.Finalizers) > 0 || untouched.Status.Phase != "" {
		t.Errorf("the manager acted on a benchmark outside its namespaces: finalizers %v, phase %q", untouched.Finalizers, untouched.Status.Phase)
	}

	// What the manager's identity may read: a Secret of a watched namespace, and no other
	// (refusals expected now: not counted).
	asManager := rest.CopyConfig(cfg)
	asManager.WrapTransport = nil
	operator, err := client.New(asManager, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{watched, elsewhere} {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "credentials"}, StringData: map[string]string{"password": "s3cret"}})
	}
	if err := operator.Get(ctx, client.ObjectKey{Namespace: watched, Name: "credentials"}, &corev1.Secret{}); err != nil {
		t.Errorf("reading a Secret of the watched namespace %s: %v", watched, err)
	}
	if err := operator.Get(ctx, client.ObjectKey{Namespace: elsewhere, Name: "credentials"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading a Secret of %s, which is not watched: %v; want Forbidden", elsewhere, err)
	}
	if err := operator.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing the cluster's Secrets: %v; want Forbidden", err)
	}
}
