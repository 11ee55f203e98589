package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestWatchNodes runs the informer wiring against a fake API: a pass once the cache is filled,
// another after a change, and a retry after a failed pass without any event.
func TestWatchNodes(t *testing.T) {
	first := testNode("w1", "10.244.1.0/24", internalIP("172.18.0.3"))
	client := fake.NewClientset(&first)
	passes := make(chan []string, 100)
	failedOnce := false
	reconcile := func(nodes []corev1.Node) error {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		slices.Sort(names)
		passes <- names
		if len(nodes) == 2 && !failedOnce {
			failedOnce = true
			return errors.New("injected failure")
		}
		return nil
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	settings := watchSettings{resync: time.Hour, firstRetry: 10 * time.Millisecond, maxRetry: 10 * time.Millisecond}
	go func() { done <- watchNodes(ctx, client, settings, reconcile) }()

	waitForPass(t, passes, []string{"w1"})

	second := testNode("w2", "10.244.2.0/24", internalIP("172.18.0.4"))
	if _, err := client.CoreV1().Nodes().Create(ctx, &second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPass(t, passes, []string{"w1", "w2"}) // the first pass to see w2 fails,
	waitForPass(t, passes, []string{"w1", "w2"}) // and is retried with no new event

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watchNodes returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watchNodes did not return after cancel")
	}
}

func waitForPass(t *testing.T, passes <-chan []string, want []string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-passes:
			if slices.Equal(got, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no reconcile pass saw nodes %q", want)
		}
	}
}
