package compare

import (
	"fmt"
	"math"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/sequential"
)

// ArmsComparison sets every arm of one run against its first arm, metric by metric, round by
// round: an A/B of CouchDB builds, of query servers, of ini settings. Arms that took turns in
// each round (spec.armOrder Interleaved), or took each unit at the same moment (Duet), met
// the same conditions within a round, so the ratio
// of their two measurements in a round leaves out most of the machine's drift, which moves
// both alike (duet benchmarking, Bulej et al., ICPE 2020). The change of an arm is the
// geometric mean of its round ratios, with a paired t interval over them (n - 1 degrees of
// freedom), all rows judged together at ConfidencePercent (judgeFamily); the verdict follows
// the package's rule, Regressed meaning worse than the first arm. Arms run one after the
// other (Sequential) are two runs minutes apart: their repetitions do not pair, and they are
// judged as two runs are, the interval at least as wide as runs differ
// (Options.BetweenRunsPercent or History).
type ArmsComparison struct {
	// Reference is the first arm, which the others are set against.
	Reference string `json:"reference"`
	// Interleaved is true when the arms' rounds pair: they took turns round by round, or
	// took each unit at the same moment.
	Interleaved bool `json:"interleaved"`
	// Duet is true when the arms took each unit of the runner's steps at the same moment
	// (spec.armOrder Duet); k6's reads still took turns.
	Duet bool `json:"duet,omitempty"`
	// Sequential are the steps that added rounds until their ratios were decided
	// (spec.sequential): their rows are judged by confidence sequences, each step's rows
	// together at ConfidencePercent, and are not among the Judged.
	Sequential []SequentialStep `json:"sequential,omitempty"`
	// ConfidencePercent is the family-wise level of the rows' verdicts, which the Judged rows
	// hold together.
	ConfidencePercent float64 `json:"confidencePercent"`
	Judged            int     `json:"judged"`
	// Rows are every other arm's metrics that the reference measured too: Baseline is the
	// reference's median, Current the arm's, NBaseline and NCurrent the rounds paired.
	Rows []Row `json:"rows,omitempty"`
}

// Arms compares the arms of one run (its documents: one per arm as the operator stores them,
// or one with every arm). Nil when the run has fewer than two arms.
func Arms(docs []*results.Document, opts Options) (*ArmsComparison, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	set := armsOf(docs)
	if set == nil {
		return nil, nil
	}
	c := &ArmsComparison{Reference: set.reference, Interleaved: set.interleaved, Duet: set.duet, ConfidencePercent: ConfidencePercent}
	var f family
	seq := sequentialSteps(docs, set.pairs)
	decisions := map[string]*sequential.Family{}
	for workload, st := range seq {
		decisions[workload] = Decisions(docs, st.Step)
	}
	for _, p := range set.pairs {
		if st, ok := seq[p.arm.Workload]; ok && c.Interleaved && decisions[p.arm.Workload] != nil {
			family := decisions[p.arm.Workload]
			r := sequentialRow(p, family.Decision(p.arm.Key()), st, len(family.Metrics()))
			if r.Verdict == Inconclusive && st.mustDecide(r) {
				st.Undecided++
			}
			f.add(r, nil)
			continue
		}
		if c.Interleaved {
			f.add(pairedRow(p.ref, p.arm, opts.tolerance(p.arm)))
		} else {
			f.add(row(p.ref, p.arm, opts))
		}
	}
	c.Rows, c.Judged = f.judge()
	for _, step := range []benchv1.Step{benchv1.StepIndex, benchv1.StepViews} {
		if st := seq[sequentialWorkloads[step]]; st != nil {
			c.Sequential = append(c.Sequential, *st)
		}
	}
	return c, nil
}

// armSet is a run's arms, every other arm's metric paired with the first arm's.
type armSet struct {
	reference   string
	interleaved bool
	duet        bool
	pairs       []armPair
}

type armPair struct{ ref, arm results.Metric }

// armsOf pairs a run's arms with its first; nil with fewer than two arms.
func armsOf(docs []*results.Document) *armSet {
	metrics := results.Metrics(docs...)
	var arms []string
	for _, m := range metrics {
		if len(arms) == 0 || arms[len(arms)-1] != m.QueryServer {
			arms = append(arms, m.QueryServer)
		}
	}
	if len(arms) < 2 {
		return nil
	}
	set := &armSet{reference: arms[0]}
	set.interleaved, set.duet = roundsPair(docs)
	reference := map[string]results.Metric{}
	for _, m := range metrics {
		if m.QueryServer == set.reference {
			reference[withoutArm(m)] = m
		}
	}
	for _, m := range metrics {
		if ref, ok := reference[withoutArm(m)]; ok && m.QueryServer != set.reference {
			set.pairs = append(set.pairs, armPair{ref: ref, arm: m})
		}
	}
	return set
}

// armRatio is an arm's ratio to the reference in one run, as the history records it: the
// paired estimate where the rounds pair, the ratio of the geometric means of arms one after
// the other, or of the medians with fewer than MinSamples each.
type armRatio struct {
	c      change
	value  float64
	rounds int
	// paired: the ratio is of rounds taken back to back.
	paired bool
	reason string
}

func (s *armSet) ratio(p armPair) armRatio {
	refM, armM := roundsBoth(p.ref, p.arm)
	ref, arm, n := refM.Samples, armM.Samples, len(refM.Samples)
	switch {
	case n < MinSamples:
		r := armRatio{c: change{df: assumedDF}, rounds: n}
		if v := armM.Value / refM.Value; !(refM.Value > 0) || !(v > 0) || math.IsInf(v, 0) {
			r.reason = "a value is not positive"
		} else {
			r.c.est, r.value = math.Log(v), v
		}
		return r
	case !positive(ref) || !positive(arm):
		return armRatio{rounds: n, reason: "a value is not positive"}
	case s.interleaved:
		c := paired(roundRatios(ref, arm))
		return armRatio{c: c, value: math.Exp(c.est), rounds: n, paired: true}
	}
	c := welch(ref, arm)
	return armRatio{c: c, value: math.Exp(c.est), rounds: n}
}

// withoutArm keys a metric by all but its arm.
func withoutArm(m results.Metric) string {
	m.QueryServer = ""
	return m.Key()
}

// roundsPair tells whether the arms' rounds pair, and whether in duet: every step record of
// several arms says in which order they took their turns, or that they ran in duet.
func roundsPair(docs []*results.Document) (interleaved, duet bool) {
	for _, d := range docs {
		for _, rec := range d.Steps {
			if rec.Duet {
				return true, true
			}
			if len(rec.Rounds) > 0 {
				return true, false
			}
		}
	}
	return false, false
}

// pairedRow sets an arm's metric against the reference's, round by round: the rounds both
// measured, their medians shown.
func pairedRow(ref, arm results.Metric, tolerancePercent float64) (Row, *trial) {
	ref, arm = roundsBoth(ref, arm)
	r := newRow(ref, arm, tolerancePercent)
	r.NBaseline, r.NCurrent = len(ref.Samples), len(arm.Samples)
	t, reason := measurePairs(ref.Samples, arm.Samples, arm.Direction, tolerancePercent/100)
	r.Reason = reason
	return r, t
}

// measurePairs is the trial of an arm's rounds against the reference's, paired.
func measurePairs(ref, arm []float64, dir results.Direction, tolerance float64) (*trial, string) {
	if len(ref) < MinSamples {
		return nil, fmt.Sprintf("%d rounds: %d are needed", len(ref), MinSamples)
	}
	if !positive(ref) || !positive(arm) {
		return nil, "a value is not positive: no ratio"
	}
	ratios := roundRatios(ref, arm)
	_, v := logMeanVar(ratios)
	return &trial{c: paired(ratios), medians: results.Summarize(arm).Median / results.Summarize(ref).Median, dir: dir,
		tolerance: tolerance, noise: fmt.Sprintf("the round ratios spread by %s (%d rounds)", cv(math.Sqrt(v)), len(ratios))}, ""
}

// roundsBoth keeps the rounds both arms measured, and shows their medians: the numbers the
// paired estimate rests on, not an arm's rounds the other lacks.
func roundsBoth(ref, arm results.Metric) (results.Metric, results.Metric) {
	n := min(len(ref.Samples), len(arm.Samples))
	if n == 0 {
		return ref, arm
	}
	ref.Samples, arm.Samples = ref.Samples[:n], arm.Samples[:n]
	ref.Value, arm.Value = results.Summarize(ref.Samples).Median, results.Summarize(arm.Samples).Median
	return ref, arm
}

func roundRatios(ref, arm []float64) []float64 {
	ratios := make([]float64, len(ref))
	for i := range ref {
		ratios[i] = arm[i] / ref[i]
	}
	return ratios
}
