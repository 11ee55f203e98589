package runner

// The runner's first request to CouchDB, against real Apache CouchDB 3.4.3 (the kit's single
// node, internal/couchdbtest) through internal/couchfault's proxy, which holds its answers
// past the client's request timeout, or through a port that refuses before it proxies.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
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

// A CouchDB that refuses connections at first (a Service whose endpoints the node's proxy
// does not have yet) is asked again and described once it listens; one that keeps refusing
// is told after refusedWait, naming the URL.
func TestDescribeAsksAgainWhileRefusedOnRealCouchDB(t *testing.T) {
	defer func(w time.Duration) { refusedWait = w }(refusedWait)
	refusedWait = 5 * time.Second
	srv := couchdbtest.Single(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	// A port that refuses: taken, then let go.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	target, _ := url.Parse(srv.URL())
	listening := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		l, err := net.Listen("tcp", addr)
		listening <- err
		if err == nil {
			_ = http.Serve(l, httputil.NewSingleHostReverseProxy(target))
		}
	}()
	c := srv.ClientAt(t, "http://"+addr, couch.Options{Waits: couch.Waits{Outage: retry.Every(50*time.Millisecond, time.Minute)}})
	described, err := describe(ctx, c)
	if lerr := <-listening; lerr != nil {
		t.Fatalf("the port was taken meanwhile: %v", lerr)
	}
	if err != nil || described.Version != srv.Version {
		t.Fatalf("a server that refused for a second: %+v, %v; want it described", described, err)
	}

	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	never := "http://" + l.Addr().String()
	_ = l.Close()
	refusedWait = 300 * time.Millisecond
	if _, err := describe(ctx, srv.ClientAt(t, never, couch.Options{Waits: couch.Waits{Outage: retry.Every(50*time.Millisecond, time.Minute)}})); err == nil ||
		ctx.Err() != nil || !strings.Contains(err.Error(), "reaching CouchDB at "+never) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a port that keeps refusing: %v (context %v); want the refusal, naming the URL", err, ctx.Err())
	}
}
