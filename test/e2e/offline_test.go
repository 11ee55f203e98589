//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
	"github.com/couchbench/couchbench/internal/results"
)

// A benchmark that names neither a chart nor a k6 image, as the samples do, on a cluster
// that cannot reach the internet (the local cluster cannot): the operator installs CouchDB
// from the chart it carries and runs k6 from the image its chart was given once; the
// results name that chart by its digest and the k6 image that ran.
func TestOfflineDefaults(t *testing.T) {
	t.Parallel()
	b := provisioned("offline", nil, 1, benchv1.QueryServer{Name: "js", Language: "javascript"})
	b.Spec.Dataset = benchv1.Dataset{Documents: 1000, Seed: 1, BatchSize: 500, Concurrency: 2, Shards: 2}
	b.Spec.Workloads = benchv1.Workloads{
		Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 1},
		Reads:    &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 2, IterationsPerUser: ptr.To[int32](10)},
	}
	start(t, b)
	got := mustSucceed(t, b, 20*time.Minute)
	if got.Spec.CouchDB.Provision.Chart != nil || got.Spec.K6.Image != "" {
		t.Errorf("stored spec: chart %+v, k6 image %q; want both unset (the operator's defaults)", got.Spec.CouchDB.Provision.Chart, got.Spec.K6.Image)
	}

	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(namespace),
		client.MatchingLabels{builders.LabelBenchmark: b.Name, builders.LabelStep: string(benchv1.StepReads)}); err != nil {
		t.Fatal(err)
	}
	// The round's meter (the suite's operator reads CPU cost) runs the runner's image.
	k6 := slices.DeleteFunc(jobs.Items, func(j batchv1.Job) bool { return j.Labels[builders.LabelRunner] == builders.MeterRunner })
	if len(k6) != 1 || k6[0].Spec.Template.Spec.Containers[0].Image != k6Image {
		t.Errorf("%d k6 Jobs; want one running %s, the chart's k6.image", len(k6), k6Image)
	}

	_, docs := report(t, b, "markdown")
	cluster := docs[0].Arms[0].Cluster
	if cluster == nil || !strings.Contains(cluster.Chart, "built into the operator") || !strings.Contains(cluster.Chart, helmrelease.BuiltInChartDigest) {
		t.Fatalf("provenance %+v: want the built-in chart named with its digest %s", cluster, helmrelease.BuiltInChartDigest)
	}
	t.Logf("chart: %s", cluster.Chart)
	ranK6 := false
	for _, p := range cluster.Pods {
		if p.Role == results.RoleK6 {
			// The kubelet reports the image as the runtime resolved it (docker.io/...).
			ranK6 = ranK6 || p.Image == k6Image || strings.HasSuffix(p.Image, "/"+k6Image)
			t.Logf("k6 pod %s ran %s (%s)", p.Pod, p.Image, p.ImageID)
		}
	}
	if !ranK6 {
		t.Errorf("provenance pods %+v: no k6 pod that ran %s", cluster.Pods, k6Image)
	}
}
