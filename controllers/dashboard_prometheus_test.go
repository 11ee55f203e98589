package controllers

// The Grafana dashboard the chart ships, evaluated by a real Prometheus: Debian's build of
// Prometheus 2.42, started by the test from $PROMETHEUS (make test provides it), scraping the
// manager's metrics registry as the manager's endpoint serves it. The metrics come from the
// reconcilers of both kinds running against envtest's real kube-apiserver: a schedule starts
// two runs with every workload, the harness plays kubelet for them, and the second is judged
// against the first. No CouchDB: the runners' results are the harness's documents and the
// recorded k6 summary.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dashboard"
	"github.com/couchbench/couchbench/internal/testenv"
)

// Every panel's query returns series that carry the labels its legend names, and every
// query variable lists the namespace, schedule and benchmarks that ran: a panel or variable
// added to the dashboard is checked here as it is.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	prom := startPrometheus(t, prometheusBinary(t))
	dash := readDashboard(t)

	spec := everyMinute()
	spec.Template.Spec = everyWorkload()
	sh := newSchedule(t, spec)
	ns := sh.schedule.Namespace
	h := newHarness(t)
	h.k6Summary = func(_ string, i int) []byte { return k6Summary(t, i, true) }
	create(t, credentials(ns))

	first := finishScheduledRun(t, sh, h, 1)
	// The counters and histograms must grow between two scrapes for rate and increase to
	// see them: the second run starts only once Prometheus has scraped the first's end.
	var finished dto.Metric
	if err := runsFinished.WithLabelValues(string(benchv1.PhaseSucceeded)).Write(&finished); err != nil {
		t.Fatal(err)
	}
	scraped := strconv.FormatFloat(finished.GetCounter().GetValue(), 'f', -1, 64)
	prom.eventually(t, "a scrape after the first run", func() (bool, string) {
		v := prom.query(t, `couchbench_runs_finished_total{phase="Succeeded"}`)
		return len(v) == 1 && v[0].Value[1] == scraped, fmt.Sprintf("%v, want the value %s", v, scraped)
	})
	second := finishScheduledRun(t, sh, h, 2)
	if second.Status.Comparison == nil || second.Status.Comparison.Baseline != first.Name {
		t.Fatalf("the second run's comparison %+v, want one against %s", second.Status.Comparison, first.Name)
	}

	queries, err := dash.Queries(map[string]string{"namespace": ns, "schedule": sh.schedule.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		t.Run(q.Panel, func(t *testing.T) {
			prom.eventually(t, q.Expr, func() (bool, string) {
				v := prom.query(t, q.Expr)
				return q.Answered(v), fmt.Sprintf("legend %q: %v", q.Legend, v)
			})
		})
	}

	want := map[string][]string{labelNamespace: {ns}, labelSchedule: {sh.schedule.Name}, labelBenchmark: {first.Name, second.Name}}
	vars, err := dash.Variables()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vars {
		if want[v.Label] == nil {
			t.Errorf("variable %s lists label %s, which this test has no values for", v.Name, v.Label)
			continue
		}
		t.Run("variable "+v.Name, func(t *testing.T) {
			prom.eventually(t, v.Selector, func() (bool, string) {
				got := prom.labelValues(t, v.Label, v.Selector)
				return containsAll(got, want[v.Label]), fmt.Sprintf("%v, want %v among them", got, want[v.Label])
			})
		})
	}
}

// everyWorkload is an existing-CouchDB benchmark that runs every workload, reads as well.
func everyWorkload() benchv1.CouchBenchmarkSpec {
	spec := existingBenchmark("").Spec
	spec.Workloads.Reads = &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 10, IterationsPerUser: ptr.To[int32](100)}
	return spec
}

// finishScheduledRun lets the schedule start its run of the minute m minutes after its creation's
// and drives that run to Succeeded.
func finishScheduledRun(t *testing.T, sh *scheduleHarness, h *harness, m int) *benchv1.CouchBenchmark {
	t.Helper()
	sh.at(time.Duration(m)*time.Minute + 5*time.Second)
	run := sh.runs()[sh.slotName(m)]
	if run == nil {
		t.Fatalf("the schedule started no run %s: %v", sh.slotName(m), keys(sh.runs()))
	}
	got := h.drive(run, 80)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("%s: phase %s, conditions %+v", run.Name, got.Status.Phase, got.Status.Conditions)
	}
	sh.at(time.Duration(m)*time.Minute + 10*time.Second) // the schedule sees its run's end
	return got
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func readDashboard(t *testing.T) *dashboard.Dashboard {
	t.Helper()
	d, err := dashboard.Read(filepath.Join(testenv.ModuleRoot(t), dashboard.Path))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// prometheusBinary is $PROMETHEUS, relative paths taken from the module's root as make
// passes them.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PROMETHEUS")
	if path == "" {
		t.Fatal("PROMETHEUS is not set: run this test through make test, which provides Debian's prometheus (hack/promtool.sh) and sets it")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(testenv.ModuleRoot(t), path)
	}
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		t.Fatalf("PROMETHEUS=%s is not an executable (%v): run this test through make test", path, err)
	}
	return path
}

// promServer is a Prometheus the test started, scraping the manager's registry every second.
type promServer struct {
	url string
}

func startPrometheus(t *testing.T, binary string) *promServer {
	t.Helper()
	target := httptest.NewServer(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(target.Close)
	dir := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: couchbench-operator
  honor_labels: true
  static_configs: [{targets: [%q]}]
`, strings.TrimPrefix(target.URL, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(binary, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if err := <-exited; t.Failed() {
			t.Logf("prometheus (%v), its log:\n%s", err, logs.String())
		}
	})
	p := &promServer{url: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus is not ready after a minute")
		}
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// eventually polls ok until it holds, a minute at most: Prometheus has the newest values only
// after its next scrape.
func (p *promServer) eventually(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		held, got := ok()
		if held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after a minute: %s", what, got)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// query is the instant vector of expr now; a query Prometheus refuses fails the test.
func (p *promServer) query(t *testing.T, expr string) []dashboard.Series {
	t.Helper()
	var v struct {
		ResultType string             `json:"resultType"`
		Result     []dashboard.Series `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &v)
	if v.ResultType != "vector" {
		t.Fatalf("%s: result type %q, want vector", expr, v.ResultType)
	}
	return v.Result
}

// labelValues is the label's values among the series selector matches, as Grafana's
// label_values(selector, label) asks for them.
func (p *promServer) labelValues(t *testing.T, label, selector string) []string {
	t.Helper()
	var v []string
	p.get(t, "/api/v1/label/"+label+"/values", url.Values{"match[]": {selector}}, &v)
	return v
}

// get decodes the data of the API's answer into data.
func (p *promServer) get(t *testing.T, path string, params url.Values, data any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s %v: %v", path, params, err)
	}
	if body.Status != "success" {
		t.Fatalf("%s %v: %s", path, params, body.Error)
	}
	if err := json.Unmarshal(body.Data, data); err != nil {
		t.Fatalf("%s %v: %v", path, params, err)
	}
}
