package report_test

import (
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// documents is the number of documents of the recorded builds below.
const documents = 200000

// arm is one query server of the realistic run: the recorded /_active_tasks series of a
// real CouchDB 3.4.3 build (200,000 documents, q=2, n=1, polled every 250 ms) its builds
// replay, and how much slower than that recording the arm is.
type arm struct {
	name     string
	language string
	series   string
	slowdown float64
}

var arms = []arm{
	{"spidermonkey", "javascript", "05_javascript_active_tasks_series", 1},
	{"quickjs", "javascript", "05b_javascript_active_tasks_series", 1},
	{"couchpy", "python", "05_python_active_tasks_series", 1},
	{"erlang", "erlang", "05b_javascript_active_tasks_series", 0.45},
}

// realisticRun is a run as `couchbench run` writes it for four arms, two document
// profiles, both reducers with three builds each (their series from recorded builds, time
// stretched per run), view reads, seven insert modes and k6 reads (the first arm's with two
// runners, so its percentiles are upper bounds).
func realisticRun(t testing.TB) *results.Document {
	t.Helper()
	started := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	d := &results.Document{
		SchemaVersion: results.SchemaVersion, Benchmark: "nightly-query-servers", SpecHash: strings.Repeat("ab", 32),
		RunID: "r20261122", Seed: 1, StartedAt: started, FinishedAt: started.Add(47 * time.Minute),
		Server: results.Provenance{URL: "couchdb.bench.svc:5984", Vendor: "The Apache Software Foundation", Version: "3.4.3",
			Nodes: []string{"couchdb@couchdb-0.couchdb.bench.svc.cluster.local"}},
	}
	for _, a := range arms {
		d.Spec.QueryServers = append(d.Spec.QueryServers, benchv1.QueryServer{Name: a.name, Preset: benchv1.Preset(a.name)})
	}
	for i, a := range arms {
		recorded, err := couchdbtest.LoadSeries(a.series)
		if err != nil {
			t.Fatal(err)
		}
		ra := results.Arm{QueryServer: a.name, Language: a.language}
		for _, profile := range []struct {
			name     string
			slowdown float64
		}{{"small", 1}, {"large", 2.4}} {
			p := results.Profile{Profile: profile.name, DB: "cb-" + a.name + "-" + profile.name, Shards: 2, Replicas: 1}
			seed := measured.Seeding{Stored: documents, Created: documents, Bytes: int64(documents * 110 * profile.slowdown),
				Elapsed: time.Duration(float64(8*time.Second) * profile.slowdown)}
			p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = &seed, seed.DocsPerSecond(), seed.MBPerSecond()
			for _, reducer := range []struct {
				name     string
				slowdown float64
			}{{"builtin", 1}, {"custom", 1.12}} {
				ix := results.IndexingSeries{Reducer: reducer.name, ViewCompaction: "paused", PollInterval: indexing.DefaultPollInterval}
				for _, run := range []float64{1, 1.06, 0.97} {
					ix.Runs = append(ix.Runs, replay(t, recorded, a.slowdown*profile.slowdown*reducer.slowdown*run))
				}
				ix.Finish()
				p.Indexing = append(p.Indexing, ix)
			}
			for v, view := range []benchv1.ViewReadKind{benchv1.ViewEmitDoc, benchv1.ViewEmitNull, benchv1.ViewEmitNullIncludeDocs} {
				vr := measured.ViewReads{View: view}
				for r := range 5 {
					secs := []float64{4.1, 1.2, 5.3}[v] * profile.slowdown * (1 + 0.02*float64(r%3))
					vr.Reads = append(vr.Reads, measured.ViewRead{Rows: documents, Elapsed: time.Duration(secs * float64(time.Second))})
				}
				p.ViewReads = append(p.ViewReads, vr)
			}
			for m, mode := range []string{"bulk-100", "bulk-1000", "bulk-5000", "bulk-10000", "parallelBulk-10x1000", "batchOk-1", "serial"} {
				perSecond := []float64{8200, 21500, 24800, 25900, 38400, 950, 160}[m] / profile.slowdown * (1 - 0.03*float64(i))
				w := measured.Write{Mode: mode, Elapsed: 10 * time.Second, Created: int64(perSecond * 10)}
				if mode == "batchOk-1" {
					w.Created, w.Accepted = 0, w.Created
				}
				w.Stored = w.Created + w.Accepted
				p.Writes = append(p.Writes, w)
			}
			if profile.name == "small" {
				p.Reads = k6Reads(i)
			}
			ra.Profiles = append(ra.Profiles, p)
		}
		d.Arms = append(d.Arms, ra)
		for _, step := range []benchv1.Step{benchv1.StepSeed, benchv1.StepIndex, benchv1.StepViews, benchv1.StepWrites, benchv1.StepReads} {
			d.Steps = append(d.Steps, results.StepRecord{QueryServer: a.name, Step: step})
		}
	}
	return d
}

// k6Reads is arm i's k6 summary: two runners for the first arm, one for the others.
func k6Reads(i int) *results.Reads {
	slower := 1 + 0.25*float64(i)
	runner := func(segment string, requests int64, p95 float64) results.ReadsRunner {
		return results.ReadsRunner{Segment: segment, Requests: requests, DurationMs: 9800,
			Milliseconds: results.Latencies{Avg: 4.2 * slower, Min: 0.9, P50: 3.1 * slower, P90: 8.8 * slower, P95: p95 * slower,
				P99: 24.5 * slower, Max: 61 * slower}}
	}
	if i == 0 {
		return &results.Reads{Scenario: "viewByKey", Runners: []results.ReadsRunner{runner("0:1/2", 1000, 11.7), runner("1/2:1", 1000, 12.4)}}
	}
	return &results.Reads{Scenario: "viewByKey", Runners: []results.ReadsRunner{runner("0:1", 2000, 12.1)}}
}

// replay is one build made up from a recorded /_active_tasks series, its times stretched by
// slowdown and counted from the blocking view request's start: the curve through Analyze, as
// indexing.Build draws it, and the end where the recording's last indexer task was gone,
// timed to ±10 ms.
func replay(t testing.TB, s couchdbtest.Series, slowdown float64) measured.IndexBuild {
	t.Helper()
	stretch := func(relMs int64) time.Duration {
		return time.Duration(float64(relMs-s.ViewRequest.StartRelMs) * slowdown * float64(time.Millisecond))
	}
	var samples []indexing.Sample
	var db, ddocID string
	for _, sample := range s.Samples {
		tasks, err := couch.ParseTasks(sample.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.Type == "indexer" && ddocID == "" {
				ddocID, db = task.DesignDocument, shardDB(task.Database)
			}
		}
		samples = append(samples, indexing.Sample{At: stretch(sample.TRelMs), Tasks: tasks})
	}
	a := indexing.Analyze(samples, db, ddocID)
	if !a.TasksObserved {
		t.Fatalf("series %s: no build task of %s on %s", s.Name, ddocID, db)
	}
	var end time.Duration
	for i, pt := range a.Series {
		if pt.LiveTasks > 0 && i+1 < len(a.Series) {
			end = time.Duration(a.Series[i+1].AtMs) * time.Millisecond
		}
	}
	run := measured.IndexBuild{DesignDoc: ddocID, Documents: documents, Queryable: stretch(s.ViewRequest.EndRelMs),
		Built: end, BuiltUncertainty: 10 * time.Millisecond, BuiltFrom: indexing.BuiltFromCopies, TasksObserved: true, CopiesObserved: a.CopiesObserved, ShardChanges: a.ShardChanges,
		ShardChangesFrom: "tasks", MapDocs: -1, MapDocsExpected: documents, Series: a.Series}
	run.Built = max(run.Built, run.Queryable)
	run.DocsPerSecond = documents / run.Built.Seconds()
	run.QueryableDocsPerSecond = documents / run.Queryable.Seconds()
	run.ShardChangesPerSecond = float64(a.ShardChanges) / run.Built.Seconds()
	return run
}

// shardDB is the database of a shard file name, "shards/<range>/<db>.<created>".
func shardDB(file string) string {
	rest, ok := strings.CutPrefix(file, "shards/")
	if !ok {
		return file
	}
	name := rest[strings.IndexByte(rest, '/')+1:]
	return name[:strings.LastIndexByte(name, '.')]
}
