package main

// The command against real Apache CouchDB 3.4.3, the single node of the project's kit that
// `make test` starts (internal/couchdbtest); the usage tests need no server.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/testenv"
	"github.com/couchbench/couchbench/internal/turns"
	"github.com/couchbench/couchbench/internal/version"
)

const bench = `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: cli}
spec:
  couchdb: {provision: {clusterSize: 1}}
  queryServers: [{name: js, language: javascript}]
  dataset: {documents: 300, batchSize: 100}
  workloads:
    indexing: {repetitions: 1}
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunWritesTableResultsAndSummary(t *testing.T) {
	srv := couchdbtest.Single(t)
	runID := "cli" + couchdbtest.RandomID()
	srv.DeleteLater(t, names.Database("cli", runID, "js", "small"))
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", bench)
	creds := filepath.Join(dir, "creds")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, creds, "username", srv.User+"\n")
	writeFile(t, creds, "password", srv.Password)
	out, handoff := filepath.Join(dir, "out.json"), filepath.Join(dir, "handoff.json")

	var stdout, stderr bytes.Buffer
	code := realMain([]string{"run", "-f", spec, "--url", srv.URL(), "--credentials-dir", creds, "--run-id", runID,
		"--out", out, "--handoff", handoff}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "| js (javascript) | builtin") {
		t.Errorf("no results table on stdout:\n%s", stdout.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), srv.Password) {
		t.Error("the password was printed")
	}
	docs, err := results.ReadFile(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := docs[0]
	if len(doc.Arms) != 1 || len(doc.Arms[0].Profiles[0].Indexing[0].Runs) != 1 || doc.SpecHash == "" ||
		doc.Server.Version != srv.Version || doc.Arms[0].Profiles[0].Seeding.Stored != 300 {
		t.Errorf("results document: %+v", doc)
	}
	if r := doc.Arms[0].Profiles[0].Indexing[0].Runs[0]; r.MapDocs != 300 || r.MapDocsExpected != 300 {
		t.Errorf("map_doc grew by %d, expected %d: want 300, one map call per document (one node, compaction paused)", r.MapDocs, r.MapDocsExpected)
	}
	// --handoff: the document framed on stdout, checked by the handoff file, as a Job hands
	// it to the operator.
	data, err := os.ReadFile(handoff)
	if err != nil {
		t.Fatal(err)
	}
	h, err := results.ParseHandoff(string(data))
	if err != nil || len(data) > results.MaxHandoffBytes || h.Error != "" {
		t.Fatalf("handoff (%d bytes) %s: %v", len(data), data, err)
	}
	payload, err := results.ReadFrame(strings.NewReader(stdout.String()), h)
	if err != nil {
		t.Fatal(err)
	}
	if framed, err := results.Decode(payload); err != nil || len(framed.Arms) != 1 || framed.Arms[0].Profiles[0].Seeding.Stored != 300 {
		t.Errorf("framed document: %v", err)
	}

	// report turns the results file into Markdown, CSV (flags after the file too) and HTML.
	stdout.Reset()
	if code := realMain([]string{"report", out}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "## cli (") {
		t.Errorf("report markdown: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := realMain([]string{"report", out, "--format", "csv"}, &stdout, &stderr); code != 0 ||
		!strings.HasPrefix(stdout.String(), "benchmark,run_id,started_at,option") {
		t.Errorf("report csv: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := realMain([]string{"report", "--format", "html", out}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "<svg") || !strings.Contains(stdout.String(), "</html>") {
		t.Errorf("report html: exit %d, %d bytes", code, stdout.Len())
	}
}

// readsBench is a benchmark whose only workload is k6 reads: two arms, two k6 runners a run,
// a warm-up and two repetitions, and a threshold that cannot hold.
const readsBench = `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: clireads}
spec:
  couchdb: {provision: {clusterSize: 1}}
  queryServers: [{name: a, language: javascript}, {name: b, language: javascript}]
  dataset: {documents: 300, batchSize: 100}
  k6: {parallelism: 2}
  workloads:
    reads:
      virtualUsers: 2
      iterationsPerUser: 10
      repetitions: 2
      warmUp: true
      thresholds: [{metric: http_req_duration, condition: "p(95)<0"}]
`

// run runs every workload the benchmark names: the reads with k6 (the binary `make test`
// builds, named by K6), as the operator's k6 Jobs run them. On real Apache CouchDB 3.4.3, the
// kit's single node.
func TestRunRunsTheReadsWithK6OnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	k6 := os.Getenv("K6")
	if k6 == "" {
		t.Fatal("K6 is not set: run the tests with `make test`, which builds k6 from its Go module with hack/k6.sh")
	}
	t.Setenv("COUCHDB_USER", srv.User)
	t.Setenv("COUCHDB_PASSWORD", srv.Password)
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", readsBench)
	runID := "cli" + couchdbtest.RandomID()
	for _, arm := range []string{"a", "b"} {
		srv.DeleteLater(t, names.Database("clireads", runID, arm, "small"), names.Database("clireads", runID+"s", arm, "small"))
	}
	out := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"run", "-f", spec, "--url", srv.URL(), "--run-id", runID, "--k6", k6, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	// Both arms' reads in the table: 2 repetitions x 2 users x 10 requests, the threshold failed
	// (k6's exit 99 is a result, not a failed run).
	for _, arm := range []string{"a", "b"} {
		if !regexp.MustCompile(`\| ` + arm + ` \(javascript\) +\| 40 +\| .*\| 0\.00% .*\| FAILED +\|`).MatchString(stdout.String()) {
			t.Errorf("no reads row of arm %s with 40 requests, no errors and the threshold failed:\n%s", arm, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "a: reads (k6, getDocument), repetition 2 of 2") {
		t.Errorf("no progress of the reads:\n%s", stderr.String())
	}
	docs, err := results.ReadFile(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := docs[0]
	var starts [][]time.Time // by run, in the order the runs ran
	for _, a := range doc.Arms {
		r := a.Profiles[0].Reads
		if r == nil || len(r.Runners) != 4 || len(r.WarmUp) != 2 {
			t.Fatalf("arm %s: reads %+v; want 2 runners in each of the 2 repetitions and in the warm-up", a.QueryServer, r)
		}
		for i, run := range append(r.WarmUp, r.Runners...) {
			segment := []string{"0:1/2", "1/2:1"}[i%2]
			if run.Segment != segment || run.Requests != 10 || run.Failed != 0 || run.Histogram.Count() != run.Requests ||
				(i >= 2 && run.Repetition != (i-2)/2) {
				t.Errorf("arm %s, runner %d: %+v; want segment %s, 10 requests counted in its histogram", a.QueryServer, i, run, segment)
			}
		}
	}
	// The arms took turns round by round (the warm-up first), in each round's random order
	// (internal/turns); each run's runners began their load after the run before had begun
	// its own.
	reads := map[string]*results.Reads{"a": doc.Arms[0].Profiles[0].Reads, "b": doc.Arms[1].Profiles[0].Reads}
	for round := range 3 {
		for _, arm := range turns.Order(runID, string(benchv1.StepReads), round, []string{"a", "b"}) {
			r := reads[arm]
			runners := append(r.WarmUp, r.Runners...)[2*round : 2*round+2]
			starts = append(starts, []time.Time{runners[0].LoadStartedAt, runners[1].LoadStartedAt})
		}
	}
	for i := 1; i < len(starts); i++ {
		if !starts[i][0].After(starts[i-1][1]) || !starts[i][1].After(starts[i-1][0]) {
			t.Errorf("run %d began its load at %v, run %d at %v: the arms did not take turns", i-1, starts[i-1], i, starts[i])
		}
	}
	steps := map[string]bool{}
	for _, rec := range doc.Steps {
		steps[rec.QueryServer+"/"+string(rec.Step)] = rec.Error == "" && rec.FinishedAt.After(rec.StartedAt)
	}
	if !steps["a/reads"] || !steps["b/reads"] || !steps["a/seed"] {
		t.Errorf("step records %v", steps)
	}

	// --skip-reads leaves them out, and says so.
	stdout.Reset()
	stderr.Reset()
	if code := realMain([]string{"run", "-f", spec, "--url", srv.URL(), "--run-id", runID + "s", "--skip-reads", "-q"}, &stdout, &stderr); code != 0 ||
		strings.Contains(stdout.String(), "### Reads") || !strings.HasSuffix(stdout.String(), "\nThe reads workload (k6) was left out: --skip-reads.\n") {
		t.Errorf("--skip-reads: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// Without k6, run fails before it reaches CouchDB (so before it seeds), naming the workload
// and how to get k6; --skip-reads runs the rest. No server: the URL answers nothing.
func TestRunWithoutK6FailsBeforeSeeding(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", readsBench)
	t.Setenv("PATH", dir) // no k6 on it
	const unreachable = "http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"the benchmark's reads workload (getDocument, 2 virtual users) runs k6, and there is no k6 on PATH",
			"make k6", "--k6 PATH", "--skip-reads"}},
		{[]string{"--k6", filepath.Join(dir, "k6")}, []string{"runs k6, and " + filepath.Join(dir, "k6") + " does not run as k6"}},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(append([]string{"run", "-f", spec, "--url", unreachable}, c.args...), &stdout, &stderr)
		for _, want := range c.want {
			if code != 1 || !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "reaching CouchDB") {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 before CouchDB is reached, saying %q", c.args, code, stderr.String(), want)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"run", "-f", spec, "--url", unreachable, "--skip-reads"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "the reads workload (k6, getDocument) is left out: --skip-reads") ||
		!strings.Contains(stderr.String(), "reaching CouchDB at "+unreachable) {
		t.Errorf("--skip-reads: exit %d, stderr %q; want the reads left out and the run to go on to CouchDB", code, stderr.String())
	}
}

// CouchDB's 401 is explained with the ways to pass a server admin's credentials, and names
// which credentials it refused (never their password). The users are this test's own on the
// kit's single node: failed logins lock a user out after 5 ([chttpd_auth_lockout]).
func TestUnauthorizedSaysHowToPassCredentialsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", bench)
	user, password := srv.NewUser(t) // no roles: not a server admin
	creds := filepath.Join(dir, "creds")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, creds, "username", user)
	writeFile(t, creds, "password", password)
	wrong, wrongPassword := srv.NewUser(t)
	const how = "set COUCHDB_USER and COUCHDB_PASSWORD to a server admin's name and password, or pass --credentials-dir DIR"
	cases := []struct {
		name, user, password string
		args                 []string
		want                 string
	}{
		{"none", "", "", nil, "HTTP 401 unauthorized: You are not a server admin.\nCouchDB wants a server admin, and no credentials were given: " + how},
		{"wrong password", wrong, "not-" + wrongPassword, nil, "HTTP 401 unauthorized: Name or password is incorrect.\n" +
			`CouchDB refused user "` + wrong + `" from COUCHDB_USER and COUCHDB_PASSWORD (a wrong password, or not a server admin): ` + how},
		{"not an admin", "", "", []string{"--credentials-dir", creds}, "HTTP 401 unauthorized: You are not a server admin.\n" +
			`CouchDB refused user "` + user + `" from --credentials-dir ` + creds + " (a wrong password, or not a server admin): " + how},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("COUCHDB_USER", c.user)
			t.Setenv("COUCHDB_PASSWORD", c.password)
			var stdout, stderr bytes.Buffer
			code := realMain(append([]string{"seed", "-f", spec, "--url", srv.URL(), "-q"}, c.args...), &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "pw-") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q, no password", code, stderr.String(), c.want)
			}
		})
	}
}

func TestCredentialsInTheURLAreRefused(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", bench)
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"seed", "-f", spec, "--url", "http://admin:hunter2@127.0.0.1:1"}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "carries credentials") || strings.Contains(stderr.String(), "hunter2") {
		t.Errorf("exit %d, stderr %q: want a refusal that does not repeat the password", code, stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", bench)
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(bench, "documents: 300", "documents: 0", 1))
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"run"}, 2, "-f bench.yaml is required"},
		{[]string{"run", "-f", spec}, 2, "--url is required"},
		{[]string{"run", "--file", spec}, 2, "--url is required"}, // -f's long name, new with pflag
		{[]string{"run", "-f", bad, "--url", "http://127.0.0.1:1"}, 1, "spec.dataset.documents"},
		{[]string{"report"}, 2, "name at least one RESULTS file"},
		{[]string{"report", "--format", "pdf", "x.json"}, 2, `invalid argument "pdf" for "--format" flag: want markdown, csv or html`},
		{[]string{"report", "x.json"}, 1, "no such file"},
		{[]string{"compare", "a.json"}, 2, "name the BASELINE and the CURRENT results"},
		{[]string{"index", "-f", spec, "--bogus"}, 2, "unknown flag: --bogus"},
		// Go's flag package took a word flag after one dash; pflag reads -url as -u -r -l.
		{[]string{"seed", "-f", spec, "-url", "http://127.0.0.1:1"}, 2, "unknown shorthand flag: 'u' in -url"},
		// Only seeding and writes are shared between runner parts: the other steps do not
		// take the flags.
		{[]string{"index", "-f", spec, "--url", "http://127.0.0.1:1", "--parts", "2"}, 2, "unknown flag: --parts"},
		{[]string{"views", "-f", spec, "--url", "http://127.0.0.1:1", "--part", "1"}, 2, "unknown flag: --part"},
		{[]string{"run", "-f", spec, "--url", "http://127.0.0.1:1", "--parts", "2"}, 2, "unknown flag: --parts"},
		{[]string{"version", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"seed", "-f", spec, "--url", "http://127.0.0.1:1", "--part", "2", "--parts", "2"}, 1, "as parts 0 to 1"},
		// --keep is a whole run's: its steps one by one keep their databases for the next.
		{[]string{"seed", "-f", spec, "--keep"}, 2, "unknown flag: --keep"},
		{[]string{"clean", "--run-id", "r1"}, 2, "name the run's benchmark with -f bench.yaml or --benchmark NAME"},
		{[]string{"clean", "-f", spec, "--benchmark", "cli"}, 2, "name the run's benchmark with -f bench.yaml or --benchmark NAME (one of them)"},
		{[]string{"clean", "--benchmark", "cli"}, 2, "--benchmark needs --run-id: without it every run of the benchmark would go"},
		{[]string{"clean", "--benchmark", "cli", "--run-id", "r1"}, 2, "--url is required with --benchmark"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := realMain(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// singleDashWord finds a word flag written as Go's flag package prints it (-url): the help
// must say --url, as the rest of the documentation does.
var singleDashWord = regexp.MustCompile(`\n  -[a-z][a-z]`)

// Every command explains itself on --help, on standard output, and exits 0; its flags'
// descriptions start in one column, as do the commands' in the overview, which the README
// quotes.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range newRootCommand().Commands() {
		name := c.Name()
		var stdout, stderr bytes.Buffer
		if code := realMain([]string{name, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 ||
			!strings.Contains(stdout.String(), "Usage:\n  couchbench "+name) || !strings.Contains(stdout.String(), "Examples:") ||
			singleDashWord.MatchString(stdout.String()) {
			t.Errorf("%s --help: exit %d\nstdout:\n%s\nstderr:\n%s", name, code, stdout.String(), stderr.String())
		}
		checkColumns(t, name+" --help", stdout.String(), "Flags:")
		// Runner parts share seeding and writes only.
		if parts := strings.Contains(stdout.String(), "--parts n"); parts != (name == "seed" || name == "writes") {
			t.Errorf("%s --help offers --parts: %v", name, parts)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "compare") {
		t.Errorf("--help: exit %d\n%s", code, stdout.String())
	}
	checkColumns(t, "--help", stdout.String(), "Commands:")
	// The README quotes the commands as --help lists them.
	_, commands, _ := strings.Cut(stdout.String(), "\nCommands:\n")
	commands, _, _ = strings.Cut(commands, "\n\n")
	readme, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "README.md"))
	if err != nil || !strings.Contains(string(readme), "\nCommands:\n"+commands+"\n```\n") {
		t.Errorf("README.md does not quote the commands as --help lists them (%v):\nCommands:\n%s", err, commands)
	}
}

// The shell completes commands, the formats, the benchmark's file and its query servers; no
// server.
func TestShellCompletion(t *testing.T) {
	spec := writeFile(t, t.TempDir(), "bench.yaml", strings.Replace(bench, "queryServers: [{name: js, language: javascript}]",
		"queryServers: [{name: js, language: javascript}, {name: py, language: python}]", 1))
	for _, c := range []struct {
		args []string
		want string
	}{
		// cobra's __complete: a candidate (and its description) a line, then ":" and what the
		// shell does besides (4: no file names, 8: files with these extensions).
		{[]string{"__complete", "r"}, "run\tevery workload of the benchmark"},
		{[]string{"__complete", "r"}, "report\trender results documents"},
		{[]string{"__complete", "report", "--format", ""}, "markdown\ncsv\nhtml\n:4\n"},
		{[]string{"__complete", "compare", "--format", ""}, "markdown\njson\n:4\n"},
		{[]string{"__complete", "run", "-f", ""}, "yaml\nyml\njson\n:8\n"},
		{[]string{"__complete", "index", "-f", spec, "--arm", ""}, "js\npy\n:4\n"},
		{[]string{"completion", "bash"}, "# bash completion V2 for couchbench"},
		{[]string{"completion", "zsh"}, "#compdef couchbench"},
		{[]string{"completion", "fish"}, "# fish completion for couchbench"},
	} {
		var stdout, stderr bytes.Buffer
		if code := realMain(c.args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), c.want) {
			t.Errorf("%q: exit %d, stdout:\n%s\nstderr:\n%s\nwant %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}

// checkColumns checks that the rows under heading (up to a blank line), "  name  text"
// (pflag indents a flag without a shorthand further: "      --name  text"), have their text
// in one column.
func checkColumns(t *testing.T, what, out, heading string) {
	t.Helper()
	_, block, ok := strings.Cut(out, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no %q in\n%s", what, heading, out)
	}
	block, _, _ = strings.Cut(strings.TrimRight(block, "\n"), "\n\n")
	column := -1
	for _, line := range strings.Split(block, "\n") {
		row := strings.TrimLeft(line, " ")
		name, _, found := strings.Cut(row, "  ")
		at := len(line) - len(row) + len(name) + len("  ")
		for at < len(line) && line[at] == ' ' {
			at++
		}
		switch {
		case !found:
			t.Errorf("%s: %q is not a row of two columns", what, line)
		case column < 0:
			column = at
		case at != column:
			t.Errorf("%s: %q starts its text at column %d, the rows above at %d", what, line, at, column)
		}
	}
}

// couchbench version and couchbench --version say which build this is, the Go release, and
// how the client talks to CouchDB.
func TestVersion(t *testing.T) {
	defer func(v, c string) { version.Version, version.Commit = v, c }(version.Version, version.Commit)
	version.Version, version.Commit = "v1.2.3", "8933624"
	var outputs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := realMain(args, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr.String())
		}
		outputs = append(outputs, stdout.String())
	}
	out := outputs[0]
	for _, want := range []string{"couchbench v1.2.3\n", "\n  commit  8933624\n", "\n  go      " + runtime.Version() + " ",
		"connect timeout  " + couch.DialTimeout.String(), fmt.Sprintf("at least %d", couch.MinConns), "COUCHDB_USER"} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}
	if outputs[1] != out {
		t.Errorf("--version says\n%s\nversion says\n%s", outputs[1], out)
	}
	checkColumns(t, "version", out, "CouchDB client (run and the steps):")
}

// A benchmark run by hand against an existing CouchDB needs no credentialsSecret: the
// credentials come from the environment.
func TestByHandNeedsNoCredentialsSecret(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", strings.Replace(bench, "couchdb: {provision: {clusterSize: 1}}",
		"couchdb: {existing: {url: \"http://127.0.0.1:1\"}}", 1))
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"seed", "-f", spec, "-q"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "reaching CouchDB at http://127.0.0.1:1") || strings.Contains(stderr.String(), "credentialsSecret") {
		t.Errorf("exit %d, stderr %q: want the run to try the server", code, stderr.String())
	}
	// Nothing was measured: no empty table is printed.
	if strings.Contains(stdout.String(), "##") {
		t.Errorf("stdout %q", stdout.String())
	}
}

// --arm-url: every arm needs a CouchDB, an arm named there must exist, and arms with one URL
// and one user share a client (the operator mounts each arm's credentials on its own). No
// server: the clients are only made, not used.
func TestArmURLs(t *testing.T) {
	spec, err := benchspec.ParseByHand([]byte(strings.Replace(bench, "queryServers: [{name: js, language: javascript}]",
		"queryServers: [{name: js, language: javascript}, {name: py, language: python}]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, arm := range []string{"js", "py"} {
		own := filepath.Join(dir, arm)
		if err := os.Mkdir(own, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, own, "username", "admin\n")
		writeFile(t, own, "password", "same")
	}
	o := stepOptions{credentialsDir: dir, armURLs: armValues{"js": "http://a:5984", "py": "http://a:5984"}}
	got, err := clients(o, spec, nil)
	if err != nil || got.client != nil || len(got.servers) != 2 || got.servers["js"] != got.servers["py"] {
		t.Errorf("two arms on one CouchDB with one user: %+v, %v; want one shared client", got, err)
	}
	if url, creds := got.target("py"); url != "http://a:5984" || creds.Username != "admin" || creds.Password != "same" {
		t.Errorf("py's target %s as %s, want http://a:5984 as admin with its own credentials", url, creds)
	}
	// As the operator runs a step on an existing CouchDB: the spec names the server, every
	// arm is named with it, and only the arms' own credential directories are there.
	existing, err := benchspec.ParseByHand([]byte(strings.Replace(strings.Replace(bench,
		"queryServers: [{name: js, language: javascript}]",
		"queryServers: [{name: js, language: javascript}, {name: py, language: python}]", 1),
		"couchdb: {provision: {clusterSize: 1}}", "couchdb: {existing: {url: \"http://a:5984\", credentialsSecret: {name: admin}}}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := clients(o, existing, []string{"js", "py"}); err != nil || got.client != nil || got.servers["js"] != got.servers["py"] {
		t.Errorf("arms of an existing CouchDB, each named with it: %+v, %v; want one shared client, no other", got, err)
	}
	o.armURLs = armValues{"js": "http://a:5984", "py": "http://b:5984"}
	if got, err = clients(o, spec, nil); err != nil || got.servers["js"] == got.servers["py"] {
		t.Errorf("two CouchDBs: %+v, %v; want a client each", got, err)
	}
	o.armURLs = armValues{"js": "http://a:5984"}
	if _, err = clients(o, spec, nil); err == nil || !strings.Contains(err.Error(), "query server py") {
		t.Errorf("py without a CouchDB: %v; want an error naming it", err)
	}
	o.armURLs = armValues{"erl": "http://a:5984"}
	if _, err = clients(o, spec, []string{"js"}); err == nil || !strings.Contains(err.Error(), `no query server "erl"`) {
		t.Errorf("an --arm-url of no arm: %v", err)
	}
	if err := (armValues{}).Set("js"); err == nil {
		t.Error(`--arm-url "js" was taken for ARM=URL`)
	}
	// An arm named twice is refused, not overwritten.
	twice := armValues{}
	if err := twice.Set("js=http://a:5984"); err != nil {
		t.Fatal(err)
	}
	if err := twice.Set("js=http://b:5984"); err == nil || !strings.Contains(err.Error(), "given twice") || twice["js"] != "http://a:5984" {
		t.Errorf("an arm given twice: %v, kept %q", err, twice["js"])
	}
}

// seededRun is a results document, made here, of a run by hand that seeded 300 documents
// for query server js in elapsed.
func seededRun(t *testing.T, dir, name, runID string, started time.Time, elapsed time.Duration) string {
	t.Helper()
	doc := &results.Document{SchemaVersion: results.SchemaVersion, Benchmark: "cli", RunID: runID, StartedAt: started,
		Server: results.Provenance{Vendor: "The Apache Software Foundation", Version: "3.4.3", Nodes: []string{"n1"}},
		Arms: []results.Arm{{QueryServer: "js", Language: "javascript", Profiles: []results.Profile{{Profile: "small",
			Seeding: &measured.Seeding{Stored: 300, Created: 300, Elapsed: elapsed}}}}}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(data))
}

// report of several runs labels each run and shows each once.
func TestReportLabelsEachRun(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := seededRun(t, dir, "a.json", "", started, time.Second)
	b := seededRun(t, dir, "b.json", "r2", started.Add(time.Hour), time.Second)
	report := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := realMain(append([]string{"report"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("report %v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	md := report(b, a)
	first := strings.Index(md, "## cli (2026-11-22T01:00:00Z, The Apache Software Foundation 3.4.3, 1 node(s))")
	second := strings.Index(md, "## cli (run r2, 2026-11-22T02:00:00Z, The Apache Software Foundation 3.4.3, 1 node(s))")
	if first < 0 || second < first || strings.Count(md, "| js (javascript) | small") != 2 {
		t.Errorf("want each run under a heading of its own, earliest first, one seeding row each:\n%s", md)
	}
	if md := report(a, a); strings.Count(md, "## cli") != 1 || strings.Count(md, "| js (javascript) | small") != 1 {
		t.Errorf("the same run twice must show once:\n%s", md)
	}
	csv := report("--format", "csv", a, b)
	for _, want := range []string{"cli,,2026-11-22T01:00:00Z,js,small,seeding,bulk,docs_per_second,300\n",
		"cli,r2,2026-11-22T02:00:00Z,js,small,seeding,bulk,docs_per_second,300\n"} {
		if !strings.Contains(csv, want) {
			t.Errorf("csv lacks %q:\n%s", want, csv)
		}
	}
	if page := report("--format", "html", a, b); !strings.Contains(page, "<h1>couchbench: 2 runs of cli</h1>") ||
		!strings.Contains(page, "<h2>cli (run r2, 2026-11-22T02:00:00Z)</h2>") {
		t.Errorf("the page does not show both runs:\n%.2000s", page)
	}
}

// interruptBench builds a view over enough documents that Ctrl-C lands while it builds.
const interruptBench = `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: cliint}
spec:
  couchdb: {provision: {clusterSize: 1}}
  queryServers: [{name: js, language: javascript}]
  dataset: {documents: 20000, batchSize: 1000}
  workloads:
    indexing: {repetitions: 1}
`

// Ctrl-C while real CouchDB builds the view (the kit's single node; the test sends itself
// SIGINT once the build's indexer task shows): the run says it was interrupted by the user,
// blames no node, keeps the seeding in --out, and deletes its database as after any run.
func TestCtrlCDuringABuildSaysSoOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	runID := "int" + couchdbtest.RandomID()
	db := names.Database("cliint", runID, "js", "small")
	srv.DeleteLater(t, db)
	dir := t.TempDir()
	spec, out := writeFile(t, dir, "bench.yaml", interruptBench), filepath.Join(dir, "out.json")
	t.Setenv("COUCHDB_USER", srv.User)
	t.Setenv("COUCHDB_PASSWORD", srv.Password)
	// Registered for the whole test, so that a SIGINT that came after the run had stopped
	// catching it could not end the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)
	observer := srv.Client(t, couch.Options{})
	finished, sent := make(chan struct{}), make(chan bool, 1)
	go func() {
		for {
			select {
			case <-finished:
				sent <- false
				return
			case <-time.After(20 * time.Millisecond):
			}
			if couchdbtest.IndexerRunning(observer, db) {
				sent <- syscall.Kill(os.Getpid(), syscall.SIGINT) == nil
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"run", "-f", spec, "--url", srv.URL(), "--run-id", runID, "--out", out}, &stdout, &stderr)
	close(finished)
	if !<-sent {
		t.Fatalf("no SIGINT was sent during the build: exit %d\n%s", code, stderr.String())
	}
	text := stderr.String()
	if code != 1 || !strings.Contains(text, "couchbench run: interrupted by the user (SIGINT); it cut short: ") ||
		!strings.Contains(text, "the build was cut short") || strings.Contains(text, "restarted") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and the interrupt by the user, with no node blamed", code, text)
	}
	docs, err := results.ReadFile(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := docs[0]
	if !doc.Interrupted || !strings.HasPrefix(doc.Error, "interrupted by the user (SIGINT)") ||
		doc.Arms[0].Profiles[0].Seeding == nil || doc.Arms[0].Profiles[0].Seeding.Stored != 20000 {
		t.Errorf("document interrupted=%v error=%q arms %+v: want the interrupt and the seeding kept", doc.Interrupted, doc.Error, doc.Arms)
	}
	if status, _, err := srv.Get("/" + db); err != nil || status != 404 {
		t.Errorf("GET /%s: %d %v; want 404: the run deletes its databases also after Ctrl-C", db, status, err)
	}
	t.Logf("stderr:\n%s", text)
}

// The signals' words, without a server: the test sends itself each signal while
// interruptible catches it. SIGTERM is the pod being terminated only in a Job (--handoff).
func TestInterruptNamesTheSignal(t *testing.T) {
	for _, c := range []struct {
		signal syscall.Signal
		job    bool
		want   string
	}{
		{syscall.SIGINT, false, "interrupted by the user (SIGINT)"},
		{syscall.SIGTERM, true, "interrupted: the pod is being terminated (SIGTERM)"},
		{syscall.SIGTERM, false, "interrupted (SIGTERM)"},
	} {
		ctx, stop := interruptible(c.job)
		if err := syscall.Kill(os.Getpid(), c.signal); err != nil {
			t.Fatal(err)
		}
		<-ctx.Done()
		cause := context.Cause(ctx)
		stop()
		if cause.Error() != c.want || !errors.Is(cause, context.Canceled) {
			t.Errorf("%v (job %v): cause %q, want %q wrapping context.Canceled", c.signal, c.job, cause, c.want)
		}
	}
}
