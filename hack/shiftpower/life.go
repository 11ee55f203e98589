package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/couchbench/couchbench/internal/history"
)

// lifeStage is a stretch of a schedule's life, by look (the look after run n is look n).
type lifeStage struct {
	name     string
	from, to int
}

// lifeStages are the stretches life reports: a new schedule's first looks, the rest of the
// time its history fills, and after the history is full, when each run drops its oldest.
var lifeStages = []lifeStage{
	{"first 50 looks", 1, 50},
	{"looks 51 to 1,000", 51, history.MaxRuns},
	{"after the history is full: looks 1,001 to 2,000", history.MaxRuns + 1, 2 * history.MaxRuns},
}

// schedule is one metric's history as a schedule keeps it: each run is added (history.History
// keeps the newest history.MaxRuns), and the history is judged once after it (History.Judge),
// going on from what the looks before found.
type schedule struct{ h history.History }

// shifts adds the n-th run, of value v, judges, and says how many shifts the look found: new
// shifts, not the ends of dips told before.
func (s *schedule) shifts(n int, v float64) int {
	name := fmt.Sprintf("r%07d", n)
	s.h.Add(history.Run{Name: name, ScheduledAt: time.Unix(int64(n)*3600, 0).UTC(), Values: map[string]float64{"m": v}}, nil)
	found := 0
	for _, shift := range s.h.Judge(nil) {
		if shift.FoundAt == name {
			found++
		}
	}
	return found
}

// life is the false shifts per 1,000 runs a schedule announces in each of lifeStages that
// its first runs cover, on histories of that many unchanged runs looked at after every run:
// the shifts its history's looks tell (dips once, their ends not again). A stage past runs is
// NaN. Histories of the first stage's runs only measure that stage on many more histories in
// the same time: its looks are few.
func life(m noiseModel, seed uint64, histories, runs int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 4))
	counts := make([]int, len(lifeStages))
	for range histories {
		x := m.draw(rng, runs)
		var s schedule
		for n := 1; n <= runs; n++ {
			fresh := s.shifts(n-1, x[n-1])
			for i, s := range lifeStages {
				if n >= s.from && n <= s.to {
					counts[i] += fresh
				}
			}
		}
	}
	out := make([]float64, len(lifeStages))
	for i, s := range lifeStages {
		out[i] = math.NaN()
		if s.to <= runs {
			out[i] = 1000 * float64(counts[i]) / float64(histories*(s.to-s.from+1))
		}
	}
	return out
}

// stepHistories draws histories of before unchanged runs and then runs more, changed by the
// factor change(i) at the i-th run from the step (i from 0).
func stepHistories(m noiseModel, seed uint64, histories, before, runs int, change func(i int) float64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	out := make([][]float64, histories)
	for h := range out {
		x := m.draw(rng, before+runs)
		for i := range x {
			x[i] *= 1000
			if i >= before {
				x[i] *= change(i - before)
			}
		}
		out[h] = x
	}
	return out
}

// near says whether a change point lies within 3 runs of at.
func near(cps []int, at int) bool {
	return slices.ContainsFunc(cps, func(cp int) bool { return cp >= at-3 && cp <= at+3 })
}

// late is how often a step that is not found in its first few runs is found later: the share of
// histories whose look after each of the given runs since the step shows a change point within
// 3 runs of it.
func late(d detector, m noiseModel, seed uint64, histories, before int, step float64, after []int) []float64 {
	xs := stepHistories(m, seed, histories, before, slices.Max(after), func(int) float64 { return 1 - step })
	out := make([]float64, len(after))
	for _, x := range xs {
		for i, a := range after {
			if near(d.changes(x[:before+a]), before) {
				out[i]++
			}
		}
	}
	for i := range out {
		out[i] /= float64(histories)
	}
	return out
}

// dipShown is what a detector showed of a dip: at some look (shown), and at the look runs after
// it ended, as a shift that lasts (a change point at the dip, none at its end) or with its end.
type dipShown struct{ shown, lasting, withEnd float64 }

// dip is what is shown of a dip of length runs, lower by depth, after before unchanged runs,
// looked at run by run until runs after its end.
func dip(d detector, m noiseModel, seed uint64, histories, before, length int, depth float64, runs int) dipShown {
	xs := stepHistories(m, seed, histories, before, length+runs, func(i int) float64 {
		if i < length {
			return 1 - depth
		}
		return 1
	})
	var out dipShown
	for _, x := range xs {
		for n := before + 1; n <= len(x); n++ {
			if near(d.changes(x[:n]), before) {
				out.shown++
				break
			}
		}
		// The dip and its end: change points from 3 runs before it to 3 after its end.
		cps := d.changes(x)
		if d.ends != nil {
			cps = append(cps, d.ends(x)...)
		}
		around := 0
		for _, cp := range cps {
			if cp >= before-3 && cp <= before+length+3 {
				around++
			}
		}
		switch {
		case around >= 2:
			out.withEnd++
		case around == 1:
			out.lasting++
		}
	}
	h := float64(histories)
	return dipShown{out.shown / h, out.lasting / h, out.withEnd / h}
}
