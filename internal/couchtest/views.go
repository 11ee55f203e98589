package couchtest

import (
	"bytes"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This server cannot run JavaScript, Python or Erlang, so it evaluates a view by its NAME,
// whatever code and language the design document holds. It knows the views couchbench
// defines (internal/ddoc):
//
//	by_month   emit([YYYY, MM], doc.score) for docs with metadata.createdAt "YYYY-MM-DD"
//	emit_doc   emit(doc._id, doc)
//	emit_null  emit(doc._id, null)
//	user_doc   emit(doc.username, doc)
//	user_null  emit(doc.username, null)
//	runtime    the probe: emit("couchtest", {}), for this server runs no view code at all
//
// A query on any other view name fails with 500. A view's reduce, builtin _sum or custom
// code, sums the values; _count counts the rows; other builtin reduces fail with 500.
var knownViews = map[string]func(id string, doc *document) []emitted{
	"by_month":  emitByMonth,
	"emit_doc":  func(id string, doc *document) []emitted { return []emitted{{rawJSON(id), marshal(doc.json(id))}} },
	"emit_null": func(id string, _ *document) []emitted { return []emitted{{rawJSON(id), json.RawMessage("null")}} },
	"user_doc":  func(id string, doc *document) []emitted { return []emitted{{usernameOf(doc), marshal(doc.json(id))}} },
	"user_null": func(_ string, doc *document) []emitted { return []emitted{{usernameOf(doc), json.RawMessage("null")}} },
	"runtime":   func(string, *document) []emitted { return []emitted{{rawJSON("couchtest"), json.RawMessage("{}")}} },
}

type emitted struct{ key, value json.RawMessage }

// usernameOf is doc.username as a key, null when the document has none.
func usernameOf(doc *document) json.RawMessage {
	if v, ok := doc.body.get("username"); ok {
		return v
	}
	return json.RawMessage("null")
}

// emitByMonth mirrors the seed's JavaScript map: skip docs without a truthy createdAt; a
// createdAt that is not a string throws in JavaScript, so the doc is skipped too; a missing
// month or score serialises as null.
func emitByMonth(_ string, doc *document) []emitted {
	metaRaw, ok := doc.body.get("metadata")
	if !ok {
		return nil
	}
	meta, err := parseObject(metaRaw)
	if err != nil {
		return nil
	}
	created, ok := meta.str("createdAt")
	if !ok || created == "" {
		return nil
	}
	parts := strings.Split(created, "-")
	key := []any{parts[0], nil}
	if len(parts) > 1 {
		key[1] = parts[1]
	}
	score, ok := doc.body.get("score")
	if !ok {
		score = json.RawMessage("null")
	}
	return []emitted{{marshal(key), score}}
}

// designDoc is what this server reads from a design document.
type designDoc struct {
	language string
	views    map[string]string // view name -> reduce ("" for map-only)
}

// builtinReduces are CouchDB's builtin reduce names; another "_" name is refused on write
// (04_ddoc_js_unknown_builtin_reduce_put). The code of map and custom reduce functions is not
// compiled, so syntax errors that CouchDB refuses on write are accepted here.
var builtinReduces = map[string]bool{sumReduce: true, countReduce: true, "_stats": true, "_approx_count_distinct": true}

// The builtin reduces this server computes.
const (
	sumReduce   = "_sum"
	countReduce = "_count"
)

const invalidDesignDoc = "invalid_design_doc"

// The values of the update query parameter.
const (
	updateTrue  = jsonTrue
	updateFalse = jsonFalse
	updateLazy  = "lazy"
)

// parseDesign reads the views of a design document; the error is CouchDB's answer to an
// invalid one.
func parseDesign(doc object) (designDoc, *errorBody) {
	dd := designDoc{language: "javascript", views: map[string]string{}}
	if lang, ok := doc.str("language"); ok {
		dd.language = lang
	}
	raw, ok := doc.get("views")
	if !ok {
		return dd, nil
	}
	views, err := parseObject(raw)
	if err != nil {
		return dd, &errorBody{invalidDesignDoc, "`views` is not an object"}
	}
	for _, m := range views {
		view, err := parseObject(m.value)
		if err != nil {
			return dd, &errorBody{invalidDesignDoc, "View " + m.key + " must be an object"}
		}
		reduce, _ := view.str("reduce")
		if strings.HasPrefix(reduce, "_") && !builtinReduces[reduce] {
			return dd, &errorBody{invalidDesignDoc, "`" + reduce + "` is not a supported reduce function."}
		}
		dd.views[m.key] = reduce
	}
	return dd, nil
}

// index is the built views of a design document: the rows each document emitted, as of
// db.seq == seq. As in CouchDB, it belongs to the views' signature, not to the design
// document: design documents with the same language and views share it, and a new revision
// with other views starts another.
type index struct {
	seq  int64
	rows map[string]map[string][]emitted // view -> doc id -> rows
}

// signature is the index's name: a hash of the language and views, not CouchDB's own.
func signature(doc *document, dd designDoc) string {
	views, _ := doc.body.get("views")
	return fmt.Sprintf("%x", md5.Sum(append([]byte(dd.language), views...)))
}

// current is the index of the design document's views, if it was ever built.
func (db *database) current(ddocID string, dd designDoc) *index {
	return db.indexes[signature(db.docs[ddocID], dd)]
}

// refresh brings an index up to the database, mapping each changed document once for all
// views, as CouchDB's indexer does, and counts the work in every node's mrview stats: each
// node holds a copy of every shard in the setups this server stands for (one node, or three
// with n=3), and this server keeps one copy of the index for all of them.
func (s *Server) refresh(db *database, ddocID string, dd designDoc) *index {
	idx := db.current(ddocID, dd)
	if idx == nil {
		idx = &index{rows: map[string]map[string][]emitted{}}
		db.indexes[signature(db.docs[ddocID], dd)] = idx
	}
	var mapped, emits int64
	for id, doc := range db.docs {
		if doc.seq <= idx.seq {
			continue
		}
		for name := range dd.views {
			if idx.rows[name] == nil {
				idx.rows[name] = map[string][]emitted{}
			}
			delete(idx.rows[name], id)
		}
		if doc.deleted || isDesign(id) {
			continue
		}
		mapped++
		for name := range dd.views {
			if fn, ok := knownViews[name]; ok {
				out := fn(id, doc)
				emits += int64(len(out))
				idx.rows[name][id] = out
			}
		}
	}
	idx.seq = db.seq
	for _, st := range s.stats {
		st.mapDoc += mapped
		st.emits += emits
	}
	return idx
}

func (s *Server) designRequest(r *http.Request, method, db, ddocID string, rest []string) reply {
	switch {
	case len(rest) == 0:
		return s.docRequest(r, method, db, ddocID)
	case len(rest) == 1 && rest[0] == "_info":
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.viewInfo(db, ddocID)
	case len(rest) == 2 && rest[0] == "_view":
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.queryView(r, db, ddocID, rest[1])
	}
	return errDocMissing
}

// lookupDesign finds a live design document; the reply is the recorded 404.
func (s *Server) lookupDesign(dbName, ddocID string) (*database, designDoc, reply, bool) {
	db, ok := s.dbs[dbName]
	if !ok {
		return nil, designDoc{}, errDBMissing, false
	}
	doc, ok := db.docs[ddocID]
	if !ok || doc.deleted {
		return nil, designDoc{}, errDocMissing, false // 04_view_missing_ddoc_404
	}
	dd, _ := parseDesign(doc.body) // checked when written
	return db, dd, reply{}, true
}

type viewInfoBody struct {
	Name      string        `json:"name"`
	ViewIndex viewIndexInfo `json:"view_index"`
}

// viewIndexInfo has the members of 04_view_info_after_build in its order. The signature is
// a hash of the views but not CouchDB's; sizes are the bytes of the emitted rows' JSON.
type viewIndexInfo struct {
	UpdatesPending struct {
		Minimum   int64 `json:"minimum"`
		Preferred int64 `json:"preferred"`
		Total     int64 `json:"total"`
	} `json:"updates_pending"`
	WaitingCommit    bool     `json:"waiting_commit"`
	WaitingClients   int      `json:"waiting_clients"`
	UpdaterRunning   bool     `json:"updater_running"`
	UpdateSeq        int64    `json:"update_seq"`
	Sizes            sizes    `json:"sizes"`
	Signature        string   `json:"signature"`
	PurgeSeq         int      `json:"purge_seq"`
	Language         string   `json:"language"`
	CompactRunning   bool     `json:"compact_running"`
	CollatorVersions []string `json:"collator_versions"`
}

func (s *Server) viewInfo(dbName, ddocID string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, dd, rep, ok := s.lookupDesign(dbName, ddocID)
	if !ok {
		return rep
	}
	info := viewIndexInfo{
		Signature:        signature(db.docs[ddocID], dd),
		Language:         dd.language,
		CollatorVersions: []string{"153.120"},
	}
	info.UpdateSeq, info.Sizes = db.current(ddocID, dd).state()
	pending := db.seq - info.UpdateSeq
	info.UpdatesPending.Minimum, info.UpdatesPending.Preferred, info.UpdatesPending.Total = pending, pending, pending
	return jsonReply(http.StatusOK, viewInfoBody{Name: strings.TrimPrefix(ddocID, "_design/"), ViewIndex: info})
}

// state is the index's update_seq and sizes (the bytes of the emitted rows' JSON); zero for
// an index never built.
func (idx *index) state() (int64, sizes) {
	if idx == nil {
		return 0, sizes{}
	}
	var n int64
	for _, byDoc := range idx.rows {
		for _, rows := range byDoc {
			for _, e := range rows {
				n += int64(len(e.key) + len(e.value))
			}
		}
	}
	return idx.seq, sizes{File: n, External: n, Active: n}
}

// viewQuery is the part of CouchDB's view query parameters this server understands; others
// are ignored, as CouchDB ignores unknown ones.
type viewQuery struct {
	reduce       bool // checkView settles it when not given
	reduceGiven  bool
	group        bool
	groupLevel   int // -1: not given
	limit        int // -1: none
	skip         int
	includeDocs  bool
	descending   bool
	inclusiveEnd bool
	start, end   any
	hasStart     bool
	hasEnd       bool
	update       string
}

// keyParam is the key query parameter, a startkey and endkey in one.
const keyParam = "key"

func queryParseError(reason string) reply {
	return errorReply(http.StatusBadRequest, "query_parse_error", reason)
}

// parseViewQuery reads the parameters with CouchDB 3.4.3's error texts (couch_mrview_http).
func parseViewQuery(v url.Values) (viewQuery, reply, bool) {
	q := viewQuery{groupLevel: -1, limit: -1, inclusiveEnd: true, update: updateTrue}
	// Both helpers answer CouchDB's reason for a bad value, "" for a good one.
	boolean := func(name string, dst *bool) string {
		switch strings.ToLower(v.Get(name)) {
		case "":
		case jsonTrue:
			*dst = true
		case jsonFalse:
			*dst = false
		default:
			return fmt.Sprintf("Invalid boolean parameter: %q", v.Get(name))
		}
		return ""
	}
	count := func(name string, dst *int) string {
		if v.Get(name) == "" {
			return ""
		}
		n, err := strconv.Atoi(v.Get(name))
		if err != nil || n < 0 {
			return fmt.Sprintf("Invalid value for positive integer: %q", v.Get(name))
		}
		*dst = n
		return ""
	}
	q.reduceGiven = v.Get("reduce") != ""
	for _, reason := range []string{
		boolean("reduce", &q.reduce), boolean("group", &q.group), boolean("include_docs", &q.includeDocs), boolean("descending", &q.descending),
		boolean("inclusive_end", &q.inclusiveEnd), count("group_level", &q.groupLevel), count("limit", &q.limit), count("skip", &q.skip),
	} {
		if reason != "" {
			return q, queryParseError(reason), false
		}
	}
	if u := v.Get("update"); u != "" {
		if u != updateTrue && u != updateFalse && u != updateLazy {
			return q, queryParseError("Invalid value for `update`."), false
		}
		q.update = u
	}
	for _, k := range []struct {
		names []string
		dst   *any
		has   *bool
	}{
		{[]string{keyParam}, &q.start, &q.hasStart},
		{[]string{"startkey", "start_key"}, &q.start, &q.hasStart},
		{[]string{"endkey", "end_key"}, &q.end, &q.hasEnd},
	} {
		for _, name := range k.names {
			if !v.Has(name) {
				continue
			}
			val, err := decodeValue([]byte(v.Get(name)))
			if err != nil {
				return q, errBadJSON, false
			}
			*k.dst, *k.has = val, true
		}
	}
	if v.Has(keyParam) {
		q.end, q.hasEnd = q.start, true
	}
	return q, reply{}, true
}

// queryView answers GET /{db}/_design/{ddoc}/_view/{view}. A query with update=true on an
// index that is not up to date builds it first (blocking, as in CouchDB, but at once);
// update=false answers from the index as it is, update=lazy too and then brings it up to
// date.
func (s *Server) queryView(r *http.Request, dbName, ddocID, view string) reply {
	q, rep, ok := parseViewQuery(r.URL.Query())
	if !ok {
		return rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rep, ok := s.checkView(dbName, ddocID, view, &q); !ok {
		return rep
	}
	db, dd, _, _ := s.lookupDesign(dbName, ddocID)
	idx := db.current(ddocID, dd)
	upToDate := idx != nil && idx.seq == db.seq
	if q.update == updateTrue && !upToDate {
		idx = s.refresh(db, ddocID, dd)
	}
	if idx == nil {
		idx = &index{}
	}
	rep = viewAnswer(db, idx, view, dd.views[view], q)
	if q.update == updateLazy && !upToDate {
		s.refresh(db, ddocID, dd)
	}
	return rep
}

// checkView validates the request against the design document; it settles q.reduce.
func (s *Server) checkView(dbName, ddocID, view string, q *viewQuery) (reply, bool) {
	_, dd, rep, ok := s.lookupDesign(dbName, ddocID)
	if !ok {
		return rep, false
	}
	reduce, ok := dd.views[view]
	if !ok {
		return errorReply(http.StatusNotFound, "not_found", "missing_named_view"), false // 04_view_missing_view_404
	}
	if _, known := knownViews[view]; !known {
		return errorReply(http.StatusInternalServerError, "couchtest_unknown_view", fmt.Sprintf(
			"couchtest is not CouchDB and cannot run view code: it evaluates views by name and knows only by_month, emit_doc, "+
				"emit_null, user_doc, user_null and runtime, not %q", view)), false
	}
	if reduce != "" && reduce != sumReduce && reduce != countReduce && strings.HasPrefix(reduce, "_") {
		return errorReply(http.StatusInternalServerError, "couchtest_unknown_reduce",
			"couchtest is not CouchDB: of the builtin reduces it knows only _sum and _count, not "+reduce), false
	}
	if !q.reduceGiven {
		q.reduce = reduce != ""
	}
	if reduce == "" && q.reduce {
		return queryParseError("Reduce is invalid for map-only views."), false
	}
	if q.reduce && q.includeDocs {
		return queryParseError("`include_docs` is invalid for reduce"), false // 04_view_include_docs_on_reduce_400
	}
	return reply{}, true
}

type viewRow struct {
	id       string
	key      any
	emitted  emitted
	docIndex int
}

// viewAnswer computes the answer as CouchDB streams it (04_view_*, body_raw): rows one per
// "\r\n"-separated line, map answers with total_rows and offset, reduce answers rows only.
func viewAnswer(db *database, idx *index, view, reduce string, q viewQuery) reply {
	var rows []viewRow
	for id, out := range idx.rows[view] {
		for i, e := range out {
			key, _ := decodeValue(e.key)
			rows = append(rows, viewRow{id: id, key: key, emitted: e, docIndex: i})
		}
	}
	slices.SortFunc(rows, func(a, b viewRow) int {
		if c := collate(a.key, b.key); c != 0 {
			return c
		}
		if c := compareStrings(a.id, b.id); c != 0 {
			return c
		}
		return a.docIndex - b.docIndex
	})
	if q.descending {
		slices.Reverse(rows)
	}
	first, last := keyRange(rows, q)
	if q.reduce {
		return streamed(`{"rows":[`, page(reduceRows(rows[first:last], reduce, q), q))
	}
	var lines [][]byte
	for _, row := range page(rows[first:last], q) {
		line := object{{"id", rawJSON(row.id)}, {"key", row.emitted.key}, {"value", row.emitted.value}}
		if q.includeDocs {
			doc := json.RawMessage("null") // deleted since a stale index was built
			if d := db.docs[row.id]; !d.deleted {
				doc = marshal(d.json(row.id))
			}
			line = append(line, member{"doc", doc})
		}
		lines = append(lines, marshal(line))
	}
	offset := min(first+q.skip, last)
	return streamed(fmt.Sprintf(`{"total_rows":%d,"offset":%d,"rows":[`, len(rows), offset), lines)
}

// keyRange is the run of sorted rows within startkey/endkey.
func keyRange(rows []viewRow, q viewQuery) (int, int) {
	dir := 1
	if q.descending {
		dir = -1
	}
	first, last := 0, len(rows)
	if q.hasStart {
		first, _ = slices.BinarySearchFunc(rows, q.start, func(r viewRow, k any) int { return dir * collate(r.key, k) })
	}
	if q.hasEnd {
		last, _ = slices.BinarySearchFunc(rows, q.end, func(r viewRow, k any) int {
			c := dir * collate(r.key, k)
			if c == 0 && q.inclusiveEnd {
				return -1
			}
			return c
		})
	}
	return first, max(first, last)
}

func page[T any](rows []T, q viewQuery) []T {
	rows = rows[min(q.skip, len(rows)):]
	if q.limit >= 0 && q.limit < len(rows) {
		rows = rows[:q.limit]
	}
	return rows
}

// streamed frames rows as CouchDB writes them: `{"rows":[` "\r\n" rows joined by ",\r\n"
// "\r\n" `]}`; send adds the final "\n".
func streamed(head string, lines [][]byte) reply {
	var b bytes.Buffer
	b.WriteString(head)
	b.WriteString("\r\n")
	b.Write(bytes.Join(lines, []byte(",\r\n")))
	b.WriteString("\r\n]}")
	return reply{status: http.StatusOK, body: b.Bytes()}
}

// reduceRows groups the rows (group=true: by key; group_level=N: by the first N elements of
// array keys; neither: all rows under the key null) and reduces each group.
func reduceRows(rows []viewRow, reduce string, q viewQuery) [][]byte {
	level := q.groupLevel
	if q.group && level < 0 {
		level = 1 << 30
	}
	groupKey := func(key any) any {
		if level <= 0 {
			return nil
		}
		if arr, ok := key.([]any); ok && len(arr) > level {
			return arr[:level]
		}
		return key
	}
	var lines [][]byte
	for i := 0; i < len(rows); {
		key := groupKey(rows[i].key)
		j := i + 1
		for j < len(rows) && collate(groupKey(rows[j].key), key) == 0 {
			j++
		}
		values := make([]json.RawMessage, 0, j-i)
		for _, row := range rows[i:j] {
			values = append(values, row.emitted.value)
		}
		lines = append(lines, marshal(object{{"key", marshal(key)}, {"value", reduceValues(reduce, values)}}))
		i = j
	}
	return lines
}

// sumError is CouchDB's _sum answer to a value that is not a number
// (04_ddoc_js_sum_non_numeric_query); this server gives it for custom reduces too.
const sumError = "The _sum function requires that map values be numbers, arrays of numbers, or objects. " +
	"Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values " +
	"for all fields are themselves numbers, arrays of numbers, or objects."

func reduceValues(reduce string, values []json.RawMessage) json.RawMessage {
	if reduce == countReduce {
		return json.RawMessage(strconv.Itoa(len(values)))
	}
	var isum int64
	var fsum float64
	floats := false
	for _, v := range values {
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') { // not a JSON number
			return marshal(object{{"error", rawJSON("builtin_reduce_error")}, {"reason", rawJSON(sumError)}, {"caused_by", v}})
		}
		n := json.Number(v)
		if i, err := n.Int64(); err == nil && !floats {
			isum += i
			continue
		}
		if !floats {
			floats, fsum = true, float64(isum)
		}
		f, _ := n.Float64()
		fsum += f
	}
	if floats {
		return marshal(fsum)
	}
	return json.RawMessage(strconv.FormatInt(isum, 10))
}
