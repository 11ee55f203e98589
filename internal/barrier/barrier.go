// Package barrier starts the runner pods of one step together, through the CouchDB they
// load: no pod needs access to the Kubernetes API, and the same works for pods started by
// hand. Each part announces itself with a local document in the step's database
// (_local/cb-barrier-<name>-<part>: never replicated, counted or indexed, so the measured
// database is as if it were not there), then polls until every part has. Parts leave within
// one poll interval of each other; results report the spread of their starts.
package barrier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/progress"
	"github.com/couchbench/couchbench/internal/retry"
)

// Barrier is one part's view of a barrier shared by Parts parts.
type Barrier struct {
	Client *couch.Client
	// DB holds the barrier's local documents; a part may arrive before the database
	// exists (part 0 creates it), and then waits for it.
	DB    string
	Part  int
	Parts int
	// Poll is how often the parts look for each other; 0 uses DefaultPoll.
	Poll time.Duration
	// Timeout bounds the wait for the other parts; 0 uses DefaultTimeout.
	Timeout time.Duration
	// Progress, when set, is told every ProgressInterval (progress.Interval when 0) of a
	// wait which parts have not arrived yet (-1: the database is not there or not reachable)
	// and how long the part has waited.
	Progress         func(missing []int, waited time.Duration)
	ProgressInterval time.Duration
}

// DefaultPoll bounds how far apart the parts start.
const DefaultPoll = 50 * time.Millisecond

// DefaultTimeout is how long a part waits for the others: long enough for pods of one Job
// set to be scheduled and started, short enough that a pod that never starts (its Job
// cannot be scheduled) fails the step with a message rather than at the run's timeout.
const DefaultTimeout = 10 * time.Minute

// docIDs are the local documents (without "_local/") of the barrier called name, by part.
func docIDs(name string, parts int) []string {
	docs := make([]string, parts)
	for i := range docs {
		docs[i] = "cb-barrier-" + name + "-" + strconv.Itoa(i)
	}
	return docs
}

// Spec is the barrier called name as the k6 script takes it (COUCHBENCH_BARRIER), which
// waits the same way in its setup: JSON with every part's local document and this part's.
func Spec(name string, part, parts int) string {
	return k6Spec{Docs: docIDs(name, parts), Part: part}.json()
}

// MeteredSpec is Spec for k6 runner part of runners whose round a meter of the server's CPU
// time takes part in (internal/readscpu): the start barrier has one part more, the meter,
// the last; and End lists the documents of the barrier called EndOf(name), of as many
// parts, at which each runner arrives without waiting once its load has ended.
func MeteredSpec(name string, part, runners int) string {
	return k6Spec{Docs: docIDs(name, runners+1), Part: part, End: docIDs(EndOf(name), runners+1)}.json()
}

// EndOf names the barrier at which the parts of the barrier called name say they are done.
func EndOf(name string) string { return name + "-end" }

// k6Spec is COUCHBENCH_BARRIER.
type k6Spec struct {
	Docs []string `json:"docs"`
	Part int      `json:"part"`
	End  []string `json:"end,omitempty"`
}

func (s k6Spec) json() string {
	data, _ := json.Marshal(s)
	return string(data)
}

// Arrive announces the part at the barrier called name without waiting for the others: for a
// part that others wait for (it is done) but that has no need to wait itself.
func (b Barrier) Arrive(ctx context.Context, name string) error {
	_, err := b.meet(ctx, name, false)
	return err
}

// Wait announces the part at the barrier called name and returns when every part has, with
// the time it left. A database that does not exist yet, and transient failures, are waited
// out; another error, or the timeout, ends the wait with an error that names the parts that
// did not arrive.
func (b Barrier) Wait(ctx context.Context, name string) (time.Time, error) {
	return b.meet(ctx, name, true)
}

func (b Barrier) meet(ctx context.Context, name string, wait bool) (time.Time, error) {
	poll, timeout := b.Poll, b.Timeout
	if poll <= 0 {
		poll = DefaultPoll
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	docs := docIDs(name, b.Parts)
	own := docs[b.Part]
	body, _ := json.Marshal(map[string]any{"part": b.Part, "parts": b.Parts})
	start := time.Now()
	var missing []int
	// absent is missing for the progress reports, which run on another goroutine.
	var absent atomic.Pointer[[]int]
	if wait && b.Progress != nil {
		stop := progress.Every(b.ProgressInterval, func() {
			if parts := absent.Load(); parts != nil {
				b.Progress(*parts, time.Since(start))
			}
		})
		defer stop()
	}
	var left time.Time
	_, gaveUp, err := retry.Every(poll, timeout).Until(ctx, func(ctx context.Context) (bool, error) {
		found, err := b.Client.LocalDocs(ctx, b.DB, docs)
		// read: found is what CouchDB holds, not what the part has yet to read after writing
		// its own document.
		read := true
		if err == nil && !found[own] {
			// Written again whenever it is not found: the database may have been created
			// (or deleted and created) after an earlier attempt.
			if err = b.Client.PutLocal(ctx, b.DB, own, body); err == nil && !wait {
				left = time.Now()
				return true, nil
			}
			found, read = map[string]bool{}, false
		}
		switch {
		case err == nil:
			missing = missing[:0]
			for i, d := range docs {
				if !found[d] {
					missing = append(missing, i)
				}
			}
			if len(missing) == 0 || (!wait && found[own]) {
				left = time.Now()
				return true, nil
			}
		case couch.StatusOf(err) == http.StatusNotFound || couch.Transient(err):
			missing = []int{-1}
		default:
			return false, fmt.Errorf("barrier %s in database %s: %w", name, b.DB, err)
		}
		if read {
			published := slices.Clone(missing)
			absent.Store(&published)
		}
		return false, nil
	})
	switch {
	case err != nil:
		return time.Time{}, err
	case gaveUp && slices.Contains(missing, -1):
		return time.Time{}, fmt.Errorf("barrier %s: database %s not reachable or not created within %s", name, b.DB, timeout)
	case gaveUp:
		return time.Time{}, fmt.Errorf("barrier %s: parts %v of %d did not arrive within %s (are their pods running?)", name, missing, b.Parts, timeout)
	}
	return left, nil
}
