package controllers

// The immediate run against a real kube-apiserver (envtest), with a fake clock; the
// CouchBenchmark controller is not running here.

import (
	"context"
	"testing"
	"time"
)

// A schedule makes its immediate run once: after that run is gone (pruned by the history
// limits, or deleted by hand) the schedule does not make it again. Seen on the local cluster:
// a schedule every minute with successfulRunsHistoryLimit 3 ran its creation's minute again
// each time that run was pruned, and the rerun took the first run's place in the history.
func TestImmediateRunIsNotMadeAgainOnceGone(t *testing.T) {
	spec := everyMinute()
	spec.Schedule = "0 2 * * *"
	spec.Immediate = true
	h := newSchedule(t, spec)
	h.at(time.Second)
	runs := h.runs()
	if len(runs) != 1 {
		t.Fatalf("runs %v; want the immediate run", keys(runs))
	}
	for _, run := range runs {
		if err := env.Client.Delete(context.Background(), run); err != nil {
			t.Fatal(err)
		}
	}
	_, got := h.at(2 * time.Second)
	if runs := h.runs(); len(runs) != 0 {
		t.Errorf("runs %v after the immediate run was deleted; want none until 02:00", keys(runs))
	}
	if got.Status.LastScheduleTime == nil {
		t.Errorf("status.lastScheduleTime is unset: the schedule forgot its immediate run")
	}
}
