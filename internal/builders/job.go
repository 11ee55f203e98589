package builders

import (
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/names"
)

// RunnerContainer is the runner Jobs' container, whose log holds the results document.
const RunnerContainer = "runner"

// Paths inside runner pods.
const (
	specDir        = "/etc/couchbench/spec"
	SpecKey        = "bench.json"
	credentialsDir = "/etc/couchbench/credentials"
	// runnerUID is a non-root user of the runner image.
	runnerUID = 65532
)

// RunnerJob describes one runner step.
type RunnerJob struct {
	Bench *benchv1.CouchBenchmark
	// Servers are the arms the Job runs, each with its CouchDB: one arm, or several that take
	// turns (on one CouchDB they share, or each on its own).
	Servers []ArmServer
	// Step is a runner step; the runner's subcommand of the same name carries it out.
	Step  benchv1.Step
	Image string
	// Deadline bounds the Job (activeDeadlineSeconds): what is left of the run's timeout.
	Deadline time.Duration
	// Part is which of the step's RunnerParts this Job is, from 0.
	Part int
}

// ArmServer is an arm and the CouchDB it runs against.
type ArmServer struct {
	Arm string
	URL string
	// Credentials name the Secret and its keys with the CouchDB admin's username and
	// password.
	Credentials benchv1.SecretKeys
	// Pods are the CouchDB's pods whose CPU time the Job reads (--arm-pods), as the CPU
	// reader ServiceAccount of the namespace; none: not read.
	Pods []string
}

// Job builds the step's Job. The runner writes its results document to its log and the
// handoff that checks it to the termination message (see results.Handoff); the pod itself
// needs no API access, unless it reads its arms' CouchDB pods' CPU time (Pods), for which it
// runs as the CPU reader and gets its token. Every arm is named with its CouchDB (--arm-url)
// and gets its admin's credentials in a directory of its own; arms with one URL and Secret
// share one client.
func (r RunnerJob) Job() *batchv1.Job {
	arms := r.arms()
	arm := ""
	if len(arms) == 1 {
		arm = arms[0]
	}
	labels := Labels(r.Bench, arm, r.Step)
	armArgs, mounts, volumes := armServers(r.Bench.Namespace, r.Servers)
	args := append(runnerArgs(string(r.Step), r.Bench, arms), armArgs...)
	if parts := RunnerParts(r.Bench, r.Step); parts > 1 {
		labels[LabelPart] = strconv.Itoa(r.Part)
		args = append(args, "--part", strconv.Itoa(r.Part), "--parts", strconv.Itoa(parts))
	}
	container := runnerContainer(r.Image, args, append([]corev1.VolumeMount{specMount}, mounts...))
	job := oneShotJob(r.Bench, JobNames(r.Bench, arms, r.Step)[r.Part], labels, r.Deadline, runnerUID, container,
		append([]corev1.Volume{specVolume(r.Bench)}, volumes...))
	placeLoadGenerator(job, r.Bench, arms, r.Bench.Spec.Runner.Resources, r.Bench.Spec.Runner.Scheduling)
	if slices.ContainsFunc(r.Servers, func(srv ArmServer) bool { return len(srv.Pods) > 0 }) {
		asCPUReader(job)
	}
	return job
}

// runnerArgs are a runner pod's command and the flags each takes: the spec, its arms, the
// handoff, and the run's id (one run's steps share its databases; another run's never touch
// them).
func runnerArgs(command string, bench *benchv1.CouchBenchmark, arms []string) []string {
	return []string{
		command,
		"-f", specDir + "/" + SpecKey,
		"--arm", strings.Join(arms, ","),
		"--handoff", corev1.TerminationMessagePathDefault,
		"--run-id", RunID(bench),
	}
}

// specMount and specVolume give a runner pod the benchmark's spec (SpecConfigMap).
var specMount = corev1.VolumeMount{Name: "spec", MountPath: specDir, ReadOnly: true}

func specVolume(bench *benchv1.CouchBenchmark) corev1.Volume {
	return corev1.Volume{Name: "spec", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: SpecConfigMapName(bench)},
	}}}
}

// asCPUReader runs the Job's pod as the namespace's CPU reader, with its token: it reads
// CouchDB pods' CPU time through pods/exec.
func asCPUReader(job *batchv1.Job) {
	pod := &job.Spec.Template.Spec
	pod.ServiceAccountName = CPUReaderName
	pod.AutomountServiceAccountToken = ptr.To(true)
}

// arms are the Job's arms, in its order.
func (r RunnerJob) arms() []string {
	out := make([]string, len(r.Servers))
	for i, srv := range r.Servers {
		out[i] = srv.Arm
	}
	return out
}

// runnerContainer runs the couchbench binary of the operator's image with args.
func runnerContainer(image string, args []string, mounts []corev1.VolumeMount) corev1.Container {
	return corev1.Container{
		Name:         RunnerContainer,
		Image:        image,
		Command:      []string{"/couchbench"},
		Args:         args,
		VolumeMounts: mounts,
		// The Go runtime's soft limit: near the container's memory limit it collects harder,
		// instead of letting the heap grow to twice what is live (the node's allocatable when
		// the container has no limit).
		Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: RunnerContainer, Resource: "limits.memory"}}}},
	}
}

// armServers name every arm's CouchDB (--arm-url) and the pods of those whose CPU time is read
// (--arm-pods), and give each its admin's credentials in a directory of its own under
// --credentials-dir.
func armServers(namespace string, servers []ArmServer) (args []string, mounts []corev1.VolumeMount, volumes []corev1.Volume) {
	args = make([]string, 0, 2+4*len(servers))
	args = append(args, "--credentials-dir", credentialsDir)
	for i, srv := range servers {
		name := "credentials-" + strconv.Itoa(i)
		args = append(args, "--arm-url", srv.Arm+"="+srv.URL)
		if len(srv.Pods) > 0 {
			args = append(args, "--arm-pods", srv.Arm+"="+namespace+"/"+strings.Join(srv.Pods, ","))
		}
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: credentialsDir + "/" + srv.Arm, ReadOnly: true})
		volumes = append(volumes, credentialsVolume(name, srv.Credentials))
	}
	return args, mounts, volumes
}

// credentialsVolume holds a CouchDB admin's credentials as the files "username" and
// "password", which the runner reads, whatever the Secret's keys are.
func credentialsVolume(name string, keys benchv1.SecretKeys) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: keys.Name,
		Items: []corev1.KeyToPath{
			{Key: keys.UsernameKey, Path: "username"},
			{Key: keys.PasswordKey, Path: "password"},
		},
	}}}
}

// oneShotJob is a Job of the benchmark that runs its pod once: never retried (a repeated
// measurement step could write data twice or measure a warm cache; the operator decides
// what follows a failure), bounded by deadline, without API access, under the restricted
// Pod Security profile, leaving its result in the termination message.
func oneShotJob(bench *benchv1.CouchBenchmark, name string, labels map[string]string, deadline time.Duration, uid int64,
	container corev1.Container, volumes []corev1.Volume) *batchv1.Job {
	container.ImagePullPolicy = corev1.PullIfNotPresent
	// A step writes its handoff to the termination message; one that stops before it can (a
	// flag it refuses, credentials it cannot read) leaves the tail of its log there instead,
	// which says why.
	container.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	container.SecurityContext = restrictedContainer()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: bench.Namespace, Labels: labels, OwnerReferences: ownedBy(bench)},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(max(int64(deadline.Seconds()), 1)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              restrictedPod(uid),
					Containers:                   []corev1.Container{container},
					Volumes:                      volumes,
				},
			},
		},
	}
}

// restrictedPod and restrictedContainer meet the restricted Pod Security profile: non-root,
// the runtime's seccomp profile, no privilege escalation, no capabilities, and a read-only
// root filesystem.
func restrictedPod(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(uid), RunAsGroup: ptr.To(uid),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{dropAll}},
	}
}

// dropAll drops every Linux capability.
const dropAll = "ALL"

// RunID names one benchmark's databases and design documents in CouchDB.
func RunID(bench *benchv1.CouchBenchmark) string { return names.RunID(string(bench.UID)) }
