package cpuuse

import (
	"runtime"
	"testing"
	"testing/fstest"
	"time"
)

func TestLimitFromTheCgroup(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	for _, tc := range []struct {
		cpuMax string
		cores  float64
		from   string
	}{
		{"50000 100000\n", 0.5, FromCgroup},
		{"max 100000\n", cpus, FromCPUs},
		{"garbage", cpus, FromCPUs},
		{"", cpus, FromCPUs},
		{"99900000 100000\n", cpus, FromCPUs}, // a quota above the machine's CPUs limits nothing
	} {
		fsys := fstest.MapFS{}
		if tc.cpuMax != "" {
			fsys["cpu.max"] = &fstest.MapFile{Data: []byte(tc.cpuMax)}
		}
		r := read(fsys)
		if r.LimitCores != tc.cores || r.LimitFrom != tc.from {
			t.Errorf("cpu.max %q: %v cores from %s, want %v from %s", tc.cpuMax, r.LimitCores, r.LimitFrom, tc.cores, tc.from)
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
}
