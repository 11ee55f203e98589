package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// The manager caches only the Jobs that carry ownObjects: every Job a benchmark makes must
// carry it, or the operator would not see its own.
func TestJobsOfABenchmarkAreCached(t *testing.T) {
	bench := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	for _, l := range []map[string]string{
		builders.RunnerJob{Bench: bench, Servers: []builders.ArmServer{{Arm: "js"}, {Arm: "erl"}}, Step: benchv1.StepIndex}.Job().Labels,
		builders.K6Job{Bench: bench, Arm: "js", Runners: 1}.Job().Labels,
	} {
		if !ownObjects.Matches(labels.Set(l)) {
			t.Errorf("labels %v do not match the cache's selector %s", l, ownObjects)
		}
	}
}
