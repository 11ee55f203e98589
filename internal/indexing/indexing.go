// Package indexing measures how fast CouchDB builds a view: the seed article's "scores by
// month" view, built from scratch, timed to a fully built index on every shard copy.
//
// In a cluster the blocking view request returns once one copy of each shard range is
// built, while the other copies keep indexing, and it can even answer 500 timeout after
// 60 s while the build goes on. So a build has two times: queryable (the view request
// answered) and built (no build task left on any node, from /_active_tasks polled every
// 250 ms). Rates divide documents by the built time: the seed's "c/s", measured to the end.
package indexing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/names"
)

// DefaultPollInterval is the longest /_active_tasks poll interval: CouchDB refreshes a
// task's counters about every 500 ms, and 250 ms puts a long build's end within a quarter
// second.
const DefaultPollInterval = 250 * time.Millisecond

// MinPollInterval is the shortest: polls start this often and slow down as the build goes
// on (a twentieth of the time elapsed), so that a short build's end is bracketed as tightly,
// relative to its length, as a long one's.
const MinPollInterval = 50 * time.Millisecond

// How Run.Built was taken.
const (
	// BuiltFromViewResponse: with one copy of each shard range (n=1) the blocking view
	// request answers only once every copy is built, so its answer is the build's end.
	BuiltFromViewResponse = "view response (n=1)"
	// BuiltFromActiveTasks: the middle of the bracket between the last poll that showed a
	// build task and the first after it that did not.
	BuiltFromActiveTasks = "active tasks"
)

// quietPolls is how many consecutive polls without a build task end the wait, so that a
// single poll that raced a task's start is not taken for the end.
const quietPolls = 2

// Options describe one build.
type Options struct {
	DB        string
	Documents int64
	// Replicas is the database's n: every copy maps every document of its range.
	Replicas int
	Language string
	Reducer  benchv1.Reducer
	// Nonce makes the design document, and so the index, new.
	Nonce        string
	PollInterval time.Duration
	// Expected is the view's correct answer (group=true); the build fails if the built view
	// differs.
	Expected map[dataset.MonthKey]int64
}

// Run is the measurement of one build.
type Run struct {
	// StartedAt is when the build was triggered: the order of the builds, which arms and
	// reducers alternate so that drift spreads over all of them.
	StartedAt time.Time `json:"startedAt,omitzero"`
	DesignDoc string    `json:"designDoc"`
	Documents int64     `json:"documents"`
	// Queryable is when the view request answered 200; Built when the last shard copy was
	// built, BuiltFrom says how that was taken and BuiltUncertainty how far off it can be.
	Queryable        time.Duration `json:"queryableNs"`
	Built            time.Duration `json:"builtNs"`
	BuiltUncertainty time.Duration `json:"builtUncertaintyNs"`
	BuiltFrom        string        `json:"builtFrom"`
	TasksObserved    bool          `json:"tasksObserved"`
	// ViewTimeouts counts 500 timeout answers to the view request ridden through.
	ViewTimeouts int `json:"viewTimeouts"`
	// DocsPerSecond is documents / Built; QueryableDocsPerSecond documents / Queryable.
	DocsPerSecond          float64 `json:"docsPerSecond"`
	QueryableDocsPerSecond float64 `json:"queryableDocsPerSecond"`
	// ShardChanges counts changes over all shard copies (from the tasks when every copy was
	// seen, else documents x n); ShardChangesPerSecond is that over Built.
	ShardChanges              int64   `json:"shardChanges"`
	ShardChangesFrom          string  `json:"shardChangesFrom"`
	ShardChangesPerSecond     float64 `json:"shardChangesPerSecond"`
	PeakShardChangesPerSecond float64 `json:"peakShardChangesPerSecond"`
	CopiesObserved            int     `json:"copiesObserved"`
	ReindexTasks              int     `json:"reindexTasks"`
	CompactionTasks           int     `json:"compactionTasks"`
	FailedPolls               int     `json:"failedPolls"`
	// MapDocs is the growth of couchdb.mrview.map_doc over all nodes during the build, -1
	// when a node's statistics could not be read; MapDocsExpected is documents x n, what a
	// build that maps every document once on every copy does.
	MapDocs         int64   `json:"mapDocs"`
	MapDocsExpected int64   `json:"mapDocsExpected"`
	Series          []Point `json:"series"`
}

// Build creates a new design document and measures the build of its view.
func Build(ctx context.Context, c *couch.Client, nodes []string, opts Options) (Run, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	ddocID := names.IndexingDesignDoc(opts.Nonce)
	doc, err := ddoc.Indexing(ddocID, opts.Language, opts.Reducer, opts.Nonce)
	if err != nil {
		return Run{}, err
	}
	run := Run{DesignDoc: ddocID, Documents: opts.Documents, MapDocsExpected: opts.Documents * int64(max(opts.Replicas, 1))}

	before := readNodes(ctx, c, nodes)
	if err := c.PutDesignDoc(ctx, opts.DB, doc); err != nil {
		return run, fmt.Errorf("creating design document %s: %w", ddocID, err)
	}

	// Poll from before the trigger until the build tasks are gone.
	poller := startPolling(ctx, c, opts.PollInterval)
	start := time.Now()
	poller.setOrigin(start)
	run.StartedAt = start.UTC()

	// The seed's blocking view request.
	run.ViewTimeouts, err = c.WaitForView(ctx, opts.DB, ddocID, ddoc.ByMonth, url.Values{"group": {"true"}, "limit": {"11"}})
	if err != nil {
		poller.stop()
		return run, err
	}
	run.Queryable = time.Since(start)

	samples := poller.waitQuiet(ctx, opts.DB, ddocID, quietPolls, run.Queryable)
	a := Analyze(samples, opts.DB, ddocID)
	run.TasksObserved = a.TasksObserved
	run.Built, run.BuiltUncertainty, run.BuiltFrom = builtTime(samples, a, run.Queryable, opts.Replicas)
	run.CopiesObserved, run.ReindexTasks = a.CopiesObserved, a.ReindexTasks
	run.CompactionTasks, run.FailedPolls = a.CompactionTasks, a.FailedPolls
	run.PeakShardChangesPerSecond = a.PeakShardChangesPerSecond
	run.Series = a.Series
	run.ShardChanges, run.ShardChangesFrom = opts.Documents*int64(max(opts.Replicas, 1)), "documents x n"
	if a.TasksObserved && a.ShardChanges >= run.ShardChanges {
		run.ShardChanges, run.ShardChangesFrom = a.ShardChanges, "tasks"
	}
	run.DocsPerSecond = float64(opts.Documents) / run.Built.Seconds()
	run.QueryableDocsPerSecond = float64(opts.Documents) / run.Queryable.Seconds()
	run.ShardChangesPerSecond = float64(run.ShardChanges) / run.Built.Seconds()

	after := readNodes(ctx, c, nodes)
	run.MapDocs = mapDocGrowth(before, after)
	if err := checkNodesStayed(nodes, before, after); err != nil {
		return run, err
	}

	if err := Verify(ctx, c, opts.DB, ddocID, opts.Expected); err != nil {
		return run, err
	}
	return run, ctx.Err()
}

// builtTime says when the last shard copy was built, and to within how much.
func builtTime(samples []Sample, a Analysis, queryable time.Duration, replicas int) (built, uncertainty time.Duration, from string) {
	// A build task seen after the answer (a catch-up reindex) means the answer was not the
	// end after all: then the polls decide.
	if replicas <= 1 && (!a.TasksObserved || a.LastSeen < queryable) {
		return queryable, 0, BuiltFromViewResponse
	}
	// The last copy finished after the last poll that showed a task, and not before the
	// view answered; it had finished by the first poll after that which showed none.
	lo, hi := queryable, queryable
	if a.TasksObserved {
		lo, hi = max(a.LastSeen, queryable), max(a.BuildEnd, queryable)
	} else {
		for _, s := range samples {
			if s.Err == nil && s.At >= queryable {
				hi = s.At
				break
			}
		}
	}
	return (lo + hi) / 2, (hi - lo) / 2, BuiltFromActiveTasks
}

// nodeReading is what a build reads of one node before and after it.
type nodeReading struct {
	// mapDoc is the node's couchdb.mrview.map_doc counter, -1 when it could not be read.
	mapDoc int64
	// uptime is how long the node had been running, -1 when the server does not say (a
	// server that is not CouchDB) or did not answer (then err says why).
	uptime time.Duration
	err    error
	// sent and answered bound the moment the node measured its uptime.
	sent, answered time.Time
}

func readNodes(ctx context.Context, c *couch.Client, nodes []string) []nodeReading {
	out := make([]nodeReading, len(nodes))
	for i, n := range nodes {
		r := nodeReading{mapDoc: -1, uptime: -1, sent: time.Now()}
		if v, err := c.Counter(ctx, n, "couchdb", "mrview", "map_doc"); err == nil {
			r.mapDoc = v
		}
		if up, err := c.Uptime(ctx, n); err == nil {
			r.uptime = up
		} else {
			r.err = err
		}
		r.answered = time.Now()
		out[i] = r
	}
	return out
}

// mapDocGrowth is the growth of map_doc over all nodes, -1 when a node could not be read.
func mapDocGrowth(before, after []nodeReading) int64 {
	var total int64
	for i := range before {
		if before[i].mapDoc < 0 || after[i].mapDoc < 0 {
			return -1
		}
		total += after[i].mapDoc - before[i].mapDoc
	}
	return total
}

// ErrNodeInterrupted is returned (wrapped) when a node stopped answering or restarted
// during a build. On real Apache CouchDB 3.4.3 (3 nodes, q=2, n=3), with a node stopped
// mid-build and started again, the build still "succeeded" with a right view, but its
// numbers described no build: with node 3 stopped, the build was taken as done once the
// other nodes' copies were (4 of 6 copies seen, node 3's never finished); with node 1, the
// client's, stopped, the time included the outage and map_doc, which a restart resets,
// "grew" by 0.
var ErrNodeInterrupted = errors.New("a node stopped or restarted during the build, so its times and counts do not describe one build; run it again")

// firstLine keeps an error to its first line: a node that is starting can answer with a
// multi-line Erlang stack trace.
func firstLine(err error) string {
	msg, _, cut := strings.Cut(err.Error(), "\n")
	if cut {
		msg += " ..."
	}
	return msg
}

// uptimeSlack covers uptime's whole seconds (one at each reading) and clock drift.
const uptimeSlack = 2 * time.Second

// checkNodesStayed fails when a node that said how long it had been up before the build
// did not answer after it, or had been up for less time than passed between the two
// readings: it restarted.
func checkNodesStayed(nodes []string, before, after []nodeReading) error {
	for i, node := range nodes {
		b, a := before[i], after[i]
		if b.uptime < 0 {
			continue
		}
		if a.uptime < 0 {
			return fmt.Errorf("%w: node %s could not say how long it had been up after the build: %s", ErrNodeInterrupted, node, firstLine(a.err))
		}
		if passed := a.sent.Sub(b.answered); a.uptime+uptimeSlack < b.uptime+passed {
			return fmt.Errorf("%w: node %s restarted: it had been up %v when the build began and only %v when it ended, %v later",
				ErrNodeInterrupted, node, b.uptime, a.uptime, passed.Round(time.Second))
		}
	}
	return nil
}

// Verify reads the whole built view (group=true) and compares it with the expected sums.
// A wrong index fails the run with the months that differ.
func Verify(ctx context.Context, c *couch.Client, db, ddocID string, expected map[dataset.MonthKey]int64) error {
	rows, err := c.QueryView(ctx, db, ddocID, ddoc.ByMonth, url.Values{"group": {"true"}})
	if err != nil {
		return fmt.Errorf("reading the built view %s: %w", ddocID, err)
	}
	got := make(map[dataset.MonthKey]int64, len(rows))
	var problems []string
	for _, r := range rows {
		var key []string
		if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 2 {
			problems = append(problems, fmt.Sprintf("row key %s is not [year, month]", r.Key))
			continue
		}
		sum, err := strconv.ParseInt(strings.TrimSpace(string(r.Value)), 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("month %s-%s: value %s is not a whole number", key[0], key[1], r.Value))
			continue
		}
		got[dataset.MonthKey{Year: key[0], Month: key[1]}] = sum
	}
	for k, want := range expected {
		if have, ok := got[k]; !ok {
			problems = append(problems, fmt.Sprintf("month %s-%s missing (want %d)", k.Year, k.Month, want))
		} else if have != want {
			problems = append(problems, fmt.Sprintf("month %s-%s: %d, want %d", k.Year, k.Month, have, want))
		}
	}
	for k, have := range got {
		if _, ok := expected[k]; !ok {
			problems = append(problems, fmt.Sprintf("month %s-%s: unexpected row (%d)", k.Year, k.Month, have))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s: %s", ErrWrongIndex, ddocID, strings.Join(problems, "; "))
	}
	return nil
}

// ErrWrongIndex is returned (wrapped) when a built view's answer differs from the dataset.
var ErrWrongIndex = errors.New("the built view does not match the dataset")
