package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// InvalidSpec is one case of api/v1alpha1/testdata/invalid_specs.yaml: a spec that must be
// refused with a message containing every string in Want.
type InvalidSpec struct {
	Name string         `json:"name"`
	Want []string       `json:"want"`
	Spec map[string]any `json:"spec"`
}

// InvalidSpecs loads the invalid cases that both the API server and the runner's loader
// must refuse.
func InvalidSpecs(t *testing.T) []InvalidSpec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ModuleRoot(t), "api", "v1alpha1", "testdata", "invalid_specs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []InvalidSpec
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("invalid_specs.yaml: %v", err)
	}
	if len(cases) < 15 {
		t.Fatalf("invalid_specs.yaml has %d cases, want at least 15", len(cases))
	}
	return cases
}
