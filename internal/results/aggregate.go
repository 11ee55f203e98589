package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/latency"
	"github.com/couchbench/couchbench/internal/measured"
)

// Summary is everything a benchmark's status shows, and what the printer columns, the
// rendered tables and the metrics are views of. Aggregate derives it from the stored
// documents; nothing else computes a result.
type Summary struct {
	// Results are the arms in the API's compact shapes: medians, spreads and counts.
	Results []benchv1.QueryServerResults
	// BestChangesPerSecond is the highest median indexing rate over every arm, profile and
	// reducer; nil without indexing results.
	BestChangesPerSecond *int64
	// ReadP95 is the highest k6 read p95 over the arms ("" without reads).
	ReadP95 string
	// Thresholds is the verdict on the spec's k6 thresholds; nil when none was judged.
	Thresholds *ThresholdVerdict
	// Server is a short provenance: vendor, version and size of the arms' CouchDB.
	Server string
	// Isolation says whether load generators kept off their CouchDB's nodes; nil when no
	// arm's CouchDB pods are known (an existing CouchDB, or before the first step).
	Isolation *IsolationVerdict
	// SameNodes says whether every arm's CouchDB ran on the first arm's nodes; nil until two
	// arms' CouchDB pods are known.
	SameNodes *SameNodesVerdict
	// Runtimes says whether every arm's views ran on what the arm asked for; nil until an
	// arm's runtime is known.
	Runtimes *RuntimesVerdict
}

// RuntimesVerdict says whether every arm's views ran on what its preset, engine or command
// asks for.
type RuntimesVerdict struct {
	AsAsked bool
	// Mismatched lists "query server <arm> stopped: it <mismatch>" or "query server <arm>
	// measured anyway, every number flagged RuntimeMismatch: it <mismatch>" for each arm
	// whose views ran on something else.
	Mismatched []string
}

// SameNodesVerdict says whether the arms were measured on the same nodes.
type SameNodesVerdict struct {
	Same bool
	// Other lists "query server <arm> on <nodes>, the first arm on <nodes>" for each arm
	// whose CouchDB ran elsewhere.
	Other []string
}

// IsolationVerdict says whether every load generator ran apart from the CouchDB it measured.
type IsolationVerdict struct {
	Isolated bool
	// Shared lists "query server <arm>: <step> on <node>" for every step that shared a node.
	Shared []string
}

// ThresholdVerdict says whether every k6 threshold passed, and which failed where.
type ThresholdVerdict struct {
	Passed bool
	// Failed lists "query server <arm>: <metric>: <expression>", in arm order then sorted.
	Failed []string
}

// Aggregate is the one function that turns results documents into what status shows. The
// documents are a run's arms (the operator stores one per arm; `couchbench run` writes one
// with all of them); arms appear in the order of the spec's query servers.
func Aggregate(docs ...*Document) Summary {
	docs = inSpecOrder(docs)
	var s Summary
	var worstP95 time.Duration
	var firstNodes []string
	for _, d := range docs {
		for _, a := range d.Arms {
			q := compactArm(a, noiseThreshold(d.Spec), stepFlags(d, a))
			s.Results = append(s.Results, q)
			if rt := a.Runtime; rt != nil {
				if s.Runtimes == nil {
					s.Runtimes = &RuntimesVerdict{AsAsked: true}
				}
				if rt.Mismatch != "" {
					s.Runtimes.AsAsked = false
					what := "measured anyway, every number flagged RuntimeMismatch"
					if rt.Stopped {
						what = "stopped"
					}
					s.Runtimes.Mismatched = append(s.Runtimes.Mismatched, fmt.Sprintf("query server %s %s: it %s", a.QueryServer, what, rt.Mismatch))
				}
			}
			if nodes := couchdbNodes(a.Cluster); len(nodes) > 0 {
				if firstNodes == nil {
					firstNodes = nodes
				} else {
					if s.SameNodes == nil {
						s.SameNodes = &SameNodesVerdict{Same: true}
					}
					if !slices.Equal(nodes, firstNodes) {
						s.SameNodes.Same = false
						s.SameNodes.Other = append(s.SameNodes.Other, fmt.Sprintf("query server %s on %s, the first arm on %s",
							a.QueryServer, strings.Join(nodes, ", "), strings.Join(firstNodes, ", ")))
					}
				}
			}
			if shared, known := sharedNodes(a.Cluster); known {
				if s.Isolation == nil {
					s.Isolation = &IsolationVerdict{Isolated: true}
				}
				for _, step := range loadSteps {
					if node, ok := shared[step]; ok {
						s.Isolation.Isolated = false
						s.Isolation.Shared = append(s.Isolation.Shared, fmt.Sprintf("query server %s: %s on %s", a.QueryServer, step, node))
					}
				}
			}
			for _, ix := range q.Indexing {
				if s.BestChangesPerSecond == nil || ix.ChangesPerSecond > *s.BestChangesPerSecond {
					best := ix.ChangesPerSecond
					s.BestChangesPerSecond = &best
				}
			}
			if q.Reads != nil {
				if p95, err := time.ParseDuration(q.Reads.P95); err == nil && p95 >= worstP95 {
					worstP95, s.ReadP95 = p95, q.Reads.P95
				}
			}
			for _, p := range a.Profiles {
				if p.Reads == nil || !p.Reads.hasThresholds() {
					continue
				}
				if s.Thresholds == nil {
					s.Thresholds = &ThresholdVerdict{Passed: true}
				}
				for _, f := range p.Reads.failedThresholds() {
					s.Thresholds.Passed = false
					s.Thresholds.Failed = append(s.Thresholds.Failed, fmt.Sprintf("query server %s: %s", a.QueryServer, f))
				}
			}
		}
		for _, a := range d.Arms {
			if srv := d.ServerOf(a); s.Server == "" && srv.Version != "" {
				s.Server = srv.Short()
			}
		}
	}
	return s
}

// inSpecOrder sorts documents by the position of their first arm among the spec's query
// servers, so that the operator's per-arm documents, listed in any order, render as the
// spec lists them.
func inSpecOrder(docs []*Document) []*Document {
	position := func(d *Document) int {
		if len(d.Arms) == 0 {
			return len(d.Spec.QueryServers)
		}
		for i, qs := range d.Spec.QueryServers {
			if qs.Name == d.Arms[0].QueryServer {
				return i
			}
		}
		return len(d.Spec.QueryServers)
	}
	out := append([]*Document(nil), docs...)
	sort.SliceStable(out, func(i, j int) bool { return position(out[i]) < position(out[j]) })
	return out
}

// Short is the provenance in a few words: "The Apache Software Foundation 3.4.3, 3 node(s)".
func (p Provenance) Short() string {
	return fmt.Sprintf("%s %s, %d node(s)", p.Vendor, p.Version, len(p.Nodes))
}

// impreciseAbove is the timing uncertainty, in percent of a build's time, above which its
// rate is flagged Imprecise.
const impreciseAbove = 5.0

// noiseThreshold is the spec's CV limit in percent; documents from before the field have
// its default.
func noiseThreshold(spec benchv1.CouchBenchmarkSpec) float64 {
	if spec.NoiseThresholdPercent > 0 {
		return float64(spec.NoiseThresholdPercent)
	}
	return 10
}

// writeMode is one insert mode's repetitions.
type writeMode struct {
	name string
	runs []measured.Write
}

// docsPerSecond is the statistics of the mode's repetitions' docs/s.
func (m writeMode) docsPerSecond() Stats {
	rates := make([]float64, 0, len(m.runs))
	for _, w := range m.runs {
		rates = append(rates, w.DocsPerSecond())
	}
	return Summarize(rates)
}

// writeModes groups the writes by mode, in the order the modes first ran.
func writeModes(all []measured.Write) []writeMode {
	var out []writeMode
	for _, w := range all {
		i := slices.IndexFunc(out, func(m writeMode) bool { return m.name == w.Mode })
		if i < 0 {
			out = append(out, writeMode{name: w.Mode})
			i = len(out) - 1
		}
		out[i].runs = append(out[i].runs, w)
	}
	return out
}

// withStepFlags adds the step's flags to s.
func withStepFlags(s benchv1.Spread, flags map[benchv1.Step][]benchv1.ResultFlag, step benchv1.Step) benchv1.Spread {
	s.Flags = append(s.Flags, flags[step]...)
	return s
}

// spread is the API's Spread of st, flagged Noisy above the threshold.
func spread(st Stats, noisyAbove float64) benchv1.Spread {
	s := benchv1.Spread{Runs: int32(st.N)}
	if st.N > 1 {
		s.CV = fmt.Sprintf("%.1f%%", st.CV)
		if st.CV > noisyAbove {
			s.Flags = append(s.Flags, benchv1.FlagNoisy)
		}
	}
	return s
}

// loadSteps are the steps a load generator carries out, in order.
var loadSteps = append(slices.Clone(benchv1.RunnerSteps), benchv1.StepReads)

// sharedNodes maps each step whose load generator ran on a node of the arm's CouchDB pods to
// that node; known is false when the arm's CouchDB pods are not recorded.
func sharedNodes(c *Cluster) (shared map[benchv1.Step]string, known bool) {
	couchdb := couchdbNodes(c)
	if len(couchdb) == 0 {
		return nil, false
	}
	shared = map[benchv1.Step]string{}
	for _, p := range c.Pods {
		if sharesNode(p, couchdb) {
			shared[p.Step] = p.Node
		}
	}
	return shared, true
}

// sharesNode tells whether p is a load generator on one of couchdb, the nodes of its arm's
// CouchDB pods (couchdbNodes).
func sharesNode(p PodRun, couchdb []string) bool {
	return p.Role != RoleCouchDB && slices.Contains(couchdb, p.Node)
}

// couchdbNodes are the nodes an arm's CouchDB pods ran on, sorted; none for an existing
// CouchDB.
func couchdbNodes(c *Cluster) []string {
	if c == nil {
		return nil
	}
	var nodes []string
	for _, p := range c.Pods {
		if p.Role == RoleCouchDB && p.Node != "" && !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// stepFlags are the flags each step's results get from how the step ran: its load generator
// on a node of the arm's CouchDB (SharedNode), or out of CPU or of virtual users
// (GeneratorBound); and every step's, when the arm's views ran on another runtime than it
// asked for (RuntimeMismatch): the arm's name then misnames all of its numbers.
func stepFlags(d *Document, a Arm) map[benchv1.Step][]benchv1.ResultFlag {
	out := map[benchv1.Step][]benchv1.ResultFlag{}
	flag := func(step benchv1.Step, f benchv1.ResultFlag) {
		if !slices.Contains(out[step], f) {
			out[step] = append(out[step], f)
		}
	}
	if a.Runtime != nil && a.Runtime.Mismatch != "" {
		for _, step := range loadSteps {
			flag(step, benchv1.FlagRuntimeMismatch)
		}
	}
	shared, _ := sharedNodes(a.Cluster)
	for step := range shared {
		flag(step, benchv1.FlagSharedNode)
	}
	for _, rec := range d.Steps {
		if rec.QueryServer == a.QueryServer && rec.LoadGenerator != nil && rec.LoadGenerator.Saturated() {
			flag(rec.Step, benchv1.FlagGeneratorBound)
		}
	}
	for _, p := range a.Profiles {
		for _, run := range readsRunners(p.Reads) {
			if run.DroppedIterations > 0 {
				flag(benchv1.StepReads, benchv1.FlagGeneratorBound)
			}
		}
	}
	return out
}

func readsRunners(r *Reads) []ReadsRunner {
	if r == nil {
		return nil
	}
	return r.Runners
}

// compactArm is one arm in the API's compact shapes; flags are stepFlags.
func compactArm(a Arm, noisyAbove float64, flags map[benchv1.Step][]benchv1.ResultFlag) benchv1.QueryServerResults {
	r := benchv1.QueryServerResults{QueryServer: a.QueryServer, Language: a.Language}
	if a.Stopped() {
		r.Stopped = a.Runtime.Mismatch
	}
	for _, p := range a.Profiles {
		if p.Seeding != nil {
			loads := p.Seedings()
			docsPerSecond, mbPerSecond := make([]float64, len(loads)), make([]float64, len(loads))
			var retries int64
			for i, s := range loads {
				docsPerSecond[i], mbPerSecond[i] = s.DocsPerSecond(), s.MBPerSecond()
				retries += s.Retries
			}
			st := Summarize(docsPerSecond)
			r.Seeding = append(r.Seeding, benchv1.SeedingResult{
				Profile: p.Profile, Documents: p.Seeding.Stored, DocsPerSecond: round(st.Median),
				MBPerSecond: fmt.Sprintf("%.2f", Summarize(mbPerSecond).Median), Retries: retries, Runners: int32(len(p.Seeding.Parts)),
				Spread: withStepFlags(spread(st, noisyAbove), flags, benchv1.StepSeed),
			})
		}
		for _, ix := range p.Indexing {
			if len(ix.Runs) > 0 {
				res := compactIndexing(p.Profile, ix, noisyAbove)
				res.Spread = withStepFlags(res.Spread, flags, benchv1.StepIndex)
				r.Indexing = append(r.Indexing, res)
			}
		}
		for _, vr := range p.ViewReads {
			if len(vr.Reads) == 0 {
				continue
			}
			secs := ViewReadSeconds(vr)
			r.ViewReads = append(r.ViewReads, benchv1.ViewReadResult{
				View: vr.View, Profile: p.Profile, RowsPerSecond: round(RowsPerSecond(vr)),
				Duration: time.Duration(secs.Median * float64(time.Second)).Round(time.Millisecond).String(),
				Spread:   withStepFlags(spread(secs, noisyAbove), flags, benchv1.StepViews),
			})
		}
		for _, mode := range writeModes(p.Writes) {
			res := benchv1.WriteResult{Mode: mode.name, Profile: p.Profile}
			for _, w := range mode.runs {
				res.Created, res.Accepted, res.Errors, res.Stored = res.Created+w.Created, res.Accepted+w.Accepted, res.Errors+w.Errors, res.Stored+w.Stored
			}
			st := mode.docsPerSecond()
			res.DocsPerSecond, res.Spread = round(st.Median), withStepFlags(spread(st, noisyAbove), flags, benchv1.StepWrites)
			r.Writes = append(r.Writes, res)
		}
		if p.Reads != nil && len(p.Reads.Runners) > 0 {
			r.Reads = compactReads(*p.Reads, noisyAbove)
			r.Reads.Spread = withStepFlags(r.Reads.Spread, flags, benchv1.StepReads)
		}
	}
	return r
}

func compactIndexing(profile string, ix IndexingSeries, noisyAbove float64) benchv1.IndexingResult {
	st := ix.DocsPerSecond()
	n := len(ix.Runs)
	queryable, built, ratios := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	// The least precise build bounds them all: its rate is off by at most this much.
	// Documents from before builds were bracketed do not say.
	var uncertainty float64
	bracketed := true
	for _, run := range ix.Runs {
		bracketed = bracketed && run.BuiltFrom != ""
		queryable = append(queryable, run.QueryableDocsPerSecond)
		built = append(built, run.Built.Seconds())
		if run.Built > 0 {
			uncertainty = max(uncertainty, 100*run.BuiltUncertainty.Seconds()/run.Built.Seconds())
		}
		if run.MapDocs >= 0 && run.MapDocsExpected > 0 {
			ratios = append(ratios, float64(run.MapDocs)/float64(run.MapDocsExpected))
		}
	}
	res := benchv1.IndexingResult{
		Profile: profile, Reducer: benchv1.Reducer(ix.Reducer),
		ChangesPerSecond: round(st.Median), MinChangesPerSecond: round(st.Min), MaxChangesPerSecond: round(st.Max),
		QueryableChangesPerSecond: round(Summarize(queryable).Median),
		ShardChangesPerSecond:     round(ix.ShardChangesPerSecond().Median),
		Spread:                    spread(st, noisyAbove),
		BuiltSeconds:              fmt.Sprintf("%.2f", Summarize(built).Median),
		ViewCompaction:            ix.ViewCompaction,
	}
	if bracketed {
		res.Uncertainty = fmt.Sprintf("±%.1f%%", uncertainty)
	}
	if uncertainty > impreciseAbove {
		res.Flags = append(res.Flags, benchv1.FlagImprecise)
	}
	if len(ratios) > 0 {
		res.MapDocsPerDoc = fmt.Sprintf("%.2f", Summarize(ratios).Median)
	}
	return res
}

// compactReads adds the runners up. Counts and rates add up exactly: in each repetition,
// requests over the longest runner's time (the runners start together); requests/s is the
// median over the repetitions, and Elapsed their summed time (seed 001's SUM). Percentiles do
// not add up: with one runner they are k6's, exact; with several they come from the runners'
// latency histograms added up, within latency.K6.ErrorPercent (PercentileError), with each
// runner's own listed. Documents from before the histograms give the largest over the
// runners, an upper bound of the true one (no runner has more than 5% of its requests above
// its own p95, so neither do all together), said so in PercentilesUpperBound.
func compactReads(r Reads, noisyAbove float64) *benchv1.ReadResult {
	var res benchv1.ReadResult
	var failed int64
	var worst Latencies
	for _, run := range r.Runners {
		res.Requests += run.Requests
		failed += run.Failed
		worst = Latencies{P50: max(worst.P50, run.Milliseconds.P50), P95: max(worst.P95, run.Milliseconds.P95),
			P99: max(worst.P99, run.Milliseconds.P99)}
		if len(r.Runners) > 1 {
			segment := run.Segment
			if len(r.Runners) > r.runnersPerRepetition() {
				segment = fmt.Sprintf("#%d %s", run.Repetition+1, run.Segment)
			}
			res.Runners = append(res.Runners, benchv1.RunnerLatencies{
				Segment: segment, Requests: run.Requests,
				P50: ms(run.Milliseconds.P50), P95: ms(run.Milliseconds.P95), P99: ms(run.Milliseconds.P99),
			})
		}
	}
	rates, elapsed := r.repetitions()
	st := Summarize(rates)
	res.RequestsPerSecond = round(st.Median)
	res.Spread = spread(st, noisyAbove)
	res.Elapsed = ms(elapsed)
	if res.Requests > 0 {
		res.ErrorRate = fmt.Sprintf("%.2f%%", 100*float64(failed)/float64(res.Requests))
	} else {
		res.ErrorRate = "n/a"
	}
	if merged, ok := r.mergedLatencies(); ok && len(r.Runners) > 1 {
		worst, res.PercentileError = merged, fmt.Sprintf("%.0f%%", latency.K6.ErrorPercent())
	} else {
		res.PercentilesUpperBound = len(r.Runners) > 1
	}
	res.P50, res.P95, res.P99 = ms(worst.P50), ms(worst.P95), ms(worst.P99)
	if r.hasThresholds() {
		passed := len(r.failedThresholds()) == 0
		res.ThresholdsPassed = &passed
	}
	return &res
}

// ms formats milliseconds as a duration ("12.34ms").
func ms(v float64) string {
	return time.Duration(v * float64(time.Millisecond)).Round(10 * time.Microsecond).String()
}

func round(v float64) int64 { return int64(math.Round(v)) }
