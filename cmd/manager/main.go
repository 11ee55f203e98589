// Command manager runs the couchbench operator: the controller that turns CouchBenchmark
// resources into benchmark runs.
package main

import (
	"errors"
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/controllers"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/version"
)

func main() {
	var runnerImage, k6Image, chartCache, watchNamespaces, installerRole, cpuReaderRole, chartRepositories string
	var settings controllers.ManagerSettings
	var sources helmrelease.Sources
	flag.StringVar(&settings.MetricsAddress, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	flag.BoolVar(&settings.SecureMetrics, "metrics-secure", true,
		"Serve the metrics over HTTPS to scrapers the API server authenticates and authorizes for GET /metrics "+
			"(the metrics-reader ClusterRole); false: plain HTTP to anyone.")
	flag.StringVar(&settings.HealthProbeAddress, "health-probe-bind-address", ":8081", "Address of the health and readiness probes.")
	flag.BoolVar(&settings.LeaderElection, "leader-elect", false,
		"Elect a leader, so that only one of several replicas reconciles; the leader gives its Lease back when it stops.")
	flag.StringVar(&settings.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; empty: the manager's pod's own (needed outside a cluster).")
	flag.StringVar(&runnerImage, "runner-image", envOr("RUNNER_IMAGE", "couchbench/manager:dev"),
		"Image of the runner Jobs: the operator's own image, which carries the couchbench binary (env RUNNER_IMAGE).")
	flag.StringVar(&k6Image, "k6-image", "grafana/k6:1.8.1",
		"k6 image of the benchmarks that name none (spec.k6.image): one a cluster without internet can pull.")
	flag.StringVar(&watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces to watch, the only ones the manager caches and acts in; empty watches all.")
	flag.StringVar(&chartCache, "chart-cache", os.TempDir()+"/couchbench-charts", "Directory for downloaded Helm charts and repository indexes.")
	flag.StringVar(&installerRole, "installer-cluster-role", "couchbench-installer",
		"ClusterRole bound to the ServiceAccount "+builders.InstallerName+" of each namespace where the operator provisions CouchDB; "+
			"Helm acts as that ServiceAccount, with that role's rights there, never with the operator's.")
	flag.StringVar(&cpuReaderRole, "cpu-reader-cluster-role", "",
		"ClusterRole (get and create pods/exec) bound to the ServiceAccount "+builders.CPUReaderName+" of each namespace where "+
			"the operator provisions CouchDB; its seed, index, views and writes Jobs run as that ServiceAccount and read the "+
			"CouchDB pods' CPU time; empty: the server's CPU cost is not measured.")
	flag.StringVar(&chartRepositories, "chart-repositories", "",
		"Comma-separated chart repositories (https://...) and OCI registries (oci://...) a benchmark's chart may come from, "+
			"with what lies under them; empty: none, only the chart built into the operator.")
	flag.BoolVar(&sources.Archives, "allow-configmap-charts", false, "Allow charts a benchmark's author put in a ConfigMap of its namespace.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	if runnerImage == "" || k6Image == "" {
		setupLog.Error(errors.New("--runner-image and --k6-image must each name an image"), "invalid flags")
		os.Exit(1)
	}
	var err error
	if settings.Namespaces, err = controllers.WatchNamespaces(watchNamespaces); err != nil {
		setupLog.Error(err, "invalid flags")
		os.Exit(1)
	}
	if sources.Repositories, err = controllers.ChartRepositories(chartRepositories); err != nil {
		setupLog.Error(err, "invalid flags")
		os.Exit(1)
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(benchv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), settings.Options(scheme))
	if err != nil {
		setupLog.Error(err, "creating the manager")
		os.Exit(1)
	}

	releases, err := helmrelease.New(mgr.GetConfig(), chartCache, ctrl.Log.WithName("helm"),
		helmrelease.Options{Installer: builders.InstallerName, Sources: sources})
	if err != nil {
		setupLog.Error(err, "setting up Helm")
		os.Exit(1)
	}
	kubeVersion := "unknown"
	if dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig()); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			kubeVersion = v.GitVersion
		}
	}
	setupLog.Info("starting", "couchbench", version.String(), "kubernetes", kubeVersion,
		"watchNamespaces", settings.Namespaces, "leaderElection", settings.LeaderElection,
		"installerClusterRole", installerRole, "cpuReaderClusterRole", cpuReaderRole, "chartRepositories", sources.Repositories, "configMapCharts", sources.Archives)
	logs, err := controllers.NewKubeLogs(mgr.GetConfig())
	if err != nil {
		setupLog.Error(err, "setting up the pod log reader")
		os.Exit(1)
	}
	if err := (&controllers.CouchBenchmarkReconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("couchbench"),
		Clock:             clock.RealClock{},
		Releases:          releases,
		Logs:              logs,
		KubernetesVersion: kubeVersion,
		RunnerImage:       runnerImage,
		K6Image:           k6Image,
		ServiceURL:        controllers.ClusterServiceURL,

		InstallerClusterRole: installerRole,
		CPUReaderClusterRole: cpuReaderRole,
		ChartSources:         sources,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "setting up the CouchBenchmark controller")
		os.Exit(1)
	}

	if err := (&controllers.CouchBenchmarkScheduleReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("couchbench-schedule"),
		Clock:     clock.RealClock{},
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "setting up the CouchBenchmarkSchedule controller")
		os.Exit(1)
	}

	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))

	setupLog.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "running the manager")
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
