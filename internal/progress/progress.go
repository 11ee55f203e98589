// Package progress paces the progress lines of steps that can run for minutes (seeding, a
// build, write rounds, a wait): a user watching `couchbench run` or a Job's log, and the
// operator's status.progress that quotes it, learn at least every Interval that the step is
// alive and how far it got, never more often, so that a long run's log stays readable.
package progress

import (
	"sync"
	"time"
)

// Interval is the longest silence inside a step.
const Interval = 10 * time.Second

// Every calls report every interval (Interval when 0) until the returned stop is called;
// stop waits for a report in flight, so that none follows the step's own last line. report
// runs on another goroutine: what it reads must be safe for that (atomic counters), and it
// writes its line itself (the runner's lines carry its timestamp).
func Every(interval time.Duration, report func()) (stop func()) {
	if interval <= 0 {
		interval = Interval
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				report()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
