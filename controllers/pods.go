package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// Every pod the operator causes — CouchDB's, the runners', k6's — can be held back where
// nothing the operator watches changes: the scheduler finds no node for it, or the kubelet
// cannot pull its image or create its container. stuckPod finds such a pod among those the
// stages read; the run says so at once (Stalled, with a Warning event), waits for a fix, and
// fails after spec.podStartTimeout (stuckFor), so that a pod that will never start neither
// waits for the run's timeout nor holds a node's resources meanwhile.

// Waiting reasons of a container that will not start by itself.
var (
	imagePullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
		"InvalidImageName": true, "ErrImageInspect": true, "RegistryUnavailable": true}
	notStartingReasons = map[string]bool{"CrashLoopBackOff": true, "CreateContainerConfigError": true,
		"CreateContainerError": true, "RunContainerError": true}
)

// stuckPodReasons are the reasons stuckPod gives.
var stuckPodReasons = map[string]bool{reasonUnschedulable: true, reasonImagePullFailed: true, reasonPodNotStarting: true}

// The kinds of pod the operator causes, as messages name them; a load generator's is also
// the spec field that sizes and places it.
const (
	kindCouchDB = "CouchDB"
	kindRunner  = "runner"
	kindK6      = "k6"
)

// podFix says, for one kind of pod the operator causes, what a user changes when one cannot
// start.
type podFix struct {
	// kind names the pods in messages: kindCouchDB, kindRunner or kindK6.
	kind string
	// image says where the pods' image comes from.
	image string
	// schedule says what to change when the scheduler finds no node for a pod.
	schedule string
	// container is the one whose log says how far a load generator got (status.progress).
	container string
}

// couchDBPods are the pods of a provisioned CouchDB (the Apache chart's StatefulSet).
func couchDBPods(bench *benchv1.CouchBenchmark) podFix {
	schedule := "free resources in the cluster or lower spec.couchdb.provision.resources"
	if n := len(bench.Spec.QueryServers); n > 1 && bench.Spec.ArmOrder != benchv1.ArmsSequential {
		schedule = fmt.Sprintf("the %d arms' CouchDBs run side by side and must fit together: %s, or set spec.armOrder: "+
			"Sequential to run one arm's CouchDB at a time (the arms then meet different conditions, minutes apart)", n, schedule)
	}
	return podFix{kind: kindCouchDB, image: "spec.couchdb.provision.image, queryServers[].image, values.initImage", schedule: schedule}
}

// runnerPods are the pods of the runner Jobs (seed, index, views, writes).
func runnerPods(bench *benchv1.CouchBenchmark) podFix {
	return loadGeneratorPods(kindRunner, builders.RunnerContainer, bench.Spec.Runner.Parallelism, "run the seed and writes steps",
		"the runner runs from the operator's own image (its Helm chart's image.repository and image.tag, or --runner-image)")
}

// k6Pods are the pods of the k6 Jobs (the reads workload).
func k6Pods(bench *benchv1.CouchBenchmark) podFix {
	return loadGeneratorPods(kindK6, builders.K6Container, bench.Spec.K6.Parallelism, "run each read repetition",
		"spec.k6.image, or for every benchmark the operator's k6 image (its Helm chart's k6.image, or --k6-image)")
}

// loadGeneratorPods are the pods of a load generator that spec.<field> sizes and places, of
// which parallelism do what together says at once.
func loadGeneratorPods(field, container string, parallelism int32, together, image string) podFix {
	return podFix{kind: field, container: container, image: image, schedule: fmt.Sprintf("free resources in the cluster, lower spec.%[1]s.resources or "+
		"spec.%[1]s.parallelism (%[2]d: the pods that %[3]s at once), or change spec.%[1]s.nodeSelector, tolerations or affinity",
		field, parallelism, together)}
}

// stuckPod finds the first pod, by name, that cannot start: one the scheduler finds no node
// for, or a container whose image the node cannot get or that cannot be created or keeps
// crashing. The message names the pod, its image or what it requests, and what to change;
// nil when no pod is stuck.
func stuckPod(pods []corev1.Pod, fix podFix) *stepFailure {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, pod := range pods {
		if why := unschedulable(&pod); why != "" {
			requests := ""
			if r := podRequests(&pod); r != "" {
				requests = "; it requests " + r
			}
			return &stepFailure{reason: reasonUnschedulable, message: fmt.Sprintf("%s pod %s cannot be scheduled (%s)%s: %s",
				fix.kind, pod.Name, strings.TrimSuffix(why, "."), requests, fix.schedule)}
		}
		statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
		for _, cs := range statuses {
			w := cs.State.Waiting
			switch {
			case w == nil:
			case imagePullReasons[w.Reason]:
				return &stepFailure{reason: reasonImagePullFailed, message: fmt.Sprintf(
					"%s pod %s cannot get image %s for container %s (%s: %s); load the image into the cluster's nodes "+
						"or name one they can pull: %s", fix.kind, pod.Name, cs.Image, cs.Name, w.Reason, w.Message, fix.image)}
			case notStartingReasons[w.Reason]:
				return &stepFailure{reason: reasonPodNotStarting, message: fmt.Sprintf(
					"%s pod %s: container %s (image %s) does not start (%s: %s); see kubectl describe pod -n %s %s and kubectl logs -n %s %s -c %s",
					fix.kind, pod.Name, cs.Name, cs.Image, w.Reason, w.Message, pod.Namespace, pod.Name, pod.Namespace, pod.Name, cs.Name)}
			}
		}
	}
	return nil
}

// jobContainers name the containers of the Jobs' pods in messages, with the spec field that
// sizes them.
var jobContainers = map[string]struct{ name, resources string }{
	builders.RunnerContainer: {"runner", "spec.runner.resources"},
	builders.K6Container:     {"k6 runner", "spec.k6.resources"},
}

// containerEnd says how a Job's container ended, for failure messages. A container the kernel
// killed for memory says so, with its limit and the field that raises it: its log ends
// wherever the kill came, and its exit code (137) alone says only that it was killed.
func containerEnd(pod *corev1.Pod, cs corev1.ContainerStatus) string {
	t := cs.State.Terminated
	job, ok := jobContainers[cs.Name]
	if t.Reason != reasonOOMKilled || !ok {
		return fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
	}
	for _, c := range pod.Spec.Containers {
		if limit, set := c.Resources.Limits[corev1.ResourceMemory]; c.Name == cs.Name && set {
			return fmt.Sprintf("the %s was killed for memory (OOMKilled at its limit %s); raise %s.limits.memory", job.name, limit.String(), job.resources)
		}
	}
	return fmt.Sprintf("the %s was killed for memory (OOMKilled without a memory limit: its node ran short); set %s.requests.memory "+
		"to what it needs, so that it is placed on a node that has it", job.name, job.resources)
}

// reasonOOMKilled is the kubelet's reason for a container the kernel killed for memory.
const reasonOOMKilled = "OOMKilled"

// unschedulable is the scheduler's message when it found no node for the pod ("0/1 nodes are
// available: 1 Insufficient cpu."), "" otherwise.
func unschedulable(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// podRequests is what the pod's containers request together ("cpu 500m, memory 512Mi"); ""
// when they request nothing.
func podRequests(pod *corev1.Pod) string {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	names := make([]string, 0, len(total))
	for name := range total {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := total[corev1.ResourceName(name)]
		parts[i] = name + " " + q.String()
	}
	return strings.Join(parts, ", ")
}

// stuckFor is how long the run has been stalled on a pod that cannot start: since its Stalled
// condition turned true for one of stuckPod's reasons. The condition is status, so a restarted
// manager counts on from the same moment; a step that moves on clears it (markProgressing).
func (r *CouchBenchmarkReconciler) stuckFor(bench *benchv1.CouchBenchmark) time.Duration {
	c := meta.FindStatusCondition(bench.Status.Conditions, conditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || !stuckPodReasons[c.Reason] {
		return 0
	}
	return r.Clock.Since(c.LastTransitionTime.Time)
}
