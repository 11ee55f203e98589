package cpucost

import (
	"os"
	"os/exec"
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

// The reader a container runs finds this machine's accounting, whichever cgroup version it
// runs, and its CPU time grows with work done in the cgroup (this test's process is in it: the
// machine's root cgroup here, a container's own cgroup in a pod).
func TestContainerReaderReadsThisMachinesAccounting(t *testing.T) {
	cmd := exec.Command(ContainerReader[0], ContainerReader[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the reader: %v", err)
		}
	}()
	s := NewSession(stdin, stdout)
	first, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	spin(20 * time.Millisecond)
	last, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if spent := Between(first, last); spent.CPU < 20*time.Millisecond {
		t.Errorf("the cgroup's CPU time grew by %v while this process alone spent 20ms", spent.CPU)
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
