package sequential

import "fmt"

// Family judges several metrics' round ratios together (a build's wall time and its CPU
// cost, say) at one family-wise alpha: each metric's sequence at alpha over the number of
// metrics (Bonferroni's split, valid at every round at once as each sequence is), so that the
// chance of any false answer in the family stays within alpha however many there are.
// A metric's first decision stands: later rounds no longer change what it said, so that the
// family's answer is the same whenever the run stops after it.
type Family struct {
	rule    Rule
	metrics []string
	seqs    map[string]*Sequence
	decided map[string]Decision
}

// Decision is a metric's outcome and the interval that gave it.
type Decision struct {
	Outcome  Outcome
	Interval Interval
}

// NewFamily judges the metrics under rule, at family-wise alpha, tuned for tunedFor rounds.
func NewFamily(alpha float64, tunedFor int, rule Rule, metrics ...string) *Family {
	if len(metrics) == 0 {
		panic("sequential.NewFamily: no metrics")
	}
	f := &Family{rule: rule, metrics: metrics, seqs: map[string]*Sequence{}, decided: map[string]Decision{}}
	for _, m := range metrics {
		if f.seqs[m] != nil {
			panic(fmt.Sprintf("sequential.NewFamily: metric %q twice", m))
		}
		f.seqs[m] = New(alpha/float64(len(metrics)), tunedFor)
	}
	return f
}

// Add takes a round's ratio of one metric; a metric already decided keeps its decision.
func (f *Family) Add(metric string, ratio float64) {
	s := f.seqs[metric]
	if s == nil {
		panic(fmt.Sprintf("sequential: metric %q is not in the family %v", metric, f.metrics))
	}
	if _, ok := f.decided[metric]; ok {
		return
	}
	s.Add(ratio)
	iv := s.Interval()
	if o := f.rule.Decide(iv); o != Undecided {
		f.decided[metric] = Decision{Outcome: o, Interval: iv}
	}
}

// Decision is what a metric says now: its decision once made, else Undecided with the
// interval so far.
func (f *Family) Decision(metric string) Decision {
	if d, ok := f.decided[metric]; ok {
		return d
	}
	return Decision{Outcome: Undecided, Interval: f.seqs[metric].Interval()}
}

// Done tells whether every metric is decided: the run can stop.
func (f *Family) Done() bool { return len(f.decided) == len(f.metrics) }

// Metrics are the family's metrics, in the order given.
func (f *Family) Metrics() []string { return f.metrics }
