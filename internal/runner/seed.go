package runner

import (
	"context"
	"fmt"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/seeding"
)

// seed loads the dataset into a new database per profile, then asks the arm's CouchDB what
// runs its views (the seed step is the one every benchmark that builds views has). A runner
// that shares the seeding loads its slice of each profile, starting with the other parts at
// a barrier once part 0 has made the database afresh; the operator joins the parts' loads.
func (a *armRun) seed(ctx context.Context) error {
	c, ds := a.cfg.Client, a.cfg.Bench.Spec.Dataset
	var maxBatchBytes int64
	if ds.MaxBatchBytes != nil {
		maxBatchBytes = ds.MaxBatchBytes.Value()
	}
	from, count := int64(0), ds.Documents
	if a.cfg.shared() {
		from, count = dataset.Slice(ds.Documents, a.cfg.Part, a.cfg.Parts)
	}
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		if a.cfg.Part == 0 {
			if err := c.DeleteDB(ctx, p.DB); err != nil {
				return err
			}
			if _, err := c.CreateDB(ctx, p.DB, p.Shards, p.Replicas); err != nil {
				return fmt.Errorf("creating database %s: %w", p.DB, err)
			}
		}
		if a.cfg.shared() {
			if err := a.barrier(ctx, p.DB, string(benchv1.StepSeed), true); err != nil {
				return fmt.Errorf("profile %s: %w", p.Profile, err)
			}
		}
		res, err := seeding.Load(ctx, c, a.gens[i], seeding.Options{
			DB: p.DB, From: from, Documents: count, BatchSize: int(ds.BatchSize), MaxBatchBytes: maxBatchBytes, Concurrency: int(ds.Concurrency),
			Retry: seeding.DefaultBackoff,
		})
		p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = &res, res.DocsPerSecond(), res.MBPerSecond()
		if err == nil {
			err = res.Check()
		}
		if err != nil {
			return fmt.Errorf("profile %s: seeding %s: %w", p.Profile, p.DB, err)
		}
		logf(a.cfg.Log, "%s: seeded %d documents (%s-%s) into %s in %s (%.0f docs/s, %.2f MB/s, %d retries)",
			a.label(i), res.Stored, a.gens[i].ID(from), a.gens[i].ID(from+count-1), p.DB, res.Elapsed.Round(time.Millisecond),
			res.DocsPerSecond(), res.MBPerSecond(), res.Retries)
	}
	if a.cfg.Part != 0 || a.cfg.Bench.Spec.Workloads.Indexing == nil && a.cfg.Bench.Spec.Workloads.ViewReads == nil && a.cfg.Bench.Spec.Workloads.Reads == nil {
		return nil
	}
	rt, err := a.probe(ctx)
	if err != nil {
		return err
	}
	a.result.Runtime = rt
	logf(a.cfg.Log, "%s: views in %s run on %s %s%s", a.qs.Name, rt.Language, rt.Engine, rt.Version, jsonNote(rt.JSONModule))
	return nil
}

func jsonNote(module string) string {
	if module == "" {
		return ""
	}
	return " (JSON: " + module + ")"
}
