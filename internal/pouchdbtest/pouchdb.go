// Package pouchdbtest runs pouchdb-server for tests that need a real HTTP server speaking
// CouchDB's API.
//
// pouchdb-server (PouchDB behind Express, from npm) is a third-party CouchDB-compatible server,
// NOT Apache CouchDB. It answers the database, document and view endpoints the runner uses,
// with different shapes and statuses in places (pouchdb_test.go asserts each difference), and
// it has no statistics, no active tasks and no node config. Tests use it to exercise the
// runner's HTTP code against a real server; its timings and counters are never CouchDB's and
// must not be reported as such.
package pouchdbtest

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The server admin that Start configures. pouchdb-server starts in "admin party" (anyone is
// admin) but, unlike what that name suggests, answers 401 "Name or password is incorrect." to
// Basic auth for a user it does not know. The runner always sends Basic auth, so the server
// needs a real admin; tests pass these credentials to the runner's client.
const (
	AdminUser     = "admin"
	AdminPassword = "pouchdbtest-password"
)

const (
	// startTimeout bounds one start: the server answers after 0.3 to 1 s on this project's machines.
	startTimeout = 20 * time.Second
	// startAttempts covers the race between picking a free port and the server binding it.
	startAttempts = 3
	// outputLimit keeps the tail of the server's output: a broken map function makes it print
	// a stack trace per document.
	outputLimit = 32 << 10
)

// Start runs pouchdb-server (a CouchDB-compatible server from npm, NOT Apache CouchDB) on a free
// loopback port for one test and returns its base URL (no trailing slash); it is stopped by t.Cleanup.
// The executable comes from env POUCHDB_SERVER (set by the Makefile); without it the test fails
// with a message saying to run `make test` (which installs it via hack/pouchdb.sh).
//
// The server keeps its databases in memory and its config and log in a temporary directory, so
// a test leaves no files. Its admin is AdminUser / AdminPassword.
func Start(t testing.TB) (url string) {
	t.Helper()
	exe := os.Getenv("POUCHDB_SERVER")
	if exe == "" {
		t.Fatal("POUCHDB_SERVER is not set: run the tests with `make test`, which installs pouchdb-server " +
			"(a CouchDB-compatible server from npm) with hack/pouchdb.sh into bin/pouchdb and sets POUCHDB_SERVER")
	}
	// Absolute, because the server runs in a temporary directory.
	exe, err := exec.LookPath(exe)
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		t.Fatalf("POUCHDB_SERVER: %v (hack/pouchdb.sh prints the executable's absolute path)", err)
	}
	for range startAttempts {
		var s *server
		s, err = start(exe, t.TempDir())
		if err == nil {
			t.Cleanup(func() {
				s.stop()
				if t.Failed() {
					t.Logf("pouchdb-server at %s: %s", s.url, s.diagnostics())
				}
			})
			return s.url
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatalf("starting pouchdb-server (%s): %v", exe, err)
	return ""
}

// errPortTaken: another process bound the port between freePort and the server's listen.
var errPortTaken = errors.New("the port was taken before the server could bind it")

type server struct {
	cmd    *exec.Cmd
	url    string
	port   int
	uuid   string
	log    string
	output *tailBuffer
	exited chan struct{} // closed once cmd.Wait returned
}

// start launches the server with its config, log and working directory in dir, and waits
// until it answers. On error nothing is left running.
func start(exe, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		url:    "http://127.0.0.1:" + strconv.Itoa(port),
		port:   port,
		uuid:   rand.Text(),
		log:    filepath.Join(dir, "pouchdb.log"),
		output: &tailBuffer{limit: outputLimit},
		exited: make(chan struct{}),
	}
	// pouchdb-server reads and rewrites this file (it hashes the admin password in place).
	// A uuid of our own lets waitReady tell this server from another one on the same port.
	config, err := json.Marshal(map[string]any{
		"admins":  map[string]string{AdminUser: AdminPassword},
		"couchdb": map[string]string{"uuid": s.uuid},
		"log":     map[string]string{"file": s.log},
	})
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, err
	}
	// -n (--no-stdout-logs): the server would otherwise tail its own log file to stdout. Only
	// the short form works: its option parser reads "--no-stdout-logs" as "stdout-logs=false",
	// which nothing reads. The log stays in s.log; stdout and stderr carry only crashes and
	// map-function errors.
	s.cmd = exec.Command(exe, "--in-memory", "-n", "--config", configPath,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port))
	s.cmd.Dir = dir // pouchdb-server may create files in its working directory
	s.cmd.Stdout = s.output
	s.cmd.Stderr = s.output
	// Its own process group, so that stop also ends anything it started.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.WaitDelay = 5 * time.Second
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls GET / until this server (recognised by its uuid) answers.
func (s *server) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		if s.answers(client) {
			return nil
		}
		select {
		case <-s.exited:
			if portInUse(s.port) {
				return errPortTaken
			}
			return fmt.Errorf("it exited before answering (%v): %s", s.cmd.ProcessState, s.diagnostics())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to GET %s/ within %v: %s", s.url, startTimeout, s.diagnostics())
		}
	}
}

func (s *server) answers(client *http.Client) bool {
	resp, err := client.Get(s.url + "/")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	var root struct {
		UUID string `json:"uuid"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&root) == nil && root.UUID == s.uuid
}

// stop kills the server's process group and waits for it.
func (s *server) stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// diagnostics is what the server printed and the end of its log, for failure messages.
func (s *server) diagnostics() string {
	log, err := os.ReadFile(s.log)
	if err != nil {
		log = []byte(err.Error())
	}
	if len(log) > 4<<10 {
		log = log[len(log)-4<<10:]
	}
	return fmt.Sprintf("output (stdout+stderr, last %d KiB):\n%s\nlog %s (last 4 KiB):\n%s", outputLimit>>10, s.output, s.log, log)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portInUse(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	_ = l.Close()
	return false
}

// tailBuffer keeps the last limit bytes written to it; the server writes from a goroutine
// of os/exec while a test may read it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
