package couch

import (
	"context"
	"time"

	"github.com/couchbench/couchbench/internal/retry"
)

// The schedule on which a request is asked again while the server, or a node behind it, is
// away (Outlast). A node that restarts, a CouchDB pod that Kubernetes moves, or a cluster's
// DNS on a loaded node answer like that for seconds to minutes, and failing at once would
// fail a run that asking again saves; a node away for longer than UnreachableLimit is lost
// (Kubernetes has called it NotReady by then, and the operator says so).
const (
	UnreachableLimit = 5 * time.Minute
	RetryInterval    = time.Second
)

// CopyReadTimeout bounds a request to one shard copy that is answered at once: its index
// info, or its view once the index is written. CouchDB forwards it to the copy's node with
// no timeout of its own, and one that reaches a node while the node starts can stay
// unanswered for ever (seen on the kit's cluster, a node restarted mid-build).
const CopyReadTimeout = 30 * time.Second

// Waits are how long and how often the client, and the code that uses it, wait for
// CouchDB. A zero field takes DefaultWaits' value: tests shorten the ones they test.
type Waits struct {
	// Outage asks a request again while the server or a node is away (Outlast).
	Outage retry.Policy
	// Recreate asks RecreateDB's create again while CouchDB still answers file_exists.
	Recreate retry.Policy
	// Delete sends DeleteDB's DELETE again after a failure that may pass.
	Delete retry.Policy
	// CopyRead bounds a request to one shard copy (CopyIndexInfo).
	CopyRead time.Duration
}

// DefaultWaits are the client's waits unless Options say otherwise.
var DefaultWaits = Waits{
	Outage: retry.Every(RetryInterval, UnreachableLimit),
	// 50 ms doubling to 1 s, 20 tries: about 16 s for a deletion to go through.
	Recreate: retry.Doubling(50*time.Millisecond, time.Second, 20),
	// 50 ms doubling, 6 tries: the badarg DeleteDB rides out answers 404 50 ms later.
	Delete:   retry.Doubling(50*time.Millisecond, time.Second, 6),
	CopyRead: CopyReadTimeout,
}

// orDefaults fills the zero fields with DefaultWaits'.
func (w Waits) orDefaults() Waits {
	if w.Outage == (retry.Policy{}) {
		w.Outage = DefaultWaits.Outage
	}
	if w.Recreate == (retry.Policy{}) {
		w.Recreate = DefaultWaits.Recreate
	}
	if w.Delete == (retry.Policy{}) {
		w.Delete = DefaultWaits.Delete
	}
	if w.CopyRead == 0 {
		w.CopyRead = DefaultWaits.CopyRead
	}
	return w
}

// Waits are the client's waits, defaults filled in.
func (c *Client) Waits() Waits { return c.waits }

// Outlast calls ask until it succeeds, fails with an error that passing does not take for an
// outage that passes, or has failed with such errors for the client's Waits.Outage limit
// (expired: the outage did not pass). It returns how often it asked and ask's last error, or
// the context's when the context ends while it waits.
func (c *Client) Outlast(ctx context.Context, passing func(error) bool, ask func() error) (asked int, expired bool, err error) {
	return c.waits.Outage.Do(ctx, passing, ask)
}
