// Package indexing measures how fast CouchDB builds a view: the seed article's "scores by
// month" view, built from scratch, timed from the start of the first shard copy's index
// update to the end of the last one's, the span CouchDB's own log shows ("Starting index
// update" to "Index update finished" over every copy on every node).
//
// No request to the cluster can see that end: a blocking view request returns once one copy
// of each shard range is built, and then computes its answer (a grouped reduce adds up to
// 8% to a build, in the log), and a copy's indexer task leaves /_active_tasks when its
// documents are mapped, while its writer may go on writing the index for seconds (2 s on the
// kit's 3-node cluster). So every copy is asked by itself, on its own node
// (/_node/{node}/{shard copy}/...): a view request that computes nothing waits until that
// copy's index is written. See docs/measurement.md.
package indexing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/retry"
)

// DefaultPollInterval is how often /_active_tasks is polled for the progress curve during a
// build. CouchDB refreshes a task's counters about every 500 ms. The build's time does not
// come from these polls.
const DefaultPollInterval = 250 * time.Millisecond

// BuiltFromCopies says how measured.IndexBuild.Built was taken: from every shard copy's own
// answer (the only way since 2026-11-24; older documents say "view response (n=1)" or
// "active tasks").
const BuiltFromCopies = "shard copies"

// Options describe one build.
type Options struct {
	DB        string
	Documents int64
	// Replicas is the database's n: every copy maps every document of its range.
	Replicas int
	Language string
	Reducer  benchv1.Reducer
	// Nonce makes the design document, and so the index, new.
	Nonce        string
	PollInterval time.Duration
	// Expected is the view's correct answer (group=true); the build fails if the built view
	// differs.
	Expected map[dataset.MonthKey]int64
	// Progress, when set, is told how far the build got every ProgressInterval
	// (progress.Interval when 0) while the copies build.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// Waits look after the copies' requests; zero fields take DefaultWaits'.
	Waits Waits
	// Ready, when set, is called once the build is set up (design documents written, every
	// copy's index opened), right before its copies are asked; the build waits for it to
	// return. Arms in duet hold their builds there until every arm's is set up, so that the
	// timed parts start together whatever the setup took on each server.
	Ready func()
	// Answered, when set, is called as soon as the last copy has answered, before the
	// build's untimed checks (the nodes' statistics, the view's rows): the server's CPU
	// time between Ready and Answered is the build's own.
	Answered func()
}

// Waits are how a build looks after the requests that wait for its copies' indexes, and how
// long putting view compaction's settings back may take after an interrupted run.
type Waits struct {
	// CopyCheck is how often a waiting copy's index is read (watchedWait).
	CopyCheck time.Duration
	// AnswerGrace is how long a copy whose index is written may leave its request
	// unanswered before the request is given up.
	AnswerGrace time.Duration
	// Restore bounds the restore of an interrupted run's compaction settings; one that was
	// not interrupted also waits for a node that does not answer for the client's outage
	// limit.
	Restore time.Duration
}

// DefaultWaits: a copy is checked every 2 s, which costs its node one small answer while a
// build takes seconds to minutes; once written, its answer comes within milliseconds, so 10 s
// without it is an answer lost; an interrupted run's restore has 30 s, as a Job's
// termination grace period leaves about that.
var DefaultWaits = Waits{CopyCheck: 2 * time.Second, AnswerGrace: 10 * time.Second, Restore: 30 * time.Second}

func (w Waits) orDefaults() Waits {
	if w.CopyCheck == 0 {
		w.CopyCheck = DefaultWaits.CopyCheck
	}
	if w.AnswerGrace == 0 {
		w.AnswerGrace = DefaultWaits.AnswerGrace
	}
	if w.Restore == 0 {
		w.Restore = DefaultWaits.Restore
	}
	return w
}

// Build creates a new design document and measures the build of its view on every shard
// copy.
//
// Every shard range gets a design document with the same views: the one named ddocID, and
// in every other range a twin whose id hashes there (CouchDB keeps an index per database
// copy and view signature, and the signature leaves the id out, so all of them share one
// index per copy). That is what lets each copy be asked on its own node, where a copy only
// knows the design documents it holds. The build then goes:
//
//  1. Every copy's index is opened (its _info: new, not updating) and the nodes' map_doc
//     counters and uptimes are read, none of it timed.
//  2. Every copy is asked at once for its view, waiting (WaitCopyView), which starts its
//     index update; the design documents have autoupdate false, so nothing else does.
//  3. One copy's _info is read until it shows an update running: the build started after
//     the first request was written and before that answer.
//  4. The last copy's answer ends the build: it came after the copy's index was written,
//     and no longer after it than a request to that copy takes to answer once the index is
//     built, which is measured next.
//
// Built is the middle of those bounds and BuiltUncertainty half their distance.
func Build(ctx context.Context, c *couch.Client, nodes []string, opts Options) (measured.IndexBuild, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	opts.Waits = opts.Waits.orDefaults()
	ddocID := names.IndexingDesignDoc(opts.Nonce)
	doc, err := ddoc.Indexing(ddocID, opts.Language, opts.Reducer, opts.Nonce)
	if err != nil {
		return measured.IndexBuild{}, err
	}
	run := measured.IndexBuild{DesignDoc: ddocID, Documents: opts.Documents, MapDocsExpected: opts.Documents * int64(max(opts.Replicas, 1)),
		BuiltFrom: BuiltFromCopies}

	var copies []couch.ShardCopy
	_, err = askThroughOutage(ctx, c, "CouchDB at "+c.URL(), func() (err error) {
		copies, err = c.ShardCopies(ctx, opts.DB)
		return err
	})
	if err != nil {
		return run, err
	}
	if need := len(copies) + 2; c.MaxConns() < need {
		return run, fmt.Errorf("timing a build of %s needs a connection per shard copy (%d) and 2 more, and the client keeps at most %d",
			opts.DB, len(copies), c.MaxConns())
	}
	byRange, err := designDocsByRange(ddocID, copies)
	if err != nil {
		return run, err
	}
	if err := putDesignDocs(ctx, c, opts.DB, doc, byRange); err != nil {
		return run, err
	}
	for _, cp := range copies {
		var info couch.IndexInfo
		_, err := askThroughOutage(ctx, c, "node "+cp.Node, func() (err error) {
			info, err = openIndex(ctx, c, cp, byRange[cp.Range])
			return err
		})
		if err != nil {
			return run, fmt.Errorf("opening the index of %s on shard copy %s on %s: %w", byRange[cp.Range], cp.Name, cp.Node, err)
		}
		if info.UpdateSeq != 0 || info.UpdaterRunning {
			return run, fmt.Errorf("the index of %s on shard copy %s on %s is not new (update_seq %d, updater running %v): its views were built before",
				byRange[cp.Range], cp.Name, cp.Node, info.UpdateSeq, info.UpdaterRunning)
		}
	}

	if opts.Ready != nil {
		opts.Ready()
	}
	ddocIDs := slices.Collect(maps.Values(byRange))
	before := readNodes(ctx, c, nodes)
	poller := startPolling(ctx, c, opts.PollInterval)
	stopProgress := func() {}
	if opts.Progress != nil {
		stopProgress = poller.reportEvery(ctx, opts.ProgressInterval, opts.DB, ddocIDs, run.MapDocsExpected, opts.Progress)
	}
	b := trigger(ctx, c, copies, byRange, opts.Waits)
	if opts.Answered != nil {
		opts.Answered()
	}
	stopProgress()
	run.StartedAt = b.origin.UTC()
	poller.setOrigin(b.origin)
	samples := poller.stop(ctx)

	a := Analyze(samples, opts.DB, ddocIDs...)
	run.TasksObserved, run.CopiesObserved, run.ReindexTasks = a.TasksObserved, a.CopiesObserved, a.ReindexTasks
	run.CompactionTasks, run.FailedPolls = a.CompactionTasks, a.FailedPolls
	run.PeakShardChangesPerSecond, run.Series = a.PeakShardChangesPerSecond, a.Series

	after := readNodes(ctx, c, nodes)
	// An interrupt cut the copies' requests and the nodes' readings short: that says
	// nothing about the nodes.
	if ctx.Err() != nil {
		return run, fmt.Errorf("the build was cut short: %w", ctx.Err())
	}
	run.MapDocs = mapDocGrowth(before, after)
	if err := checkNodesStayed(nodes, before, after); err != nil {
		return run, err
	}
	if err := b.err(); err != nil {
		return run, err
	}

	run.Built, run.BuiltUncertainty = b.built()

	run.Queryable = b.queryable()
	run.Copies = b.copyBuilds()
	run.ShardChanges, run.ShardChangesFrom = opts.Documents*int64(max(opts.Replicas, 1)), "documents x n"
	if a.TasksObserved && a.ShardChanges >= run.ShardChanges {
		run.ShardChanges, run.ShardChangesFrom = a.ShardChanges, "tasks"
	}
	run.DocsPerSecond = float64(opts.Documents) / run.Built.Seconds()
	run.QueryableDocsPerSecond = float64(opts.Documents) / run.Queryable.Seconds()
	run.ShardChangesPerSecond = float64(run.ShardChanges) / run.Built.Seconds()

	if err := Verify(ctx, c, opts.DB, ddocID, opts.Expected); err != nil {
		return run, err
	}
	return run, ctx.Err()
}

// designDocsByRange names the design document each shard range is asked through: ddocID in
// its own range, and in every other range the first twin "<ddocID>.<k>" whose id hashes
// there (CouchDB places a document by the CRC-32 of its id).
func designDocsByRange(ddocID string, copies []couch.ShardCopy) (map[string]string, error) {
	type bounds struct{ lo, hi uint64 }
	ranges := map[string]bounds{}
	for _, cp := range copies {
		lo, hi, ok := strings.Cut(cp.Range, "-")
		l, err1 := strconv.ParseUint(lo, 16, 32)
		h, err2 := strconv.ParseUint(hi, 16, 32)
		if !ok || err1 != nil || err2 != nil || l > h {
			return nil, fmt.Errorf("shard range %q of %s is not <hex>-<hex>", cp.Range, cp.Name)
		}
		ranges[cp.Range] = bounds{l, h}
	}
	byRange := map[string]string{}
	place := func(id string) {
		h := uint64(crc32.ChecksumIEEE([]byte(id)))
		for r, b := range ranges {
			if _, taken := byRange[r]; !taken && b.lo <= h && h <= b.hi {
				byRange[r] = id
			}
		}
	}
	place(ddocID)
	for k := 1; len(byRange) < len(ranges); k++ {
		if k > 1_000_000 {
			return nil, fmt.Errorf("no design document id of the form %s.<k> hashes into every shard range of %v", ddocID, ranges)
		}
		place(names.IndexingTwin(ddocID, k))
	}
	return byRange, nil
}

// openIndex reads a copy's index info, which opens the index. A copy that does not hold the
// design document yet is asked again, every 50 ms for up to a minute: a write to the cluster
// is acknowledged once a quorum of copies has it, and the rest get it moments later.
func openIndex(ctx context.Context, c *couch.Client, cp couch.ShardCopy, ddocID string) (couch.IndexInfo, error) {
	var info couch.IndexInfo
	_, _, err := retry.Every(50*time.Millisecond, time.Minute).Do(ctx, func(err error) bool {
		return couch.StatusOf(err) == http.StatusNotFound
	}, func() (err error) {
		info, _, err = c.CopyIndexInfo(ctx, cp, ddocID)
		return err
	})
	return info, err
}

// putDesignDocs creates the design document and its twins, each once.
func putDesignDocs(ctx context.Context, c *couch.Client, db string, doc couch.DesignDoc, byRange map[string]string) error {
	ids := []string{doc.ID}
	for _, id := range byRange {
		if id != doc.ID {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids[1:])
	for _, id := range ids {
		d := doc
		d.ID = id
		if err := c.PutDesignDoc(ctx, db, d); err != nil {
			return fmt.Errorf("creating design document %s: %w", id, err)
		}
	}
	return nil
}

// copyWait is one copy's waiting view request.
type copyWait struct {
	copy couch.ShardCopy
	ex   couch.Exchange
	// asked is how often the request was sent: more than once when an answer was lost to a
	// node that did not answer, and then its end is not known.
	asked int
	err   error
}

// build is what the copies' requests observed of one build.
type build struct {
	origin time.Time // the first copy's request written
	// startedBy is when an answer showed an update running: the first start was before.
	startedBy time.Time
	// answerDelay bounds how long after a copy's index is written its waiting request is
	// answered: the round trip of the same request once the index is built.
	answerDelay time.Duration
	waits       []copyWait
}

// trigger asks every copy for its view at once, finds when the build was seen started and
// waits for every copy's answer.
func trigger(ctx context.Context, c *couch.Client, copies []couch.ShardCopy, byRange map[string]string, w Waits) *build {
	b := &build{waits: make([]copyWait, len(copies))}
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i, cp := range copies {
		b.waits[i].copy = cp
		wg.Go(func() {
			<-release
			b.waits[i].ex, b.waits[i].asked, b.waits[i].err = waitCopy(ctx, c, cp, byRange[cp.Range], w)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	close(release)
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	// Until one copy shows its update running. A probe that fails, or copies that all
	// answered first, leave the bound to the first answer.
	probe := copies[0]
	for ctx.Err() == nil && !finished() {
		info, ex, err := c.CopyIndexInfo(ctx, probe, byRange[probe.Range])
		if err != nil {
			break
		}
		if info.UpdaterRunning || info.UpdateSeq > 0 {
			b.startedBy = ex.Answered
			break
		}
	}
	<-done
	for _, w := range b.waits {
		if !w.ex.Wrote.IsZero() && (b.origin.IsZero() || w.ex.Wrote.Before(b.origin)) {
			b.origin = w.ex.Wrote
		}
	}
	if b.err() != nil {
		return b
	}
	// Every copy has answered, so the first answer bounds the start too (in a short build
	// it can come before the probe's).
	for _, w := range b.waits {
		if b.startedBy.IsZero() || w.ex.Answered.Before(b.startedBy) {
			b.startedBy = w.ex.Answered
		}
	}
	last := b.last()
	built, cancel := context.WithTimeout(ctx, c.Waits().CopyRead)
	defer cancel()
	if ex, err := c.WaitCopyView(built, last.copy, byRange[last.copy.Range], ddoc.ByMonth); err == nil {
		b.answerDelay = ex.RoundTrip()
	} else {
		b.waits = append(b.waits, copyWait{copy: last.copy, err: fmt.Errorf("asking shard copy %s on %s again once built: %w", last.copy.Name, last.copy.Node, err)})
	}
	return b
}

// waitCopy asks one copy for its view until it answers, riding through a node that does
// not answer, or an answer that was lost, for up to the client's outage limit.
func waitCopy(ctx context.Context, c *couch.Client, cp couch.ShardCopy, ddocID string, w Waits) (couch.Exchange, int, error) {
	var ex couch.Exchange
	asked, err := askThroughOutage(ctx, c, fmt.Sprintf("shard copy %s on %s", cp.Name, cp.Node), func() (err error) {
		ex, err = watchedWait(ctx, c, cp, ddocID, w)
		return err
	})
	return ex, asked, err
}

// askThroughOutage calls ask until it succeeds or fails for another reason than a node that
// does not answer (couch.NodeDown, or a copy's answer lost), and returns how often it asked.
// A stopped node answers like this for a while before Kubernetes marks it lost: failing at
// once would fail the run with a request's error before the operator can say a node was
// lost, and a node that only restarts answers again. Not answering for the client's outage
// limit ends the asking with ErrNodeInterrupted, naming who did not answer.
func askThroughOutage(ctx context.Context, c *couch.Client, who string, ask func() error) (int, error) {
	asked, expired, err := c.Outlast(ctx, func(err error) bool {
		return couch.NodeDown(err) || errors.Is(err, errAnswerLost)
	}, ask)
	if expired {
		return asked, fmt.Errorf("%w: %s did not answer for %v: %w", ErrNodeInterrupted, who, c.Waits().Outage.Limit, err)
	}
	return asked, err
}

// errAnswerLost: a copy's waiting request can no longer be answered.
var errAnswerLost = errors.New("the request waiting for the copy's index will not be answered")

// watchedWait is one waiting request to a copy, looked after: every w.CopyCheck the copy's
// index is read, and the request is given up when its index has not been updating for two
// checks in a row without being written, or has been written for w.AnswerGrace without an
// answer, or could not be read for the client's outage limit. CouchDB's node-local interface
// never answers a request whose node went away at the wrong moment: the node that forwards
// it waits for the answer without a timeout (seen on the kit's cluster with a node stopped
// and started again mid-build). A copy whose node restarted is not updating either, and
// nothing else will start it (autoupdate is false). A node that stays down answers neither
// the request nor the checks: the build then fails, as waitCopy fails for a node that does
// not answer the request itself.
func watchedWait(ctx context.Context, c *couch.Client, cp couch.ShardCopy, ddocID string, w Waits) (couch.Exchange, error) {
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// answered ends the checks once the request is answered.
	answered, stopChecks := context.WithCancel(ctx)
	defer stopChecks()
	var (
		ex     couch.Exchange
		reqErr error
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		ex, reqErr = c.WaitCopyView(reqCtx, cp, ddocID, ddoc.ByMonth)
		stopChecks()
	}()
	limit := c.Waits().Outage.Limit
	idle := 0
	var writtenAt time.Time
	readAt := time.Now()
	var givenUp error
	_ = wait.PollUntilContextCancel(answered, w.CopyCheck, false, func(context.Context) (bool, error) {
		info, _, err := c.CopyIndexInfo(ctx, cp, ddocID)
		if err == nil {
			readAt = time.Now()
		} else if time.Since(readAt) > limit {
			// Not wrapped: the caller must not ask again after waiting this long.
			givenUp = fmt.Errorf("%w: its index could not be read for %v: %v", ErrNodeInterrupted, limit, err)
			return true, nil
		}
		switch {
		case err != nil || info.UpdaterRunning:
			idle, writtenAt = 0, time.Time{}
		case info.PendingUpdates > 0 || info.UpdateSeq == 0:
			idle++
		case writtenAt.IsZero():
			writtenAt = time.Now()
		}
		if idle >= 2 || !writtenAt.IsZero() && time.Since(writtenAt) > w.AnswerGrace {
			givenUp = errAnswerLost
			return true, nil
		}
		return false, nil
	})
	cancel()
	<-done
	if givenUp != nil {
		return couch.Exchange{}, givenUp
	}
	return ex, reqErr
}

// err is the first copy's failure, or a copy whose answer was lost.
func (b *build) err() error {
	for _, w := range b.waits {
		if w.err != nil {
			return fmt.Errorf("waiting for the index of shard copy %s on %s: %w", w.copy.Name, w.copy.Node, w.err)
		}
	}
	for _, w := range b.waits {
		if w.asked > 1 {
			return fmt.Errorf("%w: node %s did not answer during the build and shard copy %s had to be asked again, so when its index was written is not known",
				ErrNodeInterrupted, w.copy.Node, w.copy.Name)
		}
	}
	return nil
}

// last is the copy that answered last.
func (b *build) last() copyWait {
	last := b.waits[0]
	for _, w := range b.waits[1:] {
		if w.ex.Answered.After(last.ex.Answered) {
			last = w
		}
	}
	return last
}

// built is the middle of [last answer - answer delay - seen started, last answer - origin]
// and half its width. A span is never negative, which bounds a very short build.
func (b *build) built() (time.Duration, time.Duration) {
	end := b.last().ex.Answered
	hi := end.Sub(b.origin)
	lo := max(end.Add(-b.answerDelay).Sub(b.startedBy), 0)
	return (lo + hi) / 2, (hi - lo) / 2
}

// queryable is when every range had a written copy, from the build's estimated start (the
// middle of origin and startedBy).
func (b *build) queryable() time.Duration {
	first := map[string]time.Time{}
	for _, w := range b.waits {
		if t, ok := first[w.copy.Range]; !ok || w.ex.Answered.Before(t) {
			first[w.copy.Range] = w.ex.Answered
		}
	}
	var q time.Time
	for _, t := range first {
		if t.After(q) {
			q = t
		}
	}
	return q.Sub(b.origin) - b.startedBy.Sub(b.origin)/2
}

func (b *build) copyBuilds() []measured.CopyBuild {
	out := make([]measured.CopyBuild, len(b.waits))
	for i, w := range b.waits {
		out[i] = measured.CopyBuild{Node: w.copy.Node, Range: w.copy.Range, Written: w.ex.Answered.Sub(b.origin)}
	}
	return out
}

// nodeReading is what a build reads of one node before and after it.
type nodeReading struct {
	// mapDoc is the node's couchdb.mrview.map_doc counter, -1 when it could not be read.
	mapDoc int64
	// uptime is how long the node had been running, -1 when the server does not say (a
	// server that is not CouchDB) or did not answer (then err says why).
	uptime time.Duration
	err    error
	// sent and answered bound the moment the node measured its uptime.
	sent, answered time.Time
}

func readNodes(ctx context.Context, c *couch.Client, nodes []string) []nodeReading {
	out := make([]nodeReading, len(nodes))
	for i, n := range nodes {
		r := nodeReading{mapDoc: -1, uptime: -1, sent: time.Now()}
		if v, err := c.Counter(ctx, n, "couchdb", "mrview", "map_doc"); err == nil {
			r.mapDoc = v
		}
		if up, err := c.Uptime(ctx, n); err == nil {
			r.uptime = up
		} else {
			r.err = err
		}
		r.answered = time.Now()
		out[i] = r
	}
	return out
}

// mapDocGrowth is the growth of map_doc over all nodes, -1 when a node could not be read.
func mapDocGrowth(before, after []nodeReading) int64 {
	var total int64
	for i := range before {
		if before[i].mapDoc < 0 || after[i].mapDoc < 0 {
			return -1
		}
		total += after[i].mapDoc - before[i].mapDoc
	}
	return total
}

// ErrNodeInterrupted is returned (wrapped) when a node stopped answering or restarted
// during a build. On real Apache CouchDB 3.4.3 (3 nodes, q=2, n=3), with a node stopped
// mid-build and started again, the build still "succeeded" with a right view, but its
// numbers described no build: with node 3 stopped, the build was taken as done once the
// other nodes' copies were (4 of 6 copies seen, node 3's never finished); with node 1, the
// client's, stopped, the time included the outage and map_doc, which a restart resets,
// "grew" by 0.
var ErrNodeInterrupted = errors.New("a node stopped or restarted during the build, so its times and counts do not describe one build; run it again")

// firstLine keeps an error to its first line: a node that is starting can answer with a
// multi-line Erlang stack trace.
func firstLine(err error) string {
	msg, _, cut := strings.Cut(err.Error(), "\n")
	if cut {
		msg += " ..."
	}
	return msg
}

// uptimeSlack covers uptime's whole seconds (one at each reading) and clock drift.
const uptimeSlack = 2 * time.Second

// checkNodesStayed fails when a node that said how long it had been up before the build
// did not answer after it, or had been up for less time than passed between the two
// readings: it restarted.
func checkNodesStayed(nodes []string, before, after []nodeReading) error {
	for i, node := range nodes {
		b, a := before[i], after[i]
		if b.uptime < 0 {
			continue
		}
		if a.uptime < 0 {
			return fmt.Errorf("%w: node %s could not say how long it had been up after the build: %s", ErrNodeInterrupted, node, firstLine(a.err))
		}
		if passed := a.sent.Sub(b.answered); a.uptime+uptimeSlack < b.uptime+passed {
			return fmt.Errorf("%w: node %s restarted: it had been up %v when the build began and only %v when it ended, %v later",
				ErrNodeInterrupted, node, b.uptime, a.uptime, passed.Round(time.Second))
		}
	}
	return nil
}

// Verify reads the whole built view (group=true) and compares it with the expected sums.
// A wrong index fails the run with the months that differ.
func Verify(ctx context.Context, c *couch.Client, db, ddocID string, expected map[dataset.MonthKey]int64) error {
	var rows []couch.ViewRow
	_, err := askThroughOutage(ctx, c, "CouchDB at "+c.URL(), func() (err error) {
		rows, err = c.QueryView(ctx, db, ddocID, ddoc.ByMonth, url.Values{"group": {"true"}})
		return err
	})
	if err != nil {
		return fmt.Errorf("reading the built view %s: %w", ddocID, err)
	}
	got := make(map[dataset.MonthKey]int64, len(rows))
	var problems []string
	for _, r := range rows {
		var key []string
		if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 2 {
			problems = append(problems, fmt.Sprintf("row key %s is not [year, month]", r.Key))
			continue
		}
		sum, err := strconv.ParseInt(strings.TrimSpace(string(r.Value)), 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("month %s-%s: value %s is not a whole number", key[0], key[1], r.Value))
			continue
		}
		got[dataset.MonthKey{Year: key[0], Month: key[1]}] = sum
	}
	for k, want := range expected {
		if have, ok := got[k]; !ok {
			problems = append(problems, fmt.Sprintf("month %s-%s missing (want %d)", k.Year, k.Month, want))
		} else if have != want {
			problems = append(problems, fmt.Sprintf("month %s-%s: %d, want %d", k.Year, k.Month, have, want))
		}
	}
	for k, have := range got {
		if _, ok := expected[k]; !ok {
			problems = append(problems, fmt.Sprintf("month %s-%s: unexpected row (%d)", k.Year, k.Month, have))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s: %s", ErrWrongIndex, ddocID, strings.Join(problems, "; "))
	}
	return nil
}

// ErrWrongIndex is returned (wrapped) when a built view's answer differs from the dataset.
var ErrWrongIndex = errors.New("the built view does not match the dataset")
