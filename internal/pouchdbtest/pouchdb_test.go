package pouchdbtest

// What pouchdb-server 4.2.0 answers to each request the runner makes, asserted as it is. Where
// it differs from Apache CouchDB 3.4 (whose recorded answers are in shared/couchdb), a comment
// gives CouchDB's answer: these subtests tell the runner's tests what this server can stand in
// for and what it cannot. They are not bug reports, and a subtest that pins an unsupported
// endpoint asserts the answer the server really gives.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The map function of the runner's benchmark view: scores by [year, month] of creation.
const byMonthMap = `function(doc){ if (doc.metadata && doc.metadata.createdAt) { ` +
	`var p = doc.metadata.createdAt.split("-"); emit([p[0], p[1]], doc.score); } }`

// seedDocs: the by-month sums are ["2024","01"] = 1+2 and ["2024","02"] = 4; "d" has no
// metadata and emits nothing.
const seedDocs = `{"docs":[
	{"_id":"a","score":1,"metadata":{"createdAt":"2024-01-05"}},
	{"_id":"b","score":2,"metadata":{"createdAt":"2024-01-07"}},
	{"_id":"c","score":4,"metadata":{"createdAt":"2024-02-01"}},
	{"_id":"d","score":8}]}`

const byMonthSums = `{"rows":[{"key":["2024","01"],"value":3},{"key":["2024","02"],"value":4}]}`

func TestPouchDBServer(t *testing.T) {
	base := Start(t)

	t.Run("GET / is express-pouchdb's welcome, not CouchDB's", func(t *testing.T) {
		// CouchDB 3.4: {"couchdb":"Welcome","version":"3.4.3","git_sha":...,"uuid":...,"features":[...],
		// "vendor":{"name":"The Apache Software Foundation"}}. Here there is no "couchdb" field, and
		// "version" and "vendor" are pouchdb-server's.
		var root map[string]any
		send(t, http.MethodGet, base+"/", "").decode(t, http.StatusOK, &root)
		if _, ok := root["uuid"].(string); !ok {
			t.Errorf("uuid = %v, want a string", root["uuid"])
		}
		delete(root, "uuid")
		sameJSON(t, root, `{"express-pouchdb":"Welcome!","version":"4.2.0","pouchdb-adapters":["memory"],
			"vendor":{"name":"PouchDB authors","version":"4.2.0"}}`)
	})

	t.Run("Content-Type follows Accept", func(t *testing.T) {
		// CouchDB 3.4 answers application/json whatever Accept says; pouchdb-server answers
		// text/plain unless the request accepts application/json (the runner's client does).
		for accept, want := range map[string]string{"": "text/plain; charset=utf-8", "application/json": "application/json"} {
			a := send(t, http.MethodGet, base+"/", "", func(r *http.Request) { r.Header.Set("Accept", accept) })
			if got := a.header.Get("Content-Type"); got != want {
				t.Errorf("Accept %q: Content-Type %q, want %q", accept, got, want)
			}
			if !strings.HasSuffix(string(a.body), "}\n") {
				t.Errorf("Accept %q: body %q does not end with one newline", accept, a.body)
			}
		}
	})

	t.Run("GET /_membership is a fixed one-node stub", func(t *testing.T) {
		// CouchDB 3.4 names its real node ("couchdb@127.0.0.1"); this name is a constant.
		a := send(t, http.MethodGet, base+"/_membership", "")
		a.wantJSON(t, http.StatusOK, `{"all_nodes":["node1@127.0.0.1"],"cluster_nodes":["node1@127.0.0.1"]}`)
	})

	t.Run("PUT /db", func(t *testing.T) {
		a := send(t, http.MethodPut, base+"/create", "")
		a.wantJSON(t, http.StatusCreated, `{"ok":true}`)
		if got, want := a.header.Get("Location"), base+"/create"; got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
		send(t, http.MethodPut, base+"/create", "").
			wantJSON(t, http.StatusPreconditionFailed, `{"error":"file_exists","reason":"The database could not be created."}`)
	})

	t.Run("PUT /db?q=2&n=1 is accepted and q, n ignored", func(t *testing.T) {
		send(t, http.MethodPut, base+"/sharded?q=2&n=1", "").wantJSON(t, http.StatusCreated, `{"ok":true}`)
		var info map[string]any
		send(t, http.MethodGet, base+"/sharded", "").decode(t, http.StatusOK, &info)
		if c, ok := info["cluster"]; ok { // CouchDB 3.4: "cluster":{"q":2,"n":1,"w":1,"r":1}
			t.Errorf("db info has cluster = %v, want no cluster field", c)
		}
	})

	t.Run("GET /db info", func(t *testing.T) {
		createDB(t, base, "info")
		send(t, http.MethodPost, base+"/info/_bulk_docs", seedDocs).decode(t, http.StatusCreated, nil)
		var info map[string]any
		send(t, http.MethodGet, base+"/info", "").decode(t, http.StatusOK, &info)
		// CouchDB 3.4: update_seq and purge_seq are opaque strings ("4-g1AAAA..."), with sizes,
		// doc_del_count, props, cluster, disk_format_version and compact_running. Here update_seq is
		// a number and those fields are absent.
		if _, ok := info["instance_start_time"].(string); !ok {
			t.Errorf("instance_start_time = %v, want a string", info["instance_start_time"])
		}
		delete(info, "instance_start_time")
		sameJSON(t, info, `{"db_name":"info","doc_count":4,"update_seq":4,
			"adapter":"memory","backend_adapter":"MemDOWN","auto_compaction":false}`)
	})

	t.Run("POST /db/_bulk_docs with explicit ids, then the same ids again", func(t *testing.T) {
		createDB(t, base, "bulk")
		var results []map[string]any
		send(t, http.MethodPost, base+"/bulk/_bulk_docs", seedDocs).decode(t, http.StatusCreated, &results)
		if len(results) != 4 {
			t.Fatalf("%d results, want 4: %v", len(results), results)
		}
		for i, id := range []string{"a", "b", "c", "d"} {
			rev, _ := results[i]["rev"].(string)
			if results[i]["ok"] != true || results[i]["id"] != id || !strings.HasPrefix(rev, "1-") || len(results[i]) != 3 {
				t.Errorf("result %d = %v, want {ok:true, id:%q, rev:1-...}", i, results[i], id)
			}
		}

		// As in CouchDB 3.4, a conflict is a per-doc error inside a 201 and the other docs are
		// written; the reason has no final period (CouchDB: "Document update conflict.").
		results = nil // decoding into the old maps would keep their fields
		send(t, http.MethodPost, base+"/bulk/_bulk_docs", `{"docs":[{"_id":"a","score":1},{"_id":"e","score":16}]}`).
			decode(t, http.StatusCreated, &results)
		sameJSON(t, results[0], `{"id":"a","error":"conflict","reason":"Document update conflict"}`)
		if results[1]["ok"] != true || results[1]["id"] != "e" {
			t.Errorf("second result = %v, want e written", results[1])
		}
	})

	t.Run("POST /db?batch=ok is an ordinary write", func(t *testing.T) {
		// CouchDB 3.4: 202 {"ok":true,"id":...} without rev. Here batch=ok is ignored: 201 with rev,
		// and the doc is readable at once.
		createDB(t, base, "batch")
		var res map[string]any
		send(t, http.MethodPost, base+"/batch?batch=ok", `{"_id":"x","score":1}`).decode(t, http.StatusCreated, &res)
		if rev, _ := res["rev"].(string); res["ok"] != true || res["id"] != "x" || !strings.HasPrefix(rev, "1-") {
			t.Errorf("answer %v, want {ok:true, id:x, rev:1-...}", res)
		}
		send(t, http.MethodGet, base+"/batch/x", "").decode(t, http.StatusOK, nil)
	})

	t.Run("views", func(t *testing.T) { testViews(t, base) })

	t.Run("design doc with language python", func(t *testing.T) {
		// pouchdb-server ignores "language" and evaluates every map as JavaScript. The Python map
		// does not compile as JavaScript, which fails for each document; the query still answers
		// 200 with no rows, and the errors go only to the server's stderr. CouchDB 3.4 runs it with
		// the Python query server (couchpy) when one is configured; an unknown language is a 500
		// unknown_query_language there.
		createDB(t, base, "python")
		send(t, http.MethodPost, base+"/python/_bulk_docs", seedDocs).decode(t, http.StatusCreated, nil)
		send(t, http.MethodPut, base+"/python/_design/py",
			`{"language":"python","views":{"v":{"map":"def fun(doc):\n    yield doc['_id'], 1"}}}`).
			decode(t, http.StatusCreated, nil)
		send(t, http.MethodGet, base+"/python/_design/py/_view/v", "").
			wantJSON(t, http.StatusOK, `{"total_rows":0,"offset":0,"rows":[]}`)
	})

	t.Run("GET /_active_tasks is always empty", func(t *testing.T) {
		// A stub: no indexer or compaction tasks are ever listed, even during a view build.
		send(t, http.MethodGet, base+"/_active_tasks", "").wantJSON(t, http.StatusOK, `[]`)
	})

	t.Run("GET /_node/_local/... is not supported", func(t *testing.T) {
		// There is no /_node endpoint: "_node" is taken for a database name, so statistics and node
		// config are 404 no_db_file, for GET, PUT and DELETE alike. CouchDB 3.4: stats are 200
		// {"value":N,"type":"counter","desc":...}; an unset config key is 404 unknown_config_value
		// (the runner's client reads any 404 there as "unset"). /_stats is a 200 placeholder.
		noNode := `{"error":"not_found","reason":"no_db_file"}`
		send(t, http.MethodGet, base+"/_node/_local/_stats/couchdb/mrview/map_doc", "").wantJSON(t, http.StatusNotFound, noNode)
		const maxSize = "/_node/_local/_config/smoosh.ratio_views/max_size"
		send(t, http.MethodGet, base+maxSize, "").wantJSON(t, http.StatusNotFound, noNode)
		send(t, http.MethodPut, base+maxSize, `"1"`).wantJSON(t, http.StatusNotFound, noNode)
		send(t, http.MethodDelete, base+maxSize, "").wantJSON(t, http.StatusNotFound, noNode)
		send(t, http.MethodGet, base+"/_stats", "").
			wantJSON(t, http.StatusOK, `{"pouchdb-server":"has not impemented _stats yet. PRs welcome!"}`)
	})

	t.Run("authentication", func(t *testing.T) {
		// As in CouchDB 3.4: a wrong password is 401 on every endpoint, GET / included; without
		// credentials GET / is public and admin endpoints are 401. No WWW-Authenticate header.
		wrong := func(r *http.Request) { r.SetBasicAuth(AdminUser, "wrong") }
		none := func(r *http.Request) { r.Header.Del("Authorization") }
		for _, path := range []string{"/", "/_active_tasks", "/_all_dbs"} {
			a := send(t, http.MethodGet, base+path, "", wrong)
			a.wantJSON(t, http.StatusUnauthorized, `{"error":"unauthorized","reason":"Name or password is incorrect."}`)
			if h := a.header.Get("WWW-Authenticate"); h != "" {
				t.Errorf("GET %s: WWW-Authenticate %q, want none", path, h)
			}
		}
		send(t, http.MethodGet, base+"/", "", none).decode(t, http.StatusOK, nil)
		send(t, http.MethodGet, base+"/_active_tasks", "", none).
			wantJSON(t, http.StatusUnauthorized, `{"error":"unauthorized","reason":"You are not a server admin."}`)
	})
}

// testViews runs the runner's view queries over seedDocs.
func testViews(t *testing.T, base string) {
	createDB(t, base, "views")
	send(t, http.MethodPost, base+"/views/_bulk_docs", seedDocs).decode(t, http.StatusCreated, nil)
	ddoc, err := json.Marshal(map[string]any{
		// CouchDB 3.4 reads a top-level "autoupdate": false (no background build). pouchdb-server
		// accepts and ignores it: it builds views only when they are queried anyway.
		"autoupdate": false,
		"views": map[string]any{
			"builtin": map[string]string{"map": byMonthMap, "reduce": "_sum"},
			"js":      map[string]string{"map": byMonthMap, "reduce": "function(keys, values, rereduce){ return sum(values); }"},
			"doc":     map[string]string{"map": "function(doc){ emit(doc._id, doc); }"},
			"null":    map[string]string{"map": "function(doc){ emit(doc._id, null); }"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	send(t, http.MethodPut, base+"/views/_design/x", string(ddoc)).decode(t, http.StatusCreated, nil)
	view := base + "/views/_design/x/_view/"

	t.Run("_sum group=true", func(t *testing.T) {
		a := send(t, http.MethodGet, view+"builtin?group=true", "")
		a.wantJSON(t, http.StatusOK, byMonthSums)
		// CouchDB 3.4 streams view answers with "\r\n" between rows; this one is compact JSON.
		if strings.Contains(string(a.body), "\r\n") {
			t.Errorf("body %q has CRLF", a.body)
		}
	})
	t.Run("JavaScript reduce group=true&limit=11", func(t *testing.T) {
		send(t, http.MethodGet, view+"js?group=true&limit=11", "").wantJSON(t, http.StatusOK, byMonthSums)
	})
	t.Run("reduce without group", func(t *testing.T) {
		send(t, http.MethodGet, view+"builtin", "").wantJSON(t, http.StatusOK, `{"rows":[{"key":null,"value":7}]}`)
	})
	t.Run("include_docs on a reduce view", func(t *testing.T) {
		// CouchDB 3.4's reason is "`include_docs` is invalid for reduce".
		send(t, http.MethodGet, view+"builtin?include_docs=true", "").
			wantJSON(t, http.StatusBadRequest, `{"error":"query_parse_error","reason":"{include_docs:true} is invalid for reduce"}`)
	})
	t.Run("reduce=false&include_docs=true", func(t *testing.T) {
		var res struct {
			TotalRows int `json:"total_rows"`
			Offset    int `json:"offset"`
			Rows      []struct {
				ID    string         `json:"id"`
				Key   []string       `json:"key"`
				Value int            `json:"value"`
				Doc   map[string]any `json:"doc"`
			} `json:"rows"`
		}
		send(t, http.MethodGet, view+"builtin?reduce=false&include_docs=true", "").decode(t, http.StatusOK, &res)
		if res.TotalRows != 3 || res.Offset != 0 || len(res.Rows) != 3 {
			t.Fatalf("total_rows %d, offset %d, %d rows; want 3, 0, 3", res.TotalRows, res.Offset, len(res.Rows))
		}
		for i, id := range []string{"a", "b", "c"} {
			r := res.Rows[i]
			if r.ID != id || r.Doc["_id"] != id || r.Doc["_rev"] == nil || r.Doc["score"] != float64(r.Value) {
				t.Errorf("row %d = %+v, want doc %q with its _rev and score", i, r, id)
			}
		}
	})
	t.Run("emit(doc._id, doc) and emit(doc._id, null)", func(t *testing.T) {
		var docs, nulls struct {
			TotalRows int `json:"total_rows"`
			Rows      []struct {
				ID    string `json:"id"`
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"rows"`
		}
		send(t, http.MethodGet, view+"doc", "").decode(t, http.StatusOK, &docs)
		send(t, http.MethodGet, view+"null", "").decode(t, http.StatusOK, &nulls)
		// The design doc is not mapped, as in CouchDB.
		if docs.TotalRows != 4 || len(docs.Rows) != 4 || nulls.TotalRows != 4 || len(nulls.Rows) != 4 {
			t.Fatalf("doc view %d/%d rows, null view %d/%d rows; want 4 of 4", len(docs.Rows), docs.TotalRows, len(nulls.Rows), nulls.TotalRows)
		}
		for i := range docs.Rows {
			d, n := docs.Rows[i], nulls.Rows[i]
			if doc, _ := d.Value.(map[string]any); d.Key != d.ID || doc["_id"] != d.ID || doc["_rev"] == nil {
				t.Errorf("doc view row %d = %+v, want the whole doc as value", i, d)
			}
			if n.Key != n.ID || n.Value != nil {
				t.Errorf("null view row %d = %+v, want value null", i, n)
			}
		}
	})
	t.Run("GET _design/x/_info is a placeholder", func(t *testing.T) {
		// CouchDB 3.4: {"name":"x","view_index":{"update_seq":N,"updater_running":...,"sizes":...}}.
		send(t, http.MethodGet, base+"/views/_design/x/_info", "").wantJSON(t, http.StatusOK, `{"view_index":"Not implemented."}`)
	})
}

// An unauthenticated PUT /db kills pouchdb-server 4.2.0: the admin check fails inside
// express-pouchdb's database creation, which then throws "db.info is not a function" outside
// any handler. CouchDB 3.4 answers 401 "You are not a server admin.". The runner always sends
// credentials; a test that leaves them out on purpose must not expect that 401 here.
func TestAnonymousCreateDatabaseKillsServer(t *testing.T) {
	base := Start(t)
	req, err := http.NewRequest(http.MethodPut, base+"/anonymous", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("got HTTP %d, want no answer (the server crashes)", resp.StatusCode)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err != nil {
			return // the server is gone
		}
		_ = resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still answers GET / after the anonymous PUT /db")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answer is one HTTP exchange, read in full.
type answer struct {
	req    string
	status int
	header http.Header
	body   []byte
}

// send makes a request as the runner's client does: Basic auth as the admin, Accept and (with
// a body) Content-Type application/json. edits adjust the request before it is sent.
func send(t *testing.T, method, url, body string, edits ...func(*http.Request)) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(AdminUser, AdminPassword)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, edit := range edits {
		edit(req)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return answer{req: method + " " + url, status: resp.StatusCode, header: resp.Header, body: data}
}

// decode checks the status and decodes the JSON body into out (when out is not nil).
func (a answer) decode(t *testing.T, status int, out any) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: HTTP %d %s, want %d", a.req, a.status, a.body, status)
	}
	var v any
	if out == nil {
		out = &v
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		t.Fatalf("%s: body %q: %v", a.req, a.body, err)
	}
}

// wantJSON checks the status and that the body is the JSON value want.
func (a answer) wantJSON(t *testing.T, status int, want string) {
	t.Helper()
	var got any
	a.decode(t, status, &got)
	sameJSON(t, got, want)
}

// sameJSON checks that got, as JSON, equals the JSON text want (ignoring key order).
func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	var g, w any
	data, err := json.Marshal(got)
	if err == nil {
		err = json.Unmarshal(data, &g)
	}
	if err == nil {
		err = json.Unmarshal([]byte(want), &w)
	}
	if err != nil {
		t.Fatal(errors.Join(errors.New("comparing JSON"), err))
	}
	if !reflect.DeepEqual(g, w) {
		wantData, _ := json.Marshal(w)
		t.Errorf("got  %s\nwant %s", data, wantData)
	}
}

func createDB(t *testing.T, base, name string) {
	t.Helper()
	send(t, http.MethodPut, base+"/"+name, "").wantJSON(t, http.StatusCreated, `{"ok":true}`)
}
