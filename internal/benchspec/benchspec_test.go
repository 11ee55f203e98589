package benchspec_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/testenv"
)

func document(t *testing.T, spec map[string]any) []byte {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{
		"apiVersion": "bench.couchbench.io/v1alpha1",
		"kind":       "CouchBenchmark",
		"metadata":   map[string]any{"name": "b"},
		"spec":       spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The same cases the API server refuses (api/v1alpha1's envtest suite), with the same
// messages: the loader runs the CRD's own rules.
func TestInvalidSpecsAreRefusedLikeTheAPIServer(t *testing.T) {
	for _, tc := range testenv.InvalidSpecs(t) {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := benchspec.Parse(document(t, tc.Spec))
			if err == nil {
				t.Fatalf("accepted; want a refusal mentioning %q", tc.Want)
			}
			for _, w := range tc.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestUnknownFieldsAreErrors(t *testing.T) {
	_, err := benchspec.Parse([]byte(`
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: b}
spec:
  couchdb: {provision: {}}
  queryServers: [{name: js, language: javascript}]
  dataset: {documnets: 5}
  workloads: {indexing: {}}
`))
	if err == nil || !strings.Contains(err.Error(), "spec.dataset.documnets") {
		t.Fatalf("a misspelt field: %v; want an error naming spec.dataset.documnets", err)
	}
}

func TestWrongKindIsRefused(t *testing.T) {
	_, err := benchspec.Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "CouchBenchmark") {
		t.Fatalf("a ConfigMap: %v; want an error saying a CouchBenchmark is expected", err)
	}
}

func TestDefaultsAreApplied(t *testing.T) {
	b, err := benchspec.Parse([]byte(`
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: b}
spec:
  couchdb: {existing: {url: "http://c:5984", credentialsSecret: {name: s}}}
  queryServers: [{name: js, language: javascript}]
  workloads: {indexing: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := b.Spec
	if s.Dataset.Documents != 100000 || s.Dataset.BatchSize != 1000 || s.Dataset.Shards != 2 || len(s.Dataset.Profiles) != 1 ||
		s.Workloads.Indexing.Repetitions != 3 || len(s.Workloads.Indexing.Reducers) != 1 || s.Timeout != "2h" ||
		s.CouchDB.Existing.CredentialsSecret.PasswordKey != "password" {
		t.Errorf("defaults not applied: %+v", s)
	}
}
