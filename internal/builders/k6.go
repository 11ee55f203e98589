package builders

import (
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

const (
	// LabelRunner is the index of a k6 runner among a read workload's parallel Jobs, or
	// MeterRunner on the round's meter (ReadsMeterJob).
	LabelRunner = "bench.couchbench.io/k6-runner"
	// MeterRunner is LabelRunner's value on a k6 round's meter.
	MeterRunner = "cpu"
	// K6Container is the k6 Jobs' container, whose log holds the runner's summary.
	K6Container = "k6"
	scriptsDir  = "/scripts"
	// k6UID is the grafana/k6 image's user.
	k6UID = 12345
	// k6Wrapper runs k6 on the script named by its first argument and turns k6's "thresholds
	// failed" exit (99) into success: a failed threshold is a result the operator reports,
	// not a crashed step.
	k6Wrapper = `script=$1; shift; k6 run --quiet --no-color "$@" "` + scriptsDir + `/$script"` +
		`; code=$?; if [ "$code" -eq 99 ]; then exit 0; fi; exit "$code"`
)

// K6ConfigMapName holds the k6 script.
func K6ConfigMapName(bench *benchv1.CouchBenchmark) string {
	return name(maxObjectName, bench.Name, "k6")
}

// K6ConfigMap carries the k6 script (named name) to the k6 Jobs.
func K6ConfigMap(bench *benchv1.CouchBenchmark, name, script string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: K6ConfigMapName(bench), Namespace: bench.Namespace, Labels: Labels(bench, "", ""), OwnerReferences: ownedBy(bench),
		},
		Data: map[string]string{name: script},
	}
}

// K6Job describes one k6 runner of an arm's read workload.
type K6Job struct {
	Bench *benchv1.CouchBenchmark
	Arm   string
	// Image is the k6 image: the benchmark's spec.k6.image, or the operator's default.
	Image string
	// Repetition of the reads workload this runner belongs to, from 0.
	Repetition int
	// Index of this runner among Runners; Segment and Sequence split the load between them
	// (empty with one runner).
	Index, Runners    int
	Segment, Sequence string
	// Barrier is the start barrier the script waits at with several runners or a meter
	// (internal/barrier's Spec or MeteredSpec); "" for none.
	Barrier string
	// Script is the script's name in the K6ConfigMap; Config its configuration (JSON).
	Script      string
	Config      string
	Credentials benchv1.SecretKeys
	Deadline    time.Duration
}

// K6JobName is the Job of one runner of one repetition.
func K6JobName(bench *benchv1.CouchBenchmark, arm string, repetition, index int) string {
	return name(maxObjectName, bench.Name, arm, string(benchv1.StepReads), strconv.Itoa(repetition), strconv.Itoa(index))
}

// Job builds the runner's Job: the credentials from the Secret as environment (k6 reads
// them in the script); k6's summary in the container's log and the handoff that checks it in
// the termination message.
func (k K6Job) Job() *batchv1.Job {
	labels := Labels(k.Bench, k.Arm, benchv1.StepReads)
	labels[LabelRunner] = strconv.Itoa(k.Index)
	args := []string{"-c", k6Wrapper, "k6", k.Script}
	var env []corev1.EnvVar
	if k.Runners > 1 {
		args = append(args, "--execution-segment", k.Segment, "--execution-segment-sequence", k.Sequence)
	}
	if k.Barrier != "" {
		// The runners of a repetition (and its meter) start the measured load together, from
		// a barrier in CouchDB at the end of their setup.
		env = append(env, corev1.EnvVar{Name: "COUCHBENCH_BARRIER", Value: k.Barrier})
	}
	secretEnv := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.Credentials.Name}, Key: key,
		}}}
	}
	container := corev1.Container{
		Name:    K6Container,
		Image:   k.Image,
		Command: []string{"sh"},
		Args:    args,
		Env: append([]corev1.EnvVar{
			{Name: "COUCHBENCH_CONFIG", Value: k.Config},
			secretEnv("COUCHDB_USER", k.Credentials.UsernameKey),
			secretEnv("COUCHDB_PASSWORD", k.Credentials.PasswordKey),
		}, env...),
		VolumeMounts: []corev1.VolumeMount{{Name: "scripts", MountPath: scriptsDir, ReadOnly: true}},
	}
	volumes := []corev1.Volume{{Name: "scripts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: K6ConfigMapName(k.Bench)},
	}}}}
	job := oneShotJob(k.Bench, K6JobName(k.Bench, k.Arm, k.Repetition, k.Index), labels, k.Deadline, k6UID, container, volumes)
	placeLoadGenerator(job, k.Bench, []string{k.Arm}, k.Bench.Spec.K6.Resources, k.Bench.Spec.K6.Scheduling)
	return job
}

// ReadsMeterJob is the meter of one round of an arm's k6 reads (`couchbench reads-cpu`,
// internal/readscpu): one more part of the round's barriers beside its k6 Jobs, reading the
// arm's CouchDB pods' CPU time as the namespace's CPU reader. It waits more than it works, so
// it asks for little, whatever the runner's resources; Guaranteed, as the load generators
// are, so that no neighbour delays its readings at the load's edges.
type ReadsMeterJob struct {
	Bench *benchv1.CouchBenchmark
	// Server is the arm and its CouchDB, with the pods to read.
	Server ArmServer
	// Image is the runner's image (the couchbench binary).
	Image string
	// Round is the reads' round (0 is the warm-up when there is one); Runners its k6 Jobs.
	Round, Runners int
	Deadline       time.Duration
}

// ReadsMeterJobName is the meter's Job of one round of an arm's reads.
func ReadsMeterJobName(bench *benchv1.CouchBenchmark, arm string, round int) string {
	return name(maxObjectName, bench.Name, arm, string(benchv1.StepReads), strconv.Itoa(round), "cpu")
}

// meterResources are the meter's: a few polls a second and two readings a round.
var meterResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
}

// Job builds the meter's Job; it hands its reading over as a runner hands its results.
func (m ReadsMeterJob) Job() *batchv1.Job {
	labels := Labels(m.Bench, m.Server.Arm, benchv1.StepReads)
	labels[LabelRunner] = MeterRunner
	armArgs, mounts, volumes := armServers(m.Bench.Namespace, []ArmServer{m.Server})
	args := append(runnerArgs("reads-cpu", m.Bench, []string{m.Server.Arm}),
		"--round", strconv.Itoa(m.Round), "--runners", strconv.Itoa(m.Runners), "--limit", m.Deadline.String())
	args = append(args, armArgs...)
	container := runnerContainer(m.Image, args, append([]corev1.VolumeMount{specMount}, mounts...))
	job := oneShotJob(m.Bench, ReadsMeterJobName(m.Bench, m.Server.Arm, m.Round), labels, m.Deadline, runnerUID, container,
		append([]corev1.Volume{specVolume(m.Bench)}, volumes...))
	placeLoadGenerator(job, m.Bench, []string{m.Server.Arm}, meterResources, m.Bench.Spec.Runner.Scheduling)
	asCPUReader(job)
	return job
}
