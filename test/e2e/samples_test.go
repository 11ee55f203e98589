//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/results"
)

// sampleLimit bounds one sample's run here; the samples are sized for a 2-core node and
// answer in minutes (their own timeouts are for clusters scaled up to the seeds' sizes).
const sampleLimit = 30 * time.Minute

// The suite's size of a sample: its shape as shipped (every arm, preset, image, profile,
// reducer, workload, variant, mode, threshold and option), with at most these documents,
// repetitions and seconds of load. As shipped, the eight answer in over an hour on this
// machine's two cores (seed 000 alone builds for 18 minutes: docs/benchmarks.md), more than
// CI has beside the rest of the suite. E2E_SAMPLES=as-shipped applies them unmodified.
const (
	suiteDocuments   = 2000
	suiteRepetitions = 3
	suiteLoad        = 15 * time.Second
	suiteWrites      = 5 * time.Second
	suiteIterations  = 50
	suitePause       = 2 * time.Second
)

// asShipped says whether the samples run unmodified (E2E_SAMPLES=as-shipped).
var asShipped = os.Getenv("E2E_SAMPLES") == "as-shipped"

// suiteSized brings a sample's spec to the suite's size, unless the samples run as shipped.
func suiteSized(spec *benchv1.CouchBenchmarkSpec) {
	if asShipped {
		return
	}
	spec.Dataset.Documents = min(spec.Dataset.Documents, suiteDocuments)
	spec.Dataset.SeedRepetitions = min(spec.Dataset.SeedRepetitions, suiteRepetitions)
	w := &spec.Workloads
	if w.Indexing != nil {
		w.Indexing.Repetitions = min(w.Indexing.Repetitions, suiteRepetitions)
	}
	if w.ViewReads != nil {
		w.ViewReads.Repetitions = min(w.ViewReads.Repetitions, suiteRepetitions)
	}
	if w.Writes != nil {
		w.Writes.Repetitions = min(w.Writes.Repetitions, suiteRepetitions)
		w.Writes.Duration = atMost(w.Writes.Duration, suiteWrites)
	}
	if r := w.Reads; r != nil {
		r.Repetitions = min(r.Repetitions, suiteRepetitions)
		r.Duration = atMost(r.Duration, suiteLoad)
		r.Pause = atMost(r.Pause, suitePause)
		if r.IterationsPerUser != nil {
			r.IterationsPerUser = ptr.To(min(*r.IterationsPerUser, suiteIterations))
		}
	}
}

// atMost is a duration field no longer than limit. A field a sample leaves unset keeps the
// API's default, here as in suiteSized.
func atMost(field string, limit time.Duration) string {
	if d, err := time.ParseDuration(field); err == nil && d > limit {
		return limit.String()
	}
	return field
}

// Every file in config/samples, applied with its shape as shipped and at the suite's size
// (suiteSized; only the namespace is the suite's), runs to Succeeded on this kind cluster:
// real Apache CouchDB pods from the chart the operator carries, real k6, nodes that share
// this machine's two cores. Each answers with a table per arm, and `couchbench report` of the
// stored documents is the operator's own results.md. The existing-CouchDB sample finds the
// server and Secret its comments tell a user to have; the schedule's immediate run stands for
// its first night.
func TestSamplesRun(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var head metav1.TypeMeta
			if err := yaml.Unmarshal(data, &head); err != nil {
				t.Fatal(err)
			}
			switch head.Kind {
			case "CouchBenchmark":
				var b benchv1.CouchBenchmark
				if err := yaml.UnmarshalStrict(data, &b); err != nil {
					t.Fatal(err)
				}
				b.Namespace = namespace
				suiteSized(&b.Spec)
				if b.Spec.CouchDB.Existing != nil {
					existingServerAsTheSampleNamesIt(t, &b)
				}
				start(t, &b)
				got := mustSucceed(t, &b, sampleLimit)
				sampleAnswered(t, &b, got)
				if check := sampleChecks[filepath.Base(file)]; check != nil {
					check(t, &b, got)
				}
			case "CouchBenchmarkSchedule":
				var s benchv1.CouchBenchmarkSchedule
				if err := yaml.UnmarshalStrict(data, &s); err != nil {
					t.Fatal(err)
				}
				if !s.Spec.Immediate {
					t.Fatalf("%s: a schedule sample starts a run when applied (immediate: true), so that it can be seen to work", file)
				}
				s.Namespace = namespace
				suiteSized(&s.Spec.Template.Spec)
				scheduleRuns(t, &s)
			default:
				t.Fatalf("%s: a sample of kind %q", file, head.Kind)
			}
		})
	}
	if ran < 8 {
		t.Fatalf("%d samples in config/samples; want every one of the eight the README lists", ran)
	}
}

// sampleAnswered checks what every benchmark sample gives: a results row per arm, and the
// results ConfigMap's table equal to `couchbench report` of the stored documents.
func sampleAnswered(t *testing.T, b, got *benchv1.CouchBenchmark) {
	t.Helper()
	if len(got.Status.Results) != len(b.Spec.QueryServers) {
		t.Fatalf("results for %d arms, want %d: %+v", len(got.Status.Results), len(b.Spec.QueryServers), got.Status.Results)
	}
	md, _ := report(t, b, "markdown")
	if md == "" || md != resultsMarkdown(t, b) {
		t.Errorf("couchbench report of the stored documents differs from the operator's results.md:\n%s\n---\n%s", md, resultsMarkdown(t, b))
	}
	t.Logf("%s (as shipped: %v), real Apache CouchDB pods on kind:\n%s", b.Name, asShipped, md)
}

// existingServerAsTheSampleNamesIt gives the existing-CouchDB sample the server and the
// Secret it names: its URL's Service, as an ExternalName of the suite's existing CouchDB, and
// the credentials Secret its comment tells a user to create.
func existingServerAsTheSampleNamesIt(t *testing.T, b *benchv1.CouchBenchmark) {
	t.Helper()
	ctx := context.Background()
	host := strings.TrimPrefix(b.Spec.CouchDB.Existing.URL, "http://")
	host, _, _ = strings.Cut(host, ":")
	parts := strings.Split(host, ".") // service.namespace.svc
	keys := b.Spec.CouchDB.Existing.CredentialsSecret
	if len(parts) < 2 {
		t.Fatalf("the sample's URL %s does not name a Service", b.Spec.CouchDB.Existing.URL)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: parts[1]}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: parts[1], Name: parts[0]}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: fmt.Sprintf("%s-svc-couchdb.%s.svc.cluster.local", existingRelease, namespace)}},
		// The keys the API server defaults when the sample names none.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: keys.Name},
			StringData: map[string]string{cmp.Or(keys.UsernameKey, "username"): "admin", cmp.Or(keys.PasswordKey, "password"): existingPass}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// scheduleRuns applies the schedule and waits for the run it starts on creation.
func scheduleRuns(t *testing.T, s *benchv1.CouchBenchmarkSchedule) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, s.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 3*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), &benchv1.CouchBenchmarkSchedule{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%s still there: %v", s.Name, err)
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(ctx, s, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	var run *benchv1.CouchBenchmark
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		var runs benchv1.CouchBenchmarkList
		if err := c.List(ctx, &runs, client.InNamespace(namespace), client.MatchingLabels{benchv1.LabelSchedule: builders.LabelValue(s.Name)}); err != nil {
			return false, err.Error()
		}
		if len(runs.Items) == 0 {
			var now benchv1.CouchBenchmarkSchedule
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), &now); err != nil {
				return false, err.Error()
			}
			return false, fmt.Sprintf("no run yet; the schedule's conditions: %+v", now.Status.Conditions)
		}
		run = &runs.Items[0]
		return true, ""
	}); err != nil {
		t.Fatal(err)
	}
	got := mustSucceed(t, run, sampleLimit)
	sampleAnswered(t, run, got)
	if err := poll(ctx, 2*time.Minute, func() (bool, string) {
		var now benchv1.CouchBenchmarkSchedule
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), &now); err != nil {
			return false, err.Error()
		}
		return now.Status.LastSuccessfulRun == run.Name, fmt.Sprintf("lastSuccessfulRun %q, want %q", now.Status.LastSuccessfulRun, run.Name)
	}); err != nil {
		t.Error(err)
	}
}

// sampleChecks are what a sample shows beyond a table per arm.
var sampleChecks = map[string]func(t *testing.T, b, got *benchv1.CouchBenchmark){
	"seed000-indexing-query-servers.yaml": seed000OnOneNode,
	"ab-couchdb-builds.yaml":              eachArmOnItsOwnBuild,
}

// The A/B of CouchDB builds: each arm's results name its own CouchDB (3.4.3 and 3.5.1, both
// built from the Apache releases) and where it ran, read with the chart's RBAC.
func eachArmOnItsOwnBuild(t *testing.T, b, _ *benchv1.CouchBenchmark) {
	md, docs := report(t, b, "markdown")
	want := map[string]string{}
	for _, qs := range b.Spec.QueryServers {
		want[qs.Name] = "3.4.3"
		if strings.Contains(qs.Image, "3.5.1") {
			want[qs.Name] = "3.5.1"
		}
	}
	for _, d := range docs {
		arm := d.Arms[0]
		if d.Server.Version != want[arm.QueryServer] {
			t.Errorf("arm %s ran on CouchDB %s, want %s", arm.QueryServer, d.Server.Version, want[arm.QueryServer])
		}
		if cl := arm.Cluster; cl == nil || len(cl.Nodes) == 0 || cl.Nodes[0].CPU == "" || cl.Operator == "unknown" {
			t.Errorf("arm %s: provenance %+v lacks the node or the operator's build", arm.QueryServer, cl)
		}
	}
	if len(docs) != len(b.Spec.QueryServers) {
		t.Errorf("%d results documents for %d arms", len(docs), len(b.Spec.QueryServers))
	}
	contains(t, "report", md, "### Provenance", "3.5.1 (44f6a43)", "3.4.3 (e12b967)")
}

// Seed 000's shape: every preset, small and large documents, builtin and custom reducers,
// each arm on a CouchDB of its own, side by side. Each arm's results say which query server
// really ran its views; every document was mapped exactly once per build.
func seed000OnOneNode(t *testing.T, b, got *benchv1.CouchBenchmark) {
	if got.Status.BestChangesPerSecond == nil {
		t.Errorf("no bestChangesPerSecond in status")
	}
	reducers, profiles := len(b.Spec.Workloads.Indexing.Reducers), len(b.Spec.Dataset.Profiles)
	for _, q := range got.Status.Results {
		if len(q.Indexing) != reducers*profiles || len(q.Seeding) != profiles {
			t.Errorf("%s: %d indexing rows (want profile x reducer = %d), %d seeding rows", q.QueryServer, len(q.Indexing), reducers*profiles, len(q.Seeding))
		}
		for _, s := range q.Seeding {
			if s.Documents != b.Spec.Dataset.Documents {
				t.Errorf("%s %s: %d documents stored, want %d", q.QueryServer, s.Profile, s.Documents, b.Spec.Dataset.Documents)
			}
		}
	}
	_, docs := report(t, b, "markdown")
	logTimeToAnswer(t, got, docs)
	want := map[benchv1.Preset]struct{ language, engine, json string }{
		benchv1.PresetSpiderMonkey:      {"javascript", "spidermonkey", ""},
		benchv1.PresetQuickJS:           {"javascript_quickjs", "quickjs", ""},
		benchv1.PresetErlang:            {"erlang", "erlang", ""},
		benchv1.PresetCouchpy:           {"python", "CPython", "json"},
		benchv1.PresetCouchpySimplejson: {"python", "CPython", "simplejson"},
		benchv1.PresetPyPy:              {"python", "PyPy", "json"},
	}
	presets := map[string]benchv1.Preset{}
	for _, qs := range b.Spec.QueryServers {
		presets[qs.Name] = qs.Preset
	}
	for _, d := range docs {
		a := d.Arms[0]
		w, ok := want[presets[a.QueryServer]]
		if !ok {
			t.Errorf("%s: preset %q, not one of seed 000's", a.QueryServer, presets[a.QueryServer])
			continue
		}
		if a.Runtime == nil || a.Runtime.Language != w.language || a.Runtime.Engine != w.engine || a.Runtime.JSONModule != w.json {
			t.Errorf("%s ran on %+v, want %+v", a.QueryServer, a.Runtime, w)
		} else {
			t.Logf("%s: language %s, engine %s %s, json %q", a.QueryServer, a.Runtime.Language, a.Runtime.Engine, a.Runtime.Version, a.Runtime.JSONModule)
		}
		if d.Server.Version != "3.4.3" || len(d.Server.Nodes) != 1 {
			t.Errorf("%s: server %+v, want CouchDB 3.4.3 on one node", a.QueryServer, d.Server)
		}
		for _, p := range a.Profiles {
			for _, ix := range p.Indexing {
				for i, run := range ix.Runs {
					// One node, n=1, compaction paused (the default): every document mapped once.
					if run.MapDocs != run.MapDocsExpected || len(run.Series) == 0 {
						t.Errorf("%s %s %s run %d: map_doc grew %d for %d expected, %d series points",
							a.QueryServer, p.Profile, ix.Reducer, i+1, run.MapDocs, run.MapDocsExpected, len(run.Series))
					}
				}
			}
		}
	}
	for step, n := range jobsPerStep(t, b.Name) {
		if n != 1 {
			t.Errorf("%d Jobs for %s", n, step)
		}
	}
	// Every arm's CouchDB on the one node the first arm's ran on, the runners off it.
	if c := meta.FindStatusCondition(got.Status.Conditions, "ArmsOnSameNodes"); c == nil || c.Status != metav1.ConditionTrue ||
		len(got.Status.CouchDBNodes) != 1 {
		t.Errorf("ArmsOnSameNodes %+v, couchdbNodes %v: want True, and the first arm's one node", c, got.Status.CouchDBNodes)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "LoadIsolated"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SeparateNodes" {
		t.Errorf("LoadIsolated %+v, want True with reason SeparateNodes with workers to spare", c)
	}
	for _, q := range got.Status.Results {
		for _, ix := range q.Indexing {
			if slices.Contains(ix.Flags, benchv1.FlagSharedNode) {
				t.Errorf("%s %s %s: flags %v, want no SharedNode", q.QueryServer, ix.Profile, ix.Reducer, ix.Flags)
			}
		}
	}
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{builders.LabelBenchmark: b.Name}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Labels[builders.LabelStep] != "" && pod.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("runner pod %s: QoS class %s, want Guaranteed", pod.Name, pod.Status.QOSClass)
		}
	}
	// Teardown Always: every arm's CouchDB and admin Secret are gone, the results stay.
	for _, qs := range b.Spec.QueryServers {
		gone(t, "StatefulSets of "+qs.Name, &appsv1.StatefulSetList{}, builders.CouchDBPodLabels(builders.ReleaseName(got, qs.Name)))
	}
	gone(t, "admin Secrets", &corev1.SecretList{}, map[string]string{builders.LabelBenchmark: b.Name})
}

// logTimeToAnswer prints where a run's time went, from `kubectl apply` (the benchmark's
// creation) to its table (its completion): the builds summed over every arm, each runner
// step's span, and the rest (provisioning, probes, the Jobs' starts, teardown).
// docs/benchmarks.md records it; a figure, not a check.
func logTimeToAnswer(t *testing.T, got *benchv1.CouchBenchmark, docs []*results.Document) {
	t.Helper()
	if got.Status.CompletionTime == nil {
		t.Errorf("a finished run without a completionTime")
		return
	}
	total := got.Status.CompletionTime.Sub(got.CreationTimestamp.Time)
	var builds time.Duration
	spans := map[benchv1.Step][2]time.Time{}
	var order []benchv1.Step
	for _, d := range docs {
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				for _, ix := range p.Indexing {
					for _, run := range ix.Runs {
						builds += run.Built
					}
				}
			}
		}
		for _, st := range d.Steps {
			span, ok := spans[st.Step]
			if !ok {
				order = append(order, st.Step)
				span = [2]time.Time{st.StartedAt, st.FinishedAt}
			}
			if st.StartedAt.Before(span[0]) {
				span[0] = st.StartedAt
			}
			if st.FinishedAt.After(span[1]) {
				span[1] = st.FinishedAt
			}
			spans[st.Step] = span
		}
	}
	line := fmt.Sprintf("%s: apply to table %s, builds summed %s (%.2fx)", got.Name, total.Round(time.Second), builds.Round(100*time.Millisecond),
		total.Seconds()/builds.Seconds())
	var stepped time.Duration
	for _, step := range order {
		d := spans[step][1].Sub(spans[step][0])
		stepped += d
		line += fmt.Sprintf("; %s %s", step, d.Round(100*time.Millisecond))
	}
	t.Logf("%s; the rest (provision, probes, Jobs starting, teardown) %s", line, (total - stepped).Round(time.Second))
}
