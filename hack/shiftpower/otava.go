package main

// otava is the essence of Apache Otava's change-point detection (otava/analysis.py,
// compute_change_points, with its defaults: window_len 50, max_pvalue 0.001, min_magnitude 0),
// the method of "Hunter: Using Change Point Detection to Hunt for Performance Regressions"
// (Fleming et al., ICPE 2023), applied to the raw values as Otava does:
//
//   - split: windows of 50 values starting every 25 (and after the last change point found);
//     in each, E-Divisive with the pair-distance statistic (|x - y|, power 1) proposes the
//     split that maximises q-hat over every segment end; the proposal is kept when Student's
//     two-sided t test (pooled, with the sides' standard deviations taken with ddof 0, as
//     scipy's ttest_ind_from_stats is given them) between the two whole sides of its interval
//     has p <= 0.01 (ten times max_pvalue), and the search goes on in the pieces until a
//     proposal fails: the weak change points;
//   - merge: each weak change point is tested between its neighbours, and the one with the
//     largest p-value is removed while that is >= 0.001, its neighbours then tested again.
//
// Like the old detector it re-searches the history at every look; it has no fewest runs after
// a change point.

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

const (
	otavaWindow    = 50
	otavaMaxPValue = 0.001
)

// otavaDetect is the change points Otava would report on x, by index of their first value.
func otavaDetect(x []float64) []int {
	weak := otavaSplit(x, 10*otavaMaxPValue)
	return otavaMerge(x, weak)
}

func otavaSplit(x []float64, pmax float64) []int {
	var found []int
	step := otavaWindow / 2
	for start := 0; start < len(x); {
		end := min(start+otavaWindow, len(x))
		cps := eDivisive(x[start:end], pmax)
		last := 0
		for _, cp := range cps {
			if !slices.Contains(found, start+cp) {
				found = append(found, start+cp)
			}
			last = max(last, start+cp)
		}
		start = max(last, start+step)
	}
	slices.Sort(found)
	return found
}

// eDivisive is E-Divisive's change points of w with Otava's t test as the significance test.
func eDivisive(w []float64, pmax float64) []int {
	dist := pairDistances(w)
	var cps []int
	for {
		bounds := append(append([]int{0}, cps...), len(w))
		best, bestQ, bestLo, bestHi := -1, math.Inf(-1), 0, 0
		for i := 0; i+1 < len(bounds); i++ {
			lo, hi := bounds[i], bounds[i+1]
			if hi-lo < 2 {
				continue
			}
			if tau, q := candidate(dist, lo, hi); q > bestQ {
				best, bestQ, bestLo, bestHi = tau, q, lo, hi
			}
		}
		if best < 0 || otavaPValue(w[bestLo:best], w[best:bestHi]) > pmax {
			return cps
		}
		cps = append(cps, best)
		slices.Sort(cps)
	}
}

// pairDistances is within[a][b]: the sum of |w_i - w_j| over a <= i < j < b.
func pairDistances(w []float64) [][]float64 {
	n := len(w)
	within := make([][]float64, n+1)
	for a := range within {
		within[a] = make([]float64, n+1)
	}
	for b := 1; b <= n; b++ {
		// row = sum over a <= i < b-1 of |w_i - w_{b-1}|, built from a = b-1 down.
		row := 0.0
		for a := b - 1; a >= 0; a-- {
			if a < b-1 {
				row += math.Abs(w[a] - w[b-1])
			}
			within[a][b] = within[a][b-1] + row
		}
	}
	return within
}

// candidate is the split tau of w[lo:hi] that maximises q-hat of w[lo:tau] against
// w[tau:kappa] over every kappa, and that q-hat.
func candidate(within [][]float64, lo, hi int) (int, float64) {
	best, bestQ := -1, math.Inf(-1)
	for tau := lo + 1; tau < hi; tau++ {
		n := float64(tau - lo)
		for kappa := tau + 1; kappa <= hi; kappa++ {
			m := float64(kappa - tau)
			cross := within[lo][kappa] - within[lo][tau] - within[tau][kappa]
			q := 2 / (m + n) * cross
			if n > 1 {
				q -= 2 * m / ((m + n) * (n - 1)) * within[lo][tau]
			}
			if m > 1 {
				q -= 2 * n / ((m + n) * (m - 1)) * within[tau][kappa]
			}
			if q > bestQ {
				best, bestQ = tau, q
			}
		}
	}
	return best, bestQ
}

// otavaPValue is Otava's two-sided Student t test of left against right.
func otavaPValue(left, right []float64) float64 {
	n1, n2 := float64(len(left)), float64(len(right))
	df := n1 + n2 - 2
	if df <= 0 {
		return 1
	}
	m1, s1 := meanStd(left)
	m2, s2 := meanStd(right)
	pooled := ((n1-1)*s1*s1 + (n2-1)*s2*s2) / df
	se := math.Sqrt(pooled * (1/n1 + 1/n2))
	if se == 0 {
		if m1 == m2 {
			return 1
		}
		return 0
	}
	return 2 * distuv.StudentsT{Sigma: 1, Nu: df}.Survival(math.Abs(m1-m2)/se)
}

// meanStd is the mean and the standard deviation with ddof 0 (numpy's default).
func meanStd(x []float64) (float64, float64) {
	m := segMean(x)
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)))
}

func otavaMerge(x []float64, cps []int) []int {
	cps = slices.Clone(cps)
	pValues := func() []float64 {
		out := make([]float64, len(cps))
		for i, cp := range cps {
			lo, hi := 0, len(x)
			if i > 0 {
				lo = cps[i-1]
			}
			if i+1 < len(cps) {
				hi = cps[i+1]
			}
			out[i] = otavaPValue(x[lo:cp], x[cp:hi])
		}
		return out
	}
	for len(cps) > 0 {
		p := pValues()
		weakest := 0
		for i := range p {
			if p[i] > p[weakest] {
				weakest = i
			}
		}
		if p[weakest] < otavaMaxPValue {
			return cps
		}
		cps = slices.Delete(cps, weakest, weakest+1)
	}
	return cps
}
