package couch

// Outlast on its own: the asks are functions returning errors, no server is involved.

import (
	"context"
	"errors"
	"testing"
	"time"
)

func quickRetries(t *testing.T, limit time.Duration) {
	t.Helper()
	interval, unreachable := RetryInterval, UnreachableLimit
	t.Cleanup(func() { RetryInterval, UnreachableLimit = interval, unreachable })
	RetryInterval, UnreachableLimit = time.Millisecond, limit
}

var (
	errAway  = errors.New("away")
	errWrong = errors.New("wrong")
)

func isAway(err error) bool { return errors.Is(err, errAway) }

func TestOutlastAsksAgainWhileTheOutagePasses(t *testing.T) {
	quickRetries(t, time.Minute)
	calls := 0
	asked, expired, err := Outlast(context.Background(), isAway, func() error {
		if calls++; calls < 4 {
			return errAway
		}
		return nil
	})
	if err != nil || expired || asked != 4 {
		t.Errorf("Outlast = %d, %v, %v; want 4 asks, not expired, no error", asked, expired, err)
	}
}

func TestOutlastTellsOtherErrorsAtOnce(t *testing.T) {
	quickRetries(t, time.Minute)
	calls := 0
	asked, expired, err := Outlast(context.Background(), isAway, func() error {
		if calls++; calls < 2 {
			return errAway
		}
		return errWrong
	})
	if !errors.Is(err, errWrong) || expired || asked != 2 {
		t.Errorf("Outlast = %d, %v, %v; want 2 asks, not expired, %v", asked, expired, err, errWrong)
	}
}

func TestOutlastGivesUpAfterTheLimit(t *testing.T) {
	quickRetries(t, 30*time.Millisecond)
	start := time.Now()
	asked, expired, err := Outlast(context.Background(), isAway, func() error { return errAway })
	if !errors.Is(err, errAway) || !expired || asked < 2 {
		t.Errorf("Outlast = %d, %v, %v; want several asks, expired, %v", asked, expired, err, errAway)
	}
	if since := time.Since(start); since < UnreachableLimit {
		t.Errorf("gave up after %v, before the limit %v", since, UnreachableLimit)
	}
}

func TestOutlastEndsWithItsContext(t *testing.T) {
	quickRetries(t, time.Hour)
	RetryInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	asked, expired, err := Outlast(ctx, isAway, func() error {
		cancel()
		return errAway
	})
	if !errors.Is(err, errAway) || expired || asked != 1 {
		t.Errorf("Outlast = %d, %v, %v; want 1 ask, not expired, the ask's error", asked, expired, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, expired, err = Outlast(ctx, isAway, func() error { return errAway })
	if !errors.Is(err, context.DeadlineExceeded) || expired {
		t.Errorf("Outlast ended by its deadline while waiting = %v, %v; want the context's error", expired, err)
	}
}
