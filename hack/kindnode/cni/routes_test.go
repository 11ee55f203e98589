package main

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testNode(name, podCIDR string, addresses ...corev1.NodeAddress) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if podCIDR != "" {
		n.Spec.PodCIDR = podCIDR
		n.Spec.PodCIDRs = []string{podCIDR}
	}
	n.Status.Addresses = addresses
	return n
}

func internalIP(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

func externalIP(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip}
}

func hostname(name string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeHostName, Address: name}
}

func TestDesiredRoutes(t *testing.T) {
	dualStack := testNode("dual", "", internalIP("fc00:f853:ccd:e793::4"), internalIP("172.18.0.4"))
	dualStack.Spec.PodCIDR = "fd00:10:244:3::/64"
	dualStack.Spec.PodCIDRs = []string{"fd00:10:244:3::/64", "10.244.3.0/24"}

	tests := []struct {
		name  string
		nodes []corev1.Node
		want  map[string]string
	}{
		{name: "no nodes", want: map[string]string{}},
		{
			name: "self is excluded",
			nodes: []corev1.Node{
				testNode("cp", "10.244.0.0/24", internalIP("172.18.0.2")),
				testNode("w1", "10.244.1.0/24", internalIP("172.18.0.3"), hostname("w1")),
				testNode("w2", "10.244.2.0/24", internalIP("172.18.0.4")),
			},
			want: map[string]string{"10.244.1.0/24": "172.18.0.3", "10.244.2.0/24": "172.18.0.4"},
		},
		{
			name: "a node without a pod CIDR is skipped",
			nodes: []corev1.Node{
				testNode("w1", "", internalIP("172.18.0.3")),
				testNode("w2", "10.244.2.0/24", internalIP("172.18.0.4")),
			},
			want: map[string]string{"10.244.2.0/24": "172.18.0.4"},
		},
		{
			name: "a node without an InternalIP is skipped, ExternalIP is not used",
			nodes: []corev1.Node{
				testNode("w1", "10.244.1.0/24", externalIP("203.0.113.7"), hostname("w1")),
				testNode("w2", "10.244.2.0/24", externalIP("203.0.113.8"), internalIP("172.18.0.4")),
			},
			want: map[string]string{"10.244.2.0/24": "172.18.0.4"},
		},
		{
			name: "IPv6-only nodes are skipped",
			nodes: []corev1.Node{
				testNode("v6cidr", "fd00:10:244:1::/64", internalIP("172.18.0.3")),
				testNode("v6ip", "10.244.5.0/24", internalIP("fc00:f853:ccd:e793::5")),
				testNode("w2", "10.244.2.0/24", internalIP("172.18.0.4")),
			},
			want: map[string]string{"10.244.2.0/24": "172.18.0.4"},
		},
		{
			name:  "a dual-stack node is routed by its IPv4 CIDR and address",
			nodes: []corev1.Node{dualStack},
			want:  map[string]string{"10.244.3.0/24": "172.18.0.4"},
		},
		{
			name:  "host bits in a pod CIDR are masked off",
			nodes: []corev1.Node{testNode("w1", "10.244.1.9/24", internalIP("172.18.0.3"))},
			want:  map[string]string{"10.244.1.0/24": "172.18.0.3"},
		},
		{
			name:  "unparsable values are skipped",
			nodes: []corev1.Node{testNode("w1", "bogus", internalIP("172.18.0.3")), testNode("w2", "10.244.2.0/24", internalIP("bogus"))},
			want:  map[string]string{},
		},
		{
			name: "a CIDR claimed twice goes to the first node by name",
			nodes: []corev1.Node{
				testNode("w2", "10.244.1.0/24", internalIP("172.18.0.4")),
				testNode("w1", "10.244.1.0/24", internalIP("172.18.0.3")),
			},
			want: map[string]string{"10.244.1.0/24": "172.18.0.3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := desiredRoutes(tt.nodes, "cp")
			if !maps.Equal(got, tt.want) {
				t.Errorf("desiredRoutes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPlanRoutesNotes(t *testing.T) {
	nodes := []corev1.Node{
		testNode("cp", "fd00:10:244::/64", internalIP("fc00::2")), // self: its problems are not about routes
		testNode("joining", "", internalIP("172.18.0.5")),         // not set up yet: no note
		testNode("noaddr", "10.244.6.0/24"),                       // not set up yet: no note
		testNode("v6cidr", "fd00:10:244:1::/64", internalIP("172.18.0.3")),
		testNode("v6ip", "10.244.5.0/24", internalIP("fc00::5")),
		testNode("w1", "10.244.1.0/24", internalIP("172.18.0.6")),
		testNode("w1dup", "10.244.1.0/24", internalIP("172.18.0.7")),
	}
	_, notes := planRoutes(nodes, "cp")
	wantPrefixes := []string{"node v6cidr: ", "node v6ip: ", "node w1dup: "}
	if len(notes) != len(wantPrefixes) {
		t.Fatalf("notes = %q, want one each for %q", notes, wantPrefixes)
	}
	for i, prefix := range wantPrefixes {
		if !strings.HasPrefix(notes[i], prefix) {
			t.Errorf("note %d = %q, want it to start with %q", i, notes[i], prefix)
		}
	}
	if !strings.Contains(notes[2], "node w1") {
		t.Errorf("duplicate CIDR note %q does not name the node that has the route", notes[2])
	}
}

func TestInternalIPv4NotAssigned(t *testing.T) {
	n := testNode("w1", "10.244.1.0/24", externalIP("203.0.113.7"))
	if _, err := internalIPv4(&n); !errors.Is(err, errNotAssigned) {
		t.Errorf("internalIPv4 with only an ExternalIP: err %v, want errNotAssigned", err)
	}
	n = testNode("w1", "", internalIP("172.18.0.3"))
	if _, err := podCIDRv4(&n); !errors.Is(err, errNotAssigned) {
		t.Errorf("podCIDRv4 with no pod CIDR: err %v, want errNotAssigned", err)
	}
}

func TestDiffRoutes(t *testing.T) {
	tests := []struct {
		name      string
		installed map[string]string
		desired   map[string]string
		want      routeChanges
	}{
		{name: "nothing either side", want: routeChanges{}},
		{
			name:    "added",
			desired: map[string]string{"10.244.2.0/24": "172.18.0.4", "10.244.1.0/24": "172.18.0.3"},
			want: routeChanges{Replace: []route{
				{CIDR: "10.244.1.0/24", Gateway: "172.18.0.3"},
				{CIDR: "10.244.2.0/24", Gateway: "172.18.0.4"},
			}},
		},
		{
			name:      "gateway changed",
			installed: map[string]string{"10.244.1.0/24": "172.18.0.3"},
			desired:   map[string]string{"10.244.1.0/24": "172.18.0.9"},
			want:      routeChanges{Replace: []route{{CIDR: "10.244.1.0/24", Gateway: "172.18.0.9"}}},
		},
		{
			name:      "CIDR changed",
			installed: map[string]string{"10.244.1.0/24": "172.18.0.3"},
			desired:   map[string]string{"10.244.7.0/24": "172.18.0.3"},
			want: routeChanges{
				Replace: []route{{CIDR: "10.244.7.0/24", Gateway: "172.18.0.3"}},
				Delete:  []string{"10.244.1.0/24"},
			},
		},
		{
			name:      "removed",
			installed: map[string]string{"10.244.2.0/24": "172.18.0.4", "10.244.1.0/24": "172.18.0.3"},
			want:      routeChanges{Delete: []string{"10.244.1.0/24", "10.244.2.0/24"}},
		},
		{
			name:      "unchanged",
			installed: map[string]string{"10.244.1.0/24": "172.18.0.3", "10.244.2.0/24": "172.18.0.4"},
			desired:   map[string]string{"10.244.1.0/24": "172.18.0.3", "10.244.2.0/24": "172.18.0.4"},
			want:      routeChanges{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffRoutes(tt.installed, tt.desired)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diffRoutes = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRouteAlreadyGone(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{err: nil, want: false},
		{err: errors.New("ip route del 10.244.1.0/24: exit status 2: RTNETLINK answers: No such process"), want: true},
		{err: errors.New("ip route del 10.244.1.0/24: exit status 2: RTNETLINK answers: Operation not permitted"), want: false},
	}
	for _, tt := range tests {
		if got := routeAlreadyGone(tt.err); got != tt.want {
			t.Errorf("routeAlreadyGone(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
