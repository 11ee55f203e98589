// Package couchfault puts faults between a test and a real Apache CouchDB: a reverse proxy
// (net/http/httputil) that passes every request on to the server and its answer back,
// except the requests a test has told it to treat otherwise. It makes what a real server
// does only now and then, or not on demand: a 5xx such as CouchDB's 500 badrpc from a node
// going away, a 412 nodedown, a connection cut before or after the server took the request,
// an answer held back, and a view answer short of rows, as a copy that lags gives one.
// Everything else is CouchDB's own answer.
//
// A node that stops is not played here: the fault tests stop real nodes
// (couchdbtest.Server.StopNode). A request the proxy cannot pass on (its server is down)
// is answered 502, as a gateway in front of CouchDB answers it.
//
// It is for Go tests only.
package couchfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what to do to the next matching requests instead of passing them on as they
// are. Delay applies first, then Status, Drop, DropRows or DelayAnswer.
type Fault struct {
	// Method and PathPrefix select the requests (empty: any); the prefix is matched against
	// the unescaped path.
	Method, PathPrefix string
	// Times is how many matching requests get the fault (less than 1 counts as 1); then it
	// is used up.
	Times int
	// Status answers with this status and CouchDB's error body {"error":Error,"reason":
	// Reason} without passing the request on; Error defaults to "unknown_error".
	Status        int
	Error, Reason string
	// Drop closes the connection without an answer. With AfterWrite the request is passed
	// on first and the server's answer thrown away: the request took effect (a _bulk_docs
	// stored its documents), and the client cannot know.
	Drop, AfterWrite bool
	// Delay holds the request this long before it goes on; a request whose client gives up
	// meanwhile is not passed on.
	Delay time.Duration
	// DropRows passes the request on and takes the last DropRows rows out of the view answer
	// (total_rows stays): the answer of a copy that lacks documents.
	DropRows int
	// DelayAnswer passes the request on and holds CouchDB's answer this long: the request
	// took effect, its answer is late or, held longer than the client waits, lost.
	DelayAnswer time.Duration
}

// Proxy is a fault-injecting reverse proxy in front of one CouchDB base URL.
type Proxy struct {
	// URL is the proxy's base URL, without a trailing slash.
	URL string

	proxy   *httputil.ReverseProxy
	closing chan struct{} // closed on cleanup: ends the holds that would keep the server's Close waiting

	mu       sync.Mutex
	faults   []*pending
	requests []request
}

type pending struct {
	Fault
	left int
}

type request struct{ method, path string }

// New starts a proxy to target (a CouchDB base URL) on a local port; t's cleanup closes it.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("couchfault: target %q: %v", target, err)
	}
	p := &Proxy{closing: make(chan struct{})}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = u.Host
		},
		// Every byte as it comes: a waiting view request is answered when its index is
		// written, and the client times that answer's first byte.
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		ModifyResponse: func(resp *http.Response) error {
			f, _ := resp.Request.Context().Value(faultKey{}).(answerFault)
			if f.DelayAnswer > 0 && !p.hold(f.client, f.DelayAnswer) {
				return errors.New("couchfault: the client left while its answer was held")
			}
			if f.DropRows > 0 && resp.StatusCode == http.StatusOK {
				return dropRows(resp, f.DropRows)
			}
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = srv.URL
	t.Cleanup(func() {
		close(p.closing)
		srv.Close()
	})
	return p
}

// Fail queues a fault. Faults apply in the order they were queued: a request takes the
// first one that matches and has uses left, and at most one. Safe for concurrent use.
func (p *Proxy) Fail(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &pending{Fault: f, left: max(1, f.Times)})
}

// Requests counts the requests that reached the proxy with method (empty: any) and a path
// that starts with prefix (unescaped), faults included.
func (p *Proxy) Requests(method, prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.requests {
		if (method == "" || r.method == method) && strings.HasPrefix(r.path, prefix) {
			n++
		}
	}
	return n
}

func (p *Proxy) take(r *http.Request) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, request{r.Method, r.URL.Path})
	for i, f := range p.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.HasPrefix(r.URL.Path, f.PathPrefix) {
			if f.left--; f.left == 0 {
				p.faults = append(p.faults[:i], p.faults[i+1:]...)
			}
			return f.Fault, true
		}
	}
	return Fault{}, false
}

// faultKey carries an answerFault to ModifyResponse.
type faultKey struct{}

// answerFault is a fault that acts on CouchDB's answer, and the context of the client that
// waits for it.
type answerFault struct {
	Fault
	client context.Context
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := p.take(r)
	if !ok {
		p.proxy.ServeHTTP(w, r)
		return
	}
	if f.Delay > 0 {
		// net/http notices a client that hung up only once the request's body is read.
		body, err := io.ReadAll(r.Body)
		if err != nil || !p.hold(r.Context(), f.Delay) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	switch {
	case f.Status != 0:
		name := f.Error
		if name == "" {
			name = "unknown_error"
		}
		reason := f.Reason
		if reason == "" {
			reason = "injected by couchfault"
		}
		body, _ := json.Marshal(map[string]string{"error": name, "reason": reason})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
		w.WriteHeader(f.Status)
		_, _ = w.Write(append(body, '\n'))
	case f.Drop:
		if f.AfterWrite {
			p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		}
		hangUp(w)
	case f.DropRows > 0 || f.DelayAnswer > 0:
		// CouchDB finishes a request it took even when the client gives up meanwhile, as over
		// a network: the request goes on without the client's cancellation, only the held
		// answer waits on the client.
		out := context.WithValue(context.WithoutCancel(r.Context()), faultKey{}, answerFault{Fault: f, client: r.Context()})
		p.proxy.ServeHTTP(w, r.WithContext(out))
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// hold waits d; false if the client went away or the proxy is closing first.
func (p *Proxy) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-p.closing:
		return false
	}
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler) // net/http's own way to abort a response
}

// dropRows takes the last n rows out of a view answer.
func dropRows(resp *http.Response, n int) error {
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(data, &answer); err != nil {
		return fmt.Errorf("couchfault: DropRows on an answer that is not a JSON object: %w", err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(answer["rows"], &rows); err != nil {
		return fmt.Errorf("couchfault: DropRows on an answer without rows: %w", err)
	}
	rows = rows[:max(len(rows)-n, 0)]
	if answer["rows"], err = json.Marshal(rows); err != nil {
		return err
	}
	if data, err = json.Marshal(answer); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	resp.Header.Del("Transfer-Encoding")
	return nil
}
