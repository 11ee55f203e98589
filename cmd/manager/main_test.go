package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The manager builds Jobs and reads what they measured; what measures runs in the Jobs.
// Linking a workload package would put code the manager never runs into its memory, and let
// a change to it reach the operator unnoticed. The measured records and the k6 plan are what
// both sides share.
func TestManagerLinksNoWorkloadCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	// benchspec, the workloads' spec reader for couchbench run, brings the CRD's CEL evaluator.
	workloads := []string{"runner", "indexing", "seeding", "writes", "viewreads", "serverload", "loadtest", "benchspec", "cpucost", "podcpu"}
	linked := map[string]bool{}
	for _, dep := range strings.Fields(string(out)) {
		linked[dep] = true
	}
	for _, shared := range []string{"measured", "k6plan"} {
		if !linked["github.com/couchbench/couchbench/internal/"+shared] {
			t.Fatalf("go list -deps does not name internal/%s, which the manager reads:\n%s", shared, out)
		}
	}
	for _, w := range workloads {
		if pkg := "github.com/couchbench/couchbench/internal/" + w; linked[pkg] {
			t.Errorf("the manager links %s, workload code that belongs in the Jobs", pkg)
		}
	}
}
