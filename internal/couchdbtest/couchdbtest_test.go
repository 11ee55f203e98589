package couchdbtest

// The helpers against the real Apache CouchDB 3.4.3 instances `make test` starts (the single
// node and the 3-node cluster of the kit), and, without their environment, the failure that
// tells a developer to run `make test`. Own instances are exercised by internal/runner's
// fault tests, which own the ports they use.

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couch"
)

// fatalRecorder stands in for a test to catch Fatalf.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func TestMissingEnvironmentFailsAndSaysToRunMakeTest(t *testing.T) {
	for _, env := range []string{EnvURL, EnvClusterURLs, EnvUser, EnvPassword, EnvKit, EnvOwnDir} {
		t.Setenv(env, "")
	}
	for name, get := range map[string]func(testing.TB){
		"Single":  func(tb testing.TB) { Single(tb) },
		"Cluster": func(tb testing.TB) { Cluster(tb) },
		"Own":     func(tb testing.TB) { Own(tb, OwnOptions{Name: "x", Nodes: 1, Port: 22984}) },
	} {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			get(rec)
		}()
		<-done
		if !strings.Contains(rec.msg, "make test") || !strings.Contains(rec.msg, "COUCHBENCH_TEST_COUCHDB_") {
			t.Errorf("%s without the environment: %q; want a failure that names the variables and says to run `make test`", name, rec.msg)
		}
	}
}

func TestDBNames(t *testing.T) {
	a, b := DBName("TestSomething/sub case"), DBName("TestSomething/sub case")
	if a == b || !strings.HasPrefix(a, "cb-test-testsomething-sub-case-") || len(a) != len("cb-test-testsomething-sub-case-")+8 {
		t.Errorf("DBName: %q and %q; want cb-test-<name>-<8 random hex digits>, different each time", a, b)
	}
}

// A test database on the cluster has q=2, n=3 and is gone when its test has ended.
func TestNewDBOnTheCluster(t *testing.T) {
	srv := Cluster(t)
	if len(srv.Nodes) != 3 || len(srv.URLs) != 3 || srv.Version != "3.4.3" {
		t.Fatalf("cluster %v %v version %q: want 3 nodes of CouchDB 3.4.3", srv.Nodes, srv.URLs, srv.Version)
	}
	var db string
	t.Run("uses", func(t *testing.T) {
		db = srv.NewDB(t, "")
		info, err := srv.NodeClient(t, 3, couch.Options{}).DBInfo(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		if info.Cluster.Q != 2 || info.Cluster.N != 3 {
			t.Errorf("%s: q=%d n=%d, want q=2 n=3", db, info.Cluster.Q, info.Cluster.N)
		}
	})
	if status, body, err := srv.Get("/" + db); err != nil || status != http.StatusNotFound {
		t.Errorf("%s after its test: HTTP %d %s %v; want 404, deleted", db, status, body, err)
	}
}

// SetConfig changes a value on every node and restores each node's own value, also a key
// that was not set.
func TestSetConfigRestores(t *testing.T) {
	srv := Cluster(t)
	c := srv.Client(t, couch.Options{})
	ctx := context.Background()
	read := func() []string {
		var out []string
		for _, n := range srv.Nodes {
			v, set, err := c.Config(ctx, n, "couchbench_test", "probe")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%v:%s", set, v))
		}
		return out
	}
	if err := c.SetConfig(ctx, srv.Nodes[1], "couchbench_test", "probe", "node2's own"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.DeleteConfig(ctx, srv.Nodes[1], "couchbench_test", "probe") }()
	before := read()
	t.Run("changes", func(t *testing.T) {
		restore := srv.SetConfig(t, "couchbench_test", "probe", "changed")
		if got := read(); strings.Join(got, ",") != "true:changed,true:changed,true:changed" {
			t.Errorf("during: %v", got)
		}
		restore()
		restore() // twice does nothing
	})
	if after := read(); strings.Join(after, ",") != strings.Join(before, ",") || before[1] != "true:node2's own" || before[0] != "false:" {
		t.Errorf("after %v, before %v: want every node's own value back", after, before)
	}
}

// A user of a test: its password works, a wrong one is refused, and it is gone afterwards.
func TestNewUser(t *testing.T) {
	srv := Single(t)
	var user string
	t.Run("uses", func(t *testing.T) {
		var password string
		user, password = srv.NewUser(t)
		get := func(pw string) error {
			c, err := couch.New(srv.URL(), couch.Credentials{Username: user, Password: pw}, couch.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Server(context.Background())
			return err
		}
		if err := get(password); err != nil {
			t.Errorf("user %s with its password: %v", user, err)
		}
		if err := get("wrong-" + password); couch.StatusOf(err) != http.StatusUnauthorized {
			t.Errorf("user %s with a wrong password: %v; want HTTP 401", user, err)
		}
	})
	if status, _, err := srv.Get("/_users/org.couchdb.user:" + user); err != nil || status != http.StatusNotFound {
		t.Errorf("user %s after its test: HTTP %d %v; want 404, deleted", user, status, err)
	}
}
