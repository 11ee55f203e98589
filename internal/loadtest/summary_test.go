package loadtest

import (
	"os"
	"strings"
	"testing"
)

func loadRunners(t *testing.T) []RunnerSummary {
	t.Helper()
	var out []RunnerSummary
	for _, f := range []string{"testdata/runner1of2.json", "testdata/runner2of2.json"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSummary(data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestParseRealSummaries(t *testing.T) {
	rs := loadRunners(t)
	if rs[0].Segment != "0:1/2" || rs[0].Requests != 201 || rs[1].Requests != 200 || rs[0].Ms.P95 <= rs[0].Ms.P50 {
		t.Errorf("parsed %+v", rs)
	}
	if _, err := ParseSummary([]byte(`{"v":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("another version: %v", err)
	}
	if _, err := ParseSummary([]byte(`OOMKilled`)); err == nil {
		t.Error("not JSON was accepted")
	}
}

func TestMergeAddsCountsAndBoundsPercentiles(t *testing.T) {
	rs := loadRunners(t)
	m := Merge(rs)
	// 401 requests over the longer runner's 2.00167 s.
	if m.Requests != 401 || m.RequestsPerSecond != 200 || m.ErrorRate != "0.00%" {
		t.Errorf("merged counts %+v", m)
	}
	// Each aggregate percentile is the larger runner's: an upper bound, said so.
	if m.P95 != ms(rs[1].Ms.P95) || m.P99 != ms(rs[0].Ms.P99) || !m.PercentilesUpperBound || len(m.Runners) != 2 {
		t.Errorf("merged percentiles %+v", m)
	}
	if m.ThresholdsPassed == nil || !*m.ThresholdsPassed {
		t.Errorf("thresholds %v", m.ThresholdsPassed)
	}
	one := Merge(rs[:1])
	if one.PercentilesUpperBound || len(one.Runners) != 0 || one.P95 != ms(rs[0].Ms.P95) {
		t.Errorf("one runner: percentiles are exact, %+v", one)
	}
}

func TestSegmentsCoverTheWholeLoad(t *testing.T) {
	segs, seq := Segments(3)
	if strings.Join(segs, " ") != "0:1/3 1/3:2/3 2/3:1" || seq != "0,1/3,2/3,1" {
		t.Errorf("segments %v sequence %s", segs, seq)
	}
	if segs, seq := Segments(1); len(segs) != 1 || segs[0] != "" || seq != "" {
		t.Errorf("one runner: %v %q", segs, seq)
	}
}
