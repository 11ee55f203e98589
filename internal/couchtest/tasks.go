package couchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// Indexing replay. This server builds an index at once and could only make up the progress
// of a build, so with WithIndexSeries it replays a recorded one instead: the first view
// request that builds an index (update=true, index never built) starts the recorded series
// on the clock, speedup times faster. At real elapsed time e after that request arrived,
// GET /_active_tasks answers the last sample recorded at or before
// view_request.t_start_rel_ms + e*speedup, with the shard names rewritten to the actual
// database ("shards/<recorded range>/<db>.<its creation time>"), the design document to the
// actual one, and the recorded node names, sorted, to WithNodes' names in their order
// (node1@127.0.0.11 to the first, ...); started_on and updated_on stay the recording's unix
// seconds. Before the replay and after the last sample it answers [].
//
// The request that started it answers after the recorded elapsed time / speedup with the
// recorded status: 200 with the view's rows, or, for the 200k-document cluster series,
// the recorded 500 timeout. Other update=true requests on that index wait until the
// recorded answer if it was a 200, or else until the recorded indexer tasks were gone
// (CouchDB went on building after its timeout), and then answer 200; once that time has
// passed they answer at once. One series is replayed once per server, by the first build.
type replay struct {
	series      Series
	speedup     float64
	bodies      [][]object // the samples' tasks, parsed
	answerAfter time.Duration
	readyAfter  time.Duration
	status      int
	nodes       map[string]string // recorded node -> this server's node

	started bool
	t0      time.Time
	db      string
	created int64
	ddoc    string
}

func newReplay(name string, speedup float64, nodes []string) (*replay, error) {
	if speedup <= 0 {
		return nil, fmt.Errorf("WithIndexSeries(%q, %v): speedup must be positive", name, speedup)
	}
	series, err := LoadSeries(name)
	if err != nil {
		return nil, err
	}
	rp := &replay{series: series, speedup: speedup, status: series.ViewRequest.Status, nodes: map[string]string{}}
	var recorded []string
	lastBusy := -1
	for i, sample := range series.Samples {
		var tasks []object
		if err := json.Unmarshal(sample.Body, &tasks); err != nil {
			return nil, fmt.Errorf("series %s, sample %d: %w", name, i, err)
		}
		rp.bodies = append(rp.bodies, tasks)
		if len(tasks) > 0 {
			lastBusy = i
		}
		for _, task := range tasks {
			if node, ok := task.str("node"); ok && !slices.Contains(recorded, node) {
				recorded = append(recorded, node)
			}
		}
	}
	if len(recorded) > len(nodes) {
		return nil, fmt.Errorf("series %s was recorded on %d nodes (%s); give WithNodes at least as many names",
			name, len(recorded), strings.Join(recorded, ", "))
	}
	slices.Sort(recorded)
	for i, node := range recorded {
		rp.nodes[node] = nodes[i]
	}
	vr := series.ViewRequest
	rp.answerAfter = rp.scale(time.Duration(vr.ElapsedS * float64(time.Second)))
	rp.readyAfter = rp.answerAfter
	if rp.status != http.StatusOK && lastBusy+1 < len(series.Samples) {
		rp.readyAfter = rp.scale(time.Duration(series.Samples[lastBusy+1].TRelMs-vr.StartRelMs) * time.Millisecond)
	}
	return rp, nil
}

func (rp *replay) scale(recorded time.Duration) time.Duration {
	return time.Duration(float64(recorded) / rp.speedup)
}

// gate is how long a view request with update=true must wait, and the status it then
// answers; built says whether the index was built before.
func (rp *replay) gate(db *database, ddocID string, built bool) (time.Duration, int) {
	if rp == nil {
		return 0, http.StatusOK
	}
	now := time.Now()
	if !rp.started {
		if built {
			return 0, http.StatusOK
		}
		rp.started, rp.t0 = true, now
		rp.db, rp.created, rp.ddoc = db.name, db.created, ddocID
		return rp.answerAfter, rp.status
	}
	if rp.db == db.name && rp.ddoc == ddocID {
		return max(0, rp.t0.Add(rp.readyAfter).Sub(now)), http.StatusOK
	}
	return 0, http.StatusOK
}

// building says whether the replayed build of that index has not finished yet.
func (rp *replay) building(db, ddocID string) bool {
	return rp != nil && rp.started && rp.db == db && rp.ddoc == ddocID && time.Since(rp.t0) < rp.readyAfter
}

// tasks is the /_active_tasks body now.
func (rp *replay) tasks() []object {
	if rp == nil || !rp.started {
		return nil
	}
	samples := rp.series.Samples
	at := rp.series.ViewRequest.StartRelMs + int64(float64(time.Since(rp.t0))/float64(time.Millisecond)*rp.speedup)
	if at > samples[len(samples)-1].TRelMs {
		return nil
	}
	i := sort.Search(len(samples), func(i int) bool { return samples[i].TRelMs > at }) - 1
	if i < 0 {
		return nil
	}
	out := make([]object, 0, len(rp.bodies[i]))
	for _, task := range rp.bodies[i] {
		if shard, ok := task.str("database"); ok {
			task = task.with("database", rawJSON(rp.shardName(shard)))
		}
		if _, ok := task.get("design_document"); ok {
			task = task.with("design_document", rawJSON(rp.ddoc))
		}
		if node, ok := task.str("node"); ok {
			task = task.with("node", rawJSON(rp.nodes[node]))
		}
		out = append(out, task)
	}
	return out
}

// shardName keeps the recorded range of "shards/<range>/<db>.<created>" and puts in the
// actual database.
func (rp *replay) shardName(recorded string) string {
	parts := strings.SplitN(recorded, "/", 3)
	if len(parts) != 3 || parts[0] != "shards" {
		return recorded
	}
	return fmt.Sprintf("shards/%s/%s.%d", parts[1], rp.db, rp.created)
}

// activeTasks is GET /_active_tasks: [] (01_get_active_tasks_idle) unless a build is replayed.
func (s *Server) activeTasks() reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	tasks := s.replay.tasks()
	if tasks == nil {
		tasks = []object{}
	}
	return jsonReply(http.StatusOK, tasks)
}

// nodeStats are the couchdb.mrview counters of one node.
type nodeStats struct {
	mapDoc, emits int64
}

type statLeaf struct {
	Value int64  `json:"value"`
	Type  string `json:"type"`
	Desc  string `json:"desc"`
}

// The mrview counters' descriptions, as recorded (05_javascript_stats_mrview_after).
const (
	mapDocDesc = "number of documents mapped in the view server"
	emitsDesc  = "number of invocations of `emit' in map functions in the view server"
)

// mrviewStats answers /_node/{node}/_stats/couchdb/mrview[/map_doc|/emits]; other
// statistics are not kept.
func (s *Server) mrviewStats(node string, path []string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[node]
	mapDoc := statLeaf{st.mapDoc, "counter", mapDocDesc}
	emits := statLeaf{st.emits, "counter", emitsDesc}
	switch strings.Join(path, "/") {
	case "couchdb/mrview":
		return jsonReply(http.StatusOK, struct {
			MapDoc statLeaf `json:"map_doc"`
			Emits  statLeaf `json:"emits"`
		}{mapDoc, emits})
	case "couchdb/mrview/map_doc":
		return jsonReply(http.StatusOK, mapDoc)
	case "couchdb/mrview/emits":
		return jsonReply(http.StatusOK, emits)
	}
	return errDocMissing
}

// MapDocCount is node's couchdb.mrview.map_doc counter ("_local": the first node).
func (s *Server) MapDocCount(node string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stats[s.nodeName(node)]; ok {
		return st.mapDoc
	}
	return 0
}
