package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// historyOf runs `couchbench history` with args (no server: it reads files) and returns what
// it printed.
func historyOf(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := realMain(append([]string{"history"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("history %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// history over runs' files (made here, no server) finds where seeding got 20% slower, names
// that run, says the p-value and the level it was held against, and draws the trend with the
// shift marked.
func TestHistoryFindsTheShift(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	var files []string
	for i, ms := range []int{1000, 1010, 990, 1005, 995, 1000, 1008, 992, 1003, 997, 1250, 1262, 1240, 1255} {
		name := fmt.Sprintf("night%02d.json", i+1)
		files = append(files, seededRun(t, dir, name, "", started.Add(time.Duration(i)*24*time.Hour), time.Duration(ms)*time.Millisecond))
	}
	md := historyOf(t, files...)
	if !regexp.MustCompile(`\| js/small/seeding/bulk/docs_per_second +\| night11\.json +\| -20\.\d% +\| 4 +\| \d\.\de-\d\d +\| \d\.\de-\d\d +\| Regressed +\|`).MatchString(md) {
		t.Errorf("no shift of -20%% from night11.json over 4 runs, with its p-value and level, worse:\n%s", md)
	}
	if !strings.Contains(md, "budget one false shift per 1000 runs over the judged metrics (1 here") {
		t.Errorf("the shifts' note does not state the budget:\n%s", md)
	}
	page := historyOf(t, append([]string{"--format", "html"}, files...)...)
	if !strings.Contains(page, "<h1>couchbench: history of cli</h1>") || strings.Count(page, "<svg") != 1 ||
		!strings.Contains(page, ">shift, worse<") || !strings.Contains(page, "14 runs, 2026-11-01 02:00 to 2026-11-14 02:00 (UTC)") {
		t.Errorf("the page lacks the trend with its shift:\n%.3000s", page)
	}
}

// twoArmSeeding writes a run's results (no server) whose arms ref and cand each seeded once,
// cand in candElapsed, ref in 1 s.
func twoArmSeeding(t *testing.T, dir, name string, started time.Time, candElapsed time.Duration) string {
	t.Helper()
	arm := func(name string, elapsed time.Duration) results.Arm {
		return results.Arm{QueryServer: name, Language: "javascript", Profiles: []results.Profile{{Profile: "small",
			Seeding: &measured.Seeding{Stored: 300, Created: 300, Elapsed: elapsed}}}}
	}
	doc := &results.Document{SchemaVersion: results.SchemaVersion, Benchmark: "aa", StartedAt: started,
		Server: results.Provenance{Vendor: "The Apache Software Foundation", Version: "3.4.3", Nodes: []string{"n1"}},
		Arms:   []results.Arm{arm("ref", time.Second), arm("cand", candElapsed)}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(data))
}

// A workload run once per arm (seeding here, files made here, no server) has its ratio
// tracked all the same, marked once per arm in every format, judged: the candidate seeding
// 25% slower from the 11th run is a shift of the ratio.
func TestHistoryTracksOncePerArmRatios(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	var files []string
	for i, ms := range []int{1000, 1010, 990, 1005, 995, 1000, 1008, 992, 1003, 997, 1250, 1262, 1240, 1255} {
		files = append(files, twoArmSeeding(t, dir, fmt.Sprintf("aa%02d.json", i+1), started.Add(time.Duration(i)*24*time.Hour),
			time.Duration(ms)*time.Millisecond))
	}
	const ratio = "cand:ref/small/seeding/bulk/docs_per_second"
	md := historyOf(t, files...)
	if !regexp.MustCompile(`\| `+regexp.QuoteMeta(ratio)+` +\| judged, once per arm +\| 14 +\|`).MatchString(md) ||
		!regexp.MustCompile(`\| `+regexp.QuoteMeta(ratio)+` +\| aa11\.json +\| -20\.\d% +\| 4 +\|.*\| Regressed +\|`).MatchString(md) {
		t.Errorf("the ratio is not marked once per arm, or its shift from aa11.json not judged:\n%s", md)
	}
	var out struct {
		Runs []struct {
			OncePerArm []string `json:"oncePerArm"`
		} `json:"runs"`
		FalseAlarmsPerRun string `json:"falseAlarmsPerRun"`
		Detection         []struct {
			Metric       string  `json:"metric"`
			ShiftPercent float64 `json:"shiftPercent"`
		} `json:"detection"`
	}
	if err := json.Unmarshal([]byte(historyOf(t, append([]string{"--format", "json"}, files...)...)), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 14 || fmt.Sprint(out.Runs[13].OncePerArm) != "["+ratio+"]" ||
		out.FalseAlarmsPerRun != "1 in 1000 runs over 1 judged metric" || len(out.Detection) != 1 || out.Detection[0].Metric != ratio ||
		out.Detection[0].ShiftPercent <= 0 {
		t.Errorf("json: %+v; want 14 runs marking the ratio once per arm, the budget over 1 judged metric, its detection", out)
	}
	if page := historyOf(t, append([]string{"--format", "html"}, files...)...); !strings.Contains(page, ratio+" (judged, once per arm)") {
		t.Errorf("the page does not title the ratio's trend once per arm:\n%.3000s", page)
	}
}
