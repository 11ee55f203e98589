// Package tdist is Student's t distribution, for any positive real degrees of freedom (as
// Welch's are): its distribution function and quantiles, from the regularized incomplete beta
// function. The comparisons' intervals and the change points' p-values rest on it.
package tdist

import "math"

// Quantile is the p-quantile (p > 0.5) of Student's t distribution with df degrees
// of freedom (any positive real, as Welch's are), found by bisection on its distribution
// function.
func Quantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for CDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if CDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// CDF is P(T <= t) for t >= 0.
func CDF(t, df float64) float64 {
	return 1 - 0.5*regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its continued
// fraction (Numerical Recipes, 6.4), on the side of x where that converges fast.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaContinuedFraction(a, b, x) / a
	}
	return 1 - front*betaContinuedFraction(b, a, 1-x)/b
}

// betaContinuedFraction evaluates the incomplete beta's continued fraction with the
// modified Lentz method.
func betaContinuedFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	step := func(coef float64) float64 {
		d = 1 + coef*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + coef/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		return c * d
	}
	for m := 1.0; m <= 10000; m++ {
		f *= step(m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m)))
		delta := step(-(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1)))
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}
