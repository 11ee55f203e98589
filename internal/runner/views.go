package runner

import (
	"context"
	"fmt"

	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/viewreads"
)

// views times full reads of seed 002's views on every profile.
func (a *armRun) views(ctx context.Context) error {
	if err := a.checkSeeded(ctx); err != nil {
		return err
	}
	w := a.cfg.Bench.Spec.Workloads.ViewReads
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		res, err := viewreads.Run(ctx, a.cfg.Client, viewreads.Options{
			DB: p.DB, Documents: a.cfg.Bench.Spec.Dataset.Documents, Language: a.language, Views: w.Views, Repetitions: int(w.Repetitions),
			WarmUp: w.WarmUp,
		})
		p.ViewReads = res
		for _, r := range res {
			logf(a.cfg.Log, "%s: view %s: %.3f s per full read (median of %d)", a.label(i), r.View, results.ViewReadSeconds(r).Median, len(r.Reads))
		}
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
	}
	return nil
}
