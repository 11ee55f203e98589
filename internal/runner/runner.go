// Package runner runs the workloads of a CouchBenchmark against one CouchDB: for each query
// server (arm) it seeds a database per document profile, builds and times the indexing view,
// reads views and measures inserts, and collects everything in a results document.
//
// Steps can run alone (the operator runs each as its own Job) or all together
// (`couchbench run`); either way they run in the plan's order, each over every arm and
// profile, and each arm's step is recorded with its start and end. The arms of one runner
// share its CouchDB, so they take turns round by round within a step (rounds.go). Whatever
// happens, the document keeps what was measured before an error or an interrupt. One file per
// step: seed.go, index.go, views.go, writes.go; probe.go asks the arm's CouchDB what runs its
// views before the first step, and stops an arm that runs on something else than it asks
// for; clean.go deletes the databases of a run.
//
// The arms of a runner take turns within each step, round by round, in a fresh random order
// every round (rounds.go): arms that share one CouchDB, and arms that each have their own
// (Config.Servers: an A/B of CouchDB builds, or provisioned arms side by side) alike, so that
// the machine's drift during a step reaches every arm alike. Arms that each have their own
// can instead take every unit at the same moment (spec.armOrder Duet).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/progress"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/retry"
)

// nodesRead is how many of a server's nodes its meter reads.
func nodesRead(m cpucost.Meter) int {
	if several, ok := m.(interface{ Nodes() int }); ok {
		return several.Nodes()
	}
	return 1
}

// Config is one invocation of the runner.
type Config struct {
	Bench *benchv1.CouchBenchmark
	// Client is the CouchDB the arms run against, unless Servers names another for an arm
	// (nil when Servers names every arm's).
	Client *couch.Client
	// Servers are arms' own CouchDBs, by arm name.
	Servers map[string]*couch.Client
	// Meters read arms' servers' CPU time, by arm name: each build of a metered arm records
	// the CPU its server spent on it (measured.IndexBuild.CPUSeconds).
	Meters map[string]cpucost.Meter
	// Arms limits the run to these query servers; empty runs all. Arms take turns within
	// each step, round by round, in this order (the spec's without names), or in duet all
	// at once.
	Arms []string
	// Steps to run (runner steps: benchv1.RunnerSteps); they run in that order whatever
	// order they are given in.
	Steps []benchv1.Step
	// RunID names this run's databases and design documents, so that runs sharing a
	// CouchDB keep apart and the steps of one run (separate Jobs) find each other's data.
	// Empty: plain database names, design documents named from the clock.
	RunID string
	// Log receives progress lines.
	Log io.Writer
	// PollInterval of /_active_tasks during builds; 0 uses indexing.DefaultPollInterval.
	PollInterval time.Duration
	// ProgressInterval is the longest silence in Log inside a step that can take long (a
	// build, a write mode, a wait); 0 uses progress.Interval.
	ProgressInterval time.Duration
	// Part and Parts: this runner is part Part (from 0) of Parts runners that seed the
	// dataset and run the writes together (spec.runner.parallelism); Parts 0 or 1 is a
	// runner on its own. Part 0 creates the databases and watches CouchDB's load; every part
	// asks what runs the arms' views, loads its slice and runs its share of the writers.
	Part, Parts int
}

// shared tells whether the runner shares its steps with other parts.
func (c Config) shared() bool { return c.Parts > 1 }

// Run runs the configured steps and returns the results document. The document is never
// nil: on an error or interrupt it holds what was measured before, with Error (and
// Interrupted) set, and the error is returned as well. An interrupt (ctx ended: Ctrl-C, a
// Job's pod being terminated) is reported as one, with ctx's cause first.
func Run(ctx context.Context, cfg Config) (*results.Document, error) {
	spec := cfg.Bench.Spec
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Benchmark:     cfg.Bench.Name,
		SpecHash:      results.SpecHash(spec),
		Spec:          spec,
		RunID:         cfg.RunID,
		Seed:          spec.Dataset.Seed,
		StartedAt:     time.Now().UTC(),
	}
	if cfg.Client != nil && len(cfg.Servers) == 0 {
		doc.Server.URL = cfg.Client.URL()
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	cfg.Log = &syncWriter{w: cfg.Log}
	err := run(ctx, cfg, doc)
	doc.FinishedAt = time.Now().UTC()
	if err != nil && ctx.Err() != nil {
		err = interrupted(ctx, err)
	}
	if err != nil {
		doc.Error = err.Error()
		doc.Interrupted = errors.Is(err, context.Canceled)
	}
	return doc, err
}

// interrupted is the error of a run that ctx ended: why, from ctx's cause (the command
// names the signal), and then what it cut short, whose own words (a view request that
// failed, a node that could not be read) are not the reason. It wraps context.Canceled
// (or DeadlineExceeded) whatever the cause wraps.
func interrupted(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if !errors.Is(cause, ctx.Err()) {
		cause = fmt.Errorf("%w (%w)", ctx.Err(), cause)
	}
	return fmt.Errorf("%w; it cut short: %w", cause, err)
}

// syncWriter lets the progress lines, written by the pacers' goroutines, share the log
// with the steps' own lines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func run(ctx context.Context, cfg Config, doc *results.Document) error {
	if cfg.shared() && (cfg.Part < 0 || cfg.Part >= cfg.Parts || slices.ContainsFunc(cfg.Steps, func(s benchv1.Step) bool { return !benchv1.Shareable(s) })) {
		return fmt.Errorf("part %d of %d: only the seed and writes steps are shared between runners, as parts 0 to %d",
			cfg.Part, cfg.Parts, cfg.Parts-1)
	}
	selected, err := selectArms(cfg.Bench.Spec.QueryServers, cfg.Arms)
	if err != nil {
		return err
	}
	servers := map[*couch.Client]*server{}
	arms := make([]*armRun, len(selected))
	for i, qs := range selected {
		c := cfg.client(qs.Name)
		srv, ok := servers[c]
		if !ok {
			if srv, err = describe(ctx, c); err != nil {
				return err
			}
			servers[c] = srv
			logf(cfg.Log, "server %s: %s %s, %d node(s)", c.URL(), srv.Vendor, srv.Version, len(srv.Nodes))
		}
		arms[i] = newArmRun(cfg, srv, qs)
	}
	if n := distinctServers(arms); cfg.Bench.Spec.ArmOrder == benchv1.ArmsDuet && len(arms) > 1 && n < len(arms) {
		return fmt.Errorf("spec.armOrder Duet runs the arms at the same moment, each on a CouchDB of its own, and %d arms "+
			"share %d server(s) (told apart by the uuid GET / answers): give each arm its own CouchDB (couchbench run "+
			"--arm-url ARM=URL), or use Interleaved", len(arms), n)
	}
	if err := checkMeters(cfg, arms); err != nil {
		return err
	}
	// One server is the document's; arms on servers of their own each carry theirs.
	if len(servers) == 1 {
		doc.Server = arms[0].server.Provenance
	} else {
		for _, a := range arms {
			a.result.Server = &a.server.Provenance
		}
	}
	defer func() {
		for _, a := range arms {
			doc.Arms = append(doc.Arms, a.result)
		}
	}()
	// Arms run side by side take turns (or run in duet) in every step; run one after the other (spec.armOrder
	// Sequential), each arm goes through every step before the next one starts.
	groups := [][]*armRun{arms}
	if cfg.Bench.Spec.ArmOrder == benchv1.ArmsSequential {
		groups = nil
		for _, a := range arms {
			groups = append(groups, []*armRun{a})
		}
	}
	for _, group := range groups {
		if err := probeArms(ctx, cfg, group); err != nil {
			return err
		}
		group = slices.DeleteFunc(slices.Clone(group), func(a *armRun) bool { return a.result.Stopped() })
		if len(group) == 0 {
			continue
		}
		for _, step := range benchv1.RunnerSteps {
			if !slices.Contains(cfg.Steps, step) || !steps[step].asked(cfg.Bench.Spec.Workloads) {
				continue
			}
			if err := runStep(ctx, cfg, step, group, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// client is the CouchDB an arm runs against.
func (cfg Config) client(arm string) *couch.Client {
	if c, ok := cfg.Servers[arm]; ok {
		return c
	}
	return cfg.Client
}

// refusedWait is how long describe asks again a CouchDB that refuses connections: a Service's
// endpoints reach the node's proxy within seconds, a wrong port never does.
var refusedWait = 30 * time.Second

// timedOut says whether err is a network operation that timed out (a lookup, a dial or a
// request).
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// server is one CouchDB the run talks to, as it describes itself.
type server struct {
	client *couch.Client
	// uuid tells one CouchDB from another however it is reached (another URL, node or
	// user): every node of a cluster answers with its [couchdb] uuid.
	uuid string
	results.Provenance
}

// distinctServers counts the CouchDBs the arms run on, by their uuid: two URLs of one
// cluster, or one server reached as two users, are one. A server without a uuid counts by
// its connection.
func distinctServers(arms []*armRun) int {
	seen := map[any]bool{}
	for _, a := range arms {
		var key any = a.server.client
		if a.server.uuid != "" {
			key = a.server.uuid
		}
		seen[key] = true
	}
	return len(seen)
}

// describe asks a CouchDB what it is and which nodes it has. A first request that timed out
// is made again for the client's outage limit (couch.Client.Outlast): a runner's first
// request can find the cluster's DNS, or the server, too slow to answer (seen in the e2e
// suite on a loaded node: a lookup that timed out failed the run). A refused connection is
// made again for refusedWait: a Service whose pods have just become ready refuses until the
// node's proxy has their endpoints (seen on kind: a seed Job that began 3 s after its CouchDB
// pod was ready was refused, and the run failed). Any other error (a name that does not
// resolve, CouchDB's answer), or a refusal that lasts, is told at once.
func describe(ctx context.Context, c *couch.Client) (*server, error) {
	var info couch.ServerInfo
	began := time.Now()
	passing := func(err error) bool {
		return timedOut(err) || errors.Is(err, syscall.ECONNREFUSED) && time.Since(began) < refusedWait
	}
	if _, _, err := c.Outlast(ctx, passing, func() (err error) {
		info, err = c.Server(ctx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("reaching CouchDB at %s: %w", c.URL(), err)
	}
	members, err := c.Membership(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster membership of %s: %w", c.URL(), err)
	}
	s := &server{client: c, uuid: info.UUID, Provenance: results.Provenance{URL: c.URL(), Vendor: info.Vendor.Name, Version: info.Version,
		GitSHA: info.GitSHA, Features: info.Features, Nodes: members.ClusterNodes}}
	// CouchDB before 3.3 has no _versions: the provenance then lacks what it would say.
	if v, err := c.Versions(ctx); err == nil {
		s.JavaScriptEngine = strings.TrimSpace(v.JavaScriptEngine.Name + " " + v.JavaScriptEngine.Version)
		s.ErlangVersion = v.Erlang.Version
		s.CollationDriver = strings.TrimSpace(v.CollationDriver.Name + " " + v.CollationDriver.LibraryVersion)
	}
	return s, nil
}

// selectArms picks the named query servers (all without names), presets applied.
func selectArms(all []benchv1.QueryServer, wanted []string) ([]benchv1.QueryServer, error) {
	var out []benchv1.QueryServer
	if len(wanted) == 0 {
		for _, q := range all {
			out = append(out, q.Resolved())
		}
		return out, nil
	}
	for _, n := range wanted {
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

// armRun is one arm's part of a run: its query server, its databases (one per profile) and
// what it measured so far.
type armRun struct {
	cfg Config
	// server is the arm's CouchDB, client its connection and nodes its cluster's nodes.
	server   *server
	client   *couch.Client
	nodes    []string
	qs       benchv1.QueryServer
	language string
	result   results.Arm
	// gens are the profiles' document generators, by the index of result.Profiles.
	gens []*dataset.Generator
	// pauses are the current step's waits at barriers for the other parts.
	pauses []cpuuse.Pause
	// meter reads the CPU time of the arm's server; nil: not measured.
	meter cpucost.Meter
	// untilDecided: the current step adds rounds until decided (its progress lines count
	// rounds without a total).
	untilDecided bool
	// ready, in duet, holds the arm's unit where its measured part begins until every arm's
	// unit is there (nil: no duet). A build calls it once set up (indexing.Options.Ready).
	ready func()
	// nonce tells this run's design documents from another's on the same databases.
	nonce string
}

func newArmRun(cfg Config, srv *server, qs benchv1.QueryServer) *armRun {
	nodes := srv.Nodes
	ds := cfg.Bench.Spec.Dataset
	shards := int(ds.Shards)
	if qs.Shards != nil {
		shards = int(*qs.Shards)
	}
	replicas := min(3, max(len(nodes), 1))
	if ds.Replicas != nil {
		replicas = int(*ds.Replicas)
	}
	a := &armRun{cfg: cfg, server: srv, client: srv.client, nodes: nodes, qs: qs, language: ddoc.Language(qs), meter: cfg.Meters[qs.Name],
		result: results.Arm{QueryServer: qs.Name, Language: ddoc.Language(qs)}}
	for _, profile := range ds.Profiles {
		name := dataset.ProfileName(profile)
		a.result.Profiles = append(a.result.Profiles, results.Profile{
			Profile: name, DB: names.Database(cfg.Bench.Name, cfg.RunID, qs.Name, name), Shards: shards, Replicas: replicas,
		})
		gen := dataset.New(ds.Seed, profile)
		gen.IDs = ds.IDs
		a.gens = append(a.gens, gen)
	}
	return a
}

// barrier meets the other parts at the barrier called name in database db: waiting for all
// of them, or only announcing this part (wait false). The wait, and the CPU its polling
// takes, are left out of the step's CPU share.
func (a *armRun) barrier(ctx context.Context, db, name string, wait bool) error {
	b := barrier.Barrier{Client: a.client, DB: db, Part: a.cfg.Part, Parts: a.cfg.Parts, ProgressInterval: a.cfg.ProgressInterval,
		Progress: func(missing []int, waited time.Duration) {
			if slices.Contains(missing, -1) {
				logf(a.cfg.Log, "%s: waiting %s at barrier %s for the database to be created (by part 0) or to answer",
					db, waited.Round(time.Second), name)
				return
			}
			logf(a.cfg.Log, "%s: waiting %s at barrier %s for parts %v of %d", db, waited.Round(time.Second), name, missing, a.cfg.Parts)
		}}
	if !wait {
		return b.Arrive(ctx, name)
	}
	arrived := cpuuse.Read()
	_, err := b.Wait(ctx, name)
	a.pauses = append(a.pauses, cpuuse.Pause{From: arrived, To: cpuuse.Read()})
	return err
}

// label names an arm's profile in progress lines.
func (a *armRun) label(i int) string { return a.qs.Name + "/" + a.result.Profiles[i].Profile }

// seededWait bounds how long a step waits for the copies of a seeded database to hold every
// document. A write is acknowledged once a quorum of copies has it; a copy that is behind, or
// that lost its data (a CouchDB pod restarted on an emptyDir), is filled by CouchDB's
// internal replication, and until then a request it answers counts fewer documents.
const seededWait = 3 * time.Minute

// checkSeeded makes a step that needs the dataset fail early and clearly when it is not
// there, and otherwise waits until every copy has it: building or reading a view over a copy
// that lacks documents gives a wrong answer. doc_count alone cannot tell, for a request
// counts each shard range on whichever copy answers first. So the step waits until doc_count
// shows the dataset and no node has internal replication left to do; then, in a cluster, it
// asks CouchDB to compare every copy with the others (_sync_shards: after seeding, nothing
// else would, for internal replication follows writes) and waits for that quiet to hold twice
// in a row. The comparison is asked for only once every node answers: a node that was away
// (a CouchDB pod restarting without its volume) would otherwise be left out of it, its
// copies empty while every other node has nothing left to do. (Seen once in the e2e suite
// before this order: after a CouchDB pod came back without its volume, a view read gave 5,000
// of 20,000 rows.)
func (a *armRun) checkSeeded(ctx context.Context) error {
	for _, p := range a.result.Profiles {
		if err := a.waitSeeded(ctx, p.DB); err != nil {
			return err
		}
	}
	return nil
}

// waitSeeded is checkSeeded for one database.
func (a *armRun) waitSeeded(ctx context.Context, db string) error {
	docs := a.cfg.Bench.Spec.Dataset.Documents
	c := a.client
	cluster := len(a.nodes) > 1
	// What the last check saw, for the progress lines of a long wait.
	var shown, backlog atomic.Int64
	stop := progress.Every(a.cfg.ProgressInterval, func() {
		logf(a.cfg.Log, "%s: waiting for every copy to hold the dataset: it shows %d of %d documents, %d internal replication jobs pending",
			db, shown.Load(), docs, backlog.Load())
	})
	defer stop()
	// CouchDB gives a database on one node one copy per shard range, whatever n it is asked
	// for: once that node's doc_count shows the dataset no copy is behind, and a second look
	// a second later would only add a second per database and arm to the step.
	quietNeeded := 1
	if cluster {
		quietNeeded = 2
	}
	var (
		info           couch.DBInfo
		pending, quiet int
		synced, looked bool
	)
	looks, gaveUp, err := retry.Every(time.Second, seededWait).Until(ctx, func(ctx context.Context) (bool, error) {
		var err error
		info, err = c.DBInfo(ctx, db)
		switch {
		case couch.StatusOf(err) == 404:
			return false, fmt.Errorf("database %s does not exist: run the seed step first", db)
		case couch.Transient(err):
			// A node going away or coming back: until Kubernetes calls it lost, its Service
			// still sends it requests, which end without an answer. Look again, within the
			// wait's limit; the step's own requests ride out the node as they can, and the
			// operator says when it is lost.
			quiet, synced = 0, false
			return false, nil
		case err != nil:
			return false, err
		}
		// Design documents count in doc_count.
		pending = a.replicationBacklog(ctx)
		shown.Store(info.DocCount)
		backlog.Store(int64(pending))
		switch {
		case info.DocCount < docs || pending > 0:
			quiet, synced = 0, false
		case cluster && !synced:
			if err := c.SyncShards(ctx, db); err != nil {
				return false, fmt.Errorf("asking CouchDB to bring the copies of %s up to date: %w", db, err)
			}
			synced = true
		default:
			quiet++
		}
		if quiet == 0 && !synced && !looked {
			logf(a.cfg.Log, "%s: shows %d of %d documents, %d internal replication jobs pending; waiting for CouchDB to fill "+
				"every copy", db, info.DocCount, docs, pending)
		}
		looked = true
		return quiet == quietNeeded, nil
	})
	switch {
	case gaveUp:
		return fmt.Errorf("database %s shows %d of the dataset's %d documents, with %d internal replication jobs pending, "+
			"after %s: a copy of its shards is behind or lost its data (a CouchDB node restarted without its volume?), "+
			"a node does not answer, or the seed step did not run", db, info.DocCount, docs, pending, seededWait)
	case err == nil && looks > 1:
		logf(a.cfg.Log, "%s: every copy has the %d documents", db, docs)
	}
	return err
}

// replicationBacklog is the internal replication jobs pending over the nodes of a cluster; a
// node that does not answer counts as one, for its copies cannot be known to be complete. A
// single node has no copies to fill.
func (a *armRun) replicationBacklog(ctx context.Context) int {
	if len(a.nodes) < 2 {
		return 0
	}
	pending := 0
	for _, node := range a.nodes {
		s, err := a.client.System(ctx, node)
		if err != nil {
			pending++
			continue
		}
		pending += s.InternalReplicationJobs
	}
	return pending
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
