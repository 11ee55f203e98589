// Command couchbench runs the workloads of a CouchBenchmark against a CouchDB and prints the
// results. The operator's Jobs run its step subcommands; a user can run it by hand against
// any CouchDB:
//
//	COUCHDB_USER=admin COUCHDB_PASSWORD=... couchbench run -f bench.yaml --url http://localhost:5984
//
// Credentials come from the environment (COUCHDB_USER, COUCHDB_PASSWORD) or from a
// directory holding files "username" and "password" (a mounted Secret), never from a flag or
// the URL, which would show in process lists.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/runner"
)

const usage = `couchbench runs CouchDB benchmarks described by a CouchBenchmark (bench.yaml).

Usage:
  couchbench run    -f bench.yaml --url URL [flags]   every step, then the results table
  couchbench seed   -f bench.yaml --url URL [flags]   load the dataset
  couchbench index  -f bench.yaml --url URL [flags]   time the view builds (needs seed)
  couchbench views  -f bench.yaml --url URL [flags]   time full view reads (needs seed)
  couchbench writes -f bench.yaml --url URL [flags]   time the insert modes
  couchbench report [--format markdown|csv] RESULT.json...

Credentials: COUCHDB_USER and COUCHDB_PASSWORD, or --credentials-dir DIR with files
"username" and "password".

Flags of run and the steps:
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		stepFlags(stderr).fs.PrintDefaults()
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = runSteps(rest, runner.AllSteps, "run", stdout, stderr)
	case "seed", "index", "views", "writes":
		err = runSteps(rest, []runner.Step{runner.Step(cmd)}, cmd, stdout, stderr)
	case "report":
		err = report(rest, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		stepFlags(stdout).fs.PrintDefaults()
		return 0
	default:
		fmt.Fprintf(stderr, "couchbench: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "couchbench %s: %v\n", cmd, err)
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ error }

type stepOptions struct {
	fs             *flag.FlagSet
	file           string
	url            string
	credentialsDir string
	arms           string
	out            string
	handoff        string
	runID          string
	poll           time.Duration
	quiet          bool
}

func stepFlags(output io.Writer) *stepOptions {
	o := &stepOptions{fs: flag.NewFlagSet("couchbench", flag.ContinueOnError)}
	o.fs.SetOutput(output)
	o.fs.StringVar(&o.file, "f", "", "the CouchBenchmark file (YAML or JSON)")
	o.fs.StringVar(&o.url, "url", "", "CouchDB URL, without credentials (default: spec.couchdb.existing.url)")
	o.fs.StringVar(&o.credentialsDir, "credentials-dir", "", `directory with files "username" and "password" (a mounted Secret)`)
	o.fs.StringVar(&o.arms, "arm", "", "comma-separated query servers to run (default: all)")
	o.fs.StringVar(&o.out, "out", "", "write the full JSON results document to this file")
	o.fs.StringVar(&o.handoff, "handoff", "", "hand the results to the operator: the document to standard output, "+
		"framed, and its check to this file (a Job's /dev/termination-log)")
	o.fs.StringVar(&o.runID, "run-id", "", "name part of this run's design documents (default: from the clock)")
	o.fs.DurationVar(&o.poll, "poll", 0, "/_active_tasks poll interval during builds (default 250ms)")
	o.fs.BoolVar(&o.quiet, "q", false, "no progress lines on stderr")
	return o
}

func runSteps(args []string, steps []runner.Step, name string, stdout, stderr io.Writer) error {
	o := stepFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return usageError{err}
	}
	if o.file == "" {
		return usageError{errors.New("-f bench.yaml is required")}
	}
	data, err := os.ReadFile(o.file)
	if err != nil {
		return err
	}
	bench, err := benchspec.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	url := o.url
	if url == "" && bench.Spec.CouchDB.Existing != nil {
		url = bench.Spec.CouchDB.Existing.URL
	}
	if url == "" {
		return usageError{errors.New("--url is required (the benchmark provisions its CouchDB, so it names none)")}
	}
	creds, err := credentials(o.credentialsDir)
	if err != nil {
		return err
	}
	client, err := couch.New(url, creds, couch.Options{MaxConns: maxConns(bench.Spec)})
	if err != nil {
		return err
	}
	var arms []string
	if o.arms != "" {
		arms = strings.Split(o.arms, ",")
	}
	logOut := stderr
	if o.quiet {
		logOut = io.Discard
	}

	// SIGTERM (a Job's pod being stopped) and Ctrl-C end the run; what was measured is
	// still written out.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	doc, runErr := runner.Run(ctx, runner.Config{
		Bench: bench, Client: client, Arms: arms, Steps: steps, RunID: o.runID, Log: logOut, PollInterval: o.poll,
	})
	if err := writeOutputs(o, doc, runErr, stdout); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintln(stdout)
	if err := results.NewReport(doc).WriteMarkdown(stdout); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// maxConns sizes the connection pool for the most concurrent requests any step makes,
// plus the /_active_tasks poller beside a blocking view request.
func maxConns(spec benchv1.CouchBenchmarkSpec) int {
	n := int(spec.Dataset.Concurrency)
	if w := spec.Workloads.Writes; w != nil {
		if w.ParallelBulk != nil {
			n = max(n, int(w.ParallelBulk.Clients))
		}
		if w.BatchOK != nil {
			n = max(n, int(w.BatchOK.Clients))
		}
	}
	return n + 2
}

func writeOutputs(o *stepOptions, doc *results.Document, runErr error, stdout io.Writer) error {
	if o.out != "" {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.handoff != "" {
		data, err := results.Encode(doc)
		if err != nil {
			return err
		}
		if err := results.WriteFrame(stdout, results.PayloadDocument, data); err != nil {
			return err
		}
		h := results.NewHandoff(results.PayloadDocument, data, runErr, doc.Interrupted)
		if err := os.WriteFile(o.handoff, h.Marshal(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// credentials reads the CouchDB user from a directory (a mounted Secret) or the
// environment. Having none is allowed (a server in admin party mode).
func credentials(dir string) (couch.Credentials, error) {
	if dir != "" {
		read := func(name string) (string, error) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return "", fmt.Errorf("credentials: %w", err)
			}
			return strings.TrimRight(string(data), "\r\n"), nil
		}
		user, err := read("username")
		if err != nil {
			return couch.Credentials{}, err
		}
		password, err := read("password")
		return couch.Credentials{Username: user, Password: password}, err
	}
	return couch.Credentials{Username: os.Getenv("COUCHDB_USER"), Password: os.Getenv("COUCHDB_PASSWORD")}, nil
}

// report turns result documents into Markdown or CSV tables.
func report(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	format := fs.String("format", "markdown", "markdown or csv")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("name at least one results JSON file")}
	}
	var reports []results.Report
	for _, path := range fs.Args() {
		docs, err := results.ReadFile(path, os.Stdin)
		if err != nil {
			return err
		}
		reports = append(reports, results.NewReport(docs...))
	}
	switch *format {
	case "csv":
		return results.WriteCSV(stdout, reports)
	case "markdown":
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := r.WriteMarkdown(stdout); err != nil {
				return err
			}
		}
		return nil
	default:
		return usageError{fmt.Errorf("--format %q: want markdown or csv", *format)}
	}
}
