package builders

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func provisioned() *benchv1.CouchBenchmark {
	return &benchv1.CouchBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns", UID: types.UID("0123456789abcdef")},
		Spec: benchv1.CouchBenchmarkSpec{
			CouchDB: benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{
				ClusterSize: 3, Image: benchv1.ImageSource{Repository: "couchdb", Tag: "3.4.3"},
			}},
			QueryServers: []benchv1.QueryServer{{Name: "js", Language: "javascript"}},
		},
	}
}

// get walks nested Helm values.
func get(t *testing.T, values map[string]any, path string) any {
	t.Helper()
	var cur any = values
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("values: %s: %v is not a map", path, cur)
		}
		cur = m[key]
	}
	return cur
}

// The values must carry what the Apache CouchDB chart needs, under its own names.
func TestHelmValuesHaveWhatTheApacheChartNeeds(t *testing.T) {
	bench := provisioned()
	values, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"clusterSize":                     int64(3),
		"image.repository":                "couchdb",
		"image.tag":                       "3.4.3",
		"createAdminSecret":               false, // the chart would make a new random password on every render
		"extraSecretName":                 "bench-js-admin",
		"persistentVolume.enabled":        false,
		"podSecurityContext.runAsNonRoot": true,
		"containerSecurityContext.allowPrivilegeEscalation": false,
		// Probed every 2 s, not the chart's 10, with the chart's 30 s before a busy pod leaves
		// its Service.
		"readinessProbe.periodSeconds":    int64(2),
		"readinessProbe.failureThreshold": int64(15),
	} {
		if got := get(t, values, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	// The chart refuses to render without a uuid; it must be stable for the arm.
	uuid, _ := get(t, values, "couchdbConfig.couchdb.uuid").(string)
	again, _ := HelmValues(bench, bench.Spec.QueryServers[0])
	if len(uuid) != 32 || uuid != get(t, again, "couchdbConfig.couchdb.uuid") {
		t.Errorf("uuid %q is not a stable 32-hex value", uuid)
	}
	other := provisioned()
	other.Spec.QueryServers = []benchv1.QueryServer{{Name: "py", Language: "python"}}
	otherValues, _ := HelmValues(other, other.Spec.QueryServers[0])
	if get(t, otherValues, "couchdbConfig.couchdb.uuid") == uuid {
		t.Error("two arms share a uuid")
	}
	if _, ok := values["extraEnv"]; ok {
		t.Error("a built-in language got extraEnv")
	}
	if got := get(t, values, "couchdbConfig.couchdb.single_node"); got != nil {
		t.Errorf("a 3-node cluster is set single_node=%v", got)
	}
}

func TestHelmValuesPerQueryServer(t *testing.T) {
	bench := provisioned()
	bench.Spec.CouchDB.Provision.ClusterSize = 1
	cases := []struct {
		qs    benchv1.QueryServer
		check func(t *testing.T, v map[string]any)
	}{
		{benchv1.QueryServer{Name: "quickjs", Language: "javascript", Engine: benchv1.EngineQuickJS}, func(t *testing.T, v map[string]any) {
			if get(t, v, "couchdbConfig.couchdb.js_engine") != "quickjs" {
				t.Error("js_engine not set to quickjs")
			}
		}},
		{benchv1.QueryServer{Name: "erl", Language: "erlang"}, func(t *testing.T, v map[string]any) {
			if get(t, v, "couchdbConfig.native_query_servers.enable_erlang_query_server") != true {
				t.Error("the Erlang native query server is not enabled")
			}
		}},
		{benchv1.QueryServer{Name: "py", Language: "python", Image: "registry:5000/couchdb-python:3.4.3", Command: "/usr/local/bin/couchpy",
			Env: []corev1.EnvVar{{Name: "PYTHONHASHSEED", Value: "0"}}}, func(t *testing.T, v map[string]any) {
			if get(t, v, "image.repository") != "registry:5000/couchdb-python" || get(t, v, "image.tag") != "3.4.3" {
				t.Errorf("image %v", v["image"])
			}
			// The init container runs from the arm's own image: nothing else to pull.
			if get(t, v, "initImage.repository") != "registry:5000/couchdb-python" || get(t, v, "initImage.tag") != "3.4.3" ||
				get(t, v, "initImage.pullPolicy") != "IfNotPresent" {
				t.Errorf("initImage %v, want the arm's image, pulled only if missing", v["initImage"])
			}
			env, _ := json.Marshal(v["extraEnv"])
			if string(env) != `[{"name":"COUCHDB_QUERY_SERVER_PYTHON","value":"/usr/local/bin/couchpy"},{"name":"PYTHONHASHSEED","value":"0"}]` {
				t.Errorf("extraEnv %s", env)
			}
		}},
	}
	for _, c := range cases {
		values, err := HelmValues(bench, c.qs)
		if err != nil {
			t.Fatal(err)
		}
		if get(t, values, "couchdbConfig.couchdb.single_node") != true {
			t.Errorf("%s: a one-node cluster must set itself up (single_node)", c.qs.Name)
		}
		c.check(t, values)
	}
	if _, err := HelmValues(bench, benchv1.QueryServer{Name: "d", Language: "python", Image: "couchdb@sha256:abc"}); err == nil {
		t.Error("an image digest was accepted; the chart cannot express it")
	}
}

func TestUserValuesMergeLast(t *testing.T) {
	bench := provisioned()
	p := bench.Spec.CouchDB.Provision
	p.Storage = &benchv1.Storage{Size: resource.MustParse("20Gi"), StorageClassName: ptr.To("fast")}
	p.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	p.Values = &apiextensionsv1.JSON{Raw: []byte(`{"couchdbConfig":{"couchdb":{"max_document_size":50000000}},"image":{"tag":"3.5.0"},` +
		`"initImage":{"repository":"registry.local/busybox","tag":"1.37"},"networkPolicy":{"enabled":false}}`)}
	values, err := HelmValues(bench, bench.Spec.QueryServers[0])
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"image.tag":        "3.5.0",   // the user's value wins
		"image.repository": "couchdb", // merged, not replaced
		"couchdbConfig.couchdb.max_document_size": float64(50000000),
		"networkPolicy.enabled":                   false,
		"initImage.repository":                    "registry.local/busybox",
		"initImage.pullPolicy":                    "IfNotPresent",
		"persistentVolume.enabled":                true,
		"persistentVolume.size":                   "20Gi",
		"persistentVolume.storageClass":           "fast",
		"resources.limits.cpu":                    "2",
	} {
		if got := get(t, values, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if get(t, values, "couchdbConfig.couchdb.uuid") == nil {
		t.Error("the user's couchdbConfig replaced the operator's uuid instead of merging")
	}
}

// Arms that differ by CouchDB: the arm's image, ini settings and values win over the
// benchmark's, which win over the operator's.
func TestArmCouchDBOverridesMergeLast(t *testing.T) {
	bench := provisioned()
	bench.Spec.CouchDB.Provision.Values = &apiextensionsv1.JSON{Raw: []byte(`{"couchdbConfig":{"couchdb":{"max_dbs_open":500},"log":{"level":"info"}}}`)}
	arm := benchv1.QueryServer{Name: "v351", Language: "javascript", Image: "couchdb:3.5.1",
		Config: map[string]map[string]string{"couchdb": {"max_dbs_open": "1000"}, "smoosh": {"db_channels": "upgrade_dbs"}},
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"couchdbConfig":{"log":{"level":"debug"}},"erlangFlags":{"setcookie":"x"}}`)}}
	values, err := HelmValues(bench, arm)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"image.tag":                          "3.5.1",
		"initImage.tag":                      "3.5.1",
		"couchdbConfig.couchdb.max_dbs_open": "1000", // the arm's config over the benchmark's values
		"couchdbConfig.smoosh.db_channels":   "upgrade_dbs",
		"couchdbConfig.log.level":            "debug", // the arm's values last
		"erlangFlags.setcookie":              "x",
	} {
		if got := get(t, values, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if get(t, values, "couchdbConfig.couchdb.uuid") == nil {
		t.Error("the arm's config replaced the operator's uuid instead of merging")
	}
	bad := arm
	bad.Values = &apiextensionsv1.JSON{Raw: []byte(`[1]`)}
	if _, err := HelmValues(bench, bad); err == nil || !strings.Contains(err.Error(), "queryServers[v351].values") {
		t.Errorf("values that are not an object: %v", err)
	}
}

func TestNamesFitAndStayUnique(t *testing.T) {
	long := provisioned()
	long.Name = strings.Repeat("a-very-long-benchmark-name-", 3)[:60]
	a, b := JobName(long, []string{"couchpy-simplejson"}, "index"), JobName(long, []string{"couchpy-simplejson"}, "seed")
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("job names %q %q", a, b)
	}
	if r := ReleaseName(long, "couchpy-simplejson"); len(r) > 53 || r != ReleaseName(long, "couchpy-simplejson") {
		t.Errorf("release %q", r)
	}
	if got := ServiceName("bench-js"); got != "bench-js-svc-couchdb" {
		t.Errorf("service %q", got)
	}
	if got := StatefulSetName("bench-js"); got != "bench-js-couchdb" {
		t.Errorf("statefulset %q", got)
	}
}

func TestAdminSecret(t *testing.T) {
	bench := provisioned()
	counting := make([]byte, 256)
	for i := range counting {
		counting[i] = byte(i)
	}
	s, err := AdminSecret(bench, "js", bytes.NewReader(counting))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{AdminUsernameKey, AdminPasswordKey, cookieAuthKey, erlangCookieKey} {
		if len(s.Data[k]) == 0 {
			t.Errorf("key %s empty", k)
		}
	}
	if len(s.Data[AdminPasswordKey]) < 24 || string(s.Data[AdminPasswordKey]) == string(s.Data[cookieAuthKey]) {
		t.Errorf("secrets are short or repeat: %q %q", s.Data[AdminPasswordKey], s.Data[cookieAuthKey])
	}
	if len(s.OwnerReferences) != 1 || !*s.OwnerReferences[0].Controller || s.OwnerReferences[0].UID != bench.UID {
		t.Errorf("owner %v", s.OwnerReferences)
	}
	if _, err := AdminSecret(bench, "js", bytes.NewReader(nil)); err == nil {
		t.Error("an empty random source gave a Secret")
	}
}

func TestRunnerJob(t *testing.T) {
	bench := provisioned()
	job := RunnerJob{
		Bench: bench, Step: "index", Image: "couchbench/manager:dev", Deadline: 90 * time.Minute,
		Servers: []ArmServer{{Arm: "js", URL: "http://bench-js-svc-couchdb.ns.svc:5984",
			Credentials: benchv1.SecretKeys{Name: "bench-js-admin", UsernameKey: AdminUsernameKey, PasswordKey: AdminPasswordKey}}},
	}.Job()
	if job.Name != "bench-js-index" || *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 5400 {
		t.Errorf("job %s backoff %d deadline %d", job.Name, *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"index -f /etc/couchbench/spec/bench.json", "--arm-url js=http://bench-js-svc-couchdb.ns.svc:5984", "--arm js",
		"--credentials-dir /etc/couchbench/credentials", "--handoff /dev/termination-log"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// Restricted Pod Security profile.
	if !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		*c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("security: pod %+v container %+v", pod.SecurityContext, c.SecurityContext)
	}
	if *pod.AutomountServiceAccountToken {
		t.Error("the runner needs no Kubernetes API access")
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("termination message policy %q: a runner that stops before its handoff must leave its log's end", c.TerminationMessagePolicy)
	}
	items := pod.Volumes[1].Secret.Items
	if pod.Volumes[1].Secret.SecretName != "bench-js-admin" || items[0].Key != AdminUsernameKey || items[0].Path != "username" || items[1].Path != "password" {
		t.Errorf("credentials volume %+v", pod.Volumes[1])
	}
	if m := c.VolumeMounts[1]; m.Name != pod.Volumes[1].Name || m.MountPath != "/etc/couchbench/credentials/js" || !m.ReadOnly {
		t.Errorf("credentials mount %+v: want the arm's own directory under --credentials-dir", m)
	}
	if job.Labels[LabelStep] != "index" || job.Spec.Template.Labels[LabelQueryServer] != "js" || job.OwnerReferences[0].UID != bench.UID {
		t.Errorf("labels %v owner %v", job.Labels, job.OwnerReferences)
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToLower(e.Name), "password") {
			t.Errorf("a password in the environment: %s", e.Name)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "GOMEMLIMIT" || c.Env[0].ValueFrom.ResourceFieldRef.Resource != "limits.memory" ||
		c.Env[0].ValueFrom.ResourceFieldRef.ContainerName != c.Name {
		t.Errorf("env %+v: want GOMEMLIMIT from the runner container's memory limit", c.Env)
	}
}

// An index Job that reads its CouchDB's CPU time names its pods (--arm-pods, in the
// benchmark's namespace) and runs as the namespace's CPU reader with its token: the only
// runner pod with API access. Its pods are the StatefulSet's, one per node.
func TestRunnerJobReadingCPU(t *testing.T) {
	bench := provisioned()
	bench.Spec.CouchDB.Provision.ClusterSize = 3
	pods := CouchDBPodNames(bench, "js")
	if want := []string{"bench-js-couchdb-0", "bench-js-couchdb-1", "bench-js-couchdb-2"}; !slices.Equal(pods, want) {
		t.Errorf("pods %v, want %v", pods, want)
	}
	creds := benchv1.SecretKeys{Name: "a", UsernameKey: "u", PasswordKey: "p"}
	job := RunnerJob{Bench: bench, Step: benchv1.StepIndex, Deadline: time.Hour, Servers: []ArmServer{
		{Arm: "js", URL: "http://a:5984", Credentials: creds, Pods: pods},
		{Arm: "erlang", URL: "http://b:5984", Credentials: creds, Pods: []string{"bench-erlang-couchdb-0"}},
	}}.Job()
	pod := job.Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	for _, want := range []string{"--arm-pods js=" + bench.Namespace + "/bench-js-couchdb-0,bench-js-couchdb-1,bench-js-couchdb-2",
		"--arm-pods erlang=" + bench.Namespace + "/bench-erlang-couchdb-0"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if pod.ServiceAccountName != CPUReaderName || !*pod.AutomountServiceAccountToken {
		t.Errorf("service account %q, token %v: want the CPU reader's, mounted", pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
	}
}

// A reads round's meter: the runner's image running reads-cpu for its round and runners, named
// apart from the round's k6 Jobs, with the arm's CouchDB pods, as the namespace's CPU reader,
// under the restricted profile, small (it mostly waits), and kept off the arm's CouchDB nodes
// as every load generator is.
func TestReadsMeterJob(t *testing.T) {
	bench := provisioned()
	bench.Spec.Runner.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	job := ReadsMeterJob{Bench: bench, Image: "couchbench/manager:dev", Round: 2, Runners: 3, Deadline: 30 * time.Minute,
		Server: ArmServer{Arm: "js", URL: "http://a:5984", Pods: CouchDBPodNames(bench, "js"),
			Credentials: benchv1.SecretKeys{Name: "a", UsernameKey: "u", PasswordKey: "p"}}}.Job()
	if job.Name != "bench-js-reads-2-cpu" || job.Name == K6JobName(bench, "js", 2, 0) || *job.Spec.ActiveDeadlineSeconds != 1800 {
		t.Errorf("job %s deadline %d", job.Name, *job.Spec.ActiveDeadlineSeconds)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"reads-cpu -f /etc/couchbench/spec/bench.json --arm js --handoff /dev/termination-log",
		"--round 2 --runners 3 --limit 30m0s", "--arm-url js=http://a:5984", "--arm-pods js=" + bench.Namespace + "/bench-js-couchdb-0"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.Image != "couchbench/manager:dev" || pod.ServiceAccountName != CPUReaderName || !*pod.AutomountServiceAccountToken {
		t.Errorf("image %s, service account %q, token %v: want the runner's image as the CPU reader, with its token", c.Image,
			pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
	}
	if !*pod.SecurityContext.RunAsNonRoot || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("security: pod %+v container %+v", pod.SecurityContext, c.SecurityContext)
	}
	if cpu := c.Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("100m")) != 0 || !equality.Semantic.DeepEqual(c.Resources.Requests, c.Resources.Limits) {
		t.Errorf("resources %+v: want the meter's own, not the runner's, and Guaranteed", c.Resources)
	}
	if job.Labels[LabelRunner] != MeterRunner || job.Labels[LabelStep] != string(benchv1.StepReads) || job.Labels[LabelQueryServer] != "js" {
		t.Errorf("labels %v", job.Labels)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity %+v: want it kept off the arm's CouchDB nodes", a)
	}
}

// Arms that share an existing CouchDB take turns in one Job per step: it names them all, in
// order, and carries no one arm's label.
func TestRunnerJobOfArmsTakingTurns(t *testing.T) {
	bench := provisioned()
	bench.Spec.CouchDB = benchv1.CouchDBTarget{Existing: &benchv1.ExistingCouchDB{URL: "http://couchdb:5984"}}
	bench.Spec.Runner.Parallelism = 2
	creds := benchv1.SecretKeys{Name: "couchdb-admin", UsernameKey: "u", PasswordKey: "p"}
	job := RunnerJob{Bench: bench, Step: benchv1.StepWrites, Part: 1, Deadline: time.Hour, Servers: []ArmServer{
		{Arm: "js", URL: "http://couchdb:5984", Credentials: creds}, {Arm: "erlang", URL: "http://couchdb:5984", Credentials: creds},
	}}.Job()
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if job.Name != "bench-js-erlang-writes-1" || !strings.Contains(args, "--arm js,erlang") || !strings.Contains(args, "--part 1 --parts 2") {
		t.Errorf("Job %s, args %q", job.Name, args)
	}
	if _, ok := job.Labels[LabelQueryServer]; ok || job.Labels[LabelStep] != "writes" {
		t.Errorf("labels %v: want the step's and no query server's", job.Labels)
	}
	if a := job.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		t.Errorf("an existing CouchDB has no pods of ours to keep away from: %+v", a.PodAntiAffinity)
	}
}

func TestResultsConfigMaps(t *testing.T) {
	bench := provisioned()
	cm := ResultsConfigMap(bench, map[string]string{ResultsMarkdownKey: "## tables", ResultsCSVKey: "a,b"})
	if cm.Name != "bench-results" || cm.Data[ResultsMarkdownKey] != "## tables" || cm.OwnerReferences[0].UID != bench.UID {
		t.Errorf("results ConfigMap %+v", cm)
	}
	doc := DocumentConfigMap(bench, "js", []byte{0x1f, 0x8b, 1})
	if doc.Name != "bench-results-js" || doc.Labels[benchv1.LabelResultsOf] != "bench" || doc.Labels[LabelQueryServer] != "js" ||
		string(doc.BinaryData[benchv1.DocumentKey]) != string([]byte{0x1f, 0x8b, 1}) || doc.OwnerReferences[0].UID != bench.UID {
		t.Errorf("document ConfigMap %+v", doc)
	}
}

// Builders are pure functions of the API: they must not link the measurement or results
// code (callers render and pass data in).
func TestBuildersImportOnlyTheAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/couchbench/couchbench/") && dep != "github.com/couchbench/couchbench/api/v1alpha1" &&
			dep != "github.com/couchbench/couchbench/internal/names" && dep != "github.com/couchbench/couchbench/internal/builders" {
			t.Errorf("builders depend on %s", dep)
		}
	}
}

func TestSpecConfigMapIsWhatTheRunnerReads(t *testing.T) {
	bench := provisioned()
	bench.Status.Phase = benchv1.PhaseRunning
	cm, err := SpecConfigMap(bench)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(cm.Data[SpecKey]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["kind"] != "CouchBenchmark" || doc["apiVersion"] != "bench.couchbench.io/v1alpha1" {
		t.Errorf("kind/apiVersion %v %v", doc["kind"], doc["apiVersion"])
	}
	if st, ok := doc["status"].(map[string]any); ok && len(st) > 0 {
		t.Errorf("the spec ConfigMap carries status %v", st)
	}
}

func schedule() *benchv1.CouchBenchmarkSchedule {
	return &benchv1.CouchBenchmarkSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-query-servers", Namespace: "ns", UID: types.UID("5c4ed"), Generation: 4, CreationTimestamp: metav1.Now()},
		Spec: benchv1.CouchBenchmarkScheduleSpec{
			Schedule: "0 2 * * *",
			Baseline: benchv1.ScheduleBaseline{Policy: benchv1.BaselinePreviousSuccessful, TolerancePercent: 7, Tolerances: map[string]int32{"reads": 20}},
			Template: benchv1.BenchmarkTemplate{
				Metadata: benchv1.TemplateMetadata{Labels: map[string]string{"team": "db"}, Annotations: map[string]string{"note": "x"}},
				Spec:     provisioned().Spec,
			},
		},
	}
}

func TestScheduledRun(t *testing.T) {
	s := schedule()
	slot := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	run := ScheduledRun(s, slot, "nightly-query-servers-202611220200", false, "spec.couchdb.provision.image", "main@sha1:0c6fe0d")
	if run.Name != "nightly-query-servers-202611230200" || run.Namespace != "ns" {
		t.Errorf("name %s/%s", run.Namespace, run.Name)
	}
	if run.Labels["team"] != "db" || run.Labels[benchv1.LabelSchedule] != "nightly-query-servers" || run.Labels[benchv1.LabelImmediate] != "" ||
		run.Annotations[benchv1.AnnotationScheduledAt] != "2026-11-23T02:00:00Z" || run.Annotations["note"] != "x" ||
		run.Annotations[benchv1.AnnotationScheduleGeneration] != "4" || run.Annotations[benchv1.AnnotationTemplateChanges] != "spec.couchdb.provision.image" ||
		run.Annotations[benchv1.AnnotationRevision] != "main@sha1:0c6fe0d" {
		t.Errorf("labels %v annotations %v", run.Labels, run.Annotations)
	}
	if !metav1.IsControlledBy(run, s) {
		t.Error("the run is not owned by its schedule")
	}
	if b := run.Spec.Baseline; b == nil || b.Benchmark != "nightly-query-servers-202611220200" || b.TolerancePercent != 7 || b.Tolerances["reads"] != 20 {
		t.Errorf("baseline %+v", run.Spec.Baseline)
	}
	if s.Spec.Template.Metadata.Labels[benchv1.LabelSchedule] != "" {
		t.Error("the template's labels were changed")
	}
	first := ScheduledRun(s, slot, "", true, "", "")
	if first.Spec.Baseline != nil || first.Labels[benchv1.LabelImmediate] != "true" {
		t.Errorf("a first, immediate run: baseline %+v labels %v", first.Spec.Baseline, first.Labels)
	}
	if _, ok := first.Annotations[benchv1.AnnotationTemplateChanges]; ok {
		t.Errorf("a first run's annotations %v name template changes", first.Annotations)
	}
}

// Long schedule names are cut; two adjacent start times must still name two runs.
func TestScheduledRunNamesStayApartWhenCut(t *testing.T) {
	s := schedule()
	s.Name = strings.Repeat("a-very-long-schedule-name", 4)
	slot := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	a, b := ScheduledRunName(s, slot), ScheduledRunName(s, slot.Add(time.Minute))
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("%q and %q", a, b)
	}
	if ScheduledRunName(s, slot) != a {
		t.Error("the name of a start time changed")
	}
}
