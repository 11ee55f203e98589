package runner

// The runner's first request to CouchDB, against internal/couchtest (a test server, not
// CouchDB) holding its answers past the client's request timeout.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchtest"
)

// A first request that times out is made again, and the server is described once it answers;
// one that keeps timing out past couch.UnreachableLimit is told, naming the URL.
func TestDescribeAsksAgainAfterATimeout(t *testing.T) {
	defer func(interval, limit time.Duration) { couch.RetryInterval, couch.UnreachableLimit = interval, limit }(couch.RetryInterval, couch.UnreachableLimit)
	couch.RetryInterval, couch.UnreachableLimit = 10*time.Millisecond, time.Minute
	fake := couchtest.New(t, couchtest.WithAdmin("admin", "pw"))
	c, err := couch.New(fake.URL, couch.Credentials{Username: "admin", Password: "pw"}, couch.Options{RequestTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fake.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/", Delay: time.Second, Times: 2})
	srv, err := describe(ctx, c)
	if err != nil || srv.Version == "" {
		t.Fatalf("a server whose first two answers came too late: %+v, %v; want it described", srv, err)
	}
	if n := fake.Requests(http.MethodGet, "/"); n < 3 {
		t.Errorf("%d GET requests, want the timed-out one asked again", n)
	}

	couch.UnreachableLimit = 300 * time.Millisecond
	fake.Fail(couchtest.Fault{Method: http.MethodGet, PathPrefix: "/", Delay: time.Second, Times: 1 << 20})
	if _, err := describe(ctx, c); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "reaching CouchDB at "+fake.URL) {
		t.Errorf("a server that keeps answering too late: %v (context %v); want an error naming its URL", err, ctx.Err())
	}
}
