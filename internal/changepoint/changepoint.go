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
// level. A shift once found is never tested again; the level it started (or, when it ended a
// dip, the level the dip interrupted) is the one later runs are judged against. Each look then spends a fixed share of the budget, and the chance of a
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
// less certain. With no correlation this is a t test on the level's own spread. On a short
// level that wanders that correction leaves so few degrees of freedom that even a tenfold
// drop is often missed; new runs that lie beyond everything such a level did, by more than
// it and they spread, are judged as independent runs instead (separated).
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
// the level the first started. Undone within 2·MinAfter runs, it was a dip: the level it
// interrupted goes on, the dip among its runs, so that a series whose bursts of slow runs look
// like new levels tells the first of them as a dip and judges the later ones as its noise (the
// cost: a real regression fixed that fast blinds the few newest runs' test to the next drop
// of its depth, which the late look then finds).
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
	// Found is the first run as the look that found it had it: while its level is young, later
	// looks may move Index by at most RefineReach runs from there.
	Found int
	// Ratio is the new level over the old one: the geometric means of the two levels, each
	// over its runs up to the next change point, accepted change or the end (0.85: 15% lower);
	// the end of a dip bounds them as any change point does.
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
	// Returns says that it takes the level back, past halfway, to where it was before the
	// change point just before it, which began fewer than DipRuns runs earlier: the two are a
	// dip (or a spike) and its end, not two shifts.
	Returns bool
	// DipEnd says that it ended a dip when it was found: the look that found it saw the runs
	// back past halfway, or the runs after the dip told its end where no look's test could (the
	// dip's level had too few runs). The level before the dip then goes on, its dip among its
	// runs, and Resume must be told so to go on as the replay does.
	DipEnd bool
}

// DipRuns is how many runs a change may last and still be told as a dip when it goes back
// (Returns): as long as its level is young. Only a dip of at most 2·MinAfter runs is taken
// back into the level it interrupted (DipEnd); a longer one ends with a level of its own.
const DipRuns = youngLevel

// Known is what a schedule knows of a series from its earlier looks, by index in the values
// it gives, and what it was told: Resume goes on from there.
type Known struct {
	// Looked is how many of the values the earlier looks saw: no look is taken at them again,
	// and no change point is found among them but those in Found.
	Looked int
	// Start is the first run of the series' first level: the first looks left the runs
	// before it out as a warm-up (warmUp).
	Start int
	// Found are the change points the earlier looks found, as Resume returned them. Those that
	// begin before the values given (a history that dropped its oldest runs) are left out.
	Found []ChangePoint
	// Accepted are the runs where a change the team accepted began: the level starts anew at
	// each, as a series' first level does, and no change point is found across it. A change
	// point found within RefineReach runs after one is that change, and ends no level.
	Accepted []int
}

// Detect replays the series look by look, as a schedule sees it, and returns its change points
// in order. Values that are not positive (no ratio can be taken) are left out: no look is
// taken at them and no change point names them.
func Detect(values []float64, opts Options) []ChangePoint {
	return Resume(values, Known{}, opts).Found
}

// Resume takes a look at each of the values that known.Looked did not see, in turn, as a
// schedule does after each run, going on from what the earlier looks found, and returns what
// is then known: every change point in order (those of known, refined while young, and the
// new ones), with each level's ratio over all its runs. Given what Resume returned for the
// first values, it returns for the rest what Detect does for all of them.
func Resume(values []float64, known Known, opts Options) Known {
	s := newSeries(values, opts)
	r := s.replay(s.known(known))
	found := r.found
	out := Known{Looked: len(values), Accepted: known.Accepted, Found: make([]ChangePoint, len(found))}
	if r.start < len(s.at) {
		out.Start = s.at[r.start]
	}
	// Each level's size from all its runs, not only those seen when it was found.
	bounds := []int{r.start, len(s.logs)}
	for _, t := range found {
		bounds = append(bounds, t.split)
	}
	bounds = append(bounds, s.accepted(known.Accepted)...)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	for i, t := range found {
		at, _ := slices.BinarySearch(bounds, t.split)
		lo, hi := bounds[at-1], bounds[at+1]
		out.Found[i] = ChangePoint{Index: s.at[t.split], Found: s.at[t.found], PValue: t.pValue, Level: t.level,
			FoundAt: s.at[t.n-1] + 1, DipEnd: t.dipEnd,
			Ratio: math.Exp(stat.Mean(s.logs[t.split:hi], nil) - stat.Mean(s.logs[lo:t.split], nil))}
		// A dip: the change point before began the level this one ends, fewer than DipRuns
		// runs ago, and this one goes more than halfway back; or the replay took it for a
		// dip's end. The end of a dip began no level of its own to be a dip.
		out.Found[i].Returns = t.dipEnd
		if i > 0 && !found[i-1].dipEnd && lo == found[i-1].split && t.split-lo < DipRuns {
			there, back := math.Log(out.Found[i-1].Ratio), math.Log(out.Found[i-1].Ratio*out.Found[i].Ratio)
			out.Found[i].Returns = out.Found[i].Returns || math.Abs(back) < math.Abs(there)/2
		}
	}
	return out
}

// LevelStart is the index of the first run of the series' current level: its newest change
// point (after a dip's end, that of the level the dip began in) or accepted change, with
// neither the first run after a warm-up (Start). The between-run spread is measured from
// there, not across shifts.
func (k Known) LevelStart() int {
	start := k.Start
	// A dip's end takes back the level the dip began in.
	i := len(k.Found) - 1
	for i >= 0 && k.Found[i].DipEnd {
		i -= 2
	}
	if i >= 0 {
		start = k.Found[i].Index
	}
	for _, a := range k.Accepted {
		if a < k.Looked {
			start = max(start, a)
		}
	}
	return start
}

// pastLooks is what a Known says in a series' own terms, by place in its logs: how many of them
// the earlier looks saw, the tests that found its change points, and the accepted changes.
type pastLooks struct {
	looked, start int
	found         []test
	accepted      []int
}

func (s *series) known(k Known) pastLooks {
	logIndex := func(i int) int { at, _ := slices.BinarySearch(s.at, i); return at }
	past := pastLooks{looked: logIndex(k.Looked), start: logIndex(k.Start), accepted: s.accepted(k.Accepted)}
	for _, cp := range k.Found {
		split, ok := slices.BinarySearch(s.at, cp.Index)
		if !ok || cp.Index < 0 {
			continue
		}
		past.found = append(past.found, test{split: split, found: max(logIndex(cp.Found), 0), n: logIndex(cp.FoundAt),
			pValue: cp.PValue, level: cp.Level, dipEnd: cp.DipEnd})
	}
	return past
}

// accepted are the accepted changes' first runs within the series, in logs, in order.
func (s *series) accepted(runs []int) []int {
	var out []int
	for _, r := range runs {
		if at, _ := slices.BinarySearch(s.at, r); r >= 0 && at > 0 && at < len(s.logs) {
			out = append(out, at)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// segment is the current level of a replay: its first run and, after a change point, the
// runs whose noise it borrows while young (noiseLo to noiseHi, in logs; noiseHi 0 for the
// series' first level): the newest earlier level that reached youngLevel runs, or the series'
// first level, however short, when none did. A level that went on after a dip names no new
// change point before floor, the first run after the dip's end (0: none but its runs').
type segment struct{ start, noiseLo, noiseHi, floor int }

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

// replayed is what a replay found: the tests that found a new level, the level the series
// ends in, and the first run of its first level.
type replayed struct {
	found []test
	level segment
	start int
}

// replay takes a look at every run the earlier looks did not see, in turn, going on from what
// they found.
func (s *series) replay(past pastLooks) replayed {
	var found []test
	level, previous := segment{start: past.start}, segment{}
	// young says whether the level began at the newest change point found: while it is young,
	// each look may move that change point. first says whether no change point began a level
	// yet: only then may the first runs be left out as a warm-up.
	young, first, start := false, true, past.start
	known, accepted := past.found, past.accepted
	// take adds the change point t and goes on in the level it begins or, when it ends the dip
	// the level began with, in the level the dip interrupted: no change point of that level
	// names a run before the end. A dip end whose dip no longer began the level (an accepted
	// change came between, as stored looks may say) begins a level of its own, as any change
	// point does.
	take := func(t test) {
		t.dipEnd = t.dipEnd && young
		found = append(found, t)
		if t.dipEnd {
			level, young = previous, false
			level.floor = t.split + 1
			return
		}
		previous, level, young, first = level, level.after(t.split), true, false
	}
	for n := 1; n <= len(s.logs); n++ {
		if len(accepted) > 0 && accepted[0] == n-1 {
			level, young, first, accepted = segment{start: n - 1}, false, false, accepted[1:]
			known = slices.DeleteFunc(known, func(t test) bool { return t.split >= level.start && t.split <= level.start+RefineReach })
		}
		if n <= past.looked {
			for len(known) > 0 && known[0].n <= n {
				if t := known[0]; t.split > level.start {
					take(t)
				}
				known = known[1:]
			}
			continue
		}
		if first && n <= warmUpLooks {
			level.start = max(level.start, s.warmUp(n))
			start = level.start
		}
		if t, ok := s.look(level, n); ok {
			t.dipEnd = young && s.endsDip(previous, found[len(found)-1], t)
			take(t)
		}
		if last := len(found) - 1; young && n-found[last].split < youngLevel {
			found[last] = s.refine(previous, found[last], n)
			level = previous.after(found[last].split)
			if end, ok := s.dipEnd(previous, found[last], n); ok {
				take(end)
			}
		}
	}
	return replayed{found: found, level: level, start: start}
}

// endsDip says whether the look's test t, found in the young level that dip began in the
// level previous, at most 2·MinAfter runs after it (a burst, as dipEnd's), takes the runs back
// past halfway to previous's mean: the end of a dip, after which previous goes on.
func (s *series) endsDip(previous segment, dip, t test) bool {
	if t.split-dip.split > 2*s.opts.MinAfter {
		return false
	}
	back := s.mean(previous.start, dip.split)
	return math.Abs(s.mean(t.split, t.n)-back) < math.Abs(s.mean(dip.split, t.split)-back)/2
}

// dipEnd is the end of the shift t, found in the level previous, when it was a dip of at most
// 2·MinAfter runs (a burst of slow runs, or two back to back): the runs from there to n, at
// least MinAfter of them, all lie back past halfway from the dip's runs to the previous level's
// mean, and their mean within a quarter of the way (a small shift whose first runs happened to
// lie low has its later runs halfway, not back). A look that took slow runs for a new level
// cannot find its end by a test (the young level has too few runs to tell it), but the runs
// after it show there was none to last: no shift is claimed, the one told is ended
// (ChangePoint.Returns), at the test's p-value of the runs after against the dip, and the level
// the dip interrupted goes on.
func (s *series) dipEnd(previous segment, t test, n int) (test, bool) {
	back := s.mean(previous.start, t.split)
	for end := t.split + 1; end <= t.split+2*s.opts.MinAfter && n-end >= s.opts.MinAfter; end++ {
		there := s.mean(t.split, end)
		halfway, side := (back+there)/2, math.Copysign(1, back-there)
		if slices.ContainsFunc(s.logs[end:n], func(v float64) bool { return (v-halfway)*side <= 0 }) ||
			math.Abs(s.mean(end, n)-back) > math.Abs(there-back)/4 {
			continue
		}
		dip := previous.after(t.split)
		before, after, se, df := s.difference(dip, end, n)
		return test{split: end, found: end, n: n, t: tOf(before, after, se), pValue: twoSided(tOf(before, after, se), df), level: t.level,
			dipEnd: true}, true
	}
	return test{}, false
}

// warmUpLooks are the looks that may leave a series' first runs out as a warm-up, and
// maxWarmUp how many: a cold first night, or a schedule's immediate run on a cluster still
// settling, is slower than the nights after it, and left in it would inflate the first
// level's noise and autocorrelation and blind the detector for as long as that level lasts.
const (
	warmUpLooks = 20
	maxWarmUp   = 3
	// warmUpDistance is how far, in standard deviations of the runs after them, each
	// warm-up run lies from their mean, all on one side: with 8 runs after it, a run of
	// normal noise lies so far about one time in 150.
	warmUpDistance = 4
	// warmUpAfter is the fewest runs after a warm-up that can tell it.
	warmUpAfter = 8
)

// warmUp is how many of the first runs, at most maxWarmUp, lie each warmUpDistance standard
// deviations of the runs after them, up to n, beyond those runs' mean, all on the same side;
// 0 when none do, or when those runs do not spread at all.
func (s *series) warmUp(n int) int {
	for j := min(maxWarmUp, n-warmUpAfter); j >= 1; j-- {
		k := float64(n - j)
		mu := (s.sum[n] - s.sum[j]) / k
		sigma := math.Sqrt(max(s.sq[n]-s.sq[j]-k*mu*mu, 0) / (k - 1))
		side := math.Copysign(1, s.logs[0]-mu)
		if sigma > 0 && !slices.ContainsFunc(s.logs[:j], func(v float64) bool { return (v-mu)*side <= warmUpDistance*sigma }) {
			return j
		}
	}
	return 0
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
	if lo > hi {
		return t
	}
	best := s.likeliest(previous.start, lo, hi, n)
	if best == t.split {
		return t
	}
	before, after, se, df := s.difference(previous, best, n)
	p := twoSided(tOf(before, after, se), df)
	if p > t.level {
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

// Detectable is the smallest shift (0.12 = 12%, either way) that the detector would find 90%
// of the time in the fewest runs the series allows at a new level (MinAfter, more when its
// outliers ask for it), at the noise of the series' current level; ok is false with too few
// runs at that level to say. It takes the test's statistic as normal, with the standard
// error the test would use, and the new runs as independent around their level. known is what
// the looks found, as Resume returned it for the values. It is the AR(1) test's: a shift that
// sets its runs apart from the level (separated) may be found below it.
func Detectable(values []float64, known Known, opts Options) (shift float64, ok bool) {
	s := newSeries(values, opts)
	level := s.replay(s.known(known)).level
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

// series is a series' logarithms with what a look needs of them, and what its looks worked
// out and keep for the next (so one goroutine's at a time).
type series struct {
	opts Options
	logs []float64
	at   []int // the index in the values given of each of logs
	// sum, sq and lag are the running sums of logs, of their squares, and of the products of
	// neighbours (lag[i] = logs[0]logs[1] + ... + logs[i-2]logs[i-1]), from 0.
	sum, sq, lag []float64
	quantiles    map[[2]float64]float64 // the t quantile a test is held against, by new runs and degrees of freedom
	// blocks are busy's variances of a block of busyBlock runs, by its first run, and
	// busyLimits its F limits, by how many blocks are compared: a look asks for the same ones
	// at every window and split it tries.
	blocks     map[int][2]float64
	busyLimits map[int]float64
	// lows and highs are the lowest and highest of logs[extremesFrom:extremesFrom+i+1]:
	// separated asks for the range of the same level, a run longer, at every look.
	extremesFrom int
	lows, highs  []float64
}

func newSeries(values []float64, opts Options) *series {
	s := &series{opts: opts.withDefaults(), quantiles: map[[2]float64]float64{}, blocks: map[int][2]float64{}, busyLimits: map[int]float64{}}
	for i, v := range values {
		if v > 0 && !math.IsInf(v, 1) {
			s.logs = append(s.logs, math.Log(v))
			s.at = append(s.at, i)
		}
	}
	s.index()
	return s
}

// index makes the running sums of logs.
func (s *series) index() {
	n := len(s.logs)
	s.sum, s.sq, s.lag = make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i, v := range s.logs {
		s.sum[i+1], s.sq[i+1], s.lag[i+1] = s.sum[i]+v, s.sq[i]+v*v, s.lag[i]
		if i > 0 {
			s.lag[i+1] += s.logs[i-1] * v
		}
	}
}

// level is the two-sided level of one test of the newest m runs: the per-run budget less the
// late look's share, over the lengths tried.
func (s *series) level(m int) float64 {
	newest := s.opts.FalseAlarmsPerRun * (1 - lateShare)
	if m == s.opts.MinAfter {
		return newest * firstShare
	}
	return newest * (1 - firstShare) / extraAfter
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
	level  float64 // the test's level, which pValue must be within
	dipEnd bool    // ends a dip (endsDip, dipEnd): the level the dip interrupted goes on
}

// fewest is how many runs of the level a new one is judged against: MinBefore for the series'
// first level, whose noise is its own; one fewer than MinAfter for a later one, judged while
// young with the noise of the level before it, when the new runs go back (returns): a look
// that took two slow runs and a third for a new level finds it ended three runs on, a dip of
// two runs (ChangePoint.Returns).
func (g segment) fewest(opts Options) int {
	if g.noiseHi == 0 {
		return opts.MinBefore
	}
	return opts.MinAfter - 1
}

// look is what the look at the first n runs finds against the current level: the split of
// the newest runs with the clearest test that fires, if any, else what the late look finds.
func (s *series) look(level segment, n int) (test, bool) {
	best, found := test{}, false
	for m := s.opts.MinAfter; m <= s.opts.MinAfter+extraAfter; m++ {
		k := n - m - level.start
		if k < level.fewest(s.opts) || n-m < level.floor {
			break
		}
		if k < s.opts.MinAfter && !s.returns(level, n-m, n) {
			continue
		}
		t, ok := s.test(level, n-m, n)
		if ok && (!found || math.Abs(t.t) > math.Abs(best.t)) {
			best, found = t, true
		}
	}
	if found {
		return best, true
	}
	return s.lateLook(level, n)
}

// lateWindows are the newest runs a look also sets against the level's runs before them, when
// the level has at least as many: a step too small to show in the few newest runs, or a slow
// drift, shows there once enough runs have come. Each window's test gets an equal part of
// lateShare of the look's level. No window is shorter than 20: the sign test (mostly) of 10
// runs, all 10 beyond, is at 1/1024, which no share of the budget reaches, and such a window
// never fired.
var lateWindows = []int{20, 40}

// lateShare is the part of a look's level that the late look gets.
const lateShare = 0.1

// lateLook sets the newest runs of each of lateWindows against the level's runs before them,
// the smallest window first, and if one differs, names the change point at the likeliest split
// of the level's runs (refine's). Each side is taken with its own spread (Welch), so that a
// busy spell of runs that scatter more, but around the same level, is no shift, with the
// autocorrelation of the side that shows more, and at the degrees of freedom of the side with
// fewer (Welch's bound, not Satterthwaite's estimate, whose tails are too thin this far out).
func (s *series) lateLook(level segment, n int) (test, bool) {
	for _, w := range lateWindows {
		split := n - w
		k := split - level.start
		if k < w {
			break
		}
		sb, phiB, dfB := s.noise(level.start, split)
		sa, phiA, dfA := s.noise(split, n)
		phi := max(phiA, phiB)
		vb, va := sb*sb*blockSum(k, phi)/float64(k*k), sa*sa*blockSum(w, phi)/float64(w*w)
		if va+vb == 0 {
			continue // runs that do not spread: the newest runs' test tells a step there
		}
		before, after := (s.sum[split]-s.sum[level.start])/float64(k), (s.sum[n]-s.sum[split])/float64(w)
		t := (after - before) / math.Sqrt(va+vb)
		lo, hi := max(level.start+level.fewest(s.opts), level.floor), n-s.opts.MinAfter
		if p := twoSided(t, min(dfA, dfB)); p <= s.lateLevel() && lo <= hi && s.mostly(level.start, split, n, math.Copysign(1, t)) {
			c := s.likeliest(level.start, lo, hi, n)
			return test{split: c, found: c, n: n, t: t, pValue: p, level: s.lateLevel()}, true
		}
	}
	return test{}, false
}

// mostly says whether so many of logs[split:n] lie beyond the median of the level's runs before
// split, on side, that as many would lie there by chance at most the late look's level of the
// time (a sign test): a step moves most runs, while a window with fewer stalls than the level
// had, or a few more, moves only its mean (whose test, on its own, takes the mean of a level
// with stalls for its centre).
func (s *series) mostly(start, split, n int, side float64) bool {
	centre := median(s.logs[start:split])
	beyond := 0
	for _, v := range s.logs[split:n] {
		if (v-centre)*side > 0 {
			beyond++
		}
	}
	// P(at least beyond of n - split fair coins) is the binomial's survival at beyond - 1.
	return distuv.Binomial{N: float64(n - split), P: 0.5}.Survival(float64(beyond)-1) <= s.lateLevel()
}

// median is the middle of runs, or the mean of the middle two of an even number: a centre
// that slow runs do not pull.
func median(runs []float64) float64 {
	sorted := slices.Sorted(slices.Values(runs))
	mid := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		mid = (mid + sorted[len(sorted)/2-1]) / 2
	}
	return mid
}

// lateLevel is the two-sided level of one test of the late look.
func (s *series) lateLevel() float64 {
	return s.opts.FalseAlarmsPerRun * lateShare / float64(len(lateWindows))
}

// likeliest is the split c in [lo, hi] of the runs from start to n that is likeliest for one
// shift of their mean in independent normal noise: the largest (after - before)² km/(k + m),
// k runs before c and m after.
func (s *series) likeliest(start, lo, hi, n int) int {
	best, likeliest := lo, -1.0
	for c := lo; c <= hi; c++ {
		k, m := float64(c-start), float64(n-c)
		d := (s.sum[n]-s.sum[c])/m - (s.sum[c]-s.sum[start])/k
		if l := d * d * k * m / (k + m); l > likeliest {
			best, likeliest = c, l
		}
	}
	return best
}

// mean is the mean of logs[lo:hi].
func (s *series) mean(lo, hi int) float64 { return (s.sum[hi] - s.sum[lo]) / float64(hi-lo) }

// returns says whether logs[split:n] lie back past halfway from the young level's runs before
// split to the level whose noise it borrows, the one before it.
func (s *series) returns(level segment, split, n int) bool {
	back := s.mean(level.noiseLo, level.noiseHi)
	return math.Abs(s.mean(split, n)-back) < math.Abs(s.mean(level.start, split)-back)/2
}

// difference is the mean of the level's runs before split, that of logs[split:n], the
// standard error of their difference under the level's noise, and that noise's degrees of
// freedom; for a level that drifts, what drift says instead.
func (s *series) difference(level segment, split, n int) (before, after, se, df float64) {
	k, m := split-level.start, n-split
	sigma, phi, df := s.levelNoise(level, split)
	if lo, _ := level.noiseRuns(split); lo == level.start && k >= driftRuns && phi >= driftPhi {
		return s.drift(level.start, split, n)
	}
	before = (s.sum[split] - s.sum[level.start]) / float64(k)
	after = (s.sum[n] - s.sum[split]) / float64(m)
	return before, after, sigma * math.Sqrt(differenceVariance(k, m, phi)), df
}

// A level whose own runs' lag-1 autocorrelation comes out at driftPhi or more, over at least
// driftRuns runs, drifts: its runs rise or fall with the machine (a neighbour's load coming or
// going), which the AR(1) correction takes for noise so correlated that a level of 10 runs
// keeps about one degree of freedom, and no drop after it, however large, is ever found
// (docs/measurement.md). Such a level is judged by drift.
const (
	driftPhi  = 0.7
	driftRuns = 8
	// driftRecent is how many of a drifting level's newest runs drift sets the new ones against.
	driftRecent = 5
)

// drift sets logs[split:n] against a drifting level's runs from start, in two ways, with the
// noise of those runs around their straight line (its lag-1 autocorrelation, corrected as
// noise's, and the line's two degrees of freedom taken off): against the mean of the level's
// newest runs, and against the line carried on to the new runs. A drift that goes on is beyond
// the first and not the second; one that stops, beyond the second and not the first; a
// shift, beyond both. It returns the less clear of the two (its reference as before), or no
// difference when they point apart.
func (s *series) drift(start, split, n int) (before, after, se, df float64) {
	k, m := split-start, n-split
	fk := float64(k)
	var sx, sy, sxx, sxy float64
	for i := start; i < split; i++ {
		x, y := float64(i-start), s.logs[i]
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	xMean, yMean := sx/fk, sy/fk
	sXX := sxx - fk*xMean*xMean
	slope := (sxy - fk*xMean*yMean) / sXX
	residuals := &series{opts: s.opts, logs: make([]float64, k)}
	for i := start; i < split; i++ {
		residuals.logs[i-start] = s.logs[i] - yMean - slope*(float64(i-start)-xMean)
	}
	residuals.index()
	sigma, phi, _ := residuals.noise(0, k)
	df = max(1, (fk-3)*(1-phi*phi)/(1+phi*phi))
	after = (s.sum[n] - s.sum[split]) / float64(m)

	recent := min(driftRecent, k/2)
	recentMean := (s.sum[split] - s.sum[split-recent]) / float64(recent)
	recentSE := sigma * math.Sqrt(differenceVariance(recent, m, phi))

	xNew := float64(split-start) + float64(m-1)/2
	line := yMean + slope*(xNew-xMean)
	lineSE := sigma * math.Sqrt(blockSum(m, phi)/float64(m*m)+1/fk+(xNew-xMean)*(xNew-xMean)/sXX)

	tRecent, tLine := tOf(recentMean, after, recentSE), tOf(line, after, lineSE)
	switch {
	case tRecent*tLine <= 0:
		return after, after, recentSE, df
	case math.Abs(tRecent) < math.Abs(tLine):
		return recentMean, after, recentSE, df
	}
	return line, after, lineSE, df
}

// compared is what the test sets against each other: the mean of the level's runs before
// split, that of logs[split:n], the standard error of their difference and its degrees of
// freedom, for runs set apart from the level (separated) as independent runs; and noiseDF,
// the degrees of freedom of the level's noise as difference takes it, which the level's
// spread is measured with either way (scatters).
func (s *series) compared(level segment, split, n int) (before, after, se, df, noiseDF float64) {
	before, after, se, df = s.difference(level, split, n)
	noiseDF = df
	if s.separated(level, split, n) {
		before, after, se, df = s.independent(level.start, split, n)
	}
	return before, after, se, df, noiseDF
}

// statistic is the test's t of logs[split:n] against the level's runs before split.
func (s *series) statistic(level segment, split, n int) float64 {
	before, after, se, _, _ := s.compared(level, split, n)
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
	before, after, se, df, noiseDF := s.compared(level, split, n)
	out := test{split: split, found: split, n: n, t: tOf(before, after, se), level: s.level(m)}
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
	if s.scatters(level, split, n, noiseDF) {
		return out, false
	}
	return out, s.fewOutliers(s.logs[lo:hi], s.quantile(m, df)*se, side, m)
}

// separatedRuns is the fewest runs of its own a first level needs before separated can tell
// its newest runs apart from it (a later level has its own noise from youngLevel runs): the
// range of fewer runs is too often a small part of their noise. Chosen by hand: the e2e's
// level has 10 runs.
const separatedRuns = 8

// separated says whether logs[split:n] lie apart from the runs of the level before split, on
// one side, by more than the two groups' ranges together, the level judged by its own runs
// (at least separatedRuns). The AR(1) correction takes runs that wander together for noise,
// and on a short level that wanders (a machine's load rising or falling over a few runs) it
// leaves so few degrees of freedom that even a tenfold drop is missed in about one history
// in five, as the e2e's drop on kind was (docs/measurement.md). Noise that wanders rarely
// takes runs beyond everything the level did by more than it did: such runs are taken for a
// new level, judged as independent runs (independent). Where it does (a level that was
// quiet, or whose values are few and whole, then ordinary noise), the old test too was often
// already over the budget; the false shifts this adds on the tests' models are a few in
// thousands (docs/measurement.md).
func (s *series) separated(level segment, split, n int) bool {
	if lo, _ := level.noiseRuns(split); lo != level.start || split-level.start < separatedRuns {
		return false
	}
	oldLo, oldHi := s.extremes(level.start, split)
	newLo, newHi := slices.Min(s.logs[split:n]), slices.Max(s.logs[split:n])
	ranges := oldHi - oldLo + newHi - newLo
	return oldLo-newHi > ranges || newLo-oldHi > ranges
}

// extremes are the lowest and highest of logs[start:split], split > start.
func (s *series) extremes(start, split int) (lowest, highest float64) {
	if start != s.extremesFrom {
		s.extremesFrom, s.lows, s.highs = start, s.lows[:0], s.highs[:0]
	}
	for i := start + len(s.lows); i < split; i++ {
		lowest, highest = s.logs[i], s.logs[i]
		if last := len(s.lows) - 1; last >= 0 {
			lowest, highest = min(lowest, s.lows[last]), max(highest, s.highs[last])
		}
		s.lows, s.highs = append(s.lows, lowest), append(s.highs, highest)
	}
	return s.lows[split-start-1], s.highs[split-start-1]
}

// independent is the pooled two-sample t test of the level's runs from start to split against
// logs[split:n], the runs taken as independent: the means, the standard error of their
// difference and its degrees of freedom.
func (s *series) independent(start, split, n int) (before, after, se, df float64) {
	k, m := float64(split-start), float64(n-split)
	// Each side around its own mean (gonum's two passes) rather than from the running sums,
	// whose rounding would give runs that do not spread a spread.
	before, vb := stat.MeanVariance(s.logs[start:split], nil)
	after, va := stat.MeanVariance(s.logs[split:n], nil)
	df = k + m - 2
	return before, after, math.Sqrt(((k-1)*vb + (m-1)*va) / df * (1/k + 1/m)), df
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
	return max(sigma, s.busy(lo, hi)), phi, df
}

// busy is the spread of the busiest block of busyBlock runs of logs[lo:hi] (each around its own
// mean), when its blocks' spreads differ more than chance allows; else 0. A series whose
// spread changes with the machine's busy spells is judged by its busiest, once it has shown
// one: judged by its mean spread, the first runs of every busy spell look like a new level.
// The blocks are compared without each one's farthest run: a busy spell spreads all its runs,
// while a heavy tail puts one far run in a block now and then, which compared whole made t
// noise look busy and cost it power (docs/measurement.md). The comparison is the largest such
// variance over the mean of the other blocks', against F at 1% over the blocks (Bonferroni),
// with a block's degrees of freedom less one for the run left out: not exact for variances
// that leave out their farthest run, and on the safe side (a spell is told a little less
// often), as the simulations of docs/measurement.md measure.
func (s *series) busy(lo, hi int) float64 {
	blocks := (hi - lo) / busyBlock
	if blocks < 2 {
		return 0
	}
	largest, total, busiestSpread := 0.0, 0.0, 0.0
	for b := range blocks {
		variances, ok := s.blocks[lo+b*busyBlock]
		if !ok {
			variances[0], variances[1] = blockVariances(s.logs[lo+b*busyBlock : lo+(b+1)*busyBlock])
			s.blocks[lo+b*busyBlock] = variances
		}
		whole, trimmed := variances[0], variances[1]
		if trimmed > largest {
			largest, busiestSpread = trimmed, whole
		}
		total += trimmed
	}
	rest := (total - largest) / float64(blocks-1)
	if rest <= 0 {
		return 0
	}
	limit, ok := s.busyLimits[blocks]
	if !ok {
		const df = busyBlock - 2 // a block's runs less the farthest, less their mean
		limit = distuv.F{D1: df, D2: float64(blocks-1) * df}.Quantile(1 - busyLevel/float64(blocks))
		s.busyLimits[blocks] = limit
	}
	if largest/rest <= limit {
		return 0
	}
	return math.Sqrt(busiestSpread)
}

// blockVariances is the variance of a block of at least 3 runs, and that of the same runs less
// the one farthest from their mean; each around its own mean, from the runs themselves rather
// than the running sums, whose rounding would give runs that do not spread a spread.
func blockVariances(block []float64) (whole, trimmed float64) {
	mean := stat.Mean(block, nil)
	far := 0
	for i, v := range block {
		if math.Abs(v-mean) > math.Abs(block[far]-mean) {
			far = i
		}
	}
	restMean := (mean*float64(len(block)) - block[far]) / float64(len(block)-1)
	var ss, restSS float64
	for i, v := range block {
		ss += (v - mean) * (v - mean)
		if i != far {
			restSS += (v - restMean) * (v - restMean)
		}
	}
	return ss / float64(len(block)-1), restSS / float64(len(block)-2)
}

// busyBlock is how many runs a block of busy has, and busyLevel the level of its test.
const (
	busyBlock = 10
	busyLevel = 0.01
)

// scatters says whether the newest runs, with the level's runs just before them (up to
// youngLevel of them), each around their own mean, scatter more than the noise the test takes
// allows (an F test at scatterLevel, df that noise's degrees of freedom): a busy spell, whose
// runs scatter 2-5 times as much around the same level, is no new level, however far its first
// few runs happen to lie.
func (s *series) scatters(level segment, split, n int, df float64) bool {
	sigma, _, _ := s.levelNoise(level, split)
	if sigma == 0 {
		return false
	}
	squares := func(lo, hi int) float64 {
		mean := (s.sum[hi] - s.sum[lo]) / float64(hi-lo)
		return s.sq[hi] - s.sq[lo] - float64(hi-lo)*mean*mean
	}
	recent := max(level.start, split-youngLevel)
	freedom := float64(n - recent - 2)
	if split-recent < 2 {
		recent, freedom = split, float64(n-split-1)
	}
	if freedom < 1 {
		return false
	}
	own := (squares(recent, split) + squares(split, n)) / freedom
	if split == recent {
		own = squares(split, n) / freedom
	}
	return own/(sigma*sigma) > distuv.F{D1: freedom, D2: df}.Quantile(1-scatterLevel)
}

// scatterLevel is the level of scatters' test: a shift is missed that often for scattering.
const scatterLevel = 0.01

// pairPrior is how many far runs the estimate of the chance that the run after a far run is
// far too takes chance (the share of far runs) to have shown, beside the level's own count. A
// long level of independent runs has only a few far runs, and two of them side by side is
// common by chance; taken at its face, that one pair made a far run seem likely to be followed
// by another, and held back the test of a real drop's first runs (docs/measurement.md, "A
// chance pair of far runs"). Runs that truly come in pairs show many pairs, which outweigh it,
// though less than at their face.
const pairPrior = 30

// fewOutliers says whether runs of the level ref that lie beyond dist from its median on side
// are rare enough that m of them in a row are within the per-test level, one direction's half.
func (s *series) fewOutliers(ref []float64, dist, side float64, m int) bool {
	centre := median(ref)
	// How often a run lies beyond, and how often the run after one that does lies beyond too:
	// slow runs that come in pairs or bursts make m in a row far likelier than m apart.
	beyond, pairs := 0, 0
	for i, v := range ref {
		if (v-centre)*side > dist {
			beyond++
			if i > 0 && (ref[i-1]-centre)*side > dist {
				pairs++
			}
		}
	}
	share := (float64(beyond) + 0.5) / float64(len(ref)+1)
	next := (float64(pairs) + pairPrior*share) / (float64(beyond) + pairPrior)
	return share*math.Pow(next, float64(m-1)) <= s.level(m)
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
