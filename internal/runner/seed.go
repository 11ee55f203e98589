package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/progress"
	"github.com/couchbench/couchbench/internal/seeding"
)

// seedUnits are the loads of a round: one per profile.
func (a *armRun) seedUnits() int { return len(a.result.Profiles) }

// seed loads the dataset into a new database of one profile; round r of
// dataset.seedRepetitions makes the database afresh each time, and the last load is what the
// workloads read. A runner that shares the seeding loads its slice, starting with the other
// parts at a barrier once part 0 has made the database afresh, and, before a load that
// follows, part 0 waits for every part to finish: it deletes the database next. The operator
// joins the parts' loads.
func (a *armRun) seed(ctx context.Context, round, unit int) error {
	c, ds := a.client, a.cfg.Bench.Spec.Dataset
	var maxBatchBytes int64
	if ds.MaxBatchBytes != nil {
		maxBatchBytes = ds.MaxBatchBytes.Value()
	}
	from, count := int64(0), ds.Documents
	if a.cfg.shared() {
		from, count = dataset.Slice(ds.Documents, a.cfg.Part, a.cfg.Parts)
	}
	repeated, last := ds.SeedRepetitions > 1, round == int(max(ds.SeedRepetitions, 1))
	barrier := fmt.Sprintf("%s-%d", benchv1.StepSeed, round)
	i, p := unit, &a.result.Profiles[unit]
	if a.cfg.Part == 0 {
		if err := c.RecreateDB(ctx, p.DB, p.Shards, p.Replicas); err != nil {
			return err
		}
	}
	if a.cfg.shared() {
		if err := a.barrier(ctx, p.DB, barrier, true); err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
	}
	var stored atomic.Int64
	stop := progress.Every(a.cfg.ProgressInterval, func() {
		n := stored.Load()
		logf(a.cfg.Log, "%s: load %d: documents seeded %d of %d (%.0f%%)", a.label(i), round, n, count, 100*float64(n)/float64(max(count, 1)))
	})
	cpu := a.cpuFrom()
	cpu.start()
	res, err := seeding.Load(ctx, c, a.gens[i], seeding.Options{
		DB: p.DB, From: from, Documents: count, BatchSize: int(ds.BatchSize), MaxBatchBytes: maxBatchBytes, Concurrency: int(ds.Concurrency),
		Retry: seeding.DefaultRetry, Stored: &stored,
	})
	cpu.end()
	stop()
	if err == nil {
		res.CPUSeconds, err = cpu.spent()
	}
	p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = &res, res.DocsPerSecond(), res.MBPerSecond()
	if repeated {
		p.SeedingRuns = append(p.SeedingRuns, res)
	}
	if err == nil {
		err = res.Check()
	}
	if err != nil {
		return fmt.Errorf("profile %s: seeding %s (load %d): %w", p.Profile, p.DB, round, err)
	}
	logf(a.cfg.Log, "%s: load %d: seeded %d documents (%s-%s) into %s in %s (%.0f docs/s, %.2f MB/s, %d retries)%s",
		a.label(i), round, res.Stored, a.gens[i].ID(from), a.gens[i].ID(from+count-1), p.DB, res.Elapsed.Round(time.Millisecond),
		res.DocsPerSecond(), res.MBPerSecond(), res.Retries, cpu.describe(res.CPUSeconds, res.Stored))
	if a.cfg.shared() && !last {
		if err := a.barrier(ctx, p.DB, barrier+"-done", a.cfg.Part == 0); err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
	}
	return nil
}
