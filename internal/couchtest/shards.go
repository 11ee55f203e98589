package couchtest

import (
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Shards. This server keeps one logical copy of each database, but answers about its shard
// copies as CouchDB 3.4.3 does: the shard map (GET /_node/{node}/_dbs/{db}), and a copy's own
// design documents, index info and views on its node (GET /_node/{node}/shards%2F<range>%2F
// <db>.<created>/...), where a copy holds the design documents whose id hashes into its
// range (CRC-32, as CouchDB places documents) and none of the others. The answers' shapes are
// from the kit's CouchDB 3.4.3 (2026-11-24), not recordings.

// ranges are a database's q shard ranges, as CouchDB cuts the 32-bit hash space: equal
// parts, the last one ending at ffffffff.
func (db *database) ranges() []string {
	out := make([]string, db.q)
	size := (uint64(1) << 32) / uint64(db.q)
	for i := range db.q {
		lo, hi := uint64(i)*size, uint64(i+1)*size-1
		if i == db.q-1 {
			hi = 1<<32 - 1
		}
		out[i] = fmt.Sprintf("%08x-%08x", lo, hi)
	}
	return out
}

// inRange tells whether a document id hashes into a range "<hex>-<hex>".
func inRange(id, r string) bool {
	lo, hi, _ := strings.Cut(r, "-")
	l, _ := strconv.ParseUint(lo, 16, 32)
	h, _ := strconv.ParseUint(hi, 16, 32)
	c := uint64(crc32.ChecksumIEEE([]byte(id)))
	return l <= c && c <= h
}

// holders are the nodes that hold a copy of every range: the first n by name.
func (s *Server) holders(db *database) []string {
	nodes := slices.Sorted(slices.Values(s.cfg.nodes))
	return nodes[:min(db.n, len(nodes))]
}

// shardMap answers GET /_node/{node}/_dbs/{db}: the database's entry in the shard map, with
// the members a client reads (CouchDB's also has _rev, changelog and props).
func (s *Server) shardMap(dbName string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.dbs[dbName]
	if !ok {
		return errDocMissing
	}
	suffix := []rune("." + strconv.FormatInt(db.created, 10))
	byRange := map[string][]string{}
	byNode := map[string][]string{}
	for _, r := range db.ranges() {
		for _, node := range s.holders(db) {
			byRange[r] = append(byRange[r], node)
			byNode[node] = append(byNode[node], r)
		}
	}
	codes := make([]int, len(suffix))
	for i, c := range suffix {
		codes[i] = int(c)
	}
	return jsonReply(http.StatusOK, struct {
		ID          string              `json:"_id"`
		ShardSuffix []int               `json:"shard_suffix"`
		ByNode      map[string][]string `json:"by_node"`
		ByRange     map[string][]string `json:"by_range"`
	}{dbName, codes, byNode, byRange})
}

// copyOf finds the database and range of a shard copy's name on a node.
func (s *Server) copyOf(node, shard string) (*database, string, bool) {
	rest, ok := strings.CutPrefix(shard, "shards/")
	r, file, ok2 := strings.Cut(rest, "/")
	dot := strings.LastIndexByte(file, '.')
	if !ok || !ok2 || dot < 0 {
		return nil, "", false
	}
	db, ok := s.dbs[file[:dot]]
	if !ok || strconv.FormatInt(db.created, 10) != file[dot+1:] || !slices.Contains(db.ranges(), r) || !slices.Contains(s.holders(db), node) {
		return nil, "", false
	}
	return db, r, true
}

// copyInfo is a copy's GET .../_design/{ddoc}/_info, in the order the kit's CouchDB
// answers. update_seq is the logical database's, not the copy's.
type copyInfo struct {
	Signature        string   `json:"signature"`
	Language         string   `json:"language"`
	Sizes            sizes    `json:"sizes"`
	UpdateSeq        int64    `json:"update_seq"`
	PurgeSeq         int      `json:"purge_seq"`
	UpdateOptions    []string `json:"update_options"`
	CollatorVersions []string `json:"collator_versions"`
	UpdaterRunning   bool     `json:"updater_running"`
	CompactRunning   bool     `json:"compact_running"`
	WaitingCommit    bool     `json:"waiting_commit"`
	WaitingClients   int      `json:"waiting_clients"`
	PendingUpdates   int64    `json:"pending_updates"`
}

// copyRequest answers a request to one shard copy on its node: a design document's _info,
// or a view query that waits for the index and sends no rows (reduce=false&limit=0, the
// only one this server takes here). The index is the database's, built at once.
func (s *Server) copyRequest(r *http.Request, method, node, shard string, rest []string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, r0, ok := s.copyOf(node, shard)
	if !ok {
		return errDBMissing
	}
	if len(rest) < 3 || rest[0] != "_design" {
		return errDocMissing
	}
	ddocID := "_design/" + rest[1]
	if !inRange(ddocID, r0) {
		return errDocMissing // another range's copy holds it
	}
	_, dd, rep, ok := s.lookupDesign(db.name, ddocID)
	if !ok {
		return rep
	}
	if method != http.MethodGet {
		return methodNotAllowed("GET")
	}
	switch {
	case len(rest) == 3 && rest[2] == "_info":
		info := copyInfo{Signature: signature(db.docs[ddocID], dd), Language: dd.language, UpdateOptions: []string{},
			CollatorVersions: []string{"153.120"}}
		info.UpdateSeq, info.Sizes = db.current(ddocID, dd).state()
		info.PendingUpdates = db.seq - info.UpdateSeq
		return jsonReply(http.StatusOK, struct {
			Name      string   `json:"name"`
			ViewIndex copyInfo `json:"view_index"`
		}{rest[1], info})
	case len(rest) == 4 && rest[2] == "_view":
		if _, ok := dd.views[rest[3]]; !ok {
			return errorReply(http.StatusNotFound, "not_found", "missing_named_view")
		}
		if q := r.URL.Query(); q.Get("reduce") != "false" || q.Get("limit") != "0" || len(q) != 2 {
			return errorReply(http.StatusBadRequest, "couchtest_unsupported_query",
				"couchtest is not CouchDB: a view query on a shard copy takes reduce=false&limit=0 only")
		}
		idx := s.refresh(db, ddocID, dd)
		rows := 0
		for id, emitted := range idx.rows[rest[3]] {
			if inRange(id, r0) {
				rows += len(emitted)
			}
		}
		return streamed(fmt.Sprintf(`{"total_rows":%d,"offset":0,"rows":[`, rows), nil)
	}
	return errDocMissing
}
