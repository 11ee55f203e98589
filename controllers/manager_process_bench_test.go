package controllers

// The manager binary in a process of its own, so that what is measured is the operator alone:
// built from cmd/manager as images/manager/Dockerfile builds it, run against envtest's API
// server with the operator's RBAC, and read from outside through /proc and its own metrics
// endpoint, as a cluster's monitoring would.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/couchbench/couchbench/internal/testenv"
)

// chartMemoryLimit is the manager container's default memory limit in the chart and
// config/manager (256Mi), which both pass to the manager as GOMEMLIMIT.
const chartMemoryLimit = 256 << 20

// managerProcess is a running cmd/manager.
type managerProcess struct {
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	// exited is closed when the process has ended, with exitErr what Wait said.
	exited  chan struct{}
	exitErr error
	// sampledRSS is the largest VmRSS read while it ran; sampledAnon the largest RssAnon, its
	// part that is not the binary's file pages (the pod's RSS as the kubelet reports it).
	sampledRSS, sampledAnon atomic.Uint64
}

// buildManager builds cmd/manager as the image does (static, stripped, -trimpath): the same
// binary, so the same text pages to map.
func buildManager(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "manager")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/manager")
	cmd.Dir = testenv.ModuleRoot(b)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	return bin
}

// startManager runs the manager as kubeconfig's identity with the production defaults (every
// namespace, no client-side rate limit) but its metrics on a free loopback port in plain HTTP
// (the benchmarks read the manager's memory, not who may; TestSecureMetrics tests the
// secure serving) and no probes, and args after those; it returns once the process has started. A benchmark that
// ends early kills it.
func startManager(b *testing.B, bin, kubeconfig string, args ...string) *managerProcess {
	b.Helper()
	dir := b.TempDir()
	m := &managerProcess{logPath: filepath.Join(dir, "manager.log"), exited: make(chan struct{})}
	metricsAddr := freeLoopbackAddress(b)
	m.metricsURL = "http://" + metricsAddr + "/metrics"
	log, err := os.Create(m.logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	m.cmd = exec.Command(bin, append([]string{
		"--kubeconfig", kubeconfig,
		"--health-probe-bind-address", "0",
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false",
		"--runner-image", "couchbench/manager:test",
		"--chart-cache", filepath.Join(dir, "charts")}, args...)...)
	// A pod's environment rather than the test's: no KUBECONFIG to take instead of the
	// operator's, and of what tunes the Go runtime (GOGC, GOMEMLIMIT, GODEBUG) only what the
	// chart sets: GOMEMLIMIT, the container's memory limit, 256Mi by default.
	m.cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir, "GOMEMLIMIT=" + strconv.Itoa(chartMemoryLimit)}
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		m.exitErr = m.cmd.Wait()
		close(m.exited)
	}()
	go m.sampleRSS()
	b.Cleanup(m.kill)
	return m
}

// freeLoopbackAddress is a loopback address with a port free a moment ago.
func freeLoopbackAddress(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// waitForWorkers waits for controller-runtime's "Starting workers" of the CouchBenchmark
// controller in the manager's log: its caches are synced (and, with leader election, it
// leads), and benchmarks created from now on measure reconciling, not the manager's start.
func (m *managerProcess) waitForWorkers(b *testing.B) {
	b.Helper()
	m.waitForLog(b, "its CouchBenchmark controller to start workers", func(line string) bool {
		return strings.Contains(line, `"msg":"Starting workers"`) && strings.Contains(line, `"controller":"couchbenchmark"`)
	})
}

// waitForLog waits, up to a minute, for a line of the manager's log that matches.
func (m *managerProcess) waitForLog(b *testing.B, what string, match func(line string) bool) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		m.checkRunning(b)
		data, err := os.ReadFile(m.logPath)
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if match(line) {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("gave up waiting a minute for %s; the manager's log ends:\n%s", what, m.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkRunning fails the benchmark if the manager has exited.
func (m *managerProcess) checkRunning(b *testing.B) {
	b.Helper()
	select {
	case <-m.exited:
		b.Fatalf("the manager exited early (%v); its log ends:\n%s", m.exitErr, m.logTail())
	default:
	}
}

// stop ends the manager as the kubelet does, SIGTERM then after a grace period SIGKILL, and
// fails the benchmark if it did not exit cleanly.
func (m *managerProcess) stop(b *testing.B) {
	b.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		m.kill()
		b.Errorf("the manager did not exit in 30 s after SIGTERM; its log ends:\n%s", m.logTail())
		return
	}
	if m.exitErr != nil {
		b.Errorf("the manager exited with %v after SIGTERM; its log ends:\n%s", m.exitErr, m.logTail())
	}
}

// kill ends the manager if it still runs.
func (m *managerProcess) kill() {
	select {
	case <-m.exited:
	default:
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// logTail is the end of the manager's log, for failures.
func (m *managerProcess) logTail() string {
	data, err := os.ReadFile(m.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitAfter(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "")
}

// sampleRSS keeps the largest VmRSS and RssAnon, read every 100 ms until the manager exits:
// VmHWM is the kernel's exact peak of VmRSS, the sample a check on it; the kernel keeps no
// peak of RssAnon.
func (m *managerProcess) sampleRSS() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.exited:
			return
		case <-tick.C:
			if rss, err := m.status("VmRSS"); err == nil && rss > m.sampledRSS.Load() {
				m.sampledRSS.Store(rss)
			}
			if anon, err := m.status("RssAnon"); err == nil && anon > m.sampledAnon.Load() {
				m.sampledAnon.Store(anon)
			}
		}
	}
}

// status is a memory figure of /proc/<pid>/status (VmRSS, VmHWM, RssAnon), in bytes.
func (m *managerProcess) status(field string) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			kB, unit, _ := strings.Cut(strings.TrimSpace(value), " ")
			if unit != "kB" {
				return 0, fmt.Errorf("%s: %q, want kB", field, value)
			}
			n, err := strconv.ParseUint(kB, 10, 64)
			return n << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, m.cmd.Process.Pid)
}

// scrape reads the manager's metrics endpoint: plain HTTP, as startManager serves it.
func (m *managerProcess) scrape(b *testing.B) map[string]*dto.MetricFamily {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.metricsURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.checkRunning(b)
		b.Fatalf("scraping the manager's metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("scraping the manager's metrics: %s\n%s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatalf("the manager's metrics: %v", err)
	}
	return families
}

// heapInUse is the Go heap in use the manager reports (go_memstats_heap_inuse_bytes, from
// controller-runtime's Go collector).
func heapInUse(b *testing.B, families map[string]*dto.MetricFamily) float64 {
	b.Helper()
	f, ok := families["go_memstats_heap_inuse_bytes"]
	if !ok || len(f.GetMetric()) == 0 {
		b.Fatal("the manager's metrics have no go_memstats_heap_inuse_bytes")
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}
