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

// Between's arithmetic, on readings made here: a runner that used its whole allowance is
// saturated, one that slept is not, and waits at barriers are left out with their CPU. The
// readings are not taken while spinning: on a loaded machine a spinning goroutine gets what
// the scheduler gives it (7% of a core at load average 26 here, which failed this test when
// it spun), and that says nothing about Between.
func TestSaturation(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	// at is a reading ms into the test with cpu ms of CPU used, under a quota of a tenth
	// of a core.
	at := func(ms, cpu int) Reading {
		return Reading{At: t0.Add(time.Duration(ms) * time.Millisecond), CPU: time.Duration(cpu) * time.Millisecond,
			LimitCores: 0.1, LimitFrom: FromCgroup}
	}
	if u := Between(at(0, 0), at(200, 20)); !u.Saturated() || u.LimitCores != 0.1 {
		t.Errorf("a tenth of a core used under a quota of a tenth: %+v, want saturated", u)
	}
	if u := Between(at(0, 0), at(200, 1)); u.Saturated() {
		t.Errorf("sleeping: %+v, want not saturated", u)
	}
	// Busy after a wait that is left out (a barrier): saturated, as if the wait were not
	// there. Counting the wait would halve the busy share.
	wait := Pause{From: at(0, 0), To: at(200, 1)}
	if u := Between(at(0, 0), at(400, 21), wait); !u.Saturated() {
		t.Errorf("busy after a wait left out: %+v, want saturated", u)
	}
	if u := Between(at(0, 0), at(400, 21)); u.BusyPercent >= Between(at(0, 0), at(400, 21), wait).BusyPercent {
		t.Errorf("the wait counted in makes the share no smaller: %+v", u)
	}
	// Busy during the pause (a barrier's polling) and idle after: the pause's CPU is left
	// out with its time, so the rest is idle, not saturated.
	polling := Pause{From: at(0, 0), To: at(200, 20)}
	if u := Between(at(0, 0), at(400, 21), polling); u.Saturated() {
		t.Errorf("busy only while paused: %+v, want not saturated", u)
	}
}

// Read takes the process's own CPU time (getrusage): CPU spent between two readings shows.
// The loop ends on CPU spent, not on time passed, so a loaded machine only makes it longer.
func TestReadCountsTheProcessCPU(t *testing.T) {
	first := Read()
	for deadline := time.Now().Add(30 * time.Second); Read().CPU-first.CPU < 20*time.Millisecond && time.Now().Before(deadline); { //nolint:revive // spinning is the point
	}
	if last := Read(); last.CPU-first.CPU < 20*time.Millisecond || !last.At.After(first.At) {
		t.Errorf("after spinning: CPU %v -> %v at %v -> %v; want 20ms more", first.CPU, last.CPU, first.At, last.At)
	}
}
