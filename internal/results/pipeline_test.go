package results

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
)

func k6Fixture(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/k6-summary-two-thresholds.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseK6Summary(t *testing.T) {
	r, err := ParseK6Summary(k6Fixture(t), "0:1", []string{
		"http_req_duration{couchbench:load}|p(95)<1",
		"http_req_failed{couchbench:load}|rate<0.5", // not in this summary: not judged
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 10 || r.Failed != 0 || r.SetupMs != 12 || r.Segment != "0:1" {
		t.Errorf("parsed %+v", r)
	}
	// The load's time is the test run's without setup.
	if want := 26.943166 - 12; r.DurationMs < want-1e-9 || r.DurationMs > want+1e-9 {
		t.Errorf("duration %v ms, want %v", r.DurationMs, want)
	}
	if r.Milliseconds.P95 <= r.Milliseconds.P50 || r.Milliseconds.Max < r.Milliseconds.P99 {
		t.Errorf("latencies %+v", r.Milliseconds)
	}
	// Only the user's thresholds count; the script's own (max>=0) do not.
	if !reflect.DeepEqual(r.Thresholds, map[string]bool{"http_req_duration{couchbench:load}: p(95)<1": false}) {
		t.Errorf("thresholds %v", r.Thresholds)
	}
	// A metered round's teardown, which marks the load's end for the meter, is not the load's
	// time either: the script counts it.
	var summary map[string]any
	if err := json.Unmarshal(k6Fixture(t), &summary); err != nil {
		t.Fatal(err)
	}
	summary["metrics"].(map[string]any)["couchbench_teardown_ms"] = map[string]any{"values": map[string]any{"count": 4.5}}
	metered, err := json.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ParseK6Summary(metered, "0:1", nil); err != nil || math.Abs(r.DurationMs-(26.943166-12-4.5)) > 1e-9 {
		t.Errorf("duration %v ms (%v), want the test run's without setup and teardown", r.DurationMs, err)
	}
	if _, err := ParseK6Summary([]byte(`{"metrics":{}}`), "0:1", nil); err == nil || !strings.Contains(err.Error(), "http_reqs") {
		t.Errorf("a summary without the load's metrics: %v", err)
	}
	if _, err := ParseK6Summary([]byte("OOMKilled"), "0:1", nil); err == nil {
		t.Error("not JSON was accepted")
	}
}

func readsDocument(runners ...ReadsRunner) *Document {
	return &Document{SchemaVersion: SchemaVersion, Benchmark: "b", Arms: []Arm{{QueryServer: "js",
		Profiles: []Profile{{Profile: "small", Reads: &Reads{Scenario: "getDocument", Runners: runners}}}}}}
}

func TestAggregateAddsRunnersAndBoundsPercentiles(t *testing.T) {
	a := ReadsRunner{Segment: "0:1/2", Requests: 201, DurationMs: 2001.67, Milliseconds: Latencies{P50: 2, P95: 9, P99: 20},
		Thresholds: map[string]bool{"http_req_failed{couchbench:load}: rate<0.01": true}}
	b := ReadsRunner{Segment: "1/2:1", Requests: 200, Failed: 4, DurationMs: 1990, Milliseconds: Latencies{P50: 3, P95: 8, P99: 30},
		Thresholds: map[string]bool{"http_req_failed{couchbench:load}: rate<0.01": false}}
	s := Aggregate(readsDocument(a, b))
	r := s.Results[0].Reads
	// 401 requests over the longer runner's 2.00167 s.
	if r.Requests != 401 || r.RequestsPerSecond != 200 || r.ErrorRate != "1.00%" {
		t.Errorf("counts %+v", r)
	}
	if r.P50 != "3ms" || r.P95 != "9ms" || r.P99 != "30ms" || !r.PercentilesUpperBound || len(r.Runners) != 2 {
		t.Errorf("percentiles %+v: want each the larger runner's, marked an upper bound", r)
	}
	if s.ReadP95 != "9ms" || s.Thresholds == nil || s.Thresholds.Passed ||
		!reflect.DeepEqual(s.Thresholds.Failed, []string{"query server js: http_req_failed{couchbench:load}: rate<0.01"}) {
		t.Errorf("read p95 %q, thresholds %+v", s.ReadP95, s.Thresholds)
	}
	one := Aggregate(readsDocument(a)).Results[0].Reads
	if one.PercentilesUpperBound || len(one.Runners) != 0 || one.P95 != "9ms" || one.ThresholdsPassed == nil || !*one.ThresholdsPassed {
		t.Errorf("one runner: exact percentiles and its verdict, got %+v", one)
	}
	if none := Aggregate(readsDocument(ReadsRunner{Requests: 5, DurationMs: 100})); none.Thresholds != nil {
		t.Errorf("no threshold judged, verdict %+v", none.Thresholds)
	}
}

func TestAggregateHeadlines(t *testing.T) {
	d := sampleDocument(2)
	d.Arms[1].Profiles[0].Indexing[0].Runs[1].DocsPerSecond = 12000 // arm1 small builtin: median of 10000, 12000, 9800
	d.Server = Provenance{Vendor: "The Apache Software Foundation", Version: "3.4.3", Nodes: []string{"a", "b", "c"}}
	s := Aggregate(d)
	if len(s.Results) != 2 || s.BestChangesPerSecond == nil || *s.BestChangesPerSecond != 10000 {
		t.Errorf("best %v over %d arms", s.BestChangesPerSecond, len(s.Results))
	}
	if s.Server != "The Apache Software Foundation 3.4.3, 3 node(s)" || s.ReadP95 != "" || s.Thresholds != nil {
		t.Errorf("summary %+v", s)
	}
	if empty := Aggregate(); empty.BestChangesPerSecond != nil || len(empty.Results) != 0 {
		t.Errorf("no documents: %+v", empty)
	}
}

// The operator merges one step's document at a time; merging a step again changes nothing.
func TestMergeStepByStepIsIdempotent(t *testing.T) {
	full := sampleDocument(1)
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	step := func(f func(p *Profile), name benchv1.Step, minute int) *Document {
		d := &Document{SchemaVersion: SchemaVersion, Benchmark: "b", StartedAt: at.Add(time.Duration(minute) * time.Minute),
			FinishedAt: at.Add(time.Duration(minute+1) * time.Minute), Server: full.Server,
			Steps: []StepRecord{{QueryServer: "arm0", Step: name}}}
		arm := Arm{QueryServer: "arm0", Language: "javascript"}
		for _, fp := range full.Arms[0].Profiles {
			p := Profile{Profile: fp.Profile, DB: fp.DB}
			f(&p)
			arm.Profiles = append(arm.Profiles, p)
		}
		d.Arms = []Arm{arm}
		return d
	}
	profile := func(p *Profile) Profile {
		for _, fp := range full.Arms[0].Profiles {
			if fp.Profile == p.Profile {
				return fp
			}
		}
		t.Fatal(p.Profile)
		return Profile{}
	}
	steps := []*Document{
		step(func(p *Profile) {
			f := profile(p)
			p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = f.Seeding, f.SeedingDocsPerSecond, f.SeedingMBPerSecond
		}, benchv1.StepSeed, 0),
		step(func(p *Profile) { p.Indexing = profile(p).Indexing }, benchv1.StepIndex, 2),
		step(func(p *Profile) { p.ViewReads = profile(p).ViewReads }, benchv1.StepViews, 4),
		step(func(p *Profile) { p.Writes = profile(p).Writes }, benchv1.StepWrites, 6),
	}
	var stored Document
	for _, s := range steps {
		Merge(&stored, s)
	}
	once, _ := json.Marshal(stored)
	Merge(&stored, steps[1])
	Merge(&stored, steps[3])
	twice, _ := json.Marshal(stored)
	if !bytes.Equal(once, twice) {
		t.Error("merging a step again changed the document")
	}
	if !reflect.DeepEqual(Aggregate(&stored).Results, Aggregate(full).Results) {
		t.Errorf("step by step %+v\n\nall at once %+v", Aggregate(&stored).Results, Aggregate(full).Results)
	}
	if len(stored.Steps) != 4 || !stored.StartedAt.Equal(at) || !stored.FinishedAt.Equal(at.Add(7*time.Minute)) {
		t.Errorf("steps %d, %s to %s", len(stored.Steps), stored.StartedAt, stored.FinishedAt)
	}
}

func TestEncodeDecodeAndReadConfigMaps(t *testing.T) {
	d := sampleDocument(1)
	data, err := Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil || !reflect.DeepEqual(Aggregate(back), Aggregate(d)) {
		t.Fatalf("round trip: %v", err)
	}
	other := sampleDocument(2)
	other.Arms = other.Arms[1:]
	otherData, _ := Encode(other)
	// kubectl get cm -l ... -o json: a List of ConfigMaps, binaryData base64 in JSON.
	list, _ := json.Marshal(map[string]any{"kind": "List", "items": []any{
		map[string]any{"kind": "ConfigMap", "binaryData": map[string][]byte{benchv1.DocumentKey: data}},
		map[string]any{"kind": "ConfigMap", "data": map[string]string{"results.md": "tables"}},
		map[string]any{"kind": "ConfigMap", "binaryData": map[string][]byte{benchv1.DocumentKey: otherData}},
	}})
	docs, err := ReadDocuments(list, "stdin")
	if err != nil || len(docs) != 2 {
		t.Fatalf("ReadDocuments(List) = %d documents, %v", len(docs), err)
	}
	if got := NewReport(docs...).Results; len(got) != 2 || got[0].QueryServer != "arm0" || got[1].QueryServer != "arm1" {
		t.Errorf("report of the list: %+v", got)
	}
	plain, _ := json.Marshal(d)
	if docs, err := ReadDocuments(plain, "r.json"); err != nil || len(docs) != 1 {
		t.Errorf("a plain document: %d, %v", len(docs), err)
	}
	empty, _ := json.Marshal(map[string]any{"kind": "List", "items": []any{}})
	if _, err := ReadDocuments(empty, "stdin"); err == nil || !strings.Contains(err.Error(), benchv1.LabelResultsOf) {
		t.Errorf("a list without documents: %v; want the label to list them by", err)
	}
}

// kubectl get cm ... -o yaml: the same ConfigMaps in YAML, as kubectl's own printer
// (cli-runtime's YAMLPrinter) writes them: a List, one ConfigMap, or several YAML documents
// (what kubectl prints for several objects that are not a List, e.g. with --local).
func TestReadConfigMapsInYAML(t *testing.T) {
	one, two := sampleDocument(2), sampleDocument(2)
	one.Arms, two.Arms = one.Arms[:1], two.Arms[1:]
	configMap := func(name string, d *Document) *corev1.ConfigMap {
		data, err := Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{benchv1.LabelResultsOf: "b"}}, BinaryData: map[string][]byte{benchv1.DocumentKey: data}}
	}
	tables := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "b-results"},
		Data: map[string]string{"results.md": "## b"}}
	print := func(objs ...runtime.Object) []byte {
		var buf bytes.Buffer
		p := &printers.YAMLPrinter{}
		for _, o := range objs {
			if err := p.PrintObj(o, &buf); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{
		{Object: configMap("b-results-arm0", one)}, {Object: tables}, {Object: configMap("b-results-arm1", two)}}}
	want := Aggregate(sampleDocument(2)).Results
	for name, data := range map[string][]byte{
		"a List":             print(list),
		"two YAML documents": print(configMap("b-results-arm0", one), configMap("b-results-arm1", two)),
	} {
		if !bytes.HasPrefix(data, []byte("apiVersion: v1\n")) && !bytes.HasPrefix(data, []byte("---\n")) {
			t.Fatalf("%s: not YAML:\n%.200s", name, data)
		}
		docs, err := ReadDocuments(data, "stdin")
		if err != nil || len(docs) != 2 || !reflect.DeepEqual(Aggregate(docs...).Results, want) {
			t.Errorf("%s: %d documents, %v; want both arms", name, len(docs), err)
		}
	}
	if docs, err := ReadDocuments(print(configMap("b-results-arm1", two)), "stdin"); err != nil || len(docs) != 1 ||
		docs[0].Arms[0].QueryServer != "arm1" {
		t.Errorf("one ConfigMap: %d documents, %v", len(docs), err)
	}
	if _, err := ReadDocuments(print(tables), "stdin"); err == nil || !strings.Contains(err.Error(), "no ConfigMap holds a results document") {
		t.Errorf("the tables' ConfigMap alone: %v", err)
	}
	for _, other := range []string{"kind: Secret\n", "hello\n"} {
		if _, err := ReadDocuments([]byte(other), "stdin"); err == nil || !strings.Contains(err.Error(), "kubectl get cm -o json or -o yaml") {
			t.Errorf("%q: %v", other, err)
		}
	}
}

func TestEncodeWithinThinsTheCurvesOnly(t *testing.T) {
	d := sampleDocument(1)
	for i := range d.Arms[0].Profiles[0].Indexing[0].Runs {
		run := &d.Arms[0].Profiles[0].Indexing[0].Runs[i]
		for k := range 4000 {
			run.Series = append(run.Series, measured.BuildPoint{AtMs: int64(k * 250), ChangesDone: int64(k * 7), LiveTasks: k % 5})
		}
	}
	full, _ := Encode(d)
	before := Aggregate(d)
	data, err := EncodeWithin(d, len(full)/3)
	if err != nil || len(data) > len(full)/3 {
		t.Fatalf("%d bytes of at most %d, %v", len(data), len(full)/3, err)
	}
	back, _ := Decode(data)
	if back.SeriesThinned < 2 || !reflect.DeepEqual(Aggregate(back), before) {
		t.Errorf("thinned %d; the numbers must not change", back.SeriesThinned)
	}
	if last := back.Arms[0].Profiles[0].Indexing[0].Runs[0].Series; last[len(last)-1].AtMs != 3999*250 {
		t.Error("the curve's last point was dropped")
	}
	if _, err := EncodeWithin(sampleDocument(16), 100); err == nil {
		t.Error("a document that cannot fit was accepted")
	}
}

func TestHandoffFrames(t *testing.T) {
	payload, _ := Encode(sampleDocument(1))
	h := NewHandoff(PayloadDocument, payload, errors.New(strings.Repeat("x", 5000)), false)
	if len(h.Marshal()) > MaxHandoffBytes {
		t.Errorf("handoff of %d bytes", len(h.Marshal()))
	}
	parsed, err := ParseHandoff(string(h.Marshal()))
	if err != nil || parsed.SHA256 != h.SHA256 {
		t.Fatal(err)
	}
	var log bytes.Buffer
	log.WriteString("12:00:01 seeding...\n## tables\n")
	if err := WriteFrame(&log, PayloadDocument, payload); err != nil {
		t.Fatal(err)
	}
	log.WriteString("trailing output\n")
	got, err := ReadFrame(bytes.NewReader(log.Bytes()), parsed)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("ReadFrame: %v", err)
	}
	// A stderr line that the container's log put inside the frame is passed over.
	lines := strings.SplitAfter(log.String(), "\n")
	mixed := strings.Join(slices.Insert(lines, 6, "couchbench: writes: round 3 of 3: 1,204 docs/s\n"), "")
	if got, err := ReadFrame(strings.NewReader(mixed), parsed); err != nil || !bytes.Equal(got, payload) {
		t.Errorf("ReadFrame of a frame with a stderr line inside: %v", err)
	}
	lost := strings.Join(slices.Delete(slices.Clone(lines), 6, 7), "")
	if _, err := ReadFrame(strings.NewReader(lost), parsed); err == nil || !strings.Contains(err.Error(), "cut or mixed") {
		t.Errorf("a frame that lost a line: %v", err)
	}
	cut := log.Bytes()[:log.Len()/2]
	if _, err := ReadFrame(bytes.NewReader(cut), parsed); !errors.Is(err, ErrNoFrame) {
		t.Errorf("a cut log: %v", err)
	}
	other := NewHandoff(PayloadDocument, []byte("another run"), nil, false)
	if _, err := ReadFrame(bytes.NewReader(log.Bytes()), other); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a frame that does not match the handoff: %v", err)
	}
	if _, err := ParseHandoff(`{"v":1}`); err == nil {
		t.Error("handoff version 1 was accepted")
	}
}

// gzipped is data compressed, for tests that need gzip input.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return b.Bytes()
}

func TestDecodeReadsPlainAndGzip(t *testing.T) {
	plain, _ := json.Marshal(&Document{SchemaVersion: SchemaVersion, Benchmark: "b",
		Arms: []Arm{{QueryServer: "js", Profiles: []Profile{{Profile: "small", Seeding: &measured.Seeding{Stored: 3}}}}}})
	for name, data := range map[string][]byte{"plain": plain, "gzip": gzipped(plain), "base64 of gzip": []byte(base64.StdEncoding.EncodeToString(gzipped(plain)))} {
		d, err := Decode(data)
		if name == "base64 of gzip" {
			if err == nil {
				t.Errorf("%s was accepted", name)
			}
			continue
		}
		if err != nil || d.Arms[0].Profiles[0].Seeding.Stored != 3 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMetricsCarryEveryRepetition(t *testing.T) {
	d := sampleDocument(1)
	d.Arms[0].Profiles[0].Reads = &Reads{Scenario: "getDocument", Runners: []ReadsRunner{
		{Requests: 100, Failed: 1, DurationMs: 1000, Milliseconds: Latencies{P50: 2, P95: 9, P99: 20}}}}
	ms := Metrics(d)
	byKey := map[string]Metric{}
	for _, m := range ms {
		byKey[m.Key()] = m
	}
	ix := byKey["arm0/small/indexing/builtin/changes_per_second"]
	if !reflect.DeepEqual(ix.Samples, []float64{10000, 9900, 9800}) || ix.Value != 9900 || ix.Direction != HigherIsBetter {
		t.Errorf("indexing metric %+v", ix)
	}
	if v := byKey["arm0/small/viewReads/emitNull/seconds_per_read"]; v.Direction != LowerIsBetter || v.Value != 0.5 {
		t.Errorf("view reads metric %+v", v)
	}
	if p95 := byKey["arm0/small/reads/getDocument/p95_ms"]; p95.Value != 9 || p95.Direction != LowerIsBetter {
		t.Errorf("p95 metric %+v", p95)
	}
	if e := byKey["arm0/small/reads/getDocument/error_rate"]; e.Value != 0.01 {
		t.Errorf("error rate %+v", e)
	}
	if w := byKey["arm0/large-300000/writes/serial/docs_per_second"]; w.Value != 500 {
		t.Errorf("writes metric %+v", w)
	}
	// Every indexing row of Aggregate has its metric, with the same median.
	for _, q := range Aggregate(d).Results {
		for _, row := range q.Indexing {
			m := byKey[q.QueryServer+"/"+row.Profile+"/indexing/"+string(row.Reducer)+"/changes_per_second"]
			if round(m.Value) != row.ChangesPerSecond {
				t.Errorf("%s %s: metric %v, status %d", row.Profile, row.Reducer, m.Value, row.ChangesPerSecond)
			}
		}
	}
}

// A build's server CPU cost becomes a metric beside its rate, per 1,000 documents, once
// every build of the series was metered; a series with one build unmetered has none, so
// that the CPU cost's rounds always pair with the rate's.
func TestIndexCPUCostIsAMetricWhenEveryBuildWasMetered(t *testing.T) {
	d := sampleDocument(1)
	runs := d.Arms[0].Profiles[0].Indexing[0].Runs
	for i := range runs {
		runs[i].CPUSeconds = float64(i + 2)
	}
	key := "arm0/small/indexing/builtin/cpu_seconds_per_1000_docs"
	byKey := func() map[string]Metric {
		out := map[string]Metric{}
		for _, m := range Metrics(d) {
			out[m.Key()] = m
		}
		return out
	}
	cpu, ok := byKey()[key]
	want := []float64{1000 * 2 / float64(runs[0].Documents), 1000 * 3 / float64(runs[1].Documents), 1000 * 4 / float64(runs[2].Documents)}
	if !ok || !reflect.DeepEqual(cpu.Samples, want) || cpu.Direction != LowerIsBetter {
		t.Errorf("CPU cost metric %+v (present %v); want samples %v, lower is better", cpu, ok, want)
	}
	runs[1].CPUSeconds = 0
	if m, ok := byKey()[key]; ok {
		t.Errorf("one build unmetered: metric %+v; want none", m)
	}
}

// Loads, view reads and writes carry their server's CPU cost as builds do: a metric beside
// each rate, per 1,000 documents stored or rows read, and a row of the report's CPU cost
// table; a workload that was not metered has neither.
func TestEveryMeteredWorkloadHasACPUCostMetricAndRow(t *testing.T) {
	d := sampleDocument(1)
	p := &d.Arms[0].Profiles[0]
	p.Seeding.CPUSeconds = 0.5
	p.ViewReads[1].Reads[0].CPUSeconds = 0.25
	p.Writes[0].CPUSeconds, p.Writes[0].Stored = 4, 5000
	// Two repetitions of two k6 runners each: a repetition's reading covers both runners.
	p.Reads = &Reads{Scenario: "getDocument", Runners: []ReadsRunner{
		{Repetition: 0, Segment: "0:1/2", Requests: 1500, DurationMs: 1000}, {Repetition: 0, Segment: "1/2:1", Requests: 500, DurationMs: 1000},
		{Repetition: 1, Segment: "0:1/2", Requests: 1000, DurationMs: 1000}, {Repetition: 1, Segment: "1/2:1", Requests: 1000, DurationMs: 1000},
	}, CPU: []ReadsCPU{{Repetition: 1, CPUSeconds: 3}, {Repetition: 0, CPUSeconds: 2}}}
	got := map[string][]float64{}
	for _, m := range Metrics(d) {
		if m.Name == cpuCostMetric || m.Name == cpuCostPerRequest {
			got[m.Profile+"/"+m.Workload+"/"+m.Variant+"/"+m.Name] = append(m.Samples, m.Value)
		}
	}
	want := map[string][]float64{"small/seeding/bulk/" + cpuCostMetric: {0.5, 0.5}, "small/viewReads/emitNull/" + cpuCostMetric: {0.25, 0.25},
		"small/writes/bulk-100/" + cpuCostMetric: {0.8, 0.8}, "small/reads/getDocument/" + cpuCostPerRequest: {1, 1.5, 1.25}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CPU cost metrics (samples, then value) %v, want %v", got, want)
	}
	var rows []string
	for _, tb := range NewReport(d).Tables() {
		if strings.HasPrefix(tb.Title, "Server CPU cost") {
			for _, r := range tb.Rows {
				rows = append(rows, strings.Join(r, " | "))
			}
		}
	}
	wantRows := []string{"arm0 | small | seeding | bulk | docs | 0.500 (n=1)", "arm0 | small | viewReads | emitNull | docs | 0.250 (n=1)",
		"arm0 | small | writes | bulk-100 | docs | 0.800 (n=1)", "arm0 | small | reads | getDocument | requests | 1.250 (n=2, CV 28.3%)"}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("CPU cost table rows %q, want %q", rows, wantRows)
	}
	// A repetition without its reading leaves the reads without a CPU cost: its samples must
	// pair with the rate's.
	p.Reads.CPU[0] = ReadsCPU{Repetition: 1, Error: "waiting for the k6 runners' ends: ..."}
	for _, m := range Metrics(d) {
		if m.Name == cpuCostPerRequest {
			t.Errorf("a CPU cost of the reads from %v, one repetition unread", m.Samples)
		}
	}
}
