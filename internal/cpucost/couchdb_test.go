package cpucost

// The server's CPU cost of view builds, on real Apache CouchDB 3.4.3 from the kit (the single
// node that `make test` starts): the node's process tree is moved into a cgroup of its own,
// and each build's CPU time from the cgroup's accounting is held against the same processes'
// time from /proc. This checks what the number is, not how large it is: the builds cost
// whatever they cost, and the machine may be busy with the other suites.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/seeding"
)

// agreement is how far the cgroup's and the process tree's readings of one build may lie
// apart, as a share of the cgroup's: the accounting promised to be exact within 1%.
const agreement = 0.01

func TestBuildCostFromTheCgroupAgreesWithTheProcessTreeOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	pid := srv.PID(t, 1)
	g, restore, err := Adopt("test-"+couchdbtest.RandomID(), pid)
	if err != nil {
		t.Fatalf("giving the kit's node (process %d) a cgroup of its own: %v", pid, err)
	}
	t.Cleanup(func() {
		if err := restore(); err != nil {
			t.Errorf("moving the node back: %v", err)
		}
	})
	c := srv.Client(t, couch.Options{MaxConns: 8})
	ctx := context.Background()
	db := srv.NewDB(t, "cpucost")
	const docs = 20000 // the nightly sample's dataset
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	if _, err := seeding.Load(ctx, c, gen, seeding.Options{DB: db, Documents: docs, BatchSize: 1000, Concurrency: 2,
		Retry: seeding.DefaultRetry}); err != nil {
		t.Fatal(err)
	}
	tree := Tree{Root: pid}
	var rows []string
	// JavaScript and Python views run in query-server processes CouchDB starts, Erlang's in
	// its VM: the cgroup must take both.
	for i, language := range []string{"javascript", "python", "erlang"} {
		before, treeBefore := read(t, g), readTree(t, tree)
		run, err := indexing.Build(ctx, c, srv.Nodes, indexing.Options{DB: db, Documents: docs, Replicas: 1,
			Language: language, Reducer: benchv1.ReducerBuiltin, Nonce: fmt.Sprintf("cpucost-%d-%s", i, couchdbtest.RandomID()),
			Expected: gen.Expected(docs)})
		if err != nil {
			t.Fatalf("%s: %v", language, err)
		}
		after, treeAfter := read(t, g), readTree(t, tree)
		spent, fromTree := Between(before, after), Between(treeBefore, treeAfter)
		diff := fromTree.CPU - spent.CPU
		rows = append(rows, fmt.Sprintf("%-10s %8.3f %8.3f %8.3f %+7.1f %+6.2f%% %8.3f", language, run.Built.Seconds(),
			spent.CPU.Seconds(), fromTree.CPU.Seconds(), float64(diff.Microseconds())/1000, 100*diff.Seconds()/spent.CPU.Seconds(),
			spent.PerThousand(docs)))
		if spent.CPU <= 0 {
			t.Errorf("%s: the cgroup charged %v for a build of %v", language, spent.CPU, run.Built)
		}
		if diff.Abs().Seconds() > agreement*spent.CPU.Seconds() {
			t.Errorf("%s: the cgroup charged %v, the process tree %v: %v apart, more than %.0f%%",
				language, spent.CPU, fromTree.CPU, diff, 100*agreement)
		}
	}
	t.Logf("%d documents, builtin reducer:\n%-10s %8s %8s %8s %8s %7s %8s\n%s", docs,
		"language", "built s", "cgroup s", "tree s", "diff ms", "diff", "s/1000", strings.Join(rows, "\n"))
	for _, name := range []string{"couchjs", "couchpy"} {
		if !holdsProcess(t, g, name) {
			t.Errorf("no %s process in the node's cgroup after its views were built: the cgroup must take the query servers the node starts", name)
		}
	}
}

func read(t *testing.T, g Cgroup) Usage {
	t.Helper()
	u, err := g.Read()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readTree(t *testing.T, tree Tree) Usage {
	t.Helper()
	u, err := tree.Read()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// holdsProcess tells whether a process of that command name (a script's, for couchpy) is in
// the cgroup.
func holdsProcess(t *testing.T, g Cgroup, name string) bool {
	t.Helper()
	in, err := procsOf(g.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for p := range in {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if strings.Contains(string(cmdline), name) {
			return true
		}
	}
	return false
}
