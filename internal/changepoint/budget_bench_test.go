package changepoint

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkFalseShifts is the budget tests' long run (make bench): on every noise model, false
// shifts per 1,000 unchanged runs over 2,000 series of 1,000 runs replayed run by run, and over
// the first 50 runs of 20,000 series, the start of a schedule's life. It reports figures, not a
// speed: docs/measurement.md records them.
func BenchmarkFalseShifts(b *testing.B) {
	for i, nz := range noiseModels {
		b.Run(nz.name, func(b *testing.B) {
			for b.Loop() {
				rng := rand.New(rand.NewPCG(uint64(i)+1000, 1000))
				b.ReportMetric(float64(falseShifts(nz, rng, 2000, 1000))/2000, "false/1000runs")
				b.ReportMetric(float64(falseShifts(nz, rng, 20000, 50))/1000, "false/1000first50")
			}
		})
	}
}
