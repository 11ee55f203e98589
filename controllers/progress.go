package controllers

import (
	"bufio"
	"context"
	"io"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// lastLogLine is the last line a running Job of the step logged: the load generators write
// a progress line at least every progress.Interval, and status.progress quotes it, read every
// progressPoll, so that `kubectl get` says how far a long step got without reading logs. One
// List of that Job's pods and one read of a single line, bounded in time and size (a kubelet
// that does not answer holds no worker); "" when there is none yet, it cannot be read, or it is
// the results frame a runner writes as it ends (progress is news, never a reason to fail or
// retry the step).
func (r *CouchBenchmarkReconciler) lastLogLine(ctx context.Context, namespace string, s jobSet, container string) string {
	job := ""
	for _, o := range s {
		if o.phase == jobRunning {
			job = o.name
			break
		}
	}
	if job == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, progressReadTimeout)
	defer cancel()
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		log.FromContext(ctx).V(1).Info("progress: listing the pods of Job", "job", job, "error", err.Error())
		return ""
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		logs, err := r.Logs.Logs(ctx, namespace, pod.Name, container, 1)
		if err != nil {
			log.FromContext(ctx).V(1).Info("progress: reading the log of pod", "pod", pod.Name, "error", err.Error())
			return ""
		}
		defer func() { _ = logs.Close() }()
		line, err := bufio.NewReader(io.LimitReader(logs, maxProgressMessage)).ReadString('\n')
		if err != nil && err != io.EOF {
			log.FromContext(ctx).V(1).Info("progress: reading the log of pod", "pod", pod.Name, "error", err.Error())
			return ""
		}
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "-----") {
			return ""
		}
		if len(line) == maxProgressMessage {
			line = strings.ToValidUTF8(line, "") + "..."
		}
		return line
	}
	return ""
}

const (
	// progressPoll is how often a running step's progress line is read, and so how often at
	// most it is written into status: every write is a new resourceVersion that a GitOps tool
	// and every watcher of the benchmark (Argo CD refreshes its application on each) takes up;
	// docs/gitops.md has the writes per minute it makes.
	progressPoll = time.Minute
	// maxProgressMessage bounds the line kept in status: a progress line, not a log.
	maxProgressMessage = 512
	// progressReadTimeout bounds the List and the log read of one progress line.
	progressReadTimeout = 5 * time.Second
)
