// Package couchtest is a test server, not CouchDB: behaviour from recordings of CouchDB 3.4.3.
//
// It speaks the part of the Apache CouchDB 3.4 HTTP API that couchbench's runner uses, so that
// the runner's tests can run against net/http/httptest instead of a real server. Its answers
// are shaped after responses recorded from a real CouchDB 3.4.3 (testdata/, copied from
// shared/couchdb; see testdata/README.md): headers, bodies, the trailing "\n", the "\r\n"
// framing of view rows, the error texts. Where nothing was recorded, a comment says where an
// answer comes from. State lives in memory.
//
// It must never pass for CouchDB in numbers. It measures nothing and invents no timings: it
// builds an index at once and shows no tasks while it does, so nothing about how long a
// build takes can be tested against it (the runner's build times are checked against real
// CouchDB's log, internal/indexing). Sizes it reports are byte counts of the JSON it stores, revision hashes
// are its own, and views are evaluated by name, not by running their code (see views.go).
//
// It is for Go tests only; nothing in production may use it.
package couchtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Server is a CouchDB-API test server (not CouchDB): state in memory.
type Server struct {
	// URL is the base URL, without a trailing slash.
	URL string

	cfg     config
	closing chan struct{} // closed on cleanup: ends waits that would hold up the httptest server's Close

	mu       sync.Mutex
	dbs      map[string]*database
	conf     map[string]map[string]map[string]string // node -> section -> key -> value
	stats    map[string]*nodeStats
	finished bool // POST /_cluster_setup finish_cluster was done
	requests []requestLine
	faults   []*pendingFault
	ids      idGenerator
}

type config struct {
	user, password  string
	nodes           []string
	maxDocumentSize int
	maxBulkDocs     int // 0: no limit, as in CouchDB 3.4.3
}

// Option configures a Server.
type Option func(*config)

// WithAdmin sets the server admin. Everything but GET / and GET /_up then needs Basic auth
// with this user and password (default: admin / "secret").
func WithAdmin(user, password string) Option {
	return func(c *config) { c.user, c.password = user, password }
}

// WithNodes sets the cluster's node names (default: the single node "couchdb@127.0.0.1").
// /_membership lists all of them, /_node/_local is the first, and new databases get
// n = min(3, nodes) copies, as the recorded single node (n=1) and 3-node cluster (n=3) did.
func WithNodes(names ...string) Option {
	return func(c *config) { c.nodes = append([]string(nil), names...) }
}

// WithMaxDocumentSize sets the compiled-in default of [couchdb] max_document_size (8000000).
// A value set through the config API on the first node takes precedence, as it did in the
// recordings (03_config_put_max_document_size_1000).
func WithMaxDocumentSize(bytes int) Option {
	return func(c *config) { c.maxDocumentSize = bytes }
}

// WithMaxBulkDocsCount makes _bulk_docs answer 413 when a request carries more than n docs.
// CouchDB 3.4.3 has no such limit (neither its source nor its default.ini knows a
// max_bulk_docs_count), so it is off by default and its answer is couchtest's own; it is
// there for testing a client's batch splitting.
func WithMaxBulkDocsCount(n int) Option {
	return func(c *config) { c.maxBulkDocs = n }
}

const (
	defaultNode            = "couchdb@127.0.0.1"
	defaultMaxDocumentSize = 8000000
	serverHeader           = "CouchDB/3.4.3 (Erlang OTP/25)"
)

// New starts a server on a local port; t's cleanup closes it.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, stop, err := Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

// Start starts a server on a local port, for a TestMain (New is for a test); stop closes it.
func Start(opts ...Option) (s *Server, stop func(), err error) {
	cfg := config{user: "admin", password: "secret", nodes: []string{defaultNode}, maxDocumentSize: defaultMaxDocumentSize}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.nodes) == 0 {
		return nil, nil, errors.New("couchtest: WithNodes needs at least one node name")
	}
	s = &Server{
		cfg:     cfg,
		closing: make(chan struct{}),
		dbs:     map[string]*database{},
		conf:    map[string]map[string]map[string]string{},
		stats:   map[string]*nodeStats{},
		ids:     newIDGenerator(),
	}
	for _, node := range cfg.nodes {
		s.conf[node] = initialConfig(len(cfg.nodes))
		s.stats[node] = &nodeStats{}
	}
	ts := httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = ts.URL
	return s, func() {
		close(s.closing)
		ts.Close()
	}, nil
}

// reply is one answer. Handlers build replies instead of writing them so that a fault can
// run a request and then drop the connection instead of answering (faults.go).
type reply struct {
	status      int
	body        []byte // JSON text; send adds the final "\n"
	header      map[string]string
	noRequestID bool
}

func jsonReply(status int, v any) reply { return reply{status: status, body: marshal(v)} }

type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func errorReply(status int, name, reason string) reply {
	return jsonReply(status, errorBody{name, reason})
}

// Error answers recorded from CouchDB 3.4.3 (fixtures named in parentheses).
var (
	errDBMissing  = errorReply(http.StatusNotFound, "not_found", "Database does not exist.") // 02_get_missing_db_404
	errDocMissing = errorReply(http.StatusNotFound, "not_found", "missing")                  // 03_get_missing_doc_404
	errConflict   = errorReply(http.StatusConflict, "conflict", "Document update conflict.") // 03_put_doc_without_rev_409
	errBadJSON    = errorReply(http.StatusBadRequest, "bad_request", "invalid UTF-8 JSON")   // 03_bulk_docs_invalid_json_400
)

func methodNotAllowed(allowed string) reply {
	rep := errorReply(http.StatusMethodNotAllowed, "method_not_allowed", "Only "+allowed+" allowed")
	rep.header = map[string]string{"Allow": allowed}
	return rep
}

// send writes a reply with the headers every recorded answer had. The body is written
// before its "\n", not appended to: replies such as errDocMissing are shared.
func send(w http.ResponseWriter, rep reply) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "must-revalidate")
	h.Set("Server", serverHeader)
	if !rep.noRequestID {
		h.Set("X-Couch-Request-ID", fmt.Sprintf("%010x", rand.Uint64N(1<<40)))
	}
	for k, v := range rep.header {
		h.Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	_, _ = w.Write([]byte{'\n'})
}

// handle counts the request, applies a pending fault if one matches, and answers.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	if f, ok := s.takeFault(r); ok {
		if !s.applyFault(w, r, f) {
			return
		}
	}
	send(w, s.serve(r))
}

func (s *Server) serve(r *http.Request) reply {
	if rep, ok := s.authorize(r); !ok {
		return rep
	}
	return s.route(r)
}

// pathSegments splits the escaped path and unescapes each segment, so that a doc id with an
// escaped "/" ("_design%2Fbench") stays one segment.
func pathSegments(r *http.Request) []string {
	p := strings.Trim(r.URL.EscapedPath(), "/")
	if p == "" {
		return nil
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if u, err := url.PathUnescape(part); err == nil {
			parts[i] = u
		}
	}
	return parts
}

func (s *Server) route(r *http.Request) reply {
	segs := pathSegments(r)
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet // net/http leaves the body out
	}
	if len(segs) == 0 {
		if method != http.MethodGet {
			return methodNotAllowed("GET,HEAD")
		}
		return reply{status: http.StatusOK, body: fixtureBody("01_get_root")}
	}
	if strings.HasPrefix(segs[0], "_") {
		return s.routeServer(r, method, segs)
	}
	return s.routeDB(r, method, segs)
}

// routeServer answers the server-level endpoints (paths starting with "_").
func (s *Server) routeServer(r *http.Request, method string, segs []string) reply {
	one := len(segs) == 1
	switch {
	case one && segs[0] == "_up":
		if method != http.MethodGet {
			return methodNotAllowed("GET,HEAD")
		}
		return reply{status: http.StatusOK, body: fixtureBody("01_get_up")}
	case one && segs[0] == "_membership":
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.membership()
	case one && segs[0] == "_active_tasks":
		if method != http.MethodGet {
			return methodNotAllowed("GET,HEAD")
		}
		return s.activeTasks()
	case one && segs[0] == "_cluster_setup":
		return s.clusterSetup(r, method)
	case segs[0] == "_node" && len(segs) >= 2:
		return s.routeNode(r, method, segs[1], segs[2:])
	}
	return errDocMissing
}

// membership lists the nodes, sorted as CouchDB sorts them; it sends no X-Couch-Request-ID
// here (01_get_membership).
func (s *Server) membership() reply {
	nodes := slices.Sorted(slices.Values(s.cfg.nodes))
	rep := jsonReply(http.StatusOK, struct {
		AllNodes     []string `json:"all_nodes"`
		ClusterNodes []string `json:"cluster_nodes"`
	}{nodes, nodes})
	rep.noRequestID = true
	return rep
}

type requestLine struct{ method, path string }

func (s *Server) count(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, requestLine{r.Method, r.URL.Path})
}

// Requests counts the requests received so far (answered, failed or dropped) whose method is
// method (empty: any) and whose unescaped path starts with pathPrefix: a test asserts retries
// with it.
func (s *Server) Requests(method, pathPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.requests {
		if (method == "" || l.method == method) && strings.HasPrefix(l.path, pathPrefix) {
			n++
		}
	}
	return n
}

// isJSONRequest is CouchDB's Content-Type check on POST bodies.
func isJSONRequest(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(strings.ToLower(ct)) == "application/json"
}

// errBadContentType is CouchDB's answer to a POST body that is not declared JSON (not
// recorded; text from CouchDB 3.4.3's chttpd).
var errBadContentType = errorReply(http.StatusUnsupportedMediaType, "bad_content_type", "Content-Type must be application/json")

// absoluteURL is how CouchDB writes Location headers: absolute, on the host asked.
func absoluteURL(r *http.Request, segments ...string) string {
	var b strings.Builder
	b.WriteString("http://")
	b.WriteString(r.Host)
	for _, seg := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	return b.String()
}

func rawJSON(s string) json.RawMessage { return marshal(s) }
