package retry

// Policies on their own: what is tried is a function, no server is involved, and nothing
// here depends on how fast the machine is (the pauses are a millisecond, the limits far
// longer or far shorter than anything else the tests do).

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

var (
	errAway  = errors.New("away")
	errWrong = errors.New("wrong")
)

func isAway(err error) bool { return errors.Is(err, errAway) }

// failing answers errAway the first n times, then what last says.
func failing(n int, last error) func() error {
	calls := 0
	return func() error {
		if calls++; calls <= n {
			return errAway
		}
		return last
	}
}

func TestDoAsksAgainWhileTheFailurePasses(t *testing.T) {
	asked, gaveUp, err := Every(time.Millisecond, time.Minute).Do(context.Background(), isAway, failing(3, nil))
	if err != nil || gaveUp || asked != 4 {
		t.Errorf("Do = %d, %v, %v; want 4 asks, not given up, no error", asked, gaveUp, err)
	}
}

func TestDoTellsOtherErrorsAtOnce(t *testing.T) {
	asked, gaveUp, err := Every(time.Millisecond, time.Minute).Do(context.Background(), isAway, failing(1, errWrong))
	if !errors.Is(err, errWrong) || gaveUp || asked != 2 {
		t.Errorf("Do = %d, %v, %v; want 2 asks, not given up, %v", asked, gaveUp, err, errWrong)
	}
}

func TestDoGivesUpAfterItsTries(t *testing.T) {
	asked, gaveUp, err := Doubling(time.Millisecond, 2*time.Millisecond, 4).Do(context.Background(), isAway, failing(100, nil))
	if !errors.Is(err, errAway) || !gaveUp || asked != 4 {
		t.Errorf("Do = %d, %v, %v; want 4 asks, given up, the last failure", asked, gaveUp, err)
	}
}

func TestDoGivesUpAfterItsLimit(t *testing.T) {
	start := time.Now()
	var firstFailed time.Time
	calls := 0
	policy := Every(time.Millisecond, 30*time.Millisecond)
	asked, gaveUp, err := policy.Do(context.Background(), isAway, func() error {
		if calls++; calls == 1 {
			firstFailed = time.Now()
		}
		return errAway
	})
	if !errors.Is(err, errAway) || !gaveUp || asked < 2 {
		t.Errorf("Do = %d, %v, %v; want several asks, given up, %v", asked, gaveUp, err, errAway)
	}
	// The limit counts from the first failure: it cannot have been given up earlier.
	if ended := time.Since(firstFailed); ended < policy.Limit || firstFailed.Before(start) {
		t.Errorf("gave up %v after the first failure, before the limit %v", ended, policy.Limit)
	}
}

// The context ends the asking: a failure after which it ended is returned as it is, and a
// pause it ends returns the context's error.
func TestDoEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	asked, gaveUp, err := Every(time.Hour, 0).Do(ctx, isAway, func() error {
		cancel()
		return errAway
	})
	if !errors.Is(err, errAway) || gaveUp || asked != 1 {
		t.Errorf("Do = %d, %v, %v; want 1 ask, not given up, the ask's error", asked, gaveUp, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, gaveUp, err = Every(time.Millisecond, 0).Do(ctx, isAway, func() error { return errAway })
	if !errors.Is(err, context.DeadlineExceeded) || gaveUp {
		t.Errorf("Do ended by its deadline while it paused = %v, %v; want the context's error", gaveUp, err)
	}
}

// Until polls a check until it is done, tells a check's error at once, and says when the
// policy ran out first.
func TestUntil(t *testing.T) {
	looks := 0
	tries, gaveUp, err := Every(time.Millisecond, time.Minute).Until(context.Background(), func(context.Context) (bool, error) {
		looks++
		return looks == 3, nil
	})
	if tries != 3 || gaveUp || err != nil {
		t.Errorf("Until done at the third look = %d, %v, %v", tries, gaveUp, err)
	}
	tries, gaveUp, err = Every(time.Millisecond, time.Minute).Until(context.Background(), func(context.Context) (bool, error) {
		return false, errWrong
	})
	if tries != 1 || gaveUp || !errors.Is(err, errWrong) {
		t.Errorf("Until with a failing check = %d, %v, %v; want its error at once", tries, gaveUp, err)
	}
	tries, gaveUp, err = Every(time.Millisecond, 20*time.Millisecond).Until(context.Background(), func(context.Context) (bool, error) {
		return false, nil
	})
	if tries < 2 || !gaveUp || err != nil {
		t.Errorf("Until never done = %d, %v, %v; want given up after several looks", tries, gaveUp, err)
	}
}

// Doubling's pauses are wait.Backoff's: twice as long each time, then the most.
func TestDoublingPauses(t *testing.T) {
	next := Doubling(50*time.Millisecond, time.Second, 8).Backoff.DelayFunc()
	var got []time.Duration
	for range 7 {
		got = append(got, next())
	}
	want := []time.Duration{50, 100, 200, 400, 800, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(got, want) {
		t.Errorf("pauses %v, want %v", got, want)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep with an ended context = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}
