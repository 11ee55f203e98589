package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/loadtest"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/rundbs"
)

func newRunCommand() *cobra.Command {
	return stepCommand("run", allSteps,
		"every workload of the benchmark (the reads with k6), then the results table; deletes the run's databases",
		"couchbench run -f bench.yaml --url http://localhost:5984 --out results.json",
		"couchbench run -f config/samples/bench.yaml --url http://localhost:5984 --k6 bin/k6")
}

// readsOptions say how `couchbench run` runs the spec's reads workload: with which k6, or
// not at all.
type readsOptions struct {
	k6   string
	skip bool
}

// howToGetK6 is what to do without k6.
const howToGetK6 = "install k6 (https://grafana.com/docs/k6/latest/set-up/install-k6/), or build the version the " +
	"operator's k6 image has with `make k6` (into bin/k6), and put it on PATH or pass --k6 PATH; " +
	"or leave the reads out with --skip-reads"

// k6ForReads decides, before anything runs, how the reads workload goes: the k6 to run it
// with, none when the spec has no reads or they are left out (said on log), or an error
// that names the workload and how to get k6, so that a run does not seed and measure for
// minutes only to fail at its last step.
func k6ForReads(o readsOptions, spec benchv1.CouchBenchmarkSpec, log io.Writer) (*loadtest.K6, error) {
	reads := spec.Workloads.Reads
	switch {
	case reads == nil:
		return nil, nil
	case o.skip:
		fmt.Fprintf(log, "%s the reads workload (k6, %s) is left out: --skip-reads\n", time.Now().UTC().Format("15:04:05"), reads.Scenario)
		return nil, nil
	}
	k6, err := loadtest.FindK6(o.k6)
	if err != nil {
		return nil, fmt.Errorf("the benchmark's reads workload (%s, %d virtual users) runs k6, and %v: %s",
			reads.Scenario, reads.VirtualUsers, err, howToGetK6)
	}
	return &k6, nil
}

// cleanTimeout bounds the deletion of a run's databases, which also runs after Ctrl-C.
const cleanTimeout = time.Minute

// removeRun deletes what the run made in the CouchDB of each arm it ran, and says what it
// deleted, or what is left and how to remove it.
func removeRun(ctx context.Context, o stepOptions, bench *benchv1.CouchBenchmark, doc *results.Document, t targets, log io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cleanTimeout)
	defer cancel()
	var errs []error
	for _, a := range doc.Arms {
		deleted, err := rundbs.DeleteDatabases(ctx, t.clientOf(a.QueryServer), rundbs.Databases(bench, o.runID, a.QueryServer))
		if len(deleted) > 0 {
			fmt.Fprintf(log, "%s %s: deleted the run's databases %s (--keep keeps them)\n", time.Now().UTC().Format("15:04:05"),
				a.QueryServer, strings.Join(deleted, ", "))
		}
		if err != nil {
			url, _ := t.target(a.QueryServer)
			how := "couchbench clean -f " + o.file
			if o.runID != "" {
				how += " --run-id " + o.runID
			}
			errs = append(errs, fmt.Errorf("query server %s: %w; remove what is left with %s --url %s", a.QueryServer, err, how, url))
		}
	}
	return errors.Join(errs...)
}
