// Package viewreads measures full reads of a built view (seed 002): a view that emits the
// whole document, one that emits null, and the null view read with include_docs=true,
// where CouchDB fetches every document from the database file as it streams the rows. The
// views are keyed by username, an order unrelated to where documents lie in the file (see
// ddoc.UserDoc).
package viewreads

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/indexing"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/names"
)

// Options describe the reads of one database.
type Options struct {
	DB        string
	Documents int64
	// Replicas is the database's n: every copy indexes every document of its range.
	Replicas int
	Language string
	// Progress, when set, is told how far the views' build got every ProgressInterval
	// (progress.Interval when 0): over the dataset, it takes as long as a timed build.
	Progress         func(indexing.Progress)
	ProgressInterval time.Duration
	// Began and Ended, when set, bracket each timed read (a read asked again after a short
	// answer begins again), for the server's CPU time over it.
	Began, Ended func()
}

// viewOf maps a read kind to the view and the query that reads it.
func viewOf(kind benchv1.ViewReadKind) (string, url.Values) {
	switch kind {
	case benchv1.ViewEmitDoc:
		return ddoc.UserDoc, url.Values{}
	case benchv1.ViewEmitNullIncludeDocs:
		return ddoc.UserNull, url.Values{"include_docs": {"true"}}
	default:
		return ddoc.UserNull, url.Values{}
	}
}

// Build puts the views in the database and builds them, untimed: seed 002 pre-warms them.
func Build(ctx context.Context, c *couch.Client, opts Options) error {
	doc, err := ddoc.ViewReads(names.ViewReadsDesignDoc, opts.Language)
	if err != nil {
		return err
	}
	if err := c.PutDesignDoc(ctx, opts.DB, doc); err != nil && couch.StatusOf(err) != 409 {
		return fmt.Errorf("creating %s: %w", names.ViewReadsDesignDoc, err)
	}
	if opts.Progress != nil {
		changes := opts.Documents * int64(max(opts.Replicas, 1))
		stop := indexing.Follow(ctx, c, opts.DB, []string{names.ViewReadsDesignDoc}, changes, opts.ProgressInterval, opts.Progress)
		defer stop()
	}
	// One index holds every view of the design document: building one builds them all.
	if _, err := c.WaitForView(ctx, opts.DB, names.ViewReadsDesignDoc, ddoc.UserDoc, url.Values{"limit": {"0"}}); err != nil {
		return fmt.Errorf("building the views of %s: %w", names.ViewReadsDesignDoc, err)
	}
	return nil
}

// errShortRead is a read that returned fewer rows than there are documents.
var errShortRead = errors.New("fewer rows than documents")

// ReadOnce times one full read of a built view. A read that returns another number of rows
// than there are documents is an error, and is not a measurement. On a database with copies
// (n > 1) such a read is made again for the client's outage limit (couch.Client.Outlast): a
// view read takes one copy of each shard range, and a copy on a node that came back is
// refilled by CouchDB's internal replication after the dataset's wait saw the other copies
// complete (seen in the e2e suite, a CouchDB pod deleted during seeding: 9,060 rows of
// 20,000). Only the read that returned every row is timed.
func ReadOnce(ctx context.Context, c *couch.Client, opts Options, kind benchv1.ViewReadKind) (measured.ViewRead, error) {
	view, params := viewOf(kind)
	var got measured.ViewRead
	asked, _, err := c.Outlast(ctx, func(err error) bool { return opts.Replicas > 1 && errors.Is(err, errShortRead) }, func() error {
		call(opts.Began)
		start := time.Now()
		read, err := c.ReadView(ctx, opts.DB, names.ViewReadsDesignDoc, view, params)
		elapsed := time.Since(start)
		call(opts.Ended)
		if err != nil {
			return fmt.Errorf("reading view %s (%s): %w", view, kind, err)
		}
		if read.Rows != opts.Documents {
			return fmt.Errorf("view %s (%s) returned %d rows, want %d (one per document): %w", view, kind, read.Rows, opts.Documents, errShortRead)
		}
		got = measured.ViewRead{StartedAt: start.UTC(), Rows: read.Rows, Bytes: read.Bytes, Elapsed: elapsed}
		return nil
	})
	if err != nil && asked > 1 {
		return measured.ViewRead{}, fmt.Errorf("%w (read %d times over %v)", err, asked, c.Waits().Outage.Limit)
	}
	return got, err
}

func call(hook func()) {
	if hook != nil {
		hook()
	}
}
