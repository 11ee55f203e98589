package loadtest

// k6 against wrk on the getDocument scenario: the same endpoint, the same concurrency, the
// same time. The endpoint is a stub in this process, not CouchDB: a handler that answers a
// GET of a seeded document's id with the document, far faster than CouchDB on the same
// cores, so that what is measured is the load generators. The ratio says how much of a load
// generator's capacity k6 has; the absolute rates are this machine's and this stub's.
// `make bench` runs it; it needs wrk (Debian package "wrk").

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dataset"
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
	srv := documentEndpoint(b)
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
		_, s, _ := runK6(b, cfg, "admin", "pw") // the stub reads no credentials
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

// documentEndpoint answers GET /db/{id} with the dataset's document of that id (the first
// docs, seed 1, sequential ids), 404 for any other request.
func documentEndpoint(b *testing.B) *httptest.Server {
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	byPath := make(map[string][]byte, docs)
	for i := range int64(docs) {
		byPath["/db/"+gen.ID(i)] = gen.JSON(i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := byPath[r.URL.Path]
		if r.Method != http.MethodGet || !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	b.Cleanup(srv.Close)
	return srv
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
