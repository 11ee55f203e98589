package controllers

import (
	"context"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeLogs reads pod logs through the API server.
type KubeLogs struct{ clientset kubernetes.Interface }

// NewKubeLogs reads logs with the operator's credentials.
func NewKubeLogs(cfg *rest.Config) (*KubeLogs, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &KubeLogs{clientset: cs}, nil
}

// Logs streams a container's log: the last tailLines lines, or all of it for 0.
func (k *KubeLogs) Logs(ctx context.Context, namespace, pod, container string, tailLines int64) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: container}
	if tailLines > 0 {
		opts.TailLines = &tailLines
	}
	return k.clientset.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
}

// kubeletLogTailBytes is the most the kubelet keeps of a log as the termination message of a
// container that ended in error without writing one (FallbackToLogsOnError): the last 80
// lines, cut to their last 2048 bytes, so that a long tail starts mid-line.
const kubeletLogTailBytes = 2048

// wholeLines is the end of a log that the kubelet left as a termination message, whole lines
// only: a tail at the kubelet's limit loses its first line, cut where the limit fell (a tail
// that is one cut line is kept: better part of a line than nothing).
func wholeLines(tail string) string {
	if _, after, ok := strings.Cut(tail, "\n"); ok && len(tail) >= kubeletLogTailBytes {
		tail = after
	}
	return strings.TrimSpace(tail)
}
