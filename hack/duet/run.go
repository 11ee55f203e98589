package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/seeding"
	"github.com/couchbench/couchbench/internal/sequential"
	"github.com/couchbench/couchbench/internal/turns"
)

// The orders.
const (
	orderTurns = "turns"
	orderDuet  = "duet"
	// orderMixed alternates the orders round by round in one run (odd rounds take turns):
	// both orders meet the same servers, databases and neighbours.
	orderMixed = "mixed"
)

// The ratios judged, candidate over reference: a build's CPU cost and its wall time.
const (
	metricCPU  = "cpu"
	metricWall = "wall"
)

// kindRun is the Kind of a run's end.
const kindRun = "run"

// record is one JSON line: a round (Kind "round") or a run's end (Kind "run").
type record struct {
	Kind  string    `json:"kind"`
	Run   string    `json:"run"`
	Label string    `json:"label"`
	Order string    `json:"order"`
	At    time.Time `json:"at"`
	// Load1 is the machine's load average over the last minute, as the round began (or the
	// run ended).
	Load1 float64 `json:"load1"`
	// A round: its number (0 the warm-up) and each arm's build.
	Round int              `json:"round,omitempty"`
	Arms  map[string]build `json:"arms,omitempty"`
	// A run: its counted rounds, why it stopped and what the sequences said.
	Rounds    int                            `json:"rounds,omitempty"`
	Stopped   string                         `json:"stopped,omitempty"`
	Decisions map[string]sequential.Decision `json:"decisions,omitempty"`
	Seconds   float64                        `json:"seconds,omitempty"`
}

// build is one arm's build in a round.
type build struct {
	StartedAt time.Time `json:"startedAt"`
	// Built is the build's time as the runner takes it (indexing.Build), in seconds.
	Built float64 `json:"built"`
	// CPU is what the server's cgroup was charged over the whole Build call (its untimed
	// steps too: design documents written, the indexes opened, the view checked), TreeCPU the
	// same processes' time from /proc, Call the call's wall time; seconds.
	CPU     float64 `json:"cpu"`
	TreeCPU float64 `json:"treeCpu"`
	Call    float64 `json:"call"`
}

// arm is one arm's server and database.
type arm struct {
	name  string
	c     *couch.Client
	nodes []string
	cg    cpucost.Cgroup
	tree  cpucost.Tree
	db    string
}

type config struct {
	order           string
	runs, rounds    int
	docs            int64
	label, language string
	target, alpha   float64
	tunedFor        int
	limit           time.Duration
	// stopOn is what a run with a target waits for: both ratios decided, or the CPU cost's.
	stopOn    string
	out       *os.File
	gen       *dataset.Generator
	ref, cand *arm
}

func runCommand(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var cfg config
	aURL := fs.String("a", "", "the reference arm's CouchDB URL")
	bURL := fs.String("b", "", "the candidate arm's CouchDB URL")
	aDir := fs.String("a-dir", "", "the reference server's kit directory")
	bDir := fs.String("b-dir", "", "the candidate server's kit directory")
	fs.StringVar(&cfg.order, "order", "alternate", "turns, duet, alternate (runs alternate between the two) or mixed (rounds alternate, turns first)")
	fs.IntVar(&cfg.runs, "runs", 1, "runs, each on databases seeded afresh")
	fs.IntVar(&cfg.rounds, "rounds", 20, "counted rounds per run, after a warm-up (with -target: at most this many)")
	fs.Int64Var(&cfg.docs, "docs", 20000, "documents (the nightly sample's 20,000)")
	fs.StringVar(&cfg.label, "label", "", "a label for the runs' records")
	fs.StringVar(&cfg.language, "language", "javascript", "the view's language")
	fs.Float64Var(&cfg.target, "target", 0, "stop a run once both ratios are decided (internal/sequential), "+
		"with this target (0.05: no change as large as 5%); 0: run every round")
	fs.Float64Var(&cfg.alpha, "alpha", 0.01,
		"the family-wise alpha of the two ratios' sequences")
	fs.IntVar(&cfg.tunedFor, "tuned-for", 20, "the rounds the sequences are tightest at")
	fs.DurationVar(&cfg.limit, "limit", 15*time.Minute, "with -target: a run's time limit, seeding included")
	fs.StringVar(&cfg.stopOn, "stop-on", "both", "with -target: stop once both ratios are decided (both), or once "+
		"the CPU cost's is (cpu; the wall time's sequence still takes its half of -alpha)")
	out := fs.String("out", "", "the JSON lines file to append to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *aURL == "" || *bURL == "" || *aDir == "" || *bDir == "" || *out == "" {
		return errors.New("-a, -b, -a-dir, -b-dir and -out are required")
	}
	if cfg.order != orderTurns && cfg.order != orderDuet && cfg.order != "alternate" && cfg.order != orderMixed {
		return fmt.Errorf("-order %q: turns, duet, alternate or mixed", cfg.order)
	}
	if cfg.stopOn != "both" && cfg.stopOn != metricCPU {
		return fmt.Errorf("-stop-on %q: both or cpu", cfg.stopOn)
	}
	if cfg.stopOn == metricCPU && cfg.target == 0 {
		return errors.New("-stop-on cpu needs -target: without one, no sequence decides")
	}
	cfg.out, err = os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cfg.out.Close()) }()
	cfg.gen = dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
	for _, s := range []struct {
		arm      **arm
		name     string
		url, dir string
	}{{&cfg.ref, "ref", *aURL, *aDir}, {&cfg.cand, "cand", *bURL, *bDir}} {
		a, restore, err := openArm(ctx, s.name, s.url, s.dir)
		if restore != nil {
			defer func() { err = errors.Join(err, restore()) }()
		}
		if err != nil {
			return err
		}
		*s.arm = a
		undo, err := indexing.PauseViewCompaction(ctx, a.c, a.nodes, indexing.DefaultWaits)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, undo()) }()
	}
	for i := range cfg.runs {
		order := cfg.order
		if order == "alternate" {
			order = []string{orderTurns, orderDuet}[i%2]
		}
		if err := cfg.run(ctx, order); err != nil {
			return err
		}
	}
	return nil
}

// openArm connects to a server and moves its process tree into a cgroup of its own.
func openArm(ctx context.Context, name, url, dir string) (*arm, func() error, error) {
	c, err := couch.New(url, couch.Credentials{Username: os.Getenv("COUCHDB_USER"), Password: os.Getenv("COUCHDB_PASSWORD")},
		couch.Options{MaxConns: 8})
	if err != nil {
		return nil, nil, err
	}
	m, err := c.Membership(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", url, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "node1", "couchdb.pid"))
	if err != nil {
		return nil, nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, nil, err
	}
	cg, restore, err := cpucost.Adopt("duet-"+name+"-"+strconv.Itoa(pid), pid)
	if err != nil {
		return nil, restore, err
	}
	return &arm{name: name, c: c, nodes: m.ClusterNodes, cg: cg, tree: cpucost.Tree{Root: pid}}, restore, nil
}

// run is one run: both arms seeded afresh, a warm-up round, then the rounds.
func (cfg *config) run(ctx context.Context, order string) (err error) {
	began := time.Now()
	runID := fmt.Sprintf("%s-%s-%s", cfg.label, order, began.UTC().Format("0102t150405"))
	arms := []*arm{cfg.ref, cfg.cand}
	for _, a := range arms {
		a.db = "duet-" + strings.ToLower(runID) + "-" + a.name
		if err := a.c.RecreateDB(ctx, a.db, 2, 1); err != nil {
			return err
		}
		defer func() {
			_, derr := a.c.DeleteDB(context.WithoutCancel(ctx), a.db)
			err = errors.Join(err, derr)
		}()
		if _, err := seeding.Load(ctx, a.c, cfg.gen, seeding.Options{DB: a.db, Documents: cfg.docs, BatchSize: 1000,
			Concurrency: 4, Retry: seeding.DefaultRetry}); err != nil {
			return fmt.Errorf("seeding %s: %w", a.name, err)
		}
	}
	var fam *sequential.Family
	if cfg.target > 0 {
		fam = sequential.NewFamily(cfg.alpha, cfg.tunedFor, sequential.Rule{Target: cfg.target}, metricCPU, metricWall)
	}
	var ratios = map[string][]float64{}
	stopped := fmt.Sprintf("%d rounds", cfg.rounds)
	rounds := 0
	for round := 0; round <= cfg.rounds; round++ {
		roundOrder := order
		if order == orderMixed {
			roundOrder = []string{orderDuet, orderTurns}[round%2]
		}
		rec := record{Kind: "round", Run: runID, Label: cfg.label, Order: roundOrder, At: time.Now().UTC(), Load1: load1(), Round: round}
		if rec.Arms, err = cfg.round(ctx, roundOrder, runID, round); err != nil {
			return fmt.Errorf("run %s, round %d: %w", runID, round, err)
		}
		if err := cfg.write(rec); err != nil {
			return err
		}
		if round == 0 {
			continue
		}
		rounds = round
		ref, cand := rec.Arms[cfg.ref.name], rec.Arms[cfg.cand.name]
		ratios[metricCPU] = append(ratios[metricCPU], cand.CPU/ref.CPU)
		ratios[metricWall] = append(ratios[metricWall], cand.Built/ref.Built)
		if fam != nil {
			fam.Add(metricCPU, cand.CPU/ref.CPU)
			fam.Add(metricWall, cand.Built/ref.Built)
			if fam.Done() {
				stopped = "both decided"
				break
			}
			if cfg.stopOn == metricCPU && fam.Decision(metricCPU).Outcome != sequential.Undecided {
				stopped = "cpu decided"
				break
			}
			if time.Since(began) >= cfg.limit {
				stopped = "time limit"
				break
			}
		}
	}
	end := record{Kind: kindRun, Run: runID, Label: cfg.label, Order: order, At: time.Now().UTC(), Load1: load1(), Rounds: rounds,
		Stopped: stopped, Seconds: time.Since(began).Seconds()}
	if fam != nil {
		end.Decisions = map[string]sequential.Decision{}
		for _, m := range fam.Metrics() {
			end.Decisions[m] = fam.Decision(m)
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %d rounds in %.0f s (%s), load %.1f; cpu %s, wall %s\n", runID, rounds, end.Seconds, stopped,
		end.Load1, summary(ratios[metricCPU], end.Decisions[metricCPU]), summary(ratios[metricWall], end.Decisions[metricWall]))
	return cfg.write(end)
}

// summary is a ratio's geometric mean and spread, and its decision.
func summary(ratios []float64, d sequential.Decision) string {
	m, sd := logMeanSD(ratios)
	s := fmt.Sprintf("%.4f (round spread %.1f%%)", math.Exp(m), 100*sd)
	if d.Interval.Rounds > 0 {
		s += fmt.Sprintf(" %s [%.4f, %.4f]", d.Outcome, d.Interval.Low, d.Interval.High)
	}
	return s
}

// round builds both arms' views once, in the order's way.
func (cfg *config) round(ctx context.Context, order, runID string, round int) (map[string]build, error) {
	builds := map[string]build{}
	nonce := func(a *arm) string { return fmt.Sprintf("%s-%s-%d", runID, a.name, round) }
	if order == orderTurns {
		for _, name := range turns.Order(runID, "index", round, []string{cfg.ref.name, cfg.cand.name}) {
			a := cfg.ref
			if name == cfg.cand.name {
				a = cfg.cand
			}
			b, err := cfg.build(ctx, a, nonce(a), nil)
			if err != nil {
				return nil, err
			}
			builds[a.name] = b
		}
		return builds, nil
	}
	// Duet: each arm reads its server's CPU time, then both start their builds at once.
	var (
		mu    sync.Mutex
		errs  []error
		ready sync.WaitGroup
		wg    sync.WaitGroup
	)
	start := make(chan struct{})
	for _, a := range []*arm{cfg.ref, cfg.cand} {
		ready.Add(1)
		wg.Go(func() {
			b, err := cfg.build(ctx, a, nonce(a), func() { ready.Done(); <-start })
			mu.Lock()
			defer mu.Unlock()
			builds[a.name] = b
			errs = append(errs, err)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return builds, errors.Join(errs...)
}

// build times one build of a new design document on an arm's server and reads what the
// server spent on it; wait, when given, is called between the first readings and the build.
func (cfg *config) build(ctx context.Context, a *arm, nonce string, wait func()) (build, error) {
	before, err1 := a.cg.Read()
	treeBefore, err2 := a.tree.Read()
	if wait != nil {
		wait()
	}
	if err := errors.Join(err1, err2); err != nil {
		return build{}, err
	}
	run, err := indexing.Build(ctx, a.c, a.nodes, indexing.Options{DB: a.db, Documents: cfg.docs, Replicas: 1,
		Language: cfg.language, Reducer: benchv1.ReducerBuiltin, Nonce: nonce, Expected: cfg.gen.Expected(cfg.docs)})
	after, err1 := a.cg.Read()
	treeAfter, err2 := a.tree.Read()
	if err := errors.Join(err, err1, err2); err != nil {
		return build{}, fmt.Errorf("%s: %w", a.name, err)
	}
	spent := cpucost.Between(before, after)
	return build{StartedAt: run.StartedAt, Built: run.Built.Seconds(), CPU: spent.CPU.Seconds(),
		TreeCPU: cpucost.Between(treeBefore, treeAfter).CPU.Seconds(), Call: spent.Wall.Seconds()}, nil
}

func (cfg *config) write(rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = cfg.out.Write(append(data, '\n'))
	return err
}

// load1 is the machine's load average over the last minute.
func load1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(data))
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// logMeanSD is the mean and standard deviation of the logarithms.
func logMeanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += math.Log(x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		d := math.Log(x) - mean
		sd += d * d
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return mean, sd
}
