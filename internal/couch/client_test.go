package couch

// The client against internal/couchtest, the in-repo fake on CouchDB 3.4.3's recorded
// answers (and those recordings themselves): error shapes and statuses as recorded. The
// client on real Apache CouchDB is exercised by every real-server suite (internal/runner).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couchtest"
)

func TestCredentialsNeverPrintThePassword(t *testing.T) {
	c := Credentials{Username: "admin", Password: "s3cret"}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("%q shows the password", s)
		}
	}
}

func TestURLWithCredentialsIsRefused(t *testing.T) {
	_, err := New("http://admin:s3cret@couchdb:5984", Credentials{}, Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("New with credentials in the URL: %v", err)
	}
	if _, err := New("ftp://couchdb", Credentials{}, Options{}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

// The recorded view answers of CouchDB 3.4.3 stream rows separated by ",\r\n"; ReadView
// must count them exactly.
func TestCountRowsOnRecordedViewAnswers(t *testing.T) {
	for file, want := range map[string]int64{
		"04_view_reduce_false_limit3_include_docs.json": 3,
		"04_view_limit0_reduce_false.json":              0,
		"04_view_group_true.json":                       13,
	} {
		data, err := os.ReadFile(filepath.Join("..", "couchtest", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var fixture struct {
			Body    json.RawMessage `json:"body"`
			BodyRaw *string         `json:"body_raw"`
		}
		if err := json.Unmarshal(data, &fixture); err != nil {
			t.Fatal(err)
		}
		body := string(fixture.Body)
		if fixture.BodyRaw != nil {
			body = *fixture.BodyRaw
		}
		got, err := countRows(json.NewDecoder(strings.NewReader(body)))
		if err != nil || got != want {
			t.Errorf("%s: %d rows, %v; want %d", file, got, err, want)
		}
	}
}

// fakeAdmin is the in-repo fake (internal/couchtest) with a client logged in as its admin.
func fakeAdmin(t *testing.T) (*couchtest.Server, *Client) {
	t.Helper()
	srv := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	c, err := New(srv.URL, Credentials{Username: "admin", Password: "pw"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

func TestErrorsCarryCouchDBsReason(t *testing.T) {
	_, c := fakeAdmin(t)
	ctx := context.Background()
	_, err := c.QueryView(ctx, "missing", "_design/x", "v", url.Values{})
	var ce *Error
	if !errors.As(err, &ce) || ce.Status != 404 || ce.Name != "not_found" || StatusOf(err) != 404 || Transient(err) {
		t.Fatalf("view on a missing database: %#v", err)
	}
	if value, set, err := c.Config(ctx, "_local", "smoosh.ratio_views", "max_size"); err != nil || set || value != "" {
		t.Errorf("an unset config key: %q %v %v", value, set, err)
	}
	created, err := c.CreateDB(ctx, "db", 1, 1)
	if err != nil || !created {
		t.Fatalf("CreateDB: %v %v", created, err)
	}
	if created, err := c.CreateDB(ctx, "db", 1, 1); err != nil || created {
		t.Errorf("CreateDB of an existing database: created=%v err=%v; want false, nil", created, err)
	}
}

// A 5xx may pass when sent again, except the answers that say the request itself cannot
// work; the caller's own cancel is never transient.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 500, Name: "internal_server_error", Reason: "No DB shards could be opened."}, true},
		{&Error{Status: 503}, true},
		{&Error{Err: errors.New("connection refused")}, true},
		{&Error{Status: 500, Name: "unknown_query_language", Reason: "python_nosuch"}, false},
		{&Error{Status: 404, Name: "not_found"}, false},
		{&Error{Err: context.Canceled}, false},
		{errors.New("not a CouchDB answer"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Right after a delete, CouchDB can refuse to create the database again with 412
// file_exists (the fake says so here three times, as a busy 3.4.3 does now and then):
// RecreateDB deletes again and retries until the create is taken, and the database is empty.
func TestRecreateDBWaitsForTheDeletion(t *testing.T) {
	srv, c := fakeAdmin(t)
	ctx := context.Background()
	if err := c.RecreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BulkDocs(ctx, "db", []json.RawMessage{json.RawMessage(`{"_id":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	srv.Fail(couchtest.Fault{Method: http.MethodPut, PathPrefix: "/db", Times: 3, Status: http.StatusPreconditionFailed, Error: "file_exists"})
	if err := c.RecreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatalf("RecreateDB with the create refused three times: %v", err)
	}
	if info, err := c.DBInfo(ctx, "db"); err != nil || info.DocCount != 0 {
		t.Errorf("after RecreateDB: %d documents, %v; want an empty database", info.DocCount, err)
	}

	// A create refused for good is an error that says so, not a missing database later.
	saved := recreateWaits
	recreateWaits = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { recreateWaits = saved })
	srv.Fail(couchtest.Fault{Method: http.MethodPut, PathPrefix: "/db", Times: 10, Status: http.StatusPreconditionFailed, Error: "file_exists"})
	if err := c.RecreateDB(ctx, "db", 1, 1); err == nil || !strings.Contains(err.Error(), "still answered file_exists after deleting it 3 times") {
		t.Errorf("RecreateDB with the create always refused: %v", err)
	}
}

// CouchDB 3.4.3 answers 500 "badarg" to the DELETE of a database deleted a moment before
// (see DeleteDB); the fake plays that answer. TestDeleteDBRidesOutBadargOnRealCouchDB
// meets the real one.
func TestDeleteDBTriesAgainAfterA5xx(t *testing.T) {
	srv, c := fakeAdmin(t)
	ctx := context.Background()
	if err := c.RecreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatal(err)
	}
	srv.Fail(couchtest.Fault{Method: http.MethodDelete, PathPrefix: "/db", Times: 2, Status: http.StatusInternalServerError})
	if deleted, err := c.DeleteDB(ctx, "db"); err != nil || !deleted {
		t.Fatalf("DeleteDB after two 500s: deleted %v, %v; want the database deleted", deleted, err)
	}
	if _, err := c.DBInfo(ctx, "db"); StatusOf(err) != http.StatusNotFound {
		t.Errorf("after DeleteDB: GET /db gave %v; want 404", err)
	}

	// Not every failure is worth another try, and the tries end.
	if err := c.RecreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatal(err)
	}
	srv.Fail(couchtest.Fault{Method: http.MethodDelete, PathPrefix: "/db", Times: 1, Status: http.StatusUnauthorized, Error: "unauthorized"})
	if _, err := c.DeleteDB(ctx, "db"); StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("DeleteDB answered 401: %v; want that 401 at once", err)
	}
	saved := deleteWaits
	deleteWaits = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { deleteWaits = saved })
	srv.Fail(couchtest.Fault{Method: http.MethodDelete, PathPrefix: "/db", Times: 3, Status: http.StatusInternalServerError})
	if _, err := c.DeleteDB(ctx, "db"); StatusOf(err) != http.StatusInternalServerError {
		t.Errorf("DeleteDB answered 500 three times: %v; want the 500 after three tries", err)
	}
	if _, err := c.DBInfo(ctx, "db"); err != nil {
		t.Errorf("the database went although every DELETE failed: %v", err)
	}
}

// What CouchDB answers for a request it forwards to a node that is down or going away, and
// the answers that look alike but are not: on errors made up here, and on the in-repo fake
// (internal/couchtest) answering with injected errors.
func TestNodeDown(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 412, Name: "nodedown", Reason: "couchdb@node3 is down"}, true},
		{&Error{Status: 500, Name: "badrpc", Reason: "{'EXIT',{noproc,{gen_server,call,[config,{get,\"smoosh.ratio_views\",\"max_size\"}]}}}"}, true},
		// Apache CouchDB 3.4.3's answer (kit's cluster) to a config PUT forwarded to a node
		// shutting down.
		{&Error{Status: 500, Name: "case_clause", Reason: "{badrpc,\n    {'EXIT',\n        {noproc,\n            {gen_server,call,\n                [config,\n                 {set,\"smoosh.slack_views\",\"max_size\",\"1\","}, true},
		{&Error{Status: 500, Name: "unknown_error", Reason: "noproc"}, true},
		{&Error{Status: 500, Name: "rexi_DOWN", Reason: "{'couchdb@node3',noconnection}"}, true},
		{&Error{Status: 502}, true},
		{&Error{Err: errors.New("connection refused")}, true},
		// Ordinary 500s: asking again answers the same.
		{&Error{Status: 500, Name: "internal_server_error", Reason: "No DB shards could be opened."}, false},
		{&Error{Status: 500, Name: "unknown_error", Reason: "injected by couchtest"}, false},
		{&Error{Status: 500, Name: "map_compilation_error", Reason: "badrpcs is not defined"}, false},
		{&Error{Status: 500}, false},
		// The atoms only count in a 500.
		{&Error{Status: 400, Name: "bad_request", Reason: "badrpc"}, false},
		{&Error{Err: context.DeadlineExceeded}, false},
		{errors.New("badrpc noproc"), false},
	} {
		if got := NodeDown(tc.err); got != tc.want {
			t.Errorf("NodeDown(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}

	srv, c := fakeAdmin(t)
	ctx := context.Background()
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Status: http.StatusInternalServerError, Error: "badrpc"})
	_, _, err := c.Config(ctx, "couchdb@127.0.0.1", "smoosh.ratio_views", "max_size")
	if StatusOf(err) != http.StatusInternalServerError || !NodeDown(err) {
		t.Errorf("a 500 badrpc from the fake: %v; want NodeDown", err)
	}
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Status: http.StatusInternalServerError})
	_, _, err = c.Config(ctx, "couchdb@127.0.0.1", "smoosh.ratio_views", "max_size")
	if StatusOf(err) != http.StatusInternalServerError || NodeDown(err) {
		t.Errorf("an ordinary 500 from the fake: %v; want an error that is not NodeDown", err)
	}
}

// A shard copy's _info that the fake (internal/couchtest) holds past CopyReadTimeout is a
// node that does not answer; the caller's own deadline is not.
func TestCopyIndexInfoUnansweredIsNodeDown(t *testing.T) {
	defer func(d time.Duration) { CopyReadTimeout = d }(CopyReadTimeout)
	CopyReadTimeout = 50 * time.Millisecond
	srv, c := fakeAdmin(t)
	cp := ShardCopy{Node: "couchdb@127.0.0.1", Range: "00000000-ffffffff", Name: "shards/00000000-ffffffff/db.1"}
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Delay: time.Minute})
	_, _, err := c.CopyIndexInfo(context.Background(), cp, "_design/x")
	if !NodeDown(err) || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("_info held past CopyReadTimeout: %v; want NodeDown saying the node did not answer", err)
	}
	CopyReadTimeout = time.Minute
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.CopyIndexInfo(ctx, cp, "_design/x"); err == nil || NodeDown(err) {
		t.Errorf("_info cut by the caller's deadline: %v; want an error that is not NodeDown", err)
	}
}
