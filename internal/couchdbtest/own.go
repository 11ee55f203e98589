package couchdbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/retry"
)

// OwnOptions name an instance a test binary starts for itself.
type OwnOptions struct {
	// Name is the prefix of the instance's Erlang node names (Name1@127.0.0.1, ...), unique
	// on the host; its directory is $COUCHBENCH_TEST_COUCHDB_OWN_DIR/Name-Port (the kit
	// keeps the ports a directory was made with).
	Name string
	// Nodes is the number of nodes (1 or more; more than one forms a cluster).
	Nodes int
	// Port is node 1's HTTP port; node i listens on Port+i-1 and its Erlang distribution
	// on Port+1000+i-1.
	Port int
}

// startTimeout bounds one couchdb.sh start: a first start unpacks the release and makes
// the Python venv (about 30-60 s on two cores), a 3-node cluster then forms.
const startTimeout = 5 * time.Minute

var own struct {
	mu      sync.Mutex
	started map[string]*Server // by directory
	// blocked remembers an instance whose port another program holds, so that the next
	// test fails at once instead of waiting again.
	blocked map[string]error
}

// Own returns a running instance of the kit of its own for this test binary, starting it
// (or the nodes of it a test stopped) with the kit's couchdb.sh when needed. It stays up for
// the next test that asks; call StopOwn from TestMain after m.Run to stop it. hack/with-couchdb.sh
// also stops it when the tests end, in case the binary died first. The test fails when the
// kit's environment is missing or the instance does not start.
func Own(t testing.TB, opts OwnOptions) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, out, err := StartOwn(ctx, opts)
	if out != "" {
		t.Logf("couchdb.sh start (%s):\n%s", opts.Name, out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// StartOwn starts an instance (idempotent: a running one is only checked, stopped nodes
// are started again) and returns it with couchdb.sh's output.
func StartOwn(ctx context.Context, opts OwnOptions) (*Server, string, error) {
	kit, root := os.Getenv(EnvKit), os.Getenv(EnvOwnDir)
	user, password := os.Getenv(EnvUser), os.Getenv(EnvPassword)
	if kit == "" || root == "" || user == "" {
		return nil, "", errNoKit
	}
	if opts.Name == "" || opts.Nodes < 1 || opts.Port < 1 {
		return nil, "", fmt.Errorf("couchdbtest: own instance needs a name, nodes and a port: %+v", opts)
	}
	s := &Server{User: user, Password: password, kit: kit, dir: filepath.Join(root, opts.Name+"-"+strconv.Itoa(opts.Port))}
	own.mu.Lock()
	blocked := own.blocked[s.dir]
	own.mu.Unlock()
	if blocked != nil {
		return nil, "", blocked
	}
	for i := range opts.Nodes {
		s.URLs = append(s.URLs, "http://127.0.0.1:"+strconv.Itoa(opts.Port+i))
	}
	out, err := s.start(ctx, "--nodes", strconv.Itoa(opts.Nodes), "--port", strconv.Itoa(opts.Port),
		"--name", opts.Name, "--admin", user+":"+password)
	if errors.Is(err, errPortTaken) {
		own.mu.Lock()
		if own.blocked == nil {
			own.blocked = map[string]error{}
		}
		if own.started == nil {
			own.started = map[string]*Server{}
		}
		own.blocked[s.dir] = err
		own.started[s.dir] = s // StopOwn stops the nodes that did start
		own.mu.Unlock()
	}
	if err != nil {
		return nil, out, err
	}
	if err := s.describe(ctx); err != nil {
		return nil, out, fmt.Errorf("own CouchDB %s started but does not answer: %w", opts.Name, err)
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.started == nil {
		own.started = map[string]*Server{}
	}
	own.started[s.dir] = s
	return s, out, nil
}

// StopOwn stops every instance this test binary started with Own or StartOwn.
func StopOwn() error {
	own.mu.Lock()
	defer own.mu.Unlock()
	var errs []string
	for dir, s := range own.started {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if out, err := s.couchdbSh(ctx, "stop"); err != nil {
			errs = append(errs, fmt.Sprintf("%v\n%s", err, out))
		}
		cancel()
		delete(own.started, dir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("stopping own CouchDB instances: %s", strings.Join(errs, "; "))
	}
	return nil
}

// couchdbSh runs the kit's couchdb.sh on this instance's directory.
func (s *Server) couchdbSh(ctx context.Context, cmd string, args ...string) (string, error) {
	if s.kit == "" {
		return "", fmt.Errorf("couchdbtest: %s is a shared instance; only own instances are started and stopped by tests", s.URL())
	}
	c := exec.CommandContext(ctx, filepath.Join(s.kit, "couchdb.sh"), append([]string{cmd, "--dir", s.dir}, args...)...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	// The kit's couchdb.sh would otherwise take COUCHDB_DIR from a developer's shell.
	c.Env = append(os.Environ(), "COUCHDB_DIR="+s.dir)
	c.WaitDelay = 10 * time.Second
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s --dir %s: %w", c.Path, cmd, s.dir, err)
	}
	return out.String(), nil
}

// PID is the process of node i (1-based): its Erlang VM, whose descendants are its query
// servers.
func (s *Server) PID(t testing.TB, i int) int {
	t.Helper()
	pid, _, err := s.nodePID(i)
	if err != nil {
		t.Fatalf("node %d of %s: %v", i, s.URL(), err)
	}
	return pid
}

// nodePID reads node i's pid file, DIR/nodeI/couchdb.pid.
func (s *Server) nodePID(i int) (pid int, file string, err error) {
	file = filepath.Join(s.dir, "node"+strconv.Itoa(i), "couchdb.pid")
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, file, err
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0, file, fmt.Errorf("%s holds %q, not a pid", file, data)
	}
	return pid, file, nil
}

// StopNode stops node i (1-based) of an own instance as `couchdb.sh stop` does, with TERM
// to the pid in DIR/nodeI/couchdb.pid, and returns once the process has exited. Requests
// to that node then fail with "connection refused". Safe to call from any goroutine.
func (s *Server) StopNode(i int) error {
	if s.kit == "" {
		return fmt.Errorf("couchdbtest: %s is a shared instance; only own instances may have nodes stopped", s.URL())
	}
	pid, pidFile, err := s.nodePID(i)
	if err != nil {
		return fmt.Errorf("stopping node %d: %w", i, err)
	}
	// Only this instance's CouchDB, as couchdb.sh checks: it runs in DIR/couchdb. A stale
	// pid file must not stop another process that got the pid since.
	release, _ := filepath.EvalSymlinks(filepath.Join(s.dir, "couchdb"))
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err != nil || cwd != release {
		return fmt.Errorf("stopping node %d: pid %d (from %s) is not this instance's CouchDB (cwd %q, %v)", i, pid, pidFile, cwd, err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping node %d (pid %d): %w", i, pid, err)
	}
	// A node that has not stopped within a minute of TERM is killed.
	exited := func(context.Context) (bool, error) { return !alive(pid), nil }
	if _, gaveUp, _ := retry.Every(100*time.Millisecond, time.Minute).Until(context.Background(), exited); gaveUp {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _, _ = retry.Every(100*time.Millisecond, 0).Until(context.Background(), exited)
	}
	return nil
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// StartNodes starts the stopped nodes of an own instance again (couchdb.sh start), and
// returns once every node answers and, in a cluster, lists every node in /_membership.
// It returns couchdb.sh's output. Safe to call from any goroutine.
func (s *Server) StartNodes(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return s.start(ctx)
}

// start runs couchdb.sh start, again every 2 s for up to a minute while a node fails to bind
// its port: a port in Linux's ephemeral range (32768-60999; the default ports are below it)
// can be held by another program's outgoing connection while its node is down. Most such
// connections are short; a long-lived one makes the start fail with a message that says so.
func (s *Server) start(ctx context.Context, args ...string) (string, error) {
	const portTakenFor = time.Minute
	var all strings.Builder
	var last string
	portTaken := func(error) bool {
		taken := strings.Contains(last, "eaddrinuse")
		if taken {
			all.WriteString("couchdbtest: a node's port is in use by another program (eaddrinuse); starting again\n")
		}
		return taken
	}
	_, gaveUp, err := retry.Every(2*time.Second, portTakenFor).Do(ctx, portTaken, func() (err error) {
		last, err = s.couchdbSh(ctx, "start", args...)
		all.WriteString(last)
		return err
	})
	if gaveUp {
		return all.String(), fmt.Errorf("%w: %s: a port stayed in use for %v (%v): another program's connection holds it as its "+
			"local port (Linux hands out 32768-60999 as ephemeral ports: `make test COUCHDB_FAULT_PORT=P` with P below 31000 moves the cluster out of that range)",
			errPortTaken, s.dir, portTakenFor, err)
	}
	return all.String(), err
}

// errPortTaken: a node of an own instance cannot bind its port.
var errPortTaken = errors.New("own CouchDB cannot start: a node's port is taken")

// Dir is the instance's kit directory (node i's log is Dir()/nodeI/couchdb.log).
func (s *Server) Dir() string { return s.dir }
