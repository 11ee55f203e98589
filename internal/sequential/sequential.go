// Package sequential judges two arms' ratio round by round for as many rounds as it takes:
// rounds are added until the ratio is known well enough (a change found, or none as large as a
// target) or time is up, and the answer stays valid although the run chose when to stop.
//
// A fixed-level interval (Student's t over n rounds) is not valid when the run looks after
// every round and stops once it shows something: with enough looks it shows something by
// chance. A confidence sequence is valid at every round at once: the chance that it ever,
// at any round, excludes the true ratio is at most its alpha, so it holds at whatever round a
// run stops, for whatever reason.
//
// The sequence here is for the mean of the rounds' log-ratios, taken to be normal with an
// unknown spread: the scale-invariant mixture likelihood ratio (the Bayes factor of a one-sample
// t-test with a normal prior of variance g on the standardized effect; Rouder et al. 2009,
// Wang and Ramdas 2023) is, for a true mean, the likelihood ratio of the rounds' scale-free
// shape, a nonnegative martingale of mean 1; by Ville's inequality it passes 1/alpha at any
// round with probability at most alpha. The sequence is every mean whose ratio stays below
// 1/alpha, an interval around the rounds' mean in closed form.
package sequential

import (
	"fmt"
	"math"
)

// Sequence is a confidence sequence for the geometric mean of round ratios (arm over
// reference, one per round).
type Sequence struct {
	alpha, g float64
	// n, mean and m2: Welford's running mean and sum of squared deviations of the log-ratios.
	n        int
	mean, m2 float64
}

// New starts a sequence that excludes the true ratio at some round with probability at most
// alpha (two-sided), tightest near round tunedFor: the mixture's variance is the one that
// minimizes a known-variance normal mixture's boundary there (Howard et al. 2021), which
// costs little at other rounds.
func New(alpha float64, tunedFor int) *Sequence {
	if !(alpha > 0 && alpha < 1) || tunedFor < 1 {
		panic(fmt.Sprintf("sequential.New(%v, %d): alpha must lie in (0, 1) and tunedFor be positive", alpha, tunedFor))
	}
	l := 2 * math.Log(1/alpha)
	return &Sequence{alpha: alpha, g: (l + math.Log(l+1)) / float64(tunedFor)}
}

// Add takes one round's ratio, which must be positive.
func (s *Sequence) Add(ratio float64) {
	if !(ratio > 0) || math.IsInf(ratio, 0) {
		panic(fmt.Sprintf("sequential: round ratio %v is not a positive number", ratio))
	}
	x := math.Log(ratio)
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
}

// Rounds is how many ratios were added.
func (s *Sequence) Rounds() int { return s.n }

// Interval is the sequence at the rounds so far: the geometric mean of the ratios and the
// bounds within which the true ratio lies, at every round at once, with probability at least
// 1 - alpha. With fewer than two rounds, or while the rounds cannot exclude any ratio yet, the
// bounds are 0 and +Inf.
type Interval struct {
	Estimate, Low, High float64
	Rounds              int
}

// Interval is the sequence now.
func (s *Sequence) Interval() Interval {
	iv := Interval{Estimate: math.Exp(s.mean), High: math.Inf(1), Rounds: s.n}
	if s.n < 2 {
		return iv
	}
	if half := s.halfWidth(); !math.IsInf(half, 1) {
		iv.Low, iv.High = math.Exp(s.mean-half), math.Exp(s.mean+half)
	}
	return iv
}

// halfWidth is the sequence's half-width in log-ratio. For a mean m0, with t its t-statistic
// over n rounds, v = n - 1 and a = t²/v, the mixture ratio is
//
//	B = (1+ng)^(-1/2) · ((1+a) / (1+a/(1+ng)))^(n/2),
//
// increasing in a from (1+ng)^(-1/2) towards (1+ng)^((n-1)/2). B < 1/alpha holds for a below
// a* = (K-1)/(1-K/(1+ng)), with K = ((1+ng)^(1/2)/alpha)^(2/n), and for every a when K is at
// least 1+ng: no mean is excluded yet.
func (s *Sequence) halfWidth() float64 {
	n := float64(s.n)
	G := 1 + n*s.g
	K := math.Pow(math.Sqrt(G)/s.alpha, 2/n)
	if K >= G {
		return math.Inf(1)
	}
	a := (K - 1) / (1 - K/G)
	sd := math.Sqrt(s.m2 / (n - 1))
	return sd / math.Sqrt(n) * math.Sqrt((n-1)*a)
}

// mixtureRatio is B for the mean m0 (in log-ratio): what halfWidth solves for, evaluated
// directly, for the tests.
func (s *Sequence) mixtureRatio(m0 float64) float64 {
	n := float64(s.n)
	G := 1 + n*s.g
	sd := math.Sqrt(s.m2 / (n - 1))
	t := (s.mean - m0) / (sd / math.Sqrt(n))
	a := t * t / (n - 1)
	return math.Pow(G, -0.5) * math.Pow((1+a)/(1+a/G), n/2)
}

// Outcome is what a sequence says of a ratio so far.
type Outcome int

const (
	// Undecided: the interval neither clears the tolerance band nor fits within the target.
	Undecided Outcome = iota
	// Higher and Lower: the whole interval lies above (below) the tolerance band: the arm's
	// number changed.
	Higher
	Lower
	// Within: the whole interval lies within the target: no change as large as the target.
	Within
)

func (o Outcome) String() string {
	return [...]string{"undecided", "higher", "lower", "within"}[o]
}

// Rule is when a ratio is known well enough, as fractions (0.05 for 5%): a change when the
// interval clears ±Tolerance (0: any change), no change when it lies within ±Target. Both
// bands are symmetric in log-ratio: +5% is 1.05, -5% is 1/1.05.
type Rule struct {
	Target, Tolerance float64
}

// Decide is what the interval says under the rule. The chance that a sequence ever says
// Higher or Lower of a ratio within the tolerance band, or Within of a ratio outside the
// target, is at most its alpha: the interval would have to exclude the true ratio.
func (r Rule) Decide(iv Interval) Outcome {
	switch {
	case iv.Low > 1+r.Tolerance:
		return Higher
	case iv.High < 1/(1+r.Tolerance):
		return Lower
	case iv.Low >= 1/(1+r.Target) && iv.High <= 1+r.Target:
		return Within
	}
	return Undecided
}
