package loadtest

// The real k6 binary (built from go.k6.io/k6 by hack/k6.sh; the Makefile sets K6) runs the
// script against internal/couchtest, a test server on CouchDB 3.4.3's recorded responses,
// not CouchDB. Counts are small: this checks the script and its summary, not speed.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/dataset"
)

const docs = 200

func k6Binary(t testing.TB) string {
	t.Helper()
	k6 := os.Getenv("K6")
	if k6 == "" {
		t.Fatal("K6 is not set: run the tests with `make test`, which builds k6 from its Go module with hack/k6.sh")
	}
	return k6
}

func seededServer(t testing.TB) *couchtest.Server {
	t.Helper()
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	seed(t, srv)
	return srv
}

// seed creates database "db" with the first documents of the dataset.
func seed(t testing.TB, srv *couchtest.Server) {
	t.Helper()
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatal(err)
	}
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	batch := make([]json.RawMessage, docs)
	for i := range batch {
		batch[i] = gen.JSON(int64(i))
	}
	if _, err := c.BulkDocs(ctx, "db", batch); err != nil {
		t.Fatal(err)
	}
}

func readsSpec(scenario benchv1.ReadScenario, thresholds ...benchv1.Threshold) *benchv1.CouchBenchmarkSpec {
	return &benchv1.CouchBenchmarkSpec{
		Dataset: benchv1.Dataset{Documents: docs},
		Timeout: "10m",
		Workloads: benchv1.Workloads{Reads: &benchv1.ReadsWorkload{
			Scenario: scenario, VirtualUsers: 2, IterationsPerUser: ptr.To[int32](15), Thresholds: thresholds,
		}},
	}
}

// runK6 runs one k6 runner and returns its exit code and summary file.
func runK6(t testing.TB, cfg Config, password string, extra ...string) (int, []byte) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, ScriptName)
	if err := os.WriteFile(script, []byte(Script), 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	summaryPath := filepath.Join(dir, "summary.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"run", "--quiet", "--no-color"}, extra...)
	cmd := exec.CommandContext(ctx, k6Binary(t), append(args, script)...)
	cmd.Env = append(os.Environ(), "COUCHBENCH_CONFIG="+config, "COUCHBENCH_SUMMARY="+summaryPath,
		"COUCHDB_USER=admin", "COUCHDB_PASSWORD="+password, "K6_NO_USAGE_REPORT=true")
	for i, a := range extra {
		if a == "--execution-segment" && i+1 < len(extra) {
			cmd.Env = append(cmd.Env, "COUCHBENCH_SEGMENT="+extra[i+1]) // as the Job sets it
		}
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("k6: %v\n%s", err, out)
		}
		code = ee.ExitCode()
	}
	summary, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatalf("k6 exited %d without a summary: %v\n%s", code, err, tail(out))
	}
	if !strings.Contains(string(out), `"metrics"`) {
		t.Errorf("the full summary is not on stdout:\n%s", tail(out))
	}
	return code, summary
}

func tail(b []byte) string {
	if len(b) > 3000 {
		return string(b[len(b)-3000:])
	}
	return string(b)
}

func TestEveryScenarioAgainstTheTestServer(t *testing.T) {
	srv := seededServer(t)
	for _, scenario := range []benchv1.ReadScenario{benchv1.ScenarioGetDocument, benchv1.ScenarioViewByKey, benchv1.ScenarioViewRange,
		benchv1.ScenarioViewRangeIncludeDocs, benchv1.ScenarioMixed} {
		t.Run(string(scenario), func(t *testing.T) {
			spec := readsSpec(scenario)
			cfg, err := NewConfig(spec, benchv1.QueryServer{Name: "js", Language: "javascript"}, srv.URL, "db")
			if err != nil {
				t.Fatal(err)
			}
			code, data := runK6(t, cfg, "pw")
			s, err := ParseSummary(data)
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 || s.Requests != 30 || s.Failed != 0 || s.Ms.P95 <= 0 || s.Ms.P99 < s.Ms.P50 || s.DurationMs <= 0 {
				t.Errorf("exit %d, summary %+v; want 30 requests (2 users x 15), none failed", code, s)
			}
			if len(data) > 4096 {
				t.Errorf("summary is %d bytes, over the 4 KB termination message", len(data))
			}
		})
	}
	// The view scenarios installed and built the views in setup, untimed.
	if srv.Requests("PUT", "/db/_design/cb-viewreads") == 0 {
		t.Error("setup did not install the views")
	}
}

func TestWrongPasswordFailsTheRequests(t *testing.T) {
	srv := seededServer(t)
	cfg, err := NewConfig(readsSpec(benchv1.ScenarioGetDocument), benchv1.QueryServer{Name: "js", Language: "javascript"}, srv.URL, "db")
	if err != nil {
		t.Fatal(err)
	}
	_, data := runK6(t, cfg, "wrong")
	s, err := ParseSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != 30 || s.FailedRate != 1 {
		t.Errorf("summary %+v; want every request failed (401)", s)
	}
	if got := Merge([]RunnerSummary{s}); got.ErrorRate != "100.00%" {
		t.Errorf("merged error rate %s", got.ErrorRate)
	}
}

func TestThresholdsAndParallelRunners(t *testing.T) {
	srv := seededServer(t)
	spec := readsSpec(benchv1.ScenarioGetDocument,
		benchv1.Threshold{Metric: "http_req_failed", Condition: "rate<0.01"},
		benchv1.Threshold{Metric: "http_req_duration", Condition: "p(95)<0"}) // cannot pass
	cfg, err := NewConfig(spec, benchv1.QueryServer{Name: "js", Language: "javascript"}, srv.URL, "db")
	if err != nil {
		t.Fatal(err)
	}
	segments, sequence := Segments(2)
	var runners []RunnerSummary
	for i, seg := range segments {
		code, data := runK6(t, cfg, "pw", "--execution-segment", seg, "--execution-segment-sequence", sequence)
		if code != 99 {
			t.Errorf("runner %d exited %d; k6 exits 99 when a threshold fails", i, code)
		}
		s, err := ParseSummary(data)
		if err != nil {
			t.Fatal(err)
		}
		runners = append(runners, s)
	}
	merged := Merge(runners)
	if merged.Requests != 30 {
		t.Errorf("two runners made %d requests together, want the configured 30", merged.Requests)
	}
	if !merged.PercentilesUpperBound || len(merged.Runners) != 2 || merged.ThresholdsPassed == nil || *merged.ThresholdsPassed {
		t.Errorf("merged %+v; want per-runner percentiles, an upper-bound aggregate and failed thresholds", merged)
	}
	failed := FailedThresholds(runners)
	if len(failed) != 1 || !strings.Contains(failed[0], "p(95)<0") {
		t.Errorf("failed thresholds %v", failed)
	}
}

// setup's time (installing and building views) is not the load's: a slow build must not
// lower the reported rate.
func TestSetupTimeIsLeftOutOfTheRate(t *testing.T) {
	srv := seededServer(t)
	srv.Fail(couchtest.Fault{Method: "GET", PathPrefix: "/db/_design/cb-viewreads/_view/emit_doc", Times: 1, Delay: 1500 * time.Millisecond})
	cfg, err := NewConfig(readsSpec(benchv1.ScenarioViewByKey), benchv1.QueryServer{Name: "js", Language: "javascript"}, srv.URL, "db")
	if err != nil {
		t.Fatal(err)
	}
	_, data := runK6(t, cfg, "pw")
	s, err := ParseSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.SetupMs < 1500 || s.DurationMs >= 1500 || s.Requests != 30 {
		t.Errorf("setup %.0f ms, load %.0f ms, %d requests: the slow setup must not count in the load's time", s.SetupMs, s.DurationMs, s.Requests)
	}
}

// A cluster answers a long view build with 500 timeout while the build goes on; setup
// asks again instead of aborting. The test server replays the recorded 3-node build whose
// view request got 500 {"error":"timeout"} after 60 s (here 0.3 s).
func TestSetupRidesThroughViewTimeouts(t *testing.T) {
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"), couchtest.WithNodes("node1@a", "node2@b", "node3@c"),
		couchtest.WithIndexSeries("06_cluster_javascript_active_tasks_series", 200))
	seed(t, srv)
	cfg, err := NewConfig(readsSpec(benchv1.ScenarioViewRangeIncludeDocs), benchv1.QueryServer{Name: "js", Language: "javascript"}, srv.URL, "db")
	if err != nil {
		t.Fatal(err)
	}
	code, data := runK6(t, cfg, "pw")
	s, err := ParseSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || s.Requests != 30 || s.Failed != 0 {
		t.Errorf("exit %d, summary %+v; want setup to ride through the timeout and the load to run", code, s)
	}
	if got := srv.Requests("GET", "/db/_design/cb-viewreads/_view/emit_doc"); got < 2 {
		t.Errorf("the view build was asked %d times; the timeout must be answered by asking again", got)
	}
}
