package indexing

// Build against internal/couchtest: a test server (not CouchDB) that replays /_active_tasks
// series recorded from CouchDB 3.4.3 while a view builds, and computes the seed's view by
// name. The timings below are the recordings' divided by the replay speed-up, never
// CouchDB's own.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
	"github.com/couchbench/couchbench/internal/dataset"
)

const docs = 500

// seeded starts a test server, creates db with the dataset and returns a client.
func seeded(t *testing.T, opts ...couchtest.Option) (*couchtest.Server, *couch.Client, *dataset.Generator) {
	t.Helper()
	srv := couchtest.New(t, append([]couchtest.Option{couchtest.WithAdmin("admin", "pw")}, opts...)...)
	c, err := couch.New(srv.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	gen := dataset.New(3, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	ctx := context.Background()
	if _, err := c.CreateDB(ctx, "db", 2, 0); err != nil {
		t.Fatal(err)
	}
	batch := make([]json.RawMessage, docs)
	for i := range batch {
		batch[i] = gen.JSON(int64(i))
	}
	if _, err := c.BulkDocs(ctx, "db", batch); err != nil {
		t.Fatal(err)
	}
	return srv, c, gen
}

func TestBuildSingleNodeReplay(t *testing.T) {
	// 05b_javascript: view request answered after 14.39 s, last task gone at 14.4 s.
	const speedup = 20
	srv, c, gen := seeded(t, couchtest.WithIndexSeries("05b_javascript_active_tasks_series", speedup))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := Build(ctx, c, []string{"couchdb@127.0.0.1"}, Options{
		DB: "db", Documents: docs, Replicas: 1, Language: "javascript", Reducer: benchv1.ReducerBuiltin,
		Nonce: "t1", PollInterval: 25 * time.Millisecond, Expected: gen.Expected(docs),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !run.TasksObserved || run.CopiesObserved != 2 {
		t.Errorf("tasks observed %v, copies %d; want the 2 shard copies of the recording", run.TasksObserved, run.CopiesObserved)
	}
	recorded := 14392 * time.Millisecond / speedup
	// The replay holds the view request for the recorded time: never shorter (how much
	// longer depends on the machine's load, so no upper bound).
	if run.Queryable < recorded {
		t.Errorf("queryable after %s, before the recorded view request / %d = %s", run.Queryable, speedup, recorded)
	}
	// Built is the first poll after the last one that showed a task: after every sample
	// with a live task, and never before queryable.
	if run.Built < run.Queryable {
		t.Errorf("built after %s, before queryable %s", run.Built, run.Queryable)
	}
	for _, p := range run.Series {
		if p.LiveTasks > 0 && p.AtMs > run.Built.Milliseconds() {
			t.Errorf("a task was live at %d ms, after built %s", p.AtMs, run.Built)
		}
	}
	if run.DocsPerSecond != float64(docs)/run.Built.Seconds() {
		t.Errorf("docs/s %.1f is not documents / built time", run.DocsPerSecond)
	}
	// couchtest counts one map call per document and node.
	if run.MapDocs != docs || run.MapDocsExpected != docs {
		t.Errorf("map_doc grew by %d, expected %d; want %d", run.MapDocs, run.MapDocsExpected, docs)
	}
	if len(run.Series) == 0 || run.Series[len(run.Series)-1].LiveTasks != 0 {
		t.Errorf("series %v should end with no live task", run.Series)
	}
	if got := srv.Requests("GET", "/_active_tasks"); got < 10 {
		t.Errorf("%d polls of /_active_tasks during a %s build", got, run.Built)
	}
}

func TestBuildRidesThroughTheClusterTimeout(t *testing.T) {
	// 06_cluster_javascript: 3 nodes, the view request answers 500 timeout after 60 s and
	// the copies go on indexing until 86 s.
	const speedup = 200
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12", "node3@127.0.0.13"}
	_, c, gen := seeded(t, couchtest.WithNodes(nodes...), couchtest.WithIndexSeries("06_cluster_javascript_active_tasks_series", speedup))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := Build(ctx, c, nodes, Options{
		DB: "db", Documents: docs, Replicas: 3, Language: "javascript", Reducer: benchv1.ReducerCustom,
		Nonce: "t2", PollInterval: 25 * time.Millisecond, Expected: gen.Expected(docs),
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.ViewTimeouts < 1 {
		t.Errorf("no 500 timeout seen; the recording has one")
	}
	if run.CopiesObserved != 6 {
		t.Errorf("%d shard copies, want 6 (q=2 x n=3)", run.CopiesObserved)
	}
	if run.Built < 400*time.Millisecond {
		t.Errorf("built after %s; the recorded build ends at 86 s, %s at this speed-up", run.Built, 86*time.Second/speedup)
	}
	if run.MapDocs != 3*docs || run.MapDocsExpected != 3*docs {
		t.Errorf("map_doc %d, expected %d; want %d (every copy maps every document)", run.MapDocs, run.MapDocsExpected, 3*docs)
	}
}

func TestBuildFailsOnAWrongIndex(t *testing.T) {
	_, c, gen := seeded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wrong := gen.Expected(docs)
	for k := range wrong {
		wrong[k]++
		break
	}
	_, err := Build(ctx, c, []string{"couchdb@127.0.0.1"}, Options{
		DB: "db", Documents: docs, Replicas: 1, Language: "javascript", Reducer: benchv1.ReducerBuiltin, Nonce: "t3", Expected: wrong,
	})
	if !errors.Is(err, ErrWrongIndex) || !strings.Contains(err.Error(), "want") {
		t.Fatalf("a view that differs from the dataset: %v; want ErrWrongIndex saying what differs", err)
	}
}

func TestPauseViewCompactionRestoresEveryNode(t *testing.T) {
	nodes := []string{"node1@127.0.0.11", "node2@127.0.0.12"}
	srv, c, _ := seeded(t, couchtest.WithNodes(nodes...))
	ctx := context.Background()
	// One node has a value set before the pause; it must come back, the others be unset again.
	if err := c.SetConfig(ctx, nodes[1], "smoosh.ratio_views", "max_size", "5000000"); err != nil {
		t.Fatal(err)
	}
	restore, err := PauseViewCompaction(ctx, c, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for _, section := range viewCompactionChannels {
			if v, ok := srv.Config(n, section, "max_size"); !ok || v != pausedMaxSize {
				t.Errorf("%s [%s] max_size = %q, %v during the pause", n, section, v, ok)
			}
		}
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if v, ok := srv.Config(nodes[1], "smoosh.ratio_views", "max_size"); !ok || v != "5000000" {
		t.Errorf("node2 ratio_views max_size = %q, %v after restore; want 5000000", v, ok)
	}
	for _, probe := range [][2]string{{nodes[0], "smoosh.ratio_views"}, {nodes[0], "smoosh.slack_views"}, {nodes[1], "smoosh.slack_views"}} {
		if v, ok := srv.Config(probe[0], probe[1], "max_size"); ok {
			t.Errorf("%s [%s] max_size = %q after restore; want unset", probe[0], probe[1], v)
		}
	}
}

// Two runs pausing compaction on one server: the second must not save the first's pause as
// the server's setting, or compaction would stay paused after both.
func TestOverlappingPausesRestoreTheServerSetting(t *testing.T) {
	nodes := []string{"node1@127.0.0.11"}
	srv, c, _ := seeded(t, couchtest.WithNodes(nodes...))
	ctx := context.Background()
	restoreFirst, err := PauseViewCompaction(ctx, c, nodes)
	if err != nil {
		t.Fatal(err)
	}
	restoreSecond, err := PauseViewCompaction(ctx, c, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := restoreFirst(); err != nil {
		t.Fatal(err)
	}
	if err := restoreSecond(); err != nil {
		t.Fatal(err)
	}
	for _, section := range viewCompactionChannels {
		if v, ok := srv.Config(nodes[0], section, "max_size"); ok {
			t.Errorf("[%s] max_size = %q after both runs restored; want unset (CouchDB's default)", section, v)
		}
	}
}
