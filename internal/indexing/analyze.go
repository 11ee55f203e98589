package indexing

import (
	"slices"
	"strings"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/measured"
)

// Task types of /_active_tasks the analysis reads.
const (
	taskIndexer        = "indexer"
	taskViewCompaction = "view_compaction"
)

// Sample is one poll of /_active_tasks, At measured from the moment the build was
// triggered (negative before it). Err is set when the poll got no answer; such a sample
// says nothing about the tasks.
type Sample struct {
	At    time.Duration
	Tasks []couch.Task
	Err   error
}

// Analysis is what a series of samples says about one build: its progress curve.
//
// The samples tell neither the build's rate nor its end. Summing changes_done over the
// visible tasks under-reads: a shard copy's task vanishes when it finishes, before its last
// changes are ever shown. And a copy's task is its mapper's: it leaves /_active_tasks once
// the copy's documents are mapped, while the copy's writer can go on writing the index for
// seconds (couch_mrview_updater), so no task left is not every copy built.
type Analysis struct {
	// TasksObserved is false when no poll showed a build task for this design document
	// (a build shorter than the poll interval, or a server without indexer tasks).
	TasksObserved bool
	// CopiesObserved is the number of shard copies (node, shard) whose build task was seen.
	CopiesObserved int
	// ShardChanges is the sum over observed copies of their build task's total_changes:
	// the changes the cluster indexed, every copy counted once.
	ShardChanges int64
	// PeakShardChangesPerSecond is the highest rate between two consecutive polls, over the
	// build tasks visible in both: a lower bound of the true peak.
	PeakShardChangesPerSecond float64
	// ReindexTasks counts indexer tasks that appeared for a copy after its build task: on
	// CouchDB 3.x the view compactor's catch-up, which maps changes again.
	ReindexTasks int
	// CompactionTasks counts view_compaction tasks seen for this database.
	CompactionTasks int
	// FailedPolls counts polls that got no answer.
	FailedPolls int
	// Series is the curve: per poll, the changes indexed so far over all copies, a copy
	// whose task has vanished counted as complete.
	Series []measured.BuildPoint
}

// copyKey names a shard copy: one node's file of one shard range.
type copyKey struct{ node, database string }

type copyState struct {
	buildPID string
	total    int64
	done     int64
	live     bool
}

// Analyze reads the samples of a build on database db of the index of the design documents
// ddocIDs (one design document, or one and its twins: see Build). Samples must be in time
// order.
func Analyze(samples []Sample, db string, ddocIDs ...string) Analysis {
	ofBuild := func(t couch.Task) bool {
		return isShardOf(t.Database, db) && slices.Contains(ddocIDs, t.DesignDocument)
	}
	var a Analysis
	copies := map[copyKey]*copyState{}
	var order []copyKey
	// Erlang pids are unique per node only.
	reindexPIDs := map[copyKey]bool{}
	compactionPIDs := map[copyKey]bool{}
	var prev *Sample

	for i := range samples {
		s := &samples[i]
		if s.Err != nil {
			a.FailedPolls++
			continue
		}
		for _, st := range copies {
			st.live = false
		}
		live := 0
		for _, t := range s.Tasks {
			if !ofBuild(t) {
				continue
			}
			if t.Type == taskViewCompaction {
				compactionPIDs[copyKey{t.Node, t.PID}] = true
				continue
			}
			if t.Type != taskIndexer {
				continue
			}
			key := copyKey{t.Node, t.Database}
			st, seen := copies[key]
			if !seen {
				st = &copyState{buildPID: t.IndexerPID, total: t.TotalChanges}
				copies[key] = st
				order = append(order, key)
			}
			if t.IndexerPID != st.buildPID {
				reindexPIDs[copyKey{t.Node, t.IndexerPID}] = true
				continue
			}
			st.total = max(st.total, t.TotalChanges)
			st.done = max(st.done, t.ChangesDone)
			st.live = true
			live++
		}
		if prev != nil {
			a.PeakShardChangesPerSecond = max(a.PeakShardChangesPerSecond, rateBetween(*prev, *s, ofBuild, copies))
		}
		a.TasksObserved = a.TasksObserved || live > 0
		// A live copy counts what it has done, a finished one its total. CouchDB can report
		// changes_done one above total_changes at the very end; capping keeps the curve
		// from dipping when that task vanishes.
		var cumulative int64
		for _, k := range order {
			st := copies[k]
			if st.live {
				cumulative += min(st.done, st.total)
			} else {
				cumulative += st.total
			}
		}
		a.Series = append(a.Series, measured.BuildPoint{AtMs: s.At.Milliseconds(), ChangesDone: cumulative, LiveTasks: live})
		prev = s
	}
	a.CopiesObserved = len(order)
	for _, k := range order {
		a.ShardChanges += copies[k].total
	}
	a.ReindexTasks = len(reindexPIDs)
	a.CompactionTasks = len(compactionPIDs)
	return a
}

// rateBetween sums, over build tasks visible in both polls, the changes done between them
// per second.
func rateBetween(prev, cur Sample, ofBuild func(couch.Task) bool, copies map[copyKey]*copyState) float64 {
	dt := (cur.At - prev.At).Seconds()
	if dt <= 0 {
		return 0
	}
	before := map[copyKey]int64{}
	for _, t := range prev.Tasks {
		if st, ok := copies[copyKey{t.Node, t.Database}]; ok && t.Type == taskIndexer && ofBuild(t) && t.IndexerPID == st.buildPID {
			before[copyKey{t.Node, t.Database}] = t.ChangesDone
		}
	}
	var delta int64
	for _, t := range cur.Tasks {
		key := copyKey{t.Node, t.Database}
		if done, ok := before[key]; ok && t.Type == taskIndexer && ofBuild(t) && t.IndexerPID == copies[key].buildPID {
			delta += t.ChangesDone - done
		}
	}
	return float64(delta) / dt
}

// isShardOf tells whether a task's database field is a shard of db: CouchDB 2+ names shard
// files "shards/<range>/<db>.<creation time>"; a server without shards names the database.
func isShardOf(database, db string) bool {
	if database == db {
		return true
	}
	rest, ok := strings.CutPrefix(database, "shards/")
	if !ok {
		return false
	}
	_, file, ok := strings.Cut(rest, "/")
	if !ok {
		return false
	}
	dot := strings.LastIndexByte(file, '.')
	return dot > 0 && file[:dot] == db
}
