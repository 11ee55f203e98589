package seeding

// A runner's peak memory while it seeds, per document profile: `couchbench seed` built from
// cmd/couchbench and run as a process of its own against real Apache CouchDB 3.4.3 (the kit's
// single node that `make bench` starts), with the dataset's defaults (batchSize 1000,
// maxBatchBytes 16Mi, concurrency 4). The figure is the kernel's peak resident set of that
// process (getrusage's ru_maxrss), what a Job's memory limit meets. The large profiles load
// fewer documents than the default 100,000: the peak does not grow with the count (the
// loader holds concurrency batches, not the dataset; docs/measurement.md), and the default
// would write gigabytes per run. `make bench` runs this; docs/benchmarks.md has the figures.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/testenv"
)

func BenchmarkRunnerPeakMemory(b *testing.B) {
	srv := couchdbtest.Single(b)
	bin := filepath.Join(b.TempDir(), "couchbench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/couchbench")
	build.Dir = testenv.ModuleRoot(b)
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/couchbench: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, profile string
		documents     int
	}{
		{"small", "{type: small}", 100000},
		{"large", "{type: large}", 5000},
		{"large-1000000", "{type: large, targetBytes: 1000000}", 200},
	} {
		b.Run(tc.name, func(b *testing.B) {
			spec := filepath.Join(b.TempDir(), "bench.yaml")
			if err := os.WriteFile(spec, fmt.Appendf(nil, `apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: peakmem}
spec:
  couchdb:
    existing: {url: "%s", credentialsSecret: {name: s}}
  queryServers:
  - {name: js, language: javascript}
  dataset:
    documents: %d
    profiles: [%s]
  workloads:
    indexing: {}
`, srv.URL(), tc.documents, tc.profile), 0o600); err != nil {
				b.Fatal(err)
			}
			c := srv.Client(b, couch.Options{})
			var peak int64
			for i := range b.N {
				runID := fmt.Sprintf("m%s%d", couchdbtest.RandomID()[:6], i)
				rss := seedProcessPeak(b, bin, spec, runID, srv.Credentials())
				peak = max(peak, rss)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if _, err := c.DeleteDB(ctx, names.Database("peakmem", runID, "js", tc.name)); err != nil {
					b.Errorf("deleting the run's database: %v", err)
				}
				cancel()
			}
			b.ReportMetric(float64(peak)/(1<<20), "MiB-peak-RSS")
		})
	}
}

// seedProcessPeak runs `couchbench seed` and returns its peak resident set in bytes.
func seedProcessPeak(b *testing.B, bin, spec, runID string, creds couch.Credentials) int64 {
	b.Helper()
	cmd := exec.Command(bin, "seed", "-f", spec, "--run-id", runID, "-q")
	// A Job's environment rather than the benchmark's: nothing that tunes the Go runtime.
	cmd.Env = []string{"COUCHDB_USER=" + creds.Username, "COUCHDB_PASSWORD=" + creds.Password, "HOME=" + b.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("couchbench seed: %v\n%s", err, out)
	}
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no resource usage of the seed process")
	}
	return usage.Maxrss << 10 // kilobytes on Linux
}
