package builders

import (
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// The cluster Job names every arm's CouchDB with its credentials and the cluster's size; it
// measures nothing, so it asks for little, and runs as the runner does (restricted, no API
// access).
func TestClusterJob(t *testing.T) {
	bench := provisioned()
	job := ClusterJob{Bench: bench, Image: "couchbench/manager:dev", Deadline: 10 * time.Minute, Servers: []ArmServer{
		{Arm: "js", URL: "http://bench-js-svc-couchdb.ns.svc:5984", Credentials: benchv1.SecretKeys{Name: "bench-js-admin", UsernameKey: AdminUsernameKey, PasswordKey: AdminPasswordKey}},
		{Arm: "py", URL: "http://bench-py-svc-couchdb.ns.svc:5984", Credentials: benchv1.SecretKeys{Name: "bench-py-admin", UsernameKey: AdminUsernameKey, PasswordKey: AdminPasswordKey}},
	}}.Job()
	pod := job.Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	want := "cluster --nodes 3 --credentials-dir /etc/couchbench/credentials --arm-url js=http://bench-js-svc-couchdb.ns.svc:5984 " +
		"--arm-url py=http://bench-py-svc-couchdb.ns.svc:5984"
	if job.Name != "bench-js-py-cluster" || args != want || *job.Spec.ActiveDeadlineSeconds != 600 {
		t.Errorf("Job %s runs %q for %d s; want bench-js-py-cluster running %q for 600 s", job.Name, args, *job.Spec.ActiveDeadlineSeconds, want)
	}
	if len(pod.Volumes) != 2 || pod.Volumes[1].Secret.SecretName != "bench-py-admin" || pod.Containers[0].VolumeMounts[1].MountPath != "/etc/couchbench/credentials/py" {
		t.Errorf("volumes %+v, mounts %+v: want each arm's credentials in its directory", pod.Volumes, pod.Containers[0].VolumeMounts)
	}
	if *pod.AutomountServiceAccountToken || !*pod.SecurityContext.RunAsNonRoot || pod.Containers[0].Resources.Requests.Cpu().String() != "10m" {
		t.Errorf("pod %+v", pod)
	}
}

// The clean-up Job deletes the run's databases by its prefix, with the existing CouchDB's
// credentials: owned by the benchmark in a run, owned by nothing and named by the run while
// the benchmark is being deleted.
func TestCleanupJob(t *testing.T) {
	bench := provisioned()
	bench.Spec.CouchDB = benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{URL: "http://couchdb:5984",
		CredentialsSecret: benchv1.SecretKeys{Name: "admin", UsernameKey: "user", PasswordKey: "pw"}}}
	run := CleanupJob{Bench: bench, Image: "couchbench/manager:dev", Deadline: 2 * time.Minute}.Job()
	final := CleanupJob{Bench: bench, Image: "couchbench/manager:dev", Deadline: 2 * time.Minute, Finalizing: true}.Job()
	want := "clean --benchmark bench --run-id " + RunID(bench) + " --url http://couchdb:5984 --credentials-dir /etc/couchbench/credentials"
	if len(run.OwnerReferences) != 1 || run.OwnerReferences[0].UID != bench.UID || len(final.OwnerReferences) != 0 {
		t.Errorf("owners: the run's %v, the finalizer's %v", run.OwnerReferences, final.OwnerReferences)
	}
	if run.Name != "bench-js-cleanup" || final.Name != "bench-"+RunID(bench)+"-finalize" {
		t.Errorf("names %s, %s", run.Name, final.Name)
	}
	pod := final.Spec.Template.Spec
	if args := strings.Join(pod.Containers[0].Args, " "); args != want {
		t.Errorf("the clean-up runs %q, want %q", args, want)
	}
	items := pod.Volumes[0].Secret.Items
	if pod.Volumes[0].Secret.SecretName != "admin" || items[0].Key != "user" || items[1].Key != "pw" || pod.Containers[0].VolumeMounts[0].MountPath != credentialsDir {
		t.Errorf("credentials %+v", pod.Volumes[0])
	}
	if final.Labels[LabelStep] != string(benchv1.StepCleanup) || final.Labels[LabelBenchmark] != "bench" {
		t.Errorf("labels %v", final.Labels)
	}
}
