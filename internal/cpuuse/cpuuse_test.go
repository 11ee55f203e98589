package cpuuse

import (
	"runtime"
	"testing"
	"testing/fstest"
	"time"
)

func TestLimitFromTheCgroup(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name  string
		fsys  fstest.MapFS
		cores float64
		from  string
	}{
		{"v2 quota", fstest.MapFS{"cpu.max": file("50000 100000\n")}, 0.5, FromCgroup},
		{"v2 without quota", fstest.MapFS{"cpu.max": file("max 100000\n")}, cpus, FromCPUs},
		{"v2 garbage", fstest.MapFS{"cpu.max": file("garbage")}, cpus, FromCPUs},
		{"no cgroup file system", fstest.MapFS{}, cpus, FromCPUs},
		// A quota above the machine's CPUs limits nothing.
		{"v2 quota above the CPUs", fstest.MapFS{"cpu.max": file("99900000 100000\n")}, cpus, FromCPUs},
		{"v1 quota (10m)", fstest.MapFS{"cpu/cpu.cfs_quota_us": file("1000\n"), "cpu/cpu.cfs_period_us": file("100000\n")}, 0.01, FromCgroup},
		{"v1 joined controllers", fstest.MapFS{"cpu,cpuacct/cpu.cfs_quota_us": file("150000\n"),
			"cpu,cpuacct/cpu.cfs_period_us": file("100000\n")}, min(1.5, cpus), map[bool]string{true: FromCgroup, false: FromCPUs}[cpus > 1.5]},
		{"v1 without quota", fstest.MapFS{"cpu/cpu.cfs_quota_us": file("-1\n"), "cpu/cpu.cfs_period_us": file("100000\n")}, cpus, FromCPUs},
	} {
		r := read(tc.fsys)
		if r.LimitCores != tc.cores || r.LimitFrom != tc.from {
			t.Errorf("%s: %v cores from %s, want %v from %s", tc.name, r.LimitCores, r.LimitFrom, tc.cores, tc.from)
		}
	}
}

// A process that keeps a core busy under a quota of a tenth of a core is saturated (even on
// a loaded machine that gives the spinning goroutine a tenth of a core); one that sleeps is
// not. The CPU time is the process's own (getrusage).
func TestSaturation(t *testing.T) {
	tenth := fstest.MapFS{"cpu.max": &fstest.MapFile{Data: []byte("10000 100000")}}
	start := read(tenth)
	for time.Since(start.At) < 200*time.Millisecond { //nolint:revive // spinning is the point
	}
	spun := Between(start, read(tenth))
	if !spun.Saturated() || spun.LimitCores != 0.1 {
		t.Errorf("spinning under a quota of a tenth of a core: %+v, want saturated", spun)
	}
	start = read(tenth)
	time.Sleep(200 * time.Millisecond)
	if idle := Between(start, read(tenth)); idle.Saturated() {
		t.Errorf("sleeping: %+v, want not saturated", idle)
	}
	// Spinning after a wait that is left out (a barrier): saturated, as if the wait were not
	// there. Counting the wait would halve the busy share.
	start = read(tenth)
	time.Sleep(200 * time.Millisecond)
	pause := Pause{From: start, To: read(tenth)}
	for time.Since(pause.To.At) < 200*time.Millisecond { //nolint:revive // spinning is the point
	}
	end := read(tenth)
	if u := Between(start, end, pause); !u.Saturated() {
		t.Errorf("spinning after a wait left out: %+v, want saturated", u)
	}
	if u := Between(start, end); u.BusyPercent >= Between(start, end, pause).BusyPercent {
		t.Errorf("the wait counted in makes the share no smaller: %+v", u)
	}
	// Spinning during the pause (a barrier's polling) and sleeping after: the pause's CPU
	// is left out with its time, so the rest is idle, not saturated.
	start = read(tenth)
	for time.Since(start.At) < 200*time.Millisecond { //nolint:revive // spinning is the point
	}
	pause = Pause{From: start, To: read(tenth)}
	time.Sleep(200 * time.Millisecond)
	if u := Between(start, read(tenth), pause); u.Saturated() {
		t.Errorf("busy only while paused: %+v, want not saturated", u)
	}
}
