package controllers

// A kubelet's log endpoint for the harness's pods, so that a manager outside the test process
// reads the runners' results as it does in a cluster: pods/log through the API server.
//
// The API server reads a pod's log from the kubelet of the pod's node: it takes the node's
// first address of the types in --kubelet-preferred-address-types (InternalIP is one of the
// defaults) and the port in status.daemonEndpoints.kubeletEndpoint, and streams
// https://<address>:<port>/containerLogs/<namespace>/<pod>/<container>. envtest starts
// kube-apiserver without --kubelet-certificate-authority, and without it the API server does
// not verify the kubelet's serving certificate (k8s.io/kubernetes pkg/kubelet/client,
// transportConfig), so httptest's self-signed TLS server on 127.0.0.1 serves as one. Nothing
// is faked on the manager's side: its client, its RBAC for pods/log, the API server's proxy.

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// fakeKubelet serves a podLogs as the kubelet of one Node does.
type fakeKubelet struct {
	// node is the Node whose kubelet this is: pods on it have their logs read here.
	node string
	logs *podLogs
	// served counts the logs the API server read; missing counts its requests for logs the
	// harness never wrote, which the manager never asks for when it reads the pods it should.
	served, missing atomic.Int64
}

// startFakeKubelet starts the kubelet's server and registers its Node, then reads one log
// through the API server in namespace, so that a proxy the API server refuses fails here,
// with its reason, rather than as benchmarks that never finish.
func startFakeKubelet(t testing.TB, namespace string, logs *podLogs) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{logs: logs}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	server := httptest.NewTLSServer(mux)
	t.Cleanup(server.Close)

	ctx := context.Background()
	host, port, err := net.SplitHostPort(server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	kubeletPort, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "fake-kubelet-"}}
	create(t, node)
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), node); err != nil {
			t.Errorf("deleting Node %s: %v", node.Name, err)
		}
	})
	// The addresses and the kubelet's port are status, which a create ignores.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kubeletPort)
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	k.node = node.Name

	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "fake-kubelet-probe"},
		Spec:       corev1.PodSpec{NodeName: k.node, Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	const want = "the fake kubelet's log\n"
	logs.write(namespace, probe.Name, "probe", want)
	create(t, probe)
	clientset, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientset.CoreV1().Pods(namespace).GetLogs(probe.Name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("the API server did not proxy pods/log to the fake kubelet at %s: %v\n%s", server.URL, err, got)
	}
	if string(got) != want {
		t.Fatalf("pods/log through the API server: %q, want %q", got, want)
	}
	if err := env.Client.Delete(ctx, probe); err != nil {
		t.Fatal(err)
	}
	k.served.Store(0) // from here on, the manager's reads
	return k
}

func (k *fakeKubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	// The kubelet's own reading of the API server's tailLines (absent: the whole log).
	tail, _ := strconv.ParseInt(r.URL.Query().Get("tailLines"), 10, 64)
	log, err := k.logs.Logs(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), tail)
	if err != nil {
		k.missing.Add(1)
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer func() { _ = log.Close() }()
	k.served.Add(1)
	_, _ = io.Copy(w, log)
}
