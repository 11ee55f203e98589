package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/rundbs"
)

// newCleanCommand is `couchbench clean`: what a run left in CouchDB (kept with --keep or
// spec.keepDatabases, or left by a run that could not delete it), deleted by the run's id.
func newCleanCommand() *cobra.Command {
	var o stepOptions
	var benchmark string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "clean (-f bench.yaml [--run-id ID] | --benchmark NAME --run-id ID) [--url URL]",
		Short: "delete the databases a run left in CouchDB, by its run id",
		Example: examples("couchbench clean -f bench.yaml --run-id r1 --url http://localhost:5984",
			"couchbench clean -f bench.yaml --url http://localhost:5984   # a run by hand without --run-id",
			"couchbench clean --benchmark quickstart --run-id 1a2b3c4d --url http://couchdb:5984 --dry-run   # an operator's run"),
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case (o.file == "") == (benchmark == ""):
				return usageError{errors.New("name the run's benchmark with -f bench.yaml or --benchmark NAME (one of them)")}
			case benchmark != "" && o.runID == "":
				return usageError{errors.New("--benchmark needs --run-id: without it every run of the benchmark would go")}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			found, err := runDatabases(ctx, o, benchmark)
			if err != nil {
				return err
			}
			return deleteDatabases(ctx, cmd.OutOrStdout(), found, dryRun)
		},
	}
	fs := cmd.Flags()
	o.serverFlags(fs)
	fs.StringVar(&o.runID, "run-id", "", "the run's `id`: its --run-id, or the runId of its results (an operator's run: the first 8 "+
		"characters of the benchmark's UID)")
	fs.StringVar(&benchmark, "benchmark", "", "without -f: the benchmark's `name`; every database whose name begins with "+
		"cb-NAME-ID- goes, whatever arms and profiles the run had (check with --dry-run when another benchmark's name begins with NAME-ID)")
	fs.BoolVar(&dryRun, "dry-run", false, "list the run's databases, delete nothing")
	return cmd
}

// deleteDatabases deletes what was found and says so, or with dryRun says what it would delete.
func deleteDatabases(ctx context.Context, w io.Writer, found []databasesOn, dryRun bool) error {
	if len(found) == 0 {
		fmt.Fprintln(w, "the run has no databases there")
	}
	var errs []error
	for _, on := range found {
		if dryRun {
			for _, db := range on.dbs {
				fmt.Fprintf(w, "would delete %s from %s\n", db, on.c.URL())
			}
			continue
		}
		deleted, err := rundbs.DeleteDatabases(ctx, on.c, on.dbs)
		for _, db := range deleted {
			fmt.Fprintf(w, "deleted %s from %s\n", db, on.c.URL())
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// databasesOn are databases of one CouchDB.
type databasesOn struct {
	c   *couch.Client
	dbs []string
}

// runDatabases finds the run's databases, CouchDB by CouchDB: with the benchmark's file, the
// ones its arms' runs make (rundbs.Databases) on each arm's CouchDB, in the spec's order; with
// its name alone, every one named with the run's prefix on --url's.
func runDatabases(ctx context.Context, o stepOptions, benchmark string) ([]databasesOn, error) {
	if benchmark != "" {
		if o.url == "" {
			return nil, usageError{errors.New("--url is required with --benchmark")}
		}
		creds, err := credentials(o.credentialsDir)
		if err != nil {
			return nil, err
		}
		c, err := couch.New(o.url, creds, couch.Options{})
		if err != nil {
			return nil, err
		}
		dbs, err := rundbs.RunDatabases(ctx, c, benchmark, o.runID)
		if err != nil || len(dbs) == 0 {
			return nil, explain(err, o, creds)
		}
		return []databasesOn{{c, dbs}}, nil
	}
	bench, err := readBench(o.file)
	if err != nil {
		return nil, err
	}
	t, err := clients(o, bench, nil)
	if err != nil {
		return nil, err
	}
	var found []databasesOn
	for _, qs := range bench.Spec.QueryServers {
		on := databasesOn{c: t.clientOf(qs.Name)}
		for _, db := range rundbs.Databases(bench, o.runID, qs.Name) {
			_, err := on.c.DBInfo(ctx, db)
			switch {
			case err == nil:
				on.dbs = append(on.dbs, db)
			case couch.StatusOf(err) != http.StatusNotFound:
				return nil, explain(err, o, t.creds[qs.Name])
			}
		}
		if len(on.dbs) > 0 {
			found = append(found, on)
		}
	}
	return found, nil
}
