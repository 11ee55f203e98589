package controllers

// Health as GitOps tools read it, on every state the two reconcilers can leave a benchmark or
// a schedule in: each state is made by the reconcilers' own functions (no API server is
// needed for that; the envtest suites drive them into these states against a real one), then
// read by kstatus' own status.Compute (sigs.k8s.io/cli-utils, what Flux's health checks call)
// and by the Argo CD health check this repository ships
// (charts/couchbench-operator/files/argocd-health.lua, run by gopher-lua as Argo CD runs it).
// One table feeds both.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/testenv"
)

// healthState is an object as a reconciler left it, and how each tool must read it.
type healthState struct {
	name string
	obj  runtime.Object
	// kstatus is status.Compute's verdict; argo the Argo CD health status.
	kstatus status.Status
	argo    string
	// says is in both tools' message.
	says string
}

var healthNow = time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)

func benchmarkStates() []healthState {
	r := &CouchBenchmarkReconciler{Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(healthNow)}
	index := planStep{Arms: []string{"js"}, Step: benchv1.StepIndex}
	bench := func(change func(b *benchv1.CouchBenchmark)) *benchv1.CouchBenchmark {
		b := existingBenchmark("ns")
		b.Generation = 1
		if change != nil {
			b.Status.ObservedGeneration = 1
			b.Status.Phase = benchv1.PhaseRunning
			b.Status.Progress = &benchv1.Progress{QueryServer: "js", Step: benchv1.StepIndex, Percent: 37, Message: "js/small: 40% built"}
			change(b)
		}
		return b
	}
	return []healthState{
		{name: "created, not yet reconciled", obj: bench(nil), kstatus: status.CurrentStatus, argo: "Progressing", says: ""},
		{name: "preflight: a Secret missing", obj: bench(func(b *benchv1.CouchBenchmark) {
			b.Status.Phase, b.Status.Progress = benchv1.PhasePending, nil
			r.stall(b, "Preflight", &stepFailure{reasonCredentialsNotFound, "Secret couchdb-admin not found"})
		}), kstatus: status.FailedStatus, argo: "Degraded", says: "Secret couchdb-admin not found"},
		{name: "a step under way", obj: bench(func(b *benchv1.CouchBenchmark) {
			markProgressing(&b.Status.Conditions, b.Generation, healthNow, index)
		}), kstatus: status.InProgressStatus, argo: "Progressing", says: "query server js: index"},
		{name: "a step retrying", obj: bench(func(b *benchv1.CouchBenchmark) {
			r.retrying(b, reasonRetrying, "the chart repository answered 503")
		}), kstatus: status.InProgressStatus, argo: "Progressing", says: "answered 503"},
		{name: "a pod that cannot start", obj: bench(func(b *benchv1.CouchBenchmark) {
			r.stall(b, "index", &stepFailure{reasonImagePullFailed, "pod x cannot pull image couchdb:9"})
		}), kstatus: status.FailedStatus, argo: "Degraded", says: "cannot pull image couchdb:9"},
		{name: "succeeded", obj: bench(func(b *benchv1.CouchBenchmark) {
			b.Status.ResultsConfigMap = "bench-results"
			r.succeed(b)
		}), kstatus: status.CurrentStatus, argo: "Healthy", says: "the benchmark finished"},
		// A benchmark's verdict is its result, not its health: it ran as asked.
		{name: "succeeded, Regressed against its baseline", obj: bench(func(b *benchv1.CouchBenchmark) {
			r.succeed(b)
			setCondition(&b.Status.Conditions, b.Generation, healthNow, conditionRegressed, metav1.ConditionTrue, "Regressed", "indexing -12%")
		}), kstatus: status.CurrentStatus, argo: "Healthy", says: "the benchmark finished"},
		{name: "failed: a node lost mid-index", obj: bench(func(b *benchv1.CouchBenchmark) {
			r.fail(context.Background(), b, reasonNodeLost, "node kind-worker2 is not ready")
		}), kstatus: status.FailedStatus, argo: "Degraded", says: "node kind-worker2 is not ready"},
		{name: "being deleted", obj: bench(func(b *benchv1.CouchBenchmark) {
			markProgressing(&b.Status.Conditions, b.Generation, healthNow, index)
			b.DeletionTimestamp = &metav1.Time{Time: healthNow}
		}), kstatus: status.TerminatingStatus, argo: "Progressing", says: "deleted"},
	}
}

func scheduleStates() []healthState {
	r := &CouchBenchmarkScheduleReconciler{Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(healthNow)}
	run := func(name string, phase benchv1.Phase, verdict benchv1.Verdict, at time.Duration) benchv1.CouchBenchmark {
		b := existingBenchmark("ns")
		b.Name = name
		b.Annotations = map[string]string{benchv1.AnnotationScheduledAt: healthNow.Add(at).Format(time.RFC3339)}
		b.Status.Phase = phase
		if phase == benchv1.PhaseFailed {
			b.Status.Message = "failed in step index of query server js (37% of the run done): NodeLost: node kind-worker2 is not ready"
		}
		if verdict != "" {
			b.Status.Comparison = &benchv1.ComparisonSummary{Baseline: "nightly-1", Verdict: verdict, Summary: "indexing -12%"}
		}
		return *b
	}
	next := notice{reason: reasonScheduled, message: "next run at 2026-11-29T02:00:00Z"}
	// schedule concludes a schedule with these runs (newest last), as reconcileSchedule does.
	schedule := func(says notice, change func(s *benchv1.CouchBenchmarkSchedule), runs ...benchv1.CouchBenchmark) *benchv1.CouchBenchmarkSchedule {
		s := &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", Generation: 1}, Spec: everyMinute()}
		classified := classify(runs)
		classified.observe(s, healthNow)
		if change != nil {
			change(s)
		}
		r.conclude(s, classified, healthNow, says)
		return s
	}
	shifted := func(verdict benchv1.Verdict) func(s *benchv1.CouchBenchmarkSchedule) {
		return func(s *benchv1.CouchBenchmarkSchedule) {
			setCondition(&s.Status.Conditions, s.Generation, healthNow, conditionShifted, metav1.ConditionTrue, string(verdict),
				"js/small/indexing/builtin/changes_per_second from nightly-3 -15.2% (p 2.1e-06)")
		}
	}
	return []healthState{
		{name: "created, not yet reconciled", obj: &benchv1.CouchBenchmarkSchedule{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			kstatus: status.CurrentStatus, argo: "Progressing", says: ""},
		{name: "no run yet", obj: schedule(next, nil), kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		{name: "runs succeed", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseSucceeded, "", -2*time.Hour),
			run("nightly-2", benchv1.PhaseSucceeded, benchv1.VerdictUnchanged, -time.Hour)), kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		// Its runs under way are not the schedule's own reconciling: a GitOps tool waiting on
		// an every-minute schedule would never see it done.
		{name: "a run under way after a success", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseSucceeded, "", -time.Hour),
			run("nightly-2", benchv1.PhaseRunning, "", 0)), kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		{name: "the latest finished run failed", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseSucceeded, "", -time.Hour),
			run("nightly-2", benchv1.PhaseFailed, "", 0)), kstatus: status.FailedStatus, argo: "Degraded",
			says: "run nightly-2 failed: failed in step index of query server js (37% of the run done): NodeLost"},
		{name: "failed, the next run under way", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseFailed, "", -time.Hour),
			run("nightly-2", benchv1.PhaseRunning, "", 0)), kstatus: status.FailedStatus, argo: "Degraded", says: "run nightly-1 failed"},
		{name: "failed, then a run succeeded", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseFailed, "", -time.Hour),
			run("nightly-2", benchv1.PhaseSucceeded, "", 0)), kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		// One run's verdict is noisier than a shift: it shows in the Regressed condition only.
		{name: "the latest run Regressed against the previous", obj: schedule(next, nil, run("nightly-1", benchv1.PhaseSucceeded, "", -time.Hour),
			run("nightly-2", benchv1.PhaseSucceeded, benchv1.VerdictRegressed, 0)), kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		{name: "a metric's level shifted worse", obj: schedule(next, shifted(benchv1.VerdictRegressed), run("nightly-4", benchv1.PhaseSucceeded, "", 0)),
			kstatus: status.FailedStatus, argo: "Degraded", says: "got worse within the last 10 runs and stayed so: js/small/indexing/builtin/changes_per_second from nightly-3"},
		{name: "a metric's level shifted better", obj: schedule(next, shifted(benchv1.VerdictImproved), run("nightly-4", benchv1.PhaseSucceeded, "", 0)),
			kstatus: status.CurrentStatus, argo: "Healthy", says: "next run at"},
		{name: "a start time waits for the run under way", obj: schedule(notice{reason: reasonSkippedSchedule, message: "the run of 2026-11-28T02:01:00Z waits"}, nil,
			run("nightly-1", benchv1.PhaseRunning, "", 0)), kstatus: status.CurrentStatus, argo: "Healthy", says: "waits"},
		{name: "suspended", obj: schedule(notice{reason: reasonSuspended, message: "suspended: no new runs"}, func(s *benchv1.CouchBenchmarkSchedule) {
			s.Spec.Suspend = true
		}), kstatus: status.CurrentStatus, argo: "Suspended", says: "suspended"},
		{name: "suspended, its latest run failed", obj: schedule(notice{reason: reasonSuspended, message: "suspended: no new runs"}, func(s *benchv1.CouchBenchmarkSchedule) {
			s.Spec.Suspend = true
		}, run("nightly-1", benchv1.PhaseFailed, "", 0)), kstatus: status.FailedStatus, argo: "Degraded", says: "run nightly-1 failed"},
		{name: "an invalid schedule", obj: func() runtime.Object {
			s := schedule(next, nil)
			r.stallSchedule(s, healthNow, "spec.schedule or spec.timeZone: expected exactly five fields")
			return s
		}(), kstatus: status.FailedStatus, argo: "Degraded", says: "expected exactly five fields"},
		{name: "a spec edited, not yet observed", obj: func() runtime.Object {
			s := schedule(next, nil, run("nightly-1", benchv1.PhaseSucceeded, "", 0))
			s.Generation = 2
			return s
		}(), kstatus: status.InProgressStatus, argo: "Progressing", says: "generation"},
		{name: "being deleted", obj: func() runtime.Object {
			s := schedule(next, nil)
			s.DeletionTimestamp = &metav1.Time{Time: healthNow}
			return s
		}(), kstatus: status.TerminatingStatus, argo: "Progressing", says: "deleted"},
	}
}

func TestHealthAsKstatusAndArgoCDReadIt(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "charts", "couchbench-operator", "files", "argocd-health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for kind, states := range map[string][]healthState{"CouchBenchmark": benchmarkStates(), "CouchBenchmarkSchedule": scheduleStates()} {
		for _, st := range states {
			t.Run(kind+"/"+st.name, func(t *testing.T) {
				content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st.obj)
				if err != nil {
					t.Fatal(err)
				}
				u := &unstructured.Unstructured{Object: content}
				u.SetAPIVersion(benchv1.GroupVersion.String())
				u.SetKind(kind)
				res, err := status.Compute(u)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != st.kstatus || !strings.Contains(res.Message, st.says) && st.kstatus != status.CurrentStatus && st.kstatus != status.TerminatingStatus {
					t.Errorf("kstatus: %s %q, want %s saying %q; conditions %+v", res.Status, res.Message, st.kstatus, st.says, conditionsOf(st.obj))
				}
				health, message := argoHealth(t, string(script), u.Object)
				if health != st.argo || !strings.Contains(message, st.says) {
					t.Errorf("Argo CD: %s %q, want %s saying %q; conditions %+v", health, message, st.argo, st.says, conditionsOf(st.obj))
				}
			})
		}
	}
}

func conditionsOf(obj runtime.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *benchv1.CouchBenchmark:
		return o.Status.Conditions
	case *benchv1.CouchBenchmarkSchedule:
		return o.Status.Conditions
	}
	return nil
}

// argoHealth runs an Argo CD health script on obj as Argo CD does: obj a global table of the
// object's JSON, the script's returned table's status and message the health.
func argoHealth(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", luaValue(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("the health script: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health script returned %s, want a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// luaValue is v as Argo CD hands an object's JSON to Lua: objects and arrays as tables, numbers
// as numbers.
func luaValue(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, item := range v {
			t.RawSetString(k, luaValue(L, item))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, item := range v {
			t.Append(luaValue(L, item))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic(fmt.Sprintf("no Lua value for %T", v))
}

// The Argo CD health check in docs/gitops.md is the chart's file, for both kinds.
func TestDocsShowTheArgoCDHealthCheck(t *testing.T) {
	root := testenv.ModuleRoot(t)
	script, err := os.ReadFile(filepath.Join(root, "charts", "couchbench-operator", "files", "argocd-health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	var indented strings.Builder
	for line := range strings.Lines(string(script)) {
		if strings.TrimSpace(line) != "" {
			line = "    " + line
		}
		indented.WriteString(line)
	}
	for _, kind := range []string{"CouchBenchmark", "CouchBenchmarkSchedule"} {
		key := "resource.customizations.health.bench.couchbench.io_" + kind + ": |\n"
		i := strings.Index(string(doc), key)
		if i < 0 || !strings.HasPrefix(string(doc[i+len(key):]), indented.String()) {
			t.Errorf("docs/gitops.md lacks %q followed by charts/couchbench-operator/files/argocd-health.lua, indented 4 spaces", key)
		}
	}
}
