package controllers

// The Decided condition of a run whose index step added rounds until decided, as the index
// step's runner hands its rounds over (the harness plays the runner; internal/runner stops
// the rounds on real CouchDB). The tests talk to envtest's API server only.

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// roundsDocument is okDocument, the index step's with rounds builds per arm, py's at
// pySpeed of js's (each round's pair moved alike by a drift, a 1% wobble on top), and the
// step's record saying it stopped so after them. spec is the run's, which the runner writes.
func roundsDocument(spec *benchv1.CouchBenchmarkSpec, rounds int, pySpeed float64, stopped string) func(string, benchv1.Step) *results.Document {
	return func(arm string, step benchv1.Step) *results.Document {
		d := okDocument(arm, step)
		d.Spec = *spec
		if step != benchv1.StepIndex {
			return d
		}
		speed := 1.0
		if arm == "py" {
			speed = pySpeed
		}
		var runs []measured.IndexBuild
		var order [][]string
		for i := range rounds {
			machine := 1 + 0.2*math.Sin(float64(i))
			wobble := 1 + 0.01*math.Cos(float64(3*i+len(arm)))
			runs = append(runs, measured.IndexBuild{Documents: 1000, DocsPerSecond: 10000 * speed * machine * wobble})
			order = append(order, []string{"js", "py"})
		}
		d.Arms[0].Profiles[0].Indexing[0].Runs = runs
		d.Steps[0].Rounds = order
		d.Steps[0].Sequential = &results.SequentialStop{Rounds: rounds, Stopped: stopped}
		return d
	}
}

// driveUntilDecided runs a benchmark of js and py on an existing CouchDB whose index step adds
// rounds until decided, the harness handing over rounds as roundsDocument makes them, and
// returns it once it succeeded.
func driveUntilDecided(t *testing.T, rounds int, pySpeed float64, stopped string) (*harness, *benchv1.CouchBenchmark) {
	t.Helper()
	h := newHarness(t)
	bench := onExistingCouchDB(t, func(b *benchv1.CouchBenchmark) {
		b.Spec.Workloads = benchv1.Workloads{Indexing: &benchv1.IndexingWorkload{Repetitions: 2}}
		b.Spec.Sequential = &benchv1.SequentialRounds{TargetPercent: 5, TolerancePercent: 2, TimeLimit: "15m", MaxRounds: 100, TunedForRounds: 20}
	})
	h.document = roundsDocument(&bench.Spec, rounds, pySpeed, stopped)
	got := h.drive(bench, 40)
	if got.Status.Phase != benchv1.PhaseSucceeded {
		t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	}
	return h, got
}

// A step that decided every ratio: Decided is True, and the arms' summary says how the step
// ended; py, 10% slower in every round, is Regressed by its sequence.
func TestDecidedWhenTheStepDecidedEveryRatio(t *testing.T) {
	_, got := driveUntilDecided(t, 30, 0.9, results.StoppedDecided)
	decided := meta.FindStatusCondition(got.Status.Conditions, conditionDecided)
	if decided == nil || decided.Status != metav1.ConditionTrue || !strings.Contains(decided.Message, "index: 30 rounds") {
		t.Errorf("Decided %+v; want True, naming the index step's 30 rounds", decided)
	}
	arms := got.Status.Arms
	if arms == nil || arms.Regressed != 1 || !strings.Contains(arms.Summary, "rounds until decided: index: 30 rounds") {
		t.Errorf("arms %+v; want py regressed and the step's end in the summary", arms)
	}
}

// A step that reached its time limit with a ratio undecided: Decided is False, naming the
// row and its interval, with a Warning event; the run still succeeds with its results.
func TestUndecidedAtTheTimeLimit(t *testing.T) {
	h, got := driveUntilDecided(t, 4, 0.97, results.StoppedTimeLimit)
	decided := meta.FindStatusCondition(got.Status.Conditions, conditionDecided)
	if decided == nil || decided.Status != metav1.ConditionFalse || decided.Reason != reasonUndecided ||
		!strings.Contains(decided.Message, "py/small/indexing/builtin/changes_per_second") || !strings.Contains(decided.Message, "time limit reached") {
		t.Fatalf("Decided %+v; want False, naming py's undecided rate and the time limit", decided)
	}
	if !strings.Contains(drainEvents(h), "Warning Undecided") {
		t.Error("no Warning event says a ratio was left undecided")
	}
}
