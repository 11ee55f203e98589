package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/measured"
)

// partDocument is what one of three seeding runners hands over: its slice of 3,000
// documents, loaded from start for elapsed, at busy percent of its CPU allowance.
func partDocument(part int, start time.Time, elapsed time.Duration, busy float64) *Document {
	load := measured.Seeding{Stored: 1000, Created: 1000, Bytes: 500_000, Elapsed: elapsed, StartedAt: start, FinishedAt: start.Add(elapsed)}
	d := &Document{
		SchemaVersion: SchemaVersion, Benchmark: "b", StartedAt: start.Add(-time.Second), FinishedAt: start.Add(elapsed + time.Second),
		Arms: []Arm{{QueryServer: "js", Profiles: []Profile{{Profile: "small", DB: "cb-b-js-small", Seeding: &load}}}},
		Steps: []StepRecord{{QueryServer: "js", Step: benchv1.StepSeed, StartedAt: start.Add(-time.Second), FinishedAt: start.Add(elapsed),
			LoadGenerator: &cpuuse.Use{BusyPercent: busy, LimitCores: 1}}},
	}
	if part == 0 {
		d.Arms[0].Runtime = &Runtime{Language: "javascript", Engine: "spidermonkey"}
		d.Steps[0].CouchDBLoad = []measured.NodeLoad{{Node: "couchdb@a", MaxRunQueue: 3}}
	}
	return d
}

func TestPartsJoinIntoOneExactRate(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	parts := []*Document{
		partDocument(0, t0, 2*time.Second, 40),
		partDocument(1, t0.Add(30*time.Millisecond), 3*time.Second, 95),
		partDocument(2, t0.Add(10*time.Millisecond), time.Second, 50),
	}
	d := JoinParts(parts)
	s := d.Arms[0].Profiles[0].Seeding
	// 3,000 documents from the first start (part 0) to the last end (part 1, 3.03 s later).
	if s.Stored != 3000 || s.Elapsed != 3030*time.Millisecond || s.StartSpread != 30*time.Millisecond || len(s.Parts) != 3 {
		t.Fatalf("joined seeding: %d stored in %s, start spread %s, %d parts; want 3000 in 3.03s, 30ms, 3",
			s.Stored, s.Elapsed, s.StartSpread, len(s.Parts))
	}
	if got, want := d.Arms[0].Profiles[0].SeedingDocsPerSecond, 3000/3.03; got != want {
		t.Errorf("docs/s %v, want %v", got, want)
	}
	rec := d.Steps[0]
	if len(d.Steps) != 1 || rec.LoadGenerator.BusyPercent != 95 || len(rec.CouchDBLoad) != 1 || d.Arms[0].Runtime == nil {
		t.Errorf("joined step %+v: want one record, the busiest part's CPU (95%%), part 0's CouchDB load and runtime", d.Steps)
	}
	if !rec.StartedAt.Equal(t0.Add(-time.Second)) || !rec.FinishedAt.Equal(t0.Add(3030*time.Millisecond)) {
		t.Errorf("step spans %s-%s, want every part's span", rec.StartedAt, rec.FinishedAt)
	}

	sum := Aggregate(d)
	if r := sum.Results[0].Seeding[0]; r.Documents != 3000 || r.Runners != 3 || r.DocsPerSecond != 990 ||
		!contains(r.Flags, benchv1.FlagGeneratorBound) {
		t.Errorf("status seeding %+v: want 3000 documents, 3 runners, 990 docs/s, GeneratorBound", r)
	}
	var md bytes.Buffer
	if err := NewReport(d).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	// Cells are padded to their column's width; compare with single spaces.
	report := strings.Join(strings.Fields(md.String()), " ")
	for _, want := range []string{"### Seeding per runner", "| js | small | 1 | 1000 | 333 | +30 ms | 3s |", "| 990 (n=1) GeneratorBound |"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}

// Two runners that loaded the dataset three times: the parts' i-th loads join into the i-th
// load, the last is the one the workloads read, and status gives the median load with the
// loads' spread, flagged Noisy past the threshold.
func TestRepeatedLoadsJoinLoadByLoad(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	elapsed := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} // 2,000, 1,000 and 500 docs/s joined
	parts := make([]*Document, 2)
	for part := range parts {
		d := partDocument(part, t0, time.Second, 40)
		p := &d.Arms[0].Profiles[0]
		for i, e := range elapsed {
			start := t0.Add(time.Duration(i) * 10 * time.Second)
			p.SeedingRuns = append(p.SeedingRuns, measured.Seeding{Stored: 1000, Created: 1000, Bytes: 500_000, Elapsed: e,
				StartedAt: start, FinishedAt: start.Add(e)})
		}
		last := p.SeedingRuns[2]
		p.Seeding = &last
		parts[part] = d
	}
	doc := JoinParts(parts)
	p := doc.Arms[0].Profiles[0]
	if len(p.SeedingRuns) != 3 {
		t.Fatalf("%d joined loads, want 3", len(p.SeedingRuns))
	}
	for i, load := range p.SeedingRuns {
		if load.Stored != 2000 || load.Elapsed != elapsed[i] || len(load.Parts) != 2 {
			t.Errorf("load %d joined: %d stored in %s by %d parts, want 2000 in %s by 2", i, load.Stored, load.Elapsed, len(load.Parts), elapsed[i])
		}
	}
	if p.Seeding.Stored != 2000 || p.Seeding.Elapsed != 4*time.Second {
		t.Errorf("the load the workloads read: %+v, want the last", p.Seeding)
	}
	r := Aggregate(doc).Results[0].Seeding[0]
	if r.DocsPerSecond != 1000 || r.Runs != 3 || r.CV == "" || !contains(r.Flags, benchv1.FlagNoisy) || r.Documents != 2000 {
		t.Errorf("status seeding %+v: want the median 1,000 docs/s over 3 loads, Noisy", r)
	}
	var metric *Metric
	for _, m := range Metrics(doc) {
		if m.Workload == "seeding" {
			metric = &m
		}
	}
	if metric == nil || len(metric.Samples) != 3 {
		t.Errorf("seeding metric %+v: want every load as a sample", metric)
	}
}

func TestOneDocumentIsItsOwnJoin(t *testing.T) {
	d := partDocument(0, time.Now(), time.Second, 10)
	if j := JoinParts([]*Document{d}); j != d || j.Arms[0].Profiles[0].Seeding.Parts != nil {
		t.Errorf("a step of one runner was changed by the join: %+v", j.Arms[0].Profiles[0].Seeding)
	}
}

func TestAPartsErrorIsKept(t *testing.T) {
	t0 := time.Now()
	a, b := partDocument(0, t0, time.Second, 10), partDocument(1, t0, time.Second, 10)
	b.Error, b.Steps[0].Error = "documents 0000001500-0000001999: gave up", "gave up"
	if d := JoinParts([]*Document{a, b}); d.Error == "" || d.Steps[0].Error == "" || d.Arms[0].Profiles[0].Seeding.Stored != 2000 {
		t.Errorf("joined %+v: want part 1's error kept, with both parts' documents", d)
	}
}

func contains(flags []benchv1.ResultFlag, f benchv1.ResultFlag) bool {
	for _, g := range flags {
		if g == f {
			return true
		}
	}
	return false
}
