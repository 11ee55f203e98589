package couchtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// Fault is trouble to inject into the next matching requests, for testing a client's
// retries and error handling. It applies in this order: Delay, then Status or Drop.
type Fault struct {
	// Method and PathPrefix select the requests (empty: any); the prefix is matched against
	// the unescaped path.
	Method, PathPrefix string
	// Times is how many matching requests get the fault (less than 1 counts as 1); then it
	// is used up.
	Times int
	// Status answers with this status and {"error":Error,"reason":...}, without running the
	// request; Error defaults to "unknown_error". CouchDB's own errors include 412
	// "nodedown", for a request it forwards to a node that is down.
	Status int
	Error  string
	// Drop closes the connection without an answer. With AfterWrite the request runs first
	// (a _bulk_docs stores its documents), so that a client's retry meets conflicts.
	Drop       bool
	AfterWrite bool
	// Delay holds the request this long, then answers normally; a request whose client
	// gives up meanwhile is not run.
	Delay time.Duration
}

type pendingFault struct {
	Fault
	left int
}

// Fail queues a fault. Faults apply in the order they were queued: a request takes the
// first one that matches and has uses left, and at most one. Safe for concurrent use.
func (s *Server) Fail(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &pendingFault{Fault: f, left: max(1, f.Times)})
}

func (s *Server) takeFault(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.HasPrefix(r.URL.Path, f.PathPrefix) {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return f.Fault, true
		}
	}
	return Fault{}, false
}

// applyFault reports whether the request should still be answered normally.
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	if f.Delay > 0 {
		// net/http notices a client hanging up only once the request body is read.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !s.sleep(r.Context(), f.Delay) {
			return false
		}
	}
	switch {
	case f.Status != 0:
		name := f.Error
		if name == "" {
			name = "unknown_error"
		}
		send(w, errorReply(f.Status, name, "injected by couchtest"))
		return false
	case f.Drop:
		if f.AfterWrite {
			s.serve(r)
		}
		hangUp(w)
		return false
	}
	return true
}

// hangUp closes the client's connection without a response.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http's own way to abort a response
}

// sleep waits d; false if the client went away or the server is closing first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}
