package v1alpha1_test

// These tests send CouchBenchmarks to a real kube-apiserver (envtest) with the generated
// CRD installed: what is accepted, what is rejected with which message, and which defaults
// the server fills in are the API server's answers, not a re-implementation of its rules.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
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
		})
	}
	// One quick start and one sample per seed experiment (000-003), plus an existing-CouchDB one.
	if samples < 6 {
		t.Fatalf("found %d samples in %s, want at least 6", samples, dir)
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

func TestInvalidSpecsAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name string
		spec string
		// want are substrings of the API server's message: the field and what to fix.
		want []string
	}{
		{
			name: "both provision and existing",
			spec: `
couchdb:
  provision: {}
  existing: {url: "http://c:5984", credentialsSecret: {name: admin}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.couchdb", "set exactly one of couchdb.provision"},
		},
		{
			name: "neither provision nor existing",
			spec: `
couchdb: {}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.couchdb", "set exactly one of couchdb.provision"},
		},
		{
			name: "no query servers",
			spec: `
couchdb: {provision: {}}
queryServers: []
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers", "should have at least 1 items"},
		},
		{
			name: "duplicate query server names",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}, {name: js, language: python}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers[1]", "Duplicate value"},
		},
		{
			name: "query server name not a DNS label",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: My_JS, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers[0].name", "should match"},
		},
		{
			name: "engine on a python query server",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: py, language: python, engine: quickjs}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers[0].engine", "engine applies only to language javascript"},
		},
		{
			name: "unknown javascript engine",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript, engine: v8}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers[0].engine", `supported values: "spidermonkey", "quickjs"`},
		},
		{
			name: "erlang without the opt-in",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: erl, language: erlang}]
workloads: {indexing: {}}`,
			want: []string{"spec.allowErlangViews", "unsandboxed", "set allowErlangViews: true"},
		},
		{
			name: "command for a built-in language",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript, command: /usr/bin/node}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers[0].command", "javascript and erlang are built into CouchDB"},
		},
		{
			name: "image on an existing CouchDB",
			spec: `
couchdb: {existing: {url: "http://c:5984", credentialsSecret: {name: admin}}}
queryServers: [{name: py, language: python, image: "couchdb-python:3.4.3"}]
workloads: {indexing: {}}`,
			want: []string{"spec.queryServers", "apply only to couchdb.provision"},
		},
		{
			name: "existing URL without a scheme",
			spec: `
couchdb: {existing: {url: "couchdb:5984", credentialsSecret: {name: admin}}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.couchdb.existing.url", "should match"},
		},
		{
			name: "no workload",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {}`,
			want: []string{"spec.workloads", "set at least one workload"},
		},
		{
			name: "zero documents",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {documents: 0}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.documents", "should be greater than or equal to 1"},
		},
		{
			name: "too many documents",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {documents: 1000000000}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.documents", "should be less than or equal to 100000000"},
		},
		{
			name: "seeding batch above CouchDB's max_bulk_docs_count",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {batchSize: 20000}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.batchSize", "should be less than or equal to 10000"},
		},
		{
			name: "bulk write batch size above 10000",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {writes: {bulkBatchSizes: [1000, 50000]}}`,
			want: []string{"spec.workloads.writes.bulkBatchSizes[1]", "should be less than or equal to 10000"},
		},
		{
			name: "writes without a mode",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {writes: {duration: 10s}}`,
			want: []string{"spec.workloads.writes", "choose at least one mode"},
		},
		{
			name: "replicas above the cluster size",
			spec: `
couchdb: {provision: {clusterSize: 2}}
queryServers: [{name: js, language: javascript}]
dataset: {replicas: 3}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.replicas", "cannot exceed couchdb.provision.clusterSize"},
		},
		{
			name: "targetBytes on the small profile",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {profiles: [{type: small, targetBytes: 4096}]}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.profiles[0].targetBytes", "applies only to the large profile"},
		},
		{
			name: "the same profile twice",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {profiles: [{type: large, targetBytes: 300000}, {type: large, targetBytes: 300000}]}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.profiles", "must not repeat a profile"},
		},
		{
			name: "document larger than CouchDB's max_document_size",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
dataset: {profiles: [{type: large, targetBytes: 9000000}]}
workloads: {indexing: {}}`,
			want: []string{"spec.dataset.profiles[0].targetBytes", "should be less than or equal to 8000000"},
		},
		{
			name: "unknown reducer",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {reducers: [_median]}}`,
			want: []string{"spec.workloads.indexing.reducers[0]", `supported values: "builtin", "custom"`},
		},
		{
			name: "reads with both iterations and duration",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {reads: {iterationsPerUser: 400, duration: 30s}}`,
			want: []string{"spec.workloads.reads", "set exactly one of iterationsPerUser (closed model"},
		},
		{
			name: "reads with neither iterations nor duration",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {reads: {virtualUsers: 120}}`,
			want: []string{"spec.workloads.reads", "set exactly one of iterationsPerUser (closed model"},
		},
		{
			name: "arrival rate without a duration",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {reads: {iterationsPerUser: 10, arrivalRate: 100}}`,
			want: []string{"spec.workloads.reads.arrivalRate", "needs reads.duration"},
		},
		{
			name: "malformed k6 threshold",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {reads: {iterationsPerUser: 10, thresholds: [{metric: http_req_duration, condition: "p95 < fast"}]}}`,
			want: []string{"spec.workloads.reads.thresholds[0].condition", "should match"},
		},
		{
			name: "timeout too short",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}
timeout: 10s`,
			want: []string{"spec.timeout", "timeout must be between 1m and 168h"},
		},
		{
			name: "unknown teardown policy",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}
teardown: Sometimes`,
			want: []string{"spec.teardown", `supported values: "Always", "OnSuccess", "Never"`},
		},
		{
			name: "chart with both repository and path",
			spec: `
couchdb: {provision: {chart: {repository: "https://apache.github.io/couchdb-helm", name: couchdb, version: 4.6.2, path: /charts/couchdb}}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.couchdb.provision.chart", "not both"},
		},
		{
			name: "chart repository without a version",
			spec: `
couchdb: {provision: {chart: {repository: "https://apache.github.io/couchdb-helm", name: couchdb}}}
queryServers: [{name: js, language: javascript}]
workloads: {indexing: {}}`,
			want: []string{"spec.couchdb.provision.chart", "chart.version is required"},
		},
		{
			name: "k6 parallelism zero",
			spec: `
couchdb: {provision: {}}
queryServers: [{name: js, language: javascript}]
workloads: {reads: {iterationsPerUser: 10}}
k6: {parallelism: 0}`,
			want: []string{"spec.k6.parallelism", "should be greater than or equal to 1"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(ctxT(t), benchmark(t, ns, "invalid-"+strconv.Itoa(i), tc.spec))
			if err == nil {
				t.Fatalf("the API server accepted the spec; want a rejection mentioning %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid (422) error, got %v", err)
			}
			t.Log(err) // what a user sees; shown with -v
			for _, w := range tc.want {
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
		{"couchdb.provision.chart.repository", p.Chart.Repository, "https://apache.github.io/couchdb-helm"},
		{"couchdb.provision.chart.name", p.Chart.Name, "couchdb"},
		{"couchdb.provision.chart.version", p.Chart.Version, "4.6.2"},
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
		{"dataset.shards", s.Dataset.Shards, int32(2)},
		{"dataset.replicas", s.Dataset.Replicas == nil, true},
		{"workloads.indexing.reducers", strings.Join(reducers(s.Workloads.Indexing.Reducers), ","), "builtin"},
		{"workloads.indexing.repetitions", s.Workloads.Indexing.Repetitions, int32(3)},
		{"workloads.indexing.viewCompaction", s.Workloads.Indexing.ViewCompaction, benchv1.ViewCompactionPaused},
		{"workloads.viewReads.views", len(s.Workloads.ViewReads.Views), 3},
		{"workloads.viewReads.repetitions", s.Workloads.ViewReads.Repetitions, int32(5)},
		{"workloads.writes.duration", s.Workloads.Writes.Duration.Duration, 10 * time.Second},
		{"workloads.reads.scenario", s.Workloads.Reads.Scenario, benchv1.ScenarioGetDocument},
		{"workloads.reads.virtualUsers", s.Workloads.Reads.VirtualUsers, int32(10)},
		{"k6.image", s.K6.Image, "grafana/k6:1.8.1"},
		{"k6.parallelism", s.K6.Parallelism, int32(1)},
		{"teardown", s.Teardown, benchv1.TeardownAlways},
		{"timeout", s.Timeout.Duration, 2 * time.Hour},
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
