package controllers

// couchDBStub stands where a CouchDB would be, for envtest, where no CouchDB pods run, and
// records what it is sent. The manager sends CouchDB nothing (its Jobs do, which the harness
// plays), so the tests that name it check that it saw no request; it answers every request
// 404 and is not CouchDB.

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type couchDBStub struct {
	// URL is the stub's base URL.
	URL string

	mu sync.Mutex
	// requests are the method and path of every request the stub was sent.
	requests [][2]string
}

// newCouchDBStub starts a stub; stop closes it.
func newCouchDBStub() (s *couchDBStub, stop func()) {
	s = &couchDBStub{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, [2]string{r.Method, r.URL.Path})
		s.mu.Unlock()
		http.NotFound(w, r)
	}))
	s.URL = srv.URL
	return s, srv.Close
}

// startCouchDBStub is newCouchDBStub closed when t ends.
func startCouchDBStub(t *testing.T) *couchDBStub {
	t.Helper()
	s, stop := newCouchDBStub()
	t.Cleanup(stop)
	return s
}

// Requests counts the requests sent with method (empty: any) to a path that starts with
// prefix.
func (s *couchDBStub) Requests(method, prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if (method == "" || r[0] == method) && strings.HasPrefix(r[1], prefix) {
			n++
		}
	}
	return n
}
