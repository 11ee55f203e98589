package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// parsedConflist mirrors only what the container runtime and the plugins read.
type parsedConflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []struct {
		Type   string `json:"type"`
		IPMasq *bool  `json:"ipMasq"`
		MTU    int    `json:"mtu"`
		IPAM   *struct {
			Type    string `json:"type"`
			DataDir string `json:"dataDir"`
			Ranges  [][]struct {
				Subnet string `json:"subnet"`
			} `json:"ranges"`
			Routes []struct {
				Dst string `json:"dst"`
			} `json:"routes"`
		} `json:"ipam"`
		Capabilities map[string]bool `json:"capabilities"`
	} `json:"plugins"`
}

func TestConflist(t *testing.T) {
	tests := []struct {
		name       string
		podCIDR    string
		mtu        int
		wantSubnet string
		wantErr    bool
	}{
		{name: "node pod CIDR", podCIDR: "10.244.1.0/24", mtu: 1500, wantSubnet: "10.244.1.0/24"},
		{name: "other MTU", podCIDR: "10.244.0.0/24", mtu: 9000, wantSubnet: "10.244.0.0/24"},
		{name: "host bits are masked off", podCIDR: "10.244.2.7/24", mtu: 1500, wantSubnet: "10.244.2.0/24"},
		{name: "IPv6 is refused", podCIDR: "fd00:10:244::/64", mtu: 1500, wantErr: true},
		{name: "not a CIDR", podCIDR: "10.244.1.0", mtu: 1500, wantErr: true},
		{name: "empty", podCIDR: "", mtu: 1500, wantErr: true},
		{name: "MTU too small", podCIDR: "10.244.1.0/24", mtu: 0, wantErr: true},
		{name: "MTU too large", podCIDR: "10.244.1.0/24", mtu: 70000, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := conflist(tt.podCIDR, tt.mtu)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("conflist(%q, %d) = %s, want an error", tt.podCIDR, tt.mtu, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkConflist(t, out, tt.wantSubnet, tt.mtu)
		})
	}
}

func checkConflist(t *testing.T, out []byte, wantSubnet string, wantMTU int) {
	t.Helper()
	var got parsedConflist
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.CNIVersion != "0.4.0" || got.Name != "kindnode" {
		t.Errorf("cniVersion, name = %q, %q; want 0.4.0, kindnode", got.CNIVersion, got.Name)
	}
	if len(got.Plugins) != 2 {
		t.Fatalf("%d plugins, want ptp and portmap:\n%s", len(got.Plugins), out)
	}
	ptp, portmap := got.Plugins[0], got.Plugins[1]
	if ptp.Type != "ptp" || ptp.IPMasq == nil || *ptp.IPMasq || ptp.MTU != wantMTU {
		t.Errorf("first plugin: type %q, ipMasq %v, mtu %d; want ptp, false (explicitly), %d", ptp.Type, ptp.IPMasq, ptp.MTU, wantMTU)
	}
	ipam := ptp.IPAM
	if ipam == nil {
		t.Fatalf("ptp has no ipam:\n%s", out)
	}
	if ipam.Type != "host-local" || ipam.DataDir != "/run/cni-ipam-state" {
		t.Errorf("ipam type, dataDir = %q, %q; want host-local, /run/cni-ipam-state", ipam.Type, ipam.DataDir)
	}
	if len(ipam.Ranges) != 1 || len(ipam.Ranges[0]) != 1 || ipam.Ranges[0][0].Subnet != wantSubnet {
		t.Errorf("ipam ranges = %+v, want [[{subnet: %s}]]", ipam.Ranges, wantSubnet)
	}
	if len(ipam.Routes) != 1 || ipam.Routes[0].Dst != "0.0.0.0/0" {
		t.Errorf("ipam routes = %+v, want [{dst: 0.0.0.0/0}]", ipam.Routes)
	}
	if portmap.Type != "portmap" || len(portmap.Capabilities) != 1 || !portmap.Capabilities["portMappings"] {
		t.Errorf("second plugin: type %q, capabilities %v; want portmap, {portMappings: true}", portmap.Type, portmap.Capabilities)
	}
}

func TestWriteFileIfChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "net.d", conflistName) // the directory does not exist yet

	written, err := writeFileIfChanged(path, []byte("one\n"))
	if err != nil || !written {
		t.Fatalf("first write: written %v, err %v; want true, nil", written, err)
	}
	checkFile(t, path, "one\n")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o644 {
		t.Errorf("mode %v, want 0644", perm)
	}

	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	written, err = writeFileIfChanged(path, []byte("one\n"))
	if err != nil || written {
		t.Fatalf("same content: written %v, err %v; want false, nil", written, err)
	}
	if info, err := os.Stat(path); err != nil || !info.ModTime().Equal(old) {
		t.Fatalf("same content touched the file: mtime %v, err %v", info.ModTime(), err)
	}

	written, err = writeFileIfChanged(path, []byte("two\n"))
	if err != nil || !written {
		t.Fatalf("new content: written %v, err %v; want true, nil", written, err)
	}
	checkFile(t, path, "two\n")

	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %q, want only %s (a temporary file was left behind)", names, conflistName)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}
