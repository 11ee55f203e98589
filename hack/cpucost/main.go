// Command cpucost holds two readings of a container's CPU time against each other over units
// of work: the reading a runner can take (the container's own cgroup, read from inside it by
// cpucost.ContainerReader, started once through an exec with stdin open, as pods/exec allows)
// and an independent one (the host's or node's view of the same cgroup). With -url, the units
// are a seeding of the nightly sample's 20,000 documents into that CouchDB and view builds;
// without, intervals of -interval in which the container works on its own. The two readings
// of a unit must agree within 1% (or 2 ms, what the readings themselves cost an idle unit).
// hack/cpucost/docker.sh runs it on a Docker container, hack/cpucost/kind.sh on a CouchDB pod
// of a kind cluster.
//
//	cpucost (-container 'CMD...' | -pod NAMESPACE/POD [-as USER]) -host FILE [-url URL [-builds 3] | -units 5 -interval 10s]
//
// -container is a command that runs a command in the container with stdin open
// (`docker exec -i NAME`; ContainerReader is appended); -pod reads a CouchDB pod's couchdb
// container as the runner's index Jobs do (podcpu, through pods/exec, with the kubeconfig,
// as -as if given). -host is the accounting file of that container's cgroup as the host sees
// it. Credentials: COUCHDB_USER, COUCHDB_PASSWORD.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/podcpu"
	"github.com/couchbench/couchbench/internal/seeding"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cpucost:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("url", "", "a CouchDB in the container, to seed and build views in (unset: the container works on its own)")
	container := flag.String("container", "", "the command prefix that runs a command in the container with stdin open")
	pod := flag.String("pod", "", "instead of -container: NAMESPACE/POD, a CouchDB pod read through pods/exec as the runner does")
	as := flag.String("as", "", "with -pod: the user to act as (a ServiceAccount's system:serviceaccount:NS:NAME)")
	host := flag.String("host", "", "the host's accounting file of the container's cgroup")
	builds := flag.Int("builds", 3, "with -url: view builds after the seeding")
	docs := flag.Int64("docs", 20000, "with -url: documents")
	units := flag.Int("units", 5, "without -url: intervals")
	interval := flag.Duration("interval", 10*time.Second, "without -url: an interval's length")
	flag.Parse()
	if (*container == "") == (*pod == "") || *host == "" {
		return fmt.Errorf("-host and one of -container and -pod are required")
	}
	fromContainer, closeReader, err := containerReader(*container, *pod, *as)
	if err != nil {
		return err
	}
	defer closeReader()
	fromNode := cpucost.Cgroup{File: *host}.Read

	// What a reading costs the container: three in a row, the container's own work beside them.
	var in [3]cpucost.Usage
	for i := range in {
		if in[i], err = fromContainer(); err != nil {
			return err
		}
	}
	fmt.Printf("a reading costs the container at most %.3f ms and %.3f ms of CPU time (three in a row)\n",
		float64(cpucost.Between(in[0], in[1]).CPU.Microseconds())/1000, float64(cpucost.Between(in[1], in[2]).CPU.Microseconds())/1000)
	fmt.Printf("%-22s %9s %12s %12s %9s %8s\n", "unit", "wall s", "container s", "host s", "diff ms", "diff")
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
		inside, outside := cpucost.Between(c1, c2), cpucost.Between(n1, n2)
		diff := inside.CPU - outside.CPU
		fmt.Printf("%-22s %9.3f %12.4f %12.4f %+9.3f %+7.3f%%\n", name, outside.Wall.Seconds(), inside.CPU.Seconds(), outside.CPU.Seconds(),
			float64(diff.Microseconds())/1000, 100*diff.Seconds()/outside.CPU.Seconds())
		// An idle unit's readings differ by the reading's own cost, a fraction of a millisecond.
		if math.Abs(diff.Seconds()) > max(outside.CPU.Seconds()/100, 0.002) {
			return fmt.Errorf("%s: the container's reading is %+.3f ms (%+.3f%%) off the host's, beyond 1%% and 2 ms", name,
				float64(diff.Microseconds())/1000, 100*diff.Seconds()/outside.CPU.Seconds())
		}
		return nil
	}
	if *url == "" {
		for i := range *units {
			if err := unit(fmt.Sprintf("interval %d", i+1), func() error { time.Sleep(*interval); return nil }); err != nil {
				return err
			}
		}
		return nil
	}
	return couchDBUnits(*url, *docs, *builds, unit)
}

// containerReader reads the container's CPU time through a command (-container) or as the
// runner does (-pod).
func containerReader(container, pod, as string) (func() (cpucost.Usage, error), func(), error) {
	if pod != "" {
		t, err := podcpu.ParseTarget(pod)
		if err != nil {
			return nil, nil, fmt.Errorf("-pod %s: %w", pod, err)
		}
		cfg, err := podcpu.Config()
		if err != nil {
			return nil, nil, err
		}
		cfg.Impersonate.UserName = as
		m, err := podcpu.Open(context.Background(), cfg, t)
		if err != nil {
			return nil, nil, err
		}
		return m.Read, m.Close, nil
	}
	argv := append(strings.Fields(container), cpucost.ContainerReader...)
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cpucost.NewSession(stdin, stdout).Read, func() { _ = stdin.Close(); _ = cmd.Wait() }, nil
}

// couchDBUnits seeds a new database of the CouchDB at url and builds views in it, each a unit.
func couchDBUnits(url string, docs int64, builds int, unit func(string, func() error) error) error {
	ctx := context.Background()
	c, err := couch.New(url, couch.Credentials{Username: os.Getenv("COUCHDB_USER"), Password: os.Getenv("COUCHDB_PASSWORD")},
		couch.Options{MaxConns: 8})
	if err != nil {
		return err
	}
	m, err := c.Membership(ctx)
	if err != nil {
		return err
	}
	db := fmt.Sprintf("cpucost-%d", time.Now().Unix())
	if err := c.RecreateDB(ctx, db, 2, 1); err != nil {
		return err
	}
	defer c.DeleteDB(context.WithoutCancel(ctx), db) //nolint:errcheck // a left database is harmless here
	gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	if err := unit("seed", func() error {
		_, err := seeding.Load(ctx, c, gen, seeding.Options{DB: db, Documents: docs, BatchSize: 1000, Concurrency: 4,
			Retry: seeding.DefaultRetry})
		return err
	}); err != nil {
		return err
	}
	for i := range builds {
		if err := unit(fmt.Sprintf("build %d (javascript)", i+1), func() error {
			_, err := indexing.Build(ctx, c, m.ClusterNodes, indexing.Options{DB: db, Documents: docs, Replicas: 1,
				Language: "javascript", Reducer: benchv1.ReducerBuiltin, Nonce: fmt.Sprintf("%s-%d", db, i),
				Expected: gen.Expected(docs)})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
