package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/couchbench/couchbench/internal/changepoint"
)

// noiseModel draws the run-to-run factors of one history: n values around 1.
type noiseModel struct {
	name string
	draw func(rng *rand.Rand, n int) []float64
}

// seed is the model's own seed, from its name: a model draws the same histories whichever
// models are measured beside it.
func (m noiseModel) seed() uint64 {
	h := fnv.New64a()
	h.Write([]byte(m.name))
	return h.Sum64()
}

// sigmaOf is the standard deviation of the logarithm of a lognormal value of the given CV.
func sigmaOf(cv float64) float64 { return math.Sqrt(math.Log1p(cv * cv)) }

func lognormal(cv float64) noiseModel {
	s := sigmaOf(cv)
	return noiseModel{fmt.Sprintf("lognormal, CV %.3g%%", 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Exp(s * rng.NormFloat64())
		}
		return x
	}}
}

// autoregressive is AR(1) noise on the logarithm, started from its stationary distribution:
// cv is the CV of one run on its own (the marginal one), not of the innovations.
func autoregressive(cv, phi float64) noiseModel {
	s := sigmaOf(cv)
	innovation := s * math.Sqrt(1-phi*phi)
	return noiseModel{fmt.Sprintf("AR(1) phi %.1f, marginal CV %.3g%%", phi, 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := make([]float64, n)
		e := s * rng.NormFloat64()
		for i := range x {
			if i > 0 {
				e = phi*e + innovation*rng.NormFloat64()
			}
			x[i] = math.Exp(e)
		}
		return x
	}}
}

// studentT is Student's t noise with 4 degrees of freedom on the logarithm, scaled so that its
// standard deviation is that of the lognormal of the given CV.
func studentT(cv float64) noiseModel {
	s := sigmaOf(cv) / math.Sqrt2 // t with 4 df has variance 2
	return noiseModel{fmt.Sprintf("t, 4 df, CV %.3g%%", 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			chi := 0.0
			for range 4 {
				z := rng.NormFloat64()
				chi += z * z
			}
			x[i] = math.Exp(s * rng.NormFloat64() / math.Sqrt(chi/4))
		}
		return x
	}}
}

// stalls is lognormal noise with, independently, one run in ten 30% slow.
func stalls(cv float64) noiseModel {
	base := lognormal(cv)
	return noiseModel{fmt.Sprintf("lognormal CV %.3g%%, one run in ten 30%% slow", 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := base.draw(rng, n)
		for i := range x {
			if rng.Float64() < 0.1 {
				x[i] *= 0.7
			}
		}
		return x
	}}
}

// regimes is lognormal noise whose spread changes: quiet regimes at the given CV and busy ones at
// 2-5 times it (each busy regime its own factor), taking turns, each 10-60 runs long, as on a
// machine whose neighbours come and go for days.
func regimes(cv float64) noiseModel {
	s := sigmaOf(cv)
	return noiseModel{fmt.Sprintf("lognormal CV %.3g%%, spread 2-5x in regimes of 10-60 runs", 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := make([]float64, 0, n)
		busy := rng.IntN(2) == 0
		for len(x) < n {
			factor := 1.0
			if busy {
				factor = 2 + 3*rng.Float64()
			}
			for range min(10+rng.IntN(51), n-len(x)) {
				x = append(x, math.Exp(factor*s*rng.NormFloat64()))
			}
			busy = !busy
		}
		return x
	}}
}

// slowRuns is base noise with slow runs that come together: a burst of runs begins at a run
// with the given chance (not within another), its length drawn from lengths, and slows its
// runs by 10-30%, all of them alike (one cause: the same slowdown) or each its own.
func slowRuns(base noiseModel, chance float64, lengths []int, alike bool) noiseModel {
	kind := "each its own"
	if alike {
		kind = "alike"
	}
	name := fmt.Sprintf("%s, slow runs (10-30%%, %s) in bursts of %v runs, one burst in %.0f runs", base.name, kind, lengths, 1/chance)
	return noiseModel{name, func(rng *rand.Rand, n int) []float64 {
		x := base.draw(rng, n)
		for i := 0; i < n; i++ {
			if rng.Float64() >= chance {
				continue
			}
			slow := 0.1 + 0.2*rng.Float64()
			length := lengths[rng.IntN(len(lengths))]
			for j := i; j < min(i+length, n); j++ {
				if !alike {
					slow = 0.1 + 0.2*rng.Float64()
				}
				x[j] *= 1 - slow
			}
			i += length - 1
		}
		return x
	}}
}

// wholeUnits is base noise on a value of about 1/unit units, counted whole (seconds of a
// short build, documents of a slow step): rounded to multiples of unit, with ties.
func wholeUnits(base noiseModel, unit float64) noiseModel {
	return noiseModel{fmt.Sprintf("%s, in whole units of %.3g%%", base.name, 100*unit), func(rng *rand.Rand, n int) []float64 {
		x := base.draw(rng, n)
		for i := range x {
			x[i] = unit * math.Round(x[i]/unit)
		}
		return x
	}}
}

// slowStart is lognormal noise whose first 1-3 runs are 20-40% slow: a cold first night, or the
// schedule's immediate run on a cluster still settling.
func slowStart(cv float64) noiseModel {
	base := lognormal(cv)
	return noiseModel{fmt.Sprintf("lognormal CV %.3g%%, its first 1-3 runs 20-40%% slow", 100*cv), func(rng *rand.Rand, n int) []float64 {
		x := base.draw(rng, n)
		for i := range min(1+rng.IntN(3), n) {
			x[i] *= 1 - (0.2 + 0.2*rng.Float64())
		}
		return x
	}}
}

// recordedBlock is the length of the blocks the recorded residuals are resampled in: long
// enough to keep the correlation of neighbouring runs.
const recordedBlock = 5

// recorded resamples the between-run residuals of recorded series, two models per series, its
// logarithms less their level (the levels the detector finds in it, so that a real shift in a
// recorded series is not resampled as noise) taken two ways: the level's mean, which leaves in
// the residuals how the level drifted, and the level's straight-line trend, which takes a
// steady drift out; stitched in blocks, each from a random place. A drift is a change of the
// machine, not run-to-run noise, but a schedule sees both.
func recorded(path string) ([]noiseModel, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var series map[string][]float64
	if err := json.Unmarshal(raw, &series); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var models []noiseModel
	for _, name := range slices.Sorted(maps.Keys(series)) {
		for _, trend := range []bool{false, true} {
			r := levelResiduals(series[name], trend)
			if len(r) < 10 {
				continue
			}
			around := "level means"
			if trend {
				around = "level trends"
			}
			models = append(models, noiseModel{fmt.Sprintf("recorded, %s (%d runs around their %s, blocks of %d)", name, len(r), around, recordedBlock),
				func(rng *rand.Rand, n int) []float64 {
					block := min(recordedBlock, len(r))
					x := make([]float64, 0, n+block)
					for len(x) < n {
						at := rng.IntN(len(r) - block + 1)
						for _, v := range r[at : at+block] {
							x = append(x, math.Exp(v))
						}
					}
					return x[:n]
				}})
		}
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("%s: no series with 10 positive values or more", path)
	}
	return models, nil
}

// levelResiduals are the logarithms of the positive values less their level's mean, or with
// trend less its least-squares line.
func levelResiduals(values []float64, trend bool) []float64 {
	var positive []float64
	for _, v := range values {
		if v > 0 && !math.IsInf(v, 1) {
			positive = append(positive, v)
		}
	}
	cps := changepoint.Detect(positive, changepoint.Options{})
	bounds := make([]int, 1, len(cps)+2)
	for _, cp := range cps {
		bounds = append(bounds, cp.Index)
	}
	bounds = append(bounds, len(positive))
	var out []float64
	for i := 0; i+1 < len(bounds); i++ {
		level := positive[bounds[i]:bounds[i+1]]
		logs := make([]float64, len(level))
		mean, middle := 0.0, float64(len(level)-1)/2
		for j, v := range level {
			logs[j] = math.Log(v)
			mean += logs[j] / float64(len(level))
		}
		var slope, cross, spread float64
		for j, l := range logs {
			cross += (float64(j) - middle) * (l - mean)
			spread += (float64(j) - middle) * (float64(j) - middle)
		}
		if trend && spread > 0 {
			slope = cross / spread
		}
		for j, l := range logs {
			out = append(out, l-mean-slope*(float64(j)-middle))
		}
	}
	return out
}
