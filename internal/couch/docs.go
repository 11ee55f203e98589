package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func dbPath(db string) string { return "/" + escape(db) }

// CreateDB creates a database with q shards and n copies of each (n 0: the server's
// default). It reports whether the database was created; an existing one is not an error.
func (c *Client) CreateDB(ctx context.Context, db string, q, n int) (created bool, err error) {
	params := query("q", strconv.Itoa(q))
	if n > 0 {
		params.Set("n", strconv.Itoa(n))
	}
	// 202: created, but fewer than a quorum of nodes confirmed it yet.
	_, err = c.call(ctx, request{method: http.MethodPut, path: dbPath(db), query: params, accept: []int{http.StatusCreated, http.StatusAccepted}}, nil)
	if StatusOf(err) == http.StatusPreconditionFailed {
		return false, nil
	}
	return err == nil, err
}

// RecreateDB makes a database afresh: it deletes it if it is there and creates it with q
// shards and n copies. Right after a delete, CouchDB can refuse the create with 412
// file_exists while the deletion is still going through (seen on 3.4.3 on a busy machine,
// a few times in a hundred), and the database is then missing; so a create that finds the
// database there deletes it again and tries once more.
func (c *Client) RecreateDB(ctx context.Context, db string, q, n int) error {
	start := time.Now()
	tries, gaveUp, err := c.waits.Recreate.Until(ctx, func(ctx context.Context) (bool, error) {
		if _, err := c.DeleteDB(ctx, db); err != nil {
			return false, err
		}
		created, err := c.CreateDB(ctx, db, q, n)
		if err != nil {
			return false, fmt.Errorf("creating database %s: %w", db, err)
		}
		return created, nil
	})
	if gaveUp {
		return fmt.Errorf("creating database %s: CouchDB still answered file_exists after deleting it %d times over %s",
			db, tries, time.Since(start).Round(time.Millisecond))
	}
	return err
}

// DeleteDB deletes a database. It reports whether there was one to delete; a missing one is
// not an error. A failure that may pass (a 5xx, no answer) is tried again, since DELETE
// does the same however often it is sent: when the node is busy, CouchDB 3.4.3 answers
// 500 unknown_error "badarg" to the DELETE of a database deleted a moment before (its
// fabric_db_delete crashes in a log call while it weighs the copies' answers), and the
// same DELETE 50 ms later answers 404 (189 times in 189 on the kit, six loops of create,
// write, delete, delete side by side).
func (c *Client) DeleteDB(ctx context.Context, db string) (deleted bool, err error) {
	_, _, err = c.waits.Delete.Do(ctx, Transient, func() error {
		_, err := c.call(ctx, request{method: http.MethodDelete, path: dbPath(db), accept: []int{http.StatusOK, http.StatusAccepted}}, nil)
		return err
	})
	if StatusOf(err) == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// AllDBs lists the databases from startKey to endKey, in order (GET /_all_dbs; server admins
// only, since CouchDB 3).
func (c *Client) AllDBs(ctx context.Context, startKey, endKey string) ([]string, error) {
	keys := url.Values{}
	for name, key := range map[string]string{"start_key": startKey, "end_key": endKey} {
		data, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		keys.Set(name, string(data))
	}
	var dbs []string
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/_all_dbs", query: keys, accept: []int{http.StatusOK}}, &dbs)
	return dbs, err
}

// DBInfo is the part of GET /{db} the runner reads.
type DBInfo struct {
	DocCount int64 `json:"doc_count"`
	Sizes    struct {
		File     int64 `json:"file"`
		External int64 `json:"external"`
		Active   int64 `json:"active"`
	} `json:"sizes"`
	Cluster struct {
		Q int `json:"q"`
		N int `json:"n"`
	} `json:"cluster"`
}

// DBInfo answers GET /{db}.
func (c *Client) DBInfo(ctx context.Context, db string) (DBInfo, error) {
	var info DBInfo
	_, err := c.call(ctx, request{method: http.MethodGet, path: dbPath(db), accept: []int{http.StatusOK}}, &info)
	return info, err
}

// SyncShards asks the cluster to bring every copy of every shard of db up to date with the
// others now (POST /{db}/_sync_shards), rather than at the next write to it. It returns once
// the internal replication jobs are queued, not done.
func (c *Client) SyncShards(ctx context.Context, db string) error {
	_, err := c.call(ctx, request{method: http.MethodPost, path: dbPath(db) + "/_sync_shards", body: []byte("{}"),
		accept: []int{http.StatusOK, http.StatusAccepted}}, nil)
	return err
}

// BulkResult is CouchDB's answer for one document of a _bulk_docs request.
type BulkResult struct {
	ID     string `json:"id"`
	Rev    string `json:"rev,omitempty"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// BulkDocs writes documents (JSON objects) with one _bulk_docs request and returns the
// per-document results, in request order. A document refused by CouchDB (conflict,
// forbidden) is a result with Error set, not an error of the call. The documents are sent
// from where they are, not copied into a body: a loader's batches are its memory.
func (c *Client) BulkDocs(ctx context.Context, db string, docs []json.RawMessage) ([]BulkResult, error) {
	parts := make(net.Buffers, 0, 2*len(docs)+1)
	parts = append(parts, []byte(`{"docs":[`))
	for i, d := range docs {
		if i > 0 {
			parts = append(parts, comma)
		}
		parts = append(parts, d)
	}
	parts = append(parts, []byte(`]}`))
	var results []BulkResult
	// 202: written, but not yet on a quorum of copies.
	_, err := c.call(ctx, request{method: http.MethodPost, path: dbPath(db) + "/_bulk_docs", bodyParts: parts,
		accept: []int{http.StatusCreated, http.StatusAccepted}}, &results)
	return results, err
}

var comma = []byte{','}

// PostDoc writes one new document with POST /{db}. With batchOK CouchDB may answer 202
// before the document is on disk (it can be lost in a crash); the status tells which.
func (c *Client) PostDoc(ctx context.Context, db string, doc json.RawMessage, batchOK bool) (status int, err error) {
	var params = query()
	if batchOK {
		params.Set("batch", "ok")
	}
	return c.call(ctx, request{method: http.MethodPost, path: dbPath(db), query: params, body: doc,
		accept: []int{http.StatusCreated, http.StatusAccepted}}, nil)
}

// GetDoc reads one document into out.
func (c *Client) GetDoc(ctx context.Context, db, id string, out any) error {
	_, err := c.call(ctx, request{method: http.MethodGet, path: dbPath(db) + "/" + escape(id), accept: []int{http.StatusOK}}, out)
	return err
}

// DesignDoc is a design document with map/reduce views.
type DesignDoc struct {
	ID       string          `json:"_id"`
	Language string          `json:"language"`
	Views    map[string]View `json:"views"`
	// AutoUpdate false keeps CouchDB's background indexer (ken) from building the views, so
	// that a measured build starts when the runner asks for it. CouchDB 3.4 honours it only
	// as a top-level field; under "options" it is ignored.
	AutoUpdate *bool `json:"autoupdate,omitempty"`
}

// View is one view of a design document.
type View struct {
	Map    string `json:"map"`
	Reduce string `json:"reduce,omitempty"`
}

// PutDesignDoc creates a design document.
func (c *Client) PutDesignDoc(ctx context.Context, db string, ddoc DesignDoc) error {
	body, err := marshal(ddoc)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, request{method: http.MethodPut, path: dbPath(db) + "/" + designPath(ddoc.ID), body: body,
		accept: []int{http.StatusCreated, http.StatusAccepted}}, nil)
	return err
}

// designPath escapes "_design/name" as two segments.
func designPath(id string) string {
	const prefix = "_design/"
	if len(id) > len(prefix) && id[:len(prefix)] == prefix {
		return "_design/" + escape(id[len(prefix):])
	}
	return escape(id)
}

// PutLocal writes the local document _local/{name}: kept on the database's shard copies, but
// never replicated, never counted in doc_count and never seen by a view, so that writing it
// into a benchmark's database changes nothing that is measured. Writing it again replaces it.
func (c *Client) PutLocal(ctx context.Context, db, name string, doc json.RawMessage) error {
	_, err := c.call(ctx, request{method: http.MethodPut, path: dbPath(db) + "/_local/" + escape(name), body: doc,
		accept: []int{http.StatusCreated, http.StatusAccepted}}, nil)
	return err
}

// LocalDocs tells which of the local documents _local/{name} exist in db, with one request
// (POST /{db}/_local_docs with keys).
func (c *Client) LocalDocs(ctx context.Context, db string, names []string) (map[string]bool, error) {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = "_local/" + n
	}
	body, err := marshal(map[string][]string{"keys": keys})
	if err != nil {
		return nil, err
	}
	var answer struct {
		Rows []struct {
			Key   string `json:"key"`
			Error string `json:"error"`
		} `json:"rows"`
	}
	if _, err := c.call(ctx, request{method: http.MethodPost, path: dbPath(db) + "/_local_docs", body: body, accept: []int{http.StatusOK}}, &answer); err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(names))
	for _, r := range answer.Rows {
		if r.Error == "" {
			found[strings.TrimPrefix(r.Key, "_local/")] = true
		}
	}
	return found, nil
}
