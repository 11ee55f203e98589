package builders

import (
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// The Jobs of a run that measure nothing, run from the runner's image in the benchmark's
// namespace so that the operator itself sends CouchDB no request: the cluster setup of the
// arms' provisioned CouchDB, and the deletion of the run's databases on an existing one.
// They make a few requests and wait, so they ask for little, and they go where the runner
// Jobs may go.

// setupResources are what a setup Job's pod asks for: a few requests to CouchDB, no load.
var setupResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
}

// ClusterJob makes the provisioned CouchDB of each of its arms a cluster of the benchmark's
// size (`couchbench cluster`): finish_cluster once every node has joined, then until
// /_membership lists every node. It ends when they all are one, or at its deadline.
type ClusterJob struct {
	Bench   *benchv1.CouchBenchmark
	Servers []ArmServer
	Image   string
	// Deadline bounds the Job: what is left of the step's time for the cluster to form.
	Deadline time.Duration
}

// Job builds the cluster setup's Job.
func (c ClusterJob) Job() *batchv1.Job {
	armArgs, mounts, volumes := armServers(c.Bench.Namespace, c.Servers)
	args := append([]string{"cluster", "--nodes", strconv.Itoa(int(c.Bench.Spec.CouchDB.Provision.ClusterSize))}, armArgs...)
	arms := make([]string, len(c.Servers))
	for i, srv := range c.Servers {
		arms[i] = srv.Arm
	}
	return setupJob(c.Bench, JobName(c.Bench, arms, benchv1.StepCluster), Labels(c.Bench, "", benchv1.StepCluster),
		c.Image, c.Deadline, args, mounts, volumes, arms)
}

// CleanupJob deletes the databases a run made on an existing CouchDB (`couchbench clean
// --benchmark NAME --run-id ID`): every database named with the run's prefix, which needs no
// spec, so that it also runs while the benchmark is being deleted.
type CleanupJob struct {
	Bench *benchv1.CouchBenchmark
	Image string
	// Deadline bounds the Job.
	Deadline time.Duration
	// Finalizing makes the Job of a benchmark being deleted: owned by nothing (the garbage
	// collector would take an object owned by a benchmark on its way out), named by the run so
	// that a new benchmark of the same name never finds it; the operator deletes it when done.
	Finalizing bool
}

// Job builds the clean-up's Job.
func (c CleanupJob) Job() *batchv1.Job {
	e := c.Bench.Spec.CouchDB.Existing
	args := []string{"clean", "--benchmark", c.Bench.Name, "--run-id", RunID(c.Bench), "--url", e.URL, "--credentials-dir", credentialsDir}
	mounts := []corev1.VolumeMount{{Name: "credentials", MountPath: credentialsDir, ReadOnly: true}}
	volumes := []corev1.Volume{credentialsVolume("credentials", e.CredentialsSecret)}
	job := setupJob(c.Bench, CleanupJobName(c.Bench, c.Finalizing), Labels(c.Bench, "", benchv1.StepCleanup), c.Image, c.Deadline,
		args, mounts, volumes, nil)
	if c.Finalizing {
		job.OwnerReferences = nil
	}
	return job
}

// CleanupJobName is the clean-up's Job: the run's cleanup step's, or the one of a benchmark
// being deleted.
func CleanupJobName(bench *benchv1.CouchBenchmark, finalizing bool) string {
	if finalizing {
		return name(maxObjectName, bench.Name, RunID(bench), "finalize")
	}
	return JobName(bench, armNames(bench), benchv1.StepCleanup)
}

func armNames(bench *benchv1.CouchBenchmark) []string {
	out := make([]string, len(bench.Spec.QueryServers))
	for i, qs := range bench.Spec.QueryServers {
		out[i] = qs.Name
	}
	return out
}

func setupJob(bench *benchv1.CouchBenchmark, jobName string, labels map[string]string, image string, deadline time.Duration,
	args []string, mounts []corev1.VolumeMount, volumes []corev1.Volume, arms []string) *batchv1.Job {
	job := oneShotJob(bench, jobName, labels, deadline, runnerUID, runnerContainer(image, args, mounts), volumes)
	placeLoadGenerator(job, bench, arms, setupResources, bench.Spec.Runner.Scheduling)
	return job
}
