package main

// The command against real Apache CouchDB 3.4.3, the single node of the project's kit that
// `make test` starts (internal/couchdbtest); the usage tests need no server.

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
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
		!strings.HasPrefix(stdout.String(), "benchmark,started_at,option") {
		t.Errorf("report csv: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := realMain([]string{"report", "--format", "html", out}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "<svg") || !strings.Contains(stdout.String(), "</html>") {
		t.Errorf("report html: exit %d, %d bytes", code, stdout.Len())
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
		{[]string{"run", "-f", bad, "--url", "http://127.0.0.1:1"}, 1, "spec.dataset.documents"},
		{[]string{"report"}, 2, "name at least one RESULTS file"},
		{[]string{"report", "--format", "pdf", "x.json"}, 1, "no such file"},
		{[]string{"compare", "a.json"}, 2, "name the BASELINE and the CURRENT results"},
		{[]string{"index", "-f", spec, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"index", "-f", spec, "--url", "http://127.0.0.1:1", "--parts", "2"}, 1, "only the seed and writes steps are shared"},
		{[]string{"seed", "-f", spec, "--url", "http://127.0.0.1:1", "--part", "2", "--parts", "2"}, 1, "as parts 0 to 1"},
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

// Every command explains itself on --help, on standard output, and exits 0.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands {
		var stdout, stderr bytes.Buffer
		if code := realMain([]string{c.name, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 ||
			!strings.Contains(stdout.String(), "Usage:\n  couchbench "+c.name) || !strings.Contains(stdout.String(), "Examples:") ||
			singleDashWord.MatchString(stdout.String()) {
			t.Errorf("%s --help: exit %d\nstdout:\n%s\nstderr:\n%s", c.name, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "compare") {
		t.Errorf("--help: exit %d\n%s", code, stdout.String())
	}
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
	o := stepOptions{credentialsDir: dir, armURLs: armURLs{"js": "http://a:5984", "py": "http://a:5984"}}
	client, servers, err := clients(o, spec, nil)
	if err != nil || client != nil || len(servers) != 2 || servers["js"] != servers["py"] {
		t.Errorf("two arms on one CouchDB with one user: client %v, servers %v, %v; want one shared client", client, servers, err)
	}
	o.armURLs = armURLs{"js": "http://a:5984", "py": "http://b:5984"}
	if _, servers, err = clients(o, spec, nil); err != nil || servers["js"] == servers["py"] {
		t.Errorf("two CouchDBs: servers %v, %v; want a client each", servers, err)
	}
	o.armURLs = armURLs{"js": "http://a:5984"}
	if _, _, err = clients(o, spec, nil); err == nil || !strings.Contains(err.Error(), "query server py") {
		t.Errorf("py without a CouchDB: %v; want an error naming it", err)
	}
	o.armURLs = armURLs{"erl": "http://a:5984"}
	if _, _, err = clients(o, spec, []string{"js"}); err == nil || !strings.Contains(err.Error(), `no query server "erl"`) {
		t.Errorf("an --arm-url of no arm: %v", err)
	}
	if err := (armURLs{}).Set("js"); err == nil {
		t.Error(`--arm-url "js" was taken for ARM=URL`)
	}
}
