package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// LeaderElectionID names the Lease the manager's replicas elect their leader with.
const LeaderElectionID = "couchbench.bench.couchbench.io"

// shutdownTimeout bounds how long a stopping manager waits for its reconciles before it
// releases its Lease and exits. It stays well inside the pod's terminationGracePeriodSeconds
// (10 s in the chart and config/manager): a manager the kubelet kills before the release
// leaves its Lease to expire, and the next leader waits out the lease duration (15 s).
// A reconcile cut short is safe: a run only moves forward, and a Helm install cut short is
// found and redone by the next leader.
const shutdownTimeout = 5 * time.Second

// ManagerSettings are what cmd/manager's flags choose of the operator's manager; Options
// turns them into controller-runtime's options, the same for the binary and its tests.
type ManagerSettings struct {
	// Namespaces are the only namespaces the manager watches and caches; none: all.
	Namespaces []string
	// LeaderElection makes the manager take the Lease LeaderElectionID before it reconciles,
	// so that one of several replicas works at a time, and give it back when it stops.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; empty: the namespace of the pod the manager
	// runs in (a manager run outside a cluster must name one).
	LeaderElectionNamespace string
	// MetricsAddress and HealthProbeAddress are where the manager serves its metrics and its
	// probes; "0" serves none.
	MetricsAddress, HealthProbeAddress string
	// SecureMetrics serves the metrics over HTTPS (a self-signed certificate unless one is
	// given) to a client the API server authenticates (a bearer token, TokenReview) and
	// authorizes for GET /metrics (SubjectAccessReview; the metrics-reader ClusterRole):
	// anyone else gets 401 or 403. Without it, plain HTTP to anyone who reaches the port.
	SecureMetrics bool
}

// The secure metrics' filter asks the API server who a scraper is and whether it may read
// /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serve the metrics as SecureMetrics says, the kubebuilder v4 way:
// controller-runtime's secure serving with its authentication and authorization filter.
func (s ManagerSettings) metricsOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: s.MetricsAddress}
	if s.SecureMetrics {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// Options are the manager's controller-runtime options: lean caches of the watched
// namespaces, uncached reads of what no reconciler watches, and leader election that
// releases the Lease on shutdown, so that a restarted or replaced manager's successor takes
// over at once instead of waiting for the Lease to expire.
func (s ManagerSettings) Options(scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOptions(s.Namespaces...),
		Client:                        clientOptions(),
		Metrics:                       s.metricsOptions(),
		HealthProbeBindAddress:        s.HealthProbeAddress,
		LeaderElection:                s.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       s.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(shutdownTimeout),
	}
}
