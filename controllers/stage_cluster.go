package controllers

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// formCluster waits until the arms' CouchDB is really a cluster: every pod of each arm's
// StatefulSet ready, then, for more than one node, a cluster Job (`couchbench cluster`, in
// the benchmark's namespace) that sends finish_cluster once and waits until /_membership
// lists every node in both cluster_nodes and all_nodes. Pods can be ready long before the
// nodes have joined; benchmarking then would measure a smaller cluster. The Job asks CouchDB,
// not the operator, which contacts no CouchDB (docs/security.md). A one-node CouchDB sets
// itself up (single_node) and is its cluster once its pod is ready.
func (r *CouchBenchmarkReconciler) formCluster(ctx context.Context, bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer) (stepOutcome, error) {
	if out, late := r.pastClusterTimeout(bench, "waiting for the cluster"); late {
		return out, nil
	}
	if out, err := eachArm(ctx, bench, arms, r.podsReady); err != nil || !out.done {
		return out, err
	}
	if bench.Spec.CouchDB.Provision.ClusterSize > 1 {
		if out, err := r.clusterJob(ctx, bench, arms); err != nil || !out.done {
			return out, err
		}
	}
	if len(bench.Status.CouchDBNodes) == 0 {
		var err error
		bench.Status.CouchDBNodes, err = r.couchdbNodes(ctx, bench.Namespace, builders.ReleaseName(bench, bench.Spec.QueryServers[0].Name))
		if err != nil {
			return stepOutcome{}, err
		}
	}
	return stepOutcome{done: true}, nil
}

// podsReady is done once every pod of the arm's StatefulSet is ready.
func (r *CouchBenchmarkReconciler) podsReady(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	release := builders.ReleaseName(bench, qs.Name)
	// Helm's StatefulSet, polled rather than watched: read past the cache, so that the
	// operator keeps no watch on every StatefulSet of the cluster.
	var sts appsv1.StatefulSet
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: builders.StatefulSetName(release)}, &sts)
	if apierrors.IsNotFound(err) {
		return stepOutcome{requeueAfter: pollWhileProvisioning}, nil
	}
	if err != nil {
		return stepOutcome{}, err
	}
	if sts.Status.ReadyReplicas < bench.Spec.CouchDB.Provision.ClusterSize {
		stuck, err := r.stuckCouchDBPod(ctx, bench, release)
		return stepOutcome{requeueAfter: pollWhileProvisioning, stalled: stuck}, err
	}
	return stepOutcome{done: true}, nil
}

// clusterJob runs the cluster Job of the arms until it ends: done when every arm's CouchDB is
// a cluster, failed with what the Job last saw when it did not become one in time.
func (r *CouchBenchmarkReconciler) clusterJob(ctx context.Context, bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer) (stepOutcome, error) {
	names := make([]string, len(arms))
	for i, qs := range arms {
		names[i] = qs.Name
	}
	jobs, err := r.observeJobs(ctx, bench, []string{builders.JobName(bench, names, benchv1.StepCluster)})
	if err != nil {
		return stepOutcome{}, err
	}
	if jobs.missing() {
		servers := make([]builders.ArmServer, len(arms))
		for i, qs := range arms {
			url, creds := r.target(bench, qs)
			servers[i] = builders.ArmServer{Arm: qs.Name, URL: url, Credentials: creds}
		}
		left := clusterTimeout - r.Clock.Since(bench.Status.Progress.StepStartTime.Time)
		job := builders.ClusterJob{Bench: bench, Servers: servers, Image: r.RunnerImage, Deadline: min(left, r.jobDeadline(bench))}.Job()
		_, _, err := r.createOwned(ctx, bench, job)
		return stepOutcome{}, err
	}
	if out, running, err := r.running(ctx, bench, jobs, runnerPods(bench)); running || err != nil {
		return out, err
	}
	if o := jobs[0]; o.phase == jobFailed {
		return failed(reasonClusterNotReady, "%s: the CouchDB did not become a cluster of %d nodes: Job %s failed (%s): %s",
			planStep{Arms: names}.arms(), bench.Spec.CouchDB.Provision.ClusterSize, o.name, o.detail, wholeLines(o.message)), nil
	}
	return stepOutcome{done: true}, nil
}

// couchdbNodes are the nodes a release's CouchDB pods run on, sorted; the later arms'
// CouchDB prefers the first arm's (builders.HelmValues).
func (r *CouchBenchmarkReconciler) couchdbNodes(ctx context.Context, namespace, release string) ([]string, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(builders.CouchDBPodLabels(release))); err != nil {
		return nil, err
	}
	var nodes []string
	for _, pod := range pods.Items {
		if n := pod.Spec.NodeName; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	return nodes, nil
}

// stuckCouchDBPod finds a pod of the release's CouchDB that cannot start (stuckPod); nil when
// none is. Read past the cache: the operator keeps no watch on every pod of the cluster.
func (r *CouchBenchmarkReconciler) stuckCouchDBPod(ctx context.Context, bench *benchv1.CouchBenchmark, release string) (*stepFailure, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(bench.Namespace), client.MatchingLabels(builders.CouchDBPodLabels(release))); err != nil {
		return nil, err
	}
	return stuckPod(pods.Items, couchDBPods(bench)), nil
}

// pastClusterTimeout fails a provisioning step that has taken longer than clusterTimeout.
func (r *CouchBenchmarkReconciler) pastClusterTimeout(bench *benchv1.CouchBenchmark, doing string) (stepOutcome, bool) {
	p := bench.Status.Progress
	if p == nil || p.StepStartTime == nil || r.Clock.Since(p.StepStartTime.Time) < clusterTimeout {
		return stepOutcome{}, false
	}
	return failed(reasonClusterNotReady, "query server %s: %s took longer than %s; check the CouchDB pods (images pulled? PVCs bound?) "+
		"with kubectl get pods -l release=%s", p.QueryServer, doing, clusterTimeout, builders.ReleaseName(bench, p.QueryServer)), true
}

// target is the URL of an arm's CouchDB and the Secret keys of its admin credentials.
func (r *CouchBenchmarkReconciler) target(bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (string, benchv1.SecretKeys) {
	if e := bench.Spec.CouchDB.Existing; e != nil {
		return e.URL, e.CredentialsSecret
	}
	release := builders.ReleaseName(bench, qs.Name)
	return r.ServiceURL(bench.Namespace, builders.ServiceName(release)), benchv1.SecretKeys{
		Name: builders.AdminSecretName(bench, qs.Name), UsernameKey: builders.AdminUsernameKey, PasswordKey: builders.AdminPasswordKey,
	}
}
