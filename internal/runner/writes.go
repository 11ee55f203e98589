package runner

import (
	"context"
	"fmt"

	"github.com/couchbench/couchbench/internal/writes"
)

// writesRound runs every insert mode once on every profile (round 0 is the warm-up); each
// mode writes a database of its own. A runner that shares the writes runs its share of each
// mode's clients, starting and ending each mode with the other parts at barriers in the
// mode's database.
func (a *armRun) writesRound(ctx context.Context, round int) error {
	w := a.cfg.Bench.Spec.Workloads.Writes
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		opts := writes.Options{
			ProfileDB: p.DB, Shards: p.Shards, Replicas: p.Replicas, Duration: w.ModeDuration(), Generator: a.gens[i],
			// Each mode is reported as it ends: a round of several modes takes minutes.
			Ended: func(r writes.Result) {
				logf(a.cfg.Log, "%s: writes %s, round %d: %.0f docs/s (%d created, %d accepted, %d errors)",
					a.label(i), r.Mode, round, r.DocsPerSecond(), r.Created, r.Accepted, r.Errors)
			},
		}
		if a.cfg.shared() {
			opts.Part, opts.Parts, opts.Barrier = a.cfg.Part, a.cfg.Parts, a.barrier
		}
		res, err := writes.Round(ctx, a.cfg.Client, writes.Modes(w), opts, round)
		if round == 0 {
			p.WritesWarmUp = append(p.WritesWarmUp, res...)
		} else {
			p.Writes = append(p.Writes, res...)
		}
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
		logf(a.cfg.Log, "%s: writes round %d of %d done (%d modes)", a.label(i), round, max(w.Repetitions, 1), len(res))
	}
	return nil
}
