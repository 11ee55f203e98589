// Package runner runs the workloads of a CouchBenchmark against one CouchDB: for each query
// server (arm) and document profile it seeds a database, builds and times the indexing
// view, reads views and measures inserts, and collects everything in a results document.
//
// Steps can run alone (the operator runs each as its own Job) or all together
// (`couchbench run`). Whatever happens, the document keeps what was measured before an
// error or an interrupt.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/seeding"
	"github.com/couchbench/couchbench/internal/viewreads"
	"github.com/couchbench/couchbench/internal/writes"
)

// Step is one part of a run.
type Step string

const (
	StepSeed   Step = "seed"
	StepIndex  Step = "index"
	StepViews  Step = "views"
	StepWrites Step = "writes"
)

// AllSteps are the steps of a full run, in order.
var AllSteps = []Step{StepSeed, StepIndex, StepViews, StepWrites}

// Config is one invocation of the runner.
type Config struct {
	Bench  *benchv1.CouchBenchmark
	Client *couch.Client
	// Arms limits the run to these query servers; empty runs all.
	Arms []string
	// Steps to run, in AllSteps order.
	Steps []Step
	// RunID names this run's databases and design documents, so that runs sharing a
	// CouchDB keep apart and the steps of one run (separate Jobs) find each other's data.
	// Empty: plain database names, design documents named from the clock.
	RunID string
	// Log receives progress lines.
	Log io.Writer
	// PollInterval of /_active_tasks during builds; 0 uses indexing.DefaultPollInterval.
	PollInterval time.Duration
}

// Run runs the configured steps and returns the results document. The document is never
// nil: on an error or interrupt it holds what was measured before, with Error (and
// Interrupted) set, and the error is returned as well.
func Run(ctx context.Context, cfg Config) (*results.Document, error) {
	spec := cfg.Bench.Spec
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Benchmark:     cfg.Bench.Name,
		SpecHash:      benchspec.Hash(spec),
		Seed:          spec.Dataset.Seed,
		StartedAt:     time.Now().UTC(),
		Server:        results.Provenance{URL: cfg.Client.URL()},
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	err := run(ctx, cfg, doc)
	doc.FinishedAt = time.Now().UTC()
	if err != nil {
		doc.Error = err.Error()
		doc.Interrupted = errors.Is(err, context.Canceled)
	}
	return doc, err
}

func run(ctx context.Context, cfg Config, doc *results.Document) error {
	c := cfg.Client
	info, err := c.Server(ctx)
	if err != nil {
		return fmt.Errorf("reaching CouchDB at %s: %w", c.URL(), err)
	}
	members, err := c.Membership(ctx)
	if err != nil {
		return fmt.Errorf("reading cluster membership: %w", err)
	}
	doc.Server.Vendor, doc.Server.Version, doc.Server.GitSHA = info.Vendor.Name, info.Version, info.GitSHA
	doc.Server.Nodes = members.ClusterNodes
	logf(cfg.Log, "server %s: %s %s, %d node(s)", c.URL(), info.Vendor.Name, info.Version, len(members.ClusterNodes))

	arms, err := selectArms(cfg.Bench.Spec.QueryServers, cfg.Arms)
	if err != nil {
		return err
	}
	for _, qs := range arms {
		arm := results.Arm{QueryServer: qs.Name, Language: ddoc.Language(qs)}
		err := runArm(ctx, cfg, members.ClusterNodes, qs, &arm)
		doc.Arms = append(doc.Arms, arm)
		if err != nil {
			return fmt.Errorf("query server %s: %w", qs.Name, err)
		}
	}
	return nil
}

// selectArms picks the named query servers (all without names), presets applied.
func selectArms(all []benchv1.QueryServer, names []string) ([]benchv1.QueryServer, error) {
	var out []benchv1.QueryServer
	if len(names) == 0 {
		for _, q := range all {
			out = append(out, q.Resolved())
		}
		return out, nil
	}
	for _, n := range names {
		i := slices.IndexFunc(all, func(q benchv1.QueryServer) bool { return q.Name == n })
		if i < 0 {
			known := make([]string, len(all))
			for j, q := range all {
				known[j] = q.Name
			}
			return nil, fmt.Errorf("no query server %q in the benchmark (it has %s)", n, strings.Join(known, ", "))
		}
		out = append(out, all[i].Resolved())
	}
	return out, nil
}

// runArm runs the steps for every profile of one arm, appending to arm as results come.
func runArm(ctx context.Context, cfg Config, nodes []string, qs benchv1.QueryServer, arm *results.Arm) error {
	spec := cfg.Bench.Spec
	replicas := min(3, max(len(nodes), 1))
	if spec.Dataset.Replicas != nil {
		replicas = int(*spec.Dataset.Replicas)
	}
	for _, profile := range spec.Dataset.Profiles {
		gen := dataset.New(spec.Dataset.Seed, profile)
		p := results.Profile{
			Profile:  dataset.ProfileName(profile),
			DB:       DatabaseName(cfg.Bench.Name, cfg.RunID, qs.Name, dataset.ProfileName(profile)),
			Shards:   int(spec.Dataset.Shards),
			Replicas: replicas,
		}
		err := runProfile(ctx, cfg, nodes, qs, gen, &p)
		arm.Profiles = append(arm.Profiles, p)
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Profile, err)
		}
	}
	return nil
}

func (cfg Config) has(s Step) bool { return slices.Contains(cfg.Steps, s) }

func runProfile(ctx context.Context, cfg Config, nodes []string, qs benchv1.QueryServer, gen *dataset.Generator, p *results.Profile) error {
	spec := cfg.Bench.Spec
	c := cfg.Client
	docs := spec.Dataset.Documents
	label := qs.Name + "/" + p.Profile
	language := ddoc.Language(qs)

	if cfg.has(StepSeed) {
		if err := c.DeleteDB(ctx, p.DB); err != nil {
			return err
		}
		if _, err := c.CreateDB(ctx, p.DB, p.Shards, p.Replicas); err != nil {
			return fmt.Errorf("creating database %s: %w", p.DB, err)
		}
		res, err := seeding.Load(ctx, c, gen, seeding.Options{
			DB: p.DB, Documents: docs, BatchSize: int(spec.Dataset.BatchSize), Concurrency: int(spec.Dataset.Concurrency),
			Retry: seeding.DefaultBackoff,
		})
		p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = &res, res.DocsPerSecond(), res.MBPerSecond()
		if err == nil {
			err = res.Check()
		}
		if err != nil {
			return fmt.Errorf("seeding %s: %w", p.DB, err)
		}
		logf(cfg.Log, "%s: seeded %d documents into %s in %s (%.0f docs/s, %.2f MB/s, %d retries)",
			label, res.Stored, p.DB, res.Elapsed.Round(time.Millisecond), res.DocsPerSecond(), res.MBPerSecond(), res.Retries)
	} else if cfg.has(StepIndex) || cfg.has(StepViews) {
		if err := checkSeeded(ctx, c, p.DB, docs); err != nil {
			return err
		}
	}

	if w := spec.Workloads.Indexing; w != nil && cfg.has(StepIndex) {
		if err := runIndexing(ctx, cfg, nodes, w, language, gen, p, label); err != nil {
			return err
		}
	}
	if w := spec.Workloads.ViewReads; w != nil && cfg.has(StepViews) {
		res, err := viewreads.Run(ctx, c, viewreads.Options{
			DB: p.DB, Documents: docs, Language: language, Views: w.Views, Repetitions: int(w.Repetitions),
		})
		p.ViewReads = res
		for _, r := range res {
			logf(cfg.Log, "%s: view %s: %.3f s per full read (median of %d)", label, r.View, results.ViewReadSeconds(r).Median, len(r.Reads))
		}
		if err != nil {
			return err
		}
	}
	if w := spec.Workloads.Writes; w != nil && cfg.has(StepWrites) {
		res, err := writes.Run(ctx, c, writes.Modes(w), writes.Options{
			DBPrefix: p.DB + "-w", Shards: p.Shards, Replicas: p.Replicas, Duration: w.ModeDuration(), Generator: gen,
		})
		p.Writes = res
		for _, r := range res {
			logf(cfg.Log, "%s: writes %s: %.0f docs/s (%d created, %d accepted, %d errors)",
				label, r.Mode, r.DocsPerSecond(), r.Created, r.Accepted, r.Errors)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runIndexing times the builds of every reducer, with view compaction paused unless the
// spec allows it; the pause is undone whatever happens.
func runIndexing(ctx context.Context, cfg Config, nodes []string, w *benchv1.IndexingWorkload, language string,
	gen *dataset.Generator, p *results.Profile, label string) (err error) {
	compaction := "allowed"
	if w.ViewCompaction != benchv1.ViewCompactionAllowed {
		compaction = "paused"
		restore, perr := indexing.PauseViewCompaction(ctx, cfg.Client, nodes)
		defer func() {
			if rerr := restore(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}()
		if perr != nil {
			return perr
		}
	}
	docs := cfg.Bench.Spec.Dataset.Documents
	expected := gen.Expected(docs)
	nonceBase := cfg.RunID
	if nonceBase == "" {
		nonceBase = time.Now().UTC().Format("20060102t150405")
	}
	for _, reducer := range w.Reducers {
		series := results.IndexingSeries{Reducer: string(reducer), ViewCompaction: compaction}
		for rep := 1; rep <= int(w.Repetitions); rep++ {
			run, err := indexing.Build(ctx, cfg.Client, nodes, indexing.Options{
				DB: p.DB, Documents: docs, Replicas: p.Replicas, Language: language, Reducer: reducer,
				Nonce:        fmt.Sprintf("%s-%s-%d", nonceBase, reducer, rep),
				PollInterval: cfg.PollInterval, Expected: expected,
			})
			if err != nil {
				series.Finish()
				p.Indexing = append(p.Indexing, series)
				return fmt.Errorf("indexing (%s reducer, run %d): %w", reducer, rep, err)
			}
			series.Runs = append(series.Runs, run)
			logf(cfg.Log, "%s: %s reducer run %d: built in %s (queryable %s): %.0f docs/s, %.0f shard changes/s",
				label, reducer, rep, run.Built.Round(time.Millisecond), run.Queryable.Round(time.Millisecond),
				run.DocsPerSecond, run.ShardChangesPerSecond)
		}
		series.Finish()
		p.Indexing = append(p.Indexing, series)
	}
	return nil
}

// checkSeeded makes a step that needs the dataset fail early and clearly when it is not
// there.
func checkSeeded(ctx context.Context, c *couch.Client, db string, docs int64) error {
	info, err := c.DBInfo(ctx, db)
	if couch.StatusOf(err) == 404 {
		return fmt.Errorf("database %s does not exist: run the seed step first", db)
	}
	if err != nil {
		return err
	}
	// Design documents count in doc_count.
	if info.DocCount < docs {
		return fmt.Errorf("database %s has %d documents, the dataset %d: run the seed step first", db, info.DocCount, docs)
	}
	return nil
}

// DatabaseName is the database of one arm and profile, "cb-<benchmark>[-<run id>]-<arm>-<profile>",
// in CouchDB's allowed characters.
func DatabaseName(bench, runID, arm, profile string) string {
	parts := []string{"cb", bench}
	if runID != "" {
		parts = append(parts, runID)
	}
	name := strings.ToLower(strings.Join(append(parts, arm, profile), "-"))
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
