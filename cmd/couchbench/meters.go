package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/podcpu"
)

// cpuMeters reads arms' servers' CPU cost: an --arm-pid arm's from a cgroup of its own, into
// which its server's process tree moves for the run (cpucost.Adopt; a server that runs as
// plain processes, as the kit's CouchDB, has no cgroup of its own, and the machine's other
// processes must not count); an --arm-pods arm's from its pods' own cgroups, through
// pods/exec (podcpu). Arms that take turns may share a server (an existing CouchDB's), and so
// its process or pods: each unit's reading is then its own arm's; in duet they run at once and
// may not. done moves every tree back and ends every exec. Every flag is checked before any
// process moves or any exec starts.
func cpuMeters(ctx context.Context, pids, pods armValues, bench *benchv1.CouchBenchmark) (map[string]cpucost.Meter, func() error, error) {
	var undos []func() error
	done := func() error {
		var errs []error
		for _, u := range slices.Backward(undos) {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	duet := bench.Spec.ArmOrder == benchv1.ArmsDuet
	byPID := map[int][]string{}
	for _, arm := range slices.Sorted(maps.Keys(pids)) {
		v := pids[arm]
		if err := hasArm(bench, "--arm-pid", arm, v); err != nil {
			return nil, done, err
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 1 {
			return nil, done, usageError{fmt.Errorf("--arm-pid %s=%s: not a process id", arm, v)}
		}
		if other := byPID[pid]; duet && len(other) > 0 {
			return nil, done, usageError{fmt.Errorf("--arm-pid: arms %s and %s name the same process %d: in duet "+
				"one server's CPU cannot be told apart by arm", other[0], arm, pid)}
		}
		byPID[pid] = append(byPID[pid], arm)
	}
	targets := map[string]podcpu.Target{}
	byPod := map[string]string{}
	for _, arm := range slices.Sorted(maps.Keys(pods)) {
		v := pods[arm]
		if err := hasArm(bench, "--arm-pods", arm, v); err != nil {
			return nil, done, err
		}
		if _, both := pids[arm]; both {
			return nil, done, usageError{fmt.Errorf("arm %s has both --arm-pid and --arm-pods: one server, one reading", arm)}
		}
		t, err := podcpu.ParseTarget(v)
		if err != nil {
			return nil, done, usageError{fmt.Errorf("--arm-pods %s=%s: %w", arm, v, err)}
		}
		for _, pod := range t.Pods {
			if other, ok := byPod[t.Namespace+"/"+pod]; ok && duet {
				return nil, done, usageError{fmt.Errorf("--arm-pods: arms %s and %s name the same pod %s/%s: in duet "+
					"one server's CPU cannot be told apart by arm", other, arm, t.Namespace, pod)}
			}
			byPod[t.Namespace+"/"+pod] = arm
		}
		targets[arm] = t
	}
	meters := map[string]cpucost.Meter{}
	for pid, arms := range byPID {
		cg, undo, err := cpucost.Adopt("run-"+arms[0]+"-"+strconv.Itoa(pid), pid)
		if err != nil {
			// Adopt has put back what it moved.
			return nil, done, fmt.Errorf("--arm-pid %s=%d: %w", arms[0], pid, err)
		}
		undos = append(undos, undo)
		for _, arm := range arms {
			meters[arm] = cg
		}
	}
	if len(targets) == 0 {
		return meters, done, nil
	}
	cfg, err := podcpu.Config()
	if err != nil {
		return nil, done, fmt.Errorf("--arm-pods: no Kubernetes API to exec through: %w", err)
	}
	// Arms in turns that name the same pods share one meter, as they share an adopted process.
	byTarget := map[string]*podcpu.Meter{}
	for _, arm := range slices.Sorted(maps.Keys(targets)) {
		m, ok := byTarget[pods[arm]]
		if !ok {
			var err error
			if m, err = podcpu.Open(ctx, cfg, targets[arm]); err != nil {
				return nil, done, fmt.Errorf("--arm-pods %s: %w", arm, err)
			}
			undos = append(undos, func() error { m.Close(); return nil })
			byTarget[pods[arm]] = m
		}
		meters[arm] = m
	}
	return meters, done, nil
}

// hasArm refuses a flag's value for an arm the benchmark does not have.
func hasArm(bench *benchv1.CouchBenchmark, flag, arm, value string) error {
	if slices.ContainsFunc(bench.Spec.QueryServers, func(q benchv1.QueryServer) bool { return q.Name == arm }) {
		return nil
	}
	return usageError{fmt.Errorf("%s %s=%s: the benchmark has no query server %q", flag, arm, value, arm)}
}
