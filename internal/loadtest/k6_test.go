package loadtest

// The real k6 binary (built from go.k6.io/k6 by hack/k6.sh; the Makefile sets K6) runs the
// script against real Apache CouchDB 3.4.3 from the project's kit (internal/couchdbtest,
// started by `make test`) wherever CouchDB's behaviour matters: the scenarios' requests,
// setup() installing and building the views (and riding through the 500 timeouts a
// lowered [fabric] request_timeout makes CouchDB answer while they build), 401 for a wrong
// password, thresholds. The test that needs a view build held for a known time (to see
// setup's time kept out of the rate) has internal/couchfault's proxy hold CouchDB's answer.
// Counts are small: this checks the script and its summary, not speed.

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/results"
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

// seededDB makes a database of this test on a real CouchDB with the first n documents of
// the dataset.
func seededDB(t testing.TB, srv *couchdbtest.Server, n int) string {
	t.Helper()
	db := srv.NewDB(t, "")
	seed(t, srv.Client(t, couch.Options{}), db, n)
	return db
}

// seed writes the first n documents of the dataset (seed 1, sequential ids) into db.
func seed(t testing.TB, c *couch.Client, db string, n int) {
	t.Helper()
	seedWith(t, c, db, n, benchv1.IDsSequential)
}

// seedWith writes the first n documents of the dataset (seed 1) with ids made as ids says.
func seedWith(t testing.TB, c *couch.Client, db string, n int, ids benchv1.DocumentIDs) {
	t.Helper()
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	gen.IDs = ids
	for lo := 0; lo < n; lo += 1000 {
		batch := make([]json.RawMessage, 0, 1000)
		for i := lo; i < min(n, lo+1000); i++ {
			batch = append(batch, gen.JSON(int64(i)))
		}
		saved, err := c.BulkDocs(context.Background(), db, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range saved {
			if r.Error != "" {
				t.Fatalf("seeding %s: %+v", db, r)
			}
		}
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

// fullSummary is the part of k6's full end-of-test summary (the script prints it on
// stdout) the tests read: it covers setup's requests too.
type fullSummary struct {
	State struct {
		TestRunDurationMs float64 `json:"testRunDurationMs"`
	} `json:"state"`
	Metrics map[string]struct {
		Values map[string]float64 `json:"values"`
	} `json:"metrics"`
}

// runK6 runs one k6 runner as user, as a k6 Job does (k6Process, which Local runs too), and
// returns its exit code, what it handed over (its summary of the load, read from the frame on
// its stdout and checked against the handoff in its termination file, as the operator reads
// them) and k6's whole summary.
func runK6(t testing.TB, cfg k6plan.Config, user, password string, extra ...string) (int, results.ReadsRunner, fullSummary) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, k6plan.ScriptName)
	if err := os.WriteFile(script, []byte(k6plan.Script), 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// A bound for a hung k6, not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	code, payload, err := k6Process{bin: k6Binary(t), script: script, handoff: filepath.Join(dir, "termination-log"),
		env: []string{"COUCHBENCH_CONFIG=" + config, "COUCHDB_USER=" + user, "COUCHDB_PASSWORD=" + password}, args: extra}.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	segment := ""
	for i, a := range extra {
		if a == "--execution-segment" && i+1 < len(extra) {
			segment = extra[i+1]
		}
	}
	runner, err := results.ParseK6Summary(payload, k6plan.SegmentName(segment), cfg.UserThresholds)
	if err != nil {
		t.Fatal(err)
	}
	var full fullSummary
	if err := json.Unmarshal(payload, &full); err != nil {
		t.Fatal(err)
	}
	return code, runner, full
}

// reads is the runners' reads as an arm's results document holds them; Aggregate adds
// them up.
func reads(runners ...results.ReadsRunner) *benchv1.ReadResult {
	doc := &results.Document{Arms: []results.Arm{{QueryServer: "js", Profiles: []results.Profile{{Profile: "small",
		Reads: &results.Reads{Scenario: "getDocument", Runners: runners}}}}}}
	return results.Aggregate(doc).Results[0].Reads
}

var jsArm = benchv1.QueryServer{Name: "js", Language: "javascript"}

func TestEveryScenarioOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	for _, scenario := range []benchv1.ReadScenario{benchv1.ScenarioGetDocument, benchv1.ScenarioGetSameDocument, benchv1.ScenarioViewByKey, benchv1.ScenarioViewRange,
		benchv1.ScenarioViewRangeIncludeDocs, benchv1.ScenarioMixed} {
		t.Run(string(scenario), func(t *testing.T) {
			cfg, err := k6plan.NewConfig(readsSpec(scenario), jsArm, srv.URL(), db)
			if err != nil {
				t.Fatal(err)
			}
			code, s, _ := runK6(t, cfg, srv.User, srv.Password)
			if code != 0 || s.Requests != 30 || s.Failed != 0 || s.Milliseconds.P95 <= 0 || s.Milliseconds.P99 < s.Milliseconds.P50 || s.DurationMs <= 0 {
				t.Errorf("exit %d, summary %+v; want 30 requests (2 users x 15), none failed", code, s)
			}
		})
	}
	// The view scenarios' setup installed the views and built them: a read that does not
	// wait for an index (update=false) finds every document in both.
	for _, view := range []string{"emit_doc", "emit_null"} {
		var answer struct {
			TotalRows int `json:"total_rows"`
		}
		srv.GetJSON(t, "/"+db+"/_design/cb-viewreads/_view/"+view+"?update=false&limit=0", &answer)
		if answer.TotalRows < docs {
			t.Errorf("view %s holds %d rows without an update, want the %d seeded documents: setup did not build it", view, answer.TotalRows, docs)
		}
	}
	// mixed wrote its new documents: each of the 2 users on its tenth iteration of 15. The
	// database holds them, the seeded documents and the views' design document.
	var info struct {
		DocCount int `json:"doc_count"`
	}
	srv.GetJSON(t, "/"+db, &info)
	if want := docs + 1 + 2; info.DocCount != want {
		t.Errorf("doc_count %d, want %d: the mixed scenario writes on every tenth iteration of each user", info.DocCount, want)
	}
}

// A wrong password: every request fails. The user is this test's own: 30 failures would
// lock the admin out for 5 minutes (CouchDB 3.4's [chttpd_auth_lockout] locks a user after
// 5), failing every test after this one.
// With random ids the script computes every document's id as internal/dataset made it: a
// GET of an id it got wrong would be a 404, a failed request. Every scenario that names
// documents runs without one.
func TestRandomIDsAreTheDatasetsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := srv.NewDB(t, "")
	seedWith(t, srv.Client(t, couch.Options{}), db, docs, benchv1.IDsRandom)
	for _, scenario := range []benchv1.ReadScenario{benchv1.ScenarioGetDocument, benchv1.ScenarioViewRangeIncludeDocs} {
		spec := readsSpec(scenario)
		spec.Dataset.IDs, spec.Dataset.Seed = benchv1.IDsRandom, 1
		spec.Workloads.Reads.IterationsPerUser = ptr.To[int32](100)
		cfg, err := k6plan.NewConfig(spec, jsArm, srv.URL(), db)
		if err != nil {
			t.Fatal(err)
		}
		code, s, _ := runK6(t, cfg, srv.User, srv.Password)
		if code != 0 || s.Requests != 200 || s.Failed != 0 {
			t.Errorf("%s: exit %d, %d requests, %d failed; want 200 requests, none failed (a wrong id is a 404)", scenario, code, s.Requests, s.Failed)
		}
	}
}

func TestWrongPasswordFailsTheRequestsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	user, password := srv.NewUser(t)
	cfg, err := k6plan.NewConfig(readsSpec(benchv1.ScenarioGetDocument), jsArm, srv.URL(), db)
	if err != nil {
		t.Fatal(err)
	}
	_, s, _ := runK6(t, cfg, user, "wrong-"+password)
	if s.Failed != 30 || s.Requests != 30 {
		t.Errorf("summary %+v; want every request failed (401)", s)
	}
	if got := reads(s); got.ErrorRate != "100.00%" {
		t.Errorf("error rate %s", got.ErrorRate)
	}
}

func TestThresholdsAndParallelRunnersOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	spec := readsSpec(benchv1.ScenarioGetDocument,
		benchv1.Threshold{Metric: "http_req_failed", Condition: "rate<0.01"},
		benchv1.Threshold{Metric: "http_req_duration", Condition: "p(95)<0"}) // cannot pass
	cfg, err := k6plan.NewConfig(spec, jsArm, srv.URL(), db)
	if err != nil {
		t.Fatal(err)
	}
	// The runners share a start barrier in the database, as the operator's Jobs do; runner 1
	// starts a second late, and neither may begin the measured load before it arrives.
	segments, sequence := k6plan.Segments(2)
	runners := make([]results.ReadsRunner, len(segments))
	var lateStart time.Time
	var wg sync.WaitGroup
	for i, seg := range segments {
		if i == 1 {
			time.Sleep(time.Second)
			lateStart = time.Now()
		}
		wg.Go(func() {
			code, s, _ := runK6(t, cfg, srv.User, srv.Password, "--execution-segment", seg, "--execution-segment-sequence", sequence,
				"--env", "COUCHBENCH_BARRIER="+barrier.Spec("reads-0", i, len(segments)))
			if code != 99 {
				t.Errorf("runner %d exited %d; k6 exits 99 when a threshold fails", i, code)
			}
			if s.Segment != seg {
				t.Errorf("runner %d: segment %q", i, s.Segment)
			}
			runners[i] = s
		})
	}
	wg.Wait()
	for i, r := range runners {
		if r.LoadStartedAt.Before(lateStart.Truncate(time.Millisecond)) {
			t.Errorf("runner %d began its load at %s, before runner 1 was started (%s)", i, r.LoadStartedAt.Format(time.StampMilli),
				lateStart.Format(time.StampMilli))
		}
		if r.Histogram.Count() != r.Requests {
			t.Errorf("runner %d counted %d requests in its latency histogram, k6 %d", i, r.Histogram.Count(), r.Requests)
		}
	}
	merged := reads(runners...)
	if merged.Requests != 30 {
		t.Errorf("two runners made %d requests together, want the configured 30", merged.Requests)
	}
	if merged.PercentilesUpperBound || merged.PercentileError != "1%" || len(merged.Runners) != 2 || merged.ThresholdsPassed == nil ||
		*merged.ThresholdsPassed {
		t.Errorf("merged %+v; want per-runner percentiles, merged ones within 1%% and failed thresholds", merged)
	}
	for i, r := range runners {
		if r.Thresholds["http_req_duration{couchbench:load}: p(95)<0"] || !r.Thresholds["http_req_failed{couchbench:load}: rate<0.01"] {
			t.Errorf("runner %d thresholds %v; want p(95)<0 failed and rate<0.01 passed", i, r.Thresholds)
		}
	}
}

// setup's time (installing and building views) is not the load's: a slow build must not
// lower the reported rate. The proxy holds CouchDB's answer to the view build for 1.5 s (a
// real build's time is not something a test can fix), and the load's duration must be the
// test run's minus setup's, exactly as k6 measured them.
func TestSetupTimeIsLeftOutOfTheRateOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	db := seededDB(t, srv, docs)
	p := couchfault.New(t, srv.URL())
	const hold = 1500 * time.Millisecond
	p.Fail(couchfault.Fault{Method: "GET", PathPrefix: "/" + db + "/_design/cb-viewreads/_view/emit_doc", Times: 1, DelayAnswer: hold})
	cfg, err := k6plan.NewConfig(readsSpec(benchv1.ScenarioViewByKey), jsArm, p.URL, db)
	if err != nil {
		t.Fatal(err)
	}
	_, s, full := runK6(t, cfg, srv.User, srv.Password)
	run := full.State.TestRunDurationMs
	if s.SetupMs < float64(hold.Milliseconds()) || s.Requests != 30 || run <= s.SetupMs ||
		math.Abs(s.DurationMs-(run-s.SetupMs)) > 1e-6 {
		t.Errorf("setup %.0f ms (held %v), load %.3f ms, test run %.3f ms, %d requests: the load's time must be the run's minus setup's",
			s.SetupMs, hold, s.DurationMs, run, s.Requests)
	}
}

// A cluster answers a view request 500 {"error":"timeout"} while a long build goes on;
// setup asks again instead of aborting. On the real 3-node cluster, [fabric]
// request_timeout is lowered (for this test) far below the build's time.
func TestSetupRidesThroughViewTimeoutsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	const seeded = 8000
	db := seededDB(t, srv, seeded)
	spec := readsSpec(benchv1.ScenarioViewRangeIncludeDocs)
	spec.Dataset.Documents = seeded
	cfg, err := k6plan.NewConfig(spec, jsArm, srv.URL(), db)
	if err != nil {
		t.Fatal(err)
	}
	restore := srv.SetConfig(t, "fabric", "request_timeout", "1000") // milliseconds; CouchDB's default is 60000
	code, s, full := runK6(t, cfg, srv.User, srv.Password)
	restore()
	if code != 0 || s.Requests != 30 || s.Failed != 0 {
		t.Errorf("exit %d, summary %+v; want setup to ride through the timeouts and the load to run", code, s)
	}
	// Every request, setup's too: the failed ones are setup's 500 timeouts.
	all, failed := full.Metrics["http_reqs"].Values["count"], full.Metrics["http_req_failed"].Values["passes"]
	if failed < 1 || all < 30+3+failed {
		t.Errorf("%v requests in all, %v failed: want at least one 500 timeout in setup, asked again (30 load requests, a PUT and 2 view builds besides)", all, failed)
	}
	t.Logf("setup rode through %v timeouts in %.0f ms", failed, s.SetupMs)
}
