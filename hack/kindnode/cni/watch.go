package main

import (
	"context"
	"fmt"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

type watchSettings struct {
	// resync replays the cache now and then; cheap, because a pass with no change does nothing.
	resync time.Duration
	// A failed pass is retried after firstRetry, doubling up to maxRetry while it keeps failing,
	// because a failure (an `ip` error) would otherwise wait for the next Node event or resync.
	firstRetry time.Duration
	maxRetry   time.Duration
}

var defaultWatchSettings = watchSettings{resync: 5 * time.Minute, firstRetry: 2 * time.Second, maxRetry: time.Minute}

// watchNodes calls reconcile with all Nodes once the informer has listed them and again after
// every change, until ctx is done. The informer's reflector reconnects by itself when the API
// server goes away. Events arriving during a pass collapse into one more pass.
func watchNodes(ctx context.Context, client kubernetes.Interface, s watchSettings, reconcile func([]corev1.Node) error) error {
	factory := informers.NewSharedInformerFactory(client, s.resync)
	defer factory.Shutdown()
	nodeInformer := factory.Core().V1().Nodes()
	informer := nodeInformer.Informer()

	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(_, _ any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	factory.StartWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx is done
	}
	poke() // the first pass, even if no event arrived after the sync

	delay := s.firstRetry
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-retry:
		}
		cached, err := nodeInformer.Lister().List(labels.Everything())
		if err != nil {
			return fmt.Errorf("listing cached nodes: %w", err)
		}
		if err := reconcile(nodeValues(cached)); err != nil {
			log.Printf("reconcile failed, retrying in %s: %v", delay, err)
			retry = time.After(delay)
			delay = min(2*delay, s.maxRetry)
			continue
		}
		retry, delay = nil, s.firstRetry
	}
}

// nodeValues copies the cached pointers into values; reconcile only reads them.
func nodeValues(cached []*corev1.Node) []corev1.Node {
	nodes := make([]corev1.Node, 0, len(cached))
	for _, n := range cached {
		nodes = append(nodes, *n)
	}
	return nodes
}
