package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// --arm-pods and --arm-pid are checked before anything is read or moved: an arm the benchmark
// lacks, one arm given both, a value that is not NAMESPACE/POD[,POD...], and a pod or process
// counted twice (in duet, where two arms' units run at once) are usage errors that name the flag. No server or API is involved (a check
// that let one through would fail on Adopt or on the missing API instead, with no usage error).
func TestCPUMeterFlagsAreCheckedFirst(t *testing.T) {
	bench := &benchv1.CouchBenchmark{Spec: benchv1.CouchBenchmarkSpec{ArmOrder: benchv1.ArmsDuet,
		QueryServers: []benchv1.QueryServer{{Name: "a"}, {Name: "b"}}}}
	for _, c := range []struct {
		name       string
		pids, pods armValues
		says       string
	}{
		{"unknown arm", nil, armValues{"c": "ns/p-0"}, `--arm-pods c=ns/p-0: the benchmark has no query server "c"`},
		{"both flags", armValues{"a": "42"}, armValues{"a": "ns/p-0"}, "arm a has both --arm-pid and --arm-pods"},
		{"no namespace", nil, armValues{"a": "p-0"}, "--arm-pods a=p-0: not NAMESPACE/POD[,POD...]"},
		{"empty pod", nil, armValues{"a": "ns/p-0,"}, "--arm-pods a=ns/p-0,: not NAMESPACE/POD[,POD...]"},
		{"no pods", nil, armValues{"a": "ns/"}, "--arm-pods a=ns/: not NAMESPACE/POD[,POD...]"},
		{"a pod twice", nil, armValues{"a": "ns/p-0,p-0"}, "--arm-pods a=ns/p-0,p-0: a pod named twice would be counted twice"},
		{"two arms, one pod", nil, armValues{"a": "ns/p-0", "b": "ns/p-1,p-0"}, "--arm-pods: arms a and b name the same pod ns/p-0: in duet"},
		{"two arms, one process", armValues{"a": "42", "b": "42"}, nil, "--arm-pid: arms a and b name the same process 42: in duet"},
	} {
		meters, _, err := cpuMeters(context.Background(), c.pids, c.pods, bench)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), c.says) || meters != nil {
			t.Errorf("%s: meters %v, error %v; want a usage error saying %q", c.name, meters, err, c.says)
		}
	}
}

// Arms that take turns may share a server, an existing CouchDB's, and so its pods: the flags
// pass their checks and the run goes on to the Kubernetes API (none here: KUBECONFIG names a
// file that does not exist), where it fails for want of one, not with a usage error.
func TestArmsInTurnsMayShareTheServersPods(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	bench := &benchv1.CouchBenchmark{Spec: benchv1.CouchBenchmarkSpec{ArmOrder: benchv1.ArmsInterleaved,
		QueryServers: []benchv1.QueryServer{{Name: "a"}, {Name: "b"}}}}
	_, _, err := cpuMeters(context.Background(), nil, armValues{"a": "ns/p-0,p-1", "b": "ns/p-0,p-1"}, bench)
	var usage usageError
	if err == nil || errors.As(err, &usage) || !strings.Contains(err.Error(), "no Kubernetes API to exec through") {
		t.Errorf("arms in turns on one server's pods: %v; want past the checks, to the missing API", err)
	}
}
