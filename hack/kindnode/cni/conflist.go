package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// ipamStateDir is under /run so a rebooted node (a restarted kind container) does not keep
// leases for pods that no longer exist.
const ipamStateDir = "/run/cni-ipam-state"

// Minimum IPv4 MTU (RFC 791) and the largest an interface can take.
const (
	minMTU = 68
	maxMTU = 65535
)

type cniConfigList struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type ptpPlugin struct {
	Type string `json:"type"`
	// IPMasq is off: pod traffic only ever goes to other kind nodes, which route it back.
	IPMasq bool          `json:"ipMasq"`
	MTU    int           `json:"mtu"`
	IPAM   hostLocalIPAM `json:"ipam"`
}

type hostLocalIPAM struct {
	Type    string        `json:"type"`
	DataDir string        `json:"dataDir"`
	Ranges  [][]ipamRange `json:"ranges"`
	Routes  []ipamRoute   `json:"routes"`
}

type ipamRange struct {
	Subnet string `json:"subnet"`
}

type ipamRoute struct {
	Dst string `json:"dst"`
}

type portmapPlugin struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
}

// conflist is the CNI config list for a node whose pods get addresses from podCIDR.
func conflist(podCIDR string, mtu int) ([]byte, error) {
	subnet, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR: %w", err)
	}
	if !subnet.Addr().Is4() {
		return nil, fmt.Errorf("pod CIDR %s: only IPv4 is supported", podCIDR)
	}
	if err := checkMTU(mtu); err != nil {
		return nil, err
	}
	list := cniConfigList{
		CNIVersion: "0.4.0",
		Name:       "kindnode",
		Plugins: []any{
			ptpPlugin{
				Type: "ptp",
				MTU:  mtu,
				IPAM: hostLocalIPAM{
					Type:    "host-local",
					DataDir: ipamStateDir,
					// host-local rejects a subnet with host bits set, so hand it the network address.
					Ranges: [][]ipamRange{{{Subnet: subnet.Masked().String()}}},
					Routes: []ipamRoute{{Dst: "0.0.0.0/0"}},
				},
			},
			portmapPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func checkMTU(mtu int) error {
	if mtu < minMTU || mtu > maxMTU {
		return fmt.Errorf("MTU %d is outside %d..%d", mtu, minMTU, maxMTU)
	}
	return nil
}

// writeFileIfChanged replaces path with content unless it already holds exactly that, and says
// whether it wrote. The container runtime watches the directory, so it must never see a
// half-written config: the content goes to a temporary file beside path (its name does not end
// in .conflist, so the runtime ignores it) and is renamed over path.
func writeFileIfChanged(path string, content []byte) (bool, error) {
	current, err := os.ReadFile(path)
	if err == nil && bytes.Equal(current, content) {
		return false, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, err
	}
	if err := writeAndClose(tmp, content); err != nil {
		return false, errors.Join(err, os.Remove(tmp.Name()))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, errors.Join(err, os.Remove(tmp.Name()))
	}
	return true, nil
}

func writeAndClose(f *os.File, content []byte) error {
	_, err := f.Write(content)
	if err == nil {
		// CreateTemp makes the file 0600; the runtime reads it as root anyway, but people read it too.
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
