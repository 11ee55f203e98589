package indexing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// recorded is the part of a recorded run's derived summary (testdata/*_summary.json) the
// tests compare with.
type recorded struct {
	DB          string `json:"db"`
	Docs        int64  `json:"docs"`
	N           int    `json:"n"`
	ViewRequest struct {
		StartRelMs int64   `json:"t_start_rel_ms"`
		ElapsedS   float64 `json:"elapsed_s"`
	} `json:"view_request"`
	BuildEndRelMs int64 `json:"build_end_rel_ms"`
	TotalChanges  int64 `json:"total_changes"`
	IndexerTasks  []struct {
		Later []json.RawMessage `json:"later_indexer_tasks_same_shard"`
	} `json:"indexer_tasks"`
}

// samplesOf loads a recorded /_active_tasks series as Analyze's input, times relative to
// the recorded view request.
func samplesOf(t testing.TB, series string) ([]Sample, couchdbtest.Series) {
	t.Helper()
	s, err := couchdbtest.LoadSeries(series)
	if err != nil {
		t.Fatal(err)
	}
	samples := make([]Sample, len(s.Samples))
	for i, rec := range s.Samples {
		tasks, err := couch.ParseTasks(rec.Body)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		samples[i] = Sample{At: time.Duration(rec.TRelMs-s.ViewRequest.StartRelMs) * time.Millisecond, Tasks: tasks}
	}
	return samples, s
}

func readSummary(t *testing.T, name string) recorded {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+"_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Analyze on the series recorded from CouchDB 3.4.3 finds the changes over all shard copies
// and the compactor's re-index tasks that the recordings' summaries state, and draws a curve
// that ends at their total.
func TestAnalyzeRecordedBuilds(t *testing.T) {
	for _, name := range []string{"05b_javascript", "05_javascript", "05_python", "06_cluster_50k_javascript"} {
		t.Run(name, func(t *testing.T) {
			want := readSummary(t, name)
			samples, _ := samplesOf(t, name+"_active_tasks_series")
			a := Analyze(samples, want.DB, "_design/bench")

			if !a.TasksObserved {
				t.Fatal("no build task observed")
			}
			if a.ShardChanges != want.TotalChanges {
				t.Errorf("shard changes %d, the recording says %d", a.ShardChanges, want.TotalChanges)
			}
			if a.CopiesObserved != len(want.IndexerTasks) {
				t.Errorf("%d shard copies, the recording has %d", a.CopiesObserved, len(want.IndexerTasks))
			}
			later := 0
			for _, c := range want.IndexerTasks {
				later += len(c.Later)
			}
			if a.ReindexTasks != later {
				t.Errorf("%d re-index tasks, the recording has %d", a.ReindexTasks, later)
			}
			// Every copy counts once and a vanished copy counts as complete: the curve ends
			// at the total.
			if last := a.Series[len(a.Series)-1]; last.ChangesDone != want.TotalChanges || last.LiveTasks != 0 {
				t.Errorf("the curve ends at %+v, want %d changes and no live task", last, want.TotalChanges)
			}
			for i := 1; i < len(a.Series); i++ {
				if a.Series[i].ChangesDone < a.Series[i-1].ChangesDone {
					t.Fatalf("the curve goes down at %d ms", a.Series[i].AtMs)
				}
			}
			if a.PeakShardChangesPerSecond <= 0 {
				t.Errorf("peak %.0f shard changes/s", a.PeakShardChangesPerSecond)
			}
			t.Logf("%s: %d shard changes, peak %.0f shard changes/s, %d re-index, %d compaction tasks",
				name, a.ShardChanges, a.PeakShardChangesPerSecond, a.ReindexTasks, a.CompactionTasks)
		})
	}
}

// seedMethod is the seed article's monitor as its printed output shows it: once a second,
// the changes_done of the visible indexer tasks summed and divided by the seconds since the
// build started; at Ctrl-C, the mean of those figures.
func seedMethod(samples []Sample) float64 {
	var figures []float64
	next := time.Second
	for _, s := range samples {
		if s.At < next {
			continue
		}
		var sum int64
		for _, task := range s.Tasks {
			if task.Type == "indexer" {
				sum += task.ChangesDone
			}
		}
		if sum == 0 && len(figures) > 0 {
			break
		}
		figures = append(figures, float64(sum)/next.Seconds())
		next += time.Second
	}
	var total float64
	for _, f := range figures {
		total += f
	}
	return total / float64(len(figures))
}

// On every recording the seed's method gives another number than documents over the time
// to a fully built view (the recording's own end: its last indexer task gone): it counts
// every shard copy (n=3 triples it), the compactor's re-mapping, and averages a running
// mean. The test pins what the recordings show.
func TestSeedMethodDisagreesWithTheBuildTime(t *testing.T) {
	for _, name := range []string{"05b_javascript", "05_javascript", "05_python", "06_cluster_50k_javascript"} {
		want := readSummary(t, name)
		samples, _ := samplesOf(t, name+"_active_tasks_series")
		built := time.Duration(want.BuildEndRelMs-want.ViewRequest.StartRelMs) * time.Millisecond
		truth := float64(want.Docs) / built.Seconds()
		seed := seedMethod(samples)
		off := 100 * (seed - truth) / truth
		t.Logf("%s: documents / built time %.0f/s, seed method %.0f/s (%+.0f%%)", name, truth, seed, off)
		if off > -5 && off < 5 {
			t.Errorf("%s: the seed method is within 5%% of the build-time rate; the recordings show otherwise", name)
		}
	}
}

func TestIsShardOf(t *testing.T) {
	cases := []struct {
		database, db string
		want         bool
	}{
		{"shards/00000000-7fffffff/bench.1795304282", "bench", true},
		{"shards/00000000-7fffffff/bench.v2.1795304282", "bench.v2", true},
		{"shards/00000000-7fffffff/bench2.1795304282", "bench", false},
		{"shards/00000000-7fffffff/other.1795304282", "bench", false},
		{"bench", "bench", true},
		{"shards/nodot", "bench", false},
	}
	for _, c := range cases {
		if got := isShardOf(c.database, c.db); got != c.want {
			t.Errorf("isShardOf(%q, %q) = %v", c.database, c.db, got)
		}
	}
}

func TestAnalyzeSkipsFailedPollsAndOtherDatabases(t *testing.T) {
	task := func(db string, done int64) couch.Task {
		return couch.Task{Node: "n1", Type: "indexer", Database: "shards/00000000-ffffffff/" + db + ".1", DesignDocument: "_design/x",
			IndexerPID: "<0.1.0>", ChangesDone: done, TotalChanges: 100}
	}
	samples := []Sample{
		{At: 0, Tasks: []couch.Task{task("db", 10), task("other", 50)}},
		{At: 250 * time.Millisecond, Err: os.ErrDeadlineExceeded},
		{At: 500 * time.Millisecond, Tasks: []couch.Task{task("db", 60)}},
		{At: 750 * time.Millisecond, Tasks: nil},
	}
	a := Analyze(samples, "db", "_design/x")
	if a.FailedPolls != 1 || a.CopiesObserved != 1 || a.ShardChanges != 100 {
		t.Errorf("failed polls %d, copies %d, shard changes %d; want 1, 1, 100", a.FailedPolls, a.CopiesObserved, a.ShardChanges)
	}
	if last := a.Series[len(a.Series)-1]; !a.TasksObserved || len(a.Series) != 3 || last.LiveTasks != 0 || last.ChangesDone != 100 {
		t.Errorf("tasks observed %v, curve %+v: want 3 points (the failed poll left out), ending complete", a.TasksObserved, a.Series)
	}
	// Across the failed poll the rate spans both intervals: 50 changes in 0.5 s.
	if a.PeakShardChangesPerSecond != 100 {
		t.Errorf("peak %.0f, want 100", a.PeakShardChangesPerSecond)
	}
}
