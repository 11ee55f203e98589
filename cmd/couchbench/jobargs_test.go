package main

// The operator's runner Jobs call this command with the arguments internal/builders gives
// them, against real Apache CouchDB 3.4.3: the single node of the project's kit
// (internal/couchdbtest).

import (
	"bytes"
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
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/couchdbtest"
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

	// What the Job's volumes hold: the spec's ConfigMap, and each arm's credentials.
	dir := t.TempDir()
	cm, err := builders.SpecConfigMap(bench)
	if err != nil {
		t.Fatal(err)
	}
	spec := writeFile(t, dir, "bench.json", cm.Data[builders.SpecKey])
	creds := filepath.Join(dir, "credentials")
	for _, arm := range arms {
		if err := os.MkdirAll(filepath.Join(creds, arm), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(creds, arm), "username", srv.User)
		writeFile(t, filepath.Join(creds, arm), "password", srv.Password)
	}

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
		args := job.Job().Spec.Template.Spec.Containers[0].Args
		for _, want := range []string{"-f", "--arm", "--credentials-dir", "--handoff", "--run-id", "--arm-url", "--part", "--parts"} {
			if !slices.Contains(args, want) {
				t.Fatalf("the Job's arguments %q lack %s: this test no longer shows that the command takes them all", args, want)
			}
		}
		handoffs[part] = filepath.Join(dir, fmt.Sprintf("termination-log-%d", part))
		for i := 1; i < len(args); i++ {
			switch args[i-1] {
			case "-f":
				args[i] = spec
			case "--credentials-dir":
				args[i] = creds
			case "--handoff":
				args[i] = handoffs[part]
			}
		}
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
