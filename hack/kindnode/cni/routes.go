package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// errNotAssigned marks a node that has no pod CIDR or no InternalIP yet: normal while it joins,
// so it is skipped without a word.
var errNotAssigned = errors.New("not assigned yet")

type route struct {
	CIDR    string
	Gateway string
}

// routeChanges are the commands that take the installed routes to the desired ones.
type routeChanges struct {
	Replace []route  // new routes and routes whose gateway moved, by CIDR
	Delete  []string // CIDRs no node claims any more, sorted
}

// desiredRoutes maps every other node's IPv4 pod CIDR to that node's IPv4 InternalIP.
func desiredRoutes(nodes []corev1.Node, self string) map[string]string {
	routes, _ := planRoutes(nodes, self)
	return routes
}

// planRoutes is desiredRoutes plus a note for every node it had to leave out for a reason
// other than not being set up yet (IPv6, an unparsable value, a CIDR claimed twice).
func planRoutes(nodes []corev1.Node, self string) (routes map[string]string, notes []string) {
	// By name, so that if two nodes ever claim one CIDR the same one wins on every pass.
	byName := slices.SortedFunc(slices.Values(nodes), func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	routes = map[string]string{}
	owner := map[string]string{}
	for i := range byName {
		node := &byName[i]
		if node.Name == self {
			continue
		}
		cidr, gateway, err := nodeRoute(node)
		if errors.Is(err, errNotAssigned) {
			continue
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("node %s: no route: %v", node.Name, err))
			continue
		}
		if other, taken := owner[cidr]; taken {
			notes = append(notes, fmt.Sprintf("node %s: no route: pod CIDR %s is already routed to node %s", node.Name, cidr, other))
			continue
		}
		owner[cidr] = node.Name
		routes[cidr] = gateway
	}
	return routes, notes
}

func nodeRoute(node *corev1.Node) (cidr, gateway string, err error) {
	cidr, err = podCIDRv4(node)
	if err != nil {
		return "", "", err
	}
	gateway, err = internalIPv4(node)
	if err != nil {
		return "", "", err
	}
	return cidr, gateway, nil
}

// podCIDRv4 is the node's IPv4 pod CIDR as a network address. It looks through spec.podCIDRs
// because a dual-stack node may list its IPv6 range first.
func podCIDRv4(node *corev1.Node) (string, error) {
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	if len(cidrs) == 0 {
		return "", fmt.Errorf("pod CIDR %w", errNotAssigned)
	}
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
			return p.Masked().String(), nil
		}
	}
	return "", fmt.Errorf("no IPv4 pod CIDR in %q (only IPv4 is supported)", cidrs)
}

// internalIPv4 is the node's IPv4 InternalIP: its address on the kind network. ExternalIP and
// the other address types are not reachable from the other nodes in any way this can rely on.
func internalIPv4(node *corev1.Node) (string, error) {
	seen := make([]string, 0, len(node.Status.Addresses))
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip.String(), nil
		}
		seen = append(seen, a.Address)
	}
	if len(seen) == 0 {
		return "", fmt.Errorf("InternalIP %w", errNotAssigned)
	}
	return "", fmt.Errorf("no IPv4 InternalIP in %q (only IPv4 is supported)", seen)
}

// diffRoutes compares the routes this process installed with the desired ones; a route already
// in place with the same gateway needs no command.
func diffRoutes(installed, desired map[string]string) routeChanges {
	var changes routeChanges
	for _, cidr := range slices.Sorted(maps.Keys(desired)) {
		if gateway := desired[cidr]; installed[cidr] != gateway {
			changes.Replace = append(changes.Replace, route{CIDR: cidr, Gateway: gateway})
		}
	}
	for _, cidr := range slices.Sorted(maps.Keys(installed)) {
		if _, ok := desired[cidr]; !ok {
			changes.Delete = append(changes.Delete, cidr)
		}
	}
	return changes
}

// ipRunner runs iproute2's ip; tests substitute a recorder.
type ipRunner interface {
	Run(args ...string) error
}

type execIP struct{}

func (execIP) Run(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// routeAlreadyGone tells a failed `ip route del` whose route someone else removed (ESRCH, which
// iproute2 prints as "No such process") from one that may succeed when retried.
func routeAlreadyGone(err error) bool {
	return err != nil && strings.Contains(err.Error(), "No such process")
}
