package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	withNode := env(map[string]string{"NODE_NAME": "kind-worker", "CONTROL_PLANE_ENDPOINT": "kind-control-plane:6443"})

	tests := []struct {
		name    string
		args    []string
		getenv  func(string) string
		want    options
		wantErr string
	}{
		{
			name:   "defaults",
			getenv: withNode,
			want:   options{nodeName: "kind-worker", controlPlaneEndpoint: "kind-control-plane:6443", cniConfDir: "/etc/cni/net.d", mtu: 1500},
		},
		{
			name:   "flags",
			args:   []string{"-cni-conf-dir", "/tmp/net.d", "-mtu", "9000"},
			getenv: withNode,
			want:   options{nodeName: "kind-worker", controlPlaneEndpoint: "kind-control-plane:6443", cniConfDir: "/tmp/net.d", mtu: 9000},
		},
		{name: "NODE_NAME empty", getenv: env(nil), wantErr: "NODE_NAME is empty"},
		{name: "MTU out of range", args: []string{"-mtu", "10"}, getenv: withNode, wantErr: "MTU 10"},
		{name: "stray argument", args: []string{"extra"}, getenv: withNode, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(tt.args, tt.getenv, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRestConfigControlPlaneEndpoint(t *testing.T) {
	saDir := t.TempDir()
	for _, f := range []string{"token", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(saDir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := restConfig("kind-control-plane:6443", saDir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://kind-control-plane:6443" {
		t.Errorf("Host = %q, want https://kind-control-plane:6443", cfg.Host)
	}
	if cfg.BearerTokenFile != filepath.Join(saDir, "token") || cfg.CAFile != filepath.Join(saDir, "ca.crt") {
		t.Errorf("token file %q, CA file %q; want the service account's", cfg.BearerTokenFile, cfg.CAFile)
	}

	for _, bad := range []string{"kind-control-plane", "https://kind-control-plane:6443"} {
		if _, err := restConfig(bad, saDir); err == nil || !strings.Contains(err.Error(), "host:port") {
			t.Errorf("restConfig(%q): err %v, want a host:port complaint", bad, err)
		}
	}

	if err := os.Remove(filepath.Join(saDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	if _, err := restConfig("kind-control-plane:6443", saDir); err == nil || !strings.Contains(err.Error(), "ca.crt") {
		t.Errorf("missing CA: err %v, want one naming ca.crt", err)
	}
}
