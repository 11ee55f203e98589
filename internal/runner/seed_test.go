package runner

import (
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// While a load runs, progress lines say how many documents are in so far; on real CouchDB
// (the kit's single node), with large documents so that the load spans several of the short
// intervals. The counts never go back, stay within the total, and the load's last line says
// the total; nothing is asserted on when the lines came.
func TestSeedingProgressLinesOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	const documents = 3000
	_, log, err := realRun(t, srv, jsBench("seedprogress", `
  dataset:
    documents: 3000
    profiles: [{type: large}]
    concurrency: 2
    maxBatchBytes: 1Mi
  workloads:
    indexing: {}
`), Config{Steps: []benchv1.Step{benchv1.StepSeed}, ProgressInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, log)
	}
	line := regexp.MustCompile(`(?m)^\S+ js/large: load 1: (?:documents seeded (\d+) of (\d+) \((\d+)%\)|seeded (\d+) documents )`)
	var counts []int64
	done := false
	for _, m := range line.FindAllStringSubmatch(log, -1) {
		if done {
			t.Errorf("%q after the load's last line", m[0])
		}
		if m[4] != "" {
			n, _ := strconv.ParseInt(m[4], 10, 64)
			counts, done = append(counts, n), true
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		percent, _ := strconv.Atoi(m[3])
		if m[2] != strconv.Itoa(documents) || n < 0 || n > documents || math.Abs(float64(percent)-float64(n)*100/documents) > 0.5 {
			t.Errorf("%q: want a count from 0 to %d of %d and its share", m[0], documents, documents)
		}
		if len(counts) > 0 && n < counts[len(counts)-1] {
			t.Errorf("%q: the count went back from %d", m[0], counts[len(counts)-1])
		}
		counts = append(counts, n)
	}
	if len(counts) < 3 || !done || counts[len(counts)-1] != documents {
		t.Errorf("counts %v: want progress lines over the load, ending with its line of all %d documents:\n%s", counts, documents, log)
	}
	t.Logf("counts %v", counts)
}
