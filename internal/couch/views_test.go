package couch

// WaitForView against internal/couchtest, the in-repo fake on CouchDB 3.4.3's recorded
// answers, because the answers here are injected faults (503s, an unknown 500). The real
// server's own permanent error, 500 unknown_query_language, is internal/runner's
// TestUnknownLanguageFailsTheIndexStepOnRealCouchDB.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couchtest"
)

func viewServer(t *testing.T) (*couchtest.Server, *Client) {
	t.Helper()
	srv, c := fakeAdmin(t)
	ctx := context.Background()
	if _, err := c.CreateDB(ctx, "db", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.PutDesignDoc(ctx, "db", DesignDoc{ID: "_design/d", Language: "javascript",
		Views: map[string]View{"emit_null": {Map: "function(doc) { emit(doc._id, null); }"}}}); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

const viewPrefix = "/db/_design/d/_view/emit_null"

// A node or proxy restarting (503) is waited for; it is not a timeout of the build.
func TestWaitForViewRidesThroughAnUnreachableServer(t *testing.T) {
	srv, c := viewServer(t)
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: viewPrefix, Times: 2, Status: http.StatusServiceUnavailable})
	timeouts, err := c.WaitForView(context.Background(), "db", "_design/d", "emit_null", url.Values{})
	if err != nil || timeouts != 0 {
		t.Fatalf("timeouts %d, error %v; want the view after two 503s, and no timeout counted", timeouts, err)
	}
	if n := srv.Requests(http.MethodGet, viewPrefix); n != 3 {
		t.Errorf("%d view requests, want 3", n)
	}
}

// Any other error answer cannot change by asking again: it fails at once, with the answer.
func TestWaitForViewFailsAtOnceOnOtherErrors(t *testing.T) {
	srv, c := viewServer(t)
	srv.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: viewPrefix, Times: 100, Status: http.StatusInternalServerError})
	_, err := c.WaitForView(context.Background(), "db", "_design/d", "emit_null", url.Values{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500 unknown_error") {
		t.Fatalf("error %v; want the 500 answer", err)
	}
	if n := srv.Requests(http.MethodGet, viewPrefix); n != 1 {
		t.Errorf("%d view requests, want 1: a 500 that is not a timeout is not asked again", n)
	}
}
