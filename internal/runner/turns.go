package runner

import (
	"errors"
	"fmt"
	"sync"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/cpuuse"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// turn accounts for one arm's share of a step: when it ran and what it cost the runner.
type turn struct {
	arm         *armRun
	first, last cpuuse.Reading
	// others are the other arms' turns while this one's step was under way, left out of its
	// CPU share like waits at barriers.
	others []cpuuse.Pause
	err    error
}

func (t *turn) started() bool { return !t.first.At.IsZero() }

// failed is the turn's error, naming its arm; nil when it succeeded.
func (t *turn) failed() error {
	if t.err == nil {
		return nil
	}
	return fmt.Errorf("query server %s: %w", t.arm.qs.Name, t.err)
}

// takers give a step's arms their turns, one after the other in a round's order or, in
// duet, all at once, and keep each arm's turn.
type takers struct {
	taken  []*turn
	byName map[string]int
	duet   bool
}

func newTakers(arms []*armRun, duet bool) *takers {
	k := &takers{byName: map[string]int{}, duet: duet}
	for i, a := range arms {
		k.taken = append(k.taken, &turn{arm: a})
		k.byName[a.qs.Name] = i
	}
	return k
}

// each gives every arm its turn, in order, or all at once in duet.
func (k *takers) each(order []string, do func(a *armRun) error) error {
	if k.duet {
		return k.together(do)
	}
	for _, name := range order {
		if err := k.take(k.byName[name], do); err != nil {
			return err
		}
	}
	return nil
}

// take gives arm i its turn; the others' shares leave it out.
func (k *takers) take(i int, do func(a *armRun) error) error {
	t := k.taken[i]
	from := cpuuse.Read()
	if !t.started() {
		t.first = from
	}
	t.err = do(t.arm)
	t.last = cpuuse.Read()
	for j, other := range k.taken {
		if j != i && other.started() {
			other.others = append(other.others, cpuuse.Pause{From: from, To: t.last})
		}
	}
	return t.failed()
}

// together gives every arm its turn at once (duet), released by one signal so that their
// units start at the same moment, and held again where a unit's measured part begins
// (armRun.ready) until every arm's unit is there or has ended without it: a build's setup
// takes longer on a cluster than on one node. It returns when the last has ended.
func (k *takers) together(do func(a *armRun) error) error {
	start, allThere := make(chan struct{}), make(chan struct{})
	var wg, arrivals sync.WaitGroup
	arrivals.Add(len(k.taken))
	go func() { arrivals.Wait(); close(allThere) }()
	for _, t := range k.taken {
		arrive := sync.OnceFunc(arrivals.Done)
		t.arm.ready = func() { arrive(); <-allThere }
		wg.Go(func() {
			<-start
			from := cpuuse.Read()
			if !t.started() {
				t.first = from
			}
			t.err = do(t.arm)
			arrive()
			t.last = cpuuse.Read()
		})
	}
	close(start)
	wg.Wait()
	errs := make([]error, 0, len(k.taken))
	for _, t := range k.taken {
		t.arm.ready = nil
		errs = append(errs, t.failed())
	}
	return errors.Join(errs...)
}

// record is the arm's step: from its first turn to the end of its last, its CPU share over its
// own turns only.
func (t *turn) record(step benchv1.Step, load []measured.NodeLoad) results.StepRecord {
	var pauses []cpuuse.Pause
	for _, p := range append(t.others, t.arm.pauses...) {
		if !p.From.At.Before(t.first.At) && !p.To.At.After(t.last.At) {
			pauses = append(pauses, p)
		}
	}
	use := cpuuse.Between(t.first, t.last, pauses...)
	rec := results.StepRecord{
		QueryServer: t.arm.qs.Name, Step: step, StartedAt: t.first.At.UTC(), FinishedAt: t.last.At.UTC(),
		LoadGenerator: &use, CouchDBLoad: load,
	}
	if t.err != nil {
		rec.Error = t.err.Error()
	}
	return rec
}
