//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
)

// Two arms of the same CouchDB 3.4.3 and the same SpiderMonkey views (an A/A run), each on a
// real CouchDB pod of its own (couchdb:3.4.3, Apache chart 4.6.2) on the multi-node kind
// cluster, in duet (spec.armOrder Duet) with rounds added until the arms' ratio of CPU cost
// is decided (spec.sequential, stopOn cpu_seconds_per_1000_docs), the CPU time read through
// pods/exec as the namespace's CPU reader (the suite's operator sets cpuCost.kubernetes).
//
// Checked: each round's two builds ran at the same moment (each began before the other
// ended); every build carries its server's CPU cost; the index step says how many rounds it
// took and why it stopped, and Decided agrees with it; and no ratio is called changed, since
// the arms are the same and a change must clear the tolerance at the arms' table's 99%
// family-wise level. How many rounds it takes depends on the machine's load, so the test
// accepts any of the sequence's ways to stop, and says which it saw.
func TestDuetAARunStopsOnCPUCost(t *testing.T) {
	t.Parallel()
	b := provisioned("duet-aa", nil, 1,
		benchv1.QueryServer{Name: "a", Preset: benchv1.PresetSpiderMonkey},
		benchv1.QueryServer{Name: "b", Preset: benchv1.PresetSpiderMonkey})
	b.Spec.ArmOrder = benchv1.ArmsDuet
	b.Spec.Dataset = benchv1.Dataset{Documents: 3000, Seed: 1, Profiles: []benchv1.DocumentProfile{{Type: benchv1.DocumentSmall}}}
	b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Repetitions: 2}}
	// A wide target keeps the run short on a loaded CI machine; the tolerance below it is what
	// an A/A run must never clear.
	b.Spec.Sequential = &benchv1.SequentialRounds{TargetPercent: 30, TolerancePercent: 15, TimeLimit: "3m", MaxRounds: 12,
		StopOn: []benchv1.SequentialMetric{benchv1.SequentialCPUCost}}
	start(t, b)
	got := mustSucceed(t, b, 30*time.Minute)

	md, docs := report(t, b, "markdown")
	t.Logf("A/A in duet, stopping on CPU cost, real Apache CouchDB 3.4.3:\n%s", md)
	doc, a := docArm(t, docs, "a")
	_, other := docArm(t, docs, "b")
	var index *results.StepRecord
	for i, s := range doc.Steps {
		if s.Step == benchv1.StepIndex {
			index = &doc.Steps[i]
		}
	}
	if index == nil || !index.Duet || index.Sequential == nil {
		t.Fatalf("index step record %+v: want one in duet that added rounds", index)
	}
	stop := index.Sequential
	t.Logf("the index step took %d rounds and stopped: %s", stop.Rounds, stop.Stopped)
	if stop.Rounds < 2 || stop.Rounds > 12 ||
		!slices.Contains([]string{results.StoppedDecided, results.StoppedTimeLimit, results.StoppedMaxRounds}, stop.Stopped) {
		t.Errorf("index step: %d rounds, stopped %q; want 2 to maxRounds 12, decided or at a limit", stop.Rounds, stop.Stopped)
	}

	builds := a.Profiles[0].Indexing[0].Runs
	paired := other.Profiles[0].Indexing[0].Runs
	if len(builds) != stop.Rounds || len(paired) != stop.Rounds {
		t.Fatalf("%d and %d builds of the arms, want one per round each (%d)", len(builds), len(paired), stop.Rounds)
	}
	for i := range builds {
		x, y := builds[i], paired[i]
		if !(x.CPUSeconds > 0) || !(y.CPUSeconds > 0) {
			t.Errorf("round %d: server CPU %v s and %v s, want each arm's pod read through pods/exec", i+1, x.CPUSeconds, y.CPUSeconds)
		}
		if !x.StartedAt.Before(y.StartedAt.Add(y.Built)) || !y.StartedAt.Before(x.StartedAt.Add(x.Built)) {
			t.Errorf("round %d: builds at %s for %v and %s for %v did not overlap: not a duet", i+1,
				x.StartedAt.Format(time.StampMilli), x.Built, y.StartedAt.Format(time.StampMilli), y.Built)
		}
	}

	decided := condition(got, "Decided")
	if decided == nil {
		t.Fatal("no Decided condition")
	}
	if want := stop.Stopped == results.StoppedDecided; (decided.Status == "True") != want {
		t.Errorf("Decided %s (%s), but the index step stopped %q", decided.Status, decided.Message, stop.Stopped)
	}
	if arms := got.Status.Arms; arms == nil || arms.Regressed+arms.Improved != 0 {
		t.Errorf("status.arms %+v: an A/A run called a change", arms)
	}
}
