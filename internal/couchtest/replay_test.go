package couchtest_test

// Tests of internal/couchtest itself, the in-repo fake (not CouchDB): the replay of
// /_active_tasks series recorded on CouchDB 3.4.3. Durations are asserted as lower bounds
// only (the replay cannot answer before the recorded time, sped up); how much later it
// answers depends on the machine's load.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couchtest"
)

const benchDdoc = `{"language":"javascript","autoupdate":false,"views":{"by_month":{"map":"function(doc) {...}","reduce":"_sum"}}}`

// seedBench creates db with n seed-shaped docs (month i%12+1 of 2026, score i) and
// _design/bench; it returns the group=true sums and the db's creation time.
func seedBench(t *testing.T, s *couchtest.Server, db string, n int) (map[string]int, string) {
	t.Helper()
	do(t, s, http.MethodPut, "/"+db+"?q=2", nil)
	sums := map[string]int{}
	var b strings.Builder
	b.WriteString(`{"docs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		month := fmt.Sprintf("%02d", i%12+1)
		fmt.Fprintf(&b, `{"metadata":{"docType":"score","createdAt":"2026-%s-15"},"username":"abcdef","score":%d}`, month, i)
		sums[month] += i
	}
	b.WriteString(`]}`)
	if got := do(t, s, http.MethodPost, "/"+db+"/_bulk_docs", []byte(b.String())); got.status != http.StatusCreated {
		t.Fatalf("seeding: %d", got.status)
	}
	if got := do(t, s, http.MethodPut, "/"+db+"/_design/bench", []byte(benchDdoc)); got.status != http.StatusCreated {
		t.Fatalf("ddoc: %d %s", got.status, got.body)
	}
	created, _ := do(t, s, http.MethodGet, "/"+db, nil).json(t)["instance_start_time"].(string)
	return sums, created
}

// poller samples /_active_tasks until stopped, as the recorder did.
type poller struct {
	mu     sync.Mutex
	bodies []string
	stop   chan struct{}
	done   chan struct{}
}

func startPolling(s *couchtest.Server) *poller {
	p := &poller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/_active_tasks", nil)
			req.SetBasicAuth("admin", "secret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			p.mu.Lock()
			p.bodies = append(p.bodies, string(body))
			p.mu.Unlock()
		}
	}()
	return p
}

type task struct {
	Node, Database, Type string
	DesignDocument       string `json:"design_document"`
}

// tasks stops polling and returns every task seen.
func (p *poller) tasks(t *testing.T) []task {
	t.Helper()
	close(p.stop)
	<-p.done
	all := make([]task, 0, len(p.bodies))
	for _, body := range p.bodies {
		var tasks []task
		if err := json.Unmarshal([]byte(body), &tasks); err != nil {
			t.Fatalf("%v in %q", err, body)
		}
		all = append(all, tasks...)
	}
	return all
}

// buildEnd is when the recorded tasks were gone, relative to the recorded view request.
func buildEnd(t *testing.T, s couchtest.Series) time.Duration {
	t.Helper()
	last := 0
	for i, sample := range s.Samples {
		if string(sample.Body) != "[]" {
			last = i
		}
	}
	return time.Duration(s.Samples[last+1].TRelMs-s.ViewRequest.StartRelMs) * time.Millisecond
}

func TestReplaySingleNode(t *testing.T) {
	const speedup = 50
	series, err := couchtest.LoadSeries("05b_javascript_active_tasks_series")
	if err != nil {
		t.Fatal(err)
	}
	s := couchtest.New(t, couchtest.WithIndexSeries(series.Name, speedup))
	sums, created := seedBench(t, s, "bench", 1000)
	if got := do(t, s, http.MethodGet, "/_active_tasks", nil); string(got.body) != "[]\n" {
		t.Errorf("before the build: %q", got.body)
	}

	p := startPolling(s)
	start := time.Now()
	got := do(t, s, http.MethodGet, "/bench/_design/bench/_view/by_month?group=true&limit=11", nil)
	elapsed := time.Since(start)
	want := time.Duration(series.ViewRequest.ElapsedS * float64(time.Second) / speedup)
	// The replay holds the request for the recorded time (sped up): it cannot answer
	// earlier. How much later depends on the machine's load, so there is no upper bound.
	if elapsed < want {
		t.Errorf("the view request answered after %v, before the recorded %.3f s / %d = %v", elapsed, series.ViewRequest.ElapsedS, speedup, want)
	}
	var rows []string
	for m := 1; m <= 11; m++ {
		rows = append(rows, fmt.Sprintf(`{"key":["2026","%02d"],"value":%d}`, m, sums[fmt.Sprintf("%02d", m)]))
	}
	if wantBody := "{\"rows\":[\r\n" + strings.Join(rows, ",\r\n") + "\r\n]}\n"; got.status != http.StatusOK || string(got.body) != wantBody {
		t.Errorf("view answer %d %q, want %q", got.status, got.body, wantBody)
	}

	end := time.Duration(series.Samples[len(series.Samples)-1].TRelMs-series.ViewRequest.StartRelMs) * time.Millisecond / speedup
	time.Sleep(time.Until(start.Add(end + 50*time.Millisecond)))
	tasks := p.tasks(t)
	if len(tasks) == 0 {
		t.Fatal("no indexer task seen during the build")
	}
	for _, task := range tasks {
		if task.Type != "indexer" || task.DesignDocument != "_design/bench" || task.Node != "couchdb@127.0.0.1" ||
			(task.Database != "shards/00000000-7fffffff/bench."+created && task.Database != "shards/80000000-ffffffff/bench."+created) {
			t.Errorf("task %+v does not name this server's db bench (created %s)", task, created)
			break
		}
	}

	if got := do(t, s, http.MethodGet, "/_active_tasks", nil); string(got.body) != "[]\n" {
		t.Errorf("after the series: %q", got.body)
	}
	// The index is built: a repeated query answers the same at once, without a second
	// build (no task appears, no document is mapped again).
	p = startPolling(s)
	again := do(t, s, http.MethodGet, "/bench/_design/bench/_view/by_month?group=true&limit=11", nil)
	if tasks := p.tasks(t); len(tasks) != 0 || again.status != http.StatusOK || string(again.body) != string(got.body) {
		t.Errorf("repeated query: %d %q with %d tasks, want the first answer and no build", again.status, again.body, len(tasks))
	}
	if n := s.MapDocCount("_local"); n != 1000 {
		t.Errorf("map_doc = %d, want 1000: one map call per document, the repeated query built nothing", n)
	}
}

func TestReplayClusterTimeout(t *testing.T) {
	const speedup = 200
	series, err := couchtest.LoadSeries("06_cluster_javascript_active_tasks_series")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{"a@10.0.0.1", "b@10.0.0.2", "c@10.0.0.3"}
	s := couchtest.New(t, couchtest.WithNodes(nodes...), couchtest.WithIndexSeries(series.Name, speedup))
	seedBench(t, s, "bench", 100)
	const view = "/bench/_design/bench/_view/by_month?group=true&limit=11"

	start := time.Now()
	got := do(t, s, http.MethodGet, view, nil)
	want := time.Duration(series.ViewRequest.ElapsedS * float64(time.Second) / speedup)
	if elapsed := time.Since(start); elapsed < want {
		t.Errorf("answered after %v, before the recorded %v", elapsed, want)
	}
	checkExact(t, "the recorded timeout", got, loadFixture(t, "06_cluster_javascript_view_group_true_limit11"))

	// CouchDB went on building: the tasks go on, on this server's nodes.
	var tasks []task
	if err := json.Unmarshal(do(t, s, http.MethodGet, "/_active_tasks", nil).body, &tasks); err != nil || len(tasks) == 0 {
		t.Fatalf("tasks after the timeout: %v %v", tasks, err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		seen[task.Node] = true
	}
	if len(seen) != 3 || !seen[nodes[0]] || !seen[nodes[1]] || !seen[nodes[2]] {
		t.Errorf("task nodes %v, want %v", seen, nodes)
	}
	if info := do(t, s, http.MethodGet, "/bench/_design/bench/_info", nil).json(t)["view_index"].(map[string]any); info["updater_running"] != true {
		t.Errorf("_info during the build: %v", info)
	}
	if got := do(t, s, http.MethodGet, "/bench/_design/bench/_view/by_month?update=false", nil); string(got.body) != "{\"rows\":[\r\n\r\n]}\n" {
		t.Errorf("a stale read during the build: %q", got.body)
	}

	// The same query again waits for the end of the recorded build, then answers 200.
	again := do(t, s, http.MethodGet, view, nil)
	ready := buildEnd(t, series) / speedup
	if elapsed := time.Since(start); again.status != http.StatusOK || elapsed < ready {
		t.Errorf("repeated query: %d after %v, want 200, not before the recorded build's end %v", again.status, elapsed, ready)
	}
	for _, node := range nodes {
		if n := s.MapDocCount(node); n != 100 {
			t.Errorf("%s: map_doc %d", node, n)
		}
	}
}

// fatalRecorder stands in for a test to catch New's Fatalf.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestReplayNeedsTheRecordedNodes(t *testing.T) {
	for _, opts := range [][]couchtest.Option{
		{couchtest.WithIndexSeries("06_cluster_50k_javascript_active_tasks_series", 10)},
		{couchtest.WithIndexSeries("05b_javascript_active_tasks_series", 0)},
		{couchtest.WithIndexSeries("no_such_series", 10)},
	} {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			couchtest.New(rec, opts...)
		}()
		<-done
		if rec.msg == "" {
			t.Errorf("New did not fail")
		}
	}
}
