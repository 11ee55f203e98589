package runner

// The runner's steps against real Apache CouchDB 3.4.3 from the project's kit, started by
// `make test` (internal/couchdbtest): the single node for every view language the kit
// registers × both reducers × both document profiles, and the 3-node cluster. These tests
// assert what the server did (the built view equals the dataset's answer, map calls per
// document, indexer tasks per node, what the write databases hold), never how long it took.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
)

// The query servers of the kit: design-document languages javascript (SpiderMonkey),
// javascript_quickjs (an arm with engine quickjs), python (couchpy), python_simplejson
// (couchpy --json-module=simplejson, registered as its own language) and erlang.
const languagesBench = `
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: langs}
spec:
  couchdb:
    existing: {url: "http://unused:5984", credentialsSecret: {name: s}}
  allowErlangViews: true
  queryServers:
  - {name: js, language: javascript}
  - {name: quickjs, language: javascript, engine: quickjs}
  - {name: py, language: python}
  - {name: pysj, language: python_simplejson}
  - {name: erl, language: erlang}
  dataset:
    documents: 300
    batchSize: 70
    concurrency: 3
    profiles: [{type: small}, {type: large, targetBytes: 2000}]
  workloads:
    indexing:
      reducers: [builtin, custom]
      repetitions: 1
      viewCompaction: Paused
    viewReads:
      repetitions: 1
`

// wantLanguage is the design-document language of each arm of languagesBench.
var wantLanguage = map[string]string{
	"js": "javascript", "quickjs": "javascript_quickjs", "py": "python", "pysj": "python_simplejson", "erl": "erlang",
}

// wantRuntime is what each arm's probe must find running its views on the kit: the kit's
// "python" is couchpy without --json-module in a venv that has simplejson, so it decodes with
// simplejson too (the couchpy preset names --json-module=json for that reason).
var wantRuntime = map[string]results.Runtime{
	"js":      {Language: "javascript", Engine: "spidermonkey", Version: "102"},
	"quickjs": {Language: "javascript_quickjs", Engine: "quickjs"},
	"py":      {Language: "python", Engine: "CPython", JSONModule: "simplejson"},
	"pysj":    {Language: "python_simplejson", Engine: "CPython", JSONModule: "simplejson"},
	"erl":     {Language: "erlang", Engine: "erlang", Version: "25"},
}

// realRun runs the runner against srv with a run id of its own, so that its databases are
// new, and deletes them when the test ends.
func realRun(t *testing.T, srv *couchdbtest.Server, yaml string, cfg Config) (*results.Document, string, error) {
	t.Helper()
	return realRunUntil(context.Background(), t, srv, yaml, cfg)
}

// realRunUntil is realRun until ctx ends.
func realRunUntil(ctx context.Context, t *testing.T, srv *couchdbtest.Server, yaml string, cfg Config) (*results.Document, string, error) {
	t.Helper()
	bench, err := benchspec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bench = bench
	if cfg.Client == nil {
		cfg.Client = srv.Client(t, couch.Options{MaxConns: 8})
	}
	if cfg.RunID == "" {
		cfg.RunID = "t" + couchdbtest.RandomID()
	}
	if cfg.Steps == nil {
		cfg.Steps = benchv1.RunnerSteps
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	for _, qs := range bench.Spec.QueryServers {
		for _, p := range bench.Spec.Dataset.Profiles {
			srv.DeleteLater(t, names.Database(bench.Name, cfg.RunID, qs.Name, dataset.ProfileName(p)))
		}
	}
	var log bytes.Buffer
	cfg.Log = &log
	doc, err := Run(ctx, cfg)
	if doc == nil {
		t.Fatalf("Run returned no document (error %v)", err)
	}
	return doc, log.String(), err
}

// checkSeededExactly asserts that the database holds exactly documents 0..n-1 of the dataset
// (plus design documents), each once and without conflicts, and that seeding says so.
//
// In a cluster it first waits for the copies to agree: a write is acknowledged once 2 of
// the 3 copies have it, and _all_docs reads one copy per shard range, so right after the
// seed a copy that is behind shows fewer documents for a while (on the kit's 3-node
// cluster, 9,560 of 10,000 for half a second when idle, 6,440 of 10,000 under make test's
// load). The bound is for a copy that never catches up, not a measurement.
func checkSeededExactly(t *testing.T, srv *couchdbtest.Server, p results.Profile, n int64) {
	t.Helper()
	if s := p.Seeding; s == nil || s.Stored != n || s.Created+s.AlreadyPresent != n || s.Failed != 0 {
		t.Errorf("%s: seeding %+v, want %d stored, none failed", p.DB, p.Seeding, n)
	}
	ids := allDocIDs(t, srv, p.DB)
	for deadline := time.Now().Add(2 * time.Minute); int64(len(ids)) < n && len(srv.Nodes) > 1 && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		ids = allDocIDs(t, srv, p.DB)
	}
	if int64(len(ids)) != n {
		t.Errorf("%s holds %d documents (design documents aside), want exactly %d", p.DB, len(ids), n)
	}
	for i, id := range ids {
		if want := dataset.ID(int64(i)); id != want {
			t.Errorf("%s: document %d is %q, want %q: every id of the dataset exactly once", p.DB, i, id, want)
			break
		}
	}
}

// allDocIDs lists the database's document ids in order, design documents aside, and fails
// the test on a document with conflicting revisions (a document written twice).
func allDocIDs(t *testing.T, srv *couchdbtest.Server, db string) []string {
	t.Helper()
	var answer struct {
		Rows []struct {
			ID  string `json:"id"`
			Doc struct {
				Conflicts []string `json:"_conflicts"`
			} `json:"doc"`
		} `json:"rows"`
	}
	srv.GetJSON(t, "/"+db+"/_all_docs?include_docs=true&conflicts=true", &answer)
	var ids []string
	for _, r := range answer.Rows {
		if strings.HasPrefix(r.ID, "_design/") {
			continue
		}
		if len(r.Doc.Conflicts) > 0 {
			t.Errorf("%s: document %s has conflicting revisions %v: it was written twice", db, r.ID, r.Doc.Conflicts)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// checkBuilt asserts a profile's indexing series: one per reducer, every run there and
// verified (Build returns a run only after indexing.Verify compared the whole view with the
// dataset's answer), the map function called exactly once per document and copy.
func checkBuilt(t *testing.T, p results.Profile, reducers []string, runs int, compaction string) {
	t.Helper()
	var got []string
	for _, s := range p.Indexing {
		got = append(got, s.Reducer)
		if len(s.Runs) != runs || s.Stats.N != runs || s.ViewCompaction != compaction {
			t.Errorf("%s/%s: %d runs (stats of %d), compaction %q; want %d runs, compaction %q",
				p.DB, s.Reducer, len(s.Runs), s.Stats.N, s.ViewCompaction, runs, compaction)
		}
		for _, r := range s.Runs {
			if r.Documents == 0 || r.Queryable <= 0 || r.Built <= 0 || r.DocsPerSecond <= 0 || r.BuiltFrom != indexing.BuiltFromCopies ||
				r.Queryable > r.Built+r.BuiltUncertainty {
				t.Errorf("%s/%s run %s: documents %d, queryable %v, built %v ±%v from %q, %.0f docs/s",
					p.DB, s.Reducer, r.DesignDoc, r.Documents, r.Queryable, r.Built, r.BuiltUncertainty, r.BuiltFrom, r.DocsPerSecond)
			}
			// Every copy of every range answered, and the build ended with the last of them.
			last := time.Duration(0)
			for _, cp := range r.Copies {
				last = max(last, cp.Written)
			}
			if len(r.Copies) != p.Shards*p.Replicas || r.Built-r.BuiltUncertainty > last {
				t.Errorf("%s/%s run %s: %d copies, the last written %v, built %v ±%v: want q x n = %d copies, built by the last",
					p.DB, s.Reducer, r.DesignDoc, len(r.Copies), last, r.Built, r.BuiltUncertainty, p.Shards*p.Replicas)
			}
			if compaction == "paused" && (r.MapDocs != r.MapDocsExpected || r.MapDocsExpected != r.Documents*int64(p.Replicas)) {
				t.Errorf("%s/%s run %s: map_doc grew by %d, want exactly %d (documents x n=%d): one map call per document and copy",
					p.DB, s.Reducer, r.DesignDoc, r.MapDocs, r.Documents*int64(p.Replicas), p.Replicas)
			}
		}
	}
	if !slices.Equal(got, reducers) {
		t.Errorf("%s: indexing series %v, want %v", p.DB, got, reducers)
	}
}

// Every language × reducer × profile on the single node: seed, index (compaction paused),
// view reads.
func TestEveryLanguageOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	bench, err := benchspec.Parse([]byte(languagesBench))
	if err != nil {
		t.Fatal(err)
	}
	const docs = 300
	for _, qs := range bench.Spec.QueryServers {
		t.Run(qs.Name, func(t *testing.T) {
			c := srv.Client(t, couch.Options{MaxConns: 8})
			doc, log, err := realRun(t, srv, languagesBench, Config{Arms: []string{qs.Name}, Client: c})
			if err != nil {
				t.Fatalf("run failed: %v\n%s", err, log)
			}
			if doc.Server.Vendor != "The Apache Software Foundation" || doc.Server.Version != srv.Version || len(doc.Server.Nodes) != 1 {
				t.Errorf("provenance %+v: want Apache CouchDB %s, one node", doc.Server, srv.Version)
			}
			if len(doc.Arms) != 1 || doc.Arms[0].Language != wantLanguage[qs.Name] || len(doc.Arms[0].Profiles) != 2 {
				t.Fatalf("arms %+v: want arm %s in language %s with 2 profiles", doc.Arms, qs.Name, wantLanguage[qs.Name])
			}
			rt, want := doc.Arms[0].Runtime, wantRuntime[qs.Name]
			if rt == nil || rt.Language != want.Language || rt.Engine != want.Engine || rt.JSONModule != want.JSONModule ||
				(want.Version != "" && rt.Version != want.Version) || (rt.Engine == "CPython" && !strings.HasPrefix(rt.Version, "3.")) {
				t.Errorf("runtime %+v, want %+v", rt, want)
			}
			var steps []benchv1.Step
			for _, rec := range doc.Steps {
				if rec.Error != "" || rec.FinishedAt.Before(rec.StartedAt) || rec.QueryServer != qs.Name {
					t.Errorf("step %+v", rec)
				}
				steps = append(steps, rec.Step)
			}
			if !slices.Equal(steps, []benchv1.Step{benchv1.StepSeed, benchv1.StepIndex, benchv1.StepViews}) {
				t.Errorf("steps %v, want seed, index, views (the spec has no writes)", steps)
			}
			// A single node has no copy to fill: the steps after the seed find the dataset at
			// the first look and say nothing of waiting (a second look would log that line).
			if strings.Contains(log, "every copy has the") {
				t.Errorf("a step waited for the copies of a single node:\n%s", log)
			}
			for _, p := range doc.Arms[0].Profiles {
				checkSeededExactly(t, srv, p, docs)
				checkBuilt(t, p, []string{"builtin", "custom"}, 1, "paused")
				if len(p.ViewReads) != 3 {
					t.Errorf("%s: %d view reads, want 3", p.DB, len(p.ViewReads))
				}
				for _, vr := range p.ViewReads {
					if len(vr.Reads) != 1 || vr.Reads[0].Rows != docs {
						t.Errorf("%s/%s: reads %+v, want one read of %d rows", p.DB, vr.View, vr.Reads, docs)
					}
				}
				// The design documents the run left: language and autoupdate as the runner meant,
				// and views whose total is the sum of the stored scores.
				for _, s := range p.Indexing {
					if len(s.Runs) == 0 {
						continue // checkBuilt said so
					}
					checkViewTotal(t, srv, p.DB, s.Runs[0].DesignDoc)
					var d struct {
						Language   string `json:"language"`
						AutoUpdate *bool  `json:"autoupdate"`
					}
					if err := c.GetDoc(context.Background(), p.DB, s.Runs[0].DesignDoc, &d); err != nil {
						t.Fatal(err)
					}
					if d.Language != wantLanguage[qs.Name] || d.AutoUpdate == nil || *d.AutoUpdate {
						t.Errorf("%s %s: language %q, autoupdate %v", p.DB, s.Runs[0].DesignDoc, d.Language, d.AutoUpdate)
					}
				}
			}
		})
	}
}

// The sum of every document's score, read back from the server, equals the built view's
// total: a check of the index that does not rely on the generator's expected answer.
func checkViewTotal(t *testing.T, srv *couchdbtest.Server, db, ddocID string) {
	t.Helper()
	var docs struct {
		Rows []struct {
			Doc struct {
				Score *int64 `json:"score"`
			} `json:"doc"`
		} `json:"rows"`
	}
	srv.GetJSON(t, "/"+db+"/_all_docs?include_docs=true", &docs)
	var want int64
	for _, r := range docs.Rows {
		if r.Doc.Score != nil {
			want += *r.Doc.Score
		}
	}
	var view struct {
		Rows []struct {
			Value int64 `json:"value"`
		} `json:"rows"`
	}
	srv.GetJSON(t, "/"+db+"/"+ddocID+"/_view/"+url.PathEscape("by_month"), &view)
	if len(view.Rows) != 1 || view.Rows[0].Value != want || want == 0 {
		t.Errorf("%s %s: view total %+v, want the sum of the stored scores %d", db, ddocID, view.Rows, want)
	}
}

// The 3-node cluster (q=2, n=3): every shard copy's indexer task is seen, on every node;
// queryable comes no later than built; one map call per document and copy.
func TestClusterRunOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	const docs = 2000
	yaml := fmt.Sprintf(jsBench("cluster", `
  dataset:
    documents: %d
    batchSize: 250
    concurrency: 2
  workloads:
    indexing:
      reducers: [builtin, custom]
      repetitions: 1
    viewReads:
      repetitions: 1
      views: [emitNull]
`), docs)
	doc, log, err := realRun(t, srv, yaml, Config{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	if len(doc.Server.Nodes) != 3 || !slices.Equal(doc.Server.Nodes, srv.Nodes) {
		t.Errorf("provenance nodes %v, want the cluster's %v", doc.Server.Nodes, srv.Nodes)
	}
	p := doc.Arms[0].Profiles[0]
	if p.Shards != 2 || p.Replicas != 3 {
		t.Errorf("q=%d n=%d, want q=2 n=3 (n defaults to min(3, nodes))", p.Shards, p.Replicas)
	}
	// In a cluster each step after the seed asks for _sync_shards and waits for two quiet
	// looks after it, and says so.
	if n := strings.Count(log, p.DB+": every copy has the 2000 documents"); n != 2 {
		t.Errorf("the index and views steps said %d times that every copy has the dataset, want 2:\n%s", n, log)
	}
	checkSeededExactly(t, srv, p, docs)
	checkBuilt(t, p, []string{"builtin", "custom"}, 1, "paused")
	for _, s := range p.Indexing {
		for _, r := range s.Runs {
			// q=2 ranges x n=3 copies: 6 copies, 2 on each node, so seeing all 6 means an
			// indexer task was seen on every node.
			if !r.TasksObserved || r.CopiesObserved != 6 {
				t.Errorf("%s: tasks observed %v, %d shard copies; want all 6 (2 ranges x 3 nodes)\n%s", r.DesignDoc, r.TasksObserved, r.CopiesObserved, log)
			}
			if r.Queryable > r.Built {
				t.Errorf("%s: queryable %v after built %v", r.DesignDoc, r.Queryable, r.Built)
			}
			if r.ShardChangesFrom != "tasks" || r.ShardChanges < docs*3 {
				t.Errorf("%s: %d shard changes from %q, want at least %d (documents x n) from the tasks", r.DesignDoc, r.ShardChanges, r.ShardChangesFrom, docs*3)
			}
			if n := len(r.Series); n == 0 || r.Series[n-1].ChangesDone != r.ShardChanges || r.Series[n-1].LiveTasks != 0 {
				t.Errorf("%s: the series must end with every copy complete and no live task: %+v", r.DesignDoc, r.Series)
			}
			checkViewTotal(t, srv, p.DB, r.DesignDoc)
		}
	}
	if len(p.ViewReads) != 1 || p.ViewReads[0].Reads[0].Rows != docs {
		t.Errorf("view reads %+v", p.ViewReads)
	}
}

var compactionBench = jsBench("compaction", `
  dataset:
    documents: 500
    batchSize: 250
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 2
      viewCompaction: Paused
`)

// viewCompactionSettings reads max_size of smoosh's two view channels on node 1 ("" when
// the key is not set).
func viewCompactionSettings(t *testing.T, srv *couchdbtest.Server) [2]string {
	t.Helper()
	c := srv.Client(t, couch.Options{})
	var out [2]string
	for i, section := range []string{"smoosh.ratio_views", "smoosh.slack_views"} {
		v, set, err := c.Config(context.Background(), srv.Nodes[0], section, "max_size")
		if err != nil {
			t.Fatal(err)
		}
		if set {
			out[i] = v
		} else {
			out[i] = "(unset)"
		}
	}
	return out
}

// With viewCompaction Paused the runner sets max_size to 1 for the builds and afterwards
// leaves each setting exactly as it found it: a value stays that value, an unset key is
// unset again.
func TestCompactionSettingsAreRestoredOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	// A known value in one channel, the other unset.
	srv.SetConfig(t, "smoosh.ratio_views", "max_size", "123456789")
	srv.SetConfig(t, "smoosh.slack_views", "max_size", "1") // replaced by the unset state below
	c := srv.Client(t, couch.Options{})
	if err := c.DeleteConfig(context.Background(), srv.Nodes[0], "smoosh.slack_views", "max_size"); err != nil {
		t.Fatal(err)
	}
	before := viewCompactionSettings(t, srv)
	if before != [2]string{"123456789", "(unset)"} {
		t.Fatalf("setup: settings %v", before)
	}
	doc, log, err := realRun(t, srv, compactionBench, Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	p := doc.Arms[0].Profiles[0]
	checkBuilt(t, p, []string{"builtin"}, 2, "paused")
	if after := viewCompactionSettings(t, srv); after != before {
		t.Errorf("compaction settings after the run %v, before %v: the runner must restore them exactly", after, before)
	}
}

// viewCompaction Allowed leaves the settings alone.
func TestCompactionAllowedLeavesSettingsAloneOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	before := viewCompactionSettings(t, srv)
	doc, log, err := realRun(t, srv, strings.Replace(compactionBench, "viewCompaction: Paused", "viewCompaction: Allowed", 1), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	checkBuilt(t, doc.Arms[0].Profiles[0], []string{"builtin"}, 2, "allowed")
	if after := viewCompactionSettings(t, srv); after != before {
		t.Errorf("settings %v after an Allowed run, %v before", after, before)
	}
}

// A view request to the cluster answers 500 timeout when the build outlasts [fabric]
// request_timeout (after 60 s by default), while the build goes on. The build's own
// requests go to each shard copy on its node, without fabric, so they wait for the end.
// On the cluster, request_timeout is lowered (for this test only) far below the build's
// time; a view request sent to the cluster while the build runs shows that it was.
func TestBuildsOutlastTheClusterRequestTimeoutOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	const docs = 10000
	yaml := fmt.Sprintf(`
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: timeouts}
spec:
  couchdb:
    existing: {url: "http://unused:5984", credentialsSecret: {name: s}}
  queryServers:
  - {name: py, language: python}
  dataset:
    documents: %d
    batchSize: 1000
    concurrency: 2
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 1
`, docs)
	runID := "to" + couchdbtest.RandomID()
	seeded, log, err := realRun(t, srv, yaml, Config{Steps: []benchv1.Step{benchv1.StepSeed}, RunID: runID})
	if err != nil {
		t.Fatalf("seed failed: %v\n%s", err, log)
	}
	p := seeded.Arms[0].Profiles[0]
	checkSeededExactly(t, srv, p, docs)

	// The witness: once the build runs, a view request to the cluster, which must time out.
	ddocID := names.IndexingDesignDoc(runID + "-small-builtin-1")
	witness := make(chan error, 1)
	go func() {
		c := srv.Client(t, couch.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			var info struct {
				ViewIndex struct {
					UpdaterRunning bool `json:"updater_running"`
				} `json:"view_index"`
			}
			if status, body, err := srv.Get("/" + p.DB + "/" + ddocID + "/_info"); err == nil && status == http.StatusOK &&
				json.Unmarshal(body, &info) == nil && info.ViewIndex.UpdaterRunning {
				_, err := c.QueryView(ctx, p.DB, ddocID, "by_month", url.Values{"reduce": {"false"}, "limit": {"0"}})
				witness <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		witness <- ctx.Err()
	}()
	restore := srv.SetConfig(t, "fabric", "request_timeout", "1000") // milliseconds; CouchDB's default is 60000
	doc, log, err := realRun(t, srv, yaml, Config{Steps: []benchv1.Step{benchv1.StepIndex}, RunID: runID})
	restore()
	if werr := <-witness; couch.StatusOf(werr) != http.StatusInternalServerError || !strings.Contains(werr.Error(), "timeout") {
		t.Errorf("the view request to the cluster during the build answered %v; want 500 timeout (a build that outlasts "+
			"request_timeout = 1 s: give the test more documents if the build was shorter)", werr)
	}
	if err != nil {
		t.Fatalf("index failed: %v\n%s", err, log)
	}
	p = doc.Arms[0].Profiles[0]
	checkBuilt(t, p, []string{"builtin"}, 1, "paused")
	if len(p.Indexing) == 1 && len(p.Indexing[0].Runs) == 1 {
		checkViewTotal(t, srv, p.DB, p.Indexing[0].Runs[0].DesignDoc)
	}
}

var writesBench = jsBench("writes", `
  dataset:
    documents: 100
  workloads:
    writes:
      duration: 1s
      repetitions: 2
      bulkBatchSizes: [10, 100]
      parallelBulk: {clients: 2, batchSize: 50}
      batchOk: {clients: 2}
      serial: true
`)

// Every write mode's counts match what CouchDB stored (the write database's doc_count),
// and batch=ok's 202 Accepted answers are counted apart from 201 Created. Two repetitions:
// the modes run in turn, twice.
func TestWritesOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	doc, log, err := realRun(t, srv, writesBench, Config{Steps: []benchv1.Step{benchv1.StepWrites}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	p := doc.Arms[0].Profiles[0]
	var modes []string
	for i, w := range p.Writes {
		modes = append(modes, w.Mode)
		if w.Repetition != i/5 {
			t.Errorf("%s is repetition %d, want %d", w.Mode, w.Repetition, i/5)
		}
		if w.Errors != 0 || w.Created+w.Accepted == 0 || w.Stored != w.Created+w.Accepted {
			t.Errorf("%s: %d created + %d accepted, %d errors, %d stored: every acknowledged document must be in the database, no more",
				w.Mode, w.Created, w.Accepted, w.Errors, w.Stored)
		}
		if batchOK := strings.HasPrefix(w.Mode, "batchOk"); batchOK != (w.Accepted > 0) || batchOK == (w.Created > 0) {
			t.Errorf("%s: %d created (201), %d accepted (202): batch=ok is answered 202 and only batch=ok", w.Mode, w.Created, w.Accepted)
		}
	}
	once := []string{"bulk-10", "bulk-100", "parallelBulk-2x50", "batchOk-2", "serial"}
	if want := append(slices.Clone(once), once...); !slices.Equal(modes, want) {
		t.Errorf("modes %v, want %v", modes, want)
	}
	// Each mode is reported as it ends, not the round at its end.
	for _, mode := range once {
		for round := 1; round <= 2; round++ {
			if line := fmt.Sprintf("js/small: writes %s, round %d of 2:", mode, round); !strings.Contains(log, line) {
				t.Errorf("no progress line %q:\n%s", line, log)
			}
		}
	}
	// Each mode deleted its database.
	var all []string
	srv.GetJSON(t, "/_all_dbs", &all)
	for _, db := range all {
		if strings.HasPrefix(db, p.DB+"-w") {
			t.Errorf("write database %s was left behind", db)
		}
	}
}

// runParts runs the steps as parts runners at once, as the operator's Jobs of a shared step
// do, part i through node i+1 of srv (round robin), all with one run id. The last part
// starts a second after the others; lateStart is when. It fails the test if a part fails.
func runParts(t *testing.T, srv *couchdbtest.Server, yaml string, step benchv1.Step, parts int) (docs []*results.Document, lateStart time.Time) {
	t.Helper()
	runID := "t" + couchdbtest.RandomID()
	docs, logs, errs := make([]*results.Document, parts), make([]string, parts), make([]error, parts)
	var wg sync.WaitGroup
	for part := range parts {
		if part == parts-1 {
			time.Sleep(time.Second)
			lateStart = time.Now()
		}
		client := srv.NodeClient(t, part%len(srv.URLs)+1, couch.Options{MaxConns: 4})
		wg.Go(func() {
			docs[part], logs[part], errs[part] = realRun(t, srv, yaml, Config{Client: client, RunID: runID,
				Steps: []benchv1.Step{step}, Part: part, Parts: parts})
		})
	}
	wg.Wait()
	for part, err := range errs {
		if err != nil {
			t.Fatalf("part %d failed: %v\n%s", part, err, logs[part])
		}
	}
	return docs, lateStart
}

// Three runners seed one dataset together on the kit's real 3-node cluster, each through a
// node of its own, twice: no part may start loading before the late one arrives at the
// barrier, part 0 makes the database afresh for the second load only once every part has
// finished the first, and together they store every document exactly once each time; their
// documents join into one load per load. Each asks what runs the views before it seeds.
func TestThreeRunnersSeedTogetherOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	const docs, parts = 6000, 3
	yaml := fmt.Sprintf(jsBench("parts", `
  runner: {parallelism: %d}
  dataset:
    documents: %d
    seedRepetitions: 2
    batchSize: 200
    concurrency: 2
  workloads:
    indexing: {repetitions: 1}
`), parts, docs)
	partDocs, lateStart := runParts(t, srv, yaml, benchv1.StepSeed, parts)
	for part, d := range partDocs {
		s := d.Arms[0].Profiles[0].Seeding
		from, count := dataset.Slice(docs, part, parts)
		if s.Stored != count || s.Created != count {
			t.Errorf("part %d stored %d (created %d), want its slice of %d from %s", part, s.Stored, s.Created, count, dataset.ID(from))
		}
		loads := d.Arms[0].Profiles[0].SeedingRuns
		if len(loads) != 2 || loads[0].Stored != count || loads[1].Stored != count {
			t.Fatalf("part %d: loads %+v, want 2 of its slice of %d", part, loads, count)
		}
		if loads[0].StartedAt.Before(lateStart) {
			t.Errorf("part %d started loading at %s, before part %d arrived at the barrier (%s)", part,
				loads[0].StartedAt.Format(time.StampMicro), parts-1, lateStart.Format(time.StampMicro))
		}
		// Every part asks what runs the views (each in a probe database of its own), so that
		// all of them would leave out an arm that runs on something else than it asks for.
		if rt := d.Arms[0].Runtime; rt == nil || rt.Engine != "spidermonkey" {
			t.Errorf("part %d found the views running on %+v; want every part to ask, and SpiderMonkey", part, rt)
		}
	}
	joined := results.JoinParts(partDocs)
	p := joined.Arms[0].Profiles[0]
	checkSeededExactly(t, srv, p, docs)
	for i, load := range p.SeedingRuns {
		if load.Stored != docs || load.Failed != 0 || len(load.Parts) != parts {
			t.Errorf("load %d joined: %d stored, %d failed, by %d parts; want %d, none, %d", i+1, load.Stored, load.Failed, len(load.Parts), docs, parts)
		}
	}
	// The second load began only after every part had finished the first.
	first, second := p.SeedingRuns[0], p.SeedingRuns[1]
	if second.StartedAt.Before(first.FinishedAt) {
		t.Errorf("the second load began at %s, before the first ended at %s", second.StartedAt.Format(time.StampMicro), first.FinishedAt.Format(time.StampMicro))
	}
	if len(p.Seeding.Parts) != parts || p.Seeding.Elapsed < p.Seeding.Parts[0].Elapsed {
		t.Errorf("joined seeding %+v: want %d parts, over all of them", p.Seeding, parts)
	}
	t.Logf("real CouchDB 3.4.3, 3 nodes, 3 runners: %d documents in %s (%.0f docs/s), starts within %s",
		p.Seeding.Stored, p.Seeding.Elapsed.Round(time.Millisecond), p.SeedingDocsPerSecond, p.Seeding.StartSpread)
}

// Three runners share the writes on the kit's real 3-node cluster: each mode's clients are
// split between them (one client modes run in part 0 alone), their ids never collide (a
// duplicate would be a conflict error), every part starts each mode after the late one
// arrives, and what the mode's database holds at the end, counted by part 0 once all parts
// are done, is exactly every part's acknowledged documents.
func TestThreeRunnersShareTheWritesOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Cluster(t)
	yaml := strings.Replace(writesBench, "  dataset:", "  runner: {parallelism: 3}\n  dataset:", 1)
	yaml = strings.Replace(yaml, "parallelBulk: {clients: 2, batchSize: 50}", "parallelBulk: {clients: 3, batchSize: 50}", 1)
	partDocs, lateStart := runParts(t, srv, yaml, benchv1.StepWrites, 3)
	for part, d := range partDocs {
		for _, w := range d.Arms[0].Profiles[0].Writes {
			wrote := w.Created+w.Accepted > 0
			shouldWrite := w.Mode == "parallelBulk-3x50" || (w.Mode == "batchOk-2" && part < 2) || part == 0
			if wrote != shouldWrite || w.Errors != 0 {
				t.Errorf("part %d, %s #%d: %d created, %d accepted, %d errors; want writes only from the parts that run its clients",
					part, w.Mode, w.Repetition, w.Created, w.Accepted, w.Errors)
			}
			if w.StartedAt.Before(lateStart) {
				t.Errorf("part %d began %s #%d before the late part arrived", part, w.Mode, w.Repetition)
			}
		}
	}
	joined := results.JoinParts(partDocs).Arms[0].Profiles[0].Writes
	if len(joined) != 10 {
		t.Fatalf("%d joined write results, want 5 modes x 2 repetitions", len(joined))
	}
	for _, w := range joined {
		if w.Errors != 0 || w.Created+w.Accepted == 0 || w.Stored != w.Created+w.Accepted || len(w.Parts) != 3 {
			t.Errorf("%s #%d: %d created + %d accepted by %d parts, %d errors, %d stored: the database must hold exactly "+
				"what every part had acknowledged", w.Mode, w.Repetition, w.Created, w.Accepted, len(w.Parts), w.Errors, w.Stored)
		}
	}
}

// Random ids on the kit's real single node: the seeded database holds every document once
// under its random id, in no order, and the built view still equals the dataset's answer;
// seed 003's tiny documents with random ids go through every insert mode, and what each
// mode's database holds is what was acknowledged.
func TestRandomIDsAndTinyDocumentsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	const docs = 1500
	doc, log, err := realRun(t, srv, fmt.Sprintf(jsBench("randomids", `
  dataset:
    documents: %d
    ids: Random
  workloads:
    indexing: {repetitions: 1}
`), docs), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	p := doc.Arms[0].Profiles[0]
	checkBuilt(t, p, []string{"builtin"}, 1, "paused")
	ids := allDocIDs(t, srv, p.DB)
	gen := dataset.New(doc.Seed, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	gen.IDs = benchv1.IDsRandom
	want := make([]string, docs)
	for i := range want {
		want[i] = gen.ID(int64(i))
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("%s holds %d documents; want exactly the dataset's %d random ids", p.DB, len(ids), docs)
	}

	doc, log, err = realRun(t, srv, strings.Replace(strings.Replace(writesBench, "documents: 100", "documents: 100\n    ids: Random\n    profiles: [{type: tiny}]", 1),
		"repetitions: 2", "repetitions: 1", 1), Config{Steps: []benchv1.Step{benchv1.StepWrites}})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	if p := doc.Arms[0].Profiles[0]; p.Profile != "tiny" || len(p.Writes) != 5 {
		t.Fatalf("profile %s with %d write results, want tiny with 5", p.Profile, len(p.Writes))
	}
	for _, w := range doc.Arms[0].Profiles[0].Writes {
		if w.Errors != 0 || w.Created+w.Accepted == 0 || w.Stored != w.Created+w.Accepted {
			t.Errorf("tiny %s: %d created + %d accepted, %d errors, %d stored", w.Mode, w.Created, w.Accepted, w.Errors, w.Stored)
		}
	}
}

// Warm-up runs on the kit's real single node: one build per reducer, one read per view and
// one round of the write modes run before the repetitions and are kept apart, so the
// statistics count only the repetitions; the report shows them in a table of their own.
func TestWarmUpRunsAreKeptApartOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	const docs = 500
	doc, log, err := realRun(t, srv, fmt.Sprintf(jsBench("warmup", `
  dataset:
    documents: %d
  workloads:
    indexing: {repetitions: 2, warmUp: true}
    viewReads: {repetitions: 2, warmUp: true, views: [emitNull]}
    writes: {duration: 1s, serial: true, warmUp: true}
`), docs), Config{})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	p := doc.Arms[0].Profiles[0]
	if ix := p.Indexing[0]; len(ix.Runs) != 2 || ix.WarmUp == nil || ix.WarmUp.Documents != docs || ix.Stats.N != 2 {
		t.Errorf("indexing: %d runs, warm-up %+v, statistics over %d; want 2 counted runs and a warm-up build of %d documents",
			len(ix.Runs), ix.WarmUp, ix.Stats.N, docs)
	}
	if vr := p.ViewReads[0]; len(vr.Reads) != 2 || vr.WarmUp == nil || vr.WarmUp.Rows != docs {
		t.Errorf("view reads: %d reads, warm-up %+v; want 2 and a warm-up read of %d rows", len(vr.Reads), vr.WarmUp, docs)
	}
	if len(p.Writes) != 1 || len(p.WritesWarmUp) != 1 || p.WritesWarmUp[0].Created == 0 || p.WritesWarmUp[0].Stored != p.WritesWarmUp[0].Created {
		t.Errorf("writes %+v, warm-up %+v: want one counted round and one warm-up round that stored what it wrote", p.Writes, p.WritesWarmUp)
	}
	status := results.Aggregate(doc).Results[0]
	if status.Indexing[0].Runs != 2 || status.ViewReads[0].Runs != 2 || status.Writes[0].Runs != 1 {
		t.Errorf("status counts %d, %d and %d runs; the warm-ups must not count", status.Indexing[0].Runs, status.ViewReads[0].Runs, status.Writes[0].Runs)
	}
	var md bytes.Buffer
	if err := results.NewReport(doc).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Warm-up runs (not counted)", "index, builtin reducer", "view emitNull", "writes serial"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}

var progressBench = jsBench("progress", `
  dataset:
    documents: 20000
    batchSize: 1000
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 2
    viewReads:
      repetitions: 1
      views: [emitNull]
    writes: {duration: 1s, bulkBatchSizes: [100]}
`)

// Inside the steps that can take long, progress lines come at least every ProgressInterval:
// the builds' share, from real CouchDB's /_active_tasks (the kit's single node), within 0 to
// 100% and never going back within a build; the views' build before the reads; the write
// mode's documents so far. The interval is short so that a build of these documents spans
// several; nothing is asserted on when the lines came.
func TestProgressLinesInsideStepsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	_, log, err := realRun(t, srv, progressBench, Config{ProgressInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	built := regexp.MustCompile(`js/small: builtin reducer run (\d) of 2: (\d+)% built \((\d+) of (\d+) shard changes\)`)
	shares := map[string][]int{}
	for _, m := range built.FindAllStringSubmatch(log, -1) {
		share, _ := strconv.Atoi(m[2])
		done, _ := strconv.ParseInt(m[3], 10, 64)
		if share < 0 || share > 100 || m[4] != "20000" || done < 0 {
			t.Errorf("%q: want a share from 0 to 100%% of the 20000 documents x n=1", m[0])
		}
		if prev := shares[m[1]]; len(prev) > 0 && share < prev[len(prev)-1] {
			t.Errorf("%q: the share went back from %d%%", m[0], prev[len(prev)-1])
		}
		shares[m[1]] = append(shares[m[1]], share)
	}
	for _, run := range []string{"1", "2"} {
		if len(shares[run]) < 2 {
			t.Errorf("build %s: %d progress lines, want several over a build that spans several intervals:\n%s", run, len(shares[run]), log)
		}
	}
	for _, line := range []string{"js/small: building the views to read: ", "js/small: writes bulk-100, round 1 of 1: 0s of 1s, "} {
		if !strings.Contains(log, line) {
			t.Errorf("no progress line %q:\n%s", line, log)
		}
	}
	t.Logf("build shares %v\n%s", shares, log)
}
