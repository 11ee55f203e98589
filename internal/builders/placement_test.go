package builders

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Load generators get the spec's resources and scheduling, and a soft rule against the
// nodes of the arm's CouchDB pods added to the user's own affinity.
func TestLoadGeneratorsAreSizedAndKeptOffCouchDBNodes(t *testing.T) {
	guaranteed := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	userTerm := corev1.WeightedPodAffinityTerm{Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}
	scheduling := benchv1.Scheduling{
		NodeSelector: map[string]string{"pool": "load"},
		Tolerations:  []corev1.Toleration{{Key: "bench", Operator: corev1.TolerationOpExists}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{userTerm}}},
	}
	keptOff := func(pod corev1.PodSpec) bool {
		if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil {
			return false
		}
		for _, term := range pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if term.Weight == 100 && term.PodAffinityTerm.TopologyKey == corev1.LabelHostname &&
				equality.Semantic.DeepEqual(term.PodAffinityTerm.LabelSelector, couchDBPodsOf("bench-js")) {
				return true
			}
		}
		return false
	}
	pods := func(bench *benchv1.CouchBenchmark) map[string]corev1.PodSpec {
		creds := benchv1.SecretKeys{Name: "s", UsernameKey: "u", PasswordKey: "p"}
		return map[string]corev1.PodSpec{
			"runner": RunnerJob{Bench: bench, Servers: []ArmServer{{Arm: "js", Credentials: creds}}, Step: benchv1.StepSeed,
				Deadline: time.Hour}.Job().Spec.Template.Spec,
			"k6": K6Job{Bench: bench, Arm: "js", Credentials: creds, Deadline: time.Hour}.Job().Spec.Template.Spec,
		}
	}

	bench := provisioned()
	bench.Spec.Runner = benchv1.RunnerSettings{Resources: guaranteed("1", "512Mi"), Scheduling: scheduling}
	bench.Spec.K6.Resources, bench.Spec.K6.Scheduling = guaranteed("2", "1Gi"), scheduling
	for role, pod := range pods(bench) {
		want := map[string]corev1.ResourceRequirements{"runner": guaranteed("1", "512Mi"), "k6": guaranteed("2", "1Gi")}[role]
		if !equality.Semantic.DeepEqual(pod.Containers[0].Resources, want) {
			t.Errorf("%s resources %+v, want %+v", role, pod.Containers[0].Resources, want)
		}
		if pod.NodeSelector["pool"] != "load" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "bench" {
			t.Errorf("%s: node selector %v, tolerations %v", role, pod.NodeSelector, pod.Tolerations)
		}
		anti := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		if !keptOff(pod) || len(anti) != 2 || anti[0].Weight != 5 {
			t.Errorf("%s: anti-affinity %+v, want the user's term and one against the arm's CouchDB nodes", role, anti)
		}
	}
	if n := len(scheduling.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution); n != 1 {
		t.Errorf("the spec's affinity was changed: %d terms", n)
	}

	bench.Spec.Isolation = benchv1.IsolationNone
	for role, pod := range pods(bench) {
		if keptOff(pod) {
			t.Errorf("%s: isolation None, but kept off CouchDB's nodes", role)
		}
	}
	existing := provisioned()
	existing.Spec.CouchDB = benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{URL: "http://c:5984"}}
	for role, pod := range pods(existing) {
		if keptOff(pod) || pod.Affinity != nil {
			t.Errorf("%s: an existing CouchDB has no pods of ours to keep off, got affinity %+v", role, pod.Affinity)
		}
	}
}

func TestCouchDBPodsGoWhereTheSpecSays(t *testing.T) {
	bench := provisioned()
	p := bench.Spec.CouchDB.Provision
	p.NodeSelector = map[string]string{"pool": "couchdb"}
	p.Tolerations = []corev1.Toleration{{Key: "couchdb", Operator: corev1.TolerationOpExists}}
	p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	values, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	if get(t, values, "nodeSelector.pool") != "couchdb" || values["tolerations"].([]any)[0].(map[string]any)["key"] != "couchdb" ||
		get(t, values, "affinity.nodeAffinity") == nil {
		t.Errorf("values %v %v %v", values["nodeSelector"], values["tolerations"], values["affinity"])
	}
	plain := provisioned()
	values, err = HelmValues(plain, plain.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"nodeSelector", "tolerations"} {
		if _, ok := values[key]; ok {
			t.Errorf("values.%s set without a spec for it: %v", key, values[key])
		}
	}
	if a := values["affinity"].(map[string]any); len(a) != 1 || a["podAntiAffinity"] == nil {
		t.Errorf("values.affinity without a spec for it: %v, want only the operator's spread of the CouchDB pods", a)
	}
}

// A clustered CouchDB prefers one pod per node: each arm's pods keep away from the other pods
// of their own release (not from another arm's, which a later arm prefers to join).
func TestClusteredCouchDBPrefersOnePodPerNode(t *testing.T) {
	bench := provisioned()
	bench.Spec.QueryServers = append(bench.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	for _, qs := range bench.Spec.QueryServers {
		values, err := HelmValues(bench, qs)
		if err != nil {
			t.Fatal(err)
		}
		terms := get(t, values, "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution").([]any)
		want := map[string]any{"weight": float64(100), "podAffinityTerm": map[string]any{
			"topologyKey": "kubernetes.io/hostname",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "couchdb"}, "matchExpressions": []any{
				map[string]any{"key": "release", "operator": "In", "values": []any{ReleaseName(bench, qs.Name)}}}},
		}}
		if len(terms) != 1 || !equality.Semantic.DeepEqual(terms[0], want) {
			t.Errorf("arm %s: pod anti-affinity %v, want %v", qs.Name, terms, want)
		}
	}
}

// Arms run one after the other: once the first arm's CouchDB has run, a later arm's CouchDB
// pods prefer its nodes, beside the user's own affinity; the first arm's values do not change.
func TestLaterArmsPreferTheFirstArmsNodes(t *testing.T) {
	bench := provisioned()
	bench.Spec.ArmOrder = benchv1.ArmsSequential
	bench.Spec.QueryServers = append(bench.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	user := corev1.PreferredSchedulingTerm{Weight: 7, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}
	bench.Spec.CouchDB.Provision.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{user}}}
	before, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	bench.Status.CouchDBNodes = []string{"node-a", "node-b"}
	first, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	later, err := HelmValues(bench, bench.Spec.QueryServers[1])
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(first["affinity"], before["affinity"]) {
		t.Errorf("the first arm's affinity changed: %v", first["affinity"])
	}
	terms := get(t, later, "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution").([]any)
	if len(terms) != 2 || get(t, terms[0].(map[string]any), "weight") != float64(7) {
		t.Fatalf("later arm's node preferences %v: want the user's and the first arm's nodes", terms)
	}
	want := map[string]any{"weight": float64(100), "preference": map[string]any{"matchFields": []any{
		map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"node-a", "node-b"}}}}}
	if !equality.Semantic.DeepEqual(terms[1], want) {
		t.Errorf("later arm's preference %v, want %v", terms[1], want)
	}
}

// Arms provisioned side by side: a later arm's CouchDB pods prefer the nodes of the first
// arm's pods, beside the user's own affinity; the first arm's values have no such term.
func TestArmsSideBySidePreferTheFirstArmsPods(t *testing.T) {
	bench := provisioned()
	bench.Spec.QueryServers = append(bench.Spec.QueryServers, benchv1.QueryServer{Name: "py", Language: "python"})
	user := corev1.WeightedPodAffinityTerm{Weight: 3, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}
	bench.Spec.CouchDB.Provision.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{user}}}
	first, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	later, err := HelmValues(bench, bench.Spec.QueryServers[1])
	if err != nil {
		t.Fatal(err)
	}
	if terms := get(t, first, "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution").([]any); len(terms) != 1 {
		t.Errorf("the first arm's pod affinity %v: want only the user's", terms)
	}
	terms := get(t, later, "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution").([]any)
	want := map[string]any{"weight": float64(100), "podAffinityTerm": map[string]any{
		"topologyKey": "kubernetes.io/hostname",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "couchdb"}, "matchExpressions": []any{
			map[string]any{"key": "release", "operator": "In", "values": []any{ReleaseName(bench, "js")}}}},
	}}
	if len(terms) != 2 || !equality.Semantic.DeepEqual(terms[1], want) {
		t.Errorf("later arm's pod affinity %v: want the user's term and %v", terms, want)
	}
	if _, ok := get(t, later, "affinity").(map[string]any)["nodeAffinity"]; ok {
		t.Errorf("later arm's affinity %v: no node names before any pod ran", later["affinity"])
	}
}
