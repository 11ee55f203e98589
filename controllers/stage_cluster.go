package controllers

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/couch"
)

// waitForCluster waits until the arm's CouchDB is really a cluster: every pod of the
// StatefulSet ready, the cluster set up ({"action":"finish_cluster"}, sent once), and
// /_membership listing every node in both cluster_nodes and all_nodes. Pods can be ready
// long before the nodes have joined; benchmarking then would measure a smaller cluster.
func (r *CouchBenchmarkReconciler) waitForCluster(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	if out, late := r.pastClusterTimeout(bench, "waiting for the cluster"); late {
		return out, nil
	}
	size := int(bench.Spec.CouchDB.Provision.ClusterSize)
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
	if int(sts.Status.ReadyReplicas) < size {
		stuck, err := r.stuckCouchDBPod(ctx, bench, release)
		return stepOutcome{requeueAfter: pollWhileProvisioning, stalled: stuck}, err
	}

	c, err := r.couchClient(ctx, bench, qs)
	if err != nil {
		return stepOutcome{}, err
	}
	if size > 1 {
		state, err := c.ClusterSetupState(ctx)
		if err != nil {
			return stepOutcome{requeueAfter: pollWhileProvisioning}, nil
		}
		if state != "cluster_finished" {
			if err := c.FinishCluster(ctx); err != nil {
				return stepOutcome{requeueAfter: pollWhileProvisioning}, nil
			}
		}
	}
	m, err := c.Membership(ctx)
	if err != nil || len(m.ClusterNodes) != size || len(m.AllNodes) != size {
		return stepOutcome{requeueAfter: pollWhileProvisioning}, nil
	}
	if qs.Name == bench.Spec.QueryServers[0].Name && len(bench.Status.CouchDBNodes) == 0 {
		if bench.Status.CouchDBNodes, err = r.couchdbNodes(ctx, bench.Namespace, release); err != nil {
			return stepOutcome{}, err
		}
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

// couchClient talks to an arm's CouchDB as its admin.
func (r *CouchBenchmarkReconciler) couchClient(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (*couch.Client, error) {
	url, keys := r.target(bench, qs)
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: keys.Name}, &secret); err != nil {
		return nil, fmt.Errorf("reading CouchDB credentials: %w", err)
	}
	creds := couch.Credentials{Username: string(secret.Data[keys.UsernameKey]), Password: string(secret.Data[keys.PasswordKey])}
	return couch.New(url, creds, couch.Options{RequestTimeout: requestTimeout})
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
