package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/sequential"
)

// sequentialWorkloads are the steps that add rounds until decided under spec.sequential, and
// the workload their metrics carry: the steps one runner pod runs alone, so that one place
// sees every arm's rounds.
var sequentialWorkloads = map[benchv1.Step]string{benchv1.StepIndex: "indexing", benchv1.StepViews: "viewReads"}

// RunsSequentially says whether a step of spec, run by that many arms together, adds rounds
// until its ratios are decided: one arm has no ratio to decide.
func RunsSequentially(spec *benchv1.CouchBenchmarkSpec, step benchv1.Step, arms int) bool {
	_, ok := sequentialWorkloads[step]
	return ok && spec.Sequential != nil && arms > 1 && spec.ArmOrder != benchv1.ArmsSequential
}

// required says which of a step's metrics (by name) it must decide: those stopOn names, or
// every one when stopOn names none of them (a views step of a run that stops its builds on
// their CPU cost), so that no step stops having decided nothing.
func required(stopOn []benchv1.SequentialMetric, names []string) func(name string) bool {
	named := slices.ContainsFunc(names, func(n string) bool { return slices.Contains(stopOn, benchv1.SequentialMetric(n)) })
	return func(name string) bool { return !named || slices.Contains(stopOn, benchv1.SequentialMetric(name)) }
}

// metricName is a metric key's name (results.Metric.Key ends with it).
func metricName(key string) string { return key[strings.LastIndex(key, "/")+1:] }

// Decisions replays a sequential step's rounds through its confidence sequences: every
// other arm's metric of the step over the reference's, round by round, one family at the
// arms' table's level. The runner asks it after every round whether to stop, and the arms'
// table asks it afterwards, so both read the same answer from the same rounds. Nil when the
// documents hold no pair of the step's metrics yet.
func Decisions(docs []*results.Document, step benchv1.Step) *sequential.Family {
	set := armsOf(docs)
	if set == nil || docs[0].Spec.Sequential == nil {
		return nil
	}
	s := docs[0].Spec.Sequential
	var pairs []armPair
	var keys []string
	for _, p := range set.pairs {
		if p.arm.Workload == sequentialWorkloads[step] {
			pairs, keys = append(pairs, p), append(keys, p.arm.Key())
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	rule := sequential.Rule{Target: float64(s.TargetPercent) / 100, Tolerance: float64(s.TolerancePercent) / 100}
	family := sequential.NewFamily(1-ConfidencePercent/100.0, int(max(s.TunedForRounds, 1)), rule, keys...)
	for round := 0; ; round++ {
		fed := false
		for i, p := range pairs {
			if round >= len(p.ref.Samples) || round >= len(p.arm.Samples) {
				continue
			}
			fed = true
			// A round with no ratio (a read timed at zero) says nothing about the change.
			if r := p.arm.Samples[round] / p.ref.Samples[round]; r > 0 && !math.IsInf(r, 0) {
				family.Add(keys[i], r)
			}
		}
		if !fed {
			return family
		}
	}
}

// StepDecided says whether a sequential step can stop: every ratio it must decide
// (required) is decided.
func StepDecided(docs []*results.Document, step benchv1.Step) bool {
	family := Decisions(docs, step)
	if family == nil {
		return false
	}
	keys := family.Metrics()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = metricName(k)
	}
	must := required(docs[0].Spec.Sequential.StopOn, names)
	for _, key := range keys {
		if must(metricName(key)) && family.Decision(key).Outcome == sequential.Undecided {
			return false
		}
	}
	return true
}

// SequentialStep is how a sequential step ended: the rounds it took and why it stopped.
type SequentialStep struct {
	Step             benchv1.Step `json:"step"`
	Rounds           int          `json:"rounds"`
	Stopped          string       `json:"stopped"`
	TargetPercent    int32        `json:"targetPercent"`
	TolerancePercent int32        `json:"tolerancePercent"`
	// StopOn are the metrics the step had to decide (spec.sequential.stopOn; every metric
	// of the step when it names none of them).
	StopOn []benchv1.SequentialMetric `json:"stopOn,omitempty"`
	// Undecided are the rows of those metrics whose ratio was neither found changed nor
	// within the target.
	Undecided int `json:"undecided"`
	// must is required over the step's metrics.
	must func(name string) bool
}

// mustDecide says whether the step had to decide a row's metric.
func (s SequentialStep) mustDecide(r Row) bool {
	return r.Workload == sequentialWorkloads[s.Step] && s.must(r.Metric)
}

// sequentialSteps are the run's steps that added rounds until decided, by their metrics'
// workload, from the first arm's step records, with the names of the step's metrics.
func sequentialSteps(docs []*results.Document, pairs []armPair) map[string]*SequentialStep {
	steps := map[string]*SequentialStep{}
	for _, d := range docs {
		for _, rec := range d.Steps {
			workload, ok := sequentialWorkloads[rec.Step]
			s := d.Spec.Sequential
			if rec.Sequential == nil || s == nil || !ok || steps[workload] != nil {
				continue
			}
			var names []string
			for _, p := range pairs {
				if p.arm.Workload == workload {
					names = append(names, p.arm.Name)
				}
			}
			steps[workload] = &SequentialStep{Step: rec.Step, Rounds: rec.Sequential.Rounds, Stopped: rec.Sequential.Stopped,
				TargetPercent: s.TargetPercent, TolerancePercent: s.TolerancePercent, StopOn: s.StopOn, must: required(s.StopOn, names)}
		}
	}
	return steps
}

// sequentialRow is an arm's metric of a sequential step, judged by its sequence's decision:
// a change when the interval cleared the tolerance, Unchanged when it lay within the target;
// its interval is the one that decided it (or the last, undecided), at the level of its
// sequence in a family of that many.
func sequentialRow(p armPair, d sequential.Decision, st *SequentialStep, family int) Row {
	ref, arm := roundsBoth(p.ref, p.arm)
	r := newRow(ref, arm, float64(st.TolerancePercent))
	r.NBaseline, r.NCurrent = len(ref.Samples), len(arm.Samples)
	r.ConfidencePercent = 100 - (100-ConfidencePercent)/float64(max(family, 1))
	iv := d.Interval
	if iv.Rounds > 0 {
		est := 100 * (iv.Estimate - 1)
		r.EstimatePercent = &est
	}
	if iv.Low > 0 && !math.IsInf(iv.High, 1) {
		r.Interval = &Interval{LowPercent: 100 * (iv.Low - 1), HighPercent: 100 * (iv.High - 1)}
	}
	better := sequential.Higher
	if arm.Direction == results.LowerIsBetter {
		better = sequential.Lower
	}
	r.Reason = fmt.Sprintf("decided at round %d by its sequence", iv.Rounds)
	switch d.Outcome {
	case sequential.Within:
		r.Verdict = Unchanged
	case better:
		r.Verdict = Improved
	case sequential.Undecided:
		r.Verdict = Inconclusive
		r.Reason = fmt.Sprintf("undecided after %d rounds (the step stopped: %s): the interval neither clears ±%d%% nor lies within ±%d%%",
			iv.Rounds, st.why(), st.TolerancePercent, st.TargetPercent)
	default:
		r.Verdict = Regressed
	}
	return r
}

// why says why the step stopped.
func (s SequentialStep) why() string {
	switch s.Stopped {
	case results.StoppedDecided:
		return "what it stops on was decided"
	case results.StoppedTimeLimit:
		return "time limit reached"
	case results.StoppedMaxRounds:
		return "maxRounds reached"
	case results.StoppedEarly:
		return "ended early, by an error or an interrupt"
	}
	return s.Stopped
}

// Describe says in a line how the step ended, for the table's note and the status.
func (s SequentialStep) Describe() string {
	line := fmt.Sprintf("%s: %d rounds, %s", s.Step, s.Rounds, s.why())
	if s.Undecided > 0 {
		line += fmt.Sprintf(", %d undecided", s.Undecided)
	}
	return line
}

// DescribeAll is every sequential step's line, joined.
func DescribeAll(steps []SequentialStep) string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = s.Describe()
	}
	return strings.Join(lines, "; ")
}

// Undecided are the rows the sequential steps had to decide and left undecided.
func (a ArmsComparison) Undecided() []Row {
	var rows []Row
	for _, r := range a.Rows {
		for _, st := range a.Sequential {
			if st.mustDecide(r) && r.Verdict == Inconclusive {
				rows = append(rows, r)
			}
		}
	}
	return rows
}
