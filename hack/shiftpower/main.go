// Command shiftpower measures how the shift detector (internal/changepoint) does on synthetic
// schedule histories, watched run by run as a schedule does, and prints the table in
// docs/measurement.md ("What a shift needs"): how often a 15% drop is flagged within 3 runs
// and named by its first run, how often a drop later undone is found with both ends, and how
// often a history without a change is flagged at all, over 20 runs and over 100.
//
//	go run ./hack/shiftpower
package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/couchbench/couchbench/internal/changepoint"
)

const (
	histories = 1000
	runs      = 20
	shiftAt   = 12 // the first run at the new level
	drop      = 0.85
)

// noise is one run's factor: lognormal of the given CV and, with stalls, one run in ten 30%
// slow.
func noise(rng *rand.Rand, cv float64, stalls bool) float64 {
	v := math.Exp(rng.NormFloat64() * math.Log1p(cv))
	if stalls && rng.Float64() < 0.1 {
		v *= 0.7
	}
	return v
}

// dropped is a run's level: drop while it is down, else 1.
func dropped(down bool) float64 {
	if down {
		return drop
	}
	return 1
}

func series(rng *rand.Rand, n int, cv float64, stalls bool, level func(i int) float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1000 * level(i) * noise(rng, cv, stalls)
	}
	return x
}

// firstFlag is the length of the history at which the detector first shows a change point,
// and the newest one then; 0 when it never does.
func firstFlag(x []float64, from int) (int, changepoint.ChangePoint) {
	for n := from; n <= len(x); n++ {
		if cps := changepoint.Detect(x[:n], changepoint.Options{}); len(cps) > 0 {
			return n, cps[len(cps)-1]
		}
	}
	return 0, changepoint.ChangePoint{}
}

func percent(k int) string { return fmt.Sprintf("%.1f%%", 100*float64(k)/histories) }

func main() {
	fmt.Println("| noise (CV) | 15% drop flagged within 3 runs | named by its first run " +
		"| drop undone after 6 runs: both ends found | no change, flagged somewhere in 15 looks | in 95 looks |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, stalls := range []bool{false, true} {
		for _, cv := range []float64{0.03, 0.035, 0.04, 0.05, 0.07, 0.10, 0.15} {
			rng := rand.New(rand.NewPCG(1, 2))
			falseAlarms, longFalseAlarms := 0, 0
			for range histories {
				if n, _ := firstFlag(series(rng, runs, cv, stalls, func(int) float64 { return 1 }), 6); n > 0 {
					falseAlarms++
				}
				if n, _ := firstFlag(series(rng, 100, cv, stalls, func(int) float64 { return 1 }), 6); n > 0 {
					longFalseAlarms++
				}
			}
			inTime, named := 0, 0
			for range histories {
				x := series(rng, runs, cv, stalls, func(i int) float64 { return dropped(i >= shiftAt) })
				n, cp := firstFlag(x, shiftAt+1)
				if n > 0 && n-shiftAt <= 3 {
					inTime++
				}
				if n > 0 && cp.Index == shiftAt {
					named++
				}
			}
			undone := 0
			for range histories {
				x := series(rng, 24, cv, stalls, func(i int) float64 { return dropped(i >= 10 && i < 16) })
				if cps := changepoint.Detect(x, changepoint.Options{}); len(cps) == 2 && cps[0].Index == 10 && cps[1].Index == 16 {
					undone++
				}
			}
			label := fmt.Sprintf("%.3g%%", 100*cv)
			if stalls {
				label += ", one run in ten 30% slow"
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", label, percent(inTime), percent(named), percent(undone),
				percent(falseAlarms), percent(longFalseAlarms))
		}
	}
}
