package couchfault_test

// The proxy in front of real Apache CouchDB 3.4.3, the kit's single node that `make test`
// starts (internal/couchdbtest): what passes through is CouchDB's answer, and each fault
// does what it says and nothing else.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
)

// proxied is a database of this test on the single node and a client that reaches the node
// through a proxy.
func proxied(t *testing.T, opts couch.Options) (*couchdbtest.Server, *couchfault.Proxy, *couch.Client, string) {
	t.Helper()
	srv := couchdbtest.Single(t)
	db := srv.NewDB(t, "")
	p, c := srv.Proxied(t, opts)
	return srv, p, c, db
}

func docs(ids ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		out[i] = json.RawMessage(`{"_id":"` + id + `"}`)
	}
	return out
}

func TestRequestsPassThrough(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Options{})
	ctx := context.Background()
	info, err := c.Server(ctx)
	if err != nil || info.Version != srv.Version {
		t.Fatalf("GET / through the proxy: %+v, %v; want CouchDB %s", info, err, srv.Version)
	}
	if _, err := c.BulkDocs(ctx, db, docs("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := c.GetDoc(ctx, db, "missing", &struct{}{}); couch.StatusOf(err) != http.StatusNotFound {
		t.Errorf("a missing document through the proxy: %v; want CouchDB's 404", err)
	}
	if n := p.Requests(http.MethodPost, "/"+db+"/_bulk_docs"); n != 1 {
		t.Errorf("%d _bulk_docs requests counted, want 1", n)
	}
	if n := p.Requests("", "/"); n != 3 {
		t.Errorf("%d requests counted, want 3", n)
	}
}

// A Status fault answers as CouchDB answers an error, the given times, without passing the
// request on.
func TestStatusFault(t *testing.T) {
	_, p, c, db := proxied(t, couch.Options{})
	ctx := context.Background()
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Times: 2,
		Status: http.StatusInternalServerError, Error: "badrpc", Reason: "{'EXIT',noproc}"})
	for range 2 {
		_, err := c.BulkDocs(ctx, db, docs("a"))
		var ce *couch.Error
		if !errors.As(err, &ce) || ce.Status != 500 || ce.Name != "badrpc" || ce.Reason != "{'EXIT',noproc}" || !couch.NodeDown(err) {
			t.Fatalf("an injected 500 badrpc: %#v; want it as CouchDB's error answer", err)
		}
	}
	if info, err := c.DBInfo(ctx, db); err != nil || info.DocCount != 0 {
		t.Errorf("after two refused writes: %d documents, %v; want none written", info.DocCount, err)
	}
	if res, err := c.BulkDocs(ctx, db, docs("a")); err != nil || res[0].Error != "" {
		t.Errorf("the third write, the fault used up: %+v, %v", res, err)
	}
}

// A dropped connection is no answer; after the write, the write took effect.
func TestDropFault(t *testing.T) {
	_, p, c, db := proxied(t, couch.Options{})
	ctx := context.Background()
	bulk := "/" + db + "/_bulk_docs"
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Drop: true})
	if _, err := c.BulkDocs(ctx, db, docs("a")); couch.StatusOf(err) != 0 || !couch.Transient(err) {
		t.Errorf("a dropped connection: %v; want no answer, transient", err)
	}
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: bulk, Drop: true, AfterWrite: true})
	if _, err := c.BulkDocs(ctx, db, docs("b")); couch.StatusOf(err) != 0 || err == nil {
		t.Errorf("a connection dropped after the write: %v; want no answer", err)
	}
	info, err := c.DBInfo(ctx, db)
	if err != nil || info.DocCount != 1 {
		t.Errorf("%d documents, %v; want b only (a was dropped before CouchDB saw it)", info.DocCount, err)
	}
	res, err := c.BulkDocs(ctx, db, docs("b"))
	if err != nil || res[0].Error != "conflict" {
		t.Errorf("b written again: %+v, %v; want CouchDB's conflict", res, err)
	}
}

// A held request is answered late; one whose client gave up is never passed on.
func TestDelayFault(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Options{RequestTimeout: 200 * time.Millisecond})
	direct := srv.Client(t, couch.Options{})
	ctx := context.Background()
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", Delay: time.Hour})
	if _, err := c.BulkDocs(ctx, db, docs("a")); err == nil || couch.StatusOf(err) != 0 {
		t.Fatalf("a write held past the client's timeout: %v; want no answer", err)
	}
	if info, err := direct.DBInfo(ctx, db); err != nil || info.DocCount != 0 {
		t.Errorf("%d documents, %v; want the held write never passed on", info.DocCount, err)
	}
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/" + db, Delay: 10 * time.Millisecond})
	if _, err := srv.ClientAt(t, p.URL, couch.Options{}).DBInfo(ctx, db); err != nil {
		t.Errorf("a request held briefly: %v; want CouchDB's answer", err)
	}
}

// A held answer: CouchDB took the request, the client that waits no longer has no answer.
func TestDelayAnswerFault(t *testing.T) {
	srv, p, c, db := proxied(t, couch.Options{RequestTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	p.Fail(couchfault.Fault{Method: http.MethodPost, PathPrefix: "/" + db + "/_bulk_docs", DelayAnswer: time.Hour})
	if _, err := c.BulkDocs(ctx, db, docs("a")); err == nil || couch.StatusOf(err) != 0 {
		t.Fatalf("a write whose answer is held past the client's timeout: %v; want no answer", err)
	}
	// CouchDB may still be writing when the client gives up (a loaded machine): ask until it
	// has, for a minute.
	direct := srv.Client(t, couch.Options{})
	var info couch.DBInfo
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		info, err = direct.DBInfo(ctx, db)
		return err == nil && info.DocCount == 1, nil
	})
	if err != nil {
		t.Errorf("%d documents a minute after the write; want the write taken", info.DocCount)
	}
}

// DropRows makes a short read out of a real view answer.
func TestDropRowsFault(t *testing.T) {
	_, p, c, db := proxied(t, couch.Options{})
	ctx := context.Background()
	if _, err := c.BulkDocs(ctx, db, docs("a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	if err := c.PutDesignDoc(ctx, db, couch.DesignDoc{ID: "_design/d", Language: "javascript",
		Views: map[string]couch.View{"ids": {Map: "function(doc) { emit(doc._id, null); }"}}}); err != nil {
		t.Fatal(err)
	}
	view := "/" + db + "/_design/d/_view/ids"
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: view, DropRows: 1})
	short, err := c.ReadView(ctx, db, "_design/d", "ids", url.Values{})
	if err != nil || short.Rows != 2 {
		t.Fatalf("a view read one row short: %+v, %v; want 2 rows", short, err)
	}
	full, err := c.ReadView(ctx, db, "_design/d", "ids", url.Values{})
	if err != nil || full.Rows != 3 {
		t.Errorf("the next read: %+v, %v; want CouchDB's 3 rows", full, err)
	}
}

// A server that does not answer is a gateway's 502 at the proxy.
func TestServerDownIsABadGateway(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	_ = l.Close()
	p := couchfault.New(t, down)
	c, err := couch.New(p.URL, couch.Credentials{}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Server(context.Background()); couch.StatusOf(err) != http.StatusBadGateway || !couch.NodeDown(err) {
		t.Errorf("through a proxy to nothing: %v; want 502, a node that does not answer", err)
	}
}
