package runner

import (
	"context"
	"fmt"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
)

// indexBegin checks the dataset is there and opens a series per profile and reducer.
func (a *armRun) indexBegin(ctx context.Context) error {
	if err := a.checkSeeded(ctx); err != nil {
		return err
	}
	w := a.cfg.Bench.Spec.Workloads.Indexing
	compaction := "paused"
	if w.ViewCompaction == benchv1.ViewCompactionAllowed {
		compaction = "allowed"
	}
	a.nonce = a.cfg.RunID
	if a.nonce == "" {
		a.nonce = time.Now().UTC().Format("20060102t150405")
	}
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		for _, reducer := range w.Reducers {
			p.Indexing = append(p.Indexing, results.IndexingSeries{
				Reducer: string(reducer), ViewCompaction: compaction, PollInterval: a.pollInterval(),
			})
		}
	}
	return nil
}

func (a *armRun) pollInterval() time.Duration {
	if a.cfg.PollInterval > 0 {
		return a.cfg.PollInterval
	}
	return indexing.DefaultPollInterval
}

// indexUnits are the builds of a round: every reducer on every profile.
func (a *armRun) indexUnits() int {
	return len(a.result.Profiles) * len(a.cfg.Bench.Spec.Workloads.Indexing.Reducers)
}

// indexRound times one build of one reducer on one profile, of a new design document; round
// 0 is the warm-up.
func (a *armRun) indexRound(ctx context.Context, round, unit int) error {
	reducers := len(a.cfg.Bench.Spec.Workloads.Indexing.Reducers)
	i := unit / reducers
	p := &a.result.Profiles[i]
	series := &p.Indexing[unit%reducers]
	reducer := benchv1.Reducer(series.Reducer)
	docs := a.cfg.Bench.Spec.Dataset.Documents
	n := a.countedRounds(a.cfg.Bench.Spec.Workloads.Indexing.Repetitions)
	which := fmt.Sprintf("%s: %s reducer %s", a.label(i), reducer, roundName("run", round, n))
	cpu := a.cpuFrom()
	run, err := indexing.Build(ctx, a.client, a.nodes, indexing.Options{
		DB: p.DB, Documents: docs, Replicas: p.Replicas, Language: a.language, Reducer: reducer,
		Nonce:        fmt.Sprintf("%s-%s-%s-%d", a.nonce, p.Profile, reducer, round),
		PollInterval: series.PollInterval, Expected: a.gens[i].Expected(docs),
		Progress:         func(b indexing.Progress) { logf(a.cfg.Log, "%s: %s", which, built(b)) },
		ProgressInterval: a.cfg.ProgressInterval,
		Ready:            cpu.start,
		Answered:         cpu.end,
	})
	if err == nil {
		run.CPUSeconds, err = cpu.spent()
	}
	if err != nil {
		return fmt.Errorf("profile %s: indexing (%s reducer, run %d): %w", p.Profile, reducer, round, err)
	}
	if round == 0 {
		series.WarmUp = &run
	} else {
		series.Runs = append(series.Runs, run)
	}
	logf(a.cfg.Log, "%s: built in %s (queryable %s): %.0f docs/s, %.0f shard changes/s%s",
		which, run.Built.Round(time.Millisecond), run.Queryable.Round(time.Millisecond),
		run.DocsPerSecond, run.ShardChangesPerSecond, cpu.describe(run.CPUSeconds, docs))
	return nil
}

// built says how far a view build has got, for progress lines.
func built(b indexing.Progress) string {
	return fmt.Sprintf("%.0f%% built (%d of %d shard changes)", 100*b.Share(), b.ChangesDone, b.Changes)
}

// indexEnd summarizes each series, also one that an error left short.
func (a *armRun) indexEnd() {
	for i := range a.result.Profiles {
		for j := range a.result.Profiles[i].Indexing {
			a.result.Profiles[i].Indexing[j].Finish()
		}
	}
}
