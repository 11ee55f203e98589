package tdist

import (
	"math"
	"testing"
)

func TestStudentTQuantileMatchesTables(t *testing.T) {
	// Two-sided 99% and 95% critical values from standard t tables.
	for _, c := range []struct{ p, df, want float64 }{
		{0.995, 1, 63.657},
		{0.995, 2, 9.925},
		{0.995, 4, 4.604},
		{0.995, 8, 3.355},
		{0.995, 30, 2.750},
		{0.995, 1000, 2.581},
		{0.975, 10, 2.228},
		{0.975, 3, 3.182},
	} {
		if got := Quantile(c.p, c.df); math.Abs(got-c.want) > 0.001 {
			t.Errorf("t quantile %v with %v df = %.4f, want %.3f", c.p, c.df, got, c.want)
		}
	}
	// Welch's degrees of freedom are not whole numbers: the quantile falls between.
	if q := Quantile(0.995, 2.5); q <= 4.604 || q >= 9.925 {
		t.Errorf("t quantile with 2.5 df = %v, want between those of 4 and 2 df", q)
	}
}
