// Package schedule says when the runs of a CouchBenchmarkSchedule are due. It is pure: the
// caller passes the time, so that a controller with an injected clock can be tested without
// sleeping, and it parses cron syntax with robfig/cron, the library the CronJob controller
// uses.
package schedule

import (
	"fmt"
	"time"
	_ "time/tzdata" // the manager's distroless image has no zone files: see Parse

	"github.com/robfig/cron/v3"
)

// Parse reads a standard cron expression (five fields, or a descriptor such as @daily) in a
// time zone: an IANA name, or empty for UTC. Errors say what to fix. The zone database is
// the one built into the binary (time/tzdata) where the system has none, as in the manager's
// distroless image: without it every zone but UTC was refused there.
func Parse(expr, timeZone string) (cron.Schedule, error) {
	loc := time.UTC
	if timeZone != "" {
		var err error
		if loc, err = time.LoadLocation(timeZone); err != nil {
			return nil, fmt.Errorf("time zone %q is not an IANA time zone name (such as Europe/Berlin): %w", timeZone, err)
		}
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron schedule (five fields: minute hour day-of-month month day-of-week, "+
			"e.g. \"0 2 * * *\"; or @hourly, @daily, @weekly): %w", expr, err)
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return s, nil
}

// Due is what a schedule should do now.
type Due struct {
	// Slot is the latest start time that has come and has no run yet; zero when none has.
	// Only the latest is run: missed earlier slots are not caught up, as with a CronJob.
	Slot time.Time
	// Late is true when Slot has come but lies beyond the starting deadline: it is skipped.
	Late bool
	// Next is the first start time after now: when to look again.
	Next time.Time
}

// maxMissed bounds the walk over missed start times: more means the schedule was stopped for
// long or the clock jumped, and the caller is told to set a starting deadline.
const maxMissed = 100

// Next says which start time is due at now. after is the last start time that was run, or
// the schedule's creation when none was (no slot before the schedule existed runs).
// deadline, when positive, is how late a start may still happen.
func Next(s cron.Schedule, after, now time.Time, deadline time.Duration) (Due, error) {
	due := Due{Next: s.Next(now)}
	if !now.After(after) {
		// The clock went backwards, or nothing has come since: wait for the next slot.
		due.Next = s.Next(after)
		return due, nil
	}
	from := after
	if deadline > 0 && now.Add(-deadline).After(from) {
		// Slots older than the deadline can never run: do not walk them.
		from = now.Add(-deadline)
	}
	missed := 0
	for t := s.Next(from); !t.After(now); t = s.Next(t) {
		due.Slot = t
		if missed++; missed > maxMissed {
			return Due{}, fmt.Errorf("more than %d start times were missed since %s: set startingDeadlineSeconds, "+
				"or check the schedule and the clock", maxMissed, from.UTC().Format(time.RFC3339))
		}
	}
	if due.Slot.IsZero() && deadline > 0 && !from.Equal(after) {
		// A slot after `after` came, but only before the deadline's window: it is late.
		if t := s.Next(after); !t.After(now) {
			due.Slot, due.Late = t, true
		}
	}
	return due, nil
}
