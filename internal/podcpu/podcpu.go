// Package podcpu reads a CouchDB's CPU time on Kubernetes without node-level rights: in each
// of its pods, one exec (pods/exec, stdin open) starts cpucost.ContainerReader in the couchdb
// container, which answers every line asked with the container's own cgroup accounting. The
// runner's index Jobs use it; the manager never links it.
package podcpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/couchbench/couchbench/internal/cpucost"
)

// Container is the Apache chart's CouchDB container, whose cgroup holds Erlang and its query
// servers.
const Container = "couchdb"

// Bounds: a reading is a shell builtin's answer, a fraction of a millisecond on an idle node
// and well under a second on a loaded one; a stream that answers nothing for readWait is
// taken for dead rather than left to hang a build. Variables, so that a test need not wait.
var (
	readWait  = 30 * time.Second
	closeWait = 5 * time.Second
)

// Target is a CouchDB's pods in a namespace.
type Target struct {
	Namespace string
	Pods      []string
}

// ParseTarget reads NAMESPACE/POD[,POD...], each pod named once.
func ParseTarget(v string) (Target, error) {
	namespace, list, ok := strings.Cut(v, "/")
	pods := strings.Split(list, ",")
	if !ok || namespace == "" || slices.Contains(pods, "") {
		return Target{}, errors.New("not NAMESPACE/POD[,POD...]")
	}
	if sorted := slices.Sorted(slices.Values(pods)); len(slices.Compact(sorted)) != len(pods) {
		return Target{}, errors.New("a pod named twice would be counted twice")
	}
	return Target{Namespace: namespace, Pods: pods}, nil
}

// Config is the API to exec through: in a pod its ServiceAccount's, by hand the kubeconfig
// kubectl would use.
func Config() (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
}

// Meter is the CPU time of a CouchDB's pods, summed: every node of a cluster does part of a
// build.
type Meter struct {
	pods []*reader
	// stop ends every exec: Close's last resort, and a reading that waited too long.
	stop context.CancelFunc
}

// reader is one pod's ContainerReader.
type reader struct {
	pod     string
	session *cpucost.Session
	// ask and answer are the ends of its stdin and stdout that Close closes, and that a
	// reading that waited too long cuts.
	ask    *io.PipeWriter
	answer *io.PipeReader
	done   chan struct{}
	mu     sync.Mutex
	err    error
	stderr strings.Builder
}

// execFunc streams a command in a pod's Container.
type execFunc func(ctx context.Context, pod string, opts remotecommand.StreamOptions) error

// Open starts a reader in each of the target's pods. It fails unless every pod answers a
// first reading, so that a run whose runner may not exec there says so before it measures
// anything. The execs outlive ctx's cancellation (an interrupted run still takes its last
// reading) and end at Close.
func Open(ctx context.Context, cfg *rest.Config, t Target) (*Meter, error) {
	exec, err := execVia(cfg, t.Namespace)
	if err != nil {
		return nil, err
	}
	return open(ctx, exec, t.Pods)
}

func open(ctx context.Context, exec execFunc, pods []string) (*Meter, error) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m := &Meter{stop: stop}
	for _, pod := range pods {
		r := start(ctx, exec, pod)
		m.pods = append(m.pods, r)
		if _, err := m.read(r); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// execVia execs through the API server as kubectl does: WebSocket, or SPDY where the API
// server cannot upgrade to it.
func execVia(cfg *rest.Config, namespace string) (execFunc, error) {
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, pod string, opts remotecommand.StreamOptions) error {
		req := clients.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{
				Container: Container, Command: cpucost.ContainerReader, Stdin: true, Stdout: true, Stderr: true,
			}, scheme.ParameterCodec)
		websocket, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		if err != nil {
			return err
		}
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		if err != nil {
			return err
		}
		exec, err := remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return err
		}
		return exec.StreamWithContext(ctx, opts)
	}, nil
}

func start(ctx context.Context, exec execFunc, pod string) *reader {
	askR, askW := io.Pipe()
	answerR, answerW := io.Pipe()
	r := &reader{pod: pod, session: cpucost.NewSession(askW, answerR), ask: askW, answer: answerR, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		err := exec(ctx, pod, remotecommand.StreamOptions{Stdin: askR, Stdout: answerW, Stderr: &stderrOf{r: r}})
		if err == nil {
			err = errors.New("the reader ended")
		}
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		// A Read waiting for an answer gets the stream's end instead.
		_ = answerW.CloseWithError(err)
		_ = askR.CloseWithError(err)
	}()
	return r
}

// stderrOf keeps the first KiB the reader writes to stderr, for the error that ends it.
type stderrOf struct{ r *reader }

func (w *stderrOf) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	if n := 1024 - w.r.stderr.Len(); n > 0 {
		w.r.stderr.Write(p[:min(len(p), n)])
	}
	return len(p), nil
}

// read is one pod's reading, or an error naming the pod and why: the exec's own error and
// what the shell wrote to stderr, once the stream has ended (stderr comes on a stream of its
// own, and may arrive after the answer that failed).
func (m *Meter) read(r *reader) (cpucost.Usage, error) {
	// Cancelling the execs ends a stream that honours its context; cutting the reading's own
	// pipes frees it from one that does not (a write into a stuck stream's stdin, an answer
	// that never comes), so that no reading outlasts readWait whatever the stream does.
	late := time.AfterFunc(readWait, func() {
		m.stop()
		r.cut()
	})
	u, err := r.session.Read()
	timedOut := !late.Stop()
	if err == nil {
		return u, nil
	}
	select {
	case <-r.done:
	case <-time.After(closeWait):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		err = r.err
	}
	if timedOut {
		err = fmt.Errorf("no answer within %v: %w", readWait, err)
	}
	if s := strings.TrimSpace(r.stderr.String()); s != "" {
		err = fmt.Errorf("%w (%s)", err, s)
	}
	return cpucost.Usage{}, fmt.Errorf("reading pod %s's CPU time through pods/exec: %w", r.pod, err)
}

// cut closes the reader's ends of its pipes: a Read waiting on either returns, and the exec
// sees its stdin end.
func (r *reader) cut() {
	_ = r.ask.Close()
	_ = r.answer.Close()
}

// Read is the pods' CPU time now, summed, read at the last pod's answer.
func (m *Meter) Read() (cpucost.Usage, error) {
	var sum cpucost.Usage
	for _, r := range m.pods {
		u, err := m.read(r)
		if err != nil {
			return cpucost.Usage{}, err
		}
		sum = cpucost.Usage{At: u.At, CPU: sum.CPU + u.CPU}
	}
	return sum, nil
}

// Nodes is how many of the CouchDB's nodes the meter reads: one pod each.
func (m *Meter) Nodes() int { return len(m.pods) }

// Close ends every reader: closing its stdin ends its loop, and so the exec; what is still
// streaming after closeWait is cancelled, and an exec that has not ended closeWait after that
// is left behind rather than waited for: the run's results must not wait on it. An answer no
// one asked for finds its pipe closed.
func (m *Meter) Close() {
	for _, r := range m.pods {
		r.cut()
	}
	if !m.ended(closeWait) {
		m.stop()
		m.ended(closeWait)
	}
	m.stop()
}

// ended says whether every reader's exec has ended within wait.
func (m *Meter) ended(wait time.Duration) bool {
	deadline := time.After(wait)
	for _, r := range m.pods {
		select {
		case <-r.done:
		case <-deadline:
			return false
		}
	}
	return true
}
