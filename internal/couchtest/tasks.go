package couchtest

import (
	"net/http"
	"strings"
)

// activeTasks is GET /_active_tasks: [] (01_get_active_tasks_idle). This server builds an
// index at once, so it never has a task to show; the recorded series (LoadSeries) are for
// the tests of what a client makes of them.
func (s *Server) activeTasks() reply {
	return jsonReply(http.StatusOK, []object{})
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
