// Package changepoint finds persistent shifts in a series of runs' results: the history of a
// schedule's nightly runs, one value per run and metric.
//
// # Why a shift, and why online
//
// On shared machines runs minutes apart differ a lot with nothing changed, so a verdict on two
// runs either flags noise or, widened for it, misses real changes. A level that changed and
// stayed so tells a persistent shift from a noisy run, and names the run where it began.
//
// A schedule looks at its history after every run, for months. A method that re-searches the
// whole history at every look (binary segmentation, E-Divisive, Apache Otava) holds its level
// per look, not per schedule: each look is a fresh chance of a false shift, and nothing bounds
// their sum. So the detector is online: Detect replays the series run by run, as the schedule
// saw it, and at each look asks one question only, whether the newest runs left the current
// level. A shift once found is never tested again; the level it started is the one later runs
// are judged against. Each look then spends a fixed share of the budget, and the chance of a
// false shift per run is bounded by that share, however long the schedule runs. The replay is
// deterministic, so nothing needs to be kept between looks.
//
// # The test at one look
//
// On logarithms (a shift is a ratio), the newest m runs are set against the runs of the
// current level before them (at least MinBefore): the difference of their means over its
// standard error, two-sided, its p-value held against the per-look level. Half of that level
// goes to m = MinAfter, which finds a shift soonest; the rest is split over the few larger m
// also tried, which find a shift too small to show in MinAfter runs a run or two later,
// still named by its first run.
//
// Runs of a schedule are not independent: a node's mood lasts from one night to the next,
// which makes neighbouring runs alike and a run of them look like a new level. So the
// standard error is that of the difference under first-order autoregressive noise, with the
// autocorrelation the level's own runs show (corrected for the sample estimate's known bias
// towards zero, never below zero), the level's variance corrected for the same correlation,
// and the t distribution's degrees of freedom shrunk as that correlation makes the variance
// less certain. With no correlation this is Student's pooled t test.
//
// The newest runs must look like one new level, not outliers: each of them beyond the old
// level's mean, and past halfway between the two means all of MinAfter new runs and all but one
// of more (a small shift leaves one run in a few short of halfway), and the split one run later
// no clearer (a shift fewer than m runs old would be, and waiting for it names it by its first
// run). Stalls (a slow run now and then) make a few slow runs in a row common enough on a long
// history to pass any test of means. So the level's own runs that lie, alone, as far from its
// median as the new runs' mean must, are counted; their share (with a half added to what was
// seen, so that a short level is not taken for clean) raised to the m-th power, the chance
// that m of them come in a row, must be within the test's level. A series with stalls is thus
// judged on more new runs than one without.
//
// # Where a shift began
//
// The look that finds a shift has seen as few as MinAfter runs of the new level, and a slow
// run just before a drop (or a fast one just after it) can put its split a run off. While the
// new level is young, every look from the one that found it moves the newest change point,
// within RefineReach runs of where it was found, to the split most likely for one shift over
// the runs seen so far, if that split's own test is within the level of the test that found
// it; a moved change point takes that test's p-value. Moving a change point adds none; the
// level it starts moves with it.
//
// A shift later undone (a regression fixed) is two change points: the second is found against
// the level the first started.
package changepoint

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Options tune the detector; the zero value takes the defaults.
type Options struct {
	// MinBefore is the fewest runs of the level a new one is judged against (default 4).
	MinBefore int
	// MinAfter is the fewest runs at a new level (default 3): one run is an outlier, and two
	// slow runs in a row are not rare on a shared machine.
	MinAfter int
	// FalseAlarmsPerRun is this series' share of the false-alarm budget: the chance per run,
	// with nothing changed, that a false shift is found (default 0.001).
	FalseAlarmsPerRun float64
}

// extraAfter is how many runs beyond MinAfter a new level may have at the look that finds it:
// a shift too small to show in MinAfter runs gets that many more looks, and a series with
// outliers can ask for more runs at a new level than MinAfter.
const extraAfter = 3

// detectProbability is the chance with which Detectable's shift is found.
const detectProbability = 0.9

func (o Options) withDefaults() Options {
	if o.MinBefore <= 0 {
		o.MinBefore = 4
	}
	if o.MinAfter <= 0 {
		o.MinAfter = 3
	}
	if o.FalseAlarmsPerRun <= 0 {
		o.FalseAlarmsPerRun = 0.001
	}
	return o
}

// ChangePoint is a persistent shift of a series.
type ChangePoint struct {
	// Index is the first run at the new level.
	Index int
	// Ratio is the new level over the old one: the geometric means of the two levels, each
	// over its runs up to the next change point or the end (0.85: 15% lower).
	Ratio float64
	// PValue is the two-sided p-value of the test of its own split: at the look that found it,
	// or at the last look that moved it there (refine).
	PValue float64
	// Level is the level of the test that found it, which PValue is within: half of
	// FalseAlarmsPerRun for MinAfter new runs, the other half shared by the longer new levels
	// tried at a look.
	Level float64
	// FoundAt is how many runs the series had at the look that found it.
	FoundAt int
}

// Detect replays the series look by look, as a schedule sees it, and returns its change points
// in order. Values that are not positive (no ratio can be taken) are left out: no look is
// taken at them and no change point names them.
func Detect(values []float64, opts Options) []ChangePoint {
	s := newSeries(values, opts)
	found, _ := s.replay()
	out := make([]ChangePoint, len(found))
	// Each level's size from all its runs, not only those seen when it was found.
	bounds := make([]int, 1, len(found)+2)
	for _, t := range found {
		bounds = append(bounds, t.split)
	}
	bounds = append(bounds, len(s.logs))
	for i, t := range found {
		out[i] = ChangePoint{Index: s.at[t.split], PValue: t.pValue, Level: s.level(t.n - t.found), FoundAt: s.at[t.n-1] + 1,
			Ratio: math.Exp(stat.Mean(s.logs[bounds[i+1]:bounds[i+2]], nil) - stat.Mean(s.logs[bounds[i]:bounds[i+1]], nil))}
	}
	return out
}

// segment is the current level of a replay: its first run and, after a change point, the
// runs whose noise it borrows while young (noiseLo to noiseHi, in logs; noiseHi 0 for the
// series' first level): the newest earlier level that reached youngLevel runs, or the series'
// first level, however short, when none did.
type segment struct{ start, noiseLo, noiseHi int }

// after is the level that starts at split, where this one ends: it keeps this level's runs
// for its noise if it had youngLevel of them, else the noise this one was judged with.
func (g segment) after(split int) segment {
	next := segment{start: split, noiseLo: g.noiseLo, noiseHi: g.noiseHi}
	if split-g.start >= youngLevel || g.noiseHi == 0 {
		next.noiseLo, next.noiseHi = g.start, split
	}
	return next
}

// youngLevel is how many runs a level after a change point needs before its own runs give the
// noise it is judged with; until then it borrows an earlier level's (segment), never below its
// own spread. A shift moves a series' level, not its noise, and a few runs cannot estimate the
// noise: a regression undone after 3 runs would otherwise be judged against 3 runs' spread and
// go unseen.
const youngLevel = 10

// noiseRuns are the runs whose spread a test of the level with its newest runs from split
// takes as the noise: the level's own before split, or while it is young an earlier level's.
func (g segment) noiseRuns(split int) (lo, hi int) {
	if g.noiseHi > 0 && split-g.start < youngLevel {
		return g.noiseLo, g.noiseHi
	}
	return g.start, split
}

// replay takes a look at every run in turn, and returns the tests that found a new level and
// the level the series ends in.
func (s *series) replay() ([]test, segment) {
	var found []test
	var level, previous segment
	for n := 1; n <= len(s.logs); n++ {
		if t, ok := s.look(level, n); ok {
			found = append(found, t)
			previous, level = level, level.after(t.split)
		}
		if last := len(found) - 1; last >= 0 && n-found[last].split < youngLevel {
			found[last] = s.refine(previous, found[last], n)
			level = previous.after(found[last].split)
		}
	}
	return found, level
}

// RefineReach is how many runs from where the look that found it put it a change point may
// move while its level is young: a shift's first run can change by that much after it was
// first told.
const RefineReach = 2

// refine places the change point t, found in the level previous, at the likeliest split for one
// shift of the runs from that level's start to n, within RefineReach of where it was found and
// with at least MinAfter runs after it: the split of the largest (after - before)² km/(k + m)
// over k runs before and m after, the likeliest for one shift of the mean in independent normal
// noise. The look that found it saw as few as MinAfter new runs, among which a slow run just
// before the shift, or a fast one just after it, can put the split a run off; the runs that
// come next show where it was. A split is moved only if its own test at n is within the level
// of the test that found the shift, and then takes that test's p-value.
func (s *series) refine(previous segment, t test, n int) test {
	lo := max(t.found-RefineReach, previous.start+previous.fewest(s.opts))
	hi := min(t.found+RefineReach, n-s.opts.MinAfter)
	best, likeliest := t.split, -1.0
	for c := lo; c <= hi; c++ {
		k, m := float64(c-previous.start), float64(n-c)
		d := (s.sum[n]-s.sum[c])/m - (s.sum[c]-s.sum[previous.start])/k
		if l := d * d * k * m / (k + m); l > likeliest {
			best, likeliest = c, l
		}
	}
	if best == t.split {
		return t
	}
	before, after, se, df := s.difference(previous, best, n)
	p := twoSided(tOf(before, after, se), df)
	if p > s.level(t.n-t.found) {
		return t
	}
	t.split, t.pValue = best, p
	return t
}

// twoSided is the two-sided p-value of Student's t at df degrees of freedom.
func twoSided(t, df float64) float64 { return 2 * studentT(df).Survival(math.Abs(t)) }

// studentT is Student's t distribution at df degrees of freedom (not a whole number once
// shrunk for autocorrelation).
func studentT(df float64) distuv.StudentsT { return distuv.StudentsT{Sigma: 1, Nu: df} }

// LevelStart is the index of the first run of the series' current level (0 without a change
// point): the between-run spread is measured from there, not across shifts.
func LevelStart(values []float64, opts Options) int {
	s := newSeries(values, opts)
	if len(s.logs) == 0 {
		return 0
	}
	_, level := s.replay()
	return s.at[level.start]
}

// Detectable is the smallest shift (0.12 = 12%, either way) that the detector would find 90%
// of the time in the fewest runs the series allows at a new level (MinAfter, more when its
// outliers ask for it), at the noise of the series' current level; ok is false with too few
// runs at that level to say. It takes the test's statistic as normal, with the standard
// error the test would use, and the new runs as independent around their level.
func Detectable(values []float64, opts Options) (shift float64, ok bool) {
	s := newSeries(values, opts)
	_, level := s.replay()
	k := len(s.logs) - level.start
	if k < level.fewest(s.opts) {
		return 0, false
	}
	lo, hi := level.noiseRuns(len(s.logs))
	ref := s.logs[lo:hi]
	sigma, phi, df := s.levelNoise(level, len(s.logs))
	for m := s.opts.MinAfter; m <= s.opts.MinAfter+extraAfter; m++ {
		se := sigma * math.Sqrt(differenceVariance(k, m, phi))
		crit := s.quantile(m, df)
		if !s.fewOutliers(ref, crit*se, 1, m) || !s.fewOutliers(ref, crit*se, -1, m) {
			continue
		}
		// The chance of finding a shift d: the test fires, every new run is beyond the old
		// mean, and all of MinAfter of them, all but one of more, are past halfway.
		found := func(d float64) float64 {
			past, beyond := normalCDF(d/2/sigma), normalCDF(d/sigma)
			runs := math.Pow(past, float64(m))
			if m > s.opts.MinAfter {
				runs += float64(m) * math.Pow(past, float64(m-1)) * (beyond - past)
			}
			return normalCDF((d-crit*se)/se) * runs
		}
		lo, hi := 0.0, 1.0
		for found(hi) < detectProbability {
			hi *= 2
		}
		for range 60 {
			mid := (lo + hi) / 2
			if found(mid) < detectProbability {
				lo = mid
			} else {
				hi = mid
			}
		}
		return math.Expm1(hi), true
	}
	return 0, false
}

// series is a series' logarithms with what a look needs of them.
type series struct {
	opts Options
	logs []float64
	at   []int // the index in the values given of each of logs
	// sum, sq and lag are the running sums of logs, of their squares, and of the products of
	// neighbours (lag[i] = logs[0]logs[1] + ... + logs[i-2]logs[i-1]), from 0.
	sum, sq, lag []float64
	quantiles    map[[2]float64]float64 // the t quantile a test is held against, by new runs and degrees of freedom
}

func newSeries(values []float64, opts Options) *series {
	s := &series{opts: opts.withDefaults(), quantiles: map[[2]float64]float64{}}
	for i, v := range values {
		if v > 0 && !math.IsInf(v, 1) {
			s.logs = append(s.logs, math.Log(v))
			s.at = append(s.at, i)
		}
	}
	n := len(s.logs)
	s.sum, s.sq, s.lag = make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i, v := range s.logs {
		s.sum[i+1], s.sq[i+1], s.lag[i+1] = s.sum[i]+v, s.sq[i]+v*v, s.lag[i]
		if i > 0 {
			s.lag[i+1] += s.logs[i-1] * v
		}
	}
	return s
}

// level is the two-sided level of one test: the per-run budget over the lengths tried.
func (s *series) level(m int) float64 {
	if m == s.opts.MinAfter {
		return s.opts.FalseAlarmsPerRun * firstShare
	}
	return s.opts.FalseAlarmsPerRun * (1 - firstShare) / extraAfter
}

// firstShare is the part of a look's level that the test of the newest MinAfter runs gets.
const firstShare = 0.5

// quantile is the t quantile a test at df degrees of freedom is held against.
func (s *series) quantile(m int, df float64) float64 {
	key := [2]float64{float64(m), df}
	q, ok := s.quantiles[key]
	if !ok {
		q = studentT(df).Quantile(1 - s.level(m)/2)
		s.quantiles[key] = q
	}
	return q
}

// test is the outcome of one split's test.
type test struct {
	split  int // the first run of the new level, in logs
	found  int // split as the look that found it had it, before refine moved it
	n      int // how many runs (of logs) the look saw
	t      float64
	pValue float64
}

// fewest is how many runs of the level a new one is judged against: MinBefore for the series'
// first level, whose noise is its own; MinAfter for a later one, judged while young with the
// noise of the level before it.
func (g segment) fewest(opts Options) int {
	if g.noiseHi == 0 {
		return opts.MinBefore
	}
	return opts.MinAfter
}

// look is what the look at the first n runs finds against the current level: the split of
// the newest runs with the clearest test that fires, if any.
func (s *series) look(level segment, n int) (test, bool) {
	best, found := test{}, false
	for m := s.opts.MinAfter; m <= s.opts.MinAfter+extraAfter; m++ {
		k := n - m - level.start
		if k < level.fewest(s.opts) {
			break
		}
		t, ok := s.test(level, n-m, n)
		if ok && (!found || math.Abs(t.t) > math.Abs(best.t)) {
			best, found = t, true
		}
	}
	return best, found
}

// difference is the mean of the level's runs before split, that of logs[split:n], the
// standard error of their difference under the level's noise, and that noise's degrees of
// freedom.
func (s *series) difference(level segment, split, n int) (before, after, se, df float64) {
	k, m := split-level.start, n-split
	sigma, phi, df := s.levelNoise(level, split)
	before = (s.sum[split] - s.sum[level.start]) / float64(k)
	after = (s.sum[n] - s.sum[split]) / float64(m)
	return before, after, sigma * math.Sqrt(differenceVariance(k, m, phi)), df
}

// statistic is the test's t of logs[split:n] against the level's runs before split.
func (s *series) statistic(level segment, split, n int) float64 {
	before, after, se, _ := s.difference(level, split, n)
	return tOf(before, after, se)
}

// tOf is the t of a difference of means with standard error se; infinite for a difference
// without noise.
func tOf(before, after, se float64) float64 {
	switch {
	case se > 0:
		return (after - before) / se
	case after != before:
		return math.Copysign(math.Inf(1), after-before)
	}
	return 0
}

// test sets logs[split:n] against the level's runs before split and says whether they form a
// new level.
func (s *series) test(level segment, split, n int) (test, bool) {
	m := n - split
	lo, hi := level.noiseRuns(split)
	before, after, se, df := s.difference(level, split, n)
	out := test{split: split, found: split, n: n, t: tOf(before, after, se)}
	// Student's t quantile is beyond the normal one: a |t| short of that needs no p-value.
	if math.Abs(out.t) < distuv.UnitNormal.Quantile(1-s.level(m)/2) {
		return out, false
	}
	out.pValue = twoSided(out.t, df)
	// A shift fewer than m runs old shows a larger |t| one run later: waiting names it by
	// its first run.
	if out.pValue > s.level(m) || math.Abs(s.statistic(level, split+1, n)) > math.Abs(out.t) {
		return out, false
	}
	// A small shift leaves one new run in a few short of halfway; asking all of them to pass
	// it found such shifts late or named them a run off. More new runs than MinAfter are held
	// to a smaller level and may have one short; MinAfter may not (it let heavy tails through).
	side := math.Copysign(1, after-before)
	short := 0
	for _, v := range s.logs[split:n] {
		if (v-before)*side <= 0 {
			return out, false
		}
		if (v-(before+after)/2)*side <= 0 {
			short++
		}
	}
	if short > 0 && (m == s.opts.MinAfter || short > 1) {
		return out, false
	}
	return out, s.fewOutliers(s.logs[lo:hi], s.quantile(m, df)*se, side, m)
}

// levelNoise is the noise a test of the level's runs before split against the newest runs
// takes: that of its noiseRuns, but never below the spread of the level's own runs, so that a
// young level that scatters more than the one it borrows from is not judged as calm.
func (s *series) levelNoise(level segment, split int) (sigma, phi, df float64) {
	lo, hi := level.noiseRuns(split)
	sigma, phi, df = s.noise(lo, hi)
	if lo != level.start {
		own, _, _ := s.noise(level.start, split)
		sigma = max(sigma, own)
	}
	return sigma, phi, df
}

// fewOutliers says whether runs of the level ref that lie beyond dist from its median on side
// are rare enough that m of them in a row are within the per-test level, one direction's half.
func (s *series) fewOutliers(ref []float64, dist, side float64, m int) bool {
	sorted := slices.Sorted(slices.Values(ref))
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (median + sorted[len(sorted)/2-1]) / 2
	}
	beyond := 0
	for _, v := range ref {
		if (v-median)*side > dist {
			beyond++
		}
	}
	share := (float64(beyond) + 0.5) / float64(len(ref)+1)
	return math.Pow(share, float64(m)) <= s.level(m)
}

// noise is the spread of logs[lo:hi] (one level's runs): the standard deviation of one run,
// the lag-1 autocorrelation the test allows for, and the degrees of freedom of the spread.
func (s *series) noise(lo, hi int) (sigma, phi, df float64) {
	k := float64(hi - lo)
	mu := (s.sum[hi] - s.sum[lo]) / k
	ss := max(s.sq[hi]-s.sq[lo]-k*mu*mu, 0)
	phi = autocorrelation(s, lo, hi, mu, ss)
	// E[ss] = sigma² (k - 1'R1/k) under AR(1).
	sigma = math.Sqrt(ss / (k - blockSum(hi-lo, phi)/k))
	// The spread of an AR(1) series varies more than that of independent runs (Bartlett):
	// its degrees of freedom shrink by (1 - phi²) / (1 + phi²).
	return sigma, phi, max(1, (k-1)*(1-phi*phi)/(1+phi*phi))
}

// autocorrelation is the lag-1 autocorrelation of logs[lo:hi], whose mean is mu and sum of
// squared deviations ss, corrected for the sample autocorrelation's bias (it is low by about
// (1 + 4 phi) / k over k runs, and taking it too low makes false shifts), in [0, maxPhi].
func autocorrelation(s *series, lo, hi int, mu, ss float64) float64 {
	k := hi - lo
	if k < 3 || ss <= 0 {
		return 0
	}
	// sum over neighbours (x_i - mu)(x_{i+1} - mu).
	cross := s.lag[hi] - s.lag[lo+1] - mu*(s.sum[hi-1]-s.sum[lo]+s.sum[hi]-s.sum[lo+1]) + float64(k-1)*mu*mu
	r := cross / ss
	kf := float64(k)
	return min(max(r+(1+4*max(r, 0))/kf, 0), maxPhi)
}

// maxPhi caps the autocorrelation allowed for: beyond it a level is a drift, not noise.
const maxPhi = 0.9

// blockSum is the sum of phi^|i-j| over i, j < k: the variance of the sum of k neighbouring
// runs of AR(1) noise, in units of one run's variance.
func blockSum(k int, phi float64) float64 {
	out, p := float64(k), 1.0
	for d := 1; d < k; d++ {
		p *= phi
		if p < 1e-12 {
			break
		}
		out += 2 * float64(k-d) * p
	}
	return out
}

// differenceVariance is the variance of the mean of m runs less the mean of the k runs just
// before them, under AR(1) noise of autocorrelation phi, in units of one run's variance.
func differenceVariance(k, m int, phi float64) float64 {
	fk, fm := float64(k), float64(m)
	// The sum over the k runs before and the m after of phi^(distance).
	cross := 0.0
	if phi > 0 {
		cross = phi * (1 - math.Pow(phi, fk)) * (1 - math.Pow(phi, fm)) / ((1 - phi) * (1 - phi))
	}
	return blockSum(k, phi)/(fk*fk) + blockSum(m, phi)/(fm*fm) - 2*cross/(fk*fm)
}

func normalCDF(z float64) float64 { return distuv.UnitNormal.CDF(z) }
