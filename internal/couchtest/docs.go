package couchtest

import (
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// database is one database with its documents, as one logical copy: shards and replicas only
// show in the numbers reported about them (q, n, shard names in /_active_tasks).
type database struct {
	name    string
	created int64 // unix seconds; CouchDB puts it in shard file names and instance_start_time
	q, n    int
	seq     int64 // one per write, like the sum of CouchDB's per-shard update sequences
	docs    map[string]*document
	indexes map[string]*index // by design doc id
}

type document struct {
	rev     string
	deleted bool
	body    object // members other than _id, _rev and _deleted, in the order written
	seq     int64
}

// json is the document as CouchDB answers it: _id and _rev first, then the members as written.
func (d *document) json(id string) object {
	return append(object{{"_id", rawJSON(id)}, {"_rev", rawJSON(d.rev)}}, d.body...)
}

func isDesign(id string) bool { return strings.HasPrefix(id, "_design/") }

// write applies one edit the way CouchDB's interactive edits do: a new or deleted document
// takes no revision, a live one needs its current revision. It reports the new revision,
// or false for a conflict.
func (db *database) write(id, rev string, body object, deleted bool) (string, bool) {
	cur := db.docs[id]
	prev := ""
	switch {
	case cur == nil:
		if rev != "" {
			return "", false
		}
	case cur.deleted:
		if rev != "" && rev != cur.rev {
			return "", false
		}
		prev = cur.rev
	default:
		if rev != cur.rev {
			return "", false
		}
		prev = cur.rev
	}
	newRev := nextRev(prev, body, deleted)
	db.seq++
	db.docs[id] = &document{rev: newRev, deleted: deleted, body: body, seq: db.seq}
	return newRev, true
}

// nextRev has CouchDB's revision shape ("<generation>-<32 hex>") but not its hash: the hash
// only has to differ between edits.
func nextRev(prev string, body object, deleted bool) string {
	gen := 1
	if i := strings.IndexByte(prev, '-'); i > 0 {
		if g, err := strconv.Atoi(prev[:i]); err == nil {
			gen = g + 1
		}
	}
	h := md5.New()
	h.Write([]byte(prev))
	h.Write(marshal(body))
	if deleted {
		h.Write([]byte("deleted"))
	}
	return fmt.Sprintf("%d-%x", gen, h.Sum(nil))
}

// counts are CouchDB's doc_count (live documents, design documents included), doc_del_count
// and the bytes of the live documents' JSON.
func (db *database) counts() (live, deleted int, bytes int64) {
	for _, d := range db.docs {
		if d.deleted {
			deleted++
			continue
		}
		live++
		bytes += int64(len(marshal(d.body)))
	}
	return live, deleted, bytes
}

// idGenerator makes ids the shape of CouchDB's default "sequential" uuids
// (03_post_doc_batch_ok_no_id_202): 32 hex chars, a random prefix of 26 and a counter of 6.
type idGenerator struct {
	prefix string
	n      uint32
}

func newIDGenerator() idGenerator {
	return idGenerator{prefix: fmt.Sprintf("%013x%013x", rand.Uint64N(1<<52), rand.Uint64N(1<<52)), n: rand.Uint32N(1 << 12)}
}

func (g *idGenerator) next() string {
	g.n++
	return fmt.Sprintf("%s%06x", g.prefix, g.n&0xffffff)
}

// DocCount is the number of live documents in db, design documents left out; 0 if db does
// not exist.
func (s *Server) DocCount(db string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.dbs[db]
	if !ok {
		return 0
	}
	n := 0
	for id, doc := range d.docs {
		if !doc.deleted && !isDesign(id) {
			n++
		}
	}
	return n
}

// routeDB answers /{db} and everything below it.
func (s *Server) routeDB(r *http.Request, method string, segs []string) reply {
	db := segs[0]
	switch {
	case len(segs) == 1:
		return s.dbRequest(r, method, db)
	case len(segs) == 2 && segs[1] == "_bulk_docs":
		if method != http.MethodPost {
			return methodNotAllowed("POST")
		}
		return s.bulkDocs(r, db)
	case segs[1] == "_design" && len(segs) >= 3:
		return s.designRequest(r, method, db, "_design/"+segs[2], segs[3:])
	case len(segs) == 2 && (isDesign(segs[1]) || !strings.HasPrefix(segs[1], "_")):
		return s.docRequest(r, method, db, segs[1])
	}
	return errDocMissing
}

func (s *Server) dbRequest(r *http.Request, method, db string) reply {
	switch method {
	case http.MethodPut:
		return s.createDB(r, db)
	case http.MethodGet:
		return s.dbInfo(db)
	case http.MethodDelete:
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.dbs[db]; !ok {
			return errDBMissing
		}
		delete(s.dbs, db)
		return jsonReply(http.StatusOK, okBody{true})
	case http.MethodPost:
		return s.postDoc(r, db)
	}
	return methodNotAllowed("DELETE,GET,HEAD,POST")
}

func (s *Server) docRequest(r *http.Request, method, db, id string) reply {
	switch method {
	case http.MethodGet:
		return s.getDoc(db, id)
	case http.MethodPut:
		return s.putDoc(r, db, id)
	case http.MethodDelete:
		return s.deleteDoc(r, db, id)
	}
	return methodNotAllowed("DELETE,GET,HEAD,PUT")
}

type okBody struct {
	OK bool `json:"ok"`
}

// docResult is CouchDB's answer about one written document, alone or in a _bulk_docs list.
type docResult struct {
	OK     bool   `json:"ok,omitempty"`
	ID     string `json:"id"`
	Rev    string `json:"rev,omitempty"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// validDBName is CouchDB's rule, quoted in 02_put_db_illegal_name_400.
var validDBName = regexp.MustCompile(`^[a-z][a-z0-9_$()+/-]*$`)

func (s *Server) createDB(r *http.Request, name string) reply {
	if !validDBName.MatchString(name) {
		return errorReply(http.StatusBadRequest, "illegal_database_name", "Name: '"+name+"'. Only lowercase characters (a-z), "+
			"digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
	}
	q, okQ := positiveParam(r, "q", 2)
	n, okN := positiveParam(r, "n", min(3, len(s.cfg.nodes)))
	if !okQ || !okN {
		// Not recorded; couchtest's own wording.
		return errorReply(http.StatusBadRequest, "bad_request", "q and n must be positive integers")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.dbs[name]; ok {
		return errorReply(http.StatusPreconditionFailed, "file_exists", "The database could not be created, the file already exists.")
	}
	s.dbs[name] = &database{name: name, created: time.Now().Unix(), q: q, n: n, docs: map[string]*document{}, indexes: map[string]*index{}}
	rep := jsonReply(http.StatusCreated, okBody{true})
	rep.header = map[string]string{"Location": absoluteURL(r, name)}
	return rep
}

func positiveParam(r *http.Request, name string, def int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0
}

type sizes struct {
	File     int64 `json:"file"`
	External int64 `json:"external"`
	Active   int64 `json:"active"`
}

// dbInfoBody has the members of 02_get_db_info_empty in its order. Sequences are opaque
// strings in CouchDB 3.x; here the number before "-" is the count of writes, and what
// follows is not CouchDB's encoding.
type dbInfoBody struct {
	InstanceStartTime string   `json:"instance_start_time"`
	DBName            string   `json:"db_name"`
	PurgeSeq          string   `json:"purge_seq"`
	UpdateSeq         string   `json:"update_seq"`
	Sizes             sizes    `json:"sizes"`
	Props             struct{} `json:"props"`
	DocDelCount       int      `json:"doc_del_count"`
	DocCount          int      `json:"doc_count"`
	DiskFormatVersion int      `json:"disk_format_version"`
	CompactRunning    bool     `json:"compact_running"`
	Cluster           struct {
		Q int `json:"q"`
		N int `json:"n"`
		W int `json:"w"`
		R int `json:"r"`
	} `json:"cluster"`
}

func opaqueSeq(n int64) string { return strconv.FormatInt(n, 10) + "-couchtest" }

func (s *Server) dbInfo(name string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.dbs[name]
	if !ok {
		return errDBMissing
	}
	live, deleted, bytes := db.counts()
	info := dbInfoBody{
		InstanceStartTime: strconv.FormatInt(db.created, 10),
		DBName:            name,
		PurgeSeq:          opaqueSeq(0),
		UpdateSeq:         opaqueSeq(db.seq),
		Sizes:             sizes{File: bytes, External: bytes, Active: bytes},
		DocDelCount:       deleted,
		DocCount:          live,
		DiskFormatVersion: 8,
	}
	quorum := db.n/2 + 1
	info.Cluster.Q, info.Cluster.N, info.Cluster.W, info.Cluster.R = db.q, db.n, quorum, quorum
	return jsonReply(http.StatusOK, info)
}

func (s *Server) getDoc(dbName, id string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.dbs[dbName]
	if !ok {
		return errDBMissing
	}
	doc, ok := db.docs[id]
	switch {
	case !ok:
		return errDocMissing
	case doc.deleted:
		return errorReply(http.StatusNotFound, "not_found", "deleted") // 03_get_deleted_doc_404
	}
	rep := jsonReply(http.StatusOK, doc.json(id))
	rep.header = etag(doc.rev)
	return rep
}

func etag(rev string) map[string]string { return map[string]string{"ETag": `"` + rev + `"`} }

// errTooLarge is a single-document write over max_document_size: the reason is empty
// (03_put_doc_too_large_413), unlike _bulk_docs, which names the document.
var errTooLarge = errorReply(http.StatusRequestEntityTooLarge, "document_too_large", "")

// parseDoc reads a document body; the reply is for a body that is not a JSON object.
func parseDoc(body []byte) (object, reply, bool) {
	if !json.Valid(body) {
		return nil, errBadJSON, false
	}
	obj, err := parseObject(body)
	if err != nil {
		// Not recorded; CouchDB 3.4.3's chttpd wording.
		return nil, errorReply(http.StatusBadRequest, "bad_request", "Document must be a JSON object"), false
	}
	return obj, reply{}, true
}

// isDeleted is the _deleted member set to true.
func isDeleted(doc object) bool {
	raw, ok := doc.get("_deleted")
	return ok && string(raw) == jsonTrue
}

// edit is one document write as requested.
type edit struct {
	id, rev string
	doc     object
}

func (e edit) body() object { return e.doc.without("_id", "_rev", "_deleted") }

func (s *Server) tooLarge(doc object) bool { return len(marshal(doc)) > s.maxDocumentSize() }

// newEdit reads _id and _rev from a posted document; one without _id gets a new id.
func (s *Server) newEdit(doc object) edit {
	e := edit{doc: doc}
	e.id, _ = doc.str("_id")
	if e.id == "" {
		e.id = s.ids.next()
	}
	e.rev, _ = doc.str("_rev")
	return e
}

// writeOne is a single-document write with the recorded answers: 413 with an empty reason
// when too large, 409 on a conflict; an invalid design document is a 400.
func (s *Server) writeOne(db *database, e edit) (string, reply, bool) {
	if s.tooLarge(e.doc) {
		return "", errTooLarge, false
	}
	if isDesign(e.id) {
		if _, eb := parseDesign(e.doc); eb != nil {
			return "", jsonReply(http.StatusBadRequest, eb), false
		}
	}
	rev, ok := db.write(e.id, e.rev, e.body(), isDeleted(e.doc))
	if !ok {
		return "", errConflict, false
	}
	return rev, reply{}, true
}

func (s *Server) putDoc(r *http.Request, dbName, id string) reply {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return errBadJSON
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.dbs[dbName]
	if !ok {
		return errDBMissing
	}
	doc, rep, ok := parseDoc(body)
	if !ok {
		return rep
	}
	e := edit{id: id, doc: doc}
	e.rev, _ = doc.str("_rev")
	if q := r.URL.Query().Get("rev"); q != "" {
		e.rev = q
	}
	rev, rep, ok := s.writeOne(db, e)
	if !ok {
		return rep
	}
	rep = jsonReply(http.StatusCreated, docResult{OK: true, ID: id, Rev: rev})
	rep.header = etag(rev)
	rep.header["Location"] = absoluteURL(r, dbName, id)
	return rep
}

// postDoc is POST /{db}. With batch=ok CouchDB checks the size, answers 202 and writes
// later, dropping a failed write silently (03_post_doc_batch_ok_202); this server writes at
// once.
func (s *Server) postDoc(r *http.Request, dbName string) reply {
	body, db, rep, ok := s.jsonRequestOn(r, dbName)
	if !ok {
		return rep
	}
	defer s.mu.Unlock()
	doc, rep, ok := parseDoc(body)
	if !ok {
		return rep
	}
	e := s.newEdit(doc)
	if r.URL.Query().Get("batch") == "ok" {
		if s.tooLarge(doc) {
			return errTooLarge
		}
		_, _, _ = s.writeOne(db, e)
		return jsonReply(http.StatusAccepted, docResult{OK: true, ID: e.id})
	}
	rev, rep, ok := s.writeOne(db, e)
	if !ok {
		return rep
	}
	rep = jsonReply(http.StatusCreated, docResult{OK: true, ID: e.id, Rev: rev})
	rep.header = map[string]string{"Location": absoluteURL(r, dbName, e.id)}
	return rep
}

func (s *Server) deleteDoc(r *http.Request, dbName, id string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.dbs[dbName]
	if !ok {
		return errDBMissing
	}
	doc, ok := db.docs[id]
	switch {
	case !ok:
		return errDocMissing
	case doc.deleted:
		return errorReply(http.StatusNotFound, "not_found", "deleted")
	}
	rev, ok := db.write(id, r.URL.Query().Get("rev"), object{}, true)
	if !ok {
		return errConflict
	}
	rep := jsonReply(http.StatusOK, docResult{OK: true, ID: id, Rev: rev})
	rep.header = etag(rev)
	return rep
}

// bulkDocs is POST /{db}/_bulk_docs with the recorded answers (03_bulk_docs_*): per-document
// results in a 201, conflicts among them; a body that is not {"docs": [...]} is a 400; one
// document over max_document_size fails the whole request with 413 and its id as the
// reason, before anything is written.
func (s *Server) bulkDocs(r *http.Request, dbName string) reply {
	body, db, rep, ok := s.jsonRequestOn(r, dbName)
	if !ok {
		return rep
	}
	defer s.mu.Unlock()
	edits, rep, ok := s.parseBulk(body)
	if !ok {
		return rep
	}
	for _, e := range edits {
		if s.tooLarge(e.doc) {
			return errorReply(http.StatusRequestEntityTooLarge, "document_too_large", e.id)
		}
	}
	results := make([]docResult, 0, len(edits))
	for _, e := range edits {
		if isDesign(e.id) {
			if _, eb := parseDesign(e.doc); eb != nil {
				results = append(results, docResult{ID: e.id, Error: eb.Error, Reason: eb.Reason})
				continue
			}
		}
		rev, ok := db.write(e.id, e.rev, e.body(), isDeleted(e.doc))
		if !ok {
			results = append(results, docResult{ID: e.id, Error: "conflict", Reason: "Document update conflict."})
			continue
		}
		results = append(results, docResult{OK: true, ID: e.id, Rev: rev})
	}
	return jsonReply(http.StatusCreated, results)
}

// parseBulk reads {"docs": [...]} and gives documents without _id a new id.
func (s *Server) parseBulk(body []byte) ([]edit, reply, bool) {
	if !json.Valid(body) {
		return nil, errBadJSON, false
	}
	req, err := parseObject(body)
	if err != nil {
		return nil, errorReply(http.StatusBadRequest, "bad_request", "Request body must be a JSON object"), false
	}
	docsRaw, ok := req.get("docs")
	if !ok {
		return nil, errorReply(http.StatusBadRequest, "bad_request", "POST body must include `docs` parameter."), false
	}
	var docs []json.RawMessage
	if json.Unmarshal(docsRaw, &docs) != nil {
		return nil, errorReply(http.StatusBadRequest, "bad_request", "`docs` parameter must be an array."), false
	}
	if raw, ok := req.get("new_edits"); ok && string(raw) == jsonFalse {
		// Replication-style writes are not modelled; refusing beats writing them wrongly.
		return nil, errorReply(http.StatusBadRequest, "bad_request", "couchtest does not support new_edits=false"), false
	}
	if limit := s.cfg.maxBulkDocs; limit > 0 && len(docs) > limit {
		// couchtest's own answer: CouchDB 3.4.3 has no such limit (WithMaxBulkDocsCount).
		return nil, errorReply(http.StatusRequestEntityTooLarge, "too_many_docs",
			fmt.Sprintf("couchtest: %d docs in one _bulk_docs, more than WithMaxBulkDocsCount(%d)", len(docs), limit)), false
	}
	edits := make([]edit, 0, len(docs))
	for _, raw := range docs {
		doc, rep, ok := parseDoc(raw)
		if !ok {
			return nil, rep, false
		}
		edits = append(edits, s.newEdit(doc))
	}
	return edits, reply{}, true
}

// jsonRequestOn reads a JSON request body for database dbName and takes the server's lock;
// on success the caller holds s.mu and must unlock it. Otherwise rep is the recorded
// answer (415 without a JSON content type, 400 unreadable, 404 no such database), and the
// lock is not held.
func (s *Server) jsonRequestOn(r *http.Request, dbName string) (body []byte, db *database, rep reply, ok bool) {
	if !isJSONRequest(r) {
		return nil, nil, errBadContentType, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, nil, errBadJSON, false
	}
	s.mu.Lock()
	db, found := s.dbs[dbName]
	if !found {
		s.mu.Unlock()
		return nil, nil, errDBMissing, false
	}
	return body, db, reply{}, true
}
