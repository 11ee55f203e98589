package controllers

// couchDBStub answers the few requests the operator itself makes of a CouchDB, for envtest,
// where no CouchDB pods run: the cluster step's GET and POST /_cluster_setup and GET
// /_membership, and for an existing CouchDB the cleanup's GET /_all_dbs (it holds no
// database) and DELETE of a database (404). It is not CouchDB, and nothing about CouchDB's
// behaviour is tested against it: the cleanup's deletions are tested on the real single node
// (cleanup_test.go), the cluster's forming in the e2e suite on real CouchDB pods.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type couchDBStub struct {
	// URL is the stub's base URL.
	URL string

	user, password string
	nodes          []string

	mu sync.Mutex
	// requests are the method and path of every request the stub was sent.
	requests [][2]string
}

// newCouchDBStub starts a stub whose admin is user and password, with a cluster of nodes;
// stop closes it.
func newCouchDBStub(user, password string, nodes ...string) (s *couchDBStub, stop func()) {
	s = &couchDBStub{user: user, password: password, nodes: nodes}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = srv.URL
	return s, srv.Close
}

// startCouchDBStub is newCouchDBStub closed when t ends.
func startCouchDBStub(t *testing.T, user, password string, nodes ...string) *couchDBStub {
	t.Helper()
	s, stop := newCouchDBStub(user, password, nodes...)
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

func (s *couchDBStub) serve(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	if user, password, ok := r.BasicAuth(); !ok || user != s.user || password != s.password {
		answer(http.StatusUnauthorized, map[string]string{"error": "unauthorized", "reason": "Name or password is incorrect."})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	finished := false
	for _, r := range s.requests {
		finished = finished || r == [2]string{http.MethodPost, "/_cluster_setup"}
	}
	s.requests = append(s.requests, [2]string{r.Method, r.URL.Path})
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/_cluster_setup":
		state := "cluster_enabled"
		if finished {
			state = "cluster_finished"
		}
		answer(http.StatusOK, map[string]string{"state": state})
	case r.Method == http.MethodPost && r.URL.Path == "/_cluster_setup":
		answer(http.StatusCreated, map[string]bool{"ok": true})
	case r.Method == http.MethodGet && r.URL.Path == "/_membership":
		answer(http.StatusOK, map[string][]string{"all_nodes": s.nodes, "cluster_nodes": s.nodes})
	case r.Method == http.MethodGet && r.URL.Path == "/_all_dbs":
		answer(http.StatusOK, []string{})
	case r.Method == http.MethodDelete:
		answer(http.StatusNotFound, map[string]string{"error": "not_found", "reason": "Database does not exist."})
	default:
		answer(http.StatusNotFound, map[string]string{"error": "not_found", "reason": "not something the operator asks"})
	}
}
