package indexing

import (
	"testing"

	"github.com/couchbench/couchbench/internal/couch"
)

// BenchmarkAnalyzeCluster200k is the cost of computing the rates of the largest recorded
// build (3 nodes, 6 shard copies, 362 polls of /_active_tasks) once it is sampled.
func BenchmarkAnalyzeCluster200k(b *testing.B) {
	samples, _ := samplesOf(b, "06_cluster_javascript_active_tasks_series")
	if len(samples) == 0 {
		b.Fatal("no samples")
	}
	b.ReportAllocs()
	for b.Loop() {
		Analyze(samples, "bench_cluster_javascript", "_design/bench")
	}
}

// BenchmarkParseTasksSample is the cost of decoding one poll's answer in a cluster build
// (6 tasks): the work the poller adds every 250 ms.
func BenchmarkParseTasksSample(b *testing.B) {
	_, series := samplesOf(b, "06_cluster_javascript_active_tasks_series")
	body := series.Samples[len(series.Samples)/2].Body
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := couch.ParseTasks(body); err != nil {
			b.Fatal(err)
		}
	}
}
