package v1alpha1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The Step enum the API server enforces on status.progress.step is the list the code walks.
func TestStepEnumIsTheCodesList(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "bench.couchbench.io_couchbenchmarks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Properties map[string]struct {
									Enum []string `json:"enum"`
								} `json:"properties"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	enum := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["progress"].Properties["step"].Enum
	var steps []string
	for _, s := range Steps {
		steps = append(steps, string(s))
	}
	if strings.Join(enum, ",") != strings.Join(steps, ",") {
		t.Errorf("status.progress.step enum %v, Steps %v", enum, steps)
	}
	for _, s := range RunnerSteps {
		if !strings.Contains(","+strings.Join(enum, ",")+",", ","+string(s)+",") {
			t.Errorf("runner step %s is not in the enum", s)
		}
	}
}

func TestParseRunnerStep(t *testing.T) {
	if s, err := ParseRunnerStep("index"); err != nil || s != StepIndex {
		t.Errorf("ParseRunnerStep(index) = %q, %v", s, err)
	}
	_, err := ParseRunnerStep("teardown")
	if err == nil || !strings.Contains(err.Error(), "seed, index, views, writes") {
		t.Errorf("ParseRunnerStep(teardown) error %v; want one listing the runner's steps", err)
	}
}
