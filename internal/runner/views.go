package runner

import (
	"context"
	"fmt"

	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/viewreads"
)

// viewsBegin checks the dataset is there and builds seed 002's views on every profile.
func (a *armRun) viewsBegin(ctx context.Context) error {
	if err := a.checkSeeded(ctx); err != nil {
		return err
	}
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		opts := a.viewReadsOptions(i)
		opts.ProgressInterval = a.cfg.ProgressInterval
		opts.Progress = func(b indexing.Progress) { logf(a.cfg.Log, "%s: building the views to read: %s", a.label(i), built(b)) }
		if err := viewreads.Build(ctx, a.client, opts); err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
		for _, kind := range a.cfg.Bench.Spec.Workloads.ViewReads.Views {
			p.ViewReads = append(p.ViewReads, measured.ViewReads{View: kind})
		}
	}
	return nil
}

func (a *armRun) viewReadsOptions(profile int) viewreads.Options {
	p := a.result.Profiles[profile]
	return viewreads.Options{DB: p.DB, Documents: a.cfg.Bench.Spec.Dataset.Documents, Replicas: p.Replicas, Language: a.language}
}

// viewUnits are the view reads' units: every view on every profile.
func (a *armRun) viewUnits() int {
	return len(a.result.Profiles) * len(a.cfg.Bench.Spec.Workloads.ViewReads.Views)
}

// viewsRound times one full read of one view on one profile; round 0 is the warm-up.
func (a *armRun) viewsRound(ctx context.Context, round, unit int) error {
	views := len(a.cfg.Bench.Spec.Workloads.ViewReads.Views)
	i := unit / views
	p := &a.result.Profiles[i]
	res := &p.ViewReads[unit%views]
	cpu := a.cpuFrom()
	opts := a.viewReadsOptions(i)
	opts.Began, opts.Ended = cpu.start, cpu.end
	read, err := viewreads.ReadOnce(ctx, a.client, opts, res.View)
	if err == nil {
		read.CPUSeconds, err = cpu.spent()
	}
	if err != nil {
		return fmt.Errorf("profile %s: %w", p.Profile, err)
	}
	if round == 0 {
		res.WarmUp = &read
	} else {
		res.Reads = append(res.Reads, read)
	}
	logf(a.cfg.Log, "%s: view %s read %d: %.3f s%s", a.label(i), res.View, round, read.Elapsed.Seconds(), cpu.describe(read.CPUSeconds, read.Rows))
	return nil
}
