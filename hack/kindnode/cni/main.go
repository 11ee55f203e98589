// Command kindnode-cni is the pod network of the air-gapped kind node image, standing in for
// kind's kindnetd, which cannot be obtained without a registry (hack/kindnode/default-cni.yaml
// runs it as a DaemonSet). On its own node it writes a ptp + host-local CNI config for the
// node's pod CIDR; towards every other node it routes that node's pod CIDR via its InternalIP.
// Nothing else: no NetworkPolicy, no masquerade, IPv4 only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceAccountDir is where the kubelet mounts the pod's service account token and cluster CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// conflistName sorts before anything else a node might carry, because the container runtime
// uses the first config in the directory.
const conflistName = "10-kindnode.conflist"

type options struct {
	nodeName string
	// controlPlaneEndpoint is the API server's host:port on the kind network (set by kind).
	controlPlaneEndpoint string
	cniConfDir           string
	mtu                  int
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatalf("kindnode-cni: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err = run(ctx, opts)
	stop()
	if err != nil {
		log.Fatalf("kindnode-cni: %v", err)
	}
}

func parseOptions(args []string, getenv func(string) string, usageOutput io.Writer) (options, error) {
	opts := options{
		nodeName:             getenv("NODE_NAME"),
		controlPlaneEndpoint: getenv("CONTROL_PLANE_ENDPOINT"),
	}
	fs := flag.NewFlagSet("kindnode-cni", flag.ContinueOnError)
	fs.SetOutput(usageOutput)
	fs.StringVar(&opts.cniConfDir, "cni-conf-dir", "/etc/cni/net.d", "directory the container runtime reads CNI configs from")
	fs.IntVar(&opts.mtu, "mtu", 1500, "MTU of the pod interfaces; kind's docker network uses 1500")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if opts.nodeName == "" {
		return options{}, errors.New("NODE_NAME is empty: set it from the downward API (fieldRef spec.nodeName)")
	}
	if err := checkMTU(opts.mtu); err != nil {
		return options{}, err
	}
	return opts, nil
}

func run(ctx context.Context, opts options) error {
	cfg, err := restConfig(opts.controlPlaneEndpoint, serviceAccountDir)
	if err != nil {
		return err
	}
	cfg.UserAgent = "kindnode-cni"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	log.Printf("kindnode-cni on node %s: API server %s, CNI config %s, MTU %d",
		opts.nodeName, cfg.Host, filepath.Join(opts.cniConfDir, conflistName), opts.mtu)
	r := newReconciler(opts.nodeName, filepath.Join(opts.cniConfDir, conflistName), opts.mtu, execIP{}, log.Default())
	return watchNodes(ctx, client, defaultWatchSettings, r.reconcile)
}

// restConfig talks to controlPlaneEndpoint directly when kind gives one: the kubernetes Service
// IP only works once kube-proxy has programmed it, and kube-proxy's pods wait for the network
// this daemon sets up.
func restConfig(controlPlaneEndpoint, saDir string) (*rest.Config, error) {
	if controlPlaneEndpoint == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster API config (CONTROL_PLANE_ENDPOINT is not set): %w", err)
		}
		return cfg, nil
	}
	if strings.Contains(controlPlaneEndpoint, "://") {
		return nil, fmt.Errorf("CONTROL_PLANE_ENDPOINT %q: want host:port, not a URL", controlPlaneEndpoint)
	}
	if _, _, err := net.SplitHostPort(controlPlaneEndpoint); err != nil {
		return nil, fmt.Errorf("CONTROL_PLANE_ENDPOINT %q: want host:port: %w", controlPlaneEndpoint, err)
	}
	tokenFile := filepath.Join(saDir, "token")
	caFile := filepath.Join(saDir, "ca.crt")
	// Checked now so a missing mount fails at start with its path, not as a vague 401 later.
	for _, f := range []string{tokenFile, caFile} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("service account credentials: %w", err)
		}
	}
	return &rest.Config{
		Host: "https://" + controlPlaneEndpoint,
		// A file, not its content: client-go rereads it, so the kubelet's token rotation keeps working.
		BearerTokenFile: tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
	}, nil
}
