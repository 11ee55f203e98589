package runner

import (
	"context"
	"fmt"

	"github.com/couchbench/couchbench/internal/writes"
)

// writes measures the insert modes on every profile; each mode writes a database of its own.
func (a *armRun) writes(ctx context.Context) error {
	w := a.cfg.Bench.Spec.Workloads.Writes
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		res, err := writes.Run(ctx, a.cfg.Client, writes.Modes(w), writes.Options{
			ProfileDB: p.DB, Shards: p.Shards, Replicas: p.Replicas, Duration: w.ModeDuration(), Generator: a.gens[i],
			Repetitions: int(w.Repetitions),
		})
		p.Writes = res
		for _, r := range res {
			logf(a.cfg.Log, "%s: writes %s: %.0f docs/s (%d created, %d accepted, %d errors)",
				a.label(i), r.Mode, r.DocsPerSecond(), r.Created, r.Accepted, r.Errors)
		}
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
	}
	return nil
}
