package cpucost

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Both versions' accounting files, as the kernel writes them.
func TestParseUsage(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       time.Duration
	}{
		{"v2 cpu.stat", "usage_usec 577768198\nuser_usec 429818484\nsystem_usec 147949714\nnice_usec 0\n", 577768198 * time.Microsecond},
		{"v2 cpu.stat with pressure fields", "usage_usec 12\nuser_usec 10\nsystem_usec 2\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n", 12 * time.Microsecond},
		{"v1 cpuacct.usage", "1039588870751\n", 1039588870751},
	} {
		got, err := ParseUsage([]byte(tc.data))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "user_usec 10\nsystem_usec 2\n", "usage_usec x\n", "12 13\n", "nanoseconds\n"} {
		if got, err := ParseUsage([]byte(bad)); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}

// The command a container's accounting is read with finds this machine's, whichever cgroup
// version it runs, and its CPU time grows with work done in the cgroup (this test's process
// is in it: the machine's root cgroup here, a container's own cgroup in a pod).
func TestContainerCommandReadsThisMachinesAccounting(t *testing.T) {
	read := func() time.Duration {
		out, err := exec.Command(ContainerCommand[0], ContainerCommand[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(ContainerCommand, " "), err)
		}
		cpu, err := ParseUsage(out)
		if err != nil {
			t.Fatal(err)
		}
		return cpu
	}
	first := read()
	spin(20 * time.Millisecond)
	if last := read(); last-first < 20*time.Millisecond {
		t.Errorf("the cgroup's CPU time grew by %v while this process alone spent 20ms", last-first)
	}
}

// spin uses at least d of this process's CPU time: it ends on CPU spent, not on time passed,
// so that a loaded machine only makes it longer.
func spin(d time.Duration) {
	self, err := Tree{Root: os.Getpid()}.Read()
	if err != nil {
		panic(err)
	}
	for x := 0; ; x++ {
		if x%100000 == 0 {
			if now, err := (Tree{Root: os.Getpid()}).Read(); err == nil && now.CPU-self.CPU >= d {
				return
			}
		}
	}
}
