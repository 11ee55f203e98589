// Command cpucost holds two readings of one CouchDB server's CPU time against each other over
// units of work: the reading a runner can take (the container's own cgroup, read from inside
// it through pods/exec: cpucost.ContainerCommand) and an independent one (the node's view of
// the same cgroup). Each unit (the nightly sample's 20,000 documents seeded, then view builds)
// is bracketed by both; the two readings of a unit must agree within 1%. hack/cpucost/kind.sh
// runs it on a kind cluster.
//
//	cpucost -url URL -container 'CMD...' -node 'CMD...' [-builds 3]
//
// -container is a command that runs a command in the CouchDB container (cpucost's
// ContainerCommand is appended: `kubectl exec POD --`), -node one that prints the node's
// accounting file of that container's cgroup. Credentials: COUCHDB_USER, COUCHDB_PASSWORD.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/seeding"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cpucost:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("url", "", "the CouchDB's URL")
	container := flag.String("container", "", "the command prefix that runs a command in the CouchDB container")
	node := flag.String("node", "", "the command that prints the node's accounting file of the container's cgroup")
	builds := flag.Int("builds", 3, "view builds after the seeding")
	docs := flag.Int64("docs", 20000, "documents")
	flag.Parse()
	if *url == "" || *container == "" || *node == "" {
		return fmt.Errorf("-url, -container and -node are required")
	}
	ctx := context.Background()
	c, err := couch.New(*url, couch.Credentials{Username: os.Getenv("COUCHDB_USER"), Password: os.Getenv("COUCHDB_PASSWORD")},
		couch.Options{MaxConns: 8})
	if err != nil {
		return err
	}
	m, err := c.Membership(ctx)
	if err != nil {
		return err
	}
	fromContainer := reader(append(strings.Fields(*container), cpucost.ContainerCommand...))
	fromNode := reader([]string{"sh", "-c", *node})

	// What one read from inside costs the container: two in a row, nothing else running.
	first, err := fromContainer()
	if err != nil {
		return err
	}
	second, err := fromContainer()
	if err != nil {
		return err
	}
	fmt.Printf("one read through exec costs the container %.2f ms of CPU time (two reads in a row)\n",
		float64(cpucost.Between(first, second).CPU.Microseconds())/1000)

	db := fmt.Sprintf("cpucost-%d", time.Now().Unix())
	if err := c.RecreateDB(ctx, db, 2, 1); err != nil {
		return err
	}
	defer c.DeleteDB(context.WithoutCancel(ctx), db) //nolint:errcheck // a left database is harmless here
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	fmt.Printf("%-22s %9s %12s %12s %9s %7s %10s\n", "unit", "wall s", "container s", "node s", "diff ms", "diff", "s/1000 doc")
	unit := func(name string, do func() error) error {
		c1, err := fromContainer()
		if err != nil {
			return err
		}
		n1, err := fromNode()
		if err != nil {
			return err
		}
		if err := do(); err != nil {
			return err
		}
		n2, err := fromNode()
		if err != nil {
			return err
		}
		c2, err := fromContainer()
		if err != nil {
			return err
		}
		in, out := cpucost.Between(c1, c2), cpucost.Between(n1, n2)
		diff := in.CPU - out.CPU
		fmt.Printf("%-22s %9.3f %12.3f %12.3f %+9.1f %+6.2f%% %10.3f\n", name, out.Wall.Seconds(), in.CPU.Seconds(), out.CPU.Seconds(),
			float64(diff.Microseconds())/1000, 100*diff.Seconds()/out.CPU.Seconds(), in.PerThousand(*docs))
		return nil
	}
	if err := unit("seed", func() error {
		_, err := seeding.Load(ctx, c, gen, seeding.Options{DB: db, Documents: *docs, BatchSize: 1000, Concurrency: 4,
			Retry: seeding.DefaultBackoff})
		return err
	}); err != nil {
		return err
	}
	for i := range *builds {
		if err := unit(fmt.Sprintf("build %d (javascript)", i+1), func() error {
			_, err := indexing.Build(ctx, c, m.ClusterNodes, indexing.Options{DB: db, Documents: *docs, Replicas: 1,
				Language: "javascript", Reducer: benchv1.ReducerBuiltin, Nonce: fmt.Sprintf("%s-%d", db, i),
				Expected: gen.Expected(*docs)})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// reader reads a cgroup's CPU time by running argv and parsing what it prints.
func reader(argv []string) func() (cpucost.Usage, error) {
	return func() (cpucost.Usage, error) {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		at := time.Now()
		if err != nil {
			return cpucost.Usage{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		cpu, err := cpucost.ParseUsage(out)
		if err != nil {
			return cpucost.Usage{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		return cpucost.Usage{At: at, CPU: cpu}, nil
	}
}
