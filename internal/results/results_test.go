package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/measured"
)

// Runs of the same spec share a hash, and any change to the spec gives another.
func TestSpecHashNamesTheSpec(t *testing.T) {
	a := benchv1.CouchBenchmarkSpec{Timeout: "2h", Dataset: benchv1.Dataset{Documents: 1000, Seed: 1}}
	b := a
	if SpecHash(a) != SpecHash(b) || len(SpecHash(a)) != 64 {
		t.Fatalf("hashes %q and %q of the same spec: want the same 64 hex digits", SpecHash(a), SpecHash(b))
	}
	b.Dataset.Seed = 2
	if SpecHash(a) == SpecHash(b) {
		t.Errorf("specs with seeds 1 and 2 share the hash %s", SpecHash(a))
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{10, 30, 20})
	if s.N != 3 || s.Median != 20 || s.Min != 10 || s.Max != 30 {
		t.Errorf("Summarize = %+v", s)
	}
	// Sample standard deviation of 10, 20, 30 is 10; the mean 20: CV 50%.
	if math.Abs(s.CV-50) > 1e-9 {
		t.Errorf("CV = %v, want 50", s.CV)
	}
	if even := Summarize([]float64{4, 1, 3, 2}); even.Median != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", even.Median)
	}
	if one := Summarize([]float64{7}); one.CV != 0 || one.Median != 7 {
		t.Errorf("one value: %+v", one)
	}
	if none := Summarize(nil); none.N != 0 {
		t.Errorf("no values: %+v", none)
	}
}

// sampleDocument has two arms, two profiles and every workload.
func sampleDocument(arms int) *Document {
	d := &Document{SchemaVersion: SchemaVersion, Benchmark: "b", StartedAt: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)}
	for a := range arms {
		arm := Arm{QueryServer: fmt.Sprintf("arm%d", a), Language: "javascript"}
		for _, prof := range []string{"small", "large-300000"} {
			seed := measured.Seeding{Stored: 1000, Created: 1000, Elapsed: time.Second, Bytes: 110000}
			p := Profile{Profile: prof, Seeding: &seed, SeedingDocsPerSecond: 1000, SeedingMBPerSecond: 0.11}
			for _, red := range []string{"builtin", "custom"} {
				s := IndexingSeries{Reducer: red, ViewCompaction: "paused"}
				for r := range 3 {
					s.Runs = append(s.Runs, measured.IndexBuild{Documents: 1000, Built: time.Duration(100+r) * time.Millisecond,
						Queryable: 90 * time.Millisecond, DocsPerSecond: 10000 - float64(r)*100, ShardChangesPerSecond: 30000, MapDocs: 3000, MapDocsExpected: 3000})
				}
				p.Indexing = append(p.Indexing, s)
			}
			for _, v := range []benchv1.ViewReadKind{benchv1.ViewEmitDoc, benchv1.ViewEmitNull, benchv1.ViewEmitNullIncludeDocs} {
				p.ViewReads = append(p.ViewReads, measured.ViewReads{View: v, Reads: []measured.ViewRead{{Rows: 1000, Elapsed: 500 * time.Millisecond}}})
			}
			for _, m := range []string{"bulk-100", "bulk-1000", "bulk-5000", "bulk-10000", "parallelBulk-10x1000", "batchOk-1", "serial"} {
				p.Writes = append(p.Writes, measured.Write{Mode: m, Created: 5000, Elapsed: 10 * time.Second})
			}
			arm.Profiles = append(arm.Profiles, p)
		}
		d.Arms = append(d.Arms, arm)
	}
	return d
}

func TestTablesLookLikeTheSeeds(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, NewReport(sampleDocument(2)).Tables()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| Option", "| c/s small", "| c/s large-300000",
		"| arm0 (javascript) | builtin", "9,900 (n=3, CV 1.0%)", // the median of 10000, 9900, 9800
		"### View reads", "emitNullIncludeDocs", "### Writes", "parallelBulk-10x1000", "500", // 5000 docs in 10 s
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
}

func TestCSVHasOneRowPerValue(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []Report{NewReport(sampleDocument(1))}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Per profile: 1 seeding + 2 reducers x 5 metrics + 3 view reads + 7 writes.
	want := 1 + 2*(1+10+3+7)
	if len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	if strings.Join(rows[0], ",") != "benchmark,run_id,started_at,option,profile,workload,variant,metric,value" {
		t.Errorf("header %v", rows[0])
	}
}

func TestDecodeRefusesOtherSchemaVersions(t *testing.T) {
	d := sampleDocument(1)
	d.SchemaVersion = 99
	data, _ := json.Marshal(d)
	if _, err := Decode(data); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("Decode of a version 99 document: %v", err)
	}
}

// A result is flagged Noisy when its repetitions' CV exceeds the spec's threshold, and
// Imprecise when a build's end was bracketed to worse than 5% of its time; documents from
// before builds were bracketed state no uncertainty.
func TestSpreadFlagsNoisyAndImpreciseResults(t *testing.T) {
	build := func(rate float64, built, uncertainty time.Duration) measured.IndexBuild {
		return measured.IndexBuild{Documents: 1000, DocsPerSecond: rate, Built: built, BuiltUncertainty: uncertainty, BuiltFrom: indexing.BuiltFromCopies}
	}
	doc := func(threshold int32, runs ...measured.IndexBuild) *Document {
		d := &Document{SchemaVersion: SchemaVersion, Spec: benchv1.CouchBenchmarkSpec{NoiseThresholdPercent: threshold}}
		reads := measured.ViewReads{View: benchv1.ViewEmitNull}
		for _, secs := range []float64{1, 2, 3} { // CV 50%
			reads.Reads = append(reads.Reads, measured.ViewRead{Rows: 10, Elapsed: time.Duration(secs * float64(time.Second))})
		}
		d.Arms = []Arm{{QueryServer: "js", Profiles: []Profile{{Profile: "small",
			Indexing: []IndexingSeries{{Reducer: "builtin", Runs: runs}}, ViewReads: []measured.ViewReads{reads}}}}}
		return d
	}
	steady := []measured.IndexBuild{build(1000, time.Second, 10*time.Millisecond), build(1050, time.Second, 0), build(950, time.Second, 0)} // CV 5%
	for _, tc := range []struct {
		name            string
		doc             *Document
		wantCV, wantUnc string
		wantFlags       []benchv1.ResultFlag
	}{
		{"steady, precise", doc(10, steady...), "5.0%", "±1.0%", nil},
		{"steady under a 4% threshold", doc(4, steady...), "5.0%", "±1.0%", []benchv1.ResultFlag{benchv1.FlagNoisy}},
		{"default threshold (10%) for documents without one", doc(0, build(1000, time.Second, 0), build(1300, time.Second, 0)), "18.4%", "±0.0%",
			[]benchv1.ResultFlag{benchv1.FlagNoisy}},
		{"one build timed to ±6%", doc(10, build(1000, time.Second, 60*time.Millisecond)), "", "±6.0%", []benchv1.ResultFlag{benchv1.FlagImprecise}},
		{"a document from before bracketing", doc(10, measured.IndexBuild{Documents: 1000, DocsPerSecond: 1000, Built: time.Second}), "", "", nil},
	} {
		ix := Aggregate(tc.doc).Results[0].Indexing[0]
		if ix.CV != tc.wantCV || ix.Uncertainty != tc.wantUnc || fmt.Sprint(ix.Flags) != fmt.Sprint(tc.wantFlags) {
			t.Errorf("%s: CV %q, uncertainty %q, flags %v; want %q, %q, %v", tc.name, ix.CV, ix.Uncertainty, ix.Flags, tc.wantCV, tc.wantUnc, tc.wantFlags)
		}
	}
	vr := Aggregate(doc(10, steady...)).Results[0].ViewReads[0]
	if vr.Runs != 3 || vr.CV != "50.0%" || len(vr.Flags) != 1 || vr.Flags[0] != benchv1.FlagNoisy {
		t.Errorf("view reads of 1, 2 and 3 s: %+v, want 3 runs, CV 50.0%%, Noisy", vr.Spread)
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, NewReport(doc(4, steady...)).Tables()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1,000 (n=3, CV 5.0%) Noisy", "2s (n=3, CV 50.0%) Noisy", "| ±1.0%  |"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, buf.String())
		}
	}
}

// A step whose load generator ran on a node of the arm's CouchDB pods is flagged
// SharedNode, and the summary lists it; an arm without recorded CouchDB pods says nothing.
func TestSharedNodesAreFlagged(t *testing.T) {
	d := sampleDocument(1)
	d.Arms[0].Cluster = &Cluster{Pods: []PodRun{
		{Role: RoleCouchDB, Pod: "c-0", Node: "node-a"},
		{Role: RoleRunner, Step: benchv1.StepSeed, Pod: "seed", Node: "node-a"},
		{Role: RoleRunner, Step: benchv1.StepIndex, Pod: "index", Node: "node-b"},
		{Role: RoleRunner, Step: benchv1.StepWrites, Pod: "writes", Node: "node-a"},
	}}
	s := Aggregate(d)
	q := s.Results[0]
	shared := func(flags []benchv1.ResultFlag) bool { return slices.Contains(flags, benchv1.FlagSharedNode) }
	if !shared(q.Seeding[0].Flags) || shared(q.Indexing[0].Flags) || shared(q.ViewReads[0].Flags) || !shared(q.Writes[0].Flags) {
		t.Errorf("flags: seeding %v, indexing %v, view reads %v, writes %v; want seeding and writes SharedNode",
			q.Seeding[0].Flags, q.Indexing[0].Flags, q.ViewReads[0].Flags, q.Writes[0].Flags)
	}
	want := []string{"query server arm0: seed on node-a", "query server arm0: writes on node-a"}
	if s.Isolation == nil || s.Isolation.Isolated || !slices.Equal(s.Isolation.Shared, want) {
		t.Errorf("isolation %+v, want not isolated: %v", s.Isolation, want)
	}
	d.Arms[0].Cluster.Pods[0].Node = "node-c"
	if s := Aggregate(d); s.Isolation == nil || !s.Isolation.Isolated || len(s.Isolation.Shared) != 0 {
		t.Errorf("every load generator apart from CouchDB: isolation %+v", s.Isolation)
	}
	if s := Aggregate(sampleDocument(1)); s.Isolation != nil {
		t.Errorf("no CouchDB pods recorded (an existing CouchDB): isolation %+v, want none", s.Isolation)
	}
}

// A step whose runner used its CPU allowance, or a k6 load that dropped iterations, is
// flagged GeneratorBound; a runner with CPU to spare is not.
func TestGeneratorBoundStepsAreFlagged(t *testing.T) {
	d := sampleDocument(1)
	d.Steps = []StepRecord{
		{QueryServer: "arm0", Step: benchv1.StepSeed, LoadGenerator: &cpuuse.Use{CPUSeconds: 9.5, LimitCores: 1, BusyPercent: 95}},
		{QueryServer: "arm0", Step: benchv1.StepIndex, LoadGenerator: &cpuuse.Use{CPUSeconds: 0.4, LimitCores: 1, BusyPercent: 4}},
		{QueryServer: "other", Step: benchv1.StepWrites, LoadGenerator: &cpuuse.Use{BusyPercent: 99}},
	}
	d.Arms[0].Profiles[0].Reads = &Reads{Runners: []ReadsRunner{{Segment: "0:1", Requests: 100, DurationMs: 1000, DroppedIterations: 7}}}
	q := Aggregate(d).Results[0]
	bound := func(flags []benchv1.ResultFlag) bool { return slices.Contains(flags, benchv1.FlagGeneratorBound) }
	if !bound(q.Seeding[0].Flags) || bound(q.Indexing[0].Flags) || bound(q.Writes[0].Flags) || q.Reads == nil || !bound(q.Reads.Flags) {
		t.Errorf("flags: seeding %v, indexing %v, writes %v, reads %+v; want seeding and reads GeneratorBound",
			q.Seeding[0].Flags, q.Indexing[0].Flags, q.Writes[0].Flags, q.Reads)
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, NewReport(d).Tables()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Load during the steps", "| 95% of 1 (", "| 4% of 1 ("} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, buf.String())
		}
	}
}

// Repeated read loads: requests/s per repetition (requests over its longest runner), the
// median over them with their spread, and the elapsed time summed (seed 001's SUM).
func TestReadRepetitionsAddUp(t *testing.T) {
	d := sampleDocument(1)
	d.Arms[0].Profiles[0].Reads = &Reads{Scenario: "getSameDocument", Runners: []ReadsRunner{
		{Repetition: 0, Segment: "0:1/2", Requests: 50, DurationMs: 1000},
		{Repetition: 0, Segment: "1/2:1", Requests: 50, DurationMs: 800},
		{Repetition: 1, Segment: "0:1/2", Requests: 50, DurationMs: 2000},
		{Repetition: 1, Segment: "1/2:1", Requests: 50, DurationMs: 1900},
		{Repetition: 2, Segment: "0:1/2", Requests: 60, DurationMs: 1000},
		{Repetition: 2, Segment: "1/2:1", Requests: 60, DurationMs: 1000},
	}}
	rd := Aggregate(d).Results[0].Reads
	// 100/1 s, 100/2 s, 120/1 s: median 100 req/s; 1 + 2 + 1 = 4 s.
	if rd.RequestsPerSecond != 100 || rd.Requests != 320 || rd.Elapsed != "4s" || rd.Runs != 3 || rd.CV == "" ||
		len(rd.Runners) != 6 || rd.Runners[5].Segment != "#3 1/2:1" {
		t.Errorf("reads %+v", rd)
	}
	var rps []float64
	for _, m := range Metrics(d) {
		if m.Workload == "reads" && m.Name == "requests_per_second" {
			rps = m.Samples
		}
	}
	if !slices.Equal(rps, []float64{100, 50, 120}) {
		t.Errorf("requests_per_second samples %v, want one per repetition", rps)
	}
}

// Repeated write modes: docs/s is the median over a mode's repetitions, with their spread,
// and the counts add up.
func TestWriteRepetitionsAddUp(t *testing.T) {
	d := sampleDocument(1)
	p := &d.Arms[0].Profiles[0]
	p.Writes = []measured.Write{
		{Mode: "bulk-100", Created: 1000, Stored: 1000, Elapsed: time.Second},
		{Mode: "serial", Created: 10, Stored: 10, Elapsed: time.Second},
		{Mode: "bulk-100", Repetition: 1, Created: 2000, Stored: 2000, Elapsed: time.Second},
		{Mode: "serial", Repetition: 1, Created: 12, Stored: 12, Elapsed: time.Second},
		{Mode: "bulk-100", Repetition: 2, Created: 1200, Stored: 1200, Elapsed: time.Second},
		{Mode: "serial", Repetition: 2, Created: 11, Stored: 11, Elapsed: time.Second},
	}
	w := Aggregate(d).Results[0].Writes // the small profile's first, then the large one's
	if len(w) < 2 || w[0].Mode != "bulk-100" || w[0].DocsPerSecond != 1200 || w[0].Created != 4200 || w[0].Stored != 4200 ||
		w[0].Runs != 3 || w[1].Mode != "serial" || w[1].DocsPerSecond != 11 || w[1].Runs != 3 {
		t.Errorf("writes %+v", w)
	}
}

// Arms whose CouchDB ran on other nodes than the first arm's are named; arms on the same
// nodes, or arms without known CouchDB pods, give no complaint.
func TestArmsOnOtherNodesAreNamed(t *testing.T) {
	d := sampleDocument(3)
	on := func(nodes ...string) *Cluster {
		c := &Cluster{}
		for i, n := range nodes {
			c.Pods = append(c.Pods, PodRun{Role: RoleCouchDB, Pod: fmt.Sprintf("c-%d", i), Node: n})
		}
		return c
	}
	d.Arms[0].Cluster, d.Arms[1].Cluster, d.Arms[2].Cluster = on("n1", "n2"), on("n2", "n1"), on("n1", "n3")
	s := Aggregate(d)
	want := []string{"query server arm2 on n1, n3, the first arm on n1, n2"}
	if s.SameNodes == nil || s.SameNodes.Same || !slices.Equal(s.SameNodes.Other, want) {
		t.Errorf("same nodes %+v, want arm2 named: %v", s.SameNodes, want)
	}
	d.Arms[2].Cluster = on("n2", "n1")
	if s := Aggregate(d); s.SameNodes == nil || !s.SameNodes.Same {
		t.Errorf("every arm on n1 and n2: %+v", s.SameNodes)
	}
	if s := Aggregate(sampleDocument(3)); s.SameNodes != nil {
		t.Errorf("no CouchDB pods recorded: %+v, want no verdict", s.SameNodes)
	}
}
