package controllers

import (
	"bufio"
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// lastLogLine is the last line the first Job of a running step logged: the load generators
// write a progress line at least every 10 s (internal/progress), and status.progress quotes
// it, so that `kubectl get` says how far a long step got without reading logs. One List of
// that Job's pods and one log read of a single line; "" when there is none yet or it cannot
// be read (progress is news, never a reason to fail or retry the step).
func (r *CouchBenchmarkReconciler) lastLogLine(ctx context.Context, namespace, job, container string) string {
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
		var last string
		lines := bufio.NewScanner(logs)
		for lines.Scan() {
			if s := strings.TrimSpace(lines.Text()); s != "" {
				last = s
			}
		}
		if len(last) > maxProgressMessage {
			last = strings.ToValidUTF8(last[:maxProgressMessage], "") + "..."
		}
		return last
	}
	return ""
}

// maxProgressMessage bounds the line kept in status: a progress line, not a log.
const maxProgressMessage = 512
