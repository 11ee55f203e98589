package main

// The operator's runner Jobs call this command with the arguments internal/builders gives
// them, against real Apache CouchDB 3.4.3: the single node of the project's kit
// (internal/couchdbtest).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
)

// A shared seed step as the operator runs it: the two parts' Jobs' arguments as
// builders.RunnerJob writes them (-f, --arm a,b, --credentials-dir, --handoff, --run-id, an
// --arm-url per arm, --part and --parts), with the paths the Job mounts moved into a
// directory of the test's own. Both parts run at once, hand their documents over as a Job
// does, and together store the dataset once per arm.
func TestOperatorJobArgumentsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	bench, err := benchspec.ParseByHand(fmt.Appendf(nil, `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: clijob}
spec:
  couchdb: {existing: {url: %q, credentialsSecret: {name: admin}}}
  queryServers: [{name: a, language: javascript}, {name: b, language: javascript}]
  runner: {parallelism: 2}
  dataset: {documents: 300, batchSize: 100}
  workloads:
    indexing: {repetitions: 1}
`, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	bench.UID = types.UID("job" + couchdbtest.RandomID())
	runID := builders.RunID(bench)
	arms := []string{"a", "b"}
	for _, arm := range arms {
		srv.DeleteLater(t, names.Database("clijob", runID, arm, "small"))
	}

	dir, spec, creds := jobVolumes(t, srv, bench, arms)

	const parts = 2
	handoffs := make([]string, parts)
	stdouts, stderrs, codes := make([]bytes.Buffer, parts), make([]bytes.Buffer, parts), make([]int, parts)
	var wg sync.WaitGroup
	for part := range parts {
		job := builders.RunnerJob{Bench: bench, Step: benchv1.StepSeed, Image: "couchbench", Deadline: time.Hour, Part: part}
		for _, arm := range arms {
			job.Servers = append(job.Servers, builders.ArmServer{Arm: arm, URL: srv.URL(), Credentials: benchv1.SecretKeys{Name: "admin",
				UsernameKey: "username", PasswordKey: "password"}})
		}
		handoffs[part] = filepath.Join(dir, fmt.Sprintf("termination-log-%d", part))
		args := inTestDir(t, job.Job().Spec.Template.Spec.Containers[0].Args, spec, creds, handoffs[part],
			"-f", "--arm", "--credentials-dir", "--handoff", "--run-id", "--arm-url", "--part", "--parts")
		wg.Go(func() { codes[part] = realMain(args, &stdouts[part], &stderrs[part]) })
	}
	wg.Wait()

	docs := make([]*results.Document, parts)
	for part := range parts {
		if codes[part] != 0 {
			t.Fatalf("part %d: exit %d\nstderr:\n%s", part, codes[part], stderrs[part].String())
		}
		data, err := os.ReadFile(handoffs[part])
		if err != nil {
			t.Fatal(err)
		}
		h, err := results.ParseHandoff(string(data))
		if err != nil || h.Error != "" {
			t.Fatalf("part %d: handoff %s: %v", part, data, err)
		}
		payload, err := results.ReadFrame(strings.NewReader(stdouts[part].String()), h)
		if err != nil {
			t.Fatal(err)
		}
		if docs[part], err = results.Decode(payload); err != nil {
			t.Fatal(err)
		}
	}
	joined := results.JoinParts(docs)
	if len(joined.Arms) != len(arms) || joined.RunID != runID {
		t.Fatalf("joined document of run %q has %d arms; want run %q with arms %v", joined.RunID, len(joined.Arms), runID, arms)
	}
	for _, a := range joined.Arms {
		if s := a.Profiles[0].Seeding; s == nil || s.Stored != 300 {
			t.Errorf("arm %s: seeding %+v; want the parts to store 300 documents together", a.QueryServer, s)
		}
	}
}

// inTestDir is a Job's arguments with the paths the Job mounts moved to the test's files;
// it fails the test unless they carry every one of want, so that the test shows the command
// takes them all.
func inTestDir(t *testing.T, args []string, spec, creds, handoff string, want ...string) []string {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Fatalf("the Job's arguments %q lack %s: this test no longer shows that the command takes them all", args, w)
		}
	}
	for i := 1; i < len(args); i++ {
		switch args[i-1] {
		case "-f":
			args[i] = spec
		case "--credentials-dir":
			args[i] = creds
		case "--handoff":
			args[i] = handoff
		}
	}
	return args
}

// jobVolumes writes what a Job's volumes hold into a directory of the test's own (dir): the
// spec's ConfigMap (the file spec) and each arm's credentials (under creds).
func jobVolumes(t *testing.T, srv *couchdbtest.Server, bench *benchv1.CouchBenchmark, arms []string) (dir, spec, creds string) {
	t.Helper()
	dir = t.TempDir()
	cm, err := builders.SpecConfigMap(bench)
	if err != nil {
		t.Fatal(err)
	}
	spec = writeFile(t, dir, "bench.json", cm.Data[builders.SpecKey])
	creds = filepath.Join(dir, "credentials")
	for _, arm := range arms {
		if err := os.MkdirAll(filepath.Join(creds, arm), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(creds, arm), "username", srv.User)
		writeFile(t, filepath.Join(creds, arm), "password", srv.Password)
	}
	return dir, spec, creds
}

// A reads round's meter as the operator runs it: the arguments builders.ReadsMeterJob writes
// (-f, --arm, --handoff, --run-id, --round, --runners, --limit, --credentials-dir, --arm-url,
// --arm-pods), against real CouchDB with no Kubernetes API to exec through. The meter cannot
// read, so it lets the round's runner go at the start barrier (here the runner is a barrier
// part of the test's own, as the k6 script's setup is one) and hands over a reading that says
// why there is none; the Job succeeds, so the round keeps its load.
func TestReadsMeterJobArgumentsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	bench, err := benchspec.ParseByHand(fmt.Appendf(nil, `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: climeter}
spec:
  couchdb: {existing: {url: %q, credentialsSecret: {name: admin}, cpuPods: [couchdb-0]}}
  queryServers: [{name: a, language: javascript}]
  workloads:
    reads: {scenario: getDocument, virtualUsers: 1, iterationsPerUser: 1}
`, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	bench.Namespace, bench.UID = "bench", types.UID("meter"+couchdbtest.RandomID())
	db := names.Database("climeter", builders.RunID(bench), "a", "small")
	srv.DeleteLater(t, db)
	if _, err := srv.Client(t, couch.Options{}).CreateDB(context.Background(), db, 1, 1); err != nil {
		t.Fatal(err)
	}
	dir, spec, creds := jobVolumes(t, srv, bench, []string{"a"})
	job := builders.ReadsMeterJob{Bench: bench, Image: "couchbench", Round: 1, Runners: 1, Deadline: time.Minute,
		Server: builders.ArmServer{Arm: "a", URL: srv.URL(), Pods: []string{"couchdb-0"},
			Credentials: benchv1.SecretKeys{Name: "admin", UsernameKey: "username", PasswordKey: "password"}}}
	handoff := filepath.Join(dir, "termination-log")
	args := inTestDir(t, job.Job().Spec.Template.Spec.Containers[0].Args, spec, creds, handoff,
		"reads-cpu", "--round", "--runners", "--limit", "--arm-pods", "--arm-url", "--run-id")
	runner := make(chan error, 1)
	go func() {
		_, err := barrier.Barrier{Client: srv.Client(t, couch.Options{}), DB: db, Part: 0, Parts: 2, Timeout: time.Minute}.
			Wait(context.Background(), k6plan.BarrierName(1))
		runner <- err
	}()
	var stdout, stderr bytes.Buffer
	if code := realMain(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	if err := <-runner; err != nil {
		t.Fatalf("the runner was not let go at the start: %v", err)
	}
	data, err := os.ReadFile(handoff)
	if err != nil {
		t.Fatal(err)
	}
	h, err := results.ParseHandoff(string(data))
	if err != nil || h.Payload != results.PayloadReadsCPU || h.Error != "" {
		t.Fatalf("handoff %s: %v", data, err)
	}
	payload, err := results.ReadFrame(strings.NewReader(stdout.String()), h)
	if err != nil {
		t.Fatal(err)
	}
	var reading results.ReadsCPU
	if err := json.Unmarshal(payload, &reading); err != nil || !strings.Contains(reading.Error, "no meter: --arm-pods: no Kubernetes API") ||
		reading.CPUSeconds != 0 {
		t.Errorf("reading %s (%v): want none, saying there was no meter", payload, err)
	}
}
