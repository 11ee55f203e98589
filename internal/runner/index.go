package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
)

// index times the builds of every reducer on every profile, with view compaction paused
// unless the spec allows it; the pause is undone whatever happens.
func (a *armRun) index(ctx context.Context) (err error) {
	if err := a.checkSeeded(ctx); err != nil {
		return err
	}
	w := a.cfg.Bench.Spec.Workloads.Indexing
	compaction := "allowed"
	if w.ViewCompaction != benchv1.ViewCompactionAllowed {
		compaction = "paused"
		restore, perr := indexing.PauseViewCompaction(ctx, a.cfg.Client, a.nodes)
		defer func() {
			if rerr := restore(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}()
		if perr != nil {
			return perr
		}
	}
	poll := a.cfg.PollInterval
	if poll <= 0 {
		poll = indexing.DefaultPollInterval
	}
	nonceBase := a.cfg.RunID
	if nonceBase == "" {
		nonceBase = time.Now().UTC().Format("20060102t150405")
	}
	docs := a.cfg.Bench.Spec.Dataset.Documents
	for i := range a.result.Profiles {
		p := &a.result.Profiles[i]
		expected := a.gens[i].Expected(docs)
		for _, reducer := range w.Reducers {
			series := results.IndexingSeries{Reducer: string(reducer), ViewCompaction: compaction, PollInterval: poll}
			first := 1
			if w.WarmUp {
				first = 0 // run 0 is the warm-up
			}
			for rep := first; rep <= int(w.Repetitions); rep++ {
				run, err := indexing.Build(ctx, a.cfg.Client, a.nodes, indexing.Options{
					DB: p.DB, Documents: docs, Replicas: p.Replicas, Language: a.language, Reducer: reducer,
					Nonce:        fmt.Sprintf("%s-%s-%s-%d", nonceBase, p.Profile, reducer, rep),
					PollInterval: poll, Expected: expected,
				})
				if err != nil {
					series.Finish()
					p.Indexing = append(p.Indexing, series)
					return fmt.Errorf("profile %s: indexing (%s reducer, run %d): %w", p.Profile, reducer, rep, err)
				}
				if rep == 0 {
					series.WarmUp = &run
				} else {
					series.Runs = append(series.Runs, run)
				}
				logf(a.cfg.Log, "%s: %s reducer run %d: built in %s (queryable %s): %.0f docs/s, %.0f shard changes/s",
					a.label(i), reducer, rep, run.Built.Round(time.Millisecond), run.Queryable.Round(time.Millisecond),
					run.DocsPerSecond, run.ShardChangesPerSecond)
			}
			series.Finish()
			p.Indexing = append(p.Indexing, series)
		}
	}
	return nil
}
