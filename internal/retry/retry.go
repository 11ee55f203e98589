// Package retry is couchbench's one way to try something again: a request that failed in a
// way that may pass, or a look at CouchDB until it shows what a step waits for. A Policy
// paces the tries with k8s.io/apimachinery's wait package (a wait.Backoff's pauses, its
// loop, which ends with the caller's context) and says when trying ends: after so many
// tries, or once the tries have gone on for so long.
//
// The schedules themselves are named where their reasons are: couch.UnreachableLimit (how
// long a node may be away), seeding.DefaultRetry, indexing's DefaultPollInterval, and the
// others. Code takes its Policy from its caller (an option or a field), so that a test
// shortens it for the code it tests and for nothing else.
package retry

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Policy says how often something is tried and when trying ends.
type Policy struct {
	// Backoff paces the tries: Duration is the first pause, and with a Factor each next
	// pause grows by it, at most Steps times and never beyond Cap.
	Backoff wait.Backoff
	// Tries bounds the number of tries; 0 sets no bound.
	Tries int
	// Limit bounds how long the tries go on, from the end of the first; 0 sets no bound.
	// For a request asked again, that is from its first failure.
	Limit time.Duration
}

// Every tries every interval, for up to limit (0: until the context ends).
func Every(interval, limit time.Duration) Policy {
	return Policy{Backoff: wait.Backoff{Duration: interval}, Limit: limit}
}

// Doubling tries up to tries times, pausing first and then twice as long each time, at
// most most.
func Doubling(first, most time.Duration, tries int) Policy {
	return Policy{Backoff: wait.Backoff{Duration: first, Factor: 2, Cap: most, Steps: tries}, Tries: tries}
}

// Until calls check until it is done or fails, pausing between the calls as the policy
// says. It returns how many times check was called and whether the policy was used up
// first (gaveUp, with a nil error), or check's error, or the context's when the context
// ends during a pause. check is called at least once, and with ctx.
func (p Policy) Until(ctx context.Context, check func(context.Context) (done bool, err error)) (tries int, gaveUp bool, err error) {
	var firstEnded time.Time
	err = p.Backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		tries++
		done, err := check(ctx)
		if done || err != nil {
			return done, err
		}
		now := time.Now()
		if firstEnded.IsZero() {
			firstEnded = now
		}
		if p.Tries > 0 && tries >= p.Tries || p.Limit > 0 && now.Sub(firstEnded) > p.Limit {
			gaveUp = true
			return true, nil
		}
		return false, nil
	})
	return tries, gaveUp, err
}

// Do calls ask until it succeeds, fails with an error that passing does not take for one
// that may pass, or the policy is used up (gaveUp). It returns how many times it asked and
// ask's last error, or the context's when the context ends during a pause. A failure after
// which the context has ended is not asked again: it is returned as it is.
func (p Policy) Do(ctx context.Context, passing func(error) bool, ask func() error) (asked int, gaveUp bool, err error) {
	var last error
	asked, gaveUp, err = p.Until(ctx, func(ctx context.Context) (bool, error) {
		last = ask()
		if last == nil || ctx.Err() != nil || !passing(last) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return asked, false, err
	}
	return asked, gaveUp, last
}

// Sleep pauses for d, or until ctx ends (then it returns the context's error). A pause of
// nothing returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
