package runner

// Faults on real Apache CouchDB 3.4.3 from the project's kit: a 3-node cluster of these
// tests' own (ports 22984-22986, bin/couchdb/own/cbfault-22984, started by couchdbtest.Own if
// hack/with-couchdb.sh has not, and stopped by TestMain), because these tests stop and
// restart its nodes; and the shared
// single node for errors that disturb nothing (wrong password, missing database). CouchDB
// down is a port nothing listens on. The assertions are on what happened (documents
// stored, errors and what they say, what the returned document kept), never on timing.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/names"
)

// faultCluster is the fault tests' own 3-node cluster.
func faultCluster(t *testing.T) *couchdbtest.Server {
	t.Helper()
	return couchdbtest.Own(t, couchdbtest.OwnOptions{Name: "cbfault", Nodes: 3, Port: couchdbtest.FaultPort()})
}

var faultBench = jsBench("faults", `
  dataset:
    documents: %d
    batchSize: %d
    concurrency: 2
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 1
`)

// waitFor polls cond every 50 ms until it is true or done is closed; it reports whether
// cond became true.
func waitFor(done <-chan struct{}, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-done:
			return cond()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// docCount reads a database's doc_count through a node that stays up.
func docCount(c *couch.Client, db string) int64 {
	info, err := c.DBInfo(context.Background(), db)
	if err != nil {
		return -1
	}
	return info.DocCount
}

// nodeOutage is how long a stopped node stays down before it is started again: about what a
// CouchDB pod's restart takes in Kubernetes (container restart, CouchDB's start, the
// readiness probe), and longer than the seeder's old retry schedule (8 tries over 16 s).
const nodeOutage = 15 * time.Second

// The node the runner talks to is stopped mid-seed and started again: the seeder retries
// the failed batches (their documents have fixed ids, so a retry of a batch that was
// written meets conflicts) and ends with exactly the dataset, each document once.
func TestNodeStoppedMidSeedOnRealCouchDB(t *testing.T) {
	srv := faultCluster(t)
	const docs = 20000
	yaml := fmt.Sprintf(faultBench, docs, 200)
	runID := "seed" + couchdbtest.RandomID()
	db := names.Database("faults", runID, "js", "small")
	observer := srv.NodeClient(t, 2, couch.Options{})

	var (
		wg       sync.WaitGroup
		restart  string
		stopErr  error
		stopped  bool
		finished = make(chan struct{})
	)
	wg.Go(func() {
		// Once a tenth of the documents are in, stop node 1, then start it again.
		if !waitFor(finished, func() bool { return docCount(observer, db) >= docs/10 }) {
			return
		}
		if stopErr = srv.StopNode(1); stopErr != nil {
			return
		}
		stopped = true
		down := time.Now()
		time.Sleep(nodeOutage)
		out, err := srv.StartNodes(context.Background())
		restart = fmt.Sprintf("node 1 was down for %v and answered again %v later (err %v)\n%s", nodeOutage,
			time.Since(down.Add(nodeOutage)).Round(100*time.Millisecond), err, out)
	})
	doc, log, err := realRun(t, srv, yaml, Config{Steps: []benchv1.Step{benchv1.StepSeed}, RunID: runID})
	close(finished)
	wg.Wait()
	t.Log(restart)
	if stopErr != nil || !stopped {
		t.Fatalf("node 1 was not stopped mid-seed (stopped %v, %v): the seed ended first?\n%s", stopped, stopErr, log)
	}
	if err != nil {
		t.Fatalf("seed failed: %v\n%s", err, log)
	}
	p := doc.Arms[0].Profiles[0]
	if p.Seeding.Retries == 0 {
		t.Errorf("seeding %+v: no retries reported although node 1 was stopped", p.Seeding)
	}
	checkSeededExactly(t, srv, p, docs)
	t.Logf("seeding %+v\n%s", *p.Seeding, log)
}

// A node is stopped while the view builds, and started again. The index step must either
// fail with an error that says what happened, or ride through and report a verified build:
// never numbers from a build the cluster did not finish.
func TestNodeStoppedMidBuildOnRealCouchDB(t *testing.T) {
	srv := faultCluster(t)
	const docs = 8000
	yaml := fmt.Sprintf(faultBench, docs, 1000)
	for _, node := range []int{3, 1} {
		t.Run(fmt.Sprintf("node%d", node), func(t *testing.T) {
			runID := fmt.Sprintf("build%d%s", node, couchdbtest.RandomID())
			db := names.Database("faults", runID, "js", "small")
			observer := srv.NodeClient(t, 2, couch.Options{})
			var (
				wg         sync.WaitGroup
				stopErr    error
				stopped    bool
				restart    string
				restartErr error
				finished   = make(chan struct{})
			)
			wg.Go(func() {
				if !waitFor(finished, func() bool { return couchdbtest.IndexerRunning(observer, db) }) {
					return
				}
				if stopErr = srv.StopNode(node); stopErr != nil {
					return
				}
				stopped = true
				restart, restartErr = srv.StartNodes(context.Background())
			})
			doc, log, err := realRun(t, srv, yaml, Config{RunID: runID})
			close(finished)
			wg.Wait()
			if stopErr != nil || !stopped {
				t.Fatalf("node %d was not stopped mid-build (stopped %v, %v)\n%s", node, stopped, stopErr, log)
			}
			// A node that did not come back fails the run on its own; this says why.
			if restartErr != nil {
				t.Fatalf("node %d was not started again: %v\n%s\nthe run: %v\n%s", node, restartErr, restart, err, log)
			}
			t.Logf("node %d started again\n%s", node, restart)
			p := doc.Arms[0].Profiles[0]
			// What was measured before is kept: the seeding, and the indexing series.
			if p.Seeding == nil || p.Seeding.Stored != docs {
				t.Errorf("seeding %+v: the returned document must keep the seeding", p.Seeding)
			}
			if err != nil {
				// Failing is right if the error says what happened.
				if !errors.Is(err, indexing.ErrNodeInterrupted) || !strings.Contains(err.Error(), srv.Nodes[node-1]) ||
					doc.Error != err.Error() || len(p.Indexing) != 1 || len(p.Indexing[0].Runs) != 0 {
					t.Errorf("error %q, document error %q, indexing %+v: want ErrNodeInterrupted naming node %s, in the document, and no run",
						err, doc.Error, p.Indexing, srv.Nodes[node-1])
				}
				t.Logf("the index step failed: %v", err)
				return
			}
			// Riding through is right if what is reported is a verified build of every copy.
			checkBuilt(t, p, []string{"builtin"}, 1, "paused")
			for _, r := range p.Indexing[0].Runs {
				if r.CopiesObserved != 6 {
					t.Errorf("run %s reported with %d of 6 shard copies seen", r.DesignDoc, r.CopiesObserved)
				}
				checkViewTotal(t, srv, p.DB, r.DesignDoc)
			}
			t.Logf("the index step rode through:\n%s", log)
		})
	}
}

var smallBench = jsBench("errors", `
  dataset:
    documents: 200
    batchSize: 100
  workloads:
    indexing:
      reducers: [builtin]
      repetitions: 1
`)

// A wrong password is refused by the first request, with CouchDB's own words. The user is
// one of this test's: wrong passwords for the admin would lock the admin out (CouchDB 3.4's
// [chttpd_auth_lockout], 5 failures) and fail the tests that follow.
func TestWrongPasswordSaysSoOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	user, password := srv.NewUser(t)
	c, err := couch.New(srv.URL(), couch.Credentials{Username: user, Password: "wrong-" + password}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := realRun(t, srv, smallBench, Config{Client: c})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401 unauthorized: Name or password is incorrect.") ||
		!strings.Contains(err.Error(), srv.URL()) || strings.Contains(err.Error(), password) {
		t.Fatalf("error %v: want CouchDB's 401 with the server's URL, and no password", err)
	}
	t.Logf("wrong password: %v", err)
	if doc.Error != err.Error() || len(doc.Arms) != 0 {
		t.Errorf("document error %q, arms %+v: want the error and nothing measured", doc.Error, doc.Arms)
	}
}

// The index step before the seed step: the database does not exist, and the error says to
// seed first.
func TestIndexBeforeSeedSaysSoOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	doc, _, err := realRun(t, srv, smallBench, Config{Steps: []benchv1.Step{benchv1.StepIndex}})
	if err == nil || !strings.Contains(err.Error(), "does not exist: run the seed step first") {
		t.Fatalf("index before seed: %v; want a message saying to run the seed step first", err)
	}
	t.Logf("index before seed: %v", err)
	if doc.Error != err.Error() || doc.Server.Vendor != "The Apache Software Foundation" || doc.Server.Version != srv.Version {
		t.Errorf("document %+v: want the error and the provenance", doc)
	}
}

// CouchDB down at start: nothing listens on the URL.
func TestCouchDBDownAtStartSaysSo(t *testing.T) {
	srv := couchdbtest.Single(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	_ = l.Close()
	c, err := couch.New(down, srv.Credentials(), couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := realRun(t, srv, smallBench, Config{Client: c})
	if err == nil || !strings.Contains(err.Error(), "reaching CouchDB at "+down) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v: want one that names the URL and says the connection was refused", err)
	}
	t.Logf("CouchDB down: %v", err)
	if doc.Error != err.Error() || doc.Server.URL != down {
		t.Errorf("document %+v: want the error and the URL", doc)
	}
}

// An arm whose language the server has not registered: CouchDB answers the view request
// 500 unknown_query_language, and asking again cannot help. The run fails at once with
// CouchDB's answer, before it seeds: the runner asks CouchDB what runs each arm's views
// before the first step.
func TestUnknownLanguageFailsBeforeIndexingOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	yaml := strings.Replace(smallBench, "{name: js, language: javascript}", "{name: nosuch, language: python_nosuch}", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang ends the test, it is not timed
	defer cancel()
	bench, err := benchspec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	runID := "u" + couchdbtest.RandomID()
	srv.DeleteLater(t, names.Database("errors", runID, "nosuch", "small"))
	doc, err := Run(ctx, Config{Bench: bench, Client: srv.Client(t, couch.Options{}), Steps: benchv1.RunnerSteps, RunID: runID})
	if err == nil || !strings.Contains(err.Error(), "unknown_query_language: python_nosuch") ||
		!strings.Contains(err.Error(), "asking CouchDB what runs python_nosuch views") || ctx.Err() != nil {
		t.Fatalf("error %v (context %v): want CouchDB's unknown_query_language answer at once", err, ctx.Err())
	}
	t.Logf("unknown language: %v", err)
	p := doc.Arms[0].Profiles[0]
	if p.Seeding != nil || doc.Error != err.Error() || doc.Arms[0].Language != "python_nosuch" || len(doc.Steps) != 0 {
		t.Errorf("document error %q, seeding %+v, steps %+v: want the error, and no step taken", doc.Error, p.Seeding, doc.Steps)
	}
}

// A node restarted without its data, as a CouchDB pod on an emptyDir is: its copies of the
// seeded database are gone, while doc_count, answered by the other copies, still shows every
// document. The views step must not read a view over the empty copies: it has CouchDB
// refill them first, and every full read returns every document.
func TestNodeThatLostItsCopiesIsRefilledBeforeTheViewsOnRealCouchDB(t *testing.T) {
	srv := faultCluster(t)
	const docs = 3000
	yaml := fmt.Sprintf(faultBench, docs, 500) + `    viewReads:
      repetitions: 2
`
	runID := "lost" + couchdbtest.RandomID()
	db := names.Database("faults", runID, "js", "small")
	if _, log, err := realRun(t, srv, yaml, Config{Steps: []benchv1.Step{benchv1.StepSeed}, RunID: runID}); err != nil {
		t.Fatalf("seed failed: %v\n%s", err, log)
	}
	if err := srv.StopNode(2); err != nil {
		t.Fatal(err)
	}
	lost, err := filepath.Glob(filepath.Join(srv.Dir(), "node2", "data", "shards", "*", db+".*.couch"))
	if err != nil || len(lost) != 2 {
		t.Fatalf("node 2's copies of %s: %v %v, want the 2 shard files (q=2)", db, lost, err)
	}
	for _, f := range lost {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := srv.StartNodes(context.Background()); err != nil {
		t.Fatalf("starting node 2 again: %v\n%s", err, out)
	}
	doc, log, err := realRun(t, srv, yaml, Config{Steps: []benchv1.Step{benchv1.StepViews}, RunID: runID})
	if err != nil {
		t.Fatalf("views failed: %v\n%s", err, log)
	}
	for _, vr := range doc.Arms[0].Profiles[0].ViewReads {
		for _, r := range vr.Reads {
			if r.Rows != docs {
				t.Errorf("%s: a read of %d rows, want %d", vr.View, r.Rows, docs)
			}
		}
	}
	t.Logf("views after node 2 lost its copies:\n%s", log)
}
