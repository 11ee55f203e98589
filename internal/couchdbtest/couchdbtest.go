// Package couchdbtest gives Go tests a real Apache CouchDB: the project's CouchDB kit
// (../shared/apache-couchdb, a relocatable Apache CouchDB 3.4.3 and its couchdb.sh), started
// by `make test` (hack/with-couchdb.sh) as a single node and a 3-node cluster on loopback.
//
// A test calls Single or Cluster, makes its own database with NewDB (deleted when the test
// ends) and talks to the server with Client. Without the environment that hack/with-couchdb.sh
// sets, the test FAILS with a message saying to run `make test`: a real-server test that
// skips would hide exactly what it exists to catch.
//
// Tests that stop and restart nodes start an instance of their own with Own (a separate
// directory, ports and Erlang node names), so that they never disturb the shared instances.
//
// The shared instances are shared by every test binary of a `go test ./...` run, and some
// of what the tests check is node-wide: the couchdb.mrview.map_doc counter, view compaction
// settings, [fabric] request_timeout. Single and Cluster therefore hold an exclusive file
// lock on the shared instances for the calling test (and its subtests), so that the tests of
// two packages never run against them at the same time. Tests of one package that call
// t.Parallel share the lock and are not isolated from each other.
package couchdbtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchfault"
	"github.com/couchbench/couchbench/internal/retry"
)

// The environment hack/with-couchdb.sh sets.
const (
	// EnvURL is the single node's base URL.
	EnvURL = "COUCHBENCH_TEST_COUCHDB_URL"
	// EnvClusterURLs is the 3-node cluster's base URLs, one per node, comma-separated.
	EnvClusterURLs = "COUCHBENCH_TEST_COUCHDB_CLUSTER_URLS"
	// EnvUser and EnvPassword are the server admin of both instances.
	EnvUser     = "COUCHBENCH_TEST_COUCHDB_USER"
	EnvPassword = "COUCHBENCH_TEST_COUCHDB_PASSWORD"
	// EnvKit is the kit's directory (couchdb.sh and the release tarballs).
	EnvKit = "COUCHBENCH_TEST_COUCHDB_KIT"
	// EnvOwnDir is where tests keep the instances they start themselves (one directory
	// per instance name); hack/with-couchdb.sh stops whatever runs there when the tests end.
	EnvOwnDir = "COUCHBENCH_TEST_COUCHDB_OWN_DIR"
	// EnvFaultPort is node 1's port of the fault tests' own cluster (FaultPort).
	EnvFaultPort = "COUCHBENCH_TEST_COUCHDB_FAULT_PORT"
	// EnvDir and EnvClusterDir are the kit directories of the single node and of the
	// cluster: node i writes its log to <dir>/node<i>/couchdb.log.
	EnvDir        = "COUCHBENCH_TEST_COUCHDB_DIR"
	EnvClusterDir = "COUCHBENCH_TEST_COUCHDB_CLUSTER_DIR"
)

// DefaultFaultPort is node 1's port of the fault tests' own 3-node cluster: 22984-22986 (and
// Erlang 23984-23986), below Linux's ephemeral ports, so that no other program's outgoing
// connection can hold a port a stopped node must bind again.
const DefaultFaultPort = 22984

// FaultPort is node 1's port of the fault tests' own cluster: $COUCHBENCH_TEST_COUCHDB_FAULT_PORT
// (the Makefile's COUCHDB_FAULT_PORT), else DefaultFaultPort.
func FaultPort() int {
	if p, err := strconv.Atoi(os.Getenv(EnvFaultPort)); err == nil && p > 0 {
		return p
	}
	return DefaultFaultPort
}

const runMakeTest = "run the tests with `make test`, which starts Apache CouchDB 3.4.3 from the kit " +
	"(COUCHDB_KIT, default ../shared/apache-couchdb: a single node on 15984 and a 3-node cluster on 25984) " +
	"and sets " + EnvURL + ", " + EnvClusterURLs + ", " + EnvUser + ", " + EnvPassword + ", " + EnvKit + ", " + EnvDir + ", " +
	EnvClusterDir + " and " + EnvOwnDir

// Server is a running Apache CouchDB: one node or a cluster.
type Server struct {
	// URLs are the nodes' base URLs (no trailing slash), node 1 first.
	URLs     []string
	User     string
	Password string
	// Nodes are the Erlang node names of the cluster (/_membership cluster_nodes).
	Nodes []string
	// Version is CouchDB's version (GET /).
	Version string

	// The kit (own instances only) and the instance's directory.
	kit, dir string
}

// URL is node 1's base URL, the one the runner's client talks to.
func (s *Server) URL() string { return s.URLs[0] }

// Credentials are the server admin's.
func (s *Server) Credentials() couch.Credentials {
	return couch.Credentials{Username: s.User, Password: s.Password}
}

// Replicas is the n of the test databases: one copy per node, at most 3 (CouchDB's n).
func (s *Server) Replicas() int { return min(3, len(s.Nodes)) }

// Client is a couch client for node 1.
func (s *Server) Client(t testing.TB, opts couch.Options) *couch.Client {
	t.Helper()
	return s.NodeClient(t, 1, opts)
}

// NodeClient is a couch client for node i (1-based).
func (s *Server) NodeClient(t testing.TB, i int, opts couch.Options) *couch.Client {
	t.Helper()
	return s.ClientAt(t, s.URLs[i-1], opts)
}

// Proxied puts a fault-injecting proxy (internal/couchfault) in front of node 1 and returns
// it with a client of the admin through it.
func (s *Server) Proxied(t testing.TB, opts couch.Options) (*couchfault.Proxy, *couch.Client) {
	t.Helper()
	p := couchfault.New(t, s.URL())
	return p, s.ClientAt(t, p.URL, opts)
}

// ClientAt is a couch client of the server's admin at proxyURL: a proxy in front of the server.
func (s *Server) ClientAt(t testing.TB, proxyURL string, opts couch.Options) *couch.Client {
	t.Helper()
	c, err := couch.New(proxyURL, s.Credentials(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Single is the single-node instance `make test` started. The calling test holds the
// shared instances' lock until it ends.
func Single(t testing.TB) *Server {
	t.Helper()
	return shared(t, "single node", EnvURL, EnvDir)
}

// Cluster is the 3-node cluster `make test` started. The calling test holds the shared
// instances' lock until it ends.
func Cluster(t testing.TB) *Server {
	t.Helper()
	return shared(t, "3-node cluster", EnvClusterURLs, EnvClusterDir)
}

func shared(t testing.TB, what, env, dirEnv string) *Server {
	t.Helper()
	urls, user, password, dir := os.Getenv(env), os.Getenv(EnvUser), os.Getenv(EnvPassword), os.Getenv(dirEnv)
	if urls == "" || user == "" || dir == "" {
		t.Fatalf("%s, %s or %s is not set, and this test needs the real Apache CouchDB %s: %s", env, EnvUser, dirEnv, what, runMakeTest)
	}
	lockShared(t)
	s := &Server{URLs: strings.Split(urls, ","), User: user, Password: password, dir: dir}
	if err := s.describe(context.Background()); err != nil {
		t.Fatalf("the Apache CouchDB %s of `make test` (%s=%s) cannot be used: %v; `make test` starts it (hack/with-couchdb.sh)", what, env, urls, err)
	}
	return s
}

// describe reads the version and the cluster's nodes, and checks that every node answers.
func (s *Server) describe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for i, u := range s.URLs {
		c, err := couch.New(u, s.Credentials(), couch.Options{})
		if err != nil {
			return err
		}
		info, err := c.Server(ctx)
		if err != nil {
			return err
		}
		if i == 0 {
			s.Version = info.Version
			m, err := c.Membership(ctx)
			if err != nil {
				return err
			}
			s.Nodes = m.ClusterNodes
		}
	}
	if len(s.Nodes) != len(s.URLs) {
		return fmt.Errorf("/_membership lists %d cluster nodes %v, the environment %d URLs", len(s.Nodes), s.Nodes, len(s.URLs))
	}
	return nil
}

// lock is the shared instances' cross-process lock, held while any test of this process
// that asked for it runs.
var lock struct {
	mu   sync.Mutex
	refs int
	file *os.File
}

func lockShared(t testing.TB) {
	t.Helper()
	lock.mu.Lock()
	defer lock.mu.Unlock()
	if lock.refs == 0 {
		path := filepath.Join(os.TempDir(), "couchbench-couchdbtest-"+sanitize(os.Getenv(EnvURL))+".lock")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("opening the shared CouchDB lock: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Logf("waiting for another test binary to finish with the shared CouchDB instances (lock %s)", path)
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				_ = f.Close()
				t.Fatalf("locking the shared CouchDB instances: %v", err)
			}
		}
		lock.file = f
	}
	lock.refs++
	t.Cleanup(func() {
		lock.mu.Lock()
		defer lock.mu.Unlock()
		lock.refs--
		if lock.refs == 0 {
			_ = lock.file.Close() // releases the flock
			lock.file = nil
		}
	})
}

// NewDB creates a database for this test, "cb-test-<name>-<random>" with q=2 and one copy
// per node (at most 3), and deletes it when the test ends. An empty name uses the test's.
func (s *Server) NewDB(t testing.TB, name string) string {
	t.Helper()
	if name == "" {
		name = t.Name()
	}
	db := DBName(name)
	c := s.Client(t, couch.Options{})
	if created, err := c.CreateDB(context.Background(), db, 2, s.Replicas()); err != nil || !created {
		t.Fatalf("creating database %s: created=%v, %v", db, created, err)
	}
	s.DeleteLater(t, db)
	return db
}

// DeleteLater deletes databases (those the code under test made) when the test ends.
func (s *Server) DeleteLater(t testing.TB, dbs ...string) {
	t.Helper()
	c := s.Client(t, couch.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, db := range dbs {
			if _, err := c.DeleteDB(ctx, db); err != nil {
				t.Errorf("deleting test database %s: %v", db, err)
			}
		}
	})
}

// DBName is "cb-test-<name>-<8 random hex digits>" in CouchDB's database name characters.
func DBName(name string) string {
	name = sanitize(name)
	if len(name) > 60 {
		name = name[:60]
	}
	return "cb-test-" + strings.Trim(name, "-") + "-" + RandomID()
}

// RandomID is 8 random lowercase hex digits, for names that must not collide across runs.
func RandomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}

// WaitForEveryCopy waits until every shard copy of db holds the documents of its range, docs
// in all: a write to a cluster is acknowledged once 2 of the 3 copies have it, and a copy
// that is behind answers a view with fewer rows, or builds its index over fewer documents
// and then again over the rest. The bound is for a copy that never catches up, not a
// measurement.
func (s *Server) WaitForEveryCopy(t testing.TB, db string, docs int64) {
	t.Helper()
	c := s.Client(t, couch.Options{})
	copies, err := c.ShardCopies(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SyncShards(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	var counts map[string][]int64
	complete := func(context.Context) (bool, error) {
		counts = map[string][]int64{}
		for _, cp := range copies {
			var info struct {
				DocCount int64 `json:"doc_count"`
			}
			s.GetJSON(t, "/_node/"+url.PathEscape(cp.Node)+"/"+url.PathEscape(cp.Name), &info)
			counts[cp.Range] = append(counts[cp.Range], info.DocCount)
		}
		var total int64
		agree := true
		for _, n := range counts {
			total += n[0]
			agree = agree && slices.Min(n) == slices.Max(n)
		}
		return agree && total == docs, nil
	}
	if _, gaveUp, _ := retry.Every(200*time.Millisecond, 2*time.Minute).Until(context.Background(), complete); gaveUp {
		t.Fatalf("the shard copies of %s did not come to hold %d documents in all: doc_count by range and copy %v", db, docs, counts)
	}
}

// SetConfig sets [section] key on every node and restores each node's previous value (or
// deletes the key) when the test ends, or earlier when the test calls the returned
// function (restoring twice does nothing). Both go through the couch client, which never
// writes the nodes' ini files (X-Couch-Persist: false): a test that dies before its cleanup
// leaves nothing behind, as the next restart forgets it.
func (s *Server) SetConfig(t testing.TB, section, key, value string) (restore func()) {
	t.Helper()
	restore = s.KeepConfig(t, section, key)
	c := s.Client(t, couch.Options{})
	for _, node := range s.Nodes {
		if err := c.SetConfig(context.Background(), node, section, key, value); err != nil {
			t.Fatalf("setting [%s] %s = %q on %s: %v", section, key, value, node, err)
		}
	}
	return restore
}

// KeepConfig puts [section] key back on every node as it is now when the test ends (or
// earlier, when the test calls the returned function): for a test whose code under test
// changes it.
func (s *Server) KeepConfig(t testing.TB, section, key string) (restore func()) {
	t.Helper()
	prev := make([]savedConfig, 0, len(s.Nodes))
	var once sync.Once
	restore = func() {
		once.Do(func() { s.restoreConfig(t, section, key, prev) })
	}
	c := s.Client(t, couch.Options{})
	for _, node := range s.Nodes {
		v, set, err := c.Config(context.Background(), node, section, key)
		if err != nil {
			t.Fatalf("reading [%s] %s on %s: %v", section, key, node, err)
		}
		prev = append(prev, savedConfig{node: node, value: v, set: set})
	}
	t.Cleanup(restore)
	return restore
}

// LocalIni reads every node's local.ini (the kit writes node i's to
// Dir()/node<i>/etc/local.ini), node 1's first: for a test that checks what a change of
// configuration left in the files.
func (s *Server) LocalIni(t testing.TB) []string {
	t.Helper()
	files := make([]string, len(s.URLs))
	for i := range s.URLs {
		b, err := os.ReadFile(filepath.Join(s.dir, "node"+strconv.Itoa(i+1), "etc", "local.ini"))
		if err != nil {
			t.Fatalf("reading node %d's local.ini: %v", i+1, err)
		}
		files[i] = string(b)
	}
	return files
}

// savedConfig is a node's configuration value as it was before SetConfig.
type savedConfig struct {
	node, value string
	set         bool
}

func (s *Server) restoreConfig(t testing.TB, section, key string, prev []savedConfig) {
	c := s.Client(t, couch.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range prev {
		var err error
		if p.set {
			err = c.SetConfig(ctx, p.node, section, key, p.value)
		} else {
			err = c.DeleteConfig(ctx, p.node, section, key)
		}
		if err != nil {
			t.Errorf("restoring [%s] %s on %s: %v", section, key, p.node, err)
		}
	}
}

// errNoKit is returned by StartOwn without the kit's environment.
var errNoKit = errors.New(EnvKit + " and " + EnvOwnDir + " are not set, and this test starts its own Apache CouchDB from the kit: " + runMakeTest)

// GetJSON sends GET path (with its query, already escaped) to node 1 as the admin and
// decodes the JSON answer into out; any status but 200 fails the test.
func (s *Server) GetJSON(t testing.TB, path string, out any) {
	t.Helper()
	status, body, err := s.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// Get sends GET path to node 1 as the admin and returns the status and body. Safe to call
// from any goroutine.
func (s *Server) Get(path string) (int, []byte, error) {
	return s.do(http.MethodGet, path, nil)
}

// do sends a request to node 1 as the admin.
func (s *Server) do(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.SetBasicAuth(s.User, s.Password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// NewUser creates a CouchDB user (a _users document, no roles) for this test and deletes
// it when the test ends. Tests of wrong passwords use it instead of the server admin:
// CouchDB 3.4 locks a user out, from the address the failures came from, after 5
// authentication failures within 5 minutes ([chttpd_auth_lockout]), and a locked-out admin
// would fail every test that follows.
func (s *Server) NewUser(t testing.TB) (name, password string) {
	t.Helper()
	name, password = "cb-test-"+RandomID(), "pw-"+RandomID()
	id := "org.couchdb.user:" + name
	body, _ := json.Marshal(map[string]any{"_id": id, "name": name, "password": password, "roles": []string{}, "type": "user"})
	status, answer, err := s.do(http.MethodPut, "/_users/"+url.PathEscape(id), body)
	if err != nil || (status != http.StatusCreated && status != http.StatusAccepted) {
		t.Fatalf("creating user %s: HTTP %d %s %v", name, status, answer, err)
	}
	var created struct {
		Rev string `json:"rev"`
	}
	_ = json.Unmarshal(answer, &created)
	t.Cleanup(func() {
		if status, answer, err := s.do(http.MethodDelete, "/_users/"+url.PathEscape(id)+"?rev="+url.QueryEscape(created.Rev), nil); err != nil || status >= 300 {
			t.Errorf("deleting user %s: HTTP %d %s %v", name, status, answer, err)
		}
	})
	return name, password
}

// IndexerRunning reports whether /_active_tasks (read through c) shows an indexer task on a
// shard of db: a build under way, for the tests that act in the middle of one.
func IndexerRunning(c *couch.Client, db string) bool {
	tasks, err := c.ActiveTasks(context.Background())
	if err != nil {
		return false
	}
	for _, task := range tasks {
		if task.Type == "indexer" && strings.Contains(task.Database, "/"+db+".") {
			return true
		}
	}
	return false
}
