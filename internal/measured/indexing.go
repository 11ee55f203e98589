package measured

import "time"

// IndexBuild is the measurement of one view build (indexing.Build).
type IndexBuild struct {
	// StartedAt is when the build was triggered: the order of the builds, which arms and
	// reducers alternate so that drift spreads over all of them.
	StartedAt time.Time `json:"startedAt,omitzero"`
	DesignDoc string    `json:"designDoc"`
	Documents int64     `json:"documents"`
	// Built is the time from the first shard copy's index update starting to the last
	// one's finishing, the middle of what the copies' answers bound it to; it lies within
	// BuiltUncertainty of the true span. BuiltFrom says how it was taken.
	Built            time.Duration `json:"builtNs"`
	BuiltUncertainty time.Duration `json:"builtUncertaintyNs"`
	BuiltFrom        string        `json:"builtFrom"`
	// Queryable is when every shard range had a written copy, which a view request to the
	// cluster needs before it can answer.
	Queryable time.Duration `json:"queryableNs"`
	// Copies is every shard copy's build, in the order of the shard map.
	Copies []CopyBuild `json:"copies,omitempty"`
	// DocsPerSecond is documents / Built; QueryableDocsPerSecond documents / Queryable.
	DocsPerSecond          float64 `json:"docsPerSecond"`
	QueryableDocsPerSecond float64 `json:"queryableDocsPerSecond"`
	// ShardChanges counts changes over all shard copies (from the tasks when every copy was
	// seen, else documents x n); ShardChangesPerSecond is that over Built.
	ShardChanges              int64   `json:"shardChanges"`
	ShardChangesFrom          string  `json:"shardChangesFrom"`
	ShardChangesPerSecond     float64 `json:"shardChangesPerSecond"`
	PeakShardChangesPerSecond float64 `json:"peakShardChangesPerSecond"`
	// TasksObserved and CopiesObserved say what the /_active_tasks polls saw.
	TasksObserved   bool `json:"tasksObserved"`
	CopiesObserved  int  `json:"copiesObserved"`
	ReindexTasks    int  `json:"reindexTasks"`
	CompactionTasks int  `json:"compactionTasks"`
	FailedPolls     int  `json:"failedPolls"`
	// MapDocs is the growth of couchdb.mrview.map_doc over all nodes during the build, -1
	// when a node's statistics could not be read; MapDocsExpected is documents x n, what a
	// build that maps every document once on every copy does.
	MapDocs         int64 `json:"mapDocs"`
	MapDocsExpected int64 `json:"mapDocsExpected"`
	// CPUSeconds is the CPU time the arm's CouchDB (its cgroup: Erlang and its query-server
	// processes) spent from just before the copies were asked to the last copy's answer,
	// when the run reads it (--arm-pid, --arm-pods); 0: not measured.
	CPUSeconds float64      `json:"cpuSeconds,omitempty"`
	Series     []BuildPoint `json:"series"`
}

// CopyBuild is one shard copy's part of a build.
type CopyBuild struct {
	Node  string `json:"node"`
	Range string `json:"range"`
	// Written is when the copy's waiting view request was answered, from the moment the
	// first copy was asked: its index was written by then.
	Written time.Duration `json:"writtenNs"`
}

// BuildPoint is one poll of a build's progress curve (indexing.Analyze).
type BuildPoint struct {
	AtMs        int64 `json:"atMs"`
	ChangesDone int64 `json:"changesDone"`
	LiveTasks   int   `json:"liveTasks"`
}
