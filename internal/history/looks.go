package history

import (
	"slices"
	"strings"
	"time"

	"github.com/couchbench/couchbench/internal/changepoint"
)

// Judge takes the schedule's look at the runs its earlier looks did not see, each in turn,
// going on from what those found (Looks), records what is then known, and returns the shifts
// found now, and the dips whose end was: the events to announce. accepted are the runs where a change the team accepted
// began (e.g. the first run of a template generation whose level is the new normal): the level
// of every series starts anew at each, and a change point found across one, or within
// changepoint.RefineReach runs after it, is that change and no shift. A history without Looks
// is replayed from its first run; the shifts a schedule announced before histories kept Looks
// (Announced) are not returned again.
func (h *History) Judge(accepted []string) []Shift {
	if len(h.Runs) == 0 {
		return nil
	}
	told := map[string]bool{}
	if h.Looks == nil {
		h.Looks = &Looks{}
	}
	for _, f := range h.Looks.Found {
		told[f.ID()] = true
	}
	h.Looks.Accepted = slices.Clone(accepted)
	next := &Looks{Through: h.Runs[len(h.Runs)-1].ScheduledAt, Accepted: h.Looks.Accepted}
	for _, key := range h.Keys() {
		runs, _, known := h.look(key)
		if known.Start > 0 {
			if next.WarmUps == nil {
				next.WarmUps = map[string]string{}
			}
			next.WarmUps[key] = runs[known.Start]
		}
		for _, cp := range known.Found {
			next.Found = append(next.Found, Found{Metric: key, Run: runs[cp.Index], Told: runs[cp.Found], At: runs[cp.FoundAt-1],
				NominalP: cp.PValue, Level: cp.Level, DipEnd: cp.DipEnd})
		}
	}
	h.Looks = next
	var fresh []Shift
	for _, s := range h.Shifts() {
		if (!told[s.ID()] || s.ended != "" && !told[s.ended]) && !h.announcedBefore(s) {
			fresh = append(fresh, s)
		}
	}
	h.Announced = nil
	return fresh
}

// look is a metric's series, its runs and values, and what is known of it: what the looks
// found, resumed to its newest run.
func (h History) look(key string) (runs []string, values []float64, known changepoint.Known) {
	runs, values = h.Series(key)
	return runs, values, changepoint.Resume(values, h.known(runs, key), h.options())
}

// known is what the history's looks knew of a metric's series, whose runs are runs, by index
// in it: the runs scheduled up to Looks.Through, the change points found among the runs kept,
// and each accepted change at the series' first run scheduled at or after it.
func (h History) known(runs []string, key string) changepoint.Known {
	var k changepoint.Known
	if h.Looks == nil {
		return k
	}
	scheduled := make(map[string]time.Time, len(h.Runs))
	for _, r := range h.Runs {
		scheduled[r.Name] = r.ScheduledAt
	}
	index := make(map[string]int, len(runs))
	for i, r := range runs {
		index[r] = i
		if !scheduled[r].After(h.Looks.Through) {
			k.Looked = i + 1
		}
	}
	if run, ok := h.Looks.WarmUps[key]; ok {
		if start, kept := index[run]; kept {
			k.Start = start
		}
	}
	for _, f := range h.Looks.Found {
		first, kept := index[f.Run]
		look, seen := index[f.At]
		if f.Metric != key || !kept || !seen {
			continue
		}
		told, ok := index[f.Told]
		if !ok {
			told = first
		}
		k.Found = append(k.Found, changepoint.ChangePoint{Index: first, Found: told, FoundAt: look + 1, PValue: f.NominalP, Level: f.Level,
			DipEnd: f.DipEnd})
	}
	for _, name := range h.Looks.Accepted {
		t, ok := scheduled[name]
		if !ok {
			continue
		}
		if i := slices.IndexFunc(runs, func(r string) bool { return !scheduled[r].Before(t) }); i >= 0 {
			k.Accepted = append(k.Accepted, i)
		}
	}
	return k
}

// asOf is the history as its looks knew it before t: the runs scheduled before t and what
// the looks at them found.
func (h History) asOf(t time.Time) History {
	past := History{Runs: slices.DeleteFunc(slices.Clone(h.Runs), func(r Run) bool { return !r.ScheduledAt.Before(t) }),
		Better: h.Better}
	if h.Looks == nil || len(past.Runs) == 0 {
		return past
	}
	kept := map[string]bool{}
	for _, r := range past.Runs {
		kept[r.Name] = true
	}
	through := h.Looks.Through
	if newest := past.Runs[len(past.Runs)-1].ScheduledAt; newest.Before(through) {
		through = newest
	}
	past.Looks = &Looks{Through: through, Accepted: h.Looks.Accepted, WarmUps: h.Looks.WarmUps,
		Found: slices.DeleteFunc(slices.Clone(h.Looks.Found), func(f Found) bool { return !kept[f.At] })}
	return past
}

// announcedBefore says whether a schedule that kept no Looks told the shift: Announced names
// the same metric from a run at most changepoint.RefineReach runs of its series away (the
// detector then moved a young shift's first run as runs came).
func (h History) announcedBefore(s Shift) bool {
	runs, _ := h.Series(s.Metric)
	at := slices.Index(runs, s.Run)
	return slices.ContainsFunc(h.Announced, func(id string) bool {
		cut := strings.LastIndex(id, "@")
		if cut < 0 || id[:cut] != s.Metric || at < 0 {
			return false
		}
		other := slices.Index(runs, id[cut+1:])
		return other >= 0 && max(other-at, at-other) <= changepoint.RefineReach
	})
}
