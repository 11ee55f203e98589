package runner

// The runner's first request to CouchDB, against real Apache CouchDB 3.4.3 (the kit's single
// node, internal/couchdbtest) through internal/couchfault's proxy, which holds its answers
// past the client's request timeout.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/retry"
)

// A first request that times out is made again, and the server is described once it answers;
// one that keeps timing out past the client's outage limit is told, naming the URL.
func TestDescribeAsksAgainAfterATimeoutOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	p := couchfault.New(t, srv.URL())
	client := func(limit time.Duration) *couch.Client {
		// Far longer than a busy machine's CouchDB takes to answer, far shorter than the hold.
		c := srv.ClientAt(t, p.URL, couch.Options{RequestTimeout: 2 * time.Second,
			Waits: couch.Waits{Outage: retry.Every(10*time.Millisecond, limit)}})
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/", Delay: time.Hour, Times: 2})
	described, err := describe(ctx, client(time.Minute))
	if err != nil || described.Version != srv.Version || len(described.Nodes) != 1 {
		t.Fatalf("a server whose first two answers came too late: %+v, %v; want it described", described, err)
	}
	if n := p.Requests(http.MethodGet, "/"); n < 3 {
		t.Errorf("%d GET requests, want the timed-out one asked again", n)
	}

	p.Fail(couchfault.Fault{Method: http.MethodGet, PathPrefix: "/", Delay: time.Hour, Times: 1 << 20})
	if _, err := describe(ctx, client(300*time.Millisecond)); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "reaching CouchDB at "+p.URL) {
		t.Errorf("a server that keeps answering too late: %v (context %v); want an error naming its URL", err, ctx.Err())
	}
}
