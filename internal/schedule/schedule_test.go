package schedule

import (
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNext(t *testing.T) {
	nightly, err := Parse("0 2 * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	everyMinute, _ := Parse("* * * * *", "")
	for _, tc := range []struct {
		name          string
		after, now    string
		deadline      time.Duration
		schedule      string
		slot, next    string
		late, minutes bool
	}{
		{name: "none missed", after: "2026-11-22T02:00:00Z", now: "2026-11-22T13:00:00Z", slot: "", next: "2026-11-23T02:00:00Z"},
		{name: "one missed", after: "2026-11-22T02:00:00Z", now: "2026-11-23T02:00:05Z", slot: "2026-11-23T02:00:00Z", next: "2026-11-24T02:00:00Z"},
		{name: "exactly on the slot", after: "2026-11-22T02:00:00Z", now: "2026-11-23T02:00:00Z", slot: "2026-11-23T02:00:00Z", next: "2026-11-24T02:00:00Z"},
		{name: "many missed: only the latest", after: "2026-11-10T02:00:00Z", now: "2026-11-23T03:00:00Z", slot: "2026-11-23T02:00:00Z", next: "2026-11-24T02:00:00Z"},
		{name: "within the deadline", after: "2026-11-22T02:00:00Z", now: "2026-11-23T02:04:00Z", deadline: 5 * time.Minute,
			slot: "2026-11-23T02:00:00Z", next: "2026-11-24T02:00:00Z"},
		{name: "past the deadline", after: "2026-11-22T02:00:00Z", now: "2026-11-23T02:10:00Z", deadline: 5 * time.Minute,
			slot: "2026-11-23T02:00:00Z", late: true, next: "2026-11-24T02:00:00Z"},
		{name: "clock went backwards", after: "2026-11-23T02:00:00Z", now: "2026-11-22T23:00:00Z", slot: "", next: "2026-11-24T02:00:00Z"},
		{name: "created just now: no slot before creation", after: "2026-11-23T02:00:30Z", now: "2026-11-23T02:00:31Z", slot: "", next: "2026-11-24T02:00:00Z"},
		{name: "every minute", after: "2026-11-23T10:00:00Z", now: "2026-11-23T10:02:10Z", minutes: true,
			slot: "2026-11-23T10:02:00Z", next: "2026-11-23T10:03:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nightly
			if tc.minutes {
				s = everyMinute
			}
			due, err := Next(s, at(tc.after), at(tc.now), tc.deadline)
			if err != nil {
				t.Fatal(err)
			}
			var wantSlot time.Time
			if tc.slot != "" {
				wantSlot = at(tc.slot)
			}
			if !due.Slot.Equal(wantSlot) || due.Late != tc.late || !due.Next.Equal(at(tc.next)) {
				t.Errorf("Next = slot %s late %v next %s; want slot %s late %v next %s", due.Slot, due.Late, due.Next, wantSlot, tc.late, tc.next)
			}
		})
	}
}

func TestTooManyMissedSaysWhatToDo(t *testing.T) {
	everyMinute, _ := Parse("* * * * *", "")
	_, err := Next(everyMinute, at("2026-11-20T00:00:00Z"), at("2026-11-23T00:00:00Z"), 0)
	if err == nil || !strings.Contains(err.Error(), "startingDeadlineSeconds") {
		t.Errorf("err %v", err)
	}
	// With a deadline only its window is walked.
	if _, err := Next(everyMinute, at("2026-11-20T00:00:00Z"), at("2026-11-23T00:00:00Z"), 10*time.Minute); err != nil {
		t.Errorf("with a deadline: %v", err)
	}
}

func TestParse(t *testing.T) {
	berlin, err := Parse("0 2 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 02:00 in Berlin in November (CET, UTC+1) is 01:00 UTC.
	if got := berlin.Next(at("2026-11-22T12:00:00Z")); !got.Equal(at("2026-11-23T01:00:00Z")) {
		t.Errorf("next in Berlin %s", got.UTC())
	}
	for _, bad := range []struct{ expr, tz, want string }{
		{"0 2 * *", "", "five fields"},
		{"61 * * * *", "", "five fields"},
		{"@daily", "Mars/Olympus", "IANA"},
	} {
		if _, err := Parse(bad.expr, bad.tz); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error saying %q", bad.expr, bad.tz, err, bad.want)
		}
	}
	if _, err := Parse("@daily", ""); err != nil {
		t.Errorf("@daily: %v", err)
	}
}
