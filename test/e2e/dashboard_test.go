//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dashboard"
)

// Every panel of the chart's Grafana dashboard, run on the suite's Prometheus (alerts_test.go)
// after two runs of a schedule with every workload on the existing CouchDB, the second judged
// against the first: each query returns series with the labels its legend names, and each
// variable lists the namespace, the schedule and the runs.
func TestDashboardQueriesOnTheSuitesPrometheus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := dashboard.Read(filepath.Join("..", "..", dashboard.Path))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := d.Variables()
	if err != nil {
		t.Fatal(err)
	}
	s := &benchv1.CouchBenchmarkSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "dashboard"},
		Spec: benchv1.CouchBenchmarkScheduleSpec{
			Schedule: "* * * * *", Immediate: true, ConcurrencyPolicy: benchv1.ConcurrencyForbid, SuccessfulRunsHistoryLimit: 3,
			Baseline: benchv1.ScheduleBaseline{Policy: benchv1.BaselinePreviousSuccessful, TolerancePercent: 5},
			Template: benchv1.BenchmarkTemplate{Spec: benchv1.CouchBenchmarkSpec{
				CouchDB:      existingTarget(),
				QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
				Dataset:      benchv1.Dataset{Documents: 1000, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2},
				Workloads: benchv1.Workloads{
					Indexing:  &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1},
					ViewReads: &benchv1.ViewReadsWorkload{},
					Writes:    &benchv1.WritesWorkload{Duration: "2s", BulkBatchSizes: []int32{100}},
					Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 2,
						IterationsPerUser: ptr.To[int32](50)},
				},
				Timeout: "20m",
			}},
		},
	}
	createSchedule(t, s)
	runs := waitForRuns(t, s, 2, nil)

	// Only this schedule's series answer: other tests' runs may still be in Prometheus.
	queries, err := d.Queries(map[string]string{"namespace": namespace, "schedule": s.Name})
	if err != nil {
		t.Fatal(err)
	}

	for _, q := range queries {
		t.Run(q.Panel, func(t *testing.T) {
			var last []dashboard.Series
			if err := poll(ctx, 2*time.Minute, func() (bool, string) {
				var err error
				last, err = promQuery(ctx, q.Expr)
				return err == nil && q.Answered(last), fmt.Sprintf("legend %q: %v (%v)", q.Legend, last, err)
			}); err != nil {
				t.Errorf("%s: %v", q.Expr, err)
			}
		})
	}
	want := map[string][]string{"namespace": {namespace}, "schedule": {s.Name}, "benchmark": runs}
	for _, v := range vars {
		if want[v.Label] == nil {
			t.Errorf("variable %s lists label %s, which this test has no values for", v.Name, v.Label)
			continue
		}
		t.Run("variable "+v.Name, func(t *testing.T) {
			var got []string
			if err := poll(ctx, time.Minute, func() (bool, string) {
				got = nil
				err := monitoringGet(ctx, prometheusService, "9090", "/api/v1/label/"+v.Label+"/values",
					map[string]string{"match[]": v.Selector}, &struct {
						Data *[]string `json:"data"`
					}{&got})
				return err == nil && !slices.ContainsFunc(want[v.Label], func(w string) bool { return !slices.Contains(got, w) }), fmt.Sprintf("%v (%v), want %v among them", got, err, want[v.Label])
			}); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		})
	}
}
