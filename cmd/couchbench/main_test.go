package main

// The command against pouchdb-server (a CouchDB-compatible server from npm, not CouchDB).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/pouchdbtest"
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
    indexing: {repetitions: 1, viewCompaction: Allowed}
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
	url := pouchdbtest.Start(t)
	dir := t.TempDir()
	spec := writeFile(t, dir, "bench.yaml", bench)
	creds := filepath.Join(dir, "creds")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, creds, "username", pouchdbtest.AdminUser+"\n")
	writeFile(t, creds, "password", pouchdbtest.AdminPassword)
	out, summary := filepath.Join(dir, "out.json"), filepath.Join(dir, "summary.json")

	var stdout, stderr bytes.Buffer
	code := realMain([]string{"run", "-f", spec, "--url", url, "--credentials-dir", creds, "--out", out, "--summary", summary}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "| js (javascript) | builtin") {
		t.Errorf("no results table on stdout:\n%s", stdout.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), pouchdbtest.AdminPassword) {
		t.Error("the password was printed")
	}
	doc, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Arms) != 1 || len(doc.Arms[0].Profiles[0].Indexing[0].Runs) != 1 || doc.SpecHash == "" {
		t.Errorf("results document: %+v", doc)
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(data, &s); err != nil || len(data) > results.MaxSummaryBytes {
		t.Fatalf("summary (%d bytes): %v", len(data), err)
	}
	if s.Step != "run" || len(s.Results) != 1 || s.Results[0].Indexing[0].ChangesPerSecond <= 0 {
		t.Errorf("summary %s", data)
	}

	// report turns the results file into Markdown and CSV.
	stdout.Reset()
	if code := realMain([]string{"report", out}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "## cli (") {
		t.Errorf("report markdown: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := realMain([]string{"report", "--format", "csv", out}, &stdout, &stderr); code != 0 ||
		!strings.HasPrefix(stdout.String(), "benchmark,started_at,option") {
		t.Errorf("report csv: exit %d\n%s", code, stdout.String())
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
		{[]string{"report"}, 2, "name at least one results JSON file"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := realMain(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}
