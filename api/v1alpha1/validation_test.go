package v1alpha1_test

// These tests send CouchBenchmarks to a real kube-apiserver (envtest) with the generated
// CRD installed: what is accepted, what is rejected with which message, and which defaults
// the server fills in are the API server's answers, not a re-implementation of its rules.

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// benchmark makes an unstructured CouchBenchmark from a spec written as YAML, so that a
// case can hold what a typed struct cannot (unknown enum values, both of a union).
func benchmark(t *testing.T, namespace, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("test spec is not YAML: %v", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(benchv1.GroupVersion.String())
	u.SetKind("CouchBenchmark")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSamplesAreAccepted applies every sample in config/samples as written.
func TestSamplesAreAccepted(t *testing.T) {
	ns := env.Namespace(t)
	dir := filepath.Join(testenv.ModuleRoot(t), "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var samples int
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		samples++
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &u.Object); err != nil {
				t.Fatalf("sample is not YAML: %v", err)
			}
			u.SetNamespace(ns)
			if err := env.Client.Create(ctxT(t), u); err != nil {
				t.Fatalf("the API server rejected the sample: %v", err)
			}
			// The runner reads the same benchmark without an API server (a schedule's runs are
			// its template): it must come out the same.
			var storedSpec benchv1.CouchBenchmarkSpec
			if u.GetKind() == "CouchBenchmarkSchedule" {
				var stored benchv1.CouchBenchmarkSchedule
				if err := env.Client.Get(ctxT(t), client.ObjectKeyFromObject(u), &stored); err != nil {
					t.Fatal(err)
				}
				storedSpec = stored.Spec.Template.Spec
				run, err := yaml.Marshal(map[string]any{"apiVersion": benchv1.GroupVersion.String(), "kind": "CouchBenchmark",
					"metadata": map[string]any{"name": "run"}, "spec": u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"]})
				if err != nil {
					t.Fatal(err)
				}
				data = run
			} else {
				var stored benchv1.CouchBenchmark
				if err := env.Client.Get(ctxT(t), client.ObjectKeyFromObject(u), &stored); err != nil {
					t.Fatal(err)
				}
				storedSpec = stored.Spec
			}
			parsed, err := benchspec.Parse(data)
			if err != nil {
				t.Fatalf("the runner's loader refused a sample the API server accepted: %v", err)
			}
			if !equality.Semantic.DeepEqual(parsed.Spec, storedSpec) {
				t.Errorf("the runner's loader and the API server default the sample differently:\nloader: %+v\nserver: %+v", parsed.Spec, storedSpec)
			}
		})
	}
	// One quick start, one sample per seed experiment (000-003), an existing CouchDB, an A/B
	// of CouchDB builds and a nightly regression schedule.
	if samples < 8 {
		t.Fatalf("found %d samples in %s, want at least 8", samples, dir)
	}
}

const validSpec = `
couchdb:
  existing:
    url: http://couchdb.db.svc:5984
    credentialsSecret: {name: admin}
queryServers:
- {name: js, language: javascript}
workloads:
  indexing: {}
`

// TestValidSpecIsAccepted guards the invalid cases below: each of them differs from this
// spec by the one thing it tests.
func TestValidSpecIsAccepted(t *testing.T) {
	ns := env.Namespace(t)
	if err := env.Client.Create(ctxT(t), benchmark(t, ns, "valid", validSpec)); err != nil {
		t.Fatalf("the base spec of the invalid cases was rejected: %v", err)
	}
}

// On an existing CouchDB the Python presets install nothing: they say which runtime the arm
// expects, which the runner's probe checks (internal/runner). The API server (envtest's real
// kube-apiserver) and the runner's loader both accept them.
func TestPythonPresetsOnAnExistingCouchDBAreAccepted(t *testing.T) {
	ns := env.Namespace(t)
	spec := strings.Replace(validSpec, "- {name: js, language: javascript}",
		"- {name: couchpy, preset: couchpy}\n- {name: couchpy-sj, preset: couchpy-simplejson}\n- {name: pypy, preset: pypy}", 1)
	u := benchmark(t, ns, "python-presets-existing", spec)
	data, err := yaml.Marshal(u.Object) // before Create fills in what the server keeps
	if err != nil {
		t.Fatal(err)
	}
	if _, err := benchspec.Parse(data); err != nil {
		t.Errorf("the runner's loader refused Python presets on an existing CouchDB: %v", err)
	}
	if err := env.Client.Create(ctxT(t), u); err != nil {
		t.Fatalf("the API server refused Python presets on an existing CouchDB: %v", err)
	}
	var stored benchv1.CouchBenchmark
	if err := env.Client.Get(ctxT(t), client.ObjectKeyFromObject(u), &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.QueryServers) != 3 || stored.Spec.QueryServers[2].Preset != benchv1.PresetPyPy {
		t.Errorf("stored query servers %+v; want the three presets as written", stored.Spec.QueryServers)
	}
}

// Arms in duet on provisioned CouchDBs, adding rounds until the CPU cost is decided: the API
// server (envtest's real kube-apiserver) and the runner's loader both accept it and fill in
// the same defaults for what the spec leaves out. (The operator's preflight then refuses to
// run it, as it does not read CPU cost: controllers' TestPreflightRefusesStoppingOnCPUCost;
// `couchbench run --arm-pid` runs it.)
func TestDuetUntilDecidedIsAcceptedWithItsDefaults(t *testing.T) {
	ns := env.Namespace(t)
	u := benchmark(t, ns, "duet-until-decided", `
couchdb: {provision: {}}
armOrder: Duet
queryServers: [{name: reference, language: javascript}, {name: candidate, language: javascript}]
sequential: {stopOn: [cpu_seconds_per_1000_docs]}
workloads: {indexing: {reducers: [builtin]}}
`)
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := benchspec.Parse(data)
	if err != nil {
		t.Fatalf("the runner's loader refused a duet until decided: %v", err)
	}
	if err := env.Client.Create(ctxT(t), u); err != nil {
		t.Fatalf("the API server refused a duet until decided: %v", err)
	}
	var stored benchv1.CouchBenchmark
	if err := env.Client.Get(ctxT(t), client.ObjectKeyFromObject(u), &stored); err != nil {
		t.Fatal(err)
	}
	want := benchv1.SequentialRounds{TargetPercent: 5, TolerancePercent: 2, TimeLimit: "15m", MaxRounds: 100, TunedForRounds: 20,
		StopOn: []benchv1.SequentialMetric{"cpu_seconds_per_1000_docs"}}
	for who, got := range map[string]*benchv1.SequentialRounds{"API server": stored.Spec.Sequential, "loader": loaded.Spec.Sequential} {
		if got == nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: sequential %+v; want %+v", who, got, want)
		}
	}
}

func TestInvalidSpecsAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	for i, tc := range testenv.InvalidSpecs(t) {
		t.Run(tc.Name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": tc.Spec}}
			u.SetAPIVersion(benchv1.GroupVersion.String())
			u.SetKind("CouchBenchmark")
			u.SetNamespace(ns)
			u.SetName("invalid-" + strconv.Itoa(i))
			err := env.Client.Create(ctxT(t), u)
			if err == nil {
				t.Fatalf("the API server accepted the spec; want a rejection mentioning %q", tc.Want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid (422) error, got %v", err)
			}
			t.Log(err) // what a user sees; shown with -v
			for _, w := range tc.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestDefaults creates the smallest accepted benchmarks and reads back what the API server
// stored: the defaults the API documents.
func TestDefaults(t *testing.T) {
	ns := env.Namespace(t)
	ctx := ctxT(t)

	provisioned := benchmark(t, ns, "defaults-provision", `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads:
  indexing: {}
  viewReads: {}
  writes: {serial: true}
  reads: {iterationsPerUser: 10}
`)
	if err := env.Client.Create(ctx, provisioned); err != nil {
		t.Fatal(err)
	}
	var got benchv1.CouchBenchmark
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(provisioned), &got); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	p := s.CouchDB.Provision
	checks := []struct {
		field     string
		got, want any
	}{
		// No chart and no k6 image: the operator's built-in chart and its default k6 image,
		// which need no internet and no repository (an offline cluster sets the image once,
		// on the operator).
		{"couchdb.provision.chart", p.Chart == nil, true},
		{"couchdb.provision.clusterSize", p.ClusterSize, int32(3)},
		{"couchdb.provision.image.repository", p.Image.Repository, "couchdb"},
		{"couchdb.provision.image.tag", p.Image.Tag, "3.4.3"},
		{"couchdb.provision.storage", p.Storage == nil, true},
		{"allowErlangViews", s.AllowErlangViews, false},
		{"dataset.documents", s.Dataset.Documents, int64(100000)},
		{"dataset.profiles", len(s.Dataset.Profiles) == 1 && s.Dataset.Profiles[0].Type == benchv1.DocumentSmall && s.Dataset.Profiles[0].TargetBytes == nil, true},
		{"dataset.seed", s.Dataset.Seed, int64(1)},
		{"dataset.batchSize", s.Dataset.BatchSize, int32(1000)},
		{"dataset.concurrency", s.Dataset.Concurrency, int32(4)},
		{"dataset.seedRepetitions", s.Dataset.SeedRepetitions, int32(1)},
		{"dataset.shards", s.Dataset.Shards, int32(2)},
		{"dataset.replicas", s.Dataset.Replicas == nil, true},
		{"workloads.indexing.reducers", strings.Join(reducers(s.Workloads.Indexing.Reducers), ","), "builtin"},
		{"workloads.indexing.repetitions", s.Workloads.Indexing.Repetitions, int32(3)},
		{"workloads.indexing.viewCompaction", s.Workloads.Indexing.ViewCompaction, benchv1.ViewCompactionPaused},
		{"workloads.viewReads.views", len(s.Workloads.ViewReads.Views), 3},
		{"workloads.viewReads.repetitions", s.Workloads.ViewReads.Repetitions, int32(5)},
		{"workloads.writes.duration", s.Workloads.Writes.ModeDuration(), 10 * time.Second},
		{"workloads.reads.scenario", s.Workloads.Reads.Scenario, benchv1.ScenarioGetDocument},
		{"workloads.reads.virtualUsers", s.Workloads.Reads.VirtualUsers, int32(10)},
		{"k6.image", s.K6.Image, ""},
		{"k6.parallelism", s.K6.Parallelism, int32(1)},
		{"teardown", s.Teardown, benchv1.TeardownAlways},
		{"timeout", s.TimeoutDuration(), 2 * time.Hour},
		{"podStartTimeout", s.PodStartTimeoutDuration(), 5 * time.Minute},
		{"noiseThresholdPercent", s.NoiseThresholdPercent, int32(10)},
		{"dataset.maxBatchBytes", s.Dataset.MaxBatchBytes.String(), "16Mi"},
		{"runner.resources", s.Runner.Resources.Limits.Cpu().String() + "/" + s.Runner.Resources.Requests.Memory().String(), "500m/512Mi"},
		{"runner.parallelism", s.Runner.Parallelism, int32(1)},
		{"dataset.ids", s.Dataset.IDs, benchv1.IDsSequential},
		{"k6.resources", s.K6.Resources.Limits.Cpu().String() + "/" + s.K6.Resources.Requests.Memory().String(), "500m/512Mi"},
		{"isolation", s.Isolation, benchv1.IsolationPreferred},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("spec.%s defaulted to %v, want %v", c.field, c.got, c.want)
		}
	}

	existing := benchmark(t, ns, "defaults-existing", validSpec+`
  writes: {parallelBulk: {}, batchOk: {}}
`)
	if err := env.Client.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(existing), &got); err != nil {
		t.Fatal(err)
	}
	e := got.Spec.CouchDB.Existing
	w := got.Spec.Workloads.Writes
	checks = []struct {
		field     string
		got, want any
	}{
		{"couchdb.existing.credentialsSecret.usernameKey", e.CredentialsSecret.UsernameKey, "username"},
		{"couchdb.existing.credentialsSecret.passwordKey", e.CredentialsSecret.PasswordKey, "password"},
		{"couchdb.provision", got.Spec.CouchDB.Provision == nil, true},
		{"workloads.writes.parallelBulk.clients", w.ParallelBulk.Clients, int32(10)},
		{"workloads.writes.parallelBulk.batchSize", w.ParallelBulk.BatchSize, int32(1000)},
		{"workloads.writes.batchOk.clients", w.BatchOK.Clients, int32(1)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("spec.%s defaulted to %v, want %v", c.field, c.got, c.want)
		}
	}
}

func reducers(rs []benchv1.Reducer) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func TestSpecIsImmutable(t *testing.T) {
	ns := env.Namespace(t)
	ctx := ctxT(t)
	u := benchmark(t, ns, "immutable", validSpec)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	var b benchv1.CouchBenchmark
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Dataset.Documents = 5
	err := env.Client.Update(ctx, &b)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec cannot change once the benchmark exists") {
		t.Fatalf("changing the spec: %v; want a refusal saying to create a new benchmark", err)
	}
	// Labels and annotations stay editable.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &b); err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"team": "db"}
	if err := env.Client.Update(ctx, &b); err != nil {
		t.Fatalf("changing labels: %v", err)
	}
}
