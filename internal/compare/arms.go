package compare

import (
	"fmt"
	"math"

	"github.com/couchbench/couchbench/internal/results"
)

// ArmsComparison sets every arm of one run against its first arm, metric by metric, round by
// round: an A/B of CouchDB builds, of query servers, of ini settings. Arms that took turns in
// each round (spec.armOrder Interleaved) met the same conditions within a round, so the ratio
// of their two measurements in a round leaves out most of the machine's drift, which moves
// both alike (duet benchmarking, Bulej et al., ICPE 2020). The change of an arm is the
// geometric mean of its round ratios, with a paired t interval over them (n - 1 degrees of
// freedom) at ConfidencePercent; the verdict follows the package's rule, Regressed meaning
// worse than the first arm. Arms run one after the other (Sequential) are two runs minutes
// apart: their repetitions do not pair, and they are judged as two runs are, the interval at
// least as wide as runs differ (Options.BetweenRunsPercent or History).
type ArmsComparison struct {
	// Reference is the first arm, which the others are set against.
	Reference string `json:"reference"`
	// Interleaved is true when the arms took turns round by round.
	Interleaved       bool    `json:"interleaved"`
	ConfidencePercent float64 `json:"confidencePercent"`
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
	metrics := results.Metrics(docs...)
	var arms []string
	for _, m := range metrics {
		if len(arms) == 0 || arms[len(arms)-1] != m.QueryServer {
			arms = append(arms, m.QueryServer)
		}
	}
	if len(arms) < 2 {
		return nil, nil
	}
	c := &ArmsComparison{Reference: arms[0], Interleaved: interleaved(docs), ConfidencePercent: ConfidencePercent}
	reference := map[string]results.Metric{}
	for _, m := range metrics {
		if m.QueryServer == c.Reference {
			reference[withoutArm(m)] = m
		}
	}
	for _, m := range metrics {
		ref, ok := reference[withoutArm(m)]
		if m.QueryServer == c.Reference || !ok {
			continue
		}
		if c.Interleaved {
			c.Rows = append(c.Rows, pairedRow(ref, m, opts.tolerance(m)))
		} else {
			c.Rows = append(c.Rows, row(ref, m, opts))
		}
	}
	return c, nil
}

// withoutArm keys a metric by all but its arm.
func withoutArm(m results.Metric) string {
	m.QueryServer = ""
	return m.Key()
}

// interleaved tells whether the arms took turns: every step record of several arms says in
// which order they did.
func interleaved(docs []*results.Document) bool {
	for _, d := range docs {
		for _, rec := range d.Steps {
			if len(rec.Rounds) > 0 {
				return true
			}
		}
	}
	return false
}

// pairedRow judges an arm's metric against the reference's, round by round.
func pairedRow(ref, arm results.Metric, tolerancePercent float64) Row {
	r := newRow(ref, arm, tolerancePercent)
	pairs := min(len(ref.Samples), len(arm.Samples))
	r.NBaseline, r.NCurrent = pairs, pairs
	j := judgePairs(ref.Samples[:pairs], arm.Samples[:pairs], arm.Direction, tolerancePercent/100)
	r.setJudgement(j)
	return r
}

// judgePairs applies the package's rule to an arm's rounds against the reference's, paired.
func judgePairs(ref, arm []float64, dir results.Direction, tolerance float64) judgement {
	if len(ref) < MinSamples {
		return judgement{verdict: Inconclusive, reason: fmt.Sprintf("%d rounds: %d are needed", len(ref), MinSamples)}
	}
	if !positive(ref) || !positive(arm) {
		return judgement{verdict: Inconclusive, reason: "a value is not positive: no ratio"}
	}
	ratios := make([]float64, len(ref))
	for i := range ref {
		ratios[i] = arm[i] / ref[i]
	}
	return rule(paired(ratios), results.Summarize(arm).Median/results.Summarize(ref).Median, dir, tolerance)
}

// paired estimates the log of the geometric mean of the round ratios, with the paired
// standard error and n - 1 degrees of freedom.
func paired(ratios []float64) change {
	m, v := logMeanVar(ratios)
	n := float64(len(ratios))
	return change{est: m, se: math.Sqrt(v / n), df: n - 1}
}
