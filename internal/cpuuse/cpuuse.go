// Package cpuuse measures how much of its CPU allowance the runner itself used during a
// step. A load generator that used (nearly) all it may use was the bottleneck: the rate it
// measured may be its own, not CouchDB's.
package cpuuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BoundAbove is the share of its allowance, in percent, above which a generator counts as
// saturated: the scheduler's accounting and the sampling leave a little slack below 100%.
const BoundAbove = 90.0

// Reading is the process's CPU time at one moment and the CPU it may use.
type Reading struct {
	At  time.Time
	CPU time.Duration
	// LimitCores is the CPU the process may use: its cgroup's cpu.max quota, else the
	// machine's CPUs. LimitFrom says which.
	LimitCores float64
	LimitFrom  string
}

// Where a limit came from.
const (
	FromCgroup = "cgroup quota"
	FromCPUs   = "CPUs"
)

// Read takes a reading of this process, its limit from the cgroup file system mounted at
// /sys/fs/cgroup (a container's own, in Kubernetes): cgroup v2's cpu.max, or v1's CFS
// quota and period.
func Read() Reading {
	return read(os.DirFS("/sys/fs/cgroup"))
}

func read(cgroup fs.FS) Reading {
	r := Reading{At: time.Now(), LimitCores: float64(runtime.NumCPU()), LimitFrom: FromCPUs}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if cores, err := quota(cgroup); err == nil && cores > 0 && cores < r.LimitCores {
		r.LimitCores, r.LimitFrom = cores, FromCgroup
	}
	return r
}

// quota is the cgroup's CPU quota in cores; 0 when it has none ("max", or -1 in v1).
func quota(cgroup fs.FS) (float64, error) {
	var q, p string
	if data, err := fs.ReadFile(cgroup, "cpu.max"); err == nil {
		fields := strings.Fields(string(data))
		if len(fields) != 2 {
			return 0, fmt.Errorf("cpu.max %q: want \"QUOTA PERIOD\"", data)
		}
		q, p = fields[0], fields[1]
	} else {
		// cgroup v1 mounts the cpu controller as cpu, or joined with cpuacct.
		var errs []error
		for _, dir := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
			quota, err1 := fs.ReadFile(cgroup, dir+"/cpu.cfs_quota_us")
			period, err2 := fs.ReadFile(cgroup, dir+"/cpu.cfs_period_us")
			if err := errors.Join(err1, err2); err != nil {
				errs = append(errs, err)
				continue
			}
			q, p = strings.TrimSpace(string(quota)), strings.TrimSpace(string(period))
			break
		}
		if q == "" {
			return 0, errors.Join(append([]error{err}, errs...)...)
		}
	}
	if q == "max" || q == "-1" {
		return 0, nil
	}
	quota, err1 := strconv.ParseFloat(q, 64)
	period, err2 := strconv.ParseFloat(p, 64)
	if err := errors.Join(err1, err2); err != nil || period <= 0 {
		return 0, fmt.Errorf("CPU quota %q per %q: %w", q, p, err)
	}
	return quota / period, nil
}

// Use is what a process used of its allowance between two readings.
type Use struct {
	CPUSeconds  float64 `json:"cpuSeconds"`
	LimitCores  float64 `json:"limitCores"`
	LimitFrom   string  `json:"limitFrom"`
	BusyPercent float64 `json:"busyPercent"`
}

// Pause is a stretch in which the generator waited on purpose (at a barrier for other
// runners), from a reading before it to one after.
type Pause struct{ From, To Reading }

// Between is the use from a to b with the pauses left out, their wall time and the CPU spent
// in them (polling), which would otherwise dilute or inflate the busy share of the work.
func Between(a, b Reading, pauses ...Pause) Use {
	cpu, wall := b.CPU-a.CPU, b.At.Sub(a.At)
	for _, p := range pauses {
		cpu, wall = cpu-(p.To.CPU-p.From.CPU), wall-p.To.At.Sub(p.From.At)
	}
	u := Use{CPUSeconds: cpu.Seconds(), LimitCores: b.LimitCores, LimitFrom: b.LimitFrom}
	if wall > 0 && b.LimitCores > 0 {
		u.BusyPercent = 100 * u.CPUSeconds / (wall.Seconds() * b.LimitCores)
	}
	return u
}

// Saturated tells whether the generator used its allowance.
func (u Use) Saturated() bool { return u.BusyPercent >= BoundAbove }
