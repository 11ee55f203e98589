package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// The manager caches only the Jobs and ConfigMaps that carry managedBy: every object a
// benchmark makes must carry it, or the operator would not see its own.
func TestObjectsOfABenchmarkAreCached(t *testing.T) {
	bench := &benchv1.CouchBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	for _, l := range []map[string]string{
		builders.Labels(bench, "", ""),
		builders.Labels(bench, "js", benchv1.StepReads),
		builders.ResultsConfigMap(bench, nil).Labels,
		builders.DocumentConfigMap(bench, "js", nil).Labels,
	} {
		if !managedBy.Matches(labels.Set(l)) {
			t.Errorf("labels %v do not match the cache's selector %s", l, managedBy)
		}
	}
}
