package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/couchbench/couchbench/internal/writes"
)

// writeUnits are the writes' units: every insert mode on every profile.
func (a *armRun) writeUnits() int {
	return len(a.result.Profiles) * len(a.cfg.Bench.Spec.Workloads.Writes.Modes())
}

// writesRound runs one insert mode on one profile (round 0 is the warm-up); each mode writes
// a database of its own. A runner that shares the writes runs its share of the mode's
// clients, starting and ending the mode with the other parts at barriers in the mode's
// database.
func (a *armRun) writesRound(ctx context.Context, round, unit int) error {
	w := a.cfg.Bench.Spec.Workloads.Writes
	modes := w.Modes()
	i, mode := unit/len(modes), modes[unit%len(modes)]
	p := &a.result.Profiles[i]
	duration := w.ModeDuration()
	which := fmt.Sprintf("%s: writes %s, %s", a.label(i), mode.Name, roundName("round", round, max(w.Repetitions, 1)))
	cpu := a.cpuFrom()
	opts := writes.Options{
		ProfileDB: p.DB, Shards: p.Shards, Replicas: p.Replicas, Duration: duration, Generator: a.gens[i],
		ProgressInterval: a.cfg.ProgressInterval,
		Began:            cpu.start,
		Ended:            cpu.end,
		Progress: func(done writes.Progress) {
			logf(a.cfg.Log, "%s: %s of %s, %d documents acknowledged, %d errors", which, done.Elapsed.Round(time.Second),
				duration, done.Acknowledged, done.Errors)
		},
	}
	if a.cfg.shared() {
		opts.Part, opts.Parts, opts.Barrier = a.cfg.Part, a.cfg.Parts, a.barrier
	}
	res, err := writes.Round(ctx, a.client, mode, opts, round)
	if err == nil {
		res.CPUSeconds, err = cpu.spent()
	}
	if err != nil {
		return fmt.Errorf("profile %s: %w", p.Profile, err)
	}
	if round == 0 {
		p.WritesWarmUp = append(p.WritesWarmUp, res)
	} else {
		p.Writes = append(p.Writes, res)
	}
	logf(a.cfg.Log, "%s: %.0f docs/s (%d created, %d accepted, %d errors)%s", which, res.DocsPerSecond(), res.Created, res.Accepted,
		res.Errors, cpu.describe(res.CPUSeconds, res.Stored))
	return nil
}
