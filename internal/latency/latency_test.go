package latency

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// The layout's range is what it says: 50 µs to 120 s in 742 buckets of 2%.
func TestLayoutCoversItsRange(t *testing.T) {
	if top := K6.BaseMs * math.Pow(K6.Ratio, float64(K6.Buckets)); top < 120_000 || top > 125_000 {
		t.Errorf("the last bucket ends at %.0f ms, want about 120 s", top)
	}
	if b := K6.Bucket(0.001); b != 0 {
		t.Errorf("1 µs in bucket %d, want 0", b)
	}
	if b := K6.Bucket(1e9); b != K6.Buckets-1 {
		t.Errorf("11 days in bucket %d, want the last", b)
	}
	for _, ms := range []float64{0.06, 1, 3.7, 250, 59_000} {
		b := K6.Bucket(ms)
		if lo, hi := K6.BaseMs*math.Pow(K6.Ratio, float64(b)), K6.BaseMs*math.Pow(K6.Ratio, float64(b+1)); ms < lo || ms >= hi {
			t.Errorf("%v ms in bucket %d = [%v, %v)", ms, b, lo, hi)
		}
	}
}

// Three runners with different latency mixes: the percentiles of their merged histograms are
// within ErrorPercent of the exact percentiles of all their requests together, where the
// worst runner's percentile (the old bound) is far off.
func TestMergedPercentilesAreWithinTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []float64
	merged := Histogram{}
	worstP95 := 0.0
	for runner, scale := range []float64{2, 5, 40} {
		var own []float64
		h := Histogram{}
		for range 20000 + runner*5000 {
			ms := scale * rng.ExpFloat64()
			own, all = append(own, ms), append(all, ms)
			h[K6.Bucket(ms)]++
		}
		merged.Add(h)
		worstP95 = max(worstP95, exact(own, 95))
	}
	if merged.Count() != int64(len(all)) {
		t.Fatalf("merged %d requests, want %d", merged.Count(), len(all))
	}
	for _, p := range []float64{50, 90, 95, 99, 99.9} {
		got, want := K6.Percentile(merged, p), exact(all, p)
		if e := 100 * math.Abs(got-want) / want; e > K6.ErrorPercent() {
			t.Errorf("p%v: %.4f ms from the histogram, %.4f ms exactly: %.2f%% off, bound %.2f%%", p, got, want, e, K6.ErrorPercent())
		}
	}
	if p95 := exact(all, 95); worstP95 < 1.2*p95 {
		t.Errorf("the worst runner's p95 %.2f is near the true %.2f: the case does not tell the merge from the bound", worstP95, p95)
	}
}

// exact is the nearest-rank percentile of values.
func exact(values []float64, p float64) float64 {
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	return s[max(int(math.Ceil(p/100*float64(len(s))))-1, 0)]
}

func TestCountersAreReadByPrefix(t *testing.T) {
	h := K6.FromCounters(map[string]float64{K6.Prefix + "12": 3, K6.Prefix + "700": 1, "http_reqs": 99, K6.Prefix + "9999": 5, K6.Prefix + "x": 1})
	if len(h) != 2 || h[12] != 3 || h[700] != 1 {
		t.Errorf("histogram %v: want buckets 12 and 700 only", h)
	}
	if got := K6.Percentile(Histogram{}, 95); got != 0 {
		t.Errorf("an empty histogram's p95 is %v", got)
	}
}
