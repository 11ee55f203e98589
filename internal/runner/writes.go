package runner

import (
	"context"
	"fmt"

	"github.com/couchbench/couchbench/internal/writes"
)

// writeUnits are the writes' units: every insert mode on every profile.
func (a *armRun) writeUnits() int {
	return len(a.result.Profiles) * len(writes.Modes(a.cfg.Bench.Spec.Workloads.Writes))
}

// writesRound runs one insert mode on one profile (round 0 is the warm-up); each mode writes
// a database of its own. A runner that shares the writes runs its share of the mode's
// clients, starting and ending the mode with the other parts at barriers in the mode's
// database.
func (a *armRun) writesRound(ctx context.Context, round, unit int) error {
	w := a.cfg.Bench.Spec.Workloads.Writes
	modes := writes.Modes(w)
	i, mode := unit/len(modes), modes[unit%len(modes)]
	p := &a.result.Profiles[i]
	opts := writes.Options{
		ProfileDB: p.DB, Shards: p.Shards, Replicas: p.Replicas, Duration: w.ModeDuration(), Generator: a.gens[i],
	}
	if a.cfg.shared() {
		opts.Part, opts.Parts, opts.Barrier = a.cfg.Part, a.cfg.Parts, a.barrier
	}
	res, err := writes.Round(ctx, a.client, mode, opts, round)
	if err != nil {
		return fmt.Errorf("profile %s: %w", p.Profile, err)
	}
	if round == 0 {
		p.WritesWarmUp = append(p.WritesWarmUp, res)
	} else {
		p.Writes = append(p.Writes, res)
	}
	logf(a.cfg.Log, "%s: writes %s, round %d: %.0f docs/s (%d created, %d accepted, %d errors)",
		a.label(i), res.Mode, round, res.DocsPerSecond(), res.Created, res.Accepted, res.Errors)
	return nil
}
