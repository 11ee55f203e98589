package runner

import (
	"errors"
	"fmt"

	"github.com/couchbench/couchbench/internal/cpucost"
)

// unitCPU is what an arm's server spends on one unit's measured part: from its start (after
// the unit's untimed setup and the duet's hold) to its end (before its untimed checks).
type unitCPU struct {
	meter    cpucost.Meter
	ready    func()
	from, to cpucost.Usage
	err      error
}

// cpuFrom readies a unit's CPU reading: none without a meter, and none when runners share the
// step, since the server's CPU time is then every part's and no one part's measured part
// spans them all.
func (a *armRun) cpuFrom() *unitCPU {
	if a.cfg.shared() {
		return &unitCPU{ready: a.ready}
	}
	return &unitCPU{meter: a.meter, ready: a.ready}
}

// start is the unit's measured part beginning: the duet's hold first, so that the reading
// leaves out the wait for the other arms.
func (u *unitCPU) start() {
	if u.ready != nil {
		u.ready()
	}
	u.from = u.read()
}

// end is the measured part's end.
func (u *unitCPU) end() { u.to = u.read() }

func (u *unitCPU) read() cpucost.Usage {
	if u.meter == nil || u.err != nil {
		return cpucost.Usage{}
	}
	r, err := u.meter.Read()
	u.err = err
	return r
}

// spent is the CPU-seconds from start to end; 0 without a meter.
func (u *unitCPU) spent() (float64, error) {
	switch {
	case u.meter == nil:
		return 0, nil
	case u.err != nil:
		return 0, fmt.Errorf("reading the server's CPU time: %w", u.err)
	case u.from.At.IsZero() || u.to.At.IsZero():
		return 0, errors.New("the unit's measured part did not both begin and end: no CPU reading to take")
	}
	return cpucost.Between(u.from, u.to).CPU.Seconds(), nil
}

// describe is the progress line's CPU part.
func (u *unitCPU) describe(seconds float64, docs int64) string {
	if u.meter == nil || docs <= 0 {
		return ""
	}
	return fmt.Sprintf(", server CPU %.2f s (%.3f s per 1,000 docs)", seconds, 1000*seconds/float64(docs))
}
