package controllers

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/testenv"
)

// How long a standby replica of the manager takes to lead when the leader goes: two manager
// binaries (cmd/manager, built as the image builds it) with leader election, as the chart
// runs two replicas, each with a kubeconfig for the chart's service account and only the
// chart's RBAC; the leader is ended and the time from the signal to the Lease naming the
// standby is taken from the Lease, read every 10 ms. The standby then starts its controllers
// and becomes the next round's leader, beside a fresh standby.
//   - stop: SIGTERM, as the kubelet ends a pod that is deleted, evicted or rolled: the leader
//     gives its Lease back on the way out (LeaderElectionReleaseOnCancel).
//   - crash: SIGKILL, as a node lost or an OOM kill: the Lease is left to expire (the lease
//     duration, 15 s) before the standby may take it.
//
// Reported: the median and the largest takeover over b.N rounds; logged: each round's, and
// when the Lease was seen naming no one (a leader that gave it back). No manager log may hold a
// refusal of the API server (the chart's RBAC lacking a verb the election uses).
func BenchmarkLeaderTakeover(b *testing.B) {
	bin := buildManager(b)
	for _, end := range []struct {
		name   string
		signal syscall.Signal
	}{{"stop", syscall.SIGTERM}, {"crash", syscall.SIGKILL}} {
		b.Run(end.name, func(b *testing.B) {
			ns := env.Namespace(b)
			kubeconfig := testenv.Kubeconfig(b, env.ChartOperatorConfig(b, ns, ns, nil))
			replica := func() *managerProcess {
				return startManager(b, bin, kubeconfig, "--leader-elect", "--leader-election-namespace", ns)
			}
			leader := replica()
			leader.waitForWorkers(b)
			// takeovers run from the signal to the Lease naming the standby; releases to the
			// Lease naming no one, when it was seen so.
			var takeovers, releases []time.Duration
			for range b.N {
				standby := replica()
				standby.waitForLog(b, "the standby to try for the Lease", func(line string) bool {
					return strings.Contains(line, "Attempting to acquire leader lease")
				})
				held := leaseHolder(b, ns)
				signalled := time.Now()
				if err := leader.cmd.Process.Signal(end.signal); err != nil {
					b.Fatal(err)
				}
				release := time.Duration(0)
				for holder := held; holder == held || holder == ""; holder = leaseHolder(b, ns) {
					if holder == "" && release == 0 {
						release = time.Since(signalled)
					}
					if time.Since(signalled) > time.Minute {
						b.Fatalf("the standby held no Lease a minute after the leader's %s; its log ends:\n%s", end.signal, standby.logTail())
					}
					time.Sleep(10 * time.Millisecond)
				}
				takeovers = append(takeovers, time.Since(signalled))
				if release > 0 {
					releases = append(releases, release)
				}
				<-leader.exited
				if end.signal == syscall.SIGTERM && leader.exitErr != nil {
					b.Errorf("the leader exited with %v after SIGTERM; its log ends:\n%s", leader.exitErr, leader.logTail())
				}
				leader.checkLog(b)
				standby.waitForWorkers(b)
				leader = standby
			}
			leader.stop(b)
			leader.checkLog(b)
			slices.Sort(takeovers)
			slices.Sort(releases)
			b.Logf("after %s: takeovers %v, Lease seen released after %v", end.signal, takeovers, releases)
			b.ReportMetric(takeovers[len(takeovers)/2].Seconds(), "median-s")
			b.ReportMetric(takeovers[len(takeovers)-1].Seconds(), "max-s")
			b.ReportMetric(0, "ns/op") // the rounds' time is mostly waiting for managers to start
		})
	}
}

// checkLog fails the benchmark if the API server refused the manager anything.
func (m *managerProcess) checkLog(b *testing.B) {
	b.Helper()
	data, err := os.ReadFile(m.logPath)
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "forbidden") {
			b.Errorf("the API server refused the manager: %s", line)
		}
	}
}
