package controllers

import (
	"slices"
	"strings"
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

// --watch-namespaces: a list the manager can watch, or a message that says what is wrong. An
// empty item must never pass: the cache would read it as every namespace.
func TestWatchNamespaces(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want []string
		err  string
	}{
		{flag: "", want: nil},
		{flag: "bench-a", want: []string{"bench-a"}},
		{flag: " bench-a , bench-b ", want: []string{"bench-a", "bench-b"}},
		{flag: "bench-a,", err: "empty item"},
		{flag: "bench-a,,bench-b", err: "empty item"},
		{flag: "Bench_A", err: `"Bench_A" is not a namespace name`},
		{flag: "bench-a,bench-a", err: "names bench-a twice"},
	} {
		got, err := WatchNamespaces(tc.flag)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("WatchNamespaces(%q) = %v, %v; want an error saying %q", tc.flag, got, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("WatchNamespaces(%q) = %v, %v; want %v", tc.flag, got, err, tc.want)
		}
	}
}
