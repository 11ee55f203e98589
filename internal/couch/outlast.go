package couch

import (
	"context"
	"time"
)

// UnreachableLimit is how long a request is asked again while its answers say the server, or
// a node behind it, is away (Outlast).
var UnreachableLimit = 5 * time.Minute

// RetryInterval is how long Outlast waits before asking again. A variable for the tests.
var RetryInterval = time.Second

// Outlast calls ask until it succeeds, fails with an error that passing does not take for an
// outage that passes, or has failed with such errors for UnreachableLimit (expired: the outage
// did not pass). It returns how often it asked and ask's last error, or the context's when
// the context ends while it waits. A node that restarts, or a cluster's DNS on a loaded node,
// answers like this for a while: failing at once would fail a run that asking again saves.
func Outlast(ctx context.Context, passing func(error) bool, ask func() error) (asked int, expired bool, err error) {
	var since time.Time
	for asked = 1; ; asked++ {
		err = ask()
		if err == nil || ctx.Err() != nil || !passing(err) {
			return asked, false, err
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > UnreachableLimit {
			return asked, true, err
		}
		if err := pause(ctx, RetryInterval); err != nil {
			return asked, false, err
		}
	}
}
