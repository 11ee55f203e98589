// Command couchbench runs the workloads of a CouchBenchmark against a CouchDB (the reads
// with k6) and prints the results; it also renders and compares results documents. The
// operator's Jobs run its step subcommands; a user can run it by hand against any CouchDB:
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
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/loadtest"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/rundbs"
	"github.com/couchbench/couchbench/internal/runner"
	"github.com/couchbench/couchbench/internal/version"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: what it does, how to call it, examples, and its flags, which
// give the function that runs it (results on stdout, progress on stderr).
type command struct {
	name, summary, usage, examples string
	flags                          func(fs *flag.FlagSet) func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	stepCommand("run", allSteps,
		"every workload of the benchmark (the reads with k6), then the results table; deletes the run's databases",
		"couchbench run -f bench.yaml --url http://localhost:5984 --out results.json\n"+
			"couchbench run -f config/samples/bench.yaml --url http://localhost:5984 --k6 bin/k6"),
	stepCommand("seed", []benchv1.Step{benchv1.StepSeed}, "load the dataset (one database per query server and profile)",
		"couchbench seed -f bench.yaml --url http://localhost:5984 --run-id r1"),
	stepCommand("index", []benchv1.Step{benchv1.StepIndex}, "time the view builds (after seed)",
		"couchbench index -f bench.yaml --url http://localhost:5984 --run-id r1 --arm js"),
	stepCommand("views", []benchv1.Step{benchv1.StepViews}, "time full view reads (after seed)",
		"couchbench views -f bench.yaml --url http://localhost:5984 --run-id r1"),
	stepCommand("writes", []benchv1.Step{benchv1.StepWrites}, "time the insert modes",
		"couchbench writes -f bench.yaml --url http://localhost:5984"),
	{
		name: "report", summary: "render results documents as tables (Markdown, CSV) or one HTML page with charts",
		usage: "couchbench report [--format markdown|csv|html] RESULTS...",
		examples: "couchbench report results.json\n" +
			"couchbench report --format html results.json > report.html\n" +
			"couchbench report monday.json tuesday.json   # each run on its own, labelled with its benchmark, run id and start\n" +
			"kubectl get cm -l bench.couchbench.io/results-of=NAME -o yaml | couchbench report -   # or -o json",
		flags: reportFlags,
	},
	{
		name: "version", summary: "this build's version, commit and Go release, and the CouchDB client's defaults",
		usage: "couchbench version (or couchbench --version)", examples: "couchbench version",
		flags: func(*flag.FlagSet) func([]string, io.Writer, io.Writer) error { return printVersion },
	},
	{
		name: "compare", summary: "compare a run with a baseline run: a noise-aware verdict per headline metric",
		usage: "couchbench compare [--tolerance PERCENT] [--between-runs PERCENT] [--format markdown|json] [--fail-on-regression] " +
			"[EARLIER...] BASELINE CURRENT",
		examples: "couchbench compare yesterday.json today.json\n" +
			"couchbench compare runs/day-0*.json yesterday.json today.json   # earlier runs: how much runs differ\n" +
			"couchbench compare --fail-on-regression --tolerance 10 base.json new.json   # in CI: exit 1 when a metric regressed",
		flags: compareFlags,
	},
	historyCommand,
	cleanCommand,
	clusterCommand,
}

const intro = `Usage: couchbench COMMAND [flags] [arguments]

couchbench runs CouchDB benchmarks described by a CouchBenchmark (bench.yaml), and renders
and compares their results. RESULTS are results documents (the --out of a run, gzip-compressed
or not) or ConfigMaps holding them as kubectl prints them; "-" reads standard input.

Credentials (run and the steps): COUCHDB_USER and COUCHDB_PASSWORD, or --credentials-dir DIR
with files "username" and "password"; never in the URL.

Commands:
`

func usage(w io.Writer) {
	fmt.Fprint(w, intro)
	rows := make([][2]string, len(commands))
	for i, c := range commands {
		rows[i] = [2]string{c.name, c.summary}
	}
	writeColumns(w, rows)
	fmt.Fprint(w, "\n`couchbench COMMAND --help` says more about each.\n")
}

// writeColumns writes rows of two columns, indented, the second aligned after the widest
// first.
func writeColumns(w io.Writer, rows [][2]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

// printVersion says which build this is and how it talks to CouchDB.
func printVersion(args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	b := version.Read()
	v, commit := b.Version, b.Commit
	if v == "" {
		v = "(version unknown: built without one)"
	}
	if commit == "" {
		commit = "unknown"
	}
	if b.Modified {
		commit += " (with changes not committed)"
	}
	fmt.Fprintf(stdout, "couchbench %s\n", v)
	writeColumns(stdout, [][2]string{{"commit", commit}, {"go", b.Go}})
	fmt.Fprint(stdout, "\nCouchDB client (run and the steps):\n")
	writeColumns(stdout, [][2]string{
		{"connections", fmt.Sprintf("the most requests a step has under way at once, plus 2; at least %d", couch.MinConns)},
		{"request timeout", "none: a view build's request may take minutes (Ctrl-C or SIGTERM ends a run, keeping its results)"},
		{"connect timeout", couch.DialTimeout.String()},
		{"keep-alive", fmt.Sprintf("%s; an idle connection is closed after %s", couch.KeepAlive, couch.IdleConnTimeout)},
		{"compression", "off: decompressing answers would take the load generator's CPU"},
		{"retries", "none by the client; seeding retries a failed batch (its ids are fixed, so that is safe)"},
		{"proxy", "HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment"},
		{"credentials", "COUCHDB_USER and COUCHDB_PASSWORD, or --credentials-dir DIR; never in the URL"},
	})
	return nil
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	case "--version":
		name = "version"
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == name {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "couchbench: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.flags(fs)
	positional, err := parseAnywhere(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		cmd.help(stdout, fs)
		return 0
	}
	if err == nil {
		err = run(positional, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "couchbench %s: %v\n", name, err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintf(stderr, "\n")
			cmd.help(stderr, fs)
			return 2
		}
		return 1
	}
	return 0
}

// parseAnywhere parses flags wherever they stand among the arguments (report results.json
// --format csv); "--" ends the flags.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// help prints a command's usage, flags (-x for one letter, --name for words) and examples.
func (c command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s\n", c.name, c.summary, c.usage)
	var flags [][2]string
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if len(f.Name) == 1 {
			arg = "-" + f.Name
		}
		if name != "" {
			arg += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "0" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		flags = append(flags, [2]string{arg, text})
	})
	if len(flags) > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		writeColumns(w, flags)
	}
	fmt.Fprintf(w, "\nExamples:\n")
	for _, line := range strings.Split(c.examples, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

type usageError struct{ error }

// stepCommand is run or one runner step.
func stepCommand(name string, steps []benchv1.Step, summary, example string) command {
	return command{
		name: name, summary: summary,
		usage: "couchbench " + name + " -f bench.yaml [--url URL] [flags]",
		examples: example + "\nCOUCHDB_USER=admin COUCHDB_PASSWORD=secret couchbench " + name +
			" -f config/samples/existing-couchdb.yaml",
		flags: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
			var o stepOptions
			o.serverFlags(fs)
			fs.StringVar(&o.arms, "arm", "", "comma-separated query `servers` to run (default: all)")
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
			fs.BoolVar(&o.quiet, "q", false, "no progress lines on standard error")
			if slices.Contains(steps, benchv1.StepReads) {
				fs.StringVar(&o.reads.k6, "k6", "", "the k6 `binary` that runs the reads workload (default: k6 on PATH)")
				fs.BoolVar(&o.reads.skip, "skip-reads", false, "leave the reads workload (k6) out")
				fs.BoolVar(&o.keep, "keep", false, "keep the run's databases when it ends (as spec.keepDatabases: true); "+
					"by default the run deletes them, also after a failure")
			}
			return func(args []string, stdout, stderr io.Writer) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected argument %q", args[0])}
				}
				return runSteps(o, steps, stdout, stderr)
			}
		},
	}
}

// serverFlags are the flags that name a benchmark and the CouchDB its arms run against.
func (o *stepOptions) serverFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.file, "f", "", "the CouchBenchmark `file` (YAML or JSON), as kubectl would apply it")
	fs.StringVar(&o.url, "url", "", "CouchDB `URL`, without credentials (default: spec.couchdb.existing.url)")
	fs.StringVar(&o.credentialsDir, "credentials-dir", "", "`directory` with files \"username\" and \"password\" (a mounted Secret)")
	o.armURLs = armURLs{}
	fs.Var(o.armURLs, "arm-url", "an arm's own CouchDB, `ARM=URL` (repeatable), e.g. to compare two CouchDB builds side by side; "+
		"its credentials from --credentials-dir/ARM when that exists")
}

type stepOptions struct {
	file, url, credentialsDir, arms, out, handoff, runID string
	armURLs                                              armURLs
	poll                                                 time.Duration
	part, parts                                          int
	quiet, keep                                          bool
	reads                                                readsOptions
}

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
	var arms []string
	if o.arms != "" {
		arms = strings.Split(o.arms, ",")
	}
	t, err := clients(o, bench, arms)
	if err != nil {
		return err
	}

	// SIGTERM (a Job's pod being stopped) and Ctrl-C end the run; what was measured is
	// still written out.
	ctx, stop := interruptible(o.handoff != "")
	defer stop()
	doc, runErr := runner.Run(ctx, runner.Config{
		Bench: bench, Client: t.client, Servers: t.servers, Arms: arms, Steps: steps, RunID: o.runID, Log: logOut, PollInterval: o.poll,
		Part: o.part, Parts: o.parts,
	})
	// The reads come last, as in the operator's plan; what they measured joins the document.
	if runErr == nil && k6 != nil {
		runErr = loadtest.Local{K6: *k6, Bench: bench, Target: t.target, Log: logOut}.Run(ctx, doc)
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

// allSteps are the steps of `couchbench run`: every runner step, then the reads.
var allSteps = append(slices.Clone(benchv1.RunnerSteps), benchv1.StepReads)

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

// explain adds to an error what a user can do about it: after CouchDB's 401, how to pass a
// server admin's credentials, and which credentials, if any, it refused.
func explain(err error, o stepOptions, creds couch.Credentials) error {
	if couch.StatusOf(err) != http.StatusUnauthorized {
		return err
	}
	how := "set COUCHDB_USER and COUCHDB_PASSWORD to a server admin's name and password, or pass --credentials-dir DIR " +
		"with files \"username\" and \"password\""
	switch {
	case creds.Username == "":
		return fmt.Errorf("%w\nCouchDB wants a server admin, and no credentials were given: %s", err, how)
	case o.credentialsDir != "":
		return fmt.Errorf("%w\nCouchDB refused user %q from --credentials-dir %s (a wrong password, or not a server admin): %s",
			err, creds.Username, o.credentialsDir, how)
	}
	return fmt.Errorf("%w\nCouchDB refused user %q from COUCHDB_USER and COUCHDB_PASSWORD (a wrong password, or not a server admin): %s",
		err, creds.Username, how)
}

// armURLs are --arm-url's: arms' own CouchDBs, by arm name.
type armURLs map[string]string

func (a armURLs) String() string {
	out := make([]string, 0, len(a))
	for _, arm := range slices.Sorted(maps.Keys(a)) {
		out = append(out, arm+"="+a[arm])
	}
	return strings.Join(out, ",")
}

func (a armURLs) Set(v string) error {
	arm, url, ok := strings.Cut(v, "=")
	if !ok || arm == "" || url == "" {
		return fmt.Errorf("%q is not ARM=URL", v)
	}
	a[arm] = url
	return nil
}

// targets are the arms' CouchDBs: a client for each (arms with one URL and one user share
// one), and what k6 and error messages need of them.
type targets struct {
	// client is --url's (nil when every arm has its own); servers the arms' own.
	client  *couch.Client
	servers map[string]*couch.Client
	// urls and creds are every arm's, by name; creds[""] are --url's.
	urls  map[string]string
	creds map[string]couch.Credentials
}

// target is an arm's CouchDB, for k6.
func (t targets) target(arm string) (string, couch.Credentials) { return t.urls[arm], t.creds[arm] }

// clientOf is the client of an arm's CouchDB.
func (t targets) clientOf(arm string) *couch.Client {
	if c, ok := t.servers[arm]; ok {
		return c
	}
	return t.client
}

// clients connects to the arms' CouchDBs: --url (or the spec's existing URL) for every arm,
// and --arm-url's for arms of their own, whose credentials come from --credentials-dir/ARM
// when that exists. A URL is needed for every arm that runs.
func clients(o stepOptions, bench *benchv1.CouchBenchmark, arms []string) (targets, error) {
	url := o.url
	if url == "" && bench.Spec.CouchDB.Existing != nil {
		url = bench.Spec.CouchDB.Existing.URL
	}
	for arm := range o.armURLs {
		if !slices.ContainsFunc(bench.Spec.QueryServers, func(q benchv1.QueryServer) bool { return q.Name == arm }) {
			return targets{}, usageError{fmt.Errorf("--arm-url %s=...: the benchmark has no query server %q", arm, arm)}
		}
	}
	if arms == nil {
		for _, q := range bench.Spec.QueryServers {
			arms = append(arms, q.Name)
		}
	}
	shared := false // an arm without a CouchDB of its own runs against url
	for _, arm := range arms {
		if _, own := o.armURLs[arm]; !own {
			if url == "" {
				return targets{}, usageError{fmt.Errorf("--url is required for query server %s (the benchmark provisions its CouchDB, "+
					"so it names none; or give it one with --arm-url %s=URL)", arm, arm)}
			}
			shared = true
		}
	}
	// Arms with one URL and one user share a client: they share a CouchDB, which the
	// runner then sets up once for them all (the operator hands every arm its own
	// credentials directory, the same Secret for arms of one CouchDB).
	type key struct {
		url   string
		creds couch.Credentials
	}
	opened := map[key]*couch.Client{}
	t := targets{servers: map[string]*couch.Client{}, urls: map[string]string{}, creds: map[string]couch.Credentials{}}
	open := func(arm, u, dir string) (*couch.Client, error) {
		creds, err := credentials(dir)
		if err != nil {
			return nil, err
		}
		t.urls[arm], t.creds[arm] = u, creds
		if c, ok := opened[key{u, creds}]; ok {
			return c, nil
		}
		c, err := couch.New(u, creds, couch.Options{MaxConns: maxConns(bench.Spec)})
		opened[key{u, creds}] = c
		return c, err
	}
	// Only arms without an --arm-url need url and the credentials at the top of
	// --credentials-dir: the operator names every arm's CouchDB, also an existing one, and
	// mounts only the arms' own directories.
	if shared {
		c, err := open("", url, o.credentialsDir)
		if err != nil {
			return targets{}, err
		}
		t.client = c
		for _, arm := range arms {
			t.urls[arm], t.creds[arm] = url, t.creds[""]
		}
	}
	for arm, u := range o.armURLs {
		dir := o.credentialsDir
		if own := filepath.Join(dir, arm); dir != "" && isDir(own) {
			dir = own
		}
		c, err := open(arm, u, dir)
		if err != nil {
			return targets{}, fmt.Errorf("query server %s: %w", arm, err)
		}
		t.servers[arm] = c
	}
	return t, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// maxConns sizes the connection pool for the most concurrent requests any step makes, plus
// two: the /_active_tasks poller and a probe beside a view build's request to every shard
// copy (q x n of them; n unset is at most 3).
func maxConns(spec benchv1.CouchBenchmarkSpec) int {
	replicas, shards := int32(3), spec.Dataset.Shards
	if spec.Dataset.Replicas != nil {
		replicas = *spec.Dataset.Replicas
	}
	for _, qs := range spec.QueryServers {
		if qs.Shards != nil {
			shards = max(shards, *qs.Shards)
		}
	}
	n := max(int(spec.Dataset.Concurrency), int(shards*replicas))
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

// readAll reads every RESULTS argument.
func readAll(args []string) ([]*results.Document, error) {
	var docs []*results.Document
	for _, path := range args {
		more, err := results.ReadFile(path, os.Stdin)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// reportFlags: the documents render run by run (results.Runs: the operator stores one
// document per arm, and those are one run), each labelled with its benchmark, run id and
// start.
func reportFlags(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
	format := fs.String("format", formatMarkdown, "`format`: markdown, csv or html (one page with charts)")
	return func(args []string, stdout, _ io.Writer) error {
		if len(args) == 0 {
			return usageError{errors.New("name at least one RESULTS file, or - for standard input")}
		}
		if *format != formatMarkdown && *format != "csv" && *format != formatHTML {
			return usageError{fmt.Errorf("--format %q: want markdown, csv or html", *format)}
		}
		docs, err := readAll(args)
		if err != nil {
			return err
		}
		runs := results.Runs(docs)
		if *format == formatHTML {
			return htmlreport.HTMLRuns(stdout, runs)
		}
		reports := make([]results.Report, len(runs))
		for i, run := range runs {
			reports[i] = results.NewReport(run...)
		}
		if *format == "csv" {
			return results.WriteCSV(stdout, reports)
		}
		for i, run := range runs {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := compare.WriteRun(stdout, run); err != nil {
				return err
			}
		}
		return nil
	}
}

func compareFlags(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
	tolerance := fs.Float64("tolerance", 5, "a change smaller than this `percent` is never a regression")
	betweenRuns := fs.Float64("between-runs", compare.DefaultBetweenRunsPercent, "how much runs minutes apart differ (CV, `percent`) with nothing changed, "+
		"assumed unless 3 EARLIER runs show it (0: the runs' own repetitions alone)")
	format := fs.String("format", formatMarkdown, "`format`: markdown or json")
	failOnRegression := fs.Bool("fail-on-regression", false, "exit 1 when a metric regressed (for CI)")
	return func(args []string, stdout, _ io.Writer) error {
		if len(args) < 2 {
			return usageError{errors.New("name the BASELINE and the CURRENT results, after any EARLIER runs")}
		}
		n := len(args)
		base, err := readAll(args[n-2 : n-1])
		if err != nil {
			return err
		}
		current, err := readAll(args[n-1:])
		if err != nil {
			return err
		}
		opts := compare.Options{TolerancePercent: *tolerance, BetweenRunsPercent: *betweenRuns}
		if n > 2 {
			h, _, err := readRuns(args[:n-1])
			if err != nil {
				return err
			}
			opts.History = h.Before(results.StartedAt(current))
		}
		c, err := compare.Compare(base, current, opts)
		if err != nil {
			return usageError{err}
		}
		switch *format {
		case "json":
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(c); err != nil {
				return err
			}
		case formatMarkdown:
			fmt.Fprintf(stdout, "## %s against %s: %s\n\n%s\n\n", c.Current, c.Baseline, c.Verdict, c.Summary())
			if err := results.WriteMarkdown(stdout, c.Tables()); err != nil {
				return err
			}
		default:
			return usageError{fmt.Errorf("--format %q: want markdown or json", *format)}
		}
		if *failOnRegression && c.Verdict == compare.Regressed {
			return errors.New("regressed: " + c.Summary())
		}
		return nil
	}
}
