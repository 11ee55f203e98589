//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

// provisioned is a benchmark of arms that each get a CouchDB from the Apache chart.
func provisioned(name string, chart *benchv1.ChartSource, nodes int32, arms ...benchv1.QueryServer) *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB:      benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{Chart: chart, ClusterSize: nodes}},
			QueryServers: arms,
			// The default load generators (half a CPU each, so that two fit beside CouchDB on a
			// two-core node) and no k6 image: the operator's default, which its chart sets once
			// (installOperator).
			Timeout: "90m",
		},
	}
}

// Seeds 001, 002 and 003 on a three-node cluster (the chart from a ConfigMap): view reads,
// insert modes and k6 read load. A CouchDB pod is deleted during seeding and the manager
// during the view reads: the run rides through both, with one Job per step and one release.
func TestThreeNodesReadsViewsWritesThroughDeletedPods(t *testing.T) {
	ctx := context.Background()
	b := provisioned("cluster3", configMapChart(), 3, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.Dataset = benchv1.Dataset{Documents: 20000, Seed: 1, BatchSize: 200, Concurrency: 2, Shards: 2,
		Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}}
	b.Spec.Workloads = benchv1.Workloads{
		ViewReads: &benchv1.ViewReadsWorkload{Views: []benchv1.ViewReadKind{benchv1.ViewEmitDoc, benchv1.ViewEmitNull, benchv1.ViewEmitNullIncludeDocs},
			Repetitions: 2},
		Writes: &benchv1.WritesWorkload{Duration: "3s", BulkBatchSizes: []int32{100}, BatchOK: &benchv1.BatchOKWrites{Clients: 2}, Serial: true},
		Reads: &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 4, IterationsPerUser: ptr.To[int32](25),
			Thresholds: []benchv1.Threshold{{Metric: "http_req_failed", Condition: "rate<0.05"}}},
	}
	b.Spec.K6.Parallelism = 2
	// Three runners share the seeding (each its slice) and the writes (each its share of the
	// writers), from barriers in CouchDB; small enough that the three fit on a two-core node
	// beside CouchDB.
	b.Spec.Runner = benchv1.RunnerSettings{Parallelism: 3, Resources: guaranteed("400m", "256Mi")}
	start(t, b)

	got := waitForStep(t, b, benchv1.StepSeed)
	release := builders.ReleaseName(got, "js")
	waitRunning(t, map[string]string{builders.LabelBenchmark: b.Name, builders.LabelStep: string(benchv1.StepSeed)})
	time.Sleep(2 * time.Second)
	deleted := builders.StatefulSetName(release) + "-1"
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deleted}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted CouchDB pod %s during %s", deleted, get(t, b).Status.Progress.Step)
	waitForStep(t, b, benchv1.StepViews)
	n := deletePods(t, operatorNamespace, map[string]string{"app.kubernetes.io/name": "couchbench-operator"})
	t.Logf("deleted %d manager pod(s) during %s", n, get(t, b).Status.Progress.Step)

	got = mustSucceed(t, b, 45*time.Minute)
	q := got.Status.Results[0]
	if len(q.Seeding) != 1 || q.Seeding[0].Documents != 20000 || q.Seeding[0].Runners != 3 {
		t.Errorf("seeding %+v: want exactly 20000 documents stored by 3 runners through the deleted pod", q.Seeding)
	}
	if len(q.ViewReads) != 3 || len(q.Writes) != 3 || q.Reads == nil || q.Reads.Requests != 100 || len(q.Reads.Runners) != 2 {
		t.Fatalf("results %+v", q)
	}
	for _, w := range q.Writes {
		if w.Errors != 0 || (w.Mode == "batchOk-2" && (w.Accepted == 0 || w.Created != 0)) || (w.Mode != "batchOk-2" && w.Created == 0) {
			t.Errorf("writes %+v: batch=ok answers 202 and counts apart", w)
		}
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "ThresholdsPassed"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ThresholdsPassed %+v", c)
	}
	md, docs := report(t, b, "markdown")
	t.Logf("seeds 001-003, real Apache CouchDB 3.4.3, three nodes:\n%s", md)
	if d := docs[0]; len(d.Server.Nodes) != 3 || d.Arms[0].Profiles[0].Seeding.Retries < 0 {
		t.Errorf("server %+v", d.Server)
	} else {
		t.Logf("seeding retries through the deleted pod: %d", d.Arms[0].Profiles[0].Seeding.Retries)
	}
	contains(t, "report", md, "### Reads (k6)", "### View reads", "### Writes", "### Seeding per runner", "3 node(s)")
	// The round's meter read the three CouchDB pods over the k6 load.
	if cpu := docs[0].Arms[0].Profiles[0].Reads.CPU; len(cpu) != 1 || cpu[0].Error != "" || !(cpu[0].CPUSeconds > 0) {
		t.Errorf("the reads' CPU readings %+v: want the round's, read from the three pods", cpu)
	} else {
		t.Logf("the k6 round cost the server %.3f CPU-seconds over %.1f s", cpu[0].CPUSeconds, cpu[0].WallSeconds)
	}
	if parts := docs[0].Arms[0].Profiles[0].Seeding.Parts; len(parts) == 3 {
		for i, p := range parts {
			t.Logf("seeding runner %d: %d documents in %s, started %s after the first", i, p.Stored, p.Elapsed,
				p.StartedAt.Sub(docs[0].Arms[0].Profiles[0].Seeding.StartedAt))
		}
	}
	for step, n := range jobsPerStep(t, b.Name) {
		want := 1
		switch {
		case strings.HasSuffix(step, "/reads"):
			want = 3 // two k6 runners and the round's meter: the suite's operator reads CPU cost
		case strings.HasSuffix(step, "/seed"), strings.HasSuffix(step, "/writes"):
			want = 3
		}
		if n != want {
			t.Errorf("%d Jobs for %s, want %d", n, step, want)
		}
	}
	var records corev1.SecretList
	if err := c.List(ctx, &records, client.InNamespace(namespace), client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
		t.Fatal(err)
	}
	if n := len(records.Items); n > 1 {
		t.Errorf("%d Helm revisions of %s: the restarted manager installed again", n, release)
	}
}

// waitRunning waits until a pod with the labels runs.
func waitRunning(t *testing.T, labels map[string]string) {
	t.Helper()
	if err := poll(context.Background(), 5*time.Minute, func() (bool, string) {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods, none running", len(pods.Items))
	}); err != nil {
		t.Fatal(err)
	}
}

// Deleting a benchmark mid-run (its CouchDB from the chart in the in-cluster Helm
// repository) removes what it made: its Helm releases, the volumes its CouchDB claimed, its
// admin Secrets; whatever the teardown policy.
func TestDeletedMidRunLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const class = "couchbench-e2e-manual"
	hostPathVolume(t, class)
	b := provisioned("deleted", repositoryChart(), 1, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.CouchDB.Provision.Storage = &benchv1.Storage{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To(class)}
	b.Spec.Dataset = benchv1.Dataset{Documents: 20000, Seed: 1, BatchSize: 1000, Concurrency: 2, Shards: 2,
		Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}}
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin}, Repetitions: 5}}
	b.Spec.Teardown = benchv1.TeardownNever
	start(t, b)
	got := waitForStep(t, b, benchv1.StepIndex)
	release := builders.ReleaseName(got, "js")
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &pvcs, client.InNamespace(namespace), client.MatchingLabels(builders.CouchDBPodLabels(release))); err != nil || len(pvcs.Items) != 1 {
		t.Fatalf("%d PVCs of %s (%v): the run must have claimed its volume", len(pvcs.Items), release, err)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(b), &benchv1.CouchBenchmark{})
		return err != nil, fmt.Sprintf("benchmark still there: %v", err)
	}); err != nil {
		t.Fatal(err)
	}
	gone(t, "StatefulSets", &appsv1.StatefulSetList{}, builders.CouchDBPodLabels(release))
	gone(t, "PVCs", &corev1.PersistentVolumeClaimList{}, builders.CouchDBPodLabels(release))
	gone(t, "Helm release records", &corev1.SecretList{}, map[string]string{"owner": "helm", "name": release})
	gone(t, "Secrets", &corev1.SecretList{}, map[string]string{builders.LabelBenchmark: b.Name})
	gone(t, "Jobs", &batchv1.JobList{}, map[string]string{builders.LabelBenchmark: b.Name})
}

// hostPathVolume makes a PersistentVolume of the class on a node, in a directory CouchDB
// (uid 5984) can write, and deletes it when the test ends. The volume is bound to the node
// the directory was made on, so that the pod that claims it is scheduled there.
func hostPathVolume(t *testing.T, class string) {
	t.Helper()
	ctx := context.Background()
	dir := "/var/lib/couchbench-e2e/" + class
	prep := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prepare-" + class},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "prepare", Image: envOr("E2E_HTTPD_IMAGE", "couchbench/e2e-httpd:bookworm"), ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sh", "-c", "rm -rf /host/data && mkdir -p /host/data && chmod 0777 /host/data"},
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
			}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
		},
	}
	_ = c.Delete(ctx, prep)
	_ = poll(ctx, time.Minute, func() (bool, string) {
		return c.Get(ctx, client.ObjectKeyFromObject(prep), &corev1.Pod{}) != nil, "old prepare pod"
	})
	if err := c.Create(ctx, prep); err != nil {
		t.Fatal(err)
	}
	var node string
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(prep), &p); err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("preparing %s failed", dir)
		}
		node = p.Spec.NodeName
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	}); err != nil {
		t.Fatal(err)
	}
	_ = c.Delete(ctx, prep)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir + "/data"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	_ = c.Delete(ctx, pv)
	_ = poll(ctx, time.Minute, func() (bool, string) {
		return c.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{}) != nil, "old volume"
	})
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
}

// A CouchDB image the node does not have is reported at once: Stalled ImagePullFailed
// naming the image, while the run waits for it.
func TestMissingImageIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	b := provisioned("noimage", configMapChart(), 1, benchv1.QueryServer{Name: "js", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.CouchDB.Provision.Image = benchv1.ImageSource{Repository: "couchdb", Tag: "0.0.0-not-loaded"}
	// Never pull: the image is not on the node, and nothing may be fetched from outside.
	values, _ := json.Marshal(map[string]any{"image": map[string]any{"pullPolicy": "Never"}, "initImage": map[string]any{"pullPolicy": "Never"}})
	b.Spec.CouchDB.Provision.Values = &apiextensionsv1.JSON{Raw: values}
	b.Spec.Dataset = benchv1.Dataset{Documents: 100}
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{}}
	start(t, b)
	var stalled *metav1.Condition
	if err := poll(context.Background(), 5*time.Minute, func() (bool, string) {
		got := get(t, b)
		stalled = meta.FindStatusCondition(got.Status.Conditions, "Stalled")
		return stalled != nil && stalled.Status == metav1.ConditionTrue, fmt.Sprintf("phase %s conditions %+v", got.Status.Phase, got.Status.Conditions)
	}); err != nil {
		t.Fatal(err)
	}
	if stalled.Reason != "ImagePullFailed" || !strings.Contains(stalled.Message, "couchdb:0.0.0-not-loaded") || get(t, b).Status.Phase != benchv1.PhaseRunning {
		t.Errorf("Stalled %+v; want ImagePullFailed naming the image, the run still waiting", stalled)
	}
	t.Logf("Stalled: %s", stalled.Message)
}

// guaranteed are resources with requests equal to limits.
func guaranteed(cpu, memory string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return corev1.ResourceRequirements{Requests: l, Limits: l}
}
