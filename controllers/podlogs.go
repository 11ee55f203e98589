package controllers

import (
	"context"
	"io"

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

// Logs streams a container's whole log.
func (k *KubeLogs) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	return k.clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
}
