package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/loadtest"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/runner"
)

// newStepCommands are the runner's steps one by one, as the operator's Jobs run them.
func newStepCommands() []*cobra.Command {
	return []*cobra.Command{
		stepCommand("seed", []benchv1.Step{benchv1.StepSeed}, "load the dataset (one database per query server and profile)",
			"couchbench seed -f bench.yaml --url http://localhost:5984 --run-id r1"),
		stepCommand("index", []benchv1.Step{benchv1.StepIndex}, "time the view builds (after seed)",
			"couchbench index -f bench.yaml --url http://localhost:5984 --run-id r1 --arm js"),
		stepCommand("views", []benchv1.Step{benchv1.StepViews}, "time full view reads (after seed)",
			"couchbench views -f bench.yaml --url http://localhost:5984 --run-id r1"),
		stepCommand("writes", []benchv1.Step{benchv1.StepWrites}, "time the insert modes",
			"couchbench writes -f bench.yaml --url http://localhost:5984"),
	}
}

// stepCommand is run or one runner step, named name: its summary, examples, and the flags
// the steps share.
func stepCommand(name string, steps []benchv1.Step, summary string, example ...string) *cobra.Command {
	var o stepOptions
	cmd := &cobra.Command{
		Use:   name + " -f bench.yaml [--url URL]",
		Short: summary,
		Example: examples(append(example,
			"COUCHDB_USER=admin COUCHDB_PASSWORD=secret couchbench "+name+" -f config/samples/existing-couchdb.yaml")...),
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSteps(o, steps, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.serverFlags(fs)
	fs.StringSliceVar(&o.arms, "arm", nil, "query `servers` to run, comma-separated or repeated (default: all)")
	o.meterFlags(fs)
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("arm", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		bench, err := readBench(o.file)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return armNames(bench), cobra.ShellCompDirectiveNoFileComp
	}))
	fs.StringVar(&o.out, "out", "", "write the full results document (JSON) to this `file`")
	fs.StringVar(&o.handoff, "handoff", "", "hand the results to the operator: the document to standard output, framed, "+
		"and its check to this `file` (a Job's /dev/termination-log)")
	fs.StringVar(&o.runID, "run-id", "", "`name` part of this run's databases and design documents, shared by its steps")
	fs.DurationVar(&o.poll, "poll", 0, "/_active_tasks poll `interval` during builds (default 250ms)")
	// Only seeding and writes are shared between runners (benchv1.Shareable).
	if !slices.ContainsFunc(steps, func(s benchv1.Step) bool { return !benchv1.Shareable(s) }) {
		fs.IntVar(&o.part, "part", 0, "this runner is part `i` (from 0) of the --parts runners that share the step")
		fs.IntVar(&o.parts, "parts", 1, "the step is shared by `n` runners (each its slice of the documents, its share of the writers), "+
			"started at a common barrier; all take the same --run-id, one no earlier run used")
	}
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on standard error")
	if slices.Contains(steps, benchv1.StepReads) {
		fs.StringVar(&o.reads.k6, "k6", "", "the k6 `binary` that runs the reads workload (default: k6 on PATH)")
		fs.BoolVar(&o.reads.skip, "skip-reads", false, "leave the reads workload (k6) out")
		fs.BoolVar(&o.keep, "keep", false, "keep the run's databases when it ends (as spec.keepDatabases: true); "+
			"by default the run deletes them, also after a failure")
	}
	return cmd
}

// meterFlags are the flags that name what reads an arm's server's CPU time.
func (o *stepOptions) meterFlags(fs *pflag.FlagSet) {
	o.armPIDs = armValues{}
	fs.Var(o.armPIDs, "arm-pid", "measure an arm's CPU cost: its single-node CouchDB's process `ARM=PID` (repeatable), whose "+
		"process tree moves into a cgroup of its own for the run and back at its end (needs root; cgroup v1 or v2)")
	o.armPods = armValues{}
	fs.Var(o.armPods, "arm-pods", "measure an arm's CPU cost on Kubernetes: its CouchDB's pods, `ARM=NAMESPACE/POD[,POD...]` "+
		"(repeatable), each read from its couchdb container's own cgroup through pods/exec (needs get and create on "+
		"pods/exec; the kubeconfig, or in a pod its ServiceAccount)")
}

// serverFlags are the flags that name a benchmark and the CouchDB its arms run against.
func (o *stepOptions) serverFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.file, "file", "f", "", "the CouchBenchmark `file` (YAML or JSON), as kubectl would apply it")
	fs.StringVar(&o.url, "url", "", "CouchDB `URL`, without credentials (default: spec.couchdb.existing.url)")
	fs.StringVar(&o.credentialsDir, "credentials-dir", "", "`directory` with files \"username\" and \"password\" (a mounted Secret)")
	o.armURLs = armValues{}
	fs.Var(o.armURLs, "arm-url", "an arm's own CouchDB, `ARM=URL` (repeatable), e.g. to compare two CouchDB builds side by side; "+
		"its credentials from --credentials-dir/ARM when that exists")
	cobra.CheckErr(cobra.MarkFlagFilename(fs, "file", "yaml", "yml", "json"))
	cobra.CheckErr(cobra.MarkFlagDirname(fs, "credentials-dir"))
}

type stepOptions struct {
	file, url, credentialsDir, out, handoff, runID string
	arms                                           []string
	armURLs, armPIDs, armPods                      armValues
	poll                                           time.Duration
	part, parts                                    int
	quiet, keep                                    bool
	reads                                          readsOptions
}

// allSteps are the steps of `couchbench run`: every runner step, then the reads.
var allSteps = append(slices.Clone(benchv1.RunnerSteps), benchv1.StepReads)

func runSteps(o stepOptions, steps []benchv1.Step, stdout, stderr io.Writer) error {
	if o.file == "" {
		return usageError{errors.New("-f bench.yaml is required")}
	}
	bench, err := readBench(o.file)
	if err != nil {
		return err
	}
	logOut := stderr
	if o.quiet {
		logOut = io.Discard
	}
	var k6 *loadtest.K6
	if slices.Contains(steps, benchv1.StepReads) {
		if k6, err = k6ForReads(o.reads, bench.Spec, logOut); err != nil {
			return err
		}
	}
	t, err := clients(o, bench, o.arms)
	if err != nil {
		return err
	}

	// SIGTERM (a Job's pod being stopped) and Ctrl-C end the run; what was measured is
	// still written out, and processes moved into cgroups go back.
	ctx, stop := interruptible(o.handoff != "")
	defer stop()
	meters, doneMeasuring, err := cpuMeters(ctx, o.armPIDs, o.armPods, bench)
	defer func() {
		if err := doneMeasuring(); err != nil {
			fmt.Fprintf(stderr, "couchbench: ending the CPU readings (processes moved back from their cgroups, execs closed): %v\n", err)
		}
	}()
	if err != nil {
		return err
	}
	doc, runErr := runner.Run(ctx, runner.Config{
		Bench: bench, Client: t.client, Servers: t.servers, Arms: o.arms, Steps: steps, RunID: o.runID, Log: logOut, PollInterval: o.poll,
		Part: o.part, Parts: o.parts, Meters: meters,
	})
	// The reads come last, as in the operator's plan; what they measured joins the document.
	if runErr == nil && k6 != nil {
		runErr = loadtest.Local{K6: *k6, Bench: bench, Target: t.target, Meters: meters, Log: logOut}.Run(ctx, doc)
	}
	// A whole run leaves CouchDB as it found it, also after a failure or an interrupt (the
	// results are in the document); its steps run one by one leave their databases to the
	// next step.
	var cleanErr error
	if slices.Equal(steps, allSteps) && !o.keep && !bench.Spec.KeepDatabases {
		cleanErr = removeRun(context.WithoutCancel(ctx), o, bench, doc, t, logOut)
	}
	if err := writeOutputs(o, doc, runErr, stdout); err != nil {
		return errors.Join(explain(runErr, o, t.creds[""]), cleanErr, err)
	}
	// A run that measured nothing (CouchDB unreachable, say) has no table to show.
	if len(doc.Arms) > 0 {
		fmt.Fprintln(stdout)
		if err := compare.WriteRun(stdout, []*results.Document{doc}); err != nil {
			return errors.Join(explain(runErr, o, t.creds[""]), cleanErr, err)
		}
		if o.reads.skip && bench.Spec.Workloads.Reads != nil {
			fmt.Fprintln(stdout, "\nThe reads workload (k6) was left out: --skip-reads.")
		}
	}
	// An arm stopped for running its views on another runtime than it asked for fails a run
	// by hand, after the other arms' results; a Job (--handoff) leaves it to the operator,
	// which reads it from the document and goes on with the other arms.
	var stopped []error
	for _, a := range doc.Arms {
		if a.Stopped() && o.handoff == "" {
			stopped = append(stopped, fmt.Errorf("query server %s was stopped: it %s", a.QueryServer, a.Runtime.Mismatch))
		}
	}
	return errors.Join(append([]error{explain(runErr, o, t.creds[""]), cleanErr}, stopped...)...)
}

// readBench reads a CouchBenchmark file as the API server would take it, defaults applied.
func readBench(file string) (*benchv1.CouchBenchmark, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	bench, err := benchspec.ParseByHand(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return bench, nil
}

func writeOutputs(o stepOptions, doc *results.Document, runErr error, stdout io.Writer) error {
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

// interruptible is a context that Ctrl-C or SIGTERM ends, with a cause that says which and
// from whom, so that the run's error and results say it was interrupted, and by what,
// rather than how a request it cut short failed. job: SIGTERM is the pod being terminated.
func interruptible(job bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-signals:
			cancel(interrupt{signal: s, job: job})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel(nil)
	}
}

// interrupt is why a run was interrupted: a context.Canceled.
type interrupt struct {
	signal os.Signal
	job    bool
}

func (i interrupt) Error() string {
	switch {
	case i.signal == os.Interrupt:
		return "interrupted by the user (SIGINT)"
	case i.job:
		return "interrupted: the pod is being terminated (SIGTERM)"
	}
	return "interrupted (SIGTERM)"
}

func (interrupt) Unwrap() error { return context.Canceled }
