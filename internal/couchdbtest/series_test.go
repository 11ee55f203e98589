package couchdbtest_test

// The recorded series files (testdata, from a real Apache CouchDB 3.4.3) read back as they
// were recorded; no server is involved.

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// firstSeenTotal sums the total_changes of each shard copy's first indexer task: how the
// recordings count a build's changes (shared/couchdb/README.md).
func firstSeenTotal(t *testing.T, s couchdbtest.Series) (total, copies int) {
	t.Helper()
	seen := map[string]bool{}
	for _, sample := range s.Samples {
		var tasks []struct {
			Node, Database, Type string
			TotalChanges         int `json:"total_changes"`
		}
		if err := json.Unmarshal(sample.Body, &tasks); err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.Type == "indexer" && !seen[task.Node+" "+task.Database] {
				seen[task.Node+" "+task.Database] = true
				total += task.TotalChanges
			}
		}
	}
	return total, len(seen)
}

// fileFacts reads the sample count and view request elapsed time straight from the files.
func fileFacts(t *testing.T, files ...string) (samples int, elapsed float64) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile("testdata/" + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			ViewRequest struct {
				Elapsed float64 `json:"elapsed_s"`
			} `json:"view_request"`
			Samples []json.RawMessage   `json:"samples"`
			Encoded [][]json.RawMessage `json:"samples_encoded"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		samples += len(v.Samples) + len(v.Encoded)
		elapsed = v.ViewRequest.Elapsed
	}
	return samples, elapsed
}

func TestLoadSeries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  []string
		status int
		// The sum of the first-seen tasks' total_changes, from the README's tables: docs +
		// the design doc, times the copies.
		total, copies int
		// A sample recorded on its own (0*_active_tasks_during_build.json) and its index.
		single string
		index  int
	}{
		{"05b_javascript_active_tasks_series", []string{"05b_javascript_active_tasks_series"}, 200, 200001, 2, "", 0},
		{"06_cluster_50k_javascript_active_tasks_series", []string{"06_cluster_50k_javascript_active_tasks_series"}, 200, 150003, 6,
			"06_cluster_50k_javascript_active_tasks_during_build", 47},
		{"06_cluster_javascript_active_tasks_series",
			[]string{"06_cluster_javascript_active_tasks_series_part1of2", "06_cluster_javascript_active_tasks_series_part2of2"}, 500, 600003, 6,
			"06_cluster_javascript_active_tasks_during_build", 176},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := couchdbtest.LoadSeries(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			samples, elapsed := fileFacts(t, tc.files...)
			if len(s.Samples) != samples || s.ViewRequest.ElapsedS != elapsed || s.ViewRequest.Status != tc.status {
				t.Errorf("%d samples, elapsed %v, status %d; the files have %d samples, elapsed %v, status %d",
					len(s.Samples), s.ViewRequest.ElapsedS, s.ViewRequest.Status, samples, elapsed, tc.status)
			}
			if s.Samples[0].TRelMs != 0 || s.ViewRequest.EndRelMs <= s.ViewRequest.StartRelMs {
				t.Errorf("times: first sample %d, view request %+v", s.Samples[0].TRelMs, s.ViewRequest)
			}
			for i := 1; i < len(s.Samples); i++ {
				if s.Samples[i].TRelMs <= s.Samples[i-1].TRelMs || s.Samples[i].Status != 200 || s.Samples[i].RTTMs <= 0 {
					t.Fatalf("sample %d: %+v after %+v", i, s.Samples[i], s.Samples[i-1])
				}
			}
			if total, copies := firstSeenTotal(t, s); total != tc.total || copies != tc.copies {
				t.Errorf("first-seen total_changes %d over %d copies, want %d over %d", total, copies, tc.total, tc.copies)
			}
			if tc.single != "" {
				if got, want := string(s.Samples[tc.index].Body), recordedBody(t, tc.single); got != want {
					t.Errorf("decoded sample %d\n%s\nrecorded on its own\n%s", tc.index, got, want)
				}
			}
		})
	}
	for _, bad := range []string{"no_such_series", "../series", "01_get_root"} {
		if _, err := couchdbtest.LoadSeries(bad); err == nil {
			t.Errorf("LoadSeries(%q) did not fail", bad)
		}
	}
}

// recordedBody is the compact body of a response recorded on its own.
func recordedBody(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, f.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
