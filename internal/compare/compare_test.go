package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// testSpec is a benchmark as the API server stores it, defaults applied.
func testSpec() benchv1.CouchBenchmarkSpec {
	return benchv1.CouchBenchmarkSpec{
		CouchDB: benchv1.CouchDBTarget{Provision: &benchv1.ProvisionedCouchDB{
			ClusterSize: 1, Image: benchv1.ImageSource{Repository: "couchdb", Tag: "3.4.3"}}},
		QueryServers: []benchv1.QueryServer{
			{Name: "js", Language: "javascript"},
			{Name: "qjs", Preset: benchv1.PresetQuickJS, Language: "javascript", Engine: benchv1.EngineQuickJS},
		},
		Dataset: benchv1.Dataset{Documents: 20000, Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}},
			Seed: 1, BatchSize: 1000, Concurrency: 4, Shards: 2},
		Workloads: benchv1.Workloads{
			Indexing: &benchv1.IndexingWorkload{Reducers: []benchv1.Reducer{benchv1.ReducerBuiltin, benchv1.ReducerCustom},
				Repetitions: 5, ViewCompaction: benchv1.ViewCompactionPaused},
			ViewReads: &benchv1.ViewReadsWorkload{Views: []benchv1.ViewReadKind{benchv1.ViewEmitNull}, Repetitions: 5},
			Writes:    &benchv1.WritesWorkload{Duration: "10s", BulkBatchSizes: []int32{100}},
		},
		K6: benchv1.K6Settings{Image: "grafana/k6:1.8.1", Parallelism: 1}, Teardown: benchv1.TeardownAlways, Timeout: "2h",
	}
}

// armMeasures is what one arm measured: indexing docs/s per run of each reducer, the
// emitNull view's full-read seconds per read, and one writes mode's docs/s (one sample).
type armMeasures struct {
	builtin, custom, readSeconds []float64
	writes                       float64
}

// run is a run's documents as the operator stores them, one per arm, on CouchDB version.
func run(name string, spec benchv1.CouchBenchmarkSpec, version string, arms map[string]armMeasures) []*results.Document {
	var docs []*results.Document
	for _, qs := range spec.QueryServers {
		m, ok := arms[qs.Name]
		if !ok {
			continue
		}
		p := results.Profile{Profile: "small", Shards: 2, Replicas: 1}
		for _, red := range []struct {
			name  string
			rates []float64
		}{{"builtin", m.builtin}, {"custom", m.custom}} {
			s := results.IndexingSeries{Reducer: red.name, ViewCompaction: "paused"}
			for _, r := range red.rates {
				s.Runs = append(s.Runs, measured.IndexBuild{Documents: 20000, DocsPerSecond: r})
			}
			p.Indexing = append(p.Indexing, s)
		}
		vr := measured.ViewReads{View: benchv1.ViewEmitNull}
		for _, secs := range m.readSeconds {
			vr.Reads = append(vr.Reads, measured.ViewRead{Rows: 20000, Elapsed: time.Duration(secs * float64(time.Second))})
		}
		p.ViewReads = []measured.ViewReads{vr}
		p.Writes = []measured.Write{{Mode: "bulk-100", Created: int64(10 * m.writes), Elapsed: 10 * time.Second}}
		docs = append(docs, &results.Document{
			SchemaVersion: results.SchemaVersion, Benchmark: name, Spec: spec,
			Server: results.Provenance{URL: "http://" + name + "-" + qs.Name + ":5984", Vendor: "The Apache Software Foundation",
				Version: version, Nodes: []string{"couchdb@" + name + "-" + qs.Name}},
			Arms: []results.Arm{{QueryServer: qs.Name, Language: "javascript", Profiles: []results.Profile{p}}},
		})
	}
	return docs
}

// baselineArms are tight runs (1% CV) of both arms.
func baselineArms(r *rand.Rand) map[string]armMeasures {
	return map[string]armMeasures{
		"js":  {builtin: samples(r, 5, 10000, 0.01), custom: samples(r, 5, 5000, 0.01), readSeconds: samples(r, 5, 0.5, 0.01), writes: 1000},
		"qjs": {builtin: samples(r, 5, 8000, 0.01), custom: samples(r, 5, 3000, 0.01), readSeconds: samples(r, 5, 0.6, 0.01), writes: 900},
	}
}

func verdicts(c Comparison) map[string]Verdict {
	out := map[string]Verdict{}
	for _, r := range c.Rows {
		out[r.QueryServer+"/"+r.Workload+"/"+r.Variant] = r.Verdict
	}
	return out
}

func TestCompareJudgesEachMetricInItsDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	base := run("base", testSpec(), "3.4.3", baselineArms(r))
	cur := run("cur", testSpec(), "3.4.3", map[string]armMeasures{
		// builtin 20% lower; view reads 30% slower (a time: higher is worse).
		"js": {builtin: samples(r, 5, 8000, 0.01), custom: samples(r, 5, 5000, 0.01), readSeconds: samples(r, 5, 0.65, 0.01), writes: 500},
		// custom 25% higher; view reads 25% faster.
		"qjs": {builtin: samples(r, 5, 8000, 0.01), custom: samples(r, 5, 3750, 0.01), readSeconds: samples(r, 5, 0.45, 0.01), writes: 900},
	})
	c, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{
		"js/indexing/builtin": Regressed, "js/indexing/custom": Unchanged, "js/viewReads/emitNull": Regressed,
		// One sample a side, however large the drop.
		"js/writes/bulk-100":   Inconclusive,
		"qjs/indexing/builtin": Unchanged, "qjs/indexing/custom": Improved, "qjs/viewReads/emitNull": Improved,
		"qjs/writes/bulk-100": Inconclusive,
		// qjs against js, this run's ratio against the baseline's: 25% higher where js fell, 25%
		// higher where qjs rose, 0.75 / 1.3 of the time per read.
		"qjs:js/indexing/builtin": Improved, "qjs:js/indexing/custom": Improved, "qjs:js/viewReads/emitNull": Improved,
		// One write each, and no run-to-run spread given: nothing to judge it by.
		"qjs:js/writes/bulk-100": Inconclusive,
	}
	if got := verdicts(c); !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts\n got %v\nwant %v", got, want)
	}
	if c.Verdict != Regressed || len(c.Refused) != 0 || len(c.Differences) != 0 || len(c.Unmatched) != 0 {
		t.Errorf("comparison %s, refused %v, differences %v, unmatched %v", c.Verdict, c.Refused, c.Differences, c.Unmatched)
	}
	// Rows follow the spec's arms, then the metrics' order.
	var order []string
	for _, row := range c.Rows {
		order = append(order, row.QueryServer+"/"+row.Workload+"/"+row.Variant)
	}
	if wantOrder := []string{"js/indexing/builtin", "js/indexing/custom", "js/viewReads/emitNull", "js/writes/bulk-100",
		"qjs/indexing/builtin", "qjs/indexing/custom", "qjs/viewReads/emitNull", "qjs/writes/bulk-100",
		"qjs:js/indexing/builtin", "qjs:js/indexing/custom", "qjs:js/viewReads/emitNull", "qjs:js/writes/bulk-100"}; !slices.Equal(order, wantOrder) {
		t.Errorf("row order %v", order)
	}
	builtin, reads, w := c.Rows[0], c.Rows[2], c.Rows[3]
	if builtin.Better != "higher" || reads.Better != "lower" || builtin.NBaseline != 5 || builtin.NCurrent != 5 ||
		builtin.TolerancePercent != DefaultTolerancePercent || builtin.Interval == nil || builtin.Interval.HighPercent >= -5 ||
		math.Abs(*builtin.DeltaPercent+20) > 3 || builtin.Reason != "" {
		t.Errorf("builtin row %+v, interval %+v; reads row %+v", builtin, builtin.Interval, reads)
	}
	if w.Interval != nil || !strings.Contains(w.Reason, "1 and 1 runs") || math.Abs(*w.DeltaPercent+50) > 1e-9 {
		t.Errorf("writes row %+v", w)
	}
	summary := c.Summary()
	if c.Judged != 9 || c.ConfidencePercent != ConfidencePercent || c.Rows[8].Reference != "js" {
		t.Errorf("%d rows judged together at %v%%, ratio row %+v: want 9 at %v%%", c.Judged, c.ConfidencePercent, c.Rows[8], ConfidencePercent)
	}
	if !strings.HasPrefix(summary, "2 regressed, 5 improved, 2 unchanged, 3 inconclusive (9 judged together at 99%): indexing js/small/builtin changes_per_second -") ||
		!strings.Contains(summary, "viewReads js/small/emitNull seconds_per_read +") || !strings.Contains(summary, " and 4 more") {
		t.Errorf("summary %q", summary)
	}
}

func TestCompareRefusesOtherDatasetsAndWorkloads(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	spec := testSpec()
	spec.Dataset.Documents = 100000
	spec.Workloads.Indexing.Repetitions = 3
	spec.Workloads.Writes = nil
	c, err := Compare(run("base", testSpec(), "3.4.3", baselineArms(r)), run("cur", spec, "3.4.3", baselineArms(r)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.dataset.documents: 20000 vs 100000",
		"spec.workloads.indexing.repetitions: 5 vs 3",
		`spec.workloads.writes: {"bulkBatchSizes":[100],"duration":"10s"} vs unset`,
	}
	if !slices.Equal(c.Refused, want) {
		t.Errorf("refused\n got %q\nwant %q", c.Refused, want)
	}
	if c.Verdict != Inconclusive || c.Rows != nil {
		t.Errorf("a refused comparison has verdict %s and %d rows", c.Verdict, len(c.Rows))
	}
	if s := c.Summary(); s != "not comparable with baseline base: "+strings.Join(want, "; ") {
		t.Errorf("summary %q", s)
	}

	if c, _ := Compare(nil, run("cur", spec, "3.4.3", baselineArms(r)), Options{}); len(c.Refused) != 1 ||
		!strings.Contains(c.Refused[0], "0 in the baseline") {
		t.Errorf("no baseline documents: refused %v", c.Refused)
	}
}

func TestCompareListsWhatElseDiffers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	baseSpec, curSpec := testSpec(), testSpec()
	baseSpec.Workloads.Reads = &benchv1.ReadsWorkload{Scenario: benchv1.ScenarioGetDocument, VirtualUsers: 10,
		Thresholds: []benchv1.Threshold{{Metric: "http_req_duration", Condition: "p(95)<500"}}}
	curSpec.Workloads.Reads = baseSpec.Workloads.Reads.DeepCopy()
	curSpec.Workloads.Reads.Thresholds[0].Condition = "p(95)<200"
	curSpec.CouchDB.Provision.Image.Tag = "3.5.1"
	curSpec.CouchDB.Provision.ClusterSize = 3
	curSpec.QueryServers[0].Engine = benchv1.EngineSpiderMonkey
	curSpec.K6.Parallelism = 2
	// Naming the baseline is not a difference in how the run ran: it is not listed.
	curSpec.Baseline = &benchv1.Baseline{Benchmark: "base", TolerancePercent: 5}
	base := run("base", baseSpec, "3.4.3", baselineArms(r))
	cur := run("cur", curSpec, "3.5.1", baselineArms(r))
	for _, d := range cur {
		d.Server.Nodes = []string{"a", "b", "c"}
	}
	base[0].Arms[0].Runtime = &results.Runtime{Language: "javascript", Engine: "spidermonkey", Version: "128.0"}
	cur[0].Arms[0].Runtime = &results.Runtime{Language: "javascript", Engine: "spidermonkey", Version: "140.0"}

	c, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.couchdb.provision.clusterSize: 1 vs 3",
		"spec.couchdb.provision.image.tag: 3.4.3 vs 3.5.1",
		"spec.k6.parallelism: 1 vs 2",
		"spec.queryServers[js].engine: unset vs spidermonkey",
		// Thresholds judge the load; they do not refuse the comparison.
		`spec.workloads.reads.thresholds: [{"condition":"p(95)<500","metric":"http_req_duration"}] vs [{"condition":"p(95)<200","metric":"http_req_duration"}]`,
		"arms[js, qjs].nodes: 1 vs 3",
		"arms[js].runtime.version: 128.0 vs 140.0",
		"arms[js, qjs].version: 3.4.3 vs 3.5.1",
	}
	if !slices.Equal(c.Differences, want) {
		t.Errorf("differences\n got %q\nwant %q", c.Differences, want)
	}
	if len(c.Refused) != 0 || len(c.Rows) != 12 {
		t.Errorf("refused %v, %d rows", c.Refused, len(c.Rows))
	}
	if s := c.Summary(); !strings.HasSuffix(s, "; also differs: spec.couchdb.provision.clusterSize: 1 vs 3 and 7 more") {
		t.Errorf("summary %q", s)
	}
}

func TestCompareMatchesArmsByName(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	curSpec := testSpec()
	curSpec.QueryServers[1] = benchv1.QueryServer{Name: "js2", Language: "javascript"}
	arms := baselineArms(r)
	arms["js2"] = arms["qjs"]
	c, err := Compare(run("base", testSpec(), "3.4.3", baselineArms(r)), run("cur", curSpec, "3.4.3", arms), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Refused) != 0 || len(c.Rows) != 4 || c.Rows[0].QueryServer != "js" || c.Rows[3].QueryServer != "js" {
		t.Fatalf("refused %v; rows %+v", c.Refused, c.Rows)
	}
	for _, want := range []string{
		`spec.queryServers[js2]: unset vs {"language":"javascript","name":"js2"}`,
		`spec.queryServers[qjs]: {"engine":"quickjs","language":"javascript","name":"qjs","preset":"quickjs"} vs unset`,
	} {
		if !slices.Contains(c.Differences, want) {
			t.Errorf("differences %q lack %q", c.Differences, want)
		}
	}
	if len(c.Unmatched) != 8 || c.Unmatched[0] != "only in the baseline: qjs/small/indexing/builtin/changes_per_second" ||
		c.Unmatched[4] != "only in the current run: js2/small/indexing/builtin/changes_per_second" {
		t.Errorf("unmatched %q", c.Unmatched)
	}
}

func TestTolerances(t *testing.T) {
	opts := Options{TolerancePercent: 8, Tolerances: map[string]float64{
		"indexing/changes_per_second": 15, "changes_per_second": 12, "viewReads": 3, "p95_ms": 0}}
	for _, c := range []struct {
		m    results.Metric
		want float64
	}{
		{results.Metric{Workload: "indexing", Name: "changes_per_second"}, 15}, // workload/name beats name
		{results.Metric{Workload: "other", Name: "changes_per_second"}, 12},    // name beats workload
		{results.Metric{Workload: "viewReads", Name: "seconds_per_read"}, 3},
		{results.Metric{Workload: "reads", Name: "p95_ms"}, 0}, // an explicit 0 is kept
		{results.Metric{Workload: "writes", Name: "docs_per_second"}, 8},
	} {
		if got := opts.tolerance(c.m); got != c.want {
			t.Errorf("tolerance of %s/%s = %v, want %v", c.m.Workload, c.m.Name, got, c.want)
		}
	}
	if got := (Options{}).tolerance(results.Metric{Name: "p95_ms"}); got != DefaultTolerancePercent {
		t.Errorf("default tolerance %v", got)
	}

	// A 10% drop at 1% CV regresses at 5%, not at 15%.
	r := rand.New(rand.NewPCG(8, 8))
	base := run("base", testSpec(), "3.4.3", baselineArms(r))
	arms := baselineArms(r)
	js := arms["js"]
	js.builtin = samples(r, 5, 9000, 0.01)
	arms["js"] = js
	cur := run("cur", testSpec(), "3.4.3", arms)
	for _, c := range []struct {
		opts Options
		want Verdict
	}{{Options{}, Regressed}, {Options{Tolerances: map[string]float64{"indexing": 15}}, Unchanged}} {
		got, err := Compare(base, cur, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdicts(got)["js/indexing/builtin"]; v != c.want {
			t.Errorf("with %+v: %s, want %s (row %+v)", c.opts, v, c.want, got.Rows[0])
		}
	}

	for _, bad := range []Options{{TolerancePercent: -1}, {Tolerances: map[string]float64{"p95_ms": math.NaN()}}} {
		if _, err := Compare(base, cur, bad); err == nil {
			t.Errorf("options %+v accepted", bad)
		}
	}
}

func TestComparisonIsDeterministicAndEncodes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	base := run("base", testSpec(), "3.4.3", baselineArms(r))
	cur := run("cur", testSpec(), "3.5.1", baselineArms(r))
	c, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The operator lists per-arm documents in no particular order.
	reversed := func(docs []*results.Document) []*results.Document {
		out := slices.Clone(docs)
		slices.Reverse(out)
		return out
	}
	reordered, err := Compare(reversed(base), reversed(cur), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, reordered) {
		t.Errorf("documents in another order give another comparison:\n%+v\n%+v", c, reordered)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, back) {
		t.Errorf("JSON round trip changed the comparison:\n%s", data)
	}
}

func TestTablesRender(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	base := run("base", testSpec(), "3.4.3", baselineArms(r))
	arms := baselineArms(r)
	js := arms["js"]
	js.builtin = samples(r, 5, 8000, 0.01)
	arms["js"] = js
	c, err := Compare(base, run("cur", testSpec(), "3.5.1", arms), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, c.Tables()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"### cur against baseline base: Regressed",
		"| Option | Profile | Workload  | Variant  | Metric             | Baseline median | Current median | Medians' change | Change | Interval (level)  ",
		"The 9 judged rows hold 99% together (Holm)",
		"### The arms' ratios to the reference arm, against the baseline's",
		"| qjs / js | small   | indexing  | builtin  | changes_per_second |",
		"Inconclusive: 1 and 1 runs: 3 a side are needed",
		"### What else differs (baseline vs current)",
		"arms[js, qjs].version: 3.4.3 vs 3.5.1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	var builtin []string
	for _, line := range strings.Split(out, "\n") {
		if cells := strings.Fields(strings.ReplaceAll(line, "|", " ")); len(cells) > 3 && cells[0] == "js" && cells[3] == "builtin" {
			builtin = cells
		}
	}
	// Option, profile, workload, variant, metric, baseline, current, medians' change, change, interval (two words) and
	// its level, verdict, between runs, MDE, n.
	if len(builtin) != 16 || builtin[12] != "Regressed" || !strings.HasPrefix(builtin[7], "-") || !strings.HasPrefix(builtin[8], "-") ||
		!strings.HasPrefix(builtin[11], "(99.") || builtin[13] != "-" || !strings.HasSuffix(builtin[14], "%") || builtin[15] != "5/5" {
		t.Errorf("builtin row %q", builtin)
	}

	spec := testSpec()
	spec.Dataset.Shards = 1
	refused, err := Compare(base, run("cur", spec, "3.4.3", arms), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tables := refused.Tables()
	if len(tables) != 1 || tables[0].Title != "Not comparable with baseline base" ||
		!reflect.DeepEqual(tables[0].Rows, [][]string{{"spec.dataset.shards: 2 vs 1"}}) {
		t.Errorf("refused tables %+v", tables)
	}
}

func TestRefusalsOfSpecs(t *testing.T) {
	base := benchv1.CouchBenchmarkSpec{Dataset: benchv1.Dataset{Documents: 100000}, Workloads: benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Repetitions: 3}}}
	same := *base.DeepCopy()
	same.Timeout = "3h" // not the dataset or the workloads: comparable
	if r, err := Refusals(base, same); err != nil || len(r) != 0 {
		t.Errorf("comparable specs refused: %v, %v", r, err)
	}
	other := *base.DeepCopy()
	other.Dataset.Documents = 20000
	if r, err := Refusals(base, other); err != nil || len(r) != 1 || !strings.Contains(r[0], "spec.dataset.documents: 100000 vs 20000") {
		t.Errorf("refusals %v, %v", r, err)
	}
}
