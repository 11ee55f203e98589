package couch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ShardCopy is one node's copy of one shard range of a database: the file a view index is
// built from, and the unit CouchDB's log reports index updates for.
type ShardCopy struct {
	Node string
	// Range is the range of document id hashes, e.g. "00000000-7fffffff".
	Range string
	// Name is the copy's node-local database, e.g. "shards/00000000-7fffffff/db.1795528184".
	Name string
}

// ShardCopies lists every copy of every shard range of db, ranges in order, from the
// database's entry in the cluster's shard map (GET /_node/_local/_dbs/{db}: the node-local
// database every node keeps a full copy of).
func (c *Client) ShardCopies(ctx context.Context, db string) ([]ShardCopy, error) {
	var entry struct {
		// ShardSuffix is ".<creation time>" as a list of character codes.
		ShardSuffix []rune              `json:"shard_suffix"`
		ByRange     map[string][]string `json:"by_range"`
	}
	req := request{method: http.MethodGet, path: "/_node/_local/_dbs/" + escape(db), accept: []int{http.StatusOK}}
	if _, err := c.call(ctx, req, &entry); err != nil {
		return nil, fmt.Errorf("reading the shard map of %s: %w", db, err)
	}
	if len(entry.ByRange) == 0 {
		return nil, fmt.Errorf("reading the shard map of %s: %s lists no shard ranges", db, req.path)
	}
	var copies []ShardCopy
	for _, r := range slices.Sorted(maps.Keys(entry.ByRange)) {
		for _, node := range entry.ByRange[r] {
			copies = append(copies, ShardCopy{Node: node, Range: r, Name: "shards/" + r + "/" + db + string(entry.ShardSuffix)})
		}
	}
	return copies, nil
}

// copyPath is a path on the copy's own node: /_node/{node}/{copy}/... reaches the node's
// local HTTP interface, where a shard copy is a database of its own.
func copyPath(cp ShardCopy, rest string) string {
	return nodePath(cp.Node) + "/" + escape(cp.Name) + rest
}

// IndexInfo is the part of a shard copy's GET .../_design/{ddoc}/_info the runner reads.
type IndexInfo struct {
	// UpdateSeq is the copy's sequence the index holds; 0 for an index never built.
	UpdateSeq int64 `json:"update_seq"`
	// UpdaterRunning is true while the copy's index update runs: it turns false in the
	// same step of CouchDB's couch_index_updater that logs "Index update finished".
	UpdaterRunning bool `json:"updater_running"`
	// PendingUpdates is the copy's committed changes the index does not hold yet.
	PendingUpdates int64 `json:"pending_updates"`
}

// CopyIndexInfo reads the index of design document ddocID on one shard copy, within
// the client's Waits.CopyRead. It opens the index if it was not open, and never starts an update.
func (c *Client) CopyIndexInfo(ctx context.Context, cp ShardCopy, ddocID string) (IndexInfo, Exchange, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.waits.CopyRead, errCopyUnanswered)
	defer cancel()
	var answer struct {
		ViewIndex IndexInfo `json:"view_index"`
	}
	req := request{method: http.MethodGet, path: copyPath(cp, "/"+designPath(ddocID)+"/_info"), accept: []int{http.StatusOK}}
	ex, err := c.timedCall(ctx, req, &answer)
	if err != nil && errors.Is(context.Cause(ctx), errCopyUnanswered) {
		// This bound is the client's, not the caller's: the copy's node does not answer, as
		// NodeDown means, which an expired deadline of the caller's would not.
		err = &Error{Method: req.method, Path: req.path, Err: fmt.Errorf("%w within %v", errCopyUnanswered, c.waits.CopyRead)}
	}
	return answer.ViewIndex, ex, err
}

// errCopyUnanswered is the cause CopyIndexInfo gives its own timeout.
var errCopyUnanswered = errors.New("the shard copy's node did not answer")

// WaitCopyView sends a view request to one shard copy and returns when its answer begins.
// A view request waits until the copy's index holds every change of the copy; with
// reduce=false and limit=0 it then computes and sends nothing, so its answer comes as soon
// as the index is written (CouchDB answers the waiting request right after it logs "Index
// update finished" for the copy). Unlike a request to the cluster, it has no request
// timeout: fabric is not involved.
func (c *Client) WaitCopyView(ctx context.Context, cp ShardCopy, ddocID, view string) (Exchange, error) {
	req := request{method: http.MethodGet, path: copyPath(cp, "/"+designPath(ddocID)+"/_view/"+escape(view)),
		query: url.Values{"reduce": {"false"}, "limit": {"0"}}, accept: []int{http.StatusOK}}
	return c.timedCall(ctx, req, nil)
}

// Exchange is when a request was on its way and when its answer came: Wrote is when the
// request had been written to the connection, Answered when the first byte of the answer
// arrived.
type Exchange struct {
	Wrote, Answered time.Time
}

// RoundTrip is the time between the two.
func (e Exchange) RoundTrip() time.Duration { return e.Answered.Sub(e.Wrote) }

// timedCall is call with the moments the request was written and answered. Neither
// includes waiting for a connection or writing the request, which a caller timing the
// server must not count.
func (c *Client) timedCall(ctx context.Context, req request, out any) (Exchange, error) {
	// The transport calls the hooks from its own goroutines.
	var (
		mu sync.Mutex
		ex Exchange
	)
	at := func(t *time.Time) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			*t = time.Now()
		}
	}
	wrote := at(&ex.Wrote)
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote() },
		GotFirstResponseByte: at(&ex.Answered),
	}
	_, err := c.call(httptrace.WithClientTrace(ctx, trace), req, out)
	mu.Lock()
	defer mu.Unlock()
	if err == nil && (ex.Wrote.IsZero() || ex.Answered.IsZero()) {
		err = &Error{Method: req.method, Path: req.path, Err: errors.New("the HTTP client did not report when the request was written and answered")}
	}
	return ex, err
}

// NodeDown reports an error that says a node of the cluster, or the node the client talks
// to, does not answer: no answer at all (not the caller's own cancel or deadline), a
// gateway's 502, 503 or 504, CouchDB's own 412 nodedown for a request it forwards to a node
// that is down, or its 500 for one forwarded to a node that is going away. Asking again once
// the node is back can succeed.
func NodeDown(err error) bool {
	if unreachable(err) {
		return true
	}
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Status {
	case http.StatusPreconditionFailed:
		return strings.EqualFold(ce.Name, "nodedown")
	case http.StatusInternalServerError:
		return namesNodeGone(ce.Name) || namesNodeGone(ce.Reason)
	}
	return false
}

// nodeGoneAtoms are the Erlang terms a 500 carries when CouchDB forwarded the request to a
// node that stopped answering meanwhile: rpc's badrpc, a process of the shutting-down node
// already gone (noproc), the node itself gone (nodedown), or rexi's monitor of the remote
// worker firing. CouchDB puts the term in "error" or, printed whole, in "reason": a config
// PUT forwarded to a node shutting down is answered "case_clause" with "{badrpc, {'EXIT',
// {noproc, ...", seen on the kit's cluster. So both are searched, for whole atoms only: any
// other 500 is a real error.
var nodeGoneAtoms = []string{"badrpc", "noproc", "nodedown", "rexi_DOWN"}

func namesNodeGone(s string) bool {
	isAtomChar := func(r rune) bool {
		return r == '_' || r == '@' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return slices.ContainsFunc(strings.FieldsFunc(s, func(r rune) bool { return !isAtomChar(r) }), func(atom string) bool {
		return slices.Contains(nodeGoneAtoms, atom)
	})
}
