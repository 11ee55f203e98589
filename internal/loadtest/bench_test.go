package loadtest

// k6 against wrk on the getDocument scenario: the same endpoint (internal/couchtest, a test
// server in this process, not CouchDB), the same concurrency, the same time. The ratio says
// how much of a load generator's capacity k6 has; the absolute rates are this machine's and
// this test server's. `make bench` runs it; it needs wrk (Debian package "wrk").

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/k6plan"
)

const (
	loadConnections = 50
	loadDuration    = 10 * time.Second
)

func BenchmarkK6VersusWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Fatal("wrk is not installed: make bench installs it (apt-get install wrk)")
	}
	srv := seededServer(b)
	spec := readsSpec(benchv1.ScenarioGetDocument)
	spec.Workloads.Reads.IterationsPerUser = nil
	spec.Workloads.Reads.Duration = loadDuration.String()
	spec.Workloads.Reads.VirtualUsers = loadConnections
	cfg, err := k6plan.NewConfig(spec, jsArm, srv.URL, "db")
	if err != nil {
		b.Fatal(err)
	}
	var k6Rate, wrkRateSum float64
	for range b.N {
		_, s, _ := runK6(b, cfg, "admin", "pw")
		if s.Failed > 0 {
			b.Fatalf("k6: %d requests failed", s.Failed)
		}
		k6Rate += float64(s.Requests) / (s.DurationMs / 1000)
		rate, err := runWrk(context.Background(), wrk, srv.URL, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		wrkRateSum += rate
	}
	b.ReportMetric(k6Rate/float64(b.N), "k6-req/s")
	b.ReportMetric(wrkRateSum/float64(b.N), "wrk-req/s")
	b.ReportMetric(k6Rate/wrkRateSum, "k6/wrk")
}

// wrkScript picks a random seeded document per request, like the k6 scenario.
const wrkScript = `
math.randomseed(os.time())
wrk.headers["Authorization"] = "Basic YWRtaW46cHc="
request = function()
  return wrk.format("GET", string.format("/db/%%010d", math.random(0, %d - 1)))
end
`

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func runWrk(ctx context.Context, wrk, url, dir string) (float64, error) {
	script := filepath.Join(dir, "get.lua")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(wrkScript, docs)), 0o600); err != nil {
		return 0, err
	}
	out, err := exec.CommandContext(ctx, wrk, "-t2", "-c"+strconv.Itoa(loadConnections), "-d"+loadDuration.String(), "-s", script, url).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %v: %s", err, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no rate in wrk's output: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
