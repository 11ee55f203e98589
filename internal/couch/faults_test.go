package couch_test

// The client against real Apache CouchDB 3.4.3, the kit's single node that `make test`
// starts (internal/couchdbtest), through internal/couchfault's proxy where a test injects
// what the server does only now and then: a 412 file_exists after a delete, a 500, CouchDB's
// 500 badrpc for a node going away, a gateway's 503, an answer held back. Every other answer
// is CouchDB's own.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/retry"
)

// proxied is a database of this test on the single node, the proxy in front of the node and
// a client of the node's admin through it, with waits w.
func proxied(t *testing.T, w couch.Waits) (*couchdbtest.Server, *couchfault.Proxy, *couch.Client, string) {
	t.Helper()
	srv := couchdbtest.Single(t)
	db := srv.NewDB(t, "")
	p, c := srv.Proxied(t, couch.Options{Waits: w})
	return srv, p, c, db
}

// CouchDB 3.4.3 streams a view's rows separated by ",\r\n"; ReadView must count them
// exactly, whatever the answer holds.
func TestReadViewCountsTheRowsOnRealCouchDB(t *testing.T) {
	_, _, c, db := proxied(t, couch.Waits{})
	ctx := context.Background()
	if _, err := c.BulkDocs(ctx, db, []json.RawMessage{json.RawMessage(`{"_id":"a","m":1}`), json.RawMessage(`{"_id":"b","m":1}`),
		json.RawMessage(`{"_id":"c","m":2}`), json.RawMessage(`{"_id":"d","m":3}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutDesignDoc(ctx, db, couch.DesignDoc{ID: "_design/d", Language: "javascript",
		Views: map[string]couch.View{"m": {Map: "function(doc) { emit(doc.m, 1); }", Reduce: "_sum"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		params url.Values
		want   int64
	}{
		{url.Values{"reduce": {"false"}, "include_docs": {"true"}, "limit": {"3"}}, 3},
		{url.Values{"reduce": {"false"}}, 4},
		{url.Values{"reduce": {"false"}, "limit": {"0"}}, 0},
		{url.Values{"group": {"true"}}, 3},
		{url.Values{}, 1},
	} {
		read, err := c.ReadView(ctx, db, "_design/d", "m", tc.params)
		if err != nil || read.Rows != tc.want || read.Bytes == 0 {
			t.Errorf("%s: %d rows of %d bytes, %v; want %d", tc.params.Encode(), read.Rows, read.Bytes, err, tc.want)
		}
	}
}

func TestErrorsCarryCouchDBsReasonOnRealCouchDB(t *testing.T) {
	_, _, c, db := proxied(t, couch.Waits{})
	ctx := context.Background()
	_, err := c.QueryView(ctx, couchdbtest.DBName("missing"), "_design/x", "v", url.Values{})
	var ce *couch.Error
	if !errors.As(err, &ce) || ce.Status != 404 || ce.Name != "not_found" || couch.StatusOf(err) != 404 || couch.Transient(err) {
		t.Fatalf("view on a missing database: %#v", err)
	}
	if value, set, err := c.Config(ctx, "_local", "couchbench_test", "unset"); err != nil || set || value != "" {
		t.Errorf("an unset config key: %q %v %v", value, set, err)
	}
	if created, err := c.CreateDB(ctx, db, 1, 1); err != nil || created {
		t.Errorf("CreateDB of an existing database: created=%v err=%v; want false, nil", created, err)
	}
}

// Right after a delete, CouchDB can refuse to create the database again with 412
// file_exists (a busy 3.4.3 does now and then; the proxy answers so here three times):
// RecreateDB deletes again and tries until the create is taken, and the database is empty.
func TestRecreateDBWaitsForTheDeletionOnRealCouchDB(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Waits{})
	ctx := context.Background()
	if _, err := c.BulkDocs(ctx, db, []json.RawMessage{json.RawMessage(`{"_id":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	p.Fail(couchfault.Fault{Method: http.MethodPut, PathPrefix: "/" + db, Times: 3, Status: http.StatusPreconditionFailed, Error: "file_exists"})
	if err := c.RecreateDB(ctx, db, 1, 1); err != nil {
		t.Fatalf("RecreateDB with the create refused three times: %v", err)
	}
	if n := p.Requests(http.MethodPut, "/"+db); n != 4 {
		t.Errorf("%d creates, want 3 refused and 1 taken", n)
	}
	if info, err := c.DBInfo(ctx, db); err != nil || info.DocCount != 0 {
		t.Errorf("after RecreateDB: %d documents, %v; want an empty database", info.DocCount, err)
	}

	// A create refused for good is an error that says so, not a missing database later.
	c = srv.ClientAt(t, p.URL, couch.Options{Waits: couch.Waits{Recreate: retry.Doubling(time.Millisecond, time.Millisecond, 3)}})
	p.Fail(couchfault.Fault{Method: http.MethodPut, PathPrefix: "/" + db, Times: 10, Status: http.StatusPreconditionFailed, Error: "file_exists"})
	if err := c.RecreateDB(ctx, db, 1, 1); err == nil || !strings.Contains(err.Error(), "still answered file_exists after deleting it 3 times") {
		t.Errorf("RecreateDB with the create always refused: %v", err)
	}
}

// CouchDB 3.4.3 answers 500 "badarg" to the DELETE of a database deleted a moment before
// (see DeleteDB); the proxy plays that answer. TestDeleteDBRidesOutBadargOnRealCouchDB
// meets CouchDB's own.
func TestDeleteDBTriesAgainAfterA5xxOnRealCouchDB(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Waits{})
	ctx := context.Background()
	p.Fail(couchfault.Fault{Method: http.MethodDelete, PathPrefix: "/" + db, Times: 2, Status: http.StatusInternalServerError, Error: "badarg"})
	if deleted, err := c.DeleteDB(ctx, db); err != nil || !deleted {
		t.Fatalf("DeleteDB after two 500s: deleted %v, %v; want the database deleted", deleted, err)
	}
	if _, err := c.DBInfo(ctx, db); couch.StatusOf(err) != http.StatusNotFound {
		t.Errorf("after DeleteDB: GET /db gave %v; want 404", err)
	}

	// Not every failure is worth another try, and the tries end.
	if err := c.RecreateDB(ctx, db, 1, 1); err != nil {
		t.Fatal(err)
	}
	p.Fail(couchfault.Fault{Method: http.MethodDelete, PathPrefix: "/" + db, Times: 1, Status: http.StatusUnauthorized, Error: "unauthorized"})
	if _, err := c.DeleteDB(ctx, db); couch.StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("DeleteDB answered 401: %v; want that 401 at once", err)
	}
	c = srv.ClientAt(t, p.URL, couch.Options{Waits: couch.Waits{Delete: retry.Doubling(time.Millisecond, time.Millisecond, 3)}})
	p.Fail(couchfault.Fault{Method: http.MethodDelete, PathPrefix: "/" + db, Times: 3, Status: http.StatusInternalServerError})
	if _, err := c.DeleteDB(ctx, db); couch.StatusOf(err) != http.StatusInternalServerError {
		t.Errorf("DeleteDB answered 500 three times: %v; want the 500 after three tries", err)
	}
	if _, err := c.DBInfo(ctx, db); err != nil {
		t.Errorf("the database went although every DELETE failed: %v", err)
	}
}

// CouchDB's answers for a node going away, come through the client: a 500 badrpc is a node
// down, an ordinary 500 is not, and CouchDB's own answer to the same request is neither.
func TestNodeDownAnswersOnRealCouchDB(t *testing.T) {
	srv, p, c, _ := proxied(t, couch.Waits{})
	ctx := context.Background()
	node := srv.Nodes[0]
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Status: http.StatusInternalServerError, Error: "badrpc"})
	_, _, err := c.Config(ctx, node, "smoosh.ratio_views", "max_size")
	if couch.StatusOf(err) != http.StatusInternalServerError || !couch.NodeDown(err) {
		t.Errorf("a 500 badrpc: %v; want NodeDown", err)
	}
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Status: http.StatusInternalServerError})
	_, _, err = c.Config(ctx, node, "smoosh.ratio_views", "max_size")
	if couch.StatusOf(err) != http.StatusInternalServerError || couch.NodeDown(err) {
		t.Errorf("an ordinary 500: %v; want an error that is not NodeDown", err)
	}
	if _, _, err := c.Config(ctx, node, "smoosh.ratio_views", "max_size"); err != nil {
		t.Errorf("CouchDB's own answer: %v", err)
	}
}

// A shard copy's _info held past the client's Waits.CopyRead is a node that does not answer;
// the caller's own deadline is not.
func TestCopyIndexInfoUnansweredIsNodeDownOnRealCouchDB(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Waits{CopyRead: 50 * time.Millisecond})
	ctx := context.Background()
	copies, err := c.ShardCopies(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cp := copies[0]
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Delay: time.Hour})
	_, _, err = c.CopyIndexInfo(ctx, cp, "_design/x")
	if !couch.NodeDown(err) || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("_info held past the client's CopyRead: %v; want NodeDown saying the node did not answer", err)
	}
	c = srv.ClientAt(t, p.URL, couch.Options{Waits: couch.Waits{CopyRead: time.Hour}})
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/_node/", Delay: time.Hour})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.CopyIndexInfo(short, cp, "_design/x"); err == nil || couch.NodeDown(err) {
		t.Errorf("_info cut by the caller's deadline: %v; want an error that is not NodeDown", err)
	}
	// Unheld, CouchDB answers that the copy has no such design document.
	if _, _, err := c.CopyIndexInfo(ctx, cp, "_design/x"); couch.StatusOf(err) != http.StatusNotFound {
		t.Errorf("_info of a design document the copy does not hold: %v; want CouchDB's 404", err)
	}
}

// viewDB is a database of this test with a design document _design/d whose view emit_null
// emits every document's id, reached through the proxy.
func viewDB(t *testing.T) (*couchfault.Proxy, *couch.Client, string) {
	t.Helper()
	_, p, c, db := proxied(t, couch.Waits{Outage: retry.Every(10*time.Millisecond, time.Minute)})
	if err := c.PutDesignDoc(context.Background(), db, couch.DesignDoc{ID: "_design/d", Language: "javascript",
		Views: map[string]couch.View{"emit_null": {Map: "function(doc) { emit(doc._id, null); }"}}}); err != nil {
		t.Fatal(err)
	}
	return p, c, db
}

// A node or proxy restarting (503) is waited for; it is not a timeout of the build. Nor is
// CouchDB's 500 timeout while a build goes on a failure: it is counted and asked again.
func TestWaitForViewRidesThroughAnUnreachableServerOnRealCouchDB(t *testing.T) {
	p, c, db := viewDB(t)
	view := "/" + db + "/_design/d/_view/emit_null"
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: view, Times: 2, Status: http.StatusServiceUnavailable})
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: view, Times: 1, Status: http.StatusInternalServerError, Error: "timeout"})
	timeouts, err := c.WaitForView(context.Background(), db, "_design/d", "emit_null", url.Values{})
	if err != nil || timeouts != 1 {
		t.Fatalf("timeouts %d, error %v; want the view after two 503s and a timeout, one timeout counted", timeouts, err)
	}
	if n := p.Requests(http.MethodGet, view); n != 4 {
		t.Errorf("%d view requests, want 4", n)
	}
}

// Any other error answer cannot change by asking again: it fails at once, with the answer.
func TestWaitForViewFailsAtOnceOnOtherErrorsOnRealCouchDB(t *testing.T) {
	p, c, db := viewDB(t)
	view := "/" + db + "/_design/d/_view/emit_null"
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: view, Times: 100, Status: http.StatusInternalServerError})
	_, err := c.WaitForView(context.Background(), db, "_design/d", "emit_null", url.Values{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500 unknown_error") {
		t.Fatalf("error %v; want the 500 answer", err)
	}
	if n := p.Requests(http.MethodGet, view); n != 1 {
		t.Errorf("%d view requests, want 1: a 500 that is not a timeout is not asked again", n)
	}
}
