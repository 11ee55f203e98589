package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/couchbench/couchbench/internal/sequential"
)

// recordedRun is one run's counted rounds, as recorded.
type recordedRun struct {
	id, label, order string
	load             []float64
	rounds           []record
	// seconds is each counted round's time, from its start to the next round's (or the
	// run's end).
	seconds []float64
	end     *record
}

// ratios are the run's round ratios of a metric, candidate over reference.
func (r *recordedRun) ratios(metric string) []float64 {
	var xs []float64
	for _, rec := range r.rounds {
		ref, cand := rec.Arms["ref"], rec.Arms["cand"]
		if metric == metricCPU {
			xs = append(xs, cand.CPU/ref.CPU)
		} else {
			xs = append(xs, cand.Built/ref.Built)
		}
	}
	return xs
}

// roundSeconds is the median time of the run's counted rounds.
func (r *recordedRun) roundSeconds() float64 { return median(r.seconds) }

// meanLoad is the mean of the rounds' load averages; -1 when a round's was not recorded.
func (r *recordedRun) meanLoad() float64 {
	var s float64
	for _, l := range r.load {
		if l < 0 {
			return -1
		}
		s += l
	}
	return s / float64(len(r.load))
}

// loadText is a load average, or – where it was not recorded.
func loadText(l float64) string {
	if l < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", l)
}

func replayCommand(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	alpha := fs.Float64("alpha", 0.01, "the family-wise alpha of the two ratios' sequences")
	target := fs.Float64("target", 0.05, "the target: no change as large as this")
	tolerance := fs.Float64("tolerance", 0, "a change is one beyond this band (0: any change); "+
		"an allowance for the offset every run of two servers has")
	tunedFor := fs.Int("tuned-for", 20, "the rounds the sequences are tightest at")
	maxRounds := fs.Int("max-rounds", 100, "simulated runs: the most rounds a run may take")
	simulated := fs.Int("simulated", 1000, "simulated A/A runs per order, resampled from the recorded A/A runs")
	aaLabel := fs.String("aa", "aa", "the labels of A/A runs begin with this")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runs, err := readRuns(fs.Args())
	if err != nil {
		return err
	}
	rule := sequential.Rule{Target: *target, Tolerance: *tolerance}
	spreads(w, runs)
	agreement(w, runs)
	replayed(w, runs, *alpha, *tunedFor, rule)
	simulate(w, runs, *aaLabel, *alpha, *tunedFor, rule, *maxRounds, *simulated)
	return nil
}

// readRuns reads the records of every file, run by run, in the order recorded; a run of mixed
// orders counts as one run per order, each with its own rounds.
func readRuns(files []string) ([]*recordedRun, error) {
	var runs []*recordedRun
	byID := map[string]*recordedRun{}
	// previous is the run (by id as recorded) whose last round's time the next record ends.
	previous := map[string]*recordedRun{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if p := previous[rec.Run]; p != nil {
				p.seconds = append(p.seconds, rec.At.Sub(p.rounds[len(p.rounds)-1].At).Seconds())
				delete(previous, rec.Run)
			}
			orders := []string{rec.Order}
			if rec.Kind == kindRun && rec.Order == orderMixed {
				orders = []string{orderTurns, orderDuet}
			}
			for _, order := range orders {
				id := rec.Run + "/" + order
				r := byID[id]
				if r == nil {
					r = &recordedRun{id: id, label: rec.Label, order: order}
					byID[id] = r
					runs = append(runs, r)
				}
				switch {
				case rec.Kind == kindRun:
					r.end = &rec
				case rec.Round > 0:
					r.rounds = append(r.rounds, rec)
					r.load = append(r.load, rec.Load1)
					previous[rec.Run] = r
				}
			}
		}
		_ = f.Close() // read only: nothing is lost
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	// A run cut short (no end record) is left out: its rounds may be few.
	return slices.DeleteFunc(runs, func(r *recordedRun) bool { return r.end == nil || len(r.rounds) < 3 }), nil
}

// loadBand names a run's band of load average.
func loadBand(l float64) string {
	if l < 0 {
		return "not recorded"
	}
	for _, b := range []float64{2, 4, 7, 12} {
		if l < b {
			return fmt.Sprintf("< %g", b)
		}
	}
	return ">= 12"
}

// spreads prints, by label, order and load band, how much the round ratios spread within
// runs and how much the runs' ratios differ.
func spreads(w io.Writer, runs []*recordedRun) {
	type key struct{ label, order, band string }
	groups := map[key][]*recordedRun{}
	var keys []key
	for _, r := range runs {
		k := key{r.label, r.order, loadBand(r.meanLoad())}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.label+a.band+a.order, b.label+b.band+b.order)
	})
	fmt.Fprintln(w, "| label | order | load band | runs | rounds | s per round | load average "+
		"| round spread: wall | cpu | run-to-run: wall | cpu | ratio: wall | cpu |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		g := groups[k]
		var loads, rounds, seconds []float64
		within := map[string][]float64{}
		means := map[string][]float64{}
		for _, r := range g {
			loads = append(loads, r.load...)
			rounds = append(rounds, float64(len(r.rounds)))
			seconds = append(seconds, r.roundSeconds())
			for _, m := range []string{metricWall, metricCPU} {
				mean, sd := logMeanSD(r.ratios(m))
				within[m] = append(within[m], sd)
				means[m] = append(means[m], math.Exp(mean))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %.0f | %.1f | %s–%s | %s | %s | %s | %s | %.3f | %.3f |\n", k.label, k.order, k.band, len(g),
			median(rounds), median(seconds), loadText(slices.Min(loads)), loadText(slices.Max(loads)),
			pct(median(within[metricWall])), pct(median(within[metricCPU])), runToRun(means[metricWall]), runToRun(means[metricCPU]),
			geomean(means[metricWall]), geomean(means[metricCPU]))
	}
	fmt.Fprintln(w, "\nround spread: the median over the runs of the standard deviation of a run's round log-ratios; "+
		"run-to-run: that of the runs' geometric means (– with fewer than 3 runs)")
}

// agreement prints how far the process tree's reading of every build lay from the cgroup's.
func agreement(w io.Writer, runs []*recordedRun) {
	var worst, sumAbs float64
	var builds int
	for _, r := range runs {
		for _, rec := range r.rounds {
			for _, b := range rec.Arms {
				// Imported runs (duet import) have no process-tree reading.
				if b.TreeCPU == 0 {
					continue
				}
				d := math.Abs(b.TreeCPU-b.CPU) / b.CPU
				worst = max(worst, d)
				sumAbs += d
				builds++
			}
		}
	}
	if builds == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe process tree against the cgroup over %d builds: mean |difference| %.3f%%, largest %.3f%%\n", builds,
		100*sumAbs/float64(builds), 100*worst)
}

// replayed prints what the sequences would have said of each recorded run, round by round.
func replayed(w io.Writer, runs []*recordedRun, alpha float64, tunedFor int, rule sequential.Rule) {
	fmt.Fprintf(w, "\nEvery recorded run replayed (alpha %.2g family-wise, target ±%.0f%%, tolerance ±%.1f%%):\n\n", alpha,
		100*rule.Target, 100*rule.Tolerance)
	fmt.Fprintln(w, "| run | order | load | rounds | cpu: decided at | outcome | interval | wall: decided at | outcome | interval |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		cpu, wall := r.ratios(metricCPU), r.ratios(metricWall)
		f := sequential.NewFamily(alpha, tunedFor, rule, metricCPU, metricWall)
		at := map[string]int{}
		for i := range cpu {
			f.Add(metricCPU, cpu[i])
			f.Add(metricWall, wall[i])
			for _, m := range f.Metrics() {
				if at[m] == 0 && f.Decision(m).Outcome != sequential.Undecided {
					at[m] = i + 1
				}
			}
		}
		row := fmt.Sprintf("| %s | %s | %s | %d", r.id, r.order, loadText(r.meanLoad()), len(cpu))
		for _, m := range f.Metrics() {
			d := f.Decision(m)
			when := "–"
			if at[m] > 0 {
				when = fmt.Sprint(at[m])
			}
			row += fmt.Sprintf(" | %s | %s | %s", when, d.Outcome, interval(d.Interval))
		}
		fmt.Fprintln(w, row+" |")
	}
}

// simulate runs the sequences over A/A runs resampled from the recorded ones: each simulated
// run takes one recorded A/A run of its order and draws its rounds, with replacement, from that
// run's. As recorded, what belongs to a run (its two servers' own offset) stays in, and a
// sequence that finds it says "changed" of an A/A pair; centered (each run's rounds divided by
// their geometric mean), only the rounds' own scatter is left, which is what the sequence's
// level is about. The same with the candidate 5% and 10% slower on both metrics.
func simulate(w io.Writer, runs []*recordedRun, aaLabel string, alpha float64, tunedFor int, rule sequential.Rule, maxRounds, n int) {
	fmt.Fprintf(w, "\nSimulated runs, rounds resampled from the recorded A/A runs (labels %s*), at most %d rounds, %d per row:\n\n",
		aaLabel, maxRounds, n)
	fmt.Fprintln(w, "| order | rounds | recorded runs | change | cpu: right | false | rounds (median) | wall: right | false | rounds (median) | both decided |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, centered := range []bool{false, true} {
		for _, order := range []string{orderTurns, orderDuet} {
			simulateOrder(w, runs, aaLabel, order, centered, alpha, tunedFor, rule, maxRounds, n)
		}
	}
	fmt.Fprintln(w, "\nright: A/A within the target, a change found higher; false: A/A called a change, a change called lower or within the target")
}

// ratiosOf are a recorded run's round ratios of a metric, divided by their geometric mean
// when centered.
func ratiosOf(r *recordedRun, metric string, centered bool) []float64 {
	xs := r.ratios(metric)
	if centered {
		m, _ := logMeanSD(xs)
		for i := range xs {
			xs[i] /= math.Exp(m)
		}
	}
	return xs
}

func simulateOrder(w io.Writer, runs []*recordedRun, aaLabel, order string, centered bool, alpha float64, tunedFor int,
	rule sequential.Rule, maxRounds, n int) {
	var pool []*recordedRun
	for _, r := range runs {
		if r.order == order && strings.HasPrefix(r.label, aaLabel) {
			pool = append(pool, r)
		}
	}
	if len(pool) == 0 {
		return
	}
	for _, change := range []float64{0, 0.05, 0.10} {
		rng := rand.New(rand.NewPCG(uint64(len(pool)), uint64(1000*change)))
		right := map[string]int{}
		wrong := map[string]int{}
		rounds := map[string][]float64{}
		both := 0
		for range n {
			r := pool[rng.IntN(len(pool))]
			cpu, wall := ratiosOf(r, metricCPU, centered), ratiosOf(r, metricWall, centered)
			f := sequential.NewFamily(alpha, tunedFor, rule, metricCPU, metricWall)
			at := map[string]int{}
			for i := range maxRounds {
				j := rng.IntN(len(cpu))
				f.Add(metricCPU, cpu[j]*(1+change))
				f.Add(metricWall, wall[j]*(1+change))
				for _, m := range f.Metrics() {
					if at[m] == 0 && f.Decision(m).Outcome != sequential.Undecided {
						at[m] = i + 1
					}
				}
				if f.Done() {
					break
				}
			}
			if f.Done() {
				both++
			}
			for _, m := range f.Metrics() {
				o := f.Decision(m).Outcome
				switch {
				case change == 0 && o == sequential.Within, change > 0 && o == sequential.Higher:
					right[m]++
				case change == 0 && o != sequential.Undecided, change > 0 && (o == sequential.Lower || o == sequential.Within):
					wrong[m]++
				}
				if at[m] > 0 {
					rounds[m] = append(rounds[m], float64(at[m]))
				}
			}
		}
		how := "as recorded"
		if centered {
			how = "centered"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %+.0f%% | %s | %s | %s | %s | %s | %s | %s |\n", order, how, len(pool), 100*change,
			share(right[metricCPU], n), share(wrong[metricCPU], n), medianOrDash(rounds[metricCPU]),
			share(right[metricWall], n), share(wrong[metricWall], n), medianOrDash(rounds[metricWall]), share(both, n))
	}
}

func interval(iv sequential.Interval) string {
	if math.IsInf(iv.High, 1) {
		return fmt.Sprintf("%.3f, unbounded", iv.Estimate)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", iv.Estimate, iv.Low, iv.High)
}

func share(k, n int) string { return fmt.Sprintf("%.1f%%", 100*float64(k)/float64(n)) }

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// runToRun is the standard deviation of the runs' log-ratios, with 3 runs or more.
func runToRun(means []float64) string {
	if len(means) < 3 {
		return "–"
	}
	_, sd := logMeanSD(means)
	return pct(sd)
}

func geomean(xs []float64) float64 {
	m, _ := logMeanSD(xs)
	return math.Exp(m)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianOrDash(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", median(xs))
}
