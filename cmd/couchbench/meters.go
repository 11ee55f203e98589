package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/runner"
)

// cpuMeters reads each --arm-pid arm's CPU cost from a cgroup of its own, into which its
// server's process tree moves for the run (cpucost.Adopt); restore moves every tree back.
// A server that runs as plain processes (the kit's CouchDB) has no cgroup of its own, and
// the machine's other processes must not count.
func cpuMeters(pids armValues, bench *benchv1.CouchBenchmark) (map[string]runner.CPUMeter, func() error, error) {
	var restores []func() error
	restore := func() error {
		var errs []error
		for _, r := range slices.Backward(restores) {
			errs = append(errs, r())
		}
		return errors.Join(errs...)
	}
	// Every flag is checked before any process moves.
	byPID := map[int]string{}
	for _, arm := range slices.Sorted(maps.Keys(pids)) {
		v := pids[arm]
		if !slices.ContainsFunc(bench.Spec.QueryServers, func(q benchv1.QueryServer) bool { return q.Name == arm }) {
			return nil, restore, usageError{fmt.Errorf("--arm-pid %s=%s: the benchmark has no query server %q", arm, v, arm)}
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 1 {
			return nil, restore, usageError{fmt.Errorf("--arm-pid %s=%s: not a process id", arm, v)}
		}
		if other, ok := byPID[pid]; ok {
			return nil, restore, usageError{fmt.Errorf("--arm-pid: arms %s and %s name the same process %d: "+
				"one server's CPU cannot be told apart by arm", other, arm, pid)}
		}
		byPID[pid] = arm
	}
	meters := map[string]runner.CPUMeter{}
	for pid, arm := range byPID {
		cg, undo, err := cpucost.Adopt("run-"+arm+"-"+strconv.Itoa(pid), pid)
		if err != nil {
			// Adopt has put back what it moved.
			return nil, restore, fmt.Errorf("--arm-pid %s=%d: %w", arm, pid, err)
		}
		restores = append(restores, undo)
		meters[arm] = cg
	}
	return meters, restore, nil
}
