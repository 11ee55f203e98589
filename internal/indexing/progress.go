package indexing

import (
	"context"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/progress"
)

// Progress is how far a view build has got, from the polls of /_active_tasks so far.
type Progress struct {
	// ChangesDone is the changes indexed over the shard copies seen so far, a copy whose
	// task has vanished counted as complete (as in Analysis.Series).
	ChangesDone int64
	// Changes is what the build has to index: documents x n. The copies' total_changes do
	// not add up to it until every copy's task has been seen, and a whole that grew as copies
	// showed up could make the share go back.
	Changes int64
}

// Share is the part of the build done, from 0 to 1. A copy's changes count its design
// documents too, so ChangesDone can pass Changes at the very end: the share stops at 1.
func (p Progress) Share() float64 {
	if p.Changes <= 0 {
		return 0
	}
	return min(float64(p.ChangesDone)/float64(p.Changes), 1)
}

// Follow reports, every interval (progress.Interval when 0), how far the build of the index
// of ddocIDs (a design document, or one and its twins) on database db has got, until the
// returned stop is called: for a build that is not timed, which Build's polls do not follow.
func Follow(ctx context.Context, c *couch.Client, db string, ddocIDs []string, changes int64, interval time.Duration,
	report func(Progress)) (stop func()) {
	if interval <= 0 {
		interval = progress.Interval
	}
	p := startPolling(ctx, c, interval)
	stopReports := p.reportEvery(ctx, interval, db, ddocIDs, changes, report)
	return func() {
		stopReports()
		p.cancel()
		<-p.done
	}
}

// reportEvery tells report every interval how far the build has got by p's polls so far,
// until the returned stop is called: every poll is read, so that a copy whose task has
// vanished counts as done. Nothing is reported once ctx is done: the build was cut short,
// and the step says so.
func (p *poller) reportEvery(ctx context.Context, interval time.Duration, db string, ddocIDs []string, changes int64,
	report func(Progress)) (stop func()) {
	return progress.Every(interval, func() {
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		a := Analyze(p.sample, db, ddocIDs...)
		p.mu.Unlock()
		var done int64
		if n := len(a.Series); n > 0 {
			done = a.Series[n-1].ChangesDone
		}
		report(Progress{ChangesDone: done, Changes: changes})
	})
}
