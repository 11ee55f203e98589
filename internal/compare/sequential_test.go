package compare

import (
	"math/rand/v2"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// sequentialDocs is a run whose index step added rounds until decided: arm b builds as fast
// as a and costs cost times a's CPU, each round's pair moved alike by the machine (drift) and
// each build by noise; stopped is how the step said it ended.
func sequentialDocs(r *rand.Rand, rounds int, cost, noise float64, seq benchv1.SequentialRounds, stopped string) []*results.Document {
	series := make([]results.IndexingSeries, 2)
	for range rounds {
		machine := samples(r, 1, 1, 0.2)[0]
		for i, c := range []float64{1, cost} {
			series[i].Runs = append(series[i].Runs, measured.IndexBuild{Documents: 10000,
				DocsPerSecond: 5000 / machine * samples(r, 1, 1, noise)[0],
				CPUSeconds:    3 * c * samples(r, 1, 1, noise/4)[0]})
		}
	}
	docs := twoArms(series, [][]string{{"a", "b"}})
	docs[0].Spec = benchv1.CouchBenchmarkSpec{Sequential: &seq,
		QueryServers: []benchv1.QueryServer{{Name: "a"}, {Name: "b"}}}
	for i := range docs[0].Steps {
		docs[0].Steps[i].Sequential = &results.SequentialStop{Rounds: rounds, Stopped: stopped}
	}
	return docs
}

var fivePercent = benchv1.SequentialRounds{TargetPercent: 5, TolerancePercent: 2, TunedForRounds: 20, MaxRounds: 100}

// The rows of a step that stopped when decided are its sequences' answers, not the t test's:
// synthetic rounds, b as fast as a but spending 10% more CPU per build, its builds' rates
// strewn by 15%, their CPU by 4%. The CPU cost is found higher (Regressed: lower is better),
// the rate stays undecided, and the step says both.
func TestSequentialRowsAreTheSequencesAnswers(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	docs := sequentialDocs(r, 40, 1.10, 0.15, fivePercent, results.StoppedTimeLimit)
	c, err := Arms(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]Row{}
	for _, row := range c.Rows {
		verdicts[row.Metric] = row
	}
	cpu, rate := verdicts["cpu_seconds_per_1000_docs"], verdicts["changes_per_second"]
	if cpu.Verdict != Regressed || cpu.Interval == nil || cpu.Interval.LowPercent <= 2 {
		t.Errorf("CPU cost 10%% higher: %s %+v; want Regressed, its interval clear of +2%%", cpu.Verdict, cpu.Interval)
	}
	if rate.Verdict != Inconclusive || !strings.Contains(rate.Reason, "undecided after 40 rounds (the step stopped: time limit reached)") {
		t.Errorf("rate strewn by 15%%: %s (%s); want Inconclusive, undecided", rate.Verdict, rate.Reason)
	}
	if c.Judged != 0 || len(c.Sequential) != 1 || c.Sequential[0].Undecided != 1 || len(c.Undecided()) != 1 {
		t.Errorf("judged %d, sequential %+v, undecided %d; want no t-judged row and one undecided of the index step",
			c.Judged, c.Sequential, len(c.Undecided()))
	}
	if s := c.Summary(); !strings.Contains(s, "index: 40 rounds, time limit reached, 1 undecided") {
		t.Errorf("summary %q does not say how the step ended", s)
	}
	if note := c.Tables()[0].Note; !strings.Contains(note, "confidence sequence") {
		t.Errorf("the table's note does not say how its sequential rows were judged: %s", note)
	}
}

// The step can stop once the ratios it stops on are decided, the others still open: with
// stopOn the CPU cost alone, the rounds above are enough; with every metric, they are not.
func TestStepDecidedOnTheMetricsItStopsOn(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	cpuOnly := fivePercent
	cpuOnly.StopOn = []benchv1.SequentialMetric{"cpu_seconds_per_1000_docs"}
	docs := sequentialDocs(r, 40, 1.10, 0.15, cpuOnly, results.StoppedDecided)
	if !StepDecided(docs, benchv1.StepIndex) {
		t.Error("stopOn CPU cost, found 10% higher: want the step decided")
	}
	docs[0].Spec.Sequential = &fivePercent
	if StepDecided(docs, benchv1.StepIndex) {
		t.Error("every metric, the rate undecided: want the step to go on")
	}
	if StepDecided(docs, benchv1.StepViews) {
		t.Error("a step with no rows is never decided")
	}
	// stopOn naming none of the step's metrics (a views step's, say) leaves the step to
	// decide all of its own: it does not stop having decided nothing.
	other := fivePercent
	other.StopOn = []benchv1.SequentialMetric{"seconds_per_read"}
	docs[0].Spec.Sequential = &other
	if StepDecided(docs, benchv1.StepIndex) {
		t.Error("stopOn naming none of the index step's metrics, its rate undecided: want the step to go on")
	}
}

// A step that an error or an interrupt ended after it had looked at its rounds is still
// judged by its sequences (a t interval is not valid once rounds were added by looking), and
// says how it ended; each row's level is its share of the step's.
func TestAStepEndedEarlyIsJudgedByItsSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	docs := sequentialDocs(r, 40, 1.10, 0.15, fivePercent, results.StoppedEarly)
	c, err := Arms(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Judged != 0 || len(c.Sequential) != 1 || !strings.Contains(c.Summary(), "index: 40 rounds, ended early") {
		t.Fatalf("judged %d, summary %q; want the rows judged by their sequences and the early end said", c.Judged, c.Summary())
	}
	for _, row := range c.Rows {
		if row.ConfidencePercent != 99.5 {
			t.Errorf("%s: level %v%%; want 99.5%%, its share of the step's 99%% over 2 rows", row.Metric, row.ConfidencePercent)
		}
	}
}

// An A/A run with quiet CPU is found within the target, and the sequence's decision stands:
// adding rounds after it does not undo it.
func TestSequentialAAIsWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	cpuOnly := fivePercent
	cpuOnly.StopOn = []benchv1.SequentialMetric{"cpu_seconds_per_1000_docs"}
	docs := sequentialDocs(r, 60, 1, 0.1, cpuOnly, results.StoppedDecided)
	family := Decisions(docs, benchv1.StepIndex)
	d := family.Decision("b/small/indexing/builtin/cpu_seconds_per_1000_docs")
	if d.Outcome.String() != "within" || d.Interval.Rounds >= 60 {
		t.Errorf("A/A CPU cost: %s after %d rounds; want within, decided before the last round", d.Outcome, d.Interval.Rounds)
	}
}

// A step that stops on the CPU cost alone has decided what it had to once the CPU cost is
// decided: the rate's open interval is shown, but the step has nothing undecided.
func TestUndecidedCountsOnlyWhatTheStepStopsOn(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	cpuOnly := fivePercent
	cpuOnly.StopOn = []benchv1.SequentialMetric{benchv1.SequentialCPUCost}
	c, err := Arms(sequentialDocs(r, 40, 1.10, 0.15, cpuOnly, results.StoppedDecided), Options{})
	if err != nil {
		t.Fatal(err)
	}
	inconclusive := 0
	for _, row := range c.Rows {
		if row.Verdict == Inconclusive {
			inconclusive++
		}
	}
	if inconclusive != 1 || len(c.Undecided()) != 0 || c.Sequential[0].Undecided != 0 {
		t.Errorf("%d inconclusive rows, %d undecided, step %+v; want the rate's row open and nothing undecided",
			inconclusive, len(c.Undecided()), c.Sequential[0])
	}
}
