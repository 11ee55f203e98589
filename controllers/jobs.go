package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
)

// PodLogs reads a container's log (client-go's GetLogs in production: reading a Job's log
// needs only the pods/log permission, and works for a pod that has ended): its last
// tailLines lines, or all of it when tailLines is 0.
type PodLogs interface {
	Logs(ctx context.Context, namespace, pod, container string, tailLines int64) (io.ReadCloser, error)
}

// jobPhase is where one Job of a step stands.
type jobPhase int

const (
	jobMissing jobPhase = iota
	// jobForeign: a Job of that name belongs to someone else (see ownerOf).
	jobForeign
	jobRunning
	jobSucceeded
	jobFailed
)

// observedJob is one Job as the operator sees it: its phase and, once it has ended, its pod's
// termination message and how its container ended.
type observedJob struct {
	name  string
	job   *batchv1.Job
	phase jobPhase
	owner foreignOwner
	// pod is the Job's (newest) pod; message its container's termination message.
	pod     string
	message string
	// detail says how the container ended, for failure messages.
	detail string
	// ended is false while a finished Job's pod status does not show its container's end.
	ended bool
}

// jobSet is the Jobs of one step: one runner, or every k6 runner of a read workload.
type jobSet []observedJob

// observeJobs finds the step's Jobs by their fixed names and, for each that has ended, its
// pod's termination message. It is the only place that reads Jobs; the stages decide.
func (r *CouchBenchmarkReconciler) observeJobs(ctx context.Context, bench *benchv1.CouchBenchmark, names []string) (jobSet, error) {
	set := make(jobSet, len(names))
	for i, name := range names {
		o := observedJob{name: name}
		var job batchv1.Job
		err := r.Get(ctx, types.NamespacedName{Namespace: bench.Namespace, Name: name}, &job)
		switch {
		case apierrors.IsNotFound(err):
			o.phase = jobMissing
		case err != nil:
			return nil, err
		default:
			o.job = &job
			if o.owner, err = r.ownerOf(ctx, bench, &job); err != nil {
				return nil, err
			}
			o.phase = phaseOf(&job)
			if o.owner != ours {
				o.phase = jobForeign
			} else if o.phase == jobSucceeded || o.phase == jobFailed {
				if err := r.readEnd(ctx, &o); err != nil {
					return nil, err
				}
			}
		}
		set[i] = o
	}
	return set, nil
}

// phaseOf reduces a Job's conditions. SuccessCriteriaMet and FailureTarget come while the
// pod may still be ending: only Complete and Failed are final.
func phaseOf(job *batchv1.Job) jobPhase {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded
		case batchv1.JobFailed:
			return jobFailed
		}
	}
	return jobRunning
}

// readEnd reads the termination message of the Job's newest pod, past the cache: the pod's
// final status may not have reached it yet. Reading it from the pod status needs no log access.
func (r *CouchBenchmarkReconciler) readEnd(ctx context.Context, o *observedJob) error {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(o.job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: o.job.Name}); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		o.detail, o.ended = "no pod found", true
		return nil
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[j].CreationTimestamp.Before(&pods.Items[i].CreationTimestamp)
	})
	pod := pods.Items[0]
	o.pod = pod.Name
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			o.message, o.ended = t.Message, true
			o.detail = containerEnd(&pod, cs)
			return nil
		}
	}
	o.detail = "the container has not terminated"
	return nil
}

// missing tells whether a Job of the set does not exist yet.
func (s jobSet) missing() bool {
	for _, o := range s {
		if o.phase == jobMissing {
			return true
		}
	}
	return false
}

// foreign is the first Job that belongs to someone else, or nil.
func (s jobSet) foreign() *observedJob {
	for i := range s {
		if s[i].phase == jobForeign {
			return &s[i]
		}
	}
	return nil
}

// finished tells whether every Job has ended and its end can be read.
func (s jobSet) finished() bool {
	for _, o := range s {
		if (o.phase != jobSucceeded && o.phase != jobFailed) || !o.ended {
			return false
		}
	}
	return true
}

// running says what to do while a set of Jobs that exists has not ended: stop at another
// benchmark's Job in the way, read an ended Job again once its pod's end is visible, or wait.
// While every Job's pod runs, the watch says when one ends; while one does not run yet, the
// Jobs' pods are looked at every podPoll, since a pod the scheduler or the kubelet holds back
// changes nothing on its Job, and one that cannot start stalls the step (fix says what to
// change). It also stops the parts that a failed one would leave waiting (stopParts).
func (r *CouchBenchmarkReconciler) running(ctx context.Context, bench *benchv1.CouchBenchmark, s jobSet, fix podFix) (stepOutcome, bool, error) {
	var out stepOutcome
	switch {
	case s.foreign() != nil:
		out = notOurs(s.foreign().owner, s.foreign().job)
	case s.recheck():
		out = stepOutcome{requeueAfter: recheckAfter}
	case s.finished():
		return stepOutcome{}, false, nil
	default:
		if starting := s.starting(); len(starting) > 0 {
			stuck, err := r.stuckJobPod(ctx, bench.Namespace, starting, fix)
			if err != nil {
				return stepOutcome{}, true, err
			}
			out = stepOutcome{requeueAfter: podPoll, stalled: stuck}
		} else {
			out = stepOutcome{requeueAfter: progressPoll, progress: r.lastLogLine(ctx, bench.Namespace, s, fix.container)}
		}
	}
	return out, true, r.stopParts(ctx, bench, s)
}

// podPoll is how often the pods of Jobs that have not all started are looked at: a pod that
// cannot start is reported within it.
const podPoll = 20 * time.Second

// starting names the running Jobs whose pod does not run yet: fewer pods ready than the Job
// controller counts active, or none active (its pod not made or counted yet).
func (s jobSet) starting() []string {
	var names []string
	for _, o := range s {
		if o.phase == jobRunning && ptr.Deref(o.job.Status.Ready, 0) < max(o.job.Status.Active, 1) {
			names = append(names, o.name)
		}
	}
	return names
}

// stuckJobPod finds a pod of the named Jobs that cannot start (stuckPod); nil when none is. One
// List past the cache, of those Jobs' pods only (the Job controller labels them with the Job's
// name): the operator keeps no watch on every pod of the cluster.
func (r *CouchBenchmarkReconciler) stuckJobPod(ctx context.Context, namespace string, jobs []string, fix podFix) (*stepFailure, error) {
	ofJobs, err := labels.NewRequirement(batchv1.JobNameLabel, selection.In, jobs)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*ofJobs)}); err != nil {
		return nil, err
	}
	return stuckPod(pods.Items, fix), nil
}

// stopParts ends the Jobs of a set that still run once one of them has failed: the parts of
// a shared step (and k6 runners) wait for each other at barriers, and would wait for the
// failed one until the barrier's timeout. Their active deadline is cut to one second, so the
// Job controller stops their pods (SIGTERM: a runner still hands over what it measured) and
// marks them failed; the step then fails with every part's end. Idempotent.
func (r *CouchBenchmarkReconciler) stopParts(ctx context.Context, bench *benchv1.CouchBenchmark, s jobSet) error {
	var failed *observedJob
	for i := range s {
		if s[i].phase == jobFailed {
			failed = &s[i]
			break
		}
	}
	if failed == nil || len(s) < 2 {
		return nil
	}
	for _, o := range s {
		if o.phase != jobRunning || stopping(o) {
			continue
		}
		if err := r.endEarly(ctx, bench, o, fmt.Sprintf("Job %s failed (%s); stopping Job %s, which would wait for it",
			failed.name, failed.detail, o.name)); err != nil {
			return err
		}
	}
	return nil
}

// endEarly cuts a running Job's active deadline to one second, so that the Job controller
// stops its pod (SIGTERM: a runner still hands over what it has) and marks it failed, and
// says why in a Warning event.
func (r *CouchBenchmarkReconciler) endEarly(ctx context.Context, bench *benchv1.CouchBenchmark, o observedJob, why string) error {
	patch := client.MergeFrom(o.job.DeepCopy())
	o.job.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	if err := r.Patch(ctx, o.job, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(bench, o.job, corev1.EventTypeWarning, reasonPartStopped, "Stop", "%s", why)
	return nil
}

// stopping says whether a Job has been ended early (endEarly) and is ending.
func stopping(o observedJob) bool {
	return o.job.Spec.ActiveDeadlineSeconds != nil && *o.job.Spec.ActiveDeadlineSeconds <= 1
}

// recheck tells whether a Job has finished but its pod's status does not show the end yet.
func (s jobSet) recheck() bool {
	for _, o := range s {
		if (o.phase == jobSucceeded || o.phase == jobFailed) && !o.ended {
			return true
		}
	}
	return false
}

// recheckAfter is how soon a Job that said finished before its pod did is looked at again.
const recheckAfter = 2 * time.Second

// payload reads what a finished Job handed over: its Handoff from the termination message,
// then the payload from its log, checked against it. problem says why there is none.
func (r *CouchBenchmarkReconciler) payload(ctx context.Context, o observedJob, container string) (h results.Handoff, data []byte, problem string, err error) {
	if o.message == "" {
		return h, nil, fmt.Sprintf("Job %s left no termination message: %s", o.name, o.detail), nil
	}
	if h, err = results.ParseHandoff(o.message); err != nil {
		if !strings.HasPrefix(strings.TrimSpace(o.message), "{") {
			// The kubelet's fallback: the end of the log of a step that stopped early.
			return h, nil, fmt.Sprintf("Job %s stopped before handing over results (%s): %s", o.name, o.detail,
				wholeLines(o.message)), nil
		}
		return h, nil, fmt.Sprintf("Job %s: %v (%s)", o.name, err, o.detail), nil
	}
	if h.Bytes < 0 || h.Bytes > maxPayloadBytes {
		return h, nil, fmt.Sprintf("Job %s declares %d bytes of results; a Job may hand over at most %d", o.name, h.Bytes, maxPayloadBytes), nil
	}
	// The frame is the end of the log: read its lines and a few others (stderr lines inside
	// it, lines after it), no more, and not for longer than logReadTimeout, so that a log
	// that does not end (or a kubelet that does not answer) holds no worker.
	ctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	tail, limit := frameBounds(h.Bytes)
	log, err := r.Logs.Logs(ctx, o.job.Namespace, o.pod, container, tail)
	if err != nil {
		return h, nil, "", fmt.Errorf("reading the log of pod %s: %w", o.pod, err)
	}
	defer func() { _ = log.Close() }()
	data, ferr := results.ReadFrame(&cappedReader{r: log, left: limit}, h)
	if ferr != nil {
		return h, nil, fmt.Sprintf("Job %s: reading its results from the log of pod %s: %v", o.name, o.pod, ferr), nil
	}
	return h, data, "", nil
}

// What the operator reads of a finished Job's log, from what its termination message
// declares (results.Handoff, itself capped by Kubernetes at 4 KiB).
const (
	// maxPayloadBytes bounds a declared payload: a step's results document, gzip-compressed,
	// is tens of KiB; k6's summary less.
	maxPayloadBytes = 16 << 20
	// strayLines and strayBytes are what a log may hold around its frame beyond the frame's
	// own lines: stderr lines written while it was written, lines after it.
	strayLines = 1000
	strayBytes = 1 << 20
	// logReadTimeout bounds one read of a log.
	logReadTimeout = time.Minute
)

// frameBounds are the log lines to read (the tail) and the most bytes to read of them for a
// frame of payload bytes: its base64 in lines of 76 characters, its begin and end lines, and
// strayLines and strayBytes more.
func frameBounds(payload int) (tailLines, limit int64) {
	encoded := int64(4 * ((payload + 2) / 3))
	lines := (encoded+75)/76 + 3
	return lines + strayLines, encoded + lines*80 + strayBytes
}

// errLogTooLong ends a read past its limit.
var errLogTooLong = errors.New("the log holds more than its termination message declares and a few lines beside")

// cappedReader reads at most left bytes, then fails with errLogTooLong.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errLogTooLong
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// jobDeadline is what is left of the run's timeout: no Job may outlive the run.
func (r *CouchBenchmarkReconciler) jobDeadline(bench *benchv1.CouchBenchmark) time.Duration {
	return bench.Status.StartTime.Add(bench.Spec.TimeoutDuration()).Sub(r.Clock.Now())
}
